// The input pipeline: a synthetic but learnable image dataset generated in process, and a loader
// whose worker threads "decode and augment" batches into host memory (pageable, or page-locked
// from nsightkit's PinnedMemoryPool in the CUDA runtime), like a PyTorch DataLoader with
// num_workers and pin_memory.
//
// The dataset: class k has a colour (3 random means) and a sinusoidal grating of frequency
// 1 + k % 4 cycles per image, vertical or horizontal by (k / 4) % 2, at a random phase, plus
// noise. Neither cue alone separates all classes, both together do. Augmentation: random
// horizontal flip (gratings stay gratings) and brightness jitter. Every sample depends only on
// (rng_start, sample index): the data is the same for any worker count, layout and device.
#pragma once

#include "common/tensor.hpp"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace resnet {

struct DataSpec {
  int image_size{32};
  int channels{3};
  int classes{10};
  nn::Layout layout{nn::Layout::nchw};
  std::uint64_t rng_start{1};
  double noise{0.7};  ///< amplitude of the per-pixel noise (the grating's amplitude is 1)
  int decode_us{0};   ///< minimum CPU time per image ("decoding"), busy-waited
};

/// Writes sample `index`: the image (channels x size x size, in `spec.layout` order) into
/// `image` and returns its label.
std::int32_t synthesize(DataSpec const& spec, std::uint64_t index, float* image);

/// Host memory one batch lives in (type-erased: pageable or page-locked).
class HostBuffer {
 public:
  virtual ~HostBuffer() = default;
  [[nodiscard]] virtual void* data() noexcept = 0;
  [[nodiscard]] virtual std::size_t size() const noexcept = 0;
  /// Says that queued GPU work on `stream` (a cudaStream_t) reads this memory: page-locked
  /// memory then returns to its pool only after that work (PinnedBlock::record_stream).
  virtual void used_on(void* stream) { (void)stream; }
};

/// Makes HostBuffers; thread-safe (worker threads allocate concurrently).
class HostAllocator {
 public:
  virtual ~HostAllocator() = default;
  [[nodiscard]] virtual std::unique_ptr<HostBuffer> allocate(std::size_t bytes) = 0;
  [[nodiscard]] virtual char const* name() const noexcept = 0;
};

/// Ordinary (pageable) memory, recycled through a free list so that steady state allocates
/// nothing (a fresh malloc of a large batch would also pay for page faults every time).
std::unique_ptr<HostAllocator> make_pageable_allocator();

/// One batch in host memory: images [n, channels, size, size] in the layout, then n int32 labels.
struct HostBatch {
  std::int64_t index{-1};
  int size{0};  ///< images in the batch
  float* images{nullptr};
  std::int32_t* labels{nullptr};
  std::size_t image_bytes{0}, label_bytes{0};
  std::unique_ptr<HostBuffer> memory;
};

struct LoaderOptions {
  int batch{32};
  int workers{0};          ///< 0: batches are made on the caller's thread, inside next()
  int prefetch_factor{2};  ///< batches each worker may have ready (PyTorch's default: 2)
  int shard{0};            ///< data-parallel: this rank's slice of each global batch …
  int shards{1};           ///< … of this many (the world size)
};

/**
 * Produces batches 0, 1, 2, … in order. With W workers, worker w makes batches w, w+W, … into
 * its own bounded queue (as PyTorch's DataLoader does), so batches arrive in order and a slow
 * batch delays only its own turn. Each batch is an NVTX range "load" on the thread that makes
 * it (workers are named "loader worker N"). An exception in a worker (out of page-locked
 * memory, say) is rethrown by the next() that would return its batch.
 */
class Loader {
 public:
  Loader(DataSpec const& data, LoaderOptions const& options, HostAllocator& allocator);
  ~Loader();
  Loader(Loader const&) = delete;
  Loader& operator=(Loader const&) = delete;

  /// The next batch (waits for its worker).
  HostBatch next();

  [[nodiscard]] DataSpec const& data() const noexcept { return data_; }
  [[nodiscard]] LoaderOptions const& options() const noexcept { return options_; }
  [[nodiscard]] std::size_t image_bytes() const noexcept;

 private:
  struct Queue {
    std::deque<HostBatch> ready;
    std::exception_ptr error;
  };
  HostBatch produce(std::int64_t index);
  void worker_main(int w);

  DataSpec data_;
  LoaderOptions options_;
  HostAllocator* allocator_;
  std::int64_t next_index_{0};
  std::mutex mutex_;
  std::condition_variable ready_cv_, space_cv_;
  std::vector<std::unique_ptr<Queue>> queues_;
  bool stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace resnet
