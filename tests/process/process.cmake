# Process-wide state in a header-only library (docs/design.md): one definition across translation
# units (ODR), and one sink registry, module registry and per-thread module stack per process
# across shared libraries built with hidden visibility, linked or loaded with dlopen(RTLD_LOCAL),
# also into a host that does not use nsightkit itself.
nsightkit_add_test(test_odr SOURCES process/test_odr_a.cpp process/test_odr_b.cpp)

if(UNIX AND NOT APPLE)
  foreach(plugin IN ITEMS a b c)
    add_library(nsk_plugin_${plugin} SHARED process/plugin.cpp)
    target_link_libraries(nsk_plugin_${plugin} PRIVATE nsightkit::nsightkit nsightkit_warnings)
    set_target_properties(nsk_plugin_${plugin} PROPERTIES CXX_VISIBILITY_PRESET hidden
      VISIBILITY_INLINES_HIDDEN ON)
  endforeach()
  nsightkit_add_test(test_shared_libs SOURCES process/test_shared_libs.cpp NO_RECORDER
    LIBRARIES nsk_plugin_a ${CMAKE_DL_LIBS})
  target_compile_definitions(test_shared_libs PRIVATE NSK_DLOPEN_PLUGIN="$<TARGET_FILE:nsk_plugin_b>")
  add_dependencies(test_shared_libs nsk_plugin_b)

  enable_language(C)
  add_executable(shared_libs_plain_host process/host_plain.c)
  target_link_libraries(shared_libs_plain_host PRIVATE ${CMAKE_DL_LIBS})
  # Linked by the C++ driver: with -fsanitize=undefined the plugins need UBSan's C++ runtime,
  # which a C link leaves out (__ubsan_vptr_type_cache).
  set_target_properties(shared_libs_plain_host PROPERTIES LINKER_LANGUAGE CXX)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_definitions(shared_libs_plain_host PRIVATE NSK_EXPECT_UNIFIED=1)
  else()
    target_compile_definitions(shared_libs_plain_host PRIVATE NSK_EXPECT_UNIFIED=0)
  endif()
  add_dependencies(shared_libs_plain_host nsk_plugin_c)
  add_test(NAME shared_libs_plain_host
    COMMAND shared_libs_plain_host $<TARGET_FILE:nsk_plugin_c> $<TARGET_FILE:nsk_plugin_b>)
  set_tests_properties(shared_libs_plain_host PROPERTIES LABELS cpu)
endif()

# Module hooks across plugins: one registry and one per-thread module stack per process.
if(UNIX AND NOT APPLE)
  foreach(plugin IN ITEMS a b)
    add_library(nsk_module_plugin_${plugin} SHARED process/module_plugin.cpp)
    target_link_libraries(nsk_module_plugin_${plugin} PRIVATE nsightkit::nsightkit nsightkit_warnings)
    set_target_properties(nsk_module_plugin_${plugin} PROPERTIES CXX_VISIBILITY_PRESET hidden
      VISIBILITY_INLINES_HIDDEN ON)
  endforeach()
  nsightkit_add_test(test_module_shared_libs SOURCES process/test_module_shared_libs.cpp NO_RECORDER
    LIBRARIES nsk_module_plugin_a ${CMAKE_DL_LIBS})
  target_compile_definitions(test_module_shared_libs PRIVATE
    NSK_DLOPEN_MODULE_PLUGIN="$<TARGET_FILE:nsk_module_plugin_b>")
  add_dependencies(test_module_shared_libs nsk_module_plugin_b)
endif()
