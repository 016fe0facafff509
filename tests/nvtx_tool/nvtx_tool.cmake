# The report as an NVTX tool (docs/nvtx-tool.md): in-process through NVTX's static injection
# (test_nvtx_tool), and as the NVTX tool library that `nsightkit profile` injects into unmodified
# programs (run_profile.py, on real processes).
nsightkit_add_test(test_nvtx_tool SOURCES nvtx_tool/test_nvtx_tool.cpp NO_RECORDER)
if(TARGET CUDA::cudart)  # NVTX's CUDA runtime naming needs the toolkit's headers
  nsightkit_add_test(test_nvtx_tool_streams SOURCES nvtx_tool/test_nvtx_tool_streams.cpp NO_RECORDER
    LABELS cuda LIBRARIES CUDA::cudart)
  # NVTX's own nvtxImplCudaRt_v3.h calls its lazy initialiser through a pointer of another
  # function type, which clang's -fsanitize=function reports; that check is NVIDIA's to settle.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND CMAKE_CXX_FLAGS MATCHES "-fsanitize=[^ ]*undefined")
    target_compile_options(test_nvtx_tool_streams PRIVATE -fno-sanitize=function)
  endif()
endif()

if(NOT TARGET nsightkit_command)
  return()
endif()
find_package(Python3 COMPONENTS Interpreter REQUIRED)
# A Python that has PyPI's `nvtx` package (scripts/run-tests.sh makes one); without it the Python
# case reports itself skipped.
set(NSIGHTKIT_TEST_PYTHON_NVTX "" CACHE FILEPATH "A Python interpreter with the nvtx package, for the nsightkit profile tests")

# A program that knows nothing of nsightkit: NVTX's headers only.
add_executable(nvtx_program nvtx_tool/nvtx_program.cpp)
target_link_libraries(nvtx_program PRIVATE ${NSIGHTKIT_NVTX_PROVIDER} ${CMAKE_DL_LIBS} Threads::Threads
  nsightkit_warnings)
add_executable(nvtx_mixed_program nvtx_tool/nvtx_mixed_program.cpp)
target_link_libraries(nvtx_mixed_program PRIVATE nsightkit::nsightkit nsightkit_warnings)
add_library(nvtx_other_tool SHARED nvtx_tool/other_tool.cpp)
target_link_libraries(nvtx_other_tool PRIVATE ${NSIGHTKIT_NVTX_PROVIDER} nsightkit_warnings)

set(_nsk_profile_args --command $<TARGET_FILE:nsightkit_command>
  --dir ${CMAKE_CURRENT_BINARY_DIR}/nvtx_tool_profile --program $<TARGET_FILE:nvtx_program>
  --mixed $<TARGET_FILE:nvtx_mixed_program> --other-tool $<TARGET_FILE:nvtx_other_tool>
  --script ${CMAKE_CURRENT_LIST_DIR}/nvtx_program.py)
if(NSIGHTKIT_TEST_PYTHON_NVTX)
  list(APPEND _nsk_profile_args --python ${NSIGHTKIT_TEST_PYTHON_NVTX})
endif()
set(_nsk_profile_cases raw python usage)
if(NOT NSIGHTKIT_DISABLE)  # the program's own report: nothing to take modules in a disabled build
  list(APPEND _nsk_profile_cases mixed other)
endif()
foreach(case IN LISTS _nsk_profile_cases)
  add_test(NAME nvtx_profile_${case}
    COMMAND Python3::Interpreter ${CMAKE_CURRENT_LIST_DIR}/run_profile.py ${case} ${_nsk_profile_args})
  set_tests_properties(nvtx_profile_${case} PROPERTIES LABELS cpu SKIP_RETURN_CODE 77
    ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")
endforeach()

# The tool library's C ABI for the Python package (capture windows, nsightkit.profile(),
# detail/tool_api.hpp), called as ctypes calls it: test_tool_api is a plain program that dlopens the
# library; test_tool_api_program carries its own report, which the library must not pretend to
# drive.
find_package(nlohmann_json 3 REQUIRED)
add_executable(test_tool_api nvtx_tool/test_tool_api.cpp)
target_link_libraries(test_tool_api PRIVATE Catch2::Catch2WithMain nlohmann_json::nlohmann_json
  ${NSIGHTKIT_NVTX_PROVIDER} ${CMAKE_DL_LIBS} Threads::Threads nsightkit_warnings)
target_include_directories(test_tool_api PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_compile_features(test_tool_api PRIVATE cxx_std_17)
target_compile_definitions(test_tool_api PRIVATE
  "NSIGHTKIT_TEST_TOOL=\"$<TARGET_FILE:nsightkit_nvtx_tool>\"")
add_dependencies(test_tool_api nsightkit_nvtx_tool)
catch_discover_tests(test_tool_api TEST_PREFIX "test_tool_api: "
  PROPERTIES LABELS cpu ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")
if(NOT NSIGHTKIT_DISABLE)
  nsightkit_add_test(test_tool_api_program SOURCES nvtx_tool/test_tool_api_program.cpp NO_RECORDER
    LIBRARIES ${CMAKE_DL_LIBS})
  target_compile_definitions(test_tool_api_program PRIVATE
    "NSIGHTKIT_TEST_TOOL=\"$<TARGET_FILE:nsightkit_nvtx_tool>\"")
  add_dependencies(test_tool_api_program nsightkit_nvtx_tool)
endif()
