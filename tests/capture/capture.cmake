# CaptureWindow tests (included from tests/CMakeLists.txt).
#
# The capture window links no CUDA library: its profiler backend loads the CUDA driver at run
# time (detail/cuda_driver.hpp). So none of these tests links CUDA::cudart; the GPU test links it
# only for its own kernels and allocations.
nsightkit_add_test(test_capture SOURCES capture/test_capture.cpp)
# The same tests compiled with NSIGHTKIT_DISABLE inside an enabled build (the Recorder stays on):
# proves the disabled window silent while it keeps counting steps and phases.
nsightkit_add_test(test_capture_disabled SOURCES capture/test_capture_disabled.cpp DISABLED)
# Captures requested while the program runs (request_capture(), the report's trigger).
nsightkit_add_test(test_capture_requests SOURCES capture/test_capture_requests.cpp)

# The driver backend against a fake driver: libcuda.so.1 (tests/capture/fake_driver) alone in a directory
# that the tests put first on LD_LIBRARY_PATH, so the loader's dlopen finds it. test_capture_driver
# does not link it. One ctest entry per world (the driver is loaded once per process).
if(UNIX AND NOT APPLE)
  add_library(nsk_fake_cuda SHARED capture/fake_driver/fake_cuda.cpp)
  target_link_libraries(nsk_fake_cuda PRIVATE nsightkit_warnings Threads::Threads)
  set_target_properties(nsk_fake_cuda PROPERTIES
    OUTPUT_NAME cuda PREFIX lib SUFFIX .so.1
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fake_driver
    CXX_VISIBILITY_PRESET hidden)

  add_executable(test_capture_driver capture/test_capture_driver.cpp $<TARGET_OBJECTS:nsightkit_test_recorder>)
  target_link_libraries(test_capture_driver PRIVATE nsightkit::nsightkit nsightkit_warnings
    Catch2::Catch2 Threads::Threads ${CMAKE_DL_LIBS})
  target_include_directories(test_capture_driver PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  add_dependencies(test_capture_driver nsk_fake_cuda)

  set(_nsk_fake_path "LD_LIBRARY_PATH=path_list_prepend:$<TARGET_FILE_DIR:nsk_fake_cuda>")
  # world   tag            environment (besides NSIGHTKIT_TEST_ENV_MOD)
  set(_nsk_driver_worlds
    "fake driver|[fake]|${_nsk_fake_path}"
    "no device|[no_device]|${_nsk_fake_path}@NSK_FAKE_CUDA=set:no_device"
    "cuInit fails|[init_fails]|${_nsk_fake_path}@NSK_FAKE_CUDA=set:init=999"
    "no driver|[no_driver]|NSK_TEST_NO_DRIVER=set:1")
  foreach(world IN LISTS _nsk_driver_worlds)
    string(REPLACE "|" ";" parts "${world}")
    list(GET parts 0 what)
    list(GET parts 1 tag)
    list(GET parts 2 env)
    string(REPLACE "@" ";" env "${env}")
    add_test(NAME "test_capture_driver: ${what}"
      COMMAND test_capture_driver "${tag}" --warn NoTests)
    set_tests_properties("test_capture_driver: ${what}" PROPERTIES LABELS cpu
      SKIP_RETURN_CODE 77 ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD};${env}")
  endforeach()
endif()

# Every C++ snippet of docs/capture-window.md and docs/packaging.md that uses CaptureWindow is
# compiled as written, with nsightkit's warnings as errors; a snippet that is a whole program is
# also linked (nsightkit::nsightkit only: no CUDA library) and run.
set(_nsk_capture_docs ${PROJECT_SOURCE_DIR}/docs/capture-window.md
  ${PROJECT_SOURCE_DIR}/docs/packaging.md)
execute_process(
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/doc_snippets.py CaptureWindow
          ${CMAKE_CURRENT_BINARY_DIR}/doc_snippets/capture ${_nsk_capture_docs}
  OUTPUT_VARIABLE _nsk_snippets ERROR_VARIABLE _nsk_snippets_error RESULT_VARIABLE _nsk_rc)
if(NOT _nsk_rc EQUAL 0)
  message(FATAL_ERROR "tests/doc_snippets.py failed: ${_nsk_snippets_error}")
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_nsk_capture_docs}
  ${CMAKE_CURRENT_SOURCE_DIR}/doc_snippets.py)
foreach(snippet IN LISTS _nsk_snippets)
  get_filename_component(stem ${snippet} NAME_WE)
  string(MAKE_C_IDENTIFIER "doc_${stem}" target)
  file(READ ${snippet} code)
  if(code MATCHES "int main\\(")
    add_executable(${target} ${snippet})
    add_test(NAME "docs: ${stem}.cpp runs" COMMAND ${target})
    set_tests_properties("docs: ${stem}.cpp runs" PROPERTIES LABELS cpu
      ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")
  else()
    add_library(${target} OBJECT ${snippet})
  endif()
  target_link_libraries(${target} PRIVATE nsightkit::nsightkit nsightkit_warnings)
endforeach()

# On a device: the real CUDA profiler backend (label gpu; skipped without a GPU).
nsightkit_add_gpu_test(test_capture_gpu SOURCES capture/test_capture_gpu.cu)
