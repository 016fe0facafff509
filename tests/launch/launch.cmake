# The rank launcher (tools/nsightkit_launch.py, Python standard library only): one ctest entry per
# test method of tests/launch/test_launch.py, each starting the launcher on fake rank programs
# (tests/launch/fake_rank.py). CPU only; independent of NSIGHTKIT_DISABLE (the same in every build).
find_package(Python3 COMPONENTS Interpreter REQUIRED)

set(_nsk_launch_driver ${CMAKE_CURRENT_LIST_DIR}/test_launch.py)
# The list of tests comes from the driver itself, so a new test method is never left out; editing
# the driver re-runs CMake.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_nsk_launch_driver})
file(STRINGS ${_nsk_launch_driver} _nsk_launch_defs REGEX "^    def test_[A-Za-z0-9_]+\\(self\\):")
if(NOT _nsk_launch_defs)
  message(FATAL_ERROR "${_nsk_launch_driver}: no test methods found")
endif()
foreach(def IN LISTS _nsk_launch_defs)
  string(REGEX REPLACE "^    def test_([A-Za-z0-9_]+)\\(self\\):.*" "\\1" case "${def}")
  add_test(NAME launch_${case}
    COMMAND Python3::Interpreter ${_nsk_launch_driver} LaunchTest.test_${case})
  # TIMEOUT: each case takes a few seconds; the bound only stops a hung launcher.
  set_tests_properties(launch_${case} PROPERTIES LABELS cpu TIMEOUT 120
    ENVIRONMENT "NSK_LAUNCHER=${CMAKE_CURRENT_LIST_DIR}/../../tools/nsightkit_launch.py")
endforeach()
