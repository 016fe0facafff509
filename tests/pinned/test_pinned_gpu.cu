// Pinned memory on a real device: containers in page-locked memory, stream-ordered reuse proven
// with data a premature reuse would corrupt, many threads with balanced statistics, release.
#include "support.hpp"

#include <nsightkit/pinned.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory_resource>
#include <random>
#include <string>
#include <thread>
#include <vector>

using nsightkit::PinnedAllocator;
using nsightkit::PinnedMemoryPool;
using nsightkit::PinnedMemoryResource;
using nsightkit::StreamView;
using nsightkit::testing::Recorder;

namespace {

constexpr std::size_t KiB = std::size_t{1} << 10;
constexpr std::size_t MiB = std::size_t{1} << 20;

class Stream {
 public:
  Stream() { NSIGHTKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaStreamDestroy(s_)); }
  Stream(Stream const&) = delete;
  Stream& operator=(Stream const&) = delete;
  [[nodiscard]] cudaStream_t get() const noexcept { return s_; }
  [[nodiscard]] StreamView view() const noexcept { return StreamView{s_}; }
  void sync() const { NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_{};
};

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_{bytes} {
    NSIGHTKIT_CUDA_CHECK(cudaMalloc(&p_, bytes));
  }
  ~DeviceBuffer() { (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaFree(p_)); }
  DeviceBuffer(DeviceBuffer const&) = delete;
  DeviceBuffer& operator=(DeviceBuffer const&) = delete;
  template <class T = void>
  [[nodiscard]] T* get() const noexcept {
    return static_cast<T*>(p_);
  }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

 private:
  void* p_{nullptr};
  std::size_t bytes_;
};

// Keeps the stream busy for about `cycles` SM clock cycles: everything queued behind it waits.
__global__ void spin(long long cycles) {
  long long const start = clock64();
  while (clock64() - start < cycles) {
  }
}

// Sums n words into *out (wrapping), to check on the host what a copy delivered.
__global__ void sum_words(std::uint32_t const* words, std::size_t n, unsigned long long* out) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    local += words[i];
  }
  atomicAdd(out, local);
}

long long cycles_for_ms(double ms) {
  int khz = 0;
  NSIGHTKIT_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  return static_cast<long long>(static_cast<double>(khz) * ms);
}

bool is_page_locked(void const* p) {
  cudaPointerAttributes a{};
  NSIGHTKIT_CUDA_CHECK(cudaPointerGetAttributes(&a, p));
  return a.type == cudaMemoryTypeHost;
}

std::uint32_t pattern(std::size_t i, std::uint32_t key) {
  return static_cast<std::uint32_t>(i * 2654435761u) ^ key;
}

std::vector<std::string>& misuse_messages() {
  static std::vector<std::string> messages;
  return messages;
}
void record_misuse(char const* message) { misuse_messages().emplace_back(message); }

}  // namespace

TEST_CASE("std::vector with PinnedAllocator holds page-locked memory, direct and on a pool") {
  Stream s;
  std::size_t const n = std::size_t{1} << 20;
  DeviceBuffer d{n * sizeof(float)};

  std::vector<float, PinnedAllocator<float>> direct(n, 1.5f);
  CHECK(is_page_locked(direct.data()));
  NSIGHTKIT_CUDA_CHECK(
      cudaMemcpyAsync(d.get(), direct.data(), n * sizeof(float), cudaMemcpyHostToDevice, s.get()));
  std::vector<float, PinnedAllocator<float>> back(n, 0.f);
  NSIGHTKIT_CUDA_CHECK(
      cudaMemcpyAsync(back.data(), d.get(), n * sizeof(float), cudaMemcpyDeviceToHost, s.get()));
  s.sync();
  CHECK(back == direct);

  PinnedMemoryPool pool;
  {
    using Vec = std::vector<float, PinnedAllocator<float>>;
    Vec grown{PinnedAllocator<float>{pool, s.view()}};
    for (std::size_t i = 0; i < n; ++i) grown.push_back(static_cast<float>(i));
    CHECK(is_page_locked(grown.data()));
    NSIGHTKIT_CUDA_CHECK(
        cudaMemcpyAsync(d.get(), grown.data(), n * sizeof(float), cudaMemcpyHostToDevice, s.get()));
    Vec copy{n, 0.f, PinnedAllocator<float>{pool}};
    NSIGHTKIT_CUDA_CHECK(
        cudaMemcpyAsync(copy.data(), d.get(), n * sizeof(float), cudaMemcpyDeviceToHost, s.get()));
    s.sync();
    CHECK(copy == grown);
    auto const st = pool.stats();
    CHECK(st.allocations > 2);  // the growth went through the pool
    CHECK(st.blocks_in_use == 2);
    // Move assignment between vectors of one pool is O(1): the buffer moves.
    float const* data = grown.data();
    copy = std::move(grown);
    CHECK(copy.data() == data);
  }
  s.sync();
  auto const st = pool.stats();
  CHECK(st.bytes_in_use == 0);
  CHECK(st.deallocations == st.allocations);
  CHECK(st.allocations == st.cache_hits + st.host_alloc_calls);
}

TEST_CASE("std::pmr::vector on PinnedMemoryResource and on PinnedMemoryPool") {
  PinnedMemoryResource resource;
  std::pmr::vector<int> a{&resource};
  a.resize(100000, 7);
  CHECK(is_page_locked(a.data()));
  CHECK(reinterpret_cast<std::uintptr_t>(a.data()) % 256 == 0);

  PinnedMemoryPool pool;
  {
    std::pmr::vector<int> b{&pool};
    b.assign(a.begin(), a.end());
    CHECK(is_page_locked(b.data()));
    CHECK(b == a);
    CHECK(pool.stats().blocks_in_use == 1);
  }
  CHECK(pool.stats().bytes_in_use == 0);
  CHECK(pool.stats().blocks_cached == 1);
}

TEST_CASE("stream-ordered reuse: a block freed behind a long kernel is not overwritten early") {
  // A ~50 ms kernel holds the stream; the copy from the block queued behind it cannot start
  // before. The block is freed to the pool naming that stream, then the same size is allocated
  // at once and overwritten. If the pool handed the block out before the copy ran, the device
  // would receive the overwrite instead of the original pattern.
  std::size_t const bytes = 16 * MiB;
  std::size_t const words = bytes / sizeof(std::uint32_t);
  std::uint32_t const key = 0x5A5A1234u;
  PinnedMemoryPool pool;
  Stream s;
  DeviceBuffer d{bytes};
  long long const cycles = cycles_for_ms(50.0);

  auto* block = static_cast<std::uint32_t*>(pool.allocate(bytes));
  for (std::size_t i = 0; i < words; ++i) block[i] = pattern(i, key);
  spin<<<1, 1, 0, s.get()>>>(cycles);
  NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
  NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(d.get(), block, bytes, cudaMemcpyHostToDevice, s.get()));
  pool.deallocate(block, bytes, s.view());

  auto* next = static_cast<std::uint32_t*>(pool.allocate(bytes));
  bool const same_block = next == block;
  std::memset(next, 0xFF, bytes);  // the new owner writes its own data
  s.sync();

  std::vector<std::uint32_t> received(words);
  NSIGHTKIT_CUDA_CHECK(cudaMemcpy(received.data(), d.get(), bytes, cudaMemcpyDeviceToHost));
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < words; ++i) wrong += received[i] != pattern(i, key) ? 1 : 0;
  INFO("the pool handed out " << (same_block ? "the same block" : "a new block"));
  REQUIRE(wrong == 0);
  std::printf("stream-ordered reuse: %s while the copy was queued; device data intact\n",
              same_block ? "the same block was reused (the copy had already completed)"
                         : "a new block was allocated");

  // Once the stream passed the event, the block is reused (the oldest completed block first).
  pool.deallocate(next, bytes);
  void* again = pool.allocate(bytes);
  CHECK(again == block);
  pool.deallocate(again, bytes);
  auto const st = pool.stats();
  CHECK(st.bytes_in_use == 0);
  CHECK(st.allocations == st.cache_hits + st.host_alloc_calls);
  CHECK(st.events_created == 1);

  // Control, for the log only (not an assertion: it depends on timing): freeing without the
  // stream makes the block reusable at once, and the same experiment then corrupts the data.
  auto* early = static_cast<std::uint32_t*>(pool.allocate(bytes));
  for (std::size_t i = 0; i < words; ++i) early[i] = pattern(i, key);
  spin<<<1, 1, 0, s.get()>>>(cycles);
  NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
  NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(d.get(), early, bytes, cudaMemcpyHostToDevice, s.get()));
  pool.deallocate(early, bytes);  // wrong on purpose: the copy is still queued
  auto* reused = static_cast<std::uint32_t*>(pool.allocate(bytes));
  std::memset(reused, 0xFF, bytes);
  s.sync();
  NSIGHTKIT_CUDA_CHECK(cudaMemcpy(received.data(), d.get(), bytes, cudaMemcpyDeviceToHost));
  std::size_t corrupted = 0;
  for (std::size_t i = 0; i < words; ++i) corrupted += received[i] != pattern(i, key) ? 1 : 0;
  std::printf(
      "control (free without the stream): %s block, %zu of %zu words corrupted "
      "(expected: all) — the check above would have caught it\n",
      reused == early ? "same" : "another", corrupted, words);
  pool.deallocate(reused, bytes);
}

TEST_CASE("PinnedBlock: record_stream makes the block wait for that stream") {
  std::size_t const bytes = 4 * MiB;
  std::size_t const words = bytes / sizeof(std::uint32_t);
  PinnedMemoryPool pool;
  Stream s;
  DeviceBuffer d{bytes};
  void* first = nullptr;
  {
    nsightkit::PinnedBlock block = pool.acquire(bytes);
    REQUIRE(block);
    first = block.data();
    auto* w = block.data_as<std::uint32_t>();
    for (std::size_t i = 0; i < words; ++i) w[i] = pattern(i, 7);
    spin<<<1, 1, 0, s.get()>>>(cycles_for_ms(20.0));
    NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
    NSIGHTKIT_CUDA_CHECK(
        cudaMemcpyAsync(d.get(), block.data(), bytes, cudaMemcpyHostToDevice, s.get()));
    block.record_stream(s.view());
  }  // given back here, without waiting
  {
    nsightkit::PinnedBlock other = pool.acquire(bytes);
    std::memset(other.data(), 0, bytes);
    s.sync();
  }
  std::vector<std::uint32_t> received(words);
  NSIGHTKIT_CUDA_CHECK(cudaMemcpy(received.data(), d.get(), bytes, cudaMemcpyDeviceToHost));
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < words; ++i) wrong += received[i] != pattern(i, 7) ? 1 : 0;
  REQUIRE(wrong == 0);
  nsightkit::PinnedBlock later = pool.acquire(bytes);
  CHECK(later.data() == first);
}

TEST_CASE("many threads allocating and freeing on their streams: data intact, books balanced") {
  constexpr int threads = 8;
  constexpr int iterations = 100;
  std::size_t const sizes[] = {256 * KiB, 1 * MiB, 1 * MiB + 256 * KiB};
  std::size_t const max_bytes = 1 * MiB + 256 * KiB;
  PinnedMemoryPool pool;
  std::atomic<int> failures{0};
  std::vector<std::string> errors(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      try {
        Stream s;
        DeviceBuffer d{max_bytes};
        DeviceBuffer sums{iterations * sizeof(unsigned long long)};
        NSIGHTKIT_CUDA_CHECK(cudaMemsetAsync(sums.get(), 0, sums.bytes(), s.get()));
        std::vector<unsigned long long> expected(iterations, 0);
        std::mt19937 rng{static_cast<unsigned>(t + 11)};
        long long const cycles = cycles_for_ms(0.5);
        for (int i = 0; i < iterations; ++i) {
          std::size_t const bytes = sizes[rng() % 3];
          std::size_t const words = bytes / sizeof(std::uint32_t);
          auto* p = static_cast<std::uint32_t*>(pool.allocate(bytes));
          auto const key = static_cast<std::uint32_t>(t * 100003 + i);
          for (std::size_t k = 0; k < words; ++k) {
            p[k] = pattern(k, key);
            expected[static_cast<std::size_t>(i)] += p[k];
          }
          spin<<<1, 1, 0, s.get()>>>(cycles);  // keep copies in flight while others allocate
          NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(d.get(), p, bytes, cudaMemcpyHostToDevice, s.get()));
          sum_words<<<64, 256, 0, s.get()>>>(d.get<std::uint32_t>(), words,
                                             sums.get<unsigned long long>() + i);
          NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
          pool.deallocate(p, bytes, s.view());
        }
        std::vector<unsigned long long> got(iterations);
        NSIGHTKIT_CUDA_CHECK(
            cudaMemcpyAsync(got.data(), sums.get(), sums.bytes(), cudaMemcpyDeviceToHost, s.get()));
        s.sync();
        for (int i = 0; i < iterations; ++i) {
          if (got[static_cast<std::size_t>(i)] != expected[static_cast<std::size_t>(i)]) {
            failures.fetch_add(1);
            errors[static_cast<std::size_t>(t)] += " iteration " + std::to_string(i);
          }
        }
      } catch (std::exception const& e) {
        failures.fetch_add(1);
        errors[static_cast<std::size_t>(t)] += std::string{" exception: "} + e.what();
      }
    });
  }
  for (auto& w : workers) w.join();
  for (int t = 0; t < threads; ++t) {
    INFO("thread " << t << ":" << errors[static_cast<std::size_t>(t)]);
    CHECK(errors[static_cast<std::size_t>(t)].empty());
  }
  REQUIRE(failures.load() == 0);
  auto const st = pool.stats();
  CHECK(st.allocations == std::uint64_t{threads} * iterations);
  CHECK(st.deallocations == st.allocations);
  CHECK(st.bytes_in_use == 0);
  CHECK(st.blocks_in_use == 0);
  CHECK(st.allocations == st.cache_hits + st.host_alloc_calls);
  CHECK(st.cache_hits > 0);
  CHECK(st.bytes_cached == st.bytes_reserved());
  std::printf(
      "threads: %llu allocations, %llu cache hits, %llu cudaHostAlloc calls, %llu pending "
      "misses, %llu events, %zu bytes cached\n",
      static_cast<unsigned long long>(st.allocations),
      static_cast<unsigned long long>(st.cache_hits),
      static_cast<unsigned long long>(st.host_alloc_calls),
      static_cast<unsigned long long>(st.pending_misses),
      static_cast<unsigned long long>(st.events_created), st.bytes_cached);

  // Every stream finished (each thread synchronized its own): release returns everything.
  std::size_t const cached = st.bytes_cached;
  CHECK(pool.release() == cached);
  auto const after = pool.stats();
  CHECK(after.bytes_cached == 0);
  CHECK(after.bytes_reserved() == 0);
  CHECK(after.free_host_calls == after.host_alloc_calls);
}

TEST_CASE("release returns cached memory, blocks in flight stay until their stream passes") {
  PinnedMemoryPool pool;
  Stream s;
  DeviceBuffer d{8 * MiB};
  void* a = pool.allocate(1 * MiB);
  void* b = pool.allocate(8 * MiB);
  pool.deallocate(a, 1 * MiB);
  spin<<<1, 1, 0, s.get()>>>(cycles_for_ms(20.0));
  NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
  NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(d.get(), b, 8 * MiB, cudaMemcpyHostToDevice, s.get()));
  pool.deallocate(b, 8 * MiB, s.view());
  std::size_t const first = pool.release();  // 1 MiB for sure; 9 MiB only if the copy is done
  CHECK(first >= 1 * MiB);
  s.sync();
  std::size_t const second = pool.release();
  CHECK(first + second == 9 * MiB);
  auto const st = pool.stats();
  CHECK(st.bytes_cached == 0);
  CHECK(st.free_host_calls == 2);
}

TEST_CASE("a cap on cached bytes frees idle blocks beyond it") {
  nsightkit::PinnedPoolOptions options;
  options.max_cached_bytes = 2 * MiB;
  PinnedMemoryPool pool{options};
  void* a = pool.allocate(1 * MiB);
  void* b = pool.allocate(1 * MiB);
  void* c = pool.allocate(1 * MiB);
  pool.deallocate(a, 1 * MiB);
  pool.deallocate(b, 1 * MiB);
  pool.deallocate(c, 1 * MiB);
  auto const st = pool.stats();
  CHECK(st.bytes_cached == 2 * MiB);
  CHECK(st.free_host_calls == 1);
}

TEST_CASE("misuse on real blocks goes to the handler, alignment and NVTX on a device") {
  misuse_messages().clear();
  nsightkit::PinnedPoolOptions options;
  options.on_misuse = &record_misuse;
  PinnedMemoryPool pool{options};
  PinnedMemoryPool other;
  void* p = other.allocate(4 * KiB);
  pool.deallocate(p, 4 * KiB);  // not this pool's
  void* q = pool.allocate(4 * KiB);
  CHECK(reinterpret_cast<std::uintptr_t>(q) % 256 == 0);
  pool.deallocate(q, 64 * KiB);  // wrong size: ignored
  pool.deallocate(q, 4 * KiB);
  pool.deallocate(q, 4 * KiB);  // twice
  REQUIRE(misuse_messages().size() == 3);
  CHECK(misuse_messages()[0].find("foreign pointer") != std::string::npos);
  CHECK(misuse_messages()[1].find("size does not match") != std::string::npos);
  CHECK(misuse_messages()[2].find("double free") != std::string::npos);
  other.deallocate(p, 4 * KiB);

  // The Recorder cannot attach when a tool (compute-sanitizer, nsys, ncu) injects into NVTX.
  if (std::getenv("NVTX_INJECTION64_PATH") != nullptr) {
    std::printf("NVTX check skipped: NVTX_INJECTION64_PATH is set (a tool is attached)\n");
    return;
  }
  Recorder rec;
  void* r = pool.allocate(3 * MiB);
  pool.deallocate(r, 3 * MiB);
  CHECK(rec.lines() == nsk_test::expect({"push nsightkit cudaHostAlloc 3 MiB", "pop nsightkit"}));
}
