// The stream prefetcher on a real device. Every batch carries a pattern derived from its index; a
// kernel on the compute stream checks the slot holds exactly that batch, spins (long kernels:
// the copies of later batches run meanwhile), checks again with uncached loads (a copy into the
// slot during the kernel would show) and checks that batches arrive in order — counting every
// mismatch in device counters the test reads at the end. The source sleeps a random time per
// batch. Depths 1-4; pageable sources (staged through the pool), page-locked sources (copied
// directly, freed into a pool without a stream as soon as the prefetcher lets go of them),
// forced staging, no staging, work of the transfer on the copy stream; early break;
// exceptions from the source and the transfer; NVTX ranges and stream names.
#include "support.hpp"

#include <nsightkit/pinned.hpp>
#include <nsightkit/prefetch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using nsightkit::PinnedAllocator;
using nsightkit::PinnedMemoryPool;
using nsightkit::PrefetchCopier;
using nsightkit::PrefetchOptions;
using nsightkit::PrefetchStaging;
using nsightkit::StreamPrefetcher;
using nsightkit::StreamView;
using nsightkit::testing::EventKind;
using nsightkit::testing::Recorder;

namespace {

constexpr std::size_t KiB = std::size_t{1} << 10;

class Stream {
 public:
  Stream() { NSIGHTKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaStreamDestroy(s_)); }
  Stream(Stream const&) = delete;
  Stream& operator=(Stream const&) = delete;
  [[nodiscard]] cudaStream_t get() const noexcept { return s_; }
  [[nodiscard]] StreamView view() const noexcept { return StreamView{s_}; }
  [[nodiscard]] bool idle() const {
    cudaError_t const e = cudaStreamQuery(s_);
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    NSIGHTKIT_CUDA_CHECK(e);
    return true;
  }

 private:
  cudaStream_t s_{};
};

// A slot: one device buffer of words (move-only, freed with cudaFree).
class DeviceWords {
 public:
  explicit DeviceWords(std::size_t n) : n_{n} {
    NSIGHTKIT_CUDA_CHECK(cudaMalloc(&p_, n * sizeof(std::uint32_t)));
    // On the legacy default stream, not waited for here: the prefetcher orders its copy stream
    // after the default streams at construction, so this memset cannot land after a copy.
    NSIGHTKIT_CUDA_CHECK(cudaMemset(p_, 0xff, n * sizeof(std::uint32_t)));  // no batch has this
  }
  DeviceWords(DeviceWords&& o) noexcept : p_{std::exchange(o.p_, nullptr)}, n_{o.n_} {}
  DeviceWords& operator=(DeviceWords&&) = delete;
  DeviceWords(DeviceWords const&) = delete;
  DeviceWords& operator=(DeviceWords const&) = delete;
  ~DeviceWords() {
    if (p_ != nullptr) (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaFree(p_));
  }
  [[nodiscard]] std::uint32_t* get() const noexcept { return p_; }
  [[nodiscard]] std::size_t size() const noexcept { return n_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return n_ * sizeof(std::uint32_t); }

 private:
  std::uint32_t* p_{nullptr};
  std::size_t n_;
};

// Device counters: [0] words that did not match, [1] batches out of order, [2] kernels run,
// [3] the next batch index expected.
class Counters {
 public:
  Counters() {
    NSIGHTKIT_CUDA_CHECK(cudaMalloc(&p_, 4 * sizeof(unsigned long long)));
    NSIGHTKIT_CUDA_CHECK(cudaMemset(p_, 0, 4 * sizeof(unsigned long long)));
    NSIGHTKIT_CUDA_CHECK(cudaDeviceSynchronize());  // before kernels on non-blocking streams
  }
  ~Counters() { (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaFree(p_)); }
  Counters(Counters const&) = delete;
  Counters& operator=(Counters const&) = delete;
  [[nodiscard]] unsigned long long* get() const noexcept { return p_; }
  struct Values {
    unsigned long long mismatches, out_of_order, kernels, next;
  };
  [[nodiscard]] Values read() const {
    Values v{};
    NSIGHTKIT_CUDA_CHECK(cudaDeviceSynchronize());
    NSIGHTKIT_CUDA_CHECK(cudaMemcpy(&v, p_, sizeof v, cudaMemcpyDeviceToHost));
    return v;
  }

 private:
  unsigned long long* p_{nullptr};
};

__host__ __device__ std::uint32_t pattern(std::uint64_t batch, std::size_t i) {
  return static_cast<std::uint32_t>((batch + 1) * 0x9E3779B97F4A7C15ull >> 32) ^
         static_cast<std::uint32_t>(i * 2654435761u);
}

__device__ unsigned long long count_mismatches(std::uint32_t const* words, std::size_t n,
                                               std::uint64_t batch, std::uint32_t offset) {
  // Uncached, volatile loads: the second pass must see memory as it is then, not the first pass.
  volatile std::uint32_t const* w = words;
  unsigned long long bad = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    if (w[i] != pattern(batch, i) + offset) ++bad;
  }
  return bad;
}

// The consumer's kernel: the slot holds batch `batch`, before and after a long spin; batches
// arrive in order.
__global__ void verify(std::uint32_t const* words, std::size_t n, std::uint64_t batch,
                       std::uint32_t offset, long long cycles, unsigned long long* counters) {
  unsigned long long bad = count_mismatches(words, n, batch, offset);
  long long const start = clock64();
  while (clock64() - start < cycles) {
  }
  bad += count_mismatches(words, n, batch, offset);
  if (bad != 0) atomicAdd(&counters[0], bad);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    if (counters[3] != batch) atomicAdd(&counters[1], 1ull);
    counters[3] = batch + 1;
    atomicAdd(&counters[2], 1ull);
  }
}

// Work a transfer queues on the copy stream after its copy: adds 1 to every word.
__global__ void add_one(std::uint32_t* words, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    words[i] += 1u;
  }
}

long long cycles_for_us(double us) {
  int khz = 0;
  NSIGHTKIT_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  return static_cast<long long>(static_cast<double>(khz) * us / 1000.0);
}

template <class Vector>
void fill_pattern(Vector& v, std::uint64_t batch) {
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = pattern(batch, i);
}

struct PageableBatch {
  std::uint64_t index;
  std::vector<std::uint32_t> words;
};

struct PinnedBatch {
  std::uint64_t index;
  std::vector<std::uint32_t, PinnedAllocator<std::uint32_t>> words;
};

enum class Mode { pageable, pinned, always_staged, never_staged, transfer_kernel };

char const* mode_name(Mode m) {
  switch (m) {
    case Mode::pageable: return "pageable (staged)";
    case Mode::pinned: return "page-locked (direct)";
    case Mode::always_staged: return "page-locked, staging forced";
    case Mode::never_staged: return "pageable, staging off";
    case Mode::transfer_kernel: return "pageable + kernel on the copy stream";
  }
  return "?";
}

// Runs a whole epoch and checks it on the device. Returns the prefetcher's stats.
template <class Batch, class MakeWords>
nsightkit::PrefetchStats run_epoch(std::size_t depth, Mode mode, std::uint64_t batches,
                                   std::size_t words, MakeWords make_words,
                                   PinnedMemoryPool& staging) {
  Stream compute;
  Counters counters;
  std::mt19937 rng{static_cast<unsigned>(depth * 131 + static_cast<unsigned>(mode))};
  std::uniform_int_distribution<int> delay_us{0, 400};
  std::uniform_real_distribution<double> kernel_us{100.0, 1500.0};
  std::uint32_t const offset = mode == Mode::transfer_kernel ? 1u : 0u;

  PrefetchOptions options;
  options.depth = depth;
  options.staging_pool = &staging;
  if (mode == Mode::always_staged) options.staging = PrefetchStaging::always;
  if (mode == Mode::never_staged) options.staging = PrefetchStaging::never;

  std::uint64_t next = 0;
  std::vector<std::uint64_t> seen;
  nsightkit::PrefetchStats stats{};
  {
    StreamPrefetcher<Batch, DeviceWords> prefetcher{
        [&]() -> std::optional<Batch> {
          if (next == batches) return std::nullopt;
          std::this_thread::sleep_for(std::chrono::microseconds{delay_us(rng)});
          Batch b{next, make_words(words)};
          fill_pattern(b.words, next);
          ++next;
          return b;
        },
        [&](Batch& h, DeviceWords& d, PrefetchCopier& copy) {
          CHECK(copy.index() == h.index);
          copy.to_device(d.get(), h.words.data(), d.bytes());
          if (mode == Mode::transfer_kernel) {
            add_one<<<64, 256, 0, copy.stream().value()>>>(d.get(), d.size());
            NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
          }
          CHECK(copy.bytes() == d.bytes());
        },
        [&](std::size_t) { return DeviceWords{words}; }, compute.view(), options};
    for (auto& b : prefetcher) {
      seen.push_back(b.index());
      REQUIRE(b.host().index == b.index());
      verify<<<32, 256, 0, compute.get()>>>(b.device().get(), words, b.index(), offset,
                                            cycles_for_us(kernel_us(rng)), counters.get());
      NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
    }
    stats = prefetcher.stats();
  }
  CHECK(compute.idle());  // the destructor waited for the compute work on the last batches
  auto const v = counters.read();
  CHECK(v.mismatches == 0);
  CHECK(v.out_of_order == 0);
  CHECK(v.kernels == batches);
  std::vector<std::uint64_t> expected;
  for (std::uint64_t i = 0; i < batches; ++i) expected.push_back(i);
  CHECK(seen == expected);
  CHECK(stats.delivered == batches);
  CHECK(stats.bytes_copied == batches * words * sizeof(std::uint32_t));
  return stats;
}

}  // namespace

TEST_CASE(
    "every batch arrives intact and in order, depths 1-4, random source delays, long kernels") {
  std::size_t const words = 64 * KiB;  // 256 KiB per batch
  std::uint64_t const batches = 24;
  PinnedMemoryPool source_pool;  // page-locked host batches, freed without a stream
  for (std::size_t depth = 1; depth <= 4; ++depth) {
    for (Mode mode : {Mode::pageable, Mode::pinned, Mode::always_staged, Mode::never_staged,
                      Mode::transfer_kernel}) {
      INFO("depth " << depth << ", " << mode_name(mode));
      PinnedMemoryPool staging;
      nsightkit::PrefetchStats s{};
      if (mode == Mode::pinned || mode == Mode::always_staged) {
        s = run_epoch<PinnedBatch>(
            depth, mode, batches, words,
            [&](std::size_t n) {
              return std::vector<std::uint32_t, PinnedAllocator<std::uint32_t>>(
                  n, PinnedAllocator<std::uint32_t>{source_pool});
            },
            staging);
      } else {
        s = run_epoch<PageableBatch>(
            depth, mode, batches, words,
            [](std::size_t n) { return std::vector<std::uint32_t>(n); }, staging);
      }
      auto const pool = staging.stats();
      std::printf("depth %zu, %-40s host waits %llu, staging blocks %llu\n", depth, mode_name(mode),
                  static_cast<unsigned long long>(s.host_waits),
                  static_cast<unsigned long long>(pool.host_alloc_calls));
      bool const staged =
          mode == Mode::pageable || mode == Mode::always_staged || mode == Mode::transfer_kernel;
      CHECK(s.bytes_staged == (staged ? s.bytes_copied : 0));
      // Staging memory: at most one block per slot, then reused (how many of the first `depth`
      // batches found the previous block already copied depends on timing).
      CHECK(pool.host_alloc_calls <= depth);
      CHECK((pool.host_alloc_calls >= 1) == staged);
      CHECK(pool.blocks_in_use == 0);
    }
  }
}

TEST_CASE("an iterator range of page-locked batches, by reference: no copies, depth 2") {
  std::size_t const words = 16 * KiB;
  PinnedMemoryPool pool;
  std::vector<PinnedBatch> epoch;
  for (std::uint64_t i = 0; i < 12; ++i) {
    epoch.push_back(PinnedBatch{i, std::vector<std::uint32_t, PinnedAllocator<std::uint32_t>>(
                                       words, PinnedAllocator<std::uint32_t>{pool})});
    fill_pattern(epoch.back().words, i);
  }
  Stream compute;
  Counters counters;
  using Ref = std::reference_wrapper<PinnedBatch const>;
  std::uint64_t n = 0;
  {
    StreamPrefetcher<Ref, DeviceWords> prefetcher{
        epoch.cbegin(), epoch.cend(),
        [](Ref& h, DeviceWords& d, PrefetchCopier& copy) {
          copy.to_device(d.get(), h.get().words.data(), d.bytes());
        },
        [&](std::size_t) { return DeviceWords{words}; }, compute.view()};
    for (auto& b : prefetcher) {
      CHECK(&b.host().get() == &epoch[b.index()]);  // the element itself, not a copy
      verify<<<16, 256, 0, compute.get()>>>(b.device().get(), words, b.index(), 0u,
                                            cycles_for_us(200), counters.get());
      NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
      ++n;
    }
    CHECK(prefetcher.stats().bytes_staged == 0);
  }
  auto const v = counters.read();
  CHECK(n == 12);
  CHECK(v.mismatches == 0);
  CHECK(v.out_of_order == 0);
  CHECK(v.kernels == 12);
}

TEST_CASE("early break: destruction waits for the copies in flight and the held batch's kernel") {
  std::size_t const words = 64 * KiB;
  for (std::size_t depth = 1; depth <= 4; ++depth) {
    INFO("depth " << depth);
    Stream compute;
    Stream copy;
    Counters counters;
    PinnedMemoryPool staging;
    PrefetchOptions options;
    options.depth = depth;
    options.copy_stream = copy.view();
    options.staging_pool = &staging;
    std::uint64_t next = 0;
    {
      StreamPrefetcher<PageableBatch, DeviceWords> prefetcher{
          [&]() -> std::optional<PageableBatch> {
            PageableBatch b{next, std::vector<std::uint32_t>(words)};
            fill_pattern(b.words, next++);
            return b;  // endless
          },
          [](PageableBatch& h, DeviceWords& d, PrefetchCopier& c) {
            c.to_device(d.get(), h.words.data(), d.bytes());
          },
          [&](std::size_t) { return DeviceWords{words}; }, compute.view(), options};
      for (auto& b : prefetcher) {
        // 3 ms kernels: when the loop breaks, the GPU is far behind the host.
        verify<<<32, 256, 0, compute.get()>>>(b.device().get(), words, b.index(), 0u,
                                              cycles_for_us(3000), counters.get());
        NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
        if (b.index() == 6) break;
      }
    }
    // No work of the pipeline is left to write into (or read from) the freed slots.
    CHECK(copy.idle());
    CHECK(compute.idle());
    CHECK(next == 6 + depth);  // fetched up to batch 6 + depth - 1
    auto const v = counters.read();
    CHECK(v.mismatches == 0);
    CHECK(v.kernels == 7);
    CHECK(staging.stats().blocks_in_use == 0);
  }
}

TEST_CASE("an exception from the source or the transfer reaches the consumer at its batch") {
  std::size_t const words = 16 * KiB;
  for (std::size_t depth = 1; depth <= 4; ++depth) {
    for (bool in_transfer : {false, true}) {
      INFO("depth " << depth << (in_transfer ? ", transfer" : ", source") << " throws at batch 9");
      Stream compute;
      Counters counters;
      PrefetchOptions options;
      options.depth = depth;
      std::uint64_t next = 0;
      std::uint64_t delivered = 0;
      std::string message;
      {
        StreamPrefetcher<PageableBatch, DeviceWords> prefetcher{
            [&]() -> std::optional<PageableBatch> {
              if (!in_transfer && next == 9) throw std::runtime_error{"decode failed at 9"};
              PageableBatch b{next, std::vector<std::uint32_t>(words)};
              fill_pattern(b.words, next++);
              return b;
            },
            [&](PageableBatch& h, DeviceWords& d, PrefetchCopier& c) {
              c.to_device(d.get(), h.words.data(), d.bytes());  // queued, then the failure
              if (h.index == 9) throw std::runtime_error{"transfer failed at 9"};
            },
            [&](std::size_t) { return DeviceWords{words}; }, compute.view(), options};
        try {
          for (auto& b : prefetcher) {
            verify<<<16, 256, 0, compute.get()>>>(b.device().get(), words, b.index(), 0u,
                                                  cycles_for_us(500), counters.get());
            NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
            ++delivered;
          }
        } catch (std::runtime_error const& e) {
          message = e.what();
        }
      }
      CHECK(message == (in_transfer ? "transfer failed at 9" : "decode failed at 9"));
      CHECK(delivered == 9);
      CHECK(compute.idle());
      auto const v = counters.read();
      CHECK(v.mismatches == 0);
      CHECK(v.out_of_order == 0);
      CHECK(v.kernels == 9);
    }
  }
}

TEST_CASE("NVTX: ranges per batch and per copy on the consumer's thread, both streams named") {
  // The Recorder cannot attach when a tool (compute-sanitizer, nsys, ncu) injects into NVTX.
  if (std::getenv("NVTX_INJECTION64_PATH") != nullptr) {
    std::printf("NVTX check skipped: NVTX_INJECTION64_PATH is set (a tool is attached)\n");
    return;
  }
  Stream compute;
  std::size_t const words = 16 * KiB;  // 64 KiB
  // Two cached staging blocks: no cudaHostAlloc (and its range) during the run.
  PinnedMemoryPool staging;
  void* warm0 = staging.allocate(64 * KiB);
  void* warm1 = staging.allocate(64 * KiB);
  staging.deallocate(warm0, 64 * KiB);
  staging.deallocate(warm1, 64 * KiB);
  PrefetchOptions options;
  options.staging_pool = &staging;
  Recorder rec;
  std::uint64_t next = 0;
  cudaStream_t copy_handle{};
  {
    StreamPrefetcher<PageableBatch, DeviceWords> prefetcher{
        [&]() -> std::optional<PageableBatch> {
          if (next == 2) return std::nullopt;
          PageableBatch b{next, std::vector<std::uint32_t>(words)};
          fill_pattern(b.words, next++);
          return b;
        },
        [](PageableBatch& h, DeviceWords& d, PrefetchCopier& c) {
          c.to_device(d.get(), h.words.data(), d.bytes());
        },
        [&](std::size_t) { return DeviceWords{words}; }, compute.view(), options};
    copy_handle = prefetcher.copy_stream().value();
    for (auto& b : prefetcher) (void)b;
    std::vector<std::string> const batch{
        "push nsightkit prefetch source",   "pop nsightkit", "push nsightkit prefetch copy",
        "push nsightkit H2D staged 64 KiB", "pop nsightkit", "pop nsightkit"};
    std::vector<std::string> expected = batch;
    expected.insert(expected.end(), batch.begin(), batch.end());
    expected.push_back("push nsightkit prefetch source");
    expected.push_back("pop nsightkit");
    CHECK(rec.lines() == nsk_test::expect(expected));
    for (auto const& e : rec.range_events()) {
      if (e.message == "H2D staged 64 KiB") CHECK(e.payload.u == 64 * KiB);
    }
  }
  bool copy_named = false;
  bool compute_named = false;
  for (auto const& e : rec.events()) {
    if (e.kind != EventKind::name_cuda_stream) continue;
    if (e.message == "prefetch copy" && e.object == reinterpret_cast<std::uintptr_t>(copy_handle))
      copy_named = true;
    if (e.message == "compute" && e.object == reinterpret_cast<std::uintptr_t>(compute.get()))
      compute_named = true;
  }
  CHECK(copy_named == nsightkit::enabled);
  CHECK(compute_named == nsightkit::enabled);
}
