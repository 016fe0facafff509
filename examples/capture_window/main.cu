// nsightkit capture-window example: 20 training-like steps, one kernel per step, and a
// CaptureWindow with wait=5, warmup=2, active=3, so exactly the kernels of steps 7, 8 and 9 are
// profiled (steps count from 0: 0-4 wait, 5-6 warmup, 7-9 active, 10-19 done).
//
//   ./capture_window               # the schedule written below (NSIGHTKIT_CAPTURE may replace it)
//   ./capture_window --env-only    # no schedule in code: only NSIGHTKIT_CAPTURE decides
//   ncu --clock-control none --profile-from-start off --nvtx --print-nvtx-rename kernel
//       ./capture_window
//   nsys profile -t cuda,nvtx --capture-range=cudaProfilerApi --capture-range-end=stop
//       ./capture_window
//   nsys profile -t cuda,nvtx --capture-range=nvtx -p capture@nsightkit ./capture_window
//
// Each kernel is identifiable twice over: it runs inside the NVTX range "step N", and it is
// launched with N+1 blocks (ncu prints the grid, "(8, 1, 1)x(64, 1, 1)" for step 7).
#include <nsightkit/capture.hpp>
#include <nsightkit/cuda_check.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace nsk = nsightkit;

namespace {

constexpr int threads_per_block = 64;

/// Every block adds 1 to out[step]: afterwards out[step] == step + 1 (the grid size).
__global__ void step_kernel(int* out, int step) {
  if (threadIdx.x == 0) atomicAdd(&out[step], 1);
}

std::string describe(nsk::CaptureSchedule const& s) {
  return "wait=" + std::to_string(s.wait) + " warmup=" + std::to_string(s.warmup) +
         " active=" + std::to_string(s.active) + " repeat=" + std::to_string(s.repeat) +
         " skip_first=" + std::to_string(s.skip_first);
}

/// The window: the schedule written in code, or (with --env-only) none unless NSIGHTKIT_CAPTURE
/// gives one. Either way NSIGHTKIT_CAPTURE, when set, decides.
nsk::CaptureWindow make_window(bool env_only) {
  if (env_only) return nsk::CaptureWindow::from_environment();
  return nsk::CaptureWindow{nsk::CaptureSchedule{5, 2, 3}};
}

int run(bool env_only, int steps) {
  nsk::CaptureWindow window = make_window(env_only);
  std::printf("capture_window: %d steps, schedule %s (%s)\n", steps,
              window.off() ? "off" : describe(window.schedule()).c_str(),
              window.schedule_from_environment() ? "from NSIGHTKIT_CAPTURE"
              : env_only                         ? "NSIGHTKIT_CAPTURE unset or invalid"
              : window.off()                     ? "NSIGHTKIT_CAPTURE invalid"
                                                 : "from code");
  std::string expected;
  int expected_kernels = 0;
  for (int i = 0; i < steps; ++i) {
    if (window.phase_of(i) == nsk::CapturePhase::active) {
      expected += " " + std::to_string(i);
      ++expected_kernels;
    }
  }
  std::printf("capture_window: expect captured steps:%s\n",
              expected.empty() ? " none" : expected.c_str());
  std::printf("capture_window: expect profiled kernels: %d\n", expected_kernels);
  window.on_start([](nsk::CaptureEvent const& e) {
    std::printf("capture_window: capture opens at step number %lld (planned through %lld)\n",
                static_cast<long long>(e.first_step), static_cast<long long>(e.last_step));
  });
  window.on_stop([](nsk::CaptureEvent const& e) {
    std::printf("capture_window: capture closed after step number %lld\n",
                static_cast<long long>(e.last_step));
  });

  int* d = nullptr;
  NSIGHTKIT_CUDA_CHECK(cudaMalloc(&d, static_cast<std::size_t>(steps) * sizeof(int)));
  NSIGHTKIT_CUDA_CHECK(cudaMemset(d, 0, static_cast<std::size_t>(steps) * sizeof(int)));
  for (int i = 0; i < steps; ++i) {
    auto step = window.step();  // NVTX range "step i"; edges start/stop the capture
    step_kernel<<<i + 1, threads_per_block>>>(d, i);
    NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
  }
  NSIGHTKIT_CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<int> h(static_cast<std::size_t>(steps));
  NSIGHTKIT_CUDA_CHECK(cudaMemcpy(h.data(), d, h.size() * sizeof(int), cudaMemcpyDeviceToHost));
  NSIGHTKIT_CUDA_CHECK(cudaFree(d));
  int wrong = 0;
  for (int i = 0; i < steps; ++i) wrong += h[static_cast<std::size_t>(i)] == i + 1 ? 0 : 1;
  std::printf("capture_window: results %s\n", wrong == 0 ? "OK" : "WRONG");
  return wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);  // lines stay in order with ncu's own output
  bool env_only = false;
  int steps = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--env-only") == 0) {
      env_only = true;
    } else if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--env-only] [--steps N]\n", argv[0]);
      return 2;
    }
  }
  if (steps < 1 || steps > 100000) {
    std::fprintf(stderr, "capture_window: --steps must be 1..100000\n");
    return 2;
  }
  try {
    return run(env_only, steps);
  } catch (std::exception const& e) {  // CudaError (no device, ...), std::invalid_argument
    std::fprintf(stderr, "capture_window: %s\n", e.what());
    return 1;
  }
}
