// Internal: the MPI integration's process-wide state and what every part of it needs — waits
// with a deadline, ending the whole job with one line, the std::terminate handler, and clock
// offsets between ranks measured over MPI.
//
// nsightkit's messages travel on its own duplicate of the user's communicator, so they never
// match a receive of the program. Every wait on another rank is a non-blocking call polled with
// MPI_Test against a deadline: a rank that died or never arrives ends the job with a line that
// names the wait (MPI_Abort) instead of a hang.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/fmt_format.hpp>
#include <nsightkit/mpi_types.hpp>

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::mpi {

/// The integration of this process (nsightkit::mpi::enable() fills it in).
struct Runtime {
  std::atomic<bool> enabled{false};
  MPI_Comm comm{MPI_COMM_NULL};  ///< nsightkit's duplicate of the user's communicator
  int rank{0};
  int size{1};
  int node{0};        ///< the lowest rank of `comm` on this host
  int local_rank{0};  ///< this rank's place among the ranks of its host
  std::string host;   ///< MPI_Get_processor_name
  nsightkit::mpi::Options options{};
  int keyval{MPI_KEYVAL_INVALID};
  std::terminate_handler previous_terminate{nullptr};
  void (*at_finalize)() noexcept {nullptr};  ///< the report's part of MPI_Finalize (gather.hpp)
};

/// The one Runtime of the process (leaked on purpose: MPI_Finalize may run during exit).
inline Runtime& runtime() {
  static Runtime* const r = new Runtime{};
  return *r;
}

/// The first bad option of `o`, named, or "".
inline std::string bad_option(nsightkit::mpi::Options const& o) {
  auto bad = [](double v) { return !(v >= 0) || !std::isfinite(v); };
  if (bad(o.timeout_s)) return "Options::timeout_s must be a non-negative number of seconds";
  if (bad(o.merge.min_excess_pct)) return "MergeOptions::min_excess_pct must be >= 0";
  if (bad(o.merge.min_excess_ms)) return "MergeOptions::min_excess_ms must be >= 0";
  if (bad(o.merge.min_share_pct)) return "MergeOptions::min_share_pct must be >= 0";
  if (o.merge.straggler_paths == 0) return "MergeOptions::straggler_paths must be at least 1";
  return {};
}

/// MPI_Init has run and MPI_Finalize has not.
inline bool mpi_active() noexcept {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

/// Nanoseconds on this host's steady clock (the report's default clock).
inline std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Prints `line` on stderr (after the program's own pending output) and ends the whole job:
/// MPI_Abort while MPI runs, else this process alone.
[[noreturn]] inline void abort_job(std::string_view line, int code) noexcept {
  std::fflush(stdout);
  std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  std::fflush(stderr);
  if (mpi_active()) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; a broken MPI must not make this one
}

/// "rank 3 (host gpu7)" for messages.
inline std::string who() {
  Runtime const& rt = runtime();
  return rt.host.empty() ? fmt::format("rank {}", rt.rank)
                         : fmt::format("rank {} ({})", rt.rank, rt.host);
}

/// Polls `request` until it completes or `timeout_s` passes (0: no limit); false on a timeout
/// (the request is then still pending). Spins briefly, then yields, then sleeps 100 us between
/// tests: MPI progresses inside MPI_Test, and a short wait should not pay a sleep.
inline bool wait(MPI_Request& request, double timeout_s) noexcept {
  auto const start = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0;; ++i) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done != 0) return true;
    if (timeout_s > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s)
      return false;
    if (i < 1000) continue;
    if (i < 10000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

/// wait() for nsightkit's own collectives: past the timeout the job ends with a line naming
/// `what` ("gathering the reports").
inline void wait_or_abort(MPI_Request& request, char const* what) noexcept {
  Runtime const& rt = runtime();
  if (wait(request, rt.options.timeout_s)) return;
  std::string line;
  NSIGHTKIT_DETAIL_TRY {
    line = fmt::format(
        "nsightkit mpi: {}: no answer from the other ranks for {:g} s while {} (a rank stalled, "
        "exited, or does not take part: Report::write() and MPI_Finalize are collective with "
        "nsightkit::mpi); ending the job",
        who(), rt.options.timeout_s, what);
  }
  NSIGHTKIT_DETAIL_CATCH(...) { line = "nsightkit mpi: a wait for the other ranks timed out"; }
  abort_job(line, 1);
}

/// The terminate handler the process started with (the C++ runtime's), read during static
/// initialisation: a handler other than this one was installed by the program, and is chained.
inline std::terminate_handler const initial_terminate = std::get_terminate();

/// std::terminate on any rank (an uncaught exception, most often) ends the whole job at once: one
/// line naming the rank and the exception, then the program's own terminate handler when it had
/// installed one before nsightkit::mpi::enable() (it ends the process; mpirun and srun then end
/// the job), else MPI_Abort.
[[noreturn]] inline void on_terminate() noexcept {
  std::string what = "std::terminate was called";
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
  try {
    if (std::exception_ptr const e = std::current_exception()) std::rethrow_exception(e);
  } catch (std::exception const& e) {
    what = std::string{"uncaught exception: "} + e.what();
  } catch (...) {
    what = "uncaught exception (not a std::exception)";
  }
#endif
  std::string line;
  NSIGHTKIT_DETAIL_TRY { line = fmt::format("nsightkit mpi: {}: {}; ending the job", who(), what); }
  NSIGHTKIT_DETAIL_CATCH(...) { line = what; }
  std::terminate_handler const previous = runtime().previous_terminate;
  if (previous != nullptr && previous != initial_terminate && previous != &on_terminate) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
    previous();  // a terminate handler does not return; if it does, the job still ends
    abort_job("nsightkit mpi: the program's terminate handler returned", 1);
  }
  abort_job(line, 1);
}

/// MPI_Finalize deletes the attributes of MPI_COMM_SELF before it ends anything else (the MPI
/// standard's hook for libraries); nsightkit::mpi::enable() sets one whose deletion lands here,
/// while every rank can still take part in a collective.
inline int on_finalize_callback(MPI_Comm, int, void*, void*) {
  Runtime& rt = runtime();
  if (rt.enabled.load(std::memory_order_acquire)) {
    if (rt.at_finalize != nullptr) rt.at_finalize();
    rt.enabled.store(false, std::memory_order_release);
    MPI_Comm_free(&rt.comm);
  }
  return MPI_SUCCESS;
}

/// This rank's clock minus rank 0's, measured over MPI.
struct ClockOffset {
  std::int64_t offset_ns{0};
  std::int64_t uncertainty_ns{0};  ///< half the shortest round trip: |error| <= this
};

/// Measures every rank's clock offset against rank 0 (collective; rank 0 gets one per rank, the
/// others an empty vector): rank 0 sends a ping, the rank answers with its clock, and of
/// `rounds` round trips the shortest gives offset = t_rank - (t_send + t_receive) / 2, whose
/// error is at most half that round trip (the rank read its clock somewhere inside it).
inline std::vector<ClockOffset> measure_clock_offsets(int rounds = 10) {
  Runtime const& rt = runtime();
  constexpr int ping_tag = 101, pong_tag = 102;  // within the 32767 every MPI allows
  std::vector<ClockOffset> out;
  if (rt.rank == 0) {
    out.resize(static_cast<std::size_t>(rt.size));
    for (int r = 1; r < rt.size; ++r) {
      std::int64_t best = std::numeric_limits<std::int64_t>::max();
      for (int k = 0; k < rounds; ++k) {
        std::int64_t their = 0;
        MPI_Request reqs[2];
        MPI_Irecv(&their, 1, MPI_INT64_T, r, pong_tag, rt.comm, &reqs[1]);
        std::int64_t const t0 = steady_ns();
        MPI_Isend(&t0, 1, MPI_INT64_T, r, ping_tag, rt.comm, &reqs[0]);
        wait_or_abort(reqs[0], "measuring the ranks' clock offsets");
        wait_or_abort(reqs[1], "measuring the ranks' clock offsets");
        std::int64_t const t1 = steady_ns();
        if (t1 - t0 < best) {
          best = t1 - t0;
          out[static_cast<std::size_t>(r)] =
              ClockOffset{their - (t0 + (t1 - t0) / 2), best / 2 + 1};
        }
      }
    }
  } else {
    for (int k = 0; k < rounds; ++k) {
      std::int64_t ping = 0;
      MPI_Request req;
      MPI_Irecv(&ping, 1, MPI_INT64_T, 0, ping_tag, rt.comm, &req);
      wait_or_abort(req, "measuring the ranks' clock offsets");
      std::int64_t const now = steady_ns();
      MPI_Isend(&now, 1, MPI_INT64_T, 0, pong_tag, rt.comm, &req);
      wait_or_abort(req, "measuring the ranks' clock offsets");
    }
  }
  return out;
}

}  // namespace detail::mpi
NSIGHTKIT_DETAIL_END_NAMESPACE
