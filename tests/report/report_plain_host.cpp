// A host that does not use nsightkit and loads two plugins that embed nsightkit's report, each with
// dlopen(RTLD_LOCAL): nothing in the global scope unifies their report states except the compiler's
// unique symbols (GCC). Both plugins enable "their" report and record a range. Expected, pinned per
// compiler (NSK_EXPECT_UNIFIED): GCC — one report holding both plugins' ranges; otherwise the
// second plugin's copy detects the first one's report, says so once on stderr and stays off.
// Never two reports that each silently hold half of the ranges.
#include <dlfcn.h>

#include <cstdio>

namespace {
struct Plugin {
  void* lib{nullptr};
  void (*record)(int){nullptr};
  void const* (*state)(){nullptr};
  int (*enable)(){nullptr};
  int (*duplicate)(){nullptr};
  int (*count)(char const*){nullptr};
  int (*enabled)(){nullptr};
};

bool load(char const* path, Plugin& p) {
  p.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (p.lib == nullptr) {
    std::fprintf(stderr, "dlopen(%s): %s\n", path, dlerror());
    return false;
  }
  p.record = reinterpret_cast<void (*)(int)>(dlsym(p.lib, "report_plugin_record"));
  p.state = reinterpret_cast<void const* (*)()>(dlsym(p.lib, "report_plugin_state"));
  p.enable = reinterpret_cast<int (*)()>(dlsym(p.lib, "report_plugin_enable"));
  p.duplicate = reinterpret_cast<int (*)()>(dlsym(p.lib, "report_plugin_duplicate"));
  p.count = reinterpret_cast<int (*)(char const*)>(dlsym(p.lib, "report_plugin_count"));
  p.enabled = reinterpret_cast<int (*)()>(dlsym(p.lib, "report_plugin_nsightkit_enabled"));
  return p.record && p.state && p.enable && p.duplicate && p.count && p.enabled;
}
}  // namespace

int main(int argc, char** argv) {
  Plugin a, b;
  if (argc != 3 || !load(argv[1], a) || !load(argv[2], b)) return 2;
  if (a.enabled() == 0) {  // NSIGHTKIT_DISABLE: nothing records, nothing is enabled
    bool const ok = a.enable() == 0 && b.enable() == 0;
    std::printf("disabled build: %s\n", ok ? "nothing enabled" : "FAIL");
    return ok ? 0 : 1;
  }
  if (a.enable() != 1) return 3;
  int const b_enabled = b.enable();
  a.record(1);
  b.record(2);
  bool const unified = a.state() == b.state();
  int const a_sees_b = a.count("plugin2");
  std::printf("unified=%d b_enabled=%d b_duplicate=%d a_sees_b=%d (expected unified=%d)\n",
              unified ? 1 : 0, b_enabled, b.duplicate(), a_sees_b, NSK_EXPECT_UNIFIED);
  bool ok;
  if (unified) {
    ok = b_enabled == 1 && b.duplicate() == 0 && a_sees_b == 1 && a.count("plugin1") == 1;
  } else {  // the second copy must have noticed and refused: never a silent half-report
    ok = b_enabled == 0 && b.duplicate() == 1 && b.state() == nullptr && a.count("plugin1") == 1;
  }
  ok = ok && (unified ? 1 : 0) == NSK_EXPECT_UNIFIED;
  std::puts(ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}
