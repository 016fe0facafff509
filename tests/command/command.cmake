# The nsightkit command's subcommands on saved reports (tools/nsightkit: stats, diff, merge,
# html) and its reader of the report's files. Included from tests/CMakeLists.txt.
#   test_command_reader  the reader: summaries written by summary.hpp read back into the snapshot
#                        they came from (the JSON written again byte for byte; the same table,
#                        page data and merge input), a crafted snapshot with every field and a
#                        live one; gzip; traces; every kind of bad file named
#   command_cli          the subcommands run as users run them, on crafted inputs with known
#                        numbers and on real reports: the table and the page equal the program's,
#                        the merge equals the MPI component's of the same snapshots, diff flags a
#                        planted regression and not a change inside the spread; bad input: exit 2
if(NOT TARGET nsightkit_command)
  message(STATUS "nsightkit tests: tests/command needs the nsightkit command (NSIGHTKIT_BUILD_TOOLS=ON)")
  return()
endif()
find_package(nlohmann_json 3 REQUIRED)
find_package(Python3 COMPONENTS Interpreter REQUIRED)

nsightkit_add_test(test_command_reader NO_RECORDER
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_command_reader.cpp
          ${PROJECT_SOURCE_DIR}/tools/nsightkit/report_file.cpp
  LIBRARIES nlohmann_json::nlohmann_json)
target_include_directories(test_command_reader PRIVATE ${PROJECT_SOURCE_DIR}/tools/nsightkit
                                                       ${CMAKE_CURRENT_LIST_DIR})

add_executable(command_fixtures ${CMAKE_CURRENT_LIST_DIR}/command_fixtures.cpp)
target_link_libraries(command_fixtures PRIVATE nsightkit::nsightkit nsightkit_warnings ${NSIGHTKIT_FMT_PROVIDER})
target_include_directories(command_fixtures PRIVATE ${CMAKE_CURRENT_LIST_DIR})

# A real report with capture-window steps and advice, where the examples are built (they are
# defined after the tests).
set(_nsk_command_example
    "$<$<TARGET_EXISTS:resnet_training>:--example;$<TARGET_FILE:resnet_training>>")
add_test(NAME command_cli
  COMMAND Python3::Interpreter ${CMAKE_CURRENT_LIST_DIR}/test_command.py
          --command $<TARGET_FILE:nsightkit_command> --fixtures $<TARGET_FILE:command_fixtures>
          --demo $<TARGET_FILE:report_demo> "${_nsk_command_example}"
          --dir ${CMAKE_CURRENT_BINARY_DIR}/command_cli
  COMMAND_EXPAND_LISTS)
set_tests_properties(command_cli PROPERTIES LABELS cpu TIMEOUT 600
  ENVIRONMENT_MODIFICATION "${NSIGHTKIT_TEST_ENV_MOD};NSIGHTKIT_REPORT=unset:;NSIGHTKIT_REPORT_D3=unset:")
