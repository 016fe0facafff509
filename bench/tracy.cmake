# Tracy's zone beside nsightkit's range (bench_tracy.cpp, issue 37; bench/run_tracy_benchmarks.sh
# runs it). Only when NSIGHTKIT_TRACY_DIR names a Tracy source tree (wolfpld/tracy, checked out
# outside this repository): its public/TracyClient.cpp is compiled here, with Tracy's own flags
# relaxed for that one translation unit. Tracy's source is never part of nsightkit.
set(NSIGHTKIT_TRACY_DIR "" CACHE PATH "A Tracy source tree (holding public/TracyClient.cpp) for bench_tracy_zone; empty: no Tracy benchmark")
if(NSIGHTKIT_TRACY_DIR)
  if(NOT EXISTS "${NSIGHTKIT_TRACY_DIR}/public/TracyClient.cpp")
    message(FATAL_ERROR "nsightkit: NSIGHTKIT_TRACY_DIR=${NSIGHTKIT_TRACY_DIR} holds no public/TracyClient.cpp")
  endif()
  find_package(Threads REQUIRED)
  add_library(nsightkit_bench_tracy_client STATIC "${NSIGHTKIT_TRACY_DIR}/public/TracyClient.cpp")
  # Recording on, no server attached: the client queues every zone until a server connects (Tracy's
  # default; TRACY_ON_DEMAND would skip them instead). It neither broadcasts its presence nor
  # listens beyond localhost, and starts no sampling or kernel tracing, so nothing but the zones runs.
  target_compile_definitions(nsightkit_bench_tracy_client PUBLIC
    TRACY_ENABLE TRACY_NO_BROADCAST TRACY_ONLY_LOCALHOST TRACY_NO_SAMPLING TRACY_NO_SYSTEM_TRACING)
  target_include_directories(nsightkit_bench_tracy_client SYSTEM PUBLIC "${NSIGHTKIT_TRACY_DIR}/public")
  target_compile_features(nsightkit_bench_tracy_client PUBLIC cxx_std_17)
  target_compile_options(nsightkit_bench_tracy_client PRIVATE -w)
  target_link_libraries(nsightkit_bench_tracy_client PUBLIC Threads::Threads ${CMAKE_DL_LIBS})

  add_executable(bench_tracy_zone bench_tracy.cpp)
  target_compile_definitions(bench_tracy_zone PRIVATE NSK_BENCH_TRACY)
  target_link_libraries(bench_tracy_zone PRIVATE nsightkit_bench_tracy_client nsightkit_warnings)
  add_executable(bench_tracy_nsightkit bench_tracy.cpp)
  target_link_libraries(bench_tracy_nsightkit PRIVATE nsightkit::nsightkit nsightkit_warnings Threads::Threads)
  foreach(t nsightkit_bench_tracy_client bench_tracy_zone bench_tracy_nsightkit)
    if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
      target_compile_options(${t} PRIVATE -O2)
    endif()
  endforeach()
endif()
