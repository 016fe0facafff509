# The Python package (pyproject.toml, python/nsightkit/; docs/pytorch.md): its wheel built once by
# pip (the python_wheel fixture) and installed into a fresh virtual environment, then used as a
# PyTorch user would (run_package.py says what each case checks). Label packaging too: it builds
# the package, like the consumers test, so it runs in the gcc suite only.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
set(NSIGHTKIT_TEST_PYTHON_BASE "" CACHE FILEPATH
  "Python the package's test environment is made from (empty: the first with torch, else this one)")
set(_nsk_py_args --source ${PROJECT_SOURCE_DIR} --dir ${CMAKE_CURRENT_BINARY_DIR}/python_package)
if(NSIGHTKIT_TEST_PYTHON_BASE)
  list(APPEND _nsk_py_args --base-python ${NSIGHTKIT_TEST_PYTHON_BASE})
endif()
if(TARGET CUDA::cupti)  # the wheel's build finds the same toolkit
  list(APPEND _nsk_py_args --expect-cupti)
endif()
foreach(case IN ITEMS wheel api capture profile torch pandas detr)
  add_test(NAME python_${case}
    COMMAND Python3::Interpreter ${CMAKE_CURRENT_LIST_DIR}/run_package.py ${case} ${_nsk_py_args})
  set_tests_properties(python_${case} PROPERTIES LABELS "cpu;python;packaging" SKIP_RETURN_CODE 77
    ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD}")
endforeach()
set_tests_properties(python_wheel PROPERTIES FIXTURES_SETUP nsightkit_python_package TIMEOUT 1800)
set_tests_properties(python_api python_capture python_profile python_torch python_pandas python_detr
  PROPERTIES
  FIXTURES_REQUIRED nsightkit_python_package
  TIMEOUT 600)
