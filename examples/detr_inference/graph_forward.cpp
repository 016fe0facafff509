// The parts of graph_forward.hpp that need no CUDA: comparing the eager and the graph outputs.
#include "graph_forward.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace detr {

namespace {
std::uint64_t bits_of(double v) noexcept {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
}  // namespace

std::string first_mismatch(char const* what, std::vector<double> const& eager,
                           std::vector<double> const& graph) {
  if (eager.size() != graph.size()) {
    return std::string{what} + ": " + std::to_string(eager.size()) + " eager values, " +
           std::to_string(graph.size()) + " from the graph";
  }
  for (std::size_t i = 0; i < eager.size(); ++i) {
    if (bits_of(eager[i]) != bits_of(graph[i])) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s[%zu]: eager %.9g, graph %.9g", what, i, eager[i],
                    graph[i]);
      return buf;
    }
  }
  return {};
}

}  // namespace detr
