// The CUDA backend's communicator: NCCL all-reduces on a dedicated stream.
//
// Ordering by events only: before a reduction the NCCL stream waits for an event recorded on the
// compute stream (the gradients are written); join() makes the compute stream wait for an event
// recorded on the NCCL stream (the optimizer reads the averaged gradients). The host never waits
// here, so reductions overlap the rest of the backward pass.
//
// Rank 0's NCCL id reaches the other ranks by an MPI broadcast (comm_mpi.cpp), bounded like every
// other wait. The communicator is non-blocking (ncclConfig_t::blocking = 0): creating it and its
// first collective (which connects the ranks) are polled with a deadline, and watchdog() checks
// NCCL's asynchronous error state while the host waits for the GPU. A rank that dies or never
// joins therefore ends the others with an error naming the operation, after ncclCommAbort(),
// instead of a GPU spinning forever in a collective.
#include "distributed.hpp"

#include <nsightkit/cuda_check.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/report.hpp>
#include <nsightkit/stream.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>

namespace resnet {
namespace {
namespace nsk = nsightkit;
using Clock = std::chrono::steady_clock;

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(World const& w, CommOptions const& o, cudaStream_t compute, int device)
      : ctx_{w, o}, compute_{compute} {
    NSIGHTKIT_CUDA_CHECK(cudaSetDevice(device));
    ncclUniqueId const id = exchange_id();
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    config.commName = "resnet_training";
    {
      nsk::ScopedRange const range{"nccl init"};
      check(ncclCommInitRankConfig(&comm_, ctx_.world().size, id, ctx_.world().rank, &config),
            "ncclCommInitRankConfig");
      settle("creating the NCCL communicator", nullptr, " (every rank must join)");
    }
    NSIGHTKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    nsk::name_stream(stream_, ("rank " + std::to_string(ctx_.world().rank) + " nccl").c_str());
    NSIGHTKIT_CUDA_CHECK(cudaEventCreateWithFlags(&grads_ready_, cudaEventDisableTiming));
    NSIGHTKIT_CUDA_CHECK(cudaEventCreateWithFlags(&reduced_, cudaEventDisableTiming));
    int version = 0;
    ncclGetVersion(&version);
    version_ = std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
               std::to_string(version % 100);
  }

  ~NcclCommunicator() override {
    if (comm_ != nullptr) {
      // Normal end: let the last reductions finish, then free. Any trouble — or reductions
      // still waiting for a peer after the timeout (this rank is unwinding an error while the
      // others went on) — abort: never hang in a destructor.
      bool clean = drained(stream_);
      if (clean) {
        ncclResult_t const f = ncclCommFinalize(comm_);
        clean = f == ncclSuccess || f == ncclInProgress;
      }
      auto const t0 = Clock::now();
      ncclResult_t state = ncclInProgress;
      while (clean && state == ncclInProgress) {
        if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) clean = false;
        if (ctx_.timed_out(t0)) clean = false;
        if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (clean && state == ncclSuccess) {
        ncclCommDestroy(comm_);
      } else {
        ncclCommAbort(comm_);
      }
    }
    if (grads_ready_ != nullptr) NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaEventDestroy(grads_ready_));
    if (reduced_ != nullptr) NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaEventDestroy(reduced_));
    if (stream_ != nullptr) NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream_));
  }

  [[nodiscard]] std::string describe() const override {
    return "NCCL " + version_ + ", " + std::to_string(ctx_.world().size) +
           " ranks, all-reduce on a dedicated stream";
  }

  void check_same(std::uint64_t value, char const* what) override {
    check_same_on_ranks(ctx_, value, what);
  }

  void all_reduce_mean(float* data, std::size_t count, std::string const& label) override {
    if (comm_ == nullptr) ctx_.fail("the NCCL communicator was aborted after an earlier error");
    NSIGHTKIT_CUDA_CHECK(cudaEventRecord(grads_ready_, compute_));
    NSIGHTKIT_CUDA_CHECK(cudaStreamWaitEvent(stream_, grads_ready_, 0));
    // The range's GPU time (the report) is measured on the NCCL stream: it includes waiting for
    // the slowest rank to arrive, which is how a straggler shows on the others.
    nsk::CurrentStream const on{nsk::StreamView{stream_}};
    std::size_t const bytes = count * sizeof(float);
    nsk::ScopedRange const range{nsk::Attributes{nsk::Payload{bytes}}, "allreduce {}", label};
    check(ncclAllReduce(data, data, count, ncclFloat32, ncclAvg, comm_, stream_), "ncclAllReduce",
          &label);
    settle("queueing allreduce", &label, " (the first one connects the ranks)");
    pending_ = true;
  }

  void join() override {
    if (!pending_) return;
    NSIGHTKIT_CUDA_CHECK(cudaEventRecord(reduced_, stream_));
    NSIGHTKIT_CUDA_CHECK(cudaStreamWaitEvent(compute_, reduced_, 0));
    pending_ = false;
  }

  void watchdog(double seconds_waited) override {
    if (comm_ == nullptr) return;
    ncclResult_t state = ncclSuccess;
    ncclResult_t const r = ncclCommGetAsyncError(comm_, &state);
    if (r != ncclSuccess || (state != ncclSuccess && state != ncclInProgress)) {
      abort_with("NCCL reports " + error_text(r != ncclSuccess ? r : state) +
                 " while this rank waits for the GPU (a peer rank failed?)");
    }
    if (seconds_waited > ctx_.options().timeout_s) {
      abort_with("the GPU made no progress for " + ctx_.timeout_text() +
                 ": a peer rank died or stalled inside a collective");
    }
  }

 private:
  /// Waits for `stream` at most the timeout; false on an error or a timeout.
  bool drained(cudaStream_t stream) const noexcept {
    auto const t0 = Clock::now();
    for (;;) {
      cudaError_t const r = cudaStreamQuery(stream);
      if (r == cudaSuccess) return true;
      if (r != cudaErrorNotReady || ctx_.timed_out(t0)) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  std::string error_text(ncclResult_t r) const {
    std::string s = ncclGetErrorString(r);
    char const* last = comm_ != nullptr ? ncclGetLastError(comm_) : nullptr;
    if (last != nullptr && *last != '\0') s += std::string{" ("} + last + ")";
    return s;
  }

  [[noreturn]] void abort_with(std::string const& message) {
    ncclCommAbort(comm_);  // ends this rank's NCCL kernels, so the streams drain
    comm_ = nullptr;
    ctx_.fail(message + "; NCCL communicator aborted");
  }

  /// "what label": built only for an error message (the calls run every step).
  static std::string op_text(char const* what, std::string const* label) {
    return label != nullptr ? std::string{what} + " " + *label : std::string{what};
  }

  void check(ncclResult_t r, char const* call, std::string const* label = nullptr) {
    if (r == ncclSuccess || r == ncclInProgress) return;
    std::string const message = op_text(call, label) + " failed: " + error_text(r);
    if (comm_ == nullptr) ctx_.fail(message);
    abort_with(message);
  }

  /// Polls a non-blocking communicator until the last operation has settled.
  void settle(char const* what, std::string const* label, char const* note) {
    auto const t0 = Clock::now();
    for (;;) {
      ncclResult_t state = ncclInProgress;
      ncclResult_t const r = ncclCommGetAsyncError(comm_, &state);
      if (state == ncclSuccess && r == ncclSuccess) return;
      if (r != ncclSuccess || state != ncclInProgress) {
        abort_with(op_text(what, label) + note + ": " + error_text(r != ncclSuccess ? r : state));
      }
      if (ctx_.timed_out(t0)) {
        abort_with(op_text(what, label) + note + " did not complete within " + ctx_.timeout_text() +
                   " (a rank did not start, or died)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  /// Rank 0 creates the NCCL id and broadcasts it over MPI; the others wait for it, at most the
  /// timeout.
  ncclUniqueId exchange_id() {
    ncclUniqueId id{};
    if (ctx_.world().rank == 0) {
      ncclResult_t const r = ncclGetUniqueId(&id);
      if (r != ncclSuccess) {
        ctx_.fail("ncclGetUniqueId failed: " + std::string{ncclGetErrorString(r)});
      }
    }
    broadcast_from_rank0(ctx_.world(), ctx_.options(), id.internal, sizeof id.internal, "NCCL id");
    return id;
  }

  RankContext ctx_;
  cudaStream_t compute_;
  cudaStream_t stream_{nullptr};
  cudaEvent_t grads_ready_{nullptr};
  cudaEvent_t reduced_{nullptr};
  ncclComm_t comm_{nullptr};
  bool pending_{false};
  std::string version_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(World const& world, CommOptions const& o,
                                                     void* compute_stream, int device) {
  return std::make_unique<NcclCommunicator>(world, o, static_cast<cudaStream_t>(compute_stream),
                                            device);
}

}  // namespace resnet
