// The second translation unit of the compiled-mode program (compiled.cmake): ranges and module
// scopes with formatted names, which in the compiled mode are formatted by src/nsightkit.cpp.
#include <nsightkit/module.hpp>
#include <nsightkit/range.hpp>

#include <string>

void compiled_work(int step) {
  NSIGHTKIT_RANGE("step {}", step);
  {
    nsightkit::ScopedRange forward{"forward"};
    for (int layer = 0; layer < 2; ++layer) {
      NSIGHTKIT_MODULE("layer{}", layer);
      nsightkit::ScopedRange attention{"attention {}:{}", layer, std::string{"heads"}};
    }
  }
  nsightkit::ScopedRange backward{"backward {:.1f}", 0.5 * step};
}
