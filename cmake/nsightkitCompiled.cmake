# nsightkit's compiled mode (docs/compile-cost.md): nsightkit::compiled, a static library built from
# src/nsightkit.cpp and src/nsightkit_cuda.cpp. It holds the report engine, the emit engine (NVTX),
# the formatting of range names and the pinned pool's members, and defines
# NSIGHTKIT_COMPILED for everything that links it, whose translation units then only declare those
# parts: a translation unit that includes <nsightkit/nsightkit.hpp> compiles in a fraction of the
# header-only time and memory. Needs the nsightkit target; include it once.
if(TARGET nsightkit_compiled)
  return()
endif()
find_package(Threads REQUIRED)
# Two objects: the CUDA one (PinnedMemoryPool) is linked only into programs that use the pool.
add_library(nsightkit_compiled STATIC "${CMAKE_CURRENT_LIST_DIR}/../src/nsightkit.cpp"
  "${CMAKE_CURRENT_LIST_DIR}/../src/nsightkit_cuda.cpp")
add_library(nsightkit::compiled ALIAS nsightkit_compiled)
target_link_libraries(nsightkit_compiled PUBLIC nsightkit::nsightkit Threads::Threads ${CMAKE_DL_LIBS})
target_compile_definitions(nsightkit_compiled PUBLIC NSIGHTKIT_COMPILED)
# Linked into shared libraries too; the report's entry points keep default visibility.
set_target_properties(nsightkit_compiled PROPERTIES POSITION_INDEPENDENT_CODE ON)
if(TARGET nsightkit_warnings)  # nsightkit's own build: warnings are errors
  target_link_libraries(nsightkit_compiled PRIVATE $<BUILD_INTERFACE:nsightkit_warnings>)
endif()
