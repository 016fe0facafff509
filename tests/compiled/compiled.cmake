# nsightkit's compiled mode (NSIGHTKIT_COMPILED, docs/compile-cost.md): a program of two translation
# units linked with nsightkit::compiled (src/nsightkit.cpp). Checked: the report enabled in-process
# (snapshot, every output, the grammar's errors), the report started by NSIGHTKIT_REPORT at
# start-up and written at exit, formatted range and module names, that the program's own objects
# hold none of the report engine's, {fmt}'s formatting or NVTX's code (while the same translation
# unit header-only does), and the range and module tests' NVTX calls.
# nsightkit::compiled is the component compiled, defined once by the top-level CMakeLists.txt.
if(NOT TARGET nsightkit::compiled)
  message(FATAL_ERROR "nsightkit tests: no nsightkit::compiled: ${NSIGHTKIT_COMPILED_REASON}")
endif()
find_package(Python3 COMPONENTS Interpreter REQUIRED)

# The range and module tests again in the compiled mode, where every NVTX call and every name is
# made by the compiled emit engine (src/nsightkit.cpp): the Recorder must see the same calls.
nsightkit_add_test(test_range_compiled SOURCES range/test_range.cpp COMPILED)
nsightkit_add_test(test_module_compiled SOURCES module/test_module.cpp alloc_counter.cpp COMPILED)
# The CUDA object (src/nsightkit_cuda.cpp): the pinned pool's members and graph capture's messages,
# on the CPU and on a device (label gpu).
if(TARGET CUDA::cudart)
  nsightkit_add_test(test_pinned_compiled SOURCES pinned/test_pinned.cpp COMPILED
    LABELS cuda LIBRARIES CUDA::cudart)
  nsightkit_add_test(test_graph_compiled SOURCES graph/test_graph.cpp NO_RECORDER COMPILED
    LABELS cuda LIBRARIES CUDA::cudart)
  nsightkit_add_gpu_test(test_pinned_gpu_compiled SOURCES pinned/test_pinned_gpu.cu COMPILED)
endif()
if(TARGET nsightkit::cupti)
  nsightkit_add_gpu_test(test_graph_gpu_compiled SOURCES graph/test_graph_gpu.cu NO_RECORDER
    COMPILED LIBRARIES nsightkit::cupti)
endif()

add_library(compiled_demo_objects OBJECT compiled/compiled_main.cpp compiled/compiled_work.cpp)
target_link_libraries(compiled_demo_objects PRIVATE nsightkit::compiled nsightkit_warnings)
add_executable(compiled_demo $<TARGET_OBJECTS:compiled_demo_objects>)
target_link_libraries(compiled_demo PRIVATE nsightkit::compiled)

add_test(NAME compiled_api COMMAND compiled_demo api)
set_tests_properties(compiled_api PROPERTIES LABELS cpu PASS_REGULAR_EXPRESSION "^ok\n$"
  ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD};NSIGHTKIT_REPORT=unset:")

if(NSIGHTKIT_DISABLE)
  set(_nsk_compiled_mode disabled)
else()
  set(_nsk_compiled_mode enabled)
endif()
add_test(NAME compiled_env
  COMMAND ${CMAKE_COMMAND} -DDEMO=$<TARGET_FILE:compiled_demo> -DDIR=${CMAKE_CURRENT_BINARY_DIR}/compiled_env
          -DMODE=${_nsk_compiled_mode} -P ${CMAKE_CURRENT_SOURCE_DIR}/compiled/run_compiled_env.cmake)
set_tests_properties(compiled_env PROPERTIES LABELS cpu ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")

if(NOT NSIGHTKIT_DISABLE AND CMAKE_NM)
  # The same umbrella translation unit header-only: the check must find the engine there.
  add_library(compiled_header_only_object OBJECT compiled/compiled_main.cpp)
  target_link_libraries(compiled_header_only_object PRIVATE nsightkit::nsightkit nsightkit_warnings)
  add_test(NAME compiled_objects
    COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/compiled/check_compiled_objects.py
            ${CMAKE_NM} --compiled $<TARGET_OBJECTS:compiled_demo_objects>
    COMMAND_EXPAND_LISTS)
  add_test(NAME compiled_objects_header_only
    COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/compiled/check_compiled_objects.py
            ${CMAKE_NM} --header-only $<TARGET_OBJECTS:compiled_header_only_object>)
  set_tests_properties(compiled_objects compiled_objects_header_only PROPERTIES LABELS cpu)
endif()
