/* A host that does not use nsightkit and loads two plugins with dlopen(RTLD_LOCAL). A sink added in
 * plugin A sees ranges emitted in plugin B only where the compiler unifies the registry (GCC's
 * STB_GNU_UNIQUE); with clang each RTLD_LOCAL plugin keeps its own registry. This test pins the
 * documented behaviour for the compiler in use (NSK_EXPECT_UNIFIED). */
#include <dlfcn.h>
#include <stdio.h>

typedef int (*int_fn)(void);
typedef void (*emit_fn)(int);

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  void* a = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  void* b = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!a || !b) {
    fprintf(stderr, "dlopen failed: %s\n", dlerror());
    return 1;
  }
  int enabled = ((int_fn)dlsym(a, "plugin_enabled"))();
  ((int_fn)dlsym(a, "plugin_add_sink"))();
  ((emit_fn)dlsym(b, "plugin_emit"))(1);
  int seen = ((int_fn)dlsym(a, "plugin_seen"))();
  ((int_fn)dlsym(a, "plugin_remove_sink"))();
  int expected = enabled ? NSK_EXPECT_UNIFIED : 0;
  printf("sink in plugin A saw %d range(s) emitted in plugin B (expected %d)\n", seen, expected);
  return seen == expected ? 0 : 1;
}
