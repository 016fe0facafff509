// CaptureWindow on a real device: the CUDA profiler backend (the driver's cuProfilerStart /
// cuCtxSynchronize / cuProfilerStop, loaded at run time) finds the driver the CUDA runtime loaded,
// starts, synchronizes and stops without error, works on a thread that never used CUDA (it makes
// the runtime's primary context current there), and a window synchronizes the device before it
// stops the profiler (the last kernel of the window has finished when cuProfilerStop is called).
#include "support.hpp"

#include <nsightkit/capture.hpp>
#include <nsightkit/cuda_check.hpp>
#include <nsightkit/detail/cuda_driver.hpp>

#include <cstdint>
#include <string>
#include <thread>
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

TEST_CASE("the CUDA profiler backend finds the driver and starts, synchronizes and stops") {
  NSIGHTKIT_CUDA_CHECK(cudaFree(nullptr));  // the runtime is initialised: its driver is loaded
  auto const& driver = nsk::detail::cuda_driver::api();
  INFO((driver.unavailable != nullptr ? driver.unavailable : "driver usable"));
  REQUIRE(driver.unavailable == nullptr);
  REQUIRE(driver.profiler_start != nullptr);
  REQUIRE(driver.profiler_stop != nullptr);
  auto& cuda = nsk::cuda_profiler_backend();
  CHECK(cuda.start() == "");
  CHECK(cuda.start() == "");  // a second window: reference-counted, no error
  CHECK(cuda.synchronize() == "");
  CHECK(cuda.stop() == "");
  CHECK(cuda.stop() == "");  // the profiler stops here
  CHECK(cuda.stop() == "cuProfilerStop() skipped: no cuProfilerStart() to match");
  NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
}

TEST_CASE("on a thread that never used CUDA the backend uses the runtime's primary context") {
  auto const& driver = nsk::detail::cuda_driver::api();
  REQUIRE(driver.unavailable == nullptr);
  NSIGHTKIT_CUDA_CHECK(cudaSetDevice(0));
  NSIGHTKIT_CUDA_CHECK(cudaFree(nullptr));
  void* runtime_context = nullptr;
  REQUIRE(driver.ctx_get_current(&runtime_context) == 0);
  REQUIRE(runtime_context != nullptr);
  cudaStream_t stream{};
  NSIGHTKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int* d = nullptr;
  NSIGHTKIT_CUDA_CHECK(cudaMalloc(&d, sizeof(int)));
  // 100 ms of GPU work queued from this thread; the other thread's synchronize must wait for it.
  spin_then_write<<<1, 1, 0, stream>>>(d, 7, 100ull * 1000 * 1000);
  NSIGHTKIT_CUDA_CHECK(cudaGetLastError());

  int sentinel = 0;
  void* before = &sentinel;  // not null: the thread must report "no context" itself
  void* after = nullptr;
  std::string started, synchronized, stopped;
  cudaError_t after_sync = cudaErrorUnknown;
  std::thread fresh{[&] {
    (void)driver.ctx_get_current(&before);
    auto& cuda = nsk::cuda_profiler_backend();
    started = cuda.start();
    (void)driver.ctx_get_current(&after);
    synchronized = cuda.synchronize();
    after_sync = cudaStreamQuery(stream);
    stopped = cuda.stop();
  }};
  fresh.join();
  CHECK(before == nullptr);  // a new thread has no current context
  CHECK(started == "");
  CHECK(after == runtime_context);  // the primary context of device 0, the runtime's own
  CHECK(synchronized == "");
  CHECK(after_sync == cudaSuccess);  // cuCtxSynchronize waited for the other thread's kernel
  CHECK(stopped == "");
  int h = 0;
  NSIGHTKIT_CUDA_CHECK(cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(h == 7);
  NSIGHTKIT_CUDA_CHECK(cudaFree(d));
  NSIGHTKIT_CUDA_CHECK(cudaStreamDestroy(stream));
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
  nsk::CaptureOptions o;  // the default backend: the CUDA driver's profiler API
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
