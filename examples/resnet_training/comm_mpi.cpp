// The MPI side of data-parallel training: the world (MPI initialised for the ranks an MPI
// launcher started, nsightkit::mpi turned on), the CPU backend's all-reduce, the broadcast of
// the NCCL id, and ending the whole job when a rank fails. Every wait on another rank is a
// non-blocking MPI call polled against --dist-timeout (nsightkit::mpi::wait): past it the rank
// ends the job with one line naming the operation, instead of waiting forever for a dead peer.
#include "distributed.hpp"

#include <nsightkit/mpi.hpp>
#include <nsightkit/range.hpp>

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace resnet {
namespace {
namespace nsk = nsightkit;

/// Set when start_mpi_world() initialised MPI (then finish_world() finalises it).
bool mpi_started = false;

/// "resnet_training: rank R: <what>; ending the job" and MPI_Abort.
[[noreturn]] void end_job(int rank, std::string const& what) {
  nsk::mpi::abort_job(
      "resnet_training: rank " + std::to_string(rank) + ": " + what + "; ending the job", 1);
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(World const& w, CommOptions const& o) : ctx_{w, o} {}

  [[nodiscard]] std::string describe() const override {
    int major = 0, minor = 0;
    MPI_Get_version(&major, &minor);
    char library[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(library, &length);
    std::string lib{library, static_cast<std::size_t>(length > 0 ? length : 0)};
    lib = lib.substr(0, lib.find_first_of(",\n"));  // "Open MPI v4.1.4", "MPICH Version: 5.0.2"
    std::string name;                               // whitespace runs as one space
    for (char c : lib) {
      bool const blank = c == ' ' || c == '\t';
      if (!blank || (!name.empty() && name.back() != ' ')) name += blank ? ' ' : c;
    }
    while (!name.empty() && name.back() == ' ') name.pop_back();
    return "MPI " + std::to_string(major) + "." + std::to_string(minor) + " (" + name +
           ") on the " + "host, " + std::to_string(ctx_.world().size) + " ranks";
  }

  void check_same(std::uint64_t value, char const* what) override {
    check_same_on_ranks(ctx_, value, what);
  }

  void all_reduce_mean(float* data, std::size_t count, std::string const& label) override {
    std::size_t const bytes = count * sizeof(float);
    nsk::ScopedRange const range{nsk::Attributes{nsk::Payload{bytes}}, "allreduce {}", label};
    ++calls_;
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                   &req);
    wait(req, "allreduce", &label, bytes);
    // The same sum on every rank (MPI reduces in one order for all of them), then the mean.
    auto const n = static_cast<float>(ctx_.world().size);
    for (std::size_t i = 0; i < count; ++i) data[i] /= n;
  }

  void join() override {}  // the CPU backend is synchronous: reductions are done when they return

  void watchdog(double) override {}  // every wait is bounded by itself

 private:
  /// Waits for `req` at most the timeout; past it ends the job naming the operation (built only
  /// then: the calls run every step).
  void wait(MPI_Request& req, char const* what, std::string const* label,
            std::size_t bytes = 0) const {
    if (nsk::mpi::wait(req, ctx_.options().timeout_s)) return;
    std::string op = what;
    if (label != nullptr) {
      op += " " + *label + " (call " + std::to_string(calls_) + ", " + std::to_string(bytes) +
            " bytes)";
    }
    end_job(ctx_.world().rank, "no progress from the other ranks for " + ctx_.timeout_text() +
                                   " in " + op + ": a rank stalled, died, or is out of step");
  }

  RankContext ctx_;
  std::uint64_t calls_{0};
};

}  // namespace

World start_mpi_world(LauncherInfo const& launcher, CommOptions const& options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0) {
    // Only the thread that runs the training loop calls MPI (the loader's workers never do).
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    mpi_started = true;
  }
  World w;
  w.launcher = launcher.launcher;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  if (w.size != launcher.size) {
    std::string const why =
        "the launcher's variables (" + std::string{launcher.launcher} + ") say " +
        std::to_string(launcher.size) + " ranks, but MPI sees " + std::to_string(w.size) +
        (std::string{launcher.launcher} == "torchrun"
             ? ": MPI cannot join processes started by torchrun; start the ranks with mpirun, "
               "mpiexec or srun"
             : ": is this program built against another MPI than the launcher's (mpirun of Open "
               "MPI and a program built with MPICH, or the other way round)?");
    if (mpi_started) MPI_Finalize();
    mpi_started = false;
    throw std::runtime_error(why);
  }
  nsk::mpi::Options o;
  o.timeout_s = options.timeout_s;
  if (!nsk::mpi::enable(MPI_COMM_WORLD, o)) {
    throw std::runtime_error("nsightkit::mpi::enable failed (see the message above)");
  }
  w.local_rank = nsk::mpi::local_rank(MPI_COMM_WORLD);
  return w;
}

void check_same_on_ranks(RankContext const& ctx, std::uint64_t value, char const* what) {
  std::uint64_t in[2] = {value, ~value};  // the min of value and of ~value: the min and the max
  std::uint64_t out[2] = {0, 0};
  MPI_Request req;
  MPI_Iallreduce(in, out, 2, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD, &req);
  if (!nsk::mpi::wait(req, ctx.options().timeout_s)) {
    end_job(ctx.world().rank, "no answer from the other ranks for " + ctx.timeout_text() +
                                  " while comparing their " + what);
  }
  if (out[0] != ~out[1]) {
    ctx.fail(std::string{"the ranks disagree on the "} + what + ": from " + std::to_string(out[0]) +
             " to " + std::to_string(~out[1]));
  }
}

void finish_world() noexcept {
  if (!mpi_started) return;
  mpi_started = false;
  MPI_Finalize();
}

void abort_other_ranks(std::string const& line, int code) noexcept {
  int initialized = 0, finalized = 0, size = 1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized == 0 || finalized != 0) return;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) nsk::mpi::abort_job(line, code);
}

void broadcast_from_rank0(World const& world, CommOptions const& o, void* data, std::size_t bytes,
                          char const* what) {
  MPI_Request req;
  MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD, &req);
  if (nsk::mpi::wait(req, o.timeout_s)) return;
  end_job(world.rank, std::string{"no "} + what + " from rank 0 within " +
                          std::to_string(static_cast<long long>(o.timeout_s)) +
                          " s (--dist-timeout): did rank 0 fail before sending it?");
}

std::unique_ptr<Communicator> make_host_communicator(World const& world, CommOptions const& o) {
  return std::make_unique<MpiCommunicator>(world, o);
}

}  // namespace resnet
