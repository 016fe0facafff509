// The CUDA runtime and its input-pipeline and math switches:
//   --pageable / --pinned:      workers fill ordinary memory, or page-locked blocks of
//                               nsightkit::PinnedMemoryPool (PyTorch's pin_memory)
//   --no-prefetch / --prefetch: the copy runs on the compute stream, serialised with the kernels,
//                               or nsightkit::StreamPrefetcher copies the next batch on a copy
//                               stream while the current one computes
// The step's metrics come back through a small page-locked ring with one event per step, so the
// host waits only for the step before the current one (two steps in flight).
// --cuda-graph: the training step recorded once as a CUDA graph and replayed (CudaStepGraph).
#include "common/cuda_backend.hpp"
#include "runtime.hpp"

#include <nsightkit/cuda_check.hpp>
#include <nsightkit/graph.hpp>
#include <nsightkit/pinned.hpp>
#include <nsightkit/prefetch.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/report.hpp>
#include <nsightkit/stream.hpp>

#include <cuda_runtime_api.h>

#include <array>
#include <chrono>
#include <deque>
#include <exception>
#include <new>
#include <optional>
#include <stdexcept>
#include <thread>

namespace resnet {
namespace {
namespace nsk = nsightkit;

/// Page-locked host buffers from a PinnedMemoryPool: a block freed after a copy was queued from
/// it (used_on) is reused only once that copy has finished.
class PinnedAllocator final : public HostAllocator {
  class Buffer final : public HostBuffer {
   public:
    explicit Buffer(nsk::PinnedBlock block) : block_{std::move(block)} {}
    [[nodiscard]] void* data() noexcept override { return block_.data(); }
    [[nodiscard]] std::size_t size() const noexcept override { return block_.size(); }
    void used_on(void* stream) override {
      block_.record_stream(nsk::StreamView{static_cast<cudaStream_t>(stream)});
    }

   private:
    nsk::PinnedBlock block_;
  };

 public:
  [[nodiscard]] std::unique_ptr<HostBuffer> allocate(std::size_t bytes) override {
    try {
      return std::make_unique<Buffer>(pool_.acquire(bytes));
    } catch (std::bad_alloc const&) {
      throw std::runtime_error("nsightkit::PinnedMemoryPool::acquire(" + std::to_string(bytes) +
                               " bytes) for a batch failed with std::bad_alloc (out of "
                               "page-locked memory, or a block the pool rejected)");
    }
  }
  [[nodiscard]] char const* name() const noexcept override { return "pinned"; }
  [[nodiscard]] nsk::PinnedPoolStats stats() const { return pool_.stats(); }

 private:
  nsk::PinnedMemoryPool pool_;
};

/// The training step as a CUDA graph (runtime.hpp, StepGraph).
///
/// What makes the step safe to record (everything a recording must not see happens in the eager
/// first run, on the same static tensors):
/// - no allocation: the layers size their outputs and gradients on first use, the backend's
///   cuDNN workspace and batch-norm scratch only grow on first use, cuBLAS has a fixed workspace
///   (examples/common), and the loader's page-locked blocks are allocated on other threads
///   (thread-local record mode: only this thread's calls can break the recording);
/// - no host synchronization or host read: the loss and the correct count stay on the device
///   until end_step() copies them, after the launch;
/// - no algorithm search: cuDNN's choice per convolution shape is made on first use;
/// - kernels are loaded (CUDA's lazy loading) by that first run.
/// The batch itself is outside the graph: it is copied into the static inputs before each launch.
class CudaStepGraph final : public StepGraph {
 public:
  CudaStepGraph(nn::Backend& backend, cudaStream_t stream, RuntimeOptions const& o, StepBody body,
                std::string name)
      : stream_{stream}, body_{std::move(body)}, name_{std::move(name)} {
    images_ = backend.empty(nn::Shape{o.batch, o.channels, o.image_size, o.image_size}, o.layout);
    labels_ = backend.empty(nn::Shape{o.batch, 1, 1, 1}, nn::Layout::nchw, nn::DType::i32);
    metrics_ = backend.empty(nn::Shape{2, 1, 1, 1}, nn::Layout::nchw);
    backend.retain_freed_memory();
  }

  ~CudaStepGraph() override {
    // A replay may still run: let it finish before its executable graph is destroyed.
    NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream_));
  }

  nn::Tensor const& run(DeviceBatch const& batch) override {
    {
      nsk::ScopedRange const range{"graph inputs"};
      copy_in(batch.images, images_, "images");
      copy_in(batch.labels, labels_, "labels");
    }
    if (runs_ == 0) {
      body_(images_, labels_, metrics_);
    } else {
      if (!graph_.valid()) record();
      graph_.launch(nsk::StreamView{stream_});
    }
    ++runs_;
    return metrics_;
  }

  [[nodiscard]] std::uint64_t replays() const noexcept override { return graph_.replays(); }

  [[nodiscard]] std::string describe() const override {
    if (!graph_.valid()) return "graph '" + name_ + "': not recorded yet";
    return "graph '" + name_ + "': the run's first step eager, its second recorded; " +
           std::to_string(graph_.replays()) + " replays, instantiated " +
           std::to_string(graph_.instantiations()) + "x, updated in place " +
           std::to_string(graph_.updates()) + "x";
  }

 private:
  void copy_in(nn::Tensor const& from, nn::Tensor& to, char const* what) {
    if (from.raw() == to.raw()) return;
    if (from.bytes() != to.bytes() || from.dtype() != to.dtype() || from.layout() != to.layout()) {
      throw std::invalid_argument("CUDA graph '" + name_ + "': the batch's " + what + " " +
                                  from.describe() + " do not match the graph's static " + what +
                                  " " + to.describe());
    }
    NSIGHTKIT_CUDA_CHECK(
        cudaMemcpyAsync(to.raw(), from.raw(), from.bytes(), cudaMemcpyDeviceToDevice, stream_));
  }

  /// Records one step on the static tensors into graph_. A failed recording becomes one
  /// std::runtime_error: nsightkit's message (every unsafe call and its module), and what the
  /// step itself threw.
  void record() {
    nsk::GraphOptions options;
    // Thread-local: the loader's workers keep allocating page-locked blocks (and the pool keeps
    // querying its events) while this thread records; only this thread's calls can break it.
    options.mode = nsk::GraphRecordMode::thread;
    options.check = nsk::GraphCheck::strict;
    std::string inside;
    {
      nsk::GraphRecorder recorder{nsk::StreamView{stream_}, name_, options};
      try {
        body_(images_, labels_, metrics_);
      } catch (std::exception const& x) {
        inside = x.what();
      } catch (...) {
        inside = "an exception that is not a std::exception";
      }
      try {
        recorder.end(graph_);
      } catch (nsk::GraphRecordError const& x) {
        throw std::runtime_error(
            std::string{x.what()} +
            (inside.empty() ? std::string{} : "\n  the training step stopped with: " + inside));
      }
    }
    if (!inside.empty()) {
      throw std::runtime_error("recording of graph '" + name_ +
                               "': the training step failed during recording: " + inside);
    }
    if (!graph_.valid()) throw std::runtime_error("recording of graph '" + name_ + "': no graph");
  }

  cudaStream_t stream_;
  StepBody body_;
  std::string name_;
  nn::Tensor images_, labels_, metrics_;
  std::uint64_t runs_{0};
  nsk::RecordedGraph graph_;  // last: destroyed first (after the destructor's wait)
};

class CudaRuntime final : public Runtime {
  using Prefetcher = nsk::StreamPrefetcher<HostBatch, DeviceBatch>;
  static constexpr int kRing = 4;

 public:
  explicit CudaRuntime(RuntimeOptions const& o) : options_{o} {
    nn::CudaBackendOptions bo;
    bo.device = o.device;
    bo.tf32 = o.tf32;
    bo.benchmark = o.cudnn_benchmark;
    backend_ = nn::make_cuda_backend(bo);
    compute_ = static_cast<cudaStream_t>(backend_->stream_handle());
    nsk::name_stream(compute_, (o.name_prefix + "compute").c_str());
    if (o.pinned) {
      allocator_ = std::make_unique<PinnedAllocator>();
    } else {
      allocator_ = make_pageable_allocator();
    }
    // A small buffer allocated once: straight from cudaHostAlloc (no pool needed).
    void* ring = nullptr;
    NSIGHTKIT_CUDA_CHECK(cudaHostAlloc(&ring, kRing * 2 * sizeof(float), cudaHostAllocDefault));
    ring_.reset(static_cast<float*>(ring));
    for (auto& e : events_)
      NSIGHTKIT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    NSIGHTKIT_CUDA_CHECK(cudaEventCreateWithFlags(&finished_, cudaEventDisableTiming));
    ring_step_.fill(-1);
    if (!o.prefetch) batch_ = make_slot();
  }

  ~CudaRuntime() override {
    prefetcher_.reset();  // waits for its copies and for the compute work on its slots
    NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(compute_));
    for (auto& e : events_)
      if (e != nullptr) NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaEventDestroy(e));
    if (finished_ != nullptr) NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaEventDestroy(finished_));
  }

  [[nodiscard]] nn::Backend& backend() noexcept override { return *backend_; }
  [[nodiscard]] HostAllocator& host_allocator() noexcept override { return *allocator_; }

  [[nodiscard]] std::string describe() const override {
    std::string s = options_.pinned ? "page-locked host memory (nsightkit::PinnedMemoryPool)"
                                    : "pageable host memory";
    s += options_.prefetch
             ? ", nsightkit::StreamPrefetcher (depth 2) copies the next batch on a copy stream"
             : ", copies on the compute stream";
    return s;
  }

  void set_source(std::function<HostBatch()> fetch) override {
    // Another source after finish(): a new run starts with a new prefetcher (it is single-pass);
    // the old one waits for its copies and the compute work on its slots as it goes.
    it_.reset();
    prefetcher_.reset();
    pending_.clear();
    fetch_ = std::move(fetch);
    if (!options_.prefetch) return;
    nsk::PrefetchOptions po;
    po.depth = kDepth;
    // The source hands over batches the step already fetched in its "data" range (so "data" is
    // a top-level range of the step, as without prefetching); the transfer queues the copies.
    prefetcher_ = std::make_unique<Prefetcher>(
        [this]() -> std::optional<HostBatch> {
          if (pending_.empty()) return fetch_();
          HostBatch b = std::move(pending_.front());
          pending_.pop_front();
          return b;
        },
        [](HostBatch& h, DeviceBatch& d, nsk::PrefetchCopier& copy) {
          copy.to_device(d.images.raw(), h.images, h.image_bytes);
          copy.to_device(d.labels.raw(), h.labels, h.label_bytes);
        },
        [this](std::size_t) { return make_slot(); }, nsk::StreamView{compute_}, po);
  }

  DeviceBatch next_batch() override {
    if (!options_.prefetch) {
      HostBatch host = fetch_();  // "data"
      nsk::ScopedRange const range{"h2d"};
      // From pageable memory the driver stages the copy and returns once the buffer is read, after
      // the stream's earlier work; from page-locked memory it is asynchronous, and the block goes
      // back to the pool only after the copy (used_on).
      NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(batch_.images.raw(), host.images, host.image_bytes,
                                           cudaMemcpyHostToDevice, compute_));
      NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(batch_.labels.raw(), host.labels, host.label_bytes,
                                           cudaMemcpyHostToDevice, compute_));
      host.memory->used_on(compute_);
      return batch_;
    }
    // "data": the batch the prefetcher will copy next (at the first step, the first kDepth).
    std::size_t const wanted = it_ ? 1 : kDepth;
    for (std::size_t k = 0; k < wanted; ++k) pending_.push_back(fetch_());
    nsk::ScopedRange const range{"h2d"};  // queue that copy; the compute stream waits for ours
    if (!it_) {
      it_ = prefetcher_->begin();
    } else {
      ++*it_;
    }
    return (**it_).device();
  }

  void end_step(std::int64_t step, nn::Tensor const& metrics) override {
    auto const r = static_cast<std::size_t>(step % kRing);
    if (ring_step_[r] != -1) {
      throw std::logic_error("end_step: metrics of step " + std::to_string(ring_step_[r]) +
                             " were never read");
    }
    NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(ring_.get() + 2 * r, metrics.raw(), 2 * sizeof(float),
                                         cudaMemcpyDeviceToHost, compute_));
    NSIGHTKIT_CUDA_CHECK(cudaEventRecord(events_[r], compute_));
    ring_step_[r] = step;
  }

  StepMetrics wait_step(std::int64_t step) override {
    auto const r = static_cast<std::size_t>(step % kRing);
    if (ring_step_[r] != step) {
      throw std::logic_error("wait_step: step " + std::to_string(step) + " not ended");
    }
    wait_event(events_[r]);
    ring_step_[r] = -1;
    float const* v = ring_.get() + 2 * r;
    return StepMetrics{static_cast<double>(v[0]), static_cast<double>(v[1])};
  }

  void in_step(std::function<void()> const& body) override {
    nsk::CurrentStream const timed{nsk::StreamView{compute_}};  // the report's GPU times
    body();
  }

  void finish() override {
    NSIGHTKIT_CUDA_CHECK(cudaEventRecord(finished_, compute_));
    wait_event(finished_);
  }

  void set_watchdog(std::function<void(double)> watchdog) override {
    watchdog_ = std::move(watchdog);
  }

  std::unique_ptr<StepGraph> make_step_graph(StepBody body, std::string const& name) override {
    return std::make_unique<CudaStepGraph>(*backend_, compute_, options_, std::move(body), name);
  }

 private:
  /// Blocks until `e` has completed; with a watchdog, polls and lets it give up.
  void wait_event(cudaEvent_t e) {
    if (!watchdog_) {
      NSIGHTKIT_CUDA_CHECK(cudaEventSynchronize(e));
      return;
    }
    auto const t0 = std::chrono::steady_clock::now();
    for (;;) {
      cudaError_t const r = cudaEventQuery(e);
      if (r == cudaSuccess) return;
      if (r != cudaErrorNotReady) {  // an error: reported with a readable call
        NSIGHTKIT_CUDA_CHECK(cudaEventSynchronize(e));
        return;
      }
      watchdog_(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  static constexpr std::size_t kDepth = 2;

  DeviceBatch make_slot() {
    DeviceBatch d;
    d.images = backend_->empty(
        nn::Shape{options_.batch, options_.channels, options_.image_size, options_.image_size},
        options_.layout);
    d.labels =
        backend_->empty(nn::Shape{options_.batch, 1, 1, 1}, nn::Layout::nchw, nn::DType::i32);
    return d;
  }

  // Declaration order is destruction order reversed: batches and the prefetcher die before the
  // pools their memory came from, and everything before the backend (its stream).
  RuntimeOptions options_;
  std::unique_ptr<nn::Backend> backend_;
  cudaStream_t compute_{};
  std::unique_ptr<HostAllocator> allocator_;
  struct FreeHost {
    void operator()(float* p) const noexcept { NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaFreeHost(p)); }
  };
  std::unique_ptr<float, FreeHost> ring_;  // page-locked: step metrics copied back
  std::array<cudaEvent_t, kRing> events_{};
  std::array<std::int64_t, kRing> ring_step_{};
  cudaEvent_t finished_{nullptr};
  std::function<void(double)> watchdog_;
  std::function<HostBatch()> fetch_;
  DeviceBatch batch_;
  std::deque<HostBatch> pending_;
  std::unique_ptr<Prefetcher> prefetcher_;
  std::optional<Prefetcher::iterator> it_;
};

}  // namespace

std::unique_ptr<Runtime> make_cuda_runtime(RuntimeOptions const& options) {
  return std::make_unique<CudaRuntime>(options);
}

}  // namespace resnet
