// The CUPTI GPU source on a real device: every kernel, copy and memset counted for the range
// that launched it, on any stream, from any thread, inside cuBLAS and graph launches; busy is the
// union of the intervals (concurrent kernels once), serial kernels make busy equal their summed
// time; device allocations per range; a thread launching outside any range on a stream a range
// made current; in window-only mode, collection from the warm-up step on with only captured steps
// counted. Spin kernels wait on the GPU's global timer, so their
// lengths do not depend on clocks.
#include "gpu/gpu_support.cuh"

#include <nsightkit/capture.hpp>
#include <nsightkit/cuda_check.hpp>
#include <nsightkit/cupti.hpp>
#include <nsightkit/report.hpp>

#include <catch2/catch.hpp>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

using nsightkit::Report;
using nsightkit::ScopedRange;

namespace {
using nsk_gpu_test::spin;
using nsk_gpu_test::Stream;

/// Runs for `ns` after both kernels of a pair have started: each raises its flag, then waits
/// (at most 50 ms) for the other's. The two overlap by construction wherever the device runs
/// them side by side; `met` says whether the other's flag was seen.
__global__ void meet(int volatile* mine, int volatile* other, int* met, long long ns) {
  *mine = 1;
  __threadfence_system();
  unsigned long long start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  unsigned long long now = start;
  while (*other == 0 && now - start < 50'000'000ull) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  }
  *met = *other;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (static_cast<long long>(now - start) >= ns) break;
  }
}

constexpr long long us = 1000;

/// A fresh report measuring with CUPTI (in window-only mode: captured steps only).
struct Session {
  explicit Session(bool captured = false) {
    REQUIRE(nsightkit::cupti_unavailable_reason().empty());
    nsightkit::ReportOptions o;
    o.table.clear();
    o.at_exit = false;
    o.gpu_source = nsightkit::GpuSourceKind::cupti;
    o.captured_only = captured;
    Report::disable();
    Report::reset();
    REQUIRE(Report::enable(o));
  }
  ~Session() {
    Report::disable();
    Report::reset();
  }
  Session(Session const&) = delete;
  Session& operator=(Session const&) = delete;
};

nsightkit::GpuWorkStats const& work(nsightkit::ReportSnapshot const& s, char const* path) {
  auto const* row = s.find(path);
  INFO(path);
  REQUIRE(row != nullptr);
  return row->work;
}
}  // namespace

TEST_CASE("serial kernels: counted exactly, busy equals their summed time") {
  Stream a;
  spin<<<1, 1, 0, a.s>>>(1);  // load the module first
  NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(a.s));
  Session session;
  for (int step = 0; step < 3; ++step) {
    ScopedRange r{"serial"};
    for (int k = 0; k < 4; ++k) spin<<<1, 1, 0, a.s>>>(50 * us);
  }
  auto const snap = Report::snapshot();
  REQUIRE(snap.gpu.source == "cupti");
  auto const& w = work(snap, "serial");
  REQUIRE(w.kernels == 12);
  REQUIRE(w.self_kernels == 12);
  REQUIRE(w.calls_with_work == 3);
  REQUIRE(w.busy_ns == w.kernel_ns);  // one stream: the kernels never overlap
  REQUIRE(w.kernel_ns >= 12 * 50 * us);
  REQUIRE(w.span_ns >= w.busy_ns);
  REQUIRE(w.launch_latency.count == 12);
  REQUIRE(snap.gpu.records_dropped == 0);
}

TEST_CASE("concurrent kernels on two streams count once in busy") {
  Stream a, b;
  int* flags = nullptr;  // [flag a, flag b, a met b, b met a]
  NSIGHTKIT_CUDA_CHECK(cudaMalloc(&flags, 4 * sizeof(int)));
  NSIGHTKIT_CUDA_CHECK(cudaMemset(flags, 0, 4 * sizeof(int)));
  NSIGHTKIT_CUDA_CHECK(cudaDeviceSynchronize());
  Session session;
  {
    ScopedRange r{"concurrent"};
    meet<<<1, 1, 0, a.s>>>(flags, flags + 1, flags + 2, 400 * us);
    meet<<<1, 1, 0, b.s>>>(flags + 1, flags, flags + 3, 400 * us);
  }
  // Read back before the snapshot, which delivers this copy's record too (else it would arrive
  // in the next test's report, as work launched outside any range).
  int met[4] = {};
  NSIGHTKIT_CUDA_CHECK(cudaMemcpy(met, flags, sizeof met, cudaMemcpyDeviceToHost));
  auto const snap = Report::snapshot();
  NSIGHTKIT_CUDA_CHECK(cudaFree(flags));
  INFO("each kernel saw the other running: " << met[2] << " " << met[3]);
  REQUIRE((met[2] == 1 && met[3] == 1));  // they did run side by side
  auto const& w = work(snap, "concurrent");
  REQUIRE(w.kernels == 2);
  REQUIRE(w.streams == 2);
  REQUIRE(w.kernel_ns >= 800 * us);
  // Both ran at once for at least 400 us: the union (busy) is at most the sum minus that.
  INFO("busy " << w.busy_ns << " ns, summed kernel time " << w.kernel_ns << " ns");
  REQUIRE(w.busy_ns <= w.kernel_ns - 400 * us);
  REQUIRE(w.busy_ns >= 400 * us);
  // The device's busy is the same union; each stream's busy is its own kernel.
  REQUIRE(snap.gpu.devices.size() == 1);
  REQUIRE(snap.gpu.devices[0].busy_ns == w.busy_ns);
  REQUIRE(snap.gpu.devices[0].kernel_busy_ns == w.busy_ns);
  std::int64_t per_stream = 0;  // the two kernels' streams (the read-back copy has its own)
  for (auto const& st : snap.gpu.streams) per_stream += st.kernels != 0 ? st.busy_ns : 0;
  REQUIRE(per_stream == w.kernel_ns);
}

TEST_CASE("work launched inside cuBLAS belongs to the range that called it") {
  int const n = 512;
  float *x = nullptr, *y = nullptr, *z = nullptr;
  NSIGHTKIT_CUDA_CHECK(cudaMalloc(&x, sizeof(float) * n * n));
  NSIGHTKIT_CUDA_CHECK(cudaMalloc(&y, sizeof(float) * n * n));
  NSIGHTKIT_CUDA_CHECK(cudaMalloc(&z, sizeof(float) * n * n));
  cublasHandle_t h = nullptr;
  REQUIRE(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
  float const one = 1.0f, zero = 0.0f;
  // Warm up outside the report: cuBLAS loads its kernels on first use.
  REQUIRE(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, x, n, y, n, &zero, z, n) ==
          CUBLAS_STATUS_SUCCESS);
  NSIGHTKIT_CUDA_CHECK(cudaDeviceSynchronize());
  {
    Session session;
    for (int i = 0; i < 5; ++i) {
      ScopedRange r{"gemm"};
      REQUIRE(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, x, n, y, n, &zero, z, n) ==
              CUBLAS_STATUS_SUCCESS);
    }
    auto const snap = Report::snapshot();
    auto const& w = work(snap, "gemm");
    REQUIRE(w.kernels >= 5);
    REQUIRE(w.kernels % 5 == 0);  // the same kernels each call
    REQUIRE(w.self_kernels == w.kernels);
    REQUIRE(snap.gpu.records_unattributed == 0);
    REQUIRE_FALSE(w.top_kernels.empty());
    INFO(w.top_kernels.front().name);
    REQUIRE(w.top_kernels.front().name.find('(') == std::string::npos);  // demangled, no params
  }
  (void)cublasDestroy(h);
  (void)cudaFree(x);
  (void)cudaFree(y);
  (void)cudaFree(z);
}

TEST_CASE("copies on a copy stream, pinned and pageable, with their bytes") {
  std::size_t const bytes = std::size_t{8} << 20;
  void* device = nullptr;
  void* pinned = nullptr;
  std::vector<char> pageable(bytes);
  NSIGHTKIT_CUDA_CHECK(cudaMalloc(&device, bytes));
  NSIGHTKIT_CUDA_CHECK(cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault));
  Stream copy;
  {
    Session session;
    {
      ScopedRange r{"upload pinned"};
      NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(device, pinned, bytes, cudaMemcpyHostToDevice, copy.s));
    }
    {
      ScopedRange r{"upload pageable"};
      NSIGHTKIT_CUDA_CHECK(cudaMemcpy(device, pageable.data(), bytes, cudaMemcpyHostToDevice));
    }
    {
      ScopedRange r{"clear"};
      NSIGHTKIT_CUDA_CHECK(cudaMemsetAsync(device, 0, bytes, copy.s));
    }
    auto const snap = Report::snapshot();
    auto const& p = work(snap, "upload pinned");
    REQUIRE(p.h2d.count == 1);
    REQUIRE(p.h2d.bytes == bytes);
    REQUIRE(p.h2d.pageable == 0);
    REQUIRE(p.busy_ns > 0);
    auto const& g = work(snap, "upload pageable");
    REQUIRE(g.h2d.bytes == bytes);
    REQUIRE(g.h2d.pageable == g.h2d.count);
    auto const& c = work(snap, "clear");
    REQUIRE(c.memsets.count == 1);
    REQUIRE(c.memsets.bytes == bytes);
  }
  (void)cudaFreeHost(pinned);
  (void)cudaFree(device);
}

TEST_CASE("a graph launch's kernels belong to the range around cudaGraphLaunch") {
  Stream s;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  NSIGHTKIT_CUDA_CHECK(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < 3; ++k) spin<<<1, 1, 0, s.s>>>(20 * us);
  NSIGHTKIT_CUDA_CHECK(cudaStreamEndCapture(s.s, &graph));
  NSIGHTKIT_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  {
    Session session;
    for (int i = 0; i < 2; ++i) {
      ScopedRange r{"replay"};
      NSIGHTKIT_CUDA_CHECK(cudaGraphLaunch(exec, s.s));
    }
    auto const snap = Report::snapshot();
    auto const& w = work(snap, "replay");
    REQUIRE(w.kernels == 6);
    REQUIRE(w.calls_with_work == 2);
  }
  (void)cudaGraphExecDestroy(exec);
  (void)cudaGraphDestroy(graph);
}

TEST_CASE("a second thread's launches go to its own ranges") {
  Stream a;
  Session session;
  std::thread worker{[] {
    Stream b;
    ScopedRange r{"worker"};
    spin<<<1, 1, 0, b.s>>>(10 * us);
    spin<<<1, 1, 0, b.s>>>(10 * us);
    NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(b.s));
  }};
  {
    ScopedRange r{"main"};
    spin<<<1, 1, 0, a.s>>>(10 * us);
  }
  worker.join();
  auto const snap = Report::snapshot();
  REQUIRE(work(snap, "worker").kernels == 2);
  REQUIRE(work(snap, "main").kernels == 1);
}

TEST_CASE("a thread launching outside any range, on a stream a range made current: that range's") {
  Stream comm;
  spin<<<1, 1, 0, comm.s>>>(1);
  NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(comm.s));
  Session session;
  {
    ScopedRange bwd{"backward"};
    nsightkit::CurrentStream const on{nsightkit::StreamView{comm.s}};
    ScopedRange ar{"allreduce"};
    // A communication library's own thread, as NCCL's non-blocking communicator launches.
    std::thread launcher{[&comm] {
      spin<<<1, 1, 0, comm.s>>>(20 * us);
      spin<<<1, 1, 0, comm.s>>>(20 * us);
    }};
    launcher.join();
    NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(comm.s));
  }
  auto const snap = Report::snapshot();
  auto const& w = work(snap, "backward/allreduce");
  REQUIRE(w.kernels == 2);
  REQUIRE(w.self_kernels == 2);
  REQUIRE(w.calls_with_work == 1);
  REQUIRE(w.busy_ns == w.kernel_ns);
  REQUIRE(w.kernel_ns >= 40 * us);
  REQUIRE(w.delegated_kernels == 2);
  REQUIRE(w.delegated_kernel_ns == w.kernel_ns);
  REQUIRE(work(snap, "backward").kernels == 2);
  REQUIRE(snap.gpu.records_delegated == 2);
  REQUIRE(snap.gpu.records_unattributed == 0);
}

TEST_CASE("device memory allocated inside a range is charged to it") {
  Session session;
  void* p = nullptr;
  std::size_t const bytes = std::size_t{64} << 20;
  {
    ScopedRange r{"weights"};
    NSIGHTKIT_CUDA_CHECK(cudaMalloc(&p, bytes));
  }
  {
    ScopedRange r{"release"};
    NSIGHTKIT_CUDA_CHECK(cudaFree(p));
  }
  auto const snap = Report::snapshot();
  auto const& w = work(snap, "weights");
  REQUIRE(w.allocations == 1);
  REQUIRE(w.allocated_bytes == bytes);
  REQUIRE(w.freed_bytes == bytes);
  REQUIRE(w.peak_bytes == bytes);
}

TEST_CASE(
    "window-only mode: CUPTI collects from the warm-up step on, counting captured steps only") {
  Stream a;
  Session session{true};
  nsightkit::CaptureOptions co;
  co.backends = nsightkit::CaptureBackend::nvtx_range;
  co.synchronize_before_stop = true;
  // Steps: 0 wait, 1 warm-up (CUPTI collects, nothing counts), 2-3 active, 4 done.
  nsightkit::CaptureWindow window{nsightkit::CaptureSchedule{1, 1, 2}, co};
  for (int i = 0; i < 5; ++i) {
    auto step = window.step();
    ScopedRange r{"forward"};
    for (int k = 0; k < 3; ++k) spin<<<1, 1, 0, a.s>>>(20 * us);
    void* p = nullptr;
    NSIGHTKIT_CUDA_CHECK(cudaMalloc(&p, 4096));
    NSIGHTKIT_CUDA_CHECK(cudaFree(p));
  }
  window.close();
  auto const snap = Report::snapshot();
  REQUIRE(snap.gpu.source == "cupti");
  auto const& w = work(snap, "forward");
  CHECK(snap.find("forward")->cpu.count == 2);
  CHECK(w.kernels == 6);  // the two captured steps' kernels, not the warm-up step's
  CHECK(w.allocations == 2);
  REQUIRE(snap.gpu.devices.size() == 1);
  CHECK(snap.gpu.devices[0].kernels == 6);  // the warm-up's work is in no total either
  CHECK(snap.gpu.records_unattributed == 0);
  CHECK(snap.gpu.records_dropped == 0);
}
