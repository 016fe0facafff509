# The Python package's files in an install (included by CMakeLists.txt inside NSIGHTKIT_INSTALL).
# python/nsightkit/ holds the modules; _layout.py, generated here, says where this install put the
# headers, the CMake package, the command and the NVTX tool libraries, relative to the package's
# own directory, so that get_include(), get_cmake_dir() and the capture windows (tool.py) work
# wherever the tree is moved:
#   the wheel (NSIGHTKIT_PYTHON_PACKAGE): the prefix is site-packages/nsightkit itself, and
#     scikit-build-core copies the modules (pyproject.toml, wheel.packages); only _layout.py is
#     installed from here;
#   any other install: the modules and _layout.py in <datadir>/nsightkit/python/nsightkit
#     (PYTHONPATH=<prefix>/share/nsightkit/python), when the source tree has them (a package
#     manager may ship the C++ parts alone).
set(_nsk_py_src "${CMAKE_CURRENT_SOURCE_DIR}/python/nsightkit")
if(NSIGHTKIT_PYTHON_PACKAGE)
  set(_nsk_py_dir ".")
elseif(EXISTS "${_nsk_py_src}/__init__.py")
  set(_nsk_py_dir "${CMAKE_INSTALL_DATADIR}/nsightkit/python/nsightkit")
  file(GLOB _nsk_py_modules CONFIGURE_DEPENDS "${_nsk_py_src}/*.py")
  install(FILES ${_nsk_py_modules} DESTINATION ${_nsk_py_dir})
else()
  return()
endif()

# _nsightkit_python_path(<dir> <out>): <dir> (relative to the prefix unless absolute) as seen from
# the package's directory.
function(_nsightkit_python_path dir out)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    file(RELATIVE_PATH rel "/nsightkit-root/${_nsk_py_dir}" "/nsightkit-root/${dir}")
    set(${out} "${rel}" PARENT_SCOPE)
  endif()
endfunction()
_nsightkit_python_path("${CMAKE_INSTALL_INCLUDEDIR}" NSIGHTKIT_PY_INCLUDE_DIR)
_nsightkit_python_path("${NSIGHTKIT_CMAKE_DIR}" NSIGHTKIT_PY_CMAKE_DIR)
_nsightkit_python_path("${CMAKE_INSTALL_LIBDIR}/pkgconfig" NSIGHTKIT_PY_PKGCONFIG_DIR)
if(TARGET nsightkit_command)
  _nsightkit_python_path("${CMAKE_INSTALL_BINDIR}/nsightkit" NSIGHTKIT_PY_COMMAND)
else()
  set(NSIGHTKIT_PY_COMMAND "")
endif()
if(TARGET nsightkit_nvtx_tool)  # capture windows and nsightkit.profile() load it (tool.py)
  _nsightkit_python_path("${NSIGHTKIT_TOOL_INSTALL_DIR}" NSIGHTKIT_PY_TOOL_DIR)
else()
  set(NSIGHTKIT_PY_TOOL_DIR "")
endif()
configure_file(cmake/nsightkit-python-layout.py.in "${CMAKE_CURRENT_BINARY_DIR}/python/_layout.py" @ONLY)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/python/_layout.py" DESTINATION ${_nsk_py_dir})
