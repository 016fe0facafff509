// CaptureWindow on a real device: the CUDA runtime profiler backend starts, synchronizes and
// stops without error, and a window synchronizes the device before it stops the profiler (the
// last kernel of the window has finished when cudaProfilerStop is called).
#include "support.hpp"

#include <nsightkit/capture.hpp>
#include <nsightkit/cuda_check.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace nsk = nsightkit;
using nsightkit::testing::Recorder;

namespace {

/// Spins for about `ns` nanoseconds of GPU time (globaltimer), then writes `value`.
__global__ void spin_then_write(int* out, int value, unsigned long long ns) {
  unsigned long long start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  unsigned long long now = start;
  while (now - start < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  *out = value;
}

/// Waits until the host sets `*flag` (mapped pinned memory), at most `limit_ns` of GPU time.
__global__ void wait_for_host(int volatile* flag, int* out, unsigned long long limit_ns) {
  unsigned long long start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  unsigned long long now = start;
  while (*flag == 0 && now - start < limit_ns)
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  *out = *flag;
}

/// The real CUDA backend, with each call logged together with the state of `stream` at stop().
struct Spy final : nsk::ProfilerBackend {
  cudaStream_t stream{};
  std::vector<std::string> calls;
  cudaError_t stream_at_stop{cudaErrorUnknown};

  std::string start() override {
    calls.push_back("start");
    return nsk::cuda_profiler_backend().start();
  }
  std::string synchronize() override {
    calls.push_back("sync");
    return nsk::cuda_profiler_backend().synchronize();
  }
  std::string stop() override {
    calls.push_back("stop");
    stream_at_stop = cudaStreamQuery(stream);
    return nsk::cuda_profiler_backend().stop();
  }
};

std::vector<std::string> when_on(std::vector<std::string> v) {
  return nsk::enabled ? v : std::vector<std::string>{};
}

}  // namespace

TEST_CASE("the CUDA runtime profiler backend starts and synchronizes and stops on a device") {
  auto& cuda = nsk::cuda_profiler_backend();
  CHECK(cuda.start() == "");
  CHECK(cuda.start() == "");  // a second window: reference-counted, no error
  CHECK(cuda.synchronize() == "");
  CHECK(cuda.stop() == "");
  CHECK(cuda.stop() == "");  // the profiler stops here
  CHECK_THAT(cuda.stop(), Catch::Matchers::Contains("no cudaProfilerStart() to match"));
  NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
}

TEST_CASE("a window synchronizes the device before it stops the profiler") {
  ::unsetenv("NSIGHTKIT_CAPTURE");
  Recorder rec;
  Spy spy;
  NSIGHTKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&spy.stream, cudaStreamNonBlocking));
  int* d = nullptr;
  NSIGHTKIT_CUDA_CHECK(cudaMalloc(&d, 8 * sizeof(int)));
  std::vector<std::string> diagnostics;
  nsk::CaptureOptions o;
  o.profiler = &spy;
  o.diagnostics = [&](std::string const& m) { diagnostics.push_back(m); };
  {
    nsk::CaptureWindow w{nsk::CaptureSchedule{1, 1, 2}, o};
    for (int i = 0; i < 5; ++i) {
      auto step = w.step();
      // 20 ms per kernel: far longer than the host needs to reach the window's stop.
      spin_then_write<<<1, 1, 0, spy.stream>>>(d + i, i + 1, 20ull * 1000 * 1000);
      NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
    }
  }
  CHECK(spy.calls == when_on({"start", "sync", "stop"}));
  if (nsk::enabled) CHECK(spy.stream_at_stop == cudaSuccess);  // step 3's kernel had finished
  CHECK(diagnostics.empty());
  NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(spy.stream));
  std::vector<int> h(5);
  NSIGHTKIT_CUDA_CHECK(cudaMemcpy(h.data(), d, 5 * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(h == std::vector<int>{1, 2, 3, 4, 5});
  CHECK(rec.lines() ==
        nsk_test::expect({"push nsightkit step 0", "pop nsightkit", "push nsightkit step 1",
                          "pop nsightkit", "start nsightkit capture", "push nsightkit step 2",
                          "pop nsightkit", "push nsightkit step 3", "pop nsightkit",
                          "end nsightkit", "push nsightkit step 4", "pop nsightkit"}));
  NSIGHTKIT_CUDA_CHECK(cudaFree(d));
  NSIGHTKIT_CUDA_CHECK(cudaStreamDestroy(spy.stream));
}

TEST_CASE("without synchronize_before_stop the window's last kernel may still run at stop") {
  ::unsetenv("NSIGHTKIT_CAPTURE");
  Spy spy;
  NSIGHTKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&spy.stream, cudaStreamNonBlocking));
  int* flag = nullptr;  // host memory the kernel polls: the kernel cannot finish before we say so
  NSIGHTKIT_CUDA_CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
  *flag = 0;
  int* d_flag = nullptr;
  NSIGHTKIT_CUDA_CHECK(cudaHostGetDevicePointer(&d_flag, flag, 0));
  int* d = nullptr;
  NSIGHTKIT_CUDA_CHECK(cudaMalloc(&d, sizeof(int)));
  nsk::CaptureOptions o;
  o.profiler = &spy;
  o.synchronize_before_stop = false;
  {
    nsk::CaptureWindow w{nsk::CaptureSchedule{0, 0, 1}, o};
    auto step = w.step();
    // Bounded wait (5 s) so a mistake cannot hang the test.
    wait_for_host<<<1, 1, 0, spy.stream>>>(d_flag, d, 5ull * 1000 * 1000 * 1000);
    NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
  }
  CHECK(spy.calls == when_on({"start", "stop"}));
  if (nsk::enabled) CHECK(spy.stream_at_stop == cudaErrorNotReady);
  *reinterpret_cast<int volatile*>(flag) = 1;
  NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(spy.stream));
  int h = 0;
  NSIGHTKIT_CUDA_CHECK(cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(h == 1);
  NSIGHTKIT_CUDA_CHECK(cudaFree(d));
  NSIGHTKIT_CUDA_CHECK(cudaFreeHost(flag));
  NSIGHTKIT_CUDA_CHECK(cudaStreamDestroy(spy.stream));
}

TEST_CASE(
    "the default backend on a device gives no diagnostics and callbacks with the step numbers") {
  ::unsetenv("NSIGHTKIT_CAPTURE");
  std::vector<std::string> diagnostics;
  std::vector<std::string> events;
  nsk::CaptureOptions o;  // the CUDA runtime backend
  o.diagnostics = [&](std::string const& m) { diagnostics.push_back(m); };
  {
    nsk::CaptureWindow w{nsk::CaptureSchedule{5, 2, 3}, o};
    w.on_start([&](nsk::CaptureEvent const& e) {
      events.push_back("start " + std::to_string(e.first_step) + "-" + std::to_string(e.last_step));
    });
    w.on_stop([&](nsk::CaptureEvent const& e) {
      events.push_back("stop " + std::to_string(e.first_step) + "-" + std::to_string(e.last_step));
    });
    for (int i = 0; i < 20; ++i) {
      auto step = w.step();
      CHECK(w.capturing() == (nsk::enabled && i >= 7 && i <= 9));
    }
  }
  CHECK(diagnostics.empty());
  CHECK(events == when_on({"start 7-9", "stop 7-9"}));
}
