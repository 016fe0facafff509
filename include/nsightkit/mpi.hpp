/**
 * @file mpi.hpp
 * @brief nsightkit on MPI: every rank's report gathered to rank 0 and merged there, and a job
 *        that ends at once, with one line, when a rank fails.
 *
 * Part of the optional component `nsightkit::mpi` (CMake: `find_package(nsightkit COMPONENTS
 * mpi)`, then link `nsightkit::mpi`; it finds MPI with `find_package(MPI COMPONENTS CXX)` and
 * links `MPI::MPI_CXX`). Programs that do not include this header are unchanged and need no MPI.
 *
 * @code
 * #include <nsightkit/mpi.hpp>
 * #include <nsightkit/report.hpp>
 *
 * int main(int argc, char** argv) {
 *   MPI_Init(&argc, &argv);
 *   nsightkit::mpi::enable(MPI_COMM_WORLD);   // collective: every rank calls it
 *   ...                                       // ranges as usual; NSIGHTKIT_REPORT on every rank
 *   MPI_Finalize();                           // every rank's report merged on rank 0 here
 * }
 * // mpirun -np 4 -x NSIGHTKIT_REPORT=table,json=out/s.json,trace=out/t.json ./train
 * //   rank 0 prints the merged table; out/s.rank0.json ... out/s.rank3.json (each rank's own),
 * //   out/s.merged.json, out/t.rank0.json ..., out/t.merged.json (one trace, a process per rank)
 * @endcode
 *
 * What enable() changes:
 * - **Report::write() and MPI_Finalize gather the report.** Both are collective over the
 *   communicator: every rank writes its own files as before (the names carry `.rankN`), and
 *   rank 0 also writes the merged view — the table (to where `table=` says; printed by rank 0
 *   alone), `json=`, `csv=` and `trace=` with `.merged` in their names — the same table, summary
 *   and CSV that `nsightkit merge` makes from the per-rank files: per path the min /
 *   median / max over ranks, the slowest rank and its excess, stragglers, each rank's time in
 *   collectives. A report written at exit (ReportOptions::at_exit, NSIGHTKIT_REPORT) is written in
 *   MPI_Finalize, while every rank can still take part. A rank without a report takes part too
 *   (the merge says which ranks had none).
 * - **One time line.** The merged trace has a process per rank, aligned on rank 0's steady clock:
 *   ranks on its host share that clock; other hosts' offsets are measured over MPI (the shortest
 *   of ten ping-pongs; otherData gives each offset and its uncertainty).
 * - **Nothing waits forever.** Every wait of the gather is bounded (Options::timeout_s): a rank
 *   that stalls, exits or never calls Report::write() ends the job with one line naming the wait
 *   (MPI_Abort). With Options::abort_on_terminate, an uncaught exception on any rank ends the job
 *   at once with one line naming the rank and the exception (a terminate handler the program
 *   installed before enable() still runs after that line).
 * - **Signals** (docs/long-jobs.md): a rank that receives SIGTERM, SIGINT, SIGHUP or SIGUSR1
 *   writes its own files (`.rankN`) and ends as the signal would have ended it; nothing collective
 *   runs then, so each rank writes whether or not the others still can.
 *
 * Call MPI and these functions from one thread (MPI_THREAD_FUNNELED is enough); recording
 * threads are free. Under `NSIGHTKIT_DISABLE` the report is compiled out and nothing is gathered;
 * the fault handling (abort_on_terminate, wait(), abort_job()) still works. See docs/multi-gpu.md.
 */
#pragma once

#if !__has_include(<mpi.h>)
#error                                                                                             \
    "nsightkit/mpi.hpp needs MPI's <mpi.h>: link the nsightkit::mpi component (find_package(nsightkit COMPONENTS mpi))"
#endif

#include <nsightkit/config.hpp>
#include <nsightkit/detail/mpi/runtime.hpp>
#include <nsightkit/detail/process.hpp>
#include <nsightkit/mpi_types.hpp>

#if NSIGHTKIT_ENABLED
#include <nsightkit/detail/mpi/gather.hpp>
#include <nsightkit/detail/report/lifecycle.hpp>
#endif

#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace mpi {

/**
 * @brief This rank's place among the ranks of its host (0 … ranks on the host - 1): the GPU it
 *        should use (`cudaSetDevice(nsightkit::mpi::local_rank(comm))`).
 *
 * Collective over `comm` (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED): unlike launcher
 * variables, it is right under every launcher.
 * @param comm the communicator of the ranks
 * @return the local rank, or -1 when MPI is not running (with a message on stderr)
 */
inline int local_rank(MPI_Comm comm = MPI_COMM_WORLD) noexcept {
  if (!nsightkit::detail::mpi::mpi_active()) {
    std::fprintf(stderr, "nsightkit mpi: local_rank() needs MPI running (after MPI_Init)\n");
    return -1;
  }
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int r = 0;
  MPI_Comm_rank(node, &r);
  MPI_Comm_free(&node);
  return r;
}

/**
 * @brief Turns the MPI integration on for the ranks of `comm` (see the file comment).
 *
 * Collective: every rank of `comm` calls it, after MPI_Init. From then on the report names this
 * process's files by its rank in `comm` (`.rankN` when `comm` has more than one rank), whatever
 * the launcher's variables say; nothing is written to the environment. Call it once per process.
 * @param comm the ranks whose reports are merged (normally MPI_COMM_WORLD); nsightkit talks on a
 *        duplicate of it, never mixing with the program's messages
 * @param options timeouts, fault handling, merge thresholds
 * @return true when on; false, with one line on stderr naming the problem, when MPI is not
 *         running, `comm` is MPI_COMM_NULL, it was already called, or an option is bad.
 */
inline bool enable(MPI_Comm comm = MPI_COMM_WORLD, Options const& options = Options{}) noexcept {
  namespace d = nsightkit::detail::mpi;
  auto fail = [](char const* why) {
    std::fprintf(stderr, "nsightkit mpi: enable(): %s; the MPI integration stays off\n", why);
    return false;
  };
  if (!d::mpi_active()) return fail("MPI is not running (call it after MPI_Init)");
  if (comm == MPI_COMM_NULL) return fail("the communicator is MPI_COMM_NULL");
  d::Runtime& rt = d::runtime();
  if (rt.enabled.load(std::memory_order_acquire)) return fail("it was already called");
  NSIGHTKIT_DETAIL_TRY {
    std::string const bad = d::bad_option(options);
    if (!bad.empty()) return fail(bad.c_str());
    rt.options = options;
    MPI_Comm_dup(comm, &rt.comm);
    MPI_Comm_rank(rt.comm, &rt.rank);
    MPI_Comm_size(rt.comm, &rt.size);
    // Ranks of one host (one shared-memory domain, one OS) read one steady clock.
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(rt.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &rt.local_rank);
    MPI_Allreduce(&rt.rank, &rt.node, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(name, &length);
    rt.host.assign(name, static_cast<std::size_t>(length > 0 ? length : 0));
    // Files are named by this rank (.rankN when there are several), whatever the launcher set;
    // nothing is written to the environment, which other threads and libraries read.
    nsightkit::detail::set_process_rank(rt.rank, rt.size);
    // MPI_Finalize deletes MPI_COMM_SELF's attributes first: the hook for the at-exit report.
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &d::on_finalize_callback, &rt.keyval, nullptr);
    MPI_Comm_set_attr(MPI_COMM_SELF, rt.keyval, nullptr);
    if (options.abort_on_terminate) rt.previous_terminate = std::set_terminate(&d::on_terminate);
#if NSIGHTKIT_ENABLED
    rt.at_finalize = &d::finalize_report;
    nsightkit::detail::report::write_hook.store(&d::write_hook, std::memory_order_release);
#endif
    rt.enabled.store(true, std::memory_order_release);
    return true;
  }
  NSIGHTKIT_DETAIL_CATCH(...) { return fail("out of memory"); }
  return false;
}

/// Whether enable() is in force. Safe from any thread (one atomic load).
/// @return true between a successful enable() and MPI_Finalize.
[[nodiscard]] inline bool is_enabled() noexcept {
  return nsightkit::detail::mpi::runtime().enabled.load(std::memory_order_acquire);
}

/**
 * @brief Waits for a non-blocking MPI operation at most `timeout_s` seconds.
 *
 * For the program's own collectives that must not hang when a rank is gone: start them
 * non-blocking (MPI_Iallreduce, MPI_Ibcast, …), wait here, and end the job with abort_job() when
 * it times out. Polls MPI_Test (spinning briefly, then sleeping 100 us between tests).
 * @code
 * MPI_Request req;
 * MPI_Iallreduce(MPI_IN_PLACE, grads, n, MPI_FLOAT, MPI_SUM, comm, &req);
 * if (!nsightkit::mpi::wait(req, 120.0))
 *   nsightkit::mpi::abort_job("train: rank 3: no all-reduce from the other ranks for 120 s");
 * @endcode
 * @param request the operation (completed and freed by MPI when this returns true)
 * @param timeout_s the longest wait in seconds; 0 waits as long as it takes
 * @return true when it completed, false when the time ran out (it is then still pending)
 */
inline bool wait(MPI_Request& request, double timeout_s) noexcept {
  return nsightkit::detail::mpi::wait(request, timeout_s);
}

/**
 * @brief Ends the whole job: prints `line` on stderr (after flushing stdout) and calls
 *        MPI_Abort(MPI_COMM_WORLD, code); without MPI running, ends this process with `code`.
 * @param line the one line that says why ("train: rank 3: CUDA error: out of memory")
 * @param code the exit status the launcher reports (non-zero)
 */
[[noreturn]] inline void abort_job(std::string_view line, int code = 1) noexcept {
  nsightkit::detail::mpi::abort_job(line, code == 0 ? 1 : code);
}

}  // namespace mpi
NSIGHTKIT_DETAIL_END_NAMESPACE
