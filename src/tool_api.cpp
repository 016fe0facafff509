// The NVTX tool library's C ABI for the Python package (detail/tool_api.hpp): a Python capture
// window is this library's C++ CaptureWindow, and nsightkit.profile() starts and ends this
// library's report. Nothing here re-implements either: these functions check what the process
// allows, build the objects and turn exceptions into a status and a message.
//
// Built with NSIGHTKIT_DETAIL_NVTX_TOOL, into both tool libraries (tools/nsightkit/CMakeLists.txt).
#include <nsightkit/config.hpp>

#if !defined(NSIGHTKIT_DETAIL_NVTX_TOOL) || !NSIGHTKIT_ENABLED
#error "src/tool_api.cpp belongs to the NVTX tool library: build it with NSIGHTKIT_DETAIL_NVTX_TOOL"
#endif

#include <nsightkit/capture.hpp>
#include <nsightkit/detail/capture_state.hpp>
#include <nsightkit/detail/report/claim.hpp>
#include <nsightkit/detail/report/gpu_source.hpp>
#include <nsightkit/detail/report/lifecycle.hpp>
#include <nsightkit/detail/report/nvtx_tool.hpp>
#include <nsightkit/detail/report/options.hpp>
#include <nsightkit/detail/report/output/file.hpp>
#include <nsightkit/detail/report/output/writing.hpp>
#include <nsightkit/detail/report/watcher.hpp>
#include <nsightkit/detail/text.hpp>
#include <nsightkit/detail/tool_api.hpp>
#include <nsightkit/report_types.hpp>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <dlfcn.h>

namespace {

namespace nsk = nsightkit;
namespace api = nsightkit::detail::tool_api;
namespace report = nsightkit::detail::report;

/// Writes `message` into the caller's buffer; returns `status`.
int fail(int status, std::string const& message, char* error, std::size_t size) noexcept {
  if (error != nullptr && size > 0) std::snprintf(error, size, "%s", message.c_str());
  return status;
}

/// Runs `f` (which returns a status); an exception becomes a status and its message: a bad
/// argument (std::invalid_argument) is `invalid`, anything else `refused`.
template <class F>
int guarded(F&& f, char* error, std::size_t size) noexcept {
  try {
    return f();
  } catch (std::invalid_argument const& e) {
    return fail(api::invalid, e.what(), error, size);
  } catch (std::exception const& e) {
    return fail(api::refused, e.what(), error, size);
  } catch (...) {
    return fail(api::refused, "an unknown exception", error, size);
  }
}

std::string canonical(char const* path) {
  char buf[PATH_MAX];
  return ::realpath(path, buf) != nullptr ? std::string{buf} : std::string{};
}

/// Whether NVTX_INJECTION64_PATH names this very library (nsightkit profile): NVTX's first call
/// in any module would then start its report from NSIGHTKIT_REPORT.
bool injected() {
  char const* named = std::getenv("NVTX_INJECTION64_PATH");
  if (named == nullptr || *named == '\0') return false;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&nsightkit_tool_api_version), &info) == 0 ||
      info.dli_fname == nullptr) {
    return false;
  }
  std::string const self = canonical(info.dli_fname);
  return !self.empty() && self == canonical(named);
}

/// The claim of a copy of the report other than this library's (not `found` when none).
report::Claim other_owner() {
  report::Claim c = report::read_claim();
  if (c.found && c.state == static_cast<void const*>(&report::state_ptr)) c.found = false;
  return c;
}

/// What another copy's ownership means for the caller, who wants `what`.
std::string owned_elsewhere(report::Claim const& c, char const* what) {
  if (c.kind == "program") {
    return std::string{
               "the process's report is the copy of nsightkit compiled into the program or "
               "one of its extensions (NSIGHTKIT_REPORT or Report::enable() started it), "
               "and "} +
           what +
           " runs in nsightkit's NVTX tool library, whose capture state and outputs that "
           "report cannot see";
  }
  return std::string{
             "another copy of nsightkit's NVTX tool library owns the process's report, "
             "and "} +
         what + " runs in this one (load the library NVTX_INJECTION64_PATH names)";
}

/// A window with the texts its options point at.
struct Window {
  Window(nsk::CaptureSchedule schedule, nsk::CaptureOptions options, char const* range,
         char const* environment, bool from_environment)
      : range_name{range != nullptr ? range : ""},
        environment_name{environment != nullptr ? environment : ""},
        window{make(schedule, named(std::move(options), range != nullptr, environment != nullptr),
                    from_environment)} {}

  std::string range_name;
  std::string environment_name;
  nsk::CaptureWindow window;

 private:
  nsk::CaptureOptions named(nsk::CaptureOptions o, bool range, bool environment) const {
    o.nvtx_range_name = range ? range_name.c_str() : nullptr;
    o.environment_variable = environment ? environment_name.c_str() : nullptr;
    return o;
  }
  static nsk::CaptureWindow make(nsk::CaptureSchedule s, nsk::CaptureOptions o, bool from_env) {
    if (from_env) return nsk::CaptureWindow::from_environment(std::move(o));
    return nsk::CaptureWindow{s, std::move(o)};
  }
};

/// A step, held for the caller until it ends (CaptureStep is neither copyable nor movable).
struct Step {
  explicit Step(nsk::CaptureWindow& w) : step{w.step()} {}
  nsk::CaptureStep step;
};

Window const* window_of(void const* w) noexcept { return static_cast<Window const*>(w); }

/// The file outputs of `o` that cannot be written where asked, as one sentence ("" when none).
std::string unwritable_outputs(nsk::ReportOptions const& o) {
  std::string out;
  for (report::FileOutput const& f : report::file_outputs(o)) {
    std::string const path = report::effective_path(report::output_path_here(*f.path));
    std::string const why = report::check_output_path(path);
    if (why.empty()) continue;
    out += std::string{out.empty() ? "" : "; "} + "the " + f.what + " cannot be written to '" +
           path + "' (" + why + ")";
  }
  return out;
}

/// Why gpu=cupti cannot have CUPTI in this process ("" when it can).
std::string cupti_refusal() {
  report::SourceProvider const provider = report::cupti_provider.load(std::memory_order_acquire);
  if (provider == nullptr) {
    return "gpu=cupti, but this tool library has no CUPTI source (libnsightkit-nvtx.so: the "
           "CUPTI one, libnsightkit-nvtx-cupti.so, did not load)";
  }
  report::GpuSource* const source = provider();
  std::string const why = source != nullptr ? source->unavailable() : "out of memory";
  return why.empty() ? std::string{} : "gpu=cupti, but CUPTI cannot be used here: " + why;
}

/// The report's signals and trigger go back to the process (the report has stopped).
void quiet_watcher() {
  if (report::Watcher* w = report::Watcher::existing()) {
    nsk::ReportOptions q;
    q.signals.clear();
    q.trigger_signal = 0;
    q.trigger_file.clear();
    q.snapshot_every = std::chrono::milliseconds{0};
    w->configure(q);
  }
}

}  // namespace

// Exported from a library built with hidden visibility: the Python package dlsym()s them.
#pragma GCC visibility push(default)
extern "C" {

int nsightkit_tool_api_version(void) { return api::version; }

int nsightkit_tool_window_new(std::int64_t const* schedule, unsigned backends, unsigned flags,
                              char const* range_name, char const* environment, void** window,
                              char* error, std::size_t size) {
  if (window != nullptr) *window = nullptr;
  if (schedule == nullptr || window == nullptr) {
    return fail(api::invalid, "no schedule or no place for the window", error, size);
  }
  return guarded(
      [&] {
        report::Claim const other = other_owner();
        if (other.found) {
          return fail(api::refused, owned_elsewhere(other, "a Python capture window"), error, size);
        }
        if (injected()) (void)report::autostart();  // as NVTX's first call would, once
        nsk::CaptureSchedule const s{schedule[0], schedule[1], schedule[2],
                                     schedule[3], schedule[4], schedule[5] != 0};
        nsk::CaptureOptions o;
        o.backends = static_cast<nsk::CaptureBackend>(backends & 3u);
        o.strict_environment = (flags & api::strict_environment) != 0;
        o.synchronize_before_stop = (flags & api::no_synchronize) == 0;
        *window = new Window{s, std::move(o), range_name, environment,
                             (flags & api::from_environment) != 0};
        return api::ok;
      },
      error, size);
}

void nsightkit_tool_window_free(void* window) { delete static_cast<Window*>(window); }

int nsightkit_tool_window_step(void* window, void** step, char* error, std::size_t size) {
  if (step != nullptr) *step = nullptr;
  if (window == nullptr || step == nullptr) {
    return fail(api::invalid, "no window or no place for the step", error, size);
  }
  return guarded(
      [&] {
        *step = new Step{static_cast<Window*>(window)->window};
        return api::ok;
      },
      error, size);
}

void nsightkit_tool_step_end(void* step) {
  delete static_cast<Step*>(step);  // its destructor ends it
}

std::int64_t nsightkit_tool_step_number(void const* step) {
  return step == nullptr ? -1 : static_cast<Step const*>(step)->step.number();
}

int nsightkit_tool_step_phase(void const* step) {
  return static_cast<int>(step == nullptr ? nsk::CapturePhase::off
                                          : static_cast<Step const*>(step)->step.phase());
}

char const* nsightkit_tool_phase_name(int phase) {
  if (phase < 0 || phase > static_cast<int>(nsk::CapturePhase::off)) return "?";
  return nsk::to_string(static_cast<nsk::CapturePhase>(phase));
}

int nsightkit_tool_window_phase_of(void const* window, std::int64_t step) {
  return static_cast<int>(window_of(window)->window.phase_of(step));
}

std::int64_t nsightkit_tool_window_next_step(void const* window) {
  return window_of(window)->window.next_step();
}

unsigned nsightkit_tool_window_state(void const* window) {
  nsk::CaptureWindow const& w = window_of(window)->window;
  return (w.capturing() ? api::capturing : 0u) | (w.off() ? api::off : 0u) |
         (w.schedule_from_environment() ? api::schedule_from_environment : 0u);
}

void nsightkit_tool_window_schedule(void const* window, std::int64_t* out) {
  nsk::CaptureSchedule const& s = window_of(window)->window.schedule();
  std::int64_t const values[] = {s.wait,   s.warmup,     s.active,
                                 s.repeat, s.skip_first, s.on_demand ? 1 : 0};
  for (std::size_t i = 0; i < 6; ++i) out[i] = values[i];
}

void nsightkit_tool_window_close(void* window) { static_cast<Window*>(window)->window.close(); }

void nsightkit_tool_request_capture(void) { nsk::detail::request_capture(); }

int nsightkit_tool_report_owner(void) {
  try {
    report::Claim const c = report::read_claim();
    if (!c.found) return api::owner_none;
    if (c.state == static_cast<void const*>(&report::state_ptr)) return api::owner_this;
    return c.kind == "program" ? api::owner_program : api::owner_tool;
  } catch (...) {
    return api::owner_none;
  }
}

int nsightkit_tool_report_start(char const* spec, char* error, std::size_t size) {
  return guarded(
      [&] {
        std::string const text{spec != nullptr ? spec : ""};
        nsk::ReportOptions o;
        bool on = false;
        std::string why;
        if (!report::parse_report_spec(text, o, on, why)) {
          return fail(api::invalid, why, error, size);
        }
        if (!on) {
          return fail(api::invalid,
                      "'" + text +
                          "' turns the report off (an empty value or an "
                          "off word); name an output, e.g. \"table\"",
                      error, size);
        }
        report::Claim const other = other_owner();
        if (other.found) {
          return fail(api::refused, owned_elsewhere(other, "this report"), error, size);
        }
        if (injected()) (void)report::autostart();  // the command's report, if it asks for one
        if (report::is_enabled()) {
          if (!injected()) {
            return fail(api::refused, "the report already runs in this process", error, size);
          }
          char const* const running = std::getenv("NSIGHTKIT_REPORT");
          return fail(api::running,
                      "the program runs under `nsightkit profile`, whose report is the one in use "
                      "(NSIGHTKIT_REPORT=" +
                          nsk::detail::quote_value(running != nullptr ? running : "") +
                          "); its outputs are written when the program ends",
                      error, size);
        }
        std::string const bad = unwritable_outputs(o);
        if (!bad.empty()) return fail(api::refused, bad, error, size);
        if (o.gpu && o.gpu_source == nsk::GpuSourceKind::cupti) {
          std::string const no_cupti = cupti_refusal();
          if (!no_cupti.empty()) return fail(api::refused, no_cupti, error, size);
        }
        // These options are the report's: NVTX's first call in a module must not start it again
        // from NSIGHTKIT_REPORT. Written by nsightkit_tool_report_finish, not at exit.
        report::autostart_done.store(true);
        o.at_exit = false;
        if (!report::enable(o)) {
          return fail(api::refused, "the report could not start (the line above says why)", error,
                      size);
        }
        report::reset();  // a block's report holds the block only
        return api::ok;
      },
      error, size);
}

int nsightkit_tool_report_finish(int write, char* error, std::size_t size) {
  return guarded(
      [&] {
        if (!report::is_enabled()) {
          return fail(api::refused, "the report does not run", error, size);
        }
        bool const written = write == 0 || report::write_local();
        report::disable();
        quiet_watcher();
        if (!written) {
          return fail(api::refused,
                      "an output was not written where asked (the report's lines above say "
                      "where it went)",
                      error, size);
        }
        return api::ok;
      },
      error, size);
}

int nsightkit_tool_domain_seen(char const* name) {
  if (name == nullptr) return 0;
  try {
    report::nvtx_tool::Names& n = report::nvtx_tool::names();
    std::lock_guard<std::mutex> lock{n.mutex};
    return n.domains.count(name) != 0 ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

}  // extern "C"
#pragma GCC visibility pop
