// Module hooks, ranges and the report in a program built with -fno-exceptions: a plain main()
// (Catch2 needs exceptions) that exits non-zero on the first mismatch it reports.
// Under NSIGHTKIT_DISABLE (the disabled CI suite) hooks and the report stay empty.
// With an argument it calls an API with bad input instead, which must print "nsightkit: ..." and
// abort (tests/module/expect_abort.cmake checks the status and the message).
#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/report.hpp>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#error "test_module_noexcept.cpp must be compiled with -fno-exceptions"
#endif

namespace nsk = nsightkit;

namespace {

int failures = 0;

void check(bool ok, char const* what) {
  if (ok) return;
  std::fprintf(stderr, "FAILED: %s\n", what);
  ++failures;
}

struct Relu {
  int operator()(int x) const { return x < 0 ? 0 : x; }
};

// Each mode must abort inside nsightkit; returning from it is a failure.
int bad_input(std::string_view mode) {
  if (mode == "empty-hook") {
    nsk::HookHandle const h = nsk::add_pre_hook(nsk::ModuleHook{});
    (void)h;
  } else if (mode == "bad-module-name") {
    nsk::Hooked<Relu> const relu{"a/b"};
    (void)relu;
  } else {
    std::fprintf(stderr, "FAILED: unknown mode '%.*s'\n", static_cast<int>(mode.size()),
                 mode.data());
    return 2;
  }
  std::fprintf(stderr, "FAILED: '%.*s' returned instead of aborting\n",
               static_cast<int>(mode.size()), mode.data());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) return bad_input(argv[1]);

  nsk::ReportOptions o;
  o.table = "";  // no output at exit: the table is read below
  o.at_exit = false;
  o.gpu = false;
  check(nsk::Report::enable(o) == nsk::enabled, "Report::enable");

  std::vector<std::string> seen;
  int out = 0;
  {
    nsk::HookHandle const hook = nsk::add_post_hook([&](nsk::ModuleInfo const& m) {
      seen.push_back(std::string{m.path} + " #" + std::to_string(m.call_count));
    });
    check(hook.active() == nsk::enabled, "the hook is installed");
    nsk::Hooked<Relu> relu{"relu"};
    nsk::ScopedRange const step{"step"};
    for (int i = 0; i < 2; ++i) {
      NSIGHTKIT_MODULE("layer{}", i);
      out += relu(2 * i - 1);  // relu(-1) + relu(1)
    }
  }
  check(out == 1, "the hooked module's results");
  std::vector<std::string> expected{"layer0/relu #1", "layer0 #1", "layer1/relu #1", "layer1 #1"};
  if (!nsk::enabled) expected.clear();
  check(seen == expected, "the post hook saw every module with its path and count");
  if (seen != expected) {
    for (auto const& s : seen) std::fprintf(stderr, "  hook saw: %s\n", s.c_str());
  }

  nsk::ReportSnapshot const snap = nsk::Report::snapshot();
  std::string const table = nsk::format_table(snap);
  if (nsk::enabled) {
    nsk::PathStats const* step = snap.find("step");
    nsk::PathStats const* layer = snap.find("step/layer1/relu");
    check(step != nullptr && step->cpu.count == 1, "the report's step");
    check(layer != nullptr && layer->cpu.count == 1, "the report's module path step/layer1/relu");
    check(table.find("layer0") != std::string::npos && table.find("relu") != std::string::npos,
          "the table names the modules");
    if (failures != 0) std::fprintf(stderr, "%s", table.c_str());
  } else {
    check(snap.paths.empty(), "a disabled build's report is empty");
  }
  check(nsk::ncu_nvtx_include("step/layer0") == "nsightkit@step/layer0/", "ncu_nvtx_include");

  std::printf("%d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
