// StreamPrefetcher against the two loops it sits between, in one process (needs a CUDA device;
// without one it says so and exits 0).
//
// A step of the loop is one H2D copy of a batch (time C) and one kernel that reads it (time K).
// C is set by the batch size (from the measured pinned H2D bandwidth), K by a clock64 spin kernel
// (calibrated against CUDA events). Three cases: copy-bound (C = 2 ms, K = 1 ms), compute-bound
// (C = 1 ms, K = 2 ms), balanced (C = K = 1.5 ms). For each, measured in this run:
//   C alone        back-to-back copies of one batch on one stream
//   K alone        back-to-back kernels
//   serial         copy then kernel on one stream (what a loop without prefetching does)
//   depth 1/2/3    StreamPrefetcher over page-locked host batches, kernel on the compute stream
// Step times are GPU times between CUDA events on the stream that runs the kernels, over the
// steps after a warm-up, median of the repetitions. Printed: the table, then the ratios the
// targets are about — depth 2 against max(C, K) (target <= 1.10) and against C + K — and how
// much the serial loop costs against C + K.
//
// usage: bench_prefetch [steps per measurement (default 40)] [repetitions (default 5)]
#include <nsightkit/prefetch.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

__global__ void spin_read(std::uint32_t const* batch, long long cycles, unsigned int* sink) {
  long long const start = clock64();
  while (clock64() - start < cycles) {
  }
  if (threadIdx.x == 0) atomicAdd(sink, batch[0]);  // the kernel depends on the batch
}

class Event {
 public:
  Event() { NSIGHTKIT_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~Event() { (void)cudaEventDestroy(e_); }
  Event(Event const&) = delete;
  Event& operator=(Event const&) = delete;
  [[nodiscard]] cudaEvent_t get() const noexcept { return e_; }

 private:
  cudaEvent_t e_{};
};

double elapsed_ms(Event const& a, Event const& b) {
  NSIGHTKIT_CUDA_CHECK(cudaEventSynchronize(b.get()));
  float ms = 0.f;
  NSIGHTKIT_CUDA_CHECK(cudaEventElapsedTime(&ms, a.get(), b.get()));
  return static_cast<double>(ms);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct DeviceBuffer {
  explicit DeviceBuffer(std::size_t bytes) { NSIGHTKIT_CUDA_CHECK(cudaMalloc(&p, bytes)); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p{o.p} { o.p = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;
  DeviceBuffer(DeviceBuffer const&) = delete;
  DeviceBuffer& operator=(DeviceBuffer const&) = delete;
  ~DeviceBuffer() {
    if (p != nullptr) (void)cudaFree(p);
  }
  void* p{nullptr};
};

struct HostBuffer {
  explicit HostBuffer(std::size_t bytes) {
    NSIGHTKIT_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
    std::memset(p, 1, bytes);
  }
  ~HostBuffer() { (void)cudaFreeHost(p); }
  HostBuffer(HostBuffer const&) = delete;
  HostBuffer& operator=(HostBuffer const&) = delete;
  void* p{nullptr};
};

struct Rig {
  cudaStream_t compute{};
  cudaStream_t copy{};
  unsigned int* sink{nullptr};
  std::vector<HostBuffer*> hosts;  // page-locked sources, used round-robin
  int steps{40};
  int warmup{5};
  int reps{5};
};

// Batch sizes and spin lengths for a target time, from measurements on this device.
struct Calibration {
  double bytes_per_ms{0};
  double cycles_per_ms{0};
};

// GPU time per step of `steps` back-to-back copies of `bytes` on one stream.
double copy_alone(Rig const& rig, std::size_t bytes, DeviceBuffer const& dst) {
  std::vector<double> samples;
  for (int r = 0; r < rig.reps; ++r) {
    Event a;
    Event b;
    NSIGHTKIT_CUDA_CHECK(cudaEventRecord(a.get(), rig.compute));
    for (int i = 0; i < rig.steps; ++i) {
      NSIGHTKIT_CUDA_CHECK(
          cudaMemcpyAsync(dst.p, rig.hosts[static_cast<std::size_t>(i) % rig.hosts.size()]->p,
                          bytes, cudaMemcpyHostToDevice, rig.compute));
    }
    NSIGHTKIT_CUDA_CHECK(cudaEventRecord(b.get(), rig.compute));
    samples.push_back(elapsed_ms(a, b) / rig.steps);
  }
  return median(samples);
}

// GPU time per kernel of `steps` back-to-back spin kernels.
double kernel_alone(Rig const& rig, long long cycles, DeviceBuffer const& src) {
  std::vector<double> samples;
  for (int r = 0; r < rig.reps; ++r) {
    Event a;
    Event b;
    NSIGHTKIT_CUDA_CHECK(cudaEventRecord(a.get(), rig.compute));
    for (int i = 0; i < rig.steps; ++i) {
      spin_read<<<1, 32, 0, rig.compute>>>(static_cast<std::uint32_t const*>(src.p), cycles,
                                           rig.sink);
    }
    NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
    NSIGHTKIT_CUDA_CHECK(cudaEventRecord(b.get(), rig.compute));
    samples.push_back(elapsed_ms(a, b) / rig.steps);
  }
  return median(samples);
}

// The loop without prefetching: copy and kernel on one stream.
double serial_loop(Rig const& rig, std::size_t bytes, long long cycles, DeviceBuffer const& dst) {
  std::vector<double> samples;
  for (int r = 0; r < rig.reps; ++r) {
    Event a;
    Event b;
    for (int i = 0; i < rig.steps + rig.warmup; ++i) {
      if (i == rig.warmup) NSIGHTKIT_CUDA_CHECK(cudaEventRecord(a.get(), rig.compute));
      NSIGHTKIT_CUDA_CHECK(
          cudaMemcpyAsync(dst.p, rig.hosts[static_cast<std::size_t>(i) % rig.hosts.size()]->p,
                          bytes, cudaMemcpyHostToDevice, rig.compute));
      spin_read<<<1, 32, 0, rig.compute>>>(static_cast<std::uint32_t const*>(dst.p), cycles,
                                           rig.sink);
    }
    NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
    NSIGHTKIT_CUDA_CHECK(cudaEventRecord(b.get(), rig.compute));
    samples.push_back(elapsed_ms(a, b) / rig.steps);
  }
  return median(samples);
}

struct HostRef {
  void const* data;
};

// The loop with StreamPrefetcher at `depth`: GPU time per step on the compute stream, between
// the kernel of step `warmup` and the end of the last kernel. Also returns the host waits.
double prefetch_loop(Rig const& rig, std::size_t bytes, long long cycles, std::size_t depth,
                     std::uint64_t* host_waits) {
  std::vector<double> samples;
  for (int r = 0; r < rig.reps; ++r) {
    Event a;
    Event b;
    int fetched = 0;
    int const total = rig.steps + rig.warmup;
    nsightkit::PrefetchOptions options;
    options.depth = depth;
    options.copy_stream = nsightkit::StreamView{rig.copy};
    nsightkit::StreamPrefetcher<HostRef, DeviceBuffer> prefetcher{
        [&]() -> std::optional<HostRef> {
          if (fetched == total) return std::nullopt;
          return HostRef{rig.hosts[static_cast<std::size_t>(fetched++) % rig.hosts.size()]->p};
        },
        [bytes](HostRef& h, DeviceBuffer& d, nsightkit::PrefetchCopier& c) {
          c.to_device(d.p, h.data, bytes);
        },
        [bytes](std::size_t) { return DeviceBuffer{bytes}; }, nsightkit::StreamView{rig.compute},
        options};
    for (auto& batch : prefetcher) {
      if (static_cast<int>(batch.index()) == rig.warmup)
        NSIGHTKIT_CUDA_CHECK(cudaEventRecord(a.get(), rig.compute));
      spin_read<<<1, 32, 0, rig.compute>>>(static_cast<std::uint32_t const*>(batch.device().p),
                                           cycles, rig.sink);
      NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
    }
    NSIGHTKIT_CUDA_CHECK(cudaEventRecord(b.get(), rig.compute));
    samples.push_back(elapsed_ms(a, b) / rig.steps);
    *host_waits = prefetcher.stats().host_waits;
  }
  return median(samples);
}

Calibration calibrate(Rig const& rig) {
  Calibration cal;
  std::size_t const probe = 64 * MiB;
  DeviceBuffer dst{probe};
  (void)copy_alone(rig, probe, dst);  // warm
  cal.bytes_per_ms = static_cast<double>(probe) / copy_alone(rig, probe, dst);
  long long const probe_cycles = 2'000'000;
  (void)kernel_alone(rig, probe_cycles, dst);
  cal.cycles_per_ms = static_cast<double>(probe_cycles) / kernel_alone(rig, probe_cycles, dst);
  return cal;
}

struct Case {
  char const* name;
  double copy_ms;
  double kernel_ms;
};

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  cudaError_t const status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    std::printf("bench_prefetch: no usable CUDA device (%s: %s); nothing to measure.\n",
                status == cudaSuccess ? "cudaGetDeviceCount" : cudaGetErrorName(status),
                status == cudaSuccess ? "0 devices" : cudaGetErrorString(status));
    return 0;
  }
  try {
    Rig rig;
    if (argc > 1) rig.steps = std::max(4, std::atoi(argv[1]));
    if (argc > 2) rig.reps = std::max(1, std::atoi(argv[2]));
    cudaDeviceProp prop{};
    NSIGHTKIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    NSIGHTKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&rig.compute, cudaStreamNonBlocking));
    NSIGHTKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&rig.copy, cudaStreamNonBlocking));
    NSIGHTKIT_CUDA_CHECK(cudaMalloc(&rig.sink, sizeof(unsigned int)));

    // Page-locked sources big enough for the largest batch (2.5 ms of copying).
    std::size_t const probe_bytes = 64 * MiB;
    HostBuffer probe0{probe_bytes};
    HostBuffer probe1{probe_bytes};
    rig.hosts = {&probe0, &probe1};
    Calibration const cal = calibrate(rig);
    std::size_t const max_bytes =
        (static_cast<std::size_t>(cal.bytes_per_ms * 2.5) + 4095) / 4096 * 4096;
    HostBuffer host0{max_bytes};
    HostBuffer host1{max_bytes};
    rig.hosts = {&host0, &host1};

    std::printf("bench_prefetch on CUDA device 0: %s (sm_%d%d)\n", prop.name, prop.major,
                prop.minor);
    std::printf(
        "calibration: H2D from page-locked memory %.1f GB/s; spin %.0f cycles/ms; %d steps "
        "after %d warm-up, median of %d\n\n",
        cal.bytes_per_ms * 1e3 / 1e9, cal.cycles_per_ms, rig.steps, rig.warmup, rig.reps);

    Case const cases[] = {
        {"copy-bound", 2.0, 1.0}, {"compute-bound", 1.0, 2.0}, {"balanced", 1.5, 1.5}};
    std::printf("%-14s %8s %8s %8s %8s %8s %8s %8s %8s  %s\n", "case (ms)", "C", "K", "max", "C+K",
                "serial", "depth 1", "depth 2", "depth 3", "host waits d1/d2/d3");
    struct Row {
      char const* name;
      double c, k, serial, d1, d2, d3;
    };
    std::vector<Row> rows;
    for (Case const& cs : cases) {
      std::size_t const bytes =
          (static_cast<std::size_t>(cal.bytes_per_ms * cs.copy_ms) + 4095) / 4096 * 4096;
      long long const cycles = static_cast<long long>(cal.cycles_per_ms * cs.kernel_ms);
      DeviceBuffer dst{bytes};
      double const c = copy_alone(rig, bytes, dst);
      double const k = kernel_alone(rig, cycles, dst);
      double const serial = serial_loop(rig, bytes, cycles, dst);
      std::uint64_t w1 = 0;
      std::uint64_t w2 = 0;
      std::uint64_t w3 = 0;
      double const d1 = prefetch_loop(rig, bytes, cycles, 1, &w1);
      double const d2 = prefetch_loop(rig, bytes, cycles, 2, &w2);
      double const d3 = prefetch_loop(rig, bytes, cycles, 3, &w3);
      std::printf("%-14s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f  %llu/%llu/%llu (of %d)\n",
                  cs.name, c, k, std::max(c, k), c + k, serial, d1, d2, d3,
                  static_cast<unsigned long long>(w1), static_cast<unsigned long long>(w2),
                  static_cast<unsigned long long>(w3), rig.steps + rig.warmup);
      rows.push_back({cs.name, c, k, serial, d1, d2, d3});
    }
    std::printf("\nratios (step time / reference):\n");
    std::printf("%-14s %14s %14s %14s %14s %14s\n", "case", "d2/max(C,K)", "d2/(C+K)",
                "d3/max(C,K)", "serial/(C+K)", "d1/(C+K)");
    int met = 0;
    for (Row const& r : rows) {
      double const mx = std::max(r.c, r.k);
      double const sum = r.c + r.k;
      bool const ok = r.d2 / mx <= 1.10;
      met += ok ? 1 : 0;
      std::printf("%-14s %13.3fx %13.3fx %13.3fx %13.3fx %13.3fx  %s\n", r.name, r.d2 / mx,
                  r.d2 / sum, r.d3 / mx, r.serial / sum, r.d1 / sum,
                  ok ? "target met (<= 1.10x)" : "TARGET MISSED (> 1.10x)");
    }
    std::printf("\ndepth 2 within 1.10x of max(C, K): %d of %zu cases\n", met, rows.size());
    (void)cudaFree(rig.sink);
    (void)cudaStreamDestroy(rig.copy);
    (void)cudaStreamDestroy(rig.compute);
  } catch (std::exception const& e) {
    std::printf("bench_prefetch: %s\n", e.what());
    return 1;
  }
  return 0;
}
