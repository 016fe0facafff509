#include "data.hpp"

#include "common/rng.hpp"

#include <nsightkit/range.hpp>

#include <chrono>
#include <cmath>
#include <new>
#include <stdexcept>
#include <utility>

namespace resnet {
namespace nsk = nsightkit;

std::int32_t synthesize(DataSpec const& spec, std::uint64_t index, float* image) {
  auto const start = std::chrono::steady_clock::now();
  int const size = spec.image_size, channels = spec.channels;
  nn::Rng rng{nn::mix64(spec.rng_start * 0x9E3779B97F4A7C15ull ^ nn::mix64(index))};
  auto const label = static_cast<std::int32_t>(rng.below(static_cast<std::uint32_t>(spec.classes)));

  // The class's colour: fixed per (rng_start, class).
  nn::Rng colour_rng{nn::mix64(spec.rng_start + 0xC0101234ull) ^ static_cast<std::uint64_t>(label)};
  float colour[8] = {};
  for (int c = 0; c < channels && c < 8; ++c) {
    colour[c] = static_cast<float>(0.8 * (2.0 * colour_rng.uniform() - 1.0));
  }

  // The class's grating at a random phase, along x (vertical stripes) or y.
  int const freq = 1 + label % 4;
  bool const along_x = (label / 4) % 2 == 0;
  double const phase = 6.283185307179586 * rng.uniform();
  bool const flip = rng.below(2) == 1;
  auto const brightness = static_cast<float>(0.4 * (rng.uniform() - 0.5));
  auto const noise = static_cast<float>(spec.noise);
  std::vector<float> wave(static_cast<std::size_t>(size));
  for (int t = 0; t < size; ++t) {
    wave[static_cast<std::size_t>(t)] =
        static_cast<float>(std::sin(6.283185307179586 * freq * (t + 0.5) / size + phase));
  }

  auto const s = static_cast<std::size_t>(size);
  auto const cn = static_cast<std::size_t>(channels);
  std::uint64_t bits = 0;
  int left = 0;
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      int const xs = flip ? size - 1 - x : x;  // augmentation: horizontal flip
      float const g = wave[static_cast<std::size_t>(along_x ? xs : y)];
      for (int c = 0; c < channels; ++c) {
        if (left == 0) {
          bits = rng.next();
          left = 4;
        }
        // 16 random bits per value: uniform noise in [-noise, noise).
        float const u = static_cast<float>(bits & 0xFFFFu) * (1.0f / 32768.0f) - 1.0f;
        bits >>= 16;
        --left;
        float const v = colour[c % 8] + g + brightness + noise * u;
        auto const yy = static_cast<std::size_t>(y), xx = static_cast<std::size_t>(x),
                   cc = static_cast<std::size_t>(c);
        std::size_t const at =
            spec.layout == nn::Layout::nchw ? (cc * s + yy) * s + xx : (yy * s + xx) * cn + cc;
        image[at] = v;
      }
    }
  }

  // "Decoding" cost: the image takes at least decode_us of this thread's time.
  if (spec.decode_us > 0) {
    auto const until = start + std::chrono::microseconds(spec.decode_us);
    while (std::chrono::steady_clock::now() < until) {
    }
  }
  return label;
}

namespace {

class PageableAllocator final : public HostAllocator {
  struct FreeList {
    std::mutex mutex;
    std::vector<std::pair<std::size_t, void*>> blocks;
    ~FreeList() {
      for (auto& b : blocks) ::operator delete (b.second, std::align_val_t{64});
    }
  };

  class Buffer final : public HostBuffer {
   public:
    Buffer(std::shared_ptr<FreeList> list, void* p, std::size_t n)
        : list_{std::move(list)}, p_{p}, n_{n} {}
    ~Buffer() override {
      std::lock_guard<std::mutex> lock{list_->mutex};
      list_->blocks.emplace_back(n_, p_);
    }
    Buffer(Buffer const&) = delete;
    Buffer& operator=(Buffer const&) = delete;
    [[nodiscard]] void* data() noexcept override { return p_; }
    [[nodiscard]] std::size_t size() const noexcept override { return n_; }

   private:
    std::shared_ptr<FreeList> list_;
    void* p_;
    std::size_t n_;
  };

 public:
  [[nodiscard]] std::unique_ptr<HostBuffer> allocate(std::size_t bytes) override {
    {
      std::lock_guard<std::mutex> lock{list_->mutex};
      for (auto it = list_->blocks.begin(); it != list_->blocks.end(); ++it) {
        if (it->first == bytes) {
          void* p = it->second;
          list_->blocks.erase(it);
          return std::make_unique<Buffer>(list_, p, bytes);
        }
      }
    }
    void* p = ::operator new (bytes, std::align_val_t{64});
    return std::make_unique<Buffer>(list_, p, bytes);
  }
  [[nodiscard]] char const* name() const noexcept override { return "pageable"; }

 private:
  std::shared_ptr<FreeList> list_ = std::make_shared<FreeList>();
};

}  // namespace

std::unique_ptr<HostAllocator> make_pageable_allocator() {
  return std::make_unique<PageableAllocator>();
}

Loader::Loader(DataSpec const& data, LoaderOptions const& options, HostAllocator& allocator)
    : data_{data}, options_{options}, allocator_{&allocator} {
  if (options.batch < 1) throw std::invalid_argument("loader: batch must be >= 1");
  if (options.workers < 0) throw std::invalid_argument("loader: workers must be >= 0");
  if (options.prefetch_factor < 1)
    throw std::invalid_argument("loader: prefetch factor must be >= 1");
  if (options.shards < 1 || options.shard < 0 || options.shard >= options.shards) {
    throw std::invalid_argument("loader: shard " + std::to_string(options.shard) + " of " +
                                std::to_string(options.shards) + " is not a valid slice");
  }
  if (data.channels < 1 || data.classes < 2 || data.image_size < 1) {
    throw std::invalid_argument("loader: bad data spec");
  }
  for (int w = 0; w < options.workers; ++w) queues_.push_back(std::make_unique<Queue>());
  threads_.reserve(static_cast<std::size_t>(options.workers));
  for (int w = 0; w < options.workers; ++w) threads_.emplace_back([this, w] { worker_main(w); });
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock{mutex_};
    stop_ = true;
  }
  space_cv_.notify_all();
  ready_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

std::size_t Loader::image_bytes() const noexcept {
  return static_cast<std::size_t>(options_.batch) * static_cast<std::size_t>(data_.channels) *
         static_cast<std::size_t>(data_.image_size) * static_cast<std::size_t>(data_.image_size) *
         sizeof(float);
}

HostBatch Loader::produce(std::int64_t index) {
  nsk::ScopedRange const range{nsk::Attributes{nsk::Payload{index}}, "load"};
  HostBatch b;
  b.index = index;
  b.size = options_.batch;
  b.image_bytes = image_bytes();
  b.label_bytes = static_cast<std::size_t>(options_.batch) * sizeof(std::int32_t);
  b.memory = allocator_->allocate(b.image_bytes + b.label_bytes);
  auto* base = static_cast<unsigned char*>(b.memory->data());
  b.images = reinterpret_cast<float*>(base);
  b.labels = reinterpret_cast<std::int32_t*>(base + b.image_bytes);
  std::size_t const per_image =
      b.image_bytes / static_cast<std::size_t>(options_.batch) / sizeof(float);
  // Data-parallel: batch `index` of this rank is slice `shard` of global batch `index`, so the
  // ranks together see exactly what one process with `shards` times the batch sees.
  auto const first =
      (static_cast<std::uint64_t>(index) * static_cast<std::uint64_t>(options_.shards) +
       static_cast<std::uint64_t>(options_.shard)) *
      static_cast<std::uint64_t>(options_.batch);
  for (int j = 0; j < options_.batch; ++j) {
    auto const ju = static_cast<std::size_t>(j);
    b.labels[ju] = synthesize(data_, first + ju, b.images + ju * per_image);
  }
  return b;
}

void Loader::worker_main(int w) {
  // Named with the rank in data-parallel runs: each rank's threads are told apart in a timeline.
  nsk::name_current_thread(
      (options_.shards > 1 ? "rank " + std::to_string(options_.shard) + " " : "") +
      "loader worker " + std::to_string(w));
  auto& queue = *queues_[static_cast<std::size_t>(w)];
  for (std::int64_t index = w;; index += options_.workers) {
    {
      std::unique_lock<std::mutex> lock{mutex_};
      space_cv_.wait(lock, [&] {
        return stop_ || queue.ready.size() < static_cast<std::size_t>(options_.prefetch_factor);
      });
      if (stop_) return;
    }
    HostBatch b;
    std::exception_ptr error;
    try {
      b = produce(index);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock{mutex_};
      if (error) {
        queue.error = error;
      } else {
        queue.ready.push_back(std::move(b));
      }
    }
    ready_cv_.notify_all();
    if (error) return;
  }
}

HostBatch Loader::next() {
  std::int64_t const index = next_index_++;
  if (options_.workers == 0) return produce(index);
  auto& queue = *queues_[static_cast<std::size_t>(index % options_.workers)];
  std::unique_lock<std::mutex> lock{mutex_};
  ready_cv_.wait(lock, [&] { return !queue.ready.empty() || queue.error; });
  if (queue.ready.empty()) std::rethrow_exception(queue.error);
  HostBatch b = std::move(queue.ready.front());
  queue.ready.pop_front();
  lock.unlock();
  space_cv_.notify_all();
  return b;
}

}  // namespace resnet
