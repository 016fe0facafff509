// The CUDA backend's communicator: NCCL all-reduces on a dedicated stream.
//
// Ordering by events only: before a reduction the NCCL stream waits for an event recorded on the
// compute stream (the gradients are written); join() makes the compute stream wait for an event
// recorded on the NCCL stream (the optimizer reads the averaged gradients). The host never waits
// here, so reductions overlap the rest of the backward pass.
//
// The communicator is non-blocking (ncclConfig_t::blocking = 0): creating it and its first
// collective (which connects the ranks) are polled with a deadline, and watchdog() checks NCCL's
// asynchronous error state while the host waits for the GPU. A rank that dies or never joins
// therefore ends the others with an error naming the operation, after ncclCommAbort(), instead
// of a GPU spinning forever in a collective.
#include "distributed.hpp"

#include <nsightkit/cuda_check.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/report.hpp>
#include <nsightkit/stream.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <fstream>
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
      : world_{w}, options_{o}, compute_{compute} {
    NSIGHTKIT_CUDA_CHECK(cudaSetDevice(device));
    ncclUniqueId const id = exchange_id();
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    config.commName = "resnet_training";
    {
      nsk::ScopedRange const range{"nccl init"};
      check(ncclCommInitRankConfig(&comm_, world_.size, id, world_.rank, &config),
            "ncclCommInitRankConfig");
      settle("creating the NCCL communicator (every rank must join)");
    }
    NSIGHTKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    nsk::name_stream(stream_, ("rank " + std::to_string(world_.rank) + " nccl").c_str());
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
        if (seconds_since(t0) > options_.timeout_s) clean = false;
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
    return "NCCL " + version_ + ", " + std::to_string(world_.size) +
           " ranks, all-reduce on a dedicated stream";
  }

  void all_reduce_mean(float* data, std::size_t count, std::string const& label) override {
    if (comm_ == nullptr) fail("the NCCL communicator was aborted after an earlier error");
    NSIGHTKIT_CUDA_CHECK(cudaEventRecord(grads_ready_, compute_));
    NSIGHTKIT_CUDA_CHECK(cudaStreamWaitEvent(stream_, grads_ready_, 0));
    // The range's GPU time (the report) is measured on the NCCL stream: it includes waiting for
    // the slowest rank to arrive, which is how a straggler shows on the others.
    nsk::CurrentStream const on{nsk::StreamView{stream_}};
    std::size_t const bytes = count * sizeof(float);
    nsk::ScopedRange const range{nsk::Attributes{nsk::Payload{bytes}}, "allreduce {}", label};
    check(ncclAllReduce(data, data, count, ncclFloat32, ncclAvg, comm_, stream_),
          "ncclAllReduce " + label);
    settle("queueing allreduce " + label + " (the first one connects the ranks)");
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
    if (seconds_waited > options_.timeout_s) {
      abort_with("the GPU made no progress for " + timeout_text() +
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
      if (r != cudaErrorNotReady || seconds_since(t0) > options_.timeout_s) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  static double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

  std::string timeout_text() const {
    return std::to_string(static_cast<long long>(options_.timeout_s)) + " s (--dist-timeout)";
  }

  [[noreturn]] void fail(std::string const& message) const {
    throw std::runtime_error("rank " + std::to_string(world_.rank) + ": " + message);
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
    fail(message + "; NCCL communicator aborted");
  }

  void check(ncclResult_t r, std::string const& call) {
    if (r == ncclSuccess || r == ncclInProgress) return;
    if (comm_ == nullptr) fail(call + " failed: " + error_text(r));
    abort_with(call + " failed: " + error_text(r));
  }

  /// Polls a non-blocking communicator until the last operation has settled.
  void settle(std::string const& what) {
    auto const t0 = Clock::now();
    for (;;) {
      ncclResult_t state = ncclInProgress;
      ncclResult_t const r = ncclCommGetAsyncError(comm_, &state);
      if (r != ncclSuccess) abort_with(what + ": " + error_text(r));
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) abort_with(what + ": " + error_text(state));
      if (seconds_since(t0) > options_.timeout_s) {
        abort_with(what + " did not complete within " + timeout_text() +
                   " (a rank did not start, or died)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  /// Rank 0 creates the NCCL id and publishes it in the rendezvous directory (written, then
  /// renamed: never read half-written); the others wait for it, at most the timeout.
  ncclUniqueId exchange_id() {
    ncclUniqueId id{};
    std::string const path = world_.rendezvous + "/nccl-id";
    if (world_.rank == 0) {
      ncclResult_t const r = ncclGetUniqueId(&id);
      if (r != ncclSuccess) fail("ncclGetUniqueId failed: " + std::string{ncclGetErrorString(r)});
      std::string const tmp = path + ".tmp";
      std::ofstream f{tmp, std::ios::binary};
      f.write(id.internal, sizeof id.internal);
      f.close();
      if (!f || std::rename(tmp.c_str(), path.c_str()) != 0) {
        fail("cannot write " + path + " (NSIGHTKIT_RENDEZVOUS must be a writable directory)");
      }
      return id;
    }
    auto const t0 = Clock::now();
    for (;;) {
      std::ifstream f{path, std::ios::binary};
      if (f.read(id.internal, sizeof id.internal)) return id;
      if (seconds_since(t0) > options_.timeout_s) {
        fail("rank 0 did not publish the NCCL id in " + path + " within " + timeout_text() +
             " (did rank 0 start?)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  World world_;
  CommOptions options_;
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
