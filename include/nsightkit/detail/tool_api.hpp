// Internal: the C ABI of the NVTX tool library (libnsightkit-nvtx*.so, src/tool_api.cpp) that the
// Python package calls through ctypes (python/nsightkit/tool.py): a capture window from Python is
// the C++ CaptureWindow of that library, and nsightkit.profile() starts and ends that library's
// report. Plain C types only: handles are opaque pointers, texts are NUL-terminated, and a call that
// can fail returns a status and writes its message into the caller's buffer (`error`, `size`).
//
// The library answers these calls in whatever process loads it: under `nsightkit profile` it is the
// tool NVTX_INJECTION64_PATH names (dlopen of that path gives the loaded copy); in a plain process
// the Python package loads it itself.
#pragma once

#include <nsightkit/config.hpp>

#include <cstddef>
#include <cstdint>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::tool_api {

/// The version of the functions below; the Python package refuses a library of another version.
inline constexpr int version = 1;

/// Statuses of the calls that can fail.
inline constexpr int ok = 0;
inline constexpr int invalid = 1;  ///< a bad argument: a schedule, a report specification
inline constexpr int refused = 2;  ///< the process's state refuses it
inline constexpr int running = 3;  ///< nsightkit profile's report runs: nothing was started

/// nsightkit_tool_window_new flags.
inline constexpr unsigned from_environment = 1u;  ///< no schedule in code (from_environment())
inline constexpr unsigned strict_environment = 2u;
inline constexpr unsigned no_synchronize = 4u;  ///< synchronize_before_stop = false

/// nsightkit_tool_window_state bits.
inline constexpr unsigned capturing = 1u;
inline constexpr unsigned off = 2u;
inline constexpr unsigned schedule_from_environment = 4u;

/// nsightkit_tool_report_owner answers.
inline constexpr int owner_none = 0;     ///< no report has claimed the process
inline constexpr int owner_this = 1;     ///< this library's report
inline constexpr int owner_program = 2;  ///< a copy compiled into the program or an extension
inline constexpr int owner_tool = 3;     ///< another copy of the tool library

}  // namespace detail::tool_api
NSIGHTKIT_DETAIL_END_NAMESPACE

extern "C" {

/// tool_api::version of the library.
int nsightkit_tool_api_version(void);

/// A CaptureWindow. `schedule` is {wait, warmup, active, repeat, skip_first, on_demand};
/// `backends` CaptureBackend's bits; `range_name` the NVTX window range (null: none);
/// `environment` the variable that overrides the schedule (null: none). Before the window, the
/// library's report starts from NSIGHTKIT_REPORT when the library is the process's NVTX tool, as
/// NVTX's first call would start it. tool_api::refused when another copy of the report owns
/// the process; tool_api::invalid for a bad schedule (the constructor's message).
int nsightkit_tool_window_new(std::int64_t const* schedule, unsigned backends, unsigned flags,
                              char const* range_name, char const* environment, void** window,
                              char* error, std::size_t size);
/// Closes and destroys a window; a step still open stays valid (it ends only its own range).
void nsightkit_tool_window_free(void* window);
/// Begins the next step (CaptureWindow::step()); tool_api::refused while one is open.
int nsightkit_tool_window_step(void* window, void** step, char* error, std::size_t size);
/// Ends a step and destroys it (on the thread that began it).
void nsightkit_tool_step_end(void* step);
std::int64_t nsightkit_tool_step_number(void const* step);
/// CapturePhase as an int (skip, wait, warmup, active, done, off).
int nsightkit_tool_step_phase(void const* step);
/// The name of a CapturePhase ("active").
char const* nsightkit_tool_phase_name(int phase);
int nsightkit_tool_window_phase_of(void const* window, std::int64_t step);
std::int64_t nsightkit_tool_window_next_step(void const* window);
/// tool_api::capturing, off, schedule_from_environment bits.
unsigned nsightkit_tool_window_state(void const* window);
/// The schedule in force, as nsightkit_tool_window_new takes it (6 values).
void nsightkit_tool_window_schedule(void const* window, std::int64_t* schedule);
void nsightkit_tool_window_close(void* window);
/// nsightkit::request_capture().
void nsightkit_tool_request_capture(void);

/// Who owns the process's report (tool_api::owner_*).
int nsightkit_tool_report_owner(void);
/// Starts this library's report with `spec` (NSIGHTKIT_REPORT's grammar), written by
/// nsightkit_tool_report_finish rather than at exit, with nothing recorded before. invalid: a bad
/// specification; running: the library is the process's NVTX tool and its report runs from
/// NSIGHTKIT_REPORT (nsightkit profile; started now if NVTX's first call has not yet started it);
/// refused: another report owns the process, this one already runs, an output cannot be written,
/// or gpu=cupti cannot have CUPTI.
int nsightkit_tool_report_start(char const* spec, char* error, std::size_t size);
/// Writes the outputs (when `write`), then stops the report and gives its signals back.
/// refused when an output did not reach its place (the report's lines say where it went).
int nsightkit_tool_report_finish(int write, char* error, std::size_t size);
/// Whether an NVTX module created the domain `name` through this library (a probe that NVTX
/// handed the module to it).
int nsightkit_tool_domain_seen(char const* name);

}  // extern "C"
