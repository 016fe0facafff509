// How long one kernel takes by each of NVIDIA's measures: CUPTI's concurrent-kernel activity
// records (what nsightkit's "cupti" source reads), CUPTI's serialised-kernel records, and Nsight
// Compute's gpu__time_duration (run this program under ncu with "none"). The same sequence of
// kernels (an empty kernel, vector adds of 2^10..2^25 floats, spins of 2..100 us) is launched
// twice; the second pass is printed as "index,kernel,duration ns" (no duration under "none").
//
//   kernel_durations none|concurrent|serial [sync]
//
// "sync" synchronises after every launch (each kernel alone on the GPU, as under ncu).
// Built and run by kernel_durations.sh; compared by kernel_durations.py.
#include <cuda_runtime.h>
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

__global__ void vadd(float const* a, float const* b, float* c, int n) {
  int const i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) c[i] = a[i] + b[i] * 1.0001f;
}

__global__ void spin(long long cycles) {
  long long const t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

__global__ void empty() {}

std::vector<unsigned long long> durations;

void check(cudaError_t e, char const* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

void check(CUptiResult r, char const* what) {
  if (r != CUPTI_SUCCESS) {
    char const* text = nullptr;
    cuptiGetResultString(r, &text);
    std::fprintf(stderr, "%s: %s\n", what, text != nullptr ? text : "?");
    std::exit(1);
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = std::size_t{8} << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      auto const* k = reinterpret_cast<CUpti_ActivityKernel10 const*>(r);
      unsigned long long const start = k->start;
      unsigned long long const end = k->end;
      durations.push_back(end - start);
    }
  }
  std::free(buffer);
}

}  // namespace

int main(int argc, char** argv) {
  std::string const mode = argc > 1 ? argv[1] : "";
  bool const sync_each = argc > 2 && std::strcmp(argv[2], "sync") == 0;
  if (mode != "none" && mode != "concurrent" && mode != "serial") {
    std::fprintf(stderr, "usage: %s none|concurrent|serial [sync]\n", argv[0]);
    return 2;
  }
  if (mode != "none") {
    check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "register");
    check(cuptiActivityEnable(mode == "serial" ? CUPTI_ACTIVITY_KIND_KERNEL
                                               : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
          "cuptiActivityEnable");
  }
  int const n_max = 1 << 25;
  float* a = nullptr;
  float* b = nullptr;
  float* c = nullptr;
  check(cudaMalloc(&a, n_max * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&b, n_max * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&c, n_max * sizeof(float)), "cudaMalloc");
  check(cudaMemset(a, 0, n_max * sizeof(float)), "cudaMemset");
  check(cudaMemset(b, 0, n_max * sizeof(float)), "cudaMemset");
  int khz = 0;
  check(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0), "clock rate");
  std::vector<std::string> labels;
  auto pass = [&](bool keep) {
    int const sizes[] = {1 << 10, 1 << 16, 1 << 20, 1 << 22, 1 << 24, 1 << 25};
    int const spin_us[] = {2, 5, 20, 100};
    for (int rep = 0; rep < 20; ++rep) {
      empty<<<1, 32>>>();
      if (keep) labels.emplace_back("empty");
      if (sync_each) check(cudaDeviceSynchronize(), "sync");
      for (int n : sizes) {
        vadd<<<(n + 255) / 256, 256>>>(a, b, c, n);
        if (keep) labels.push_back("vadd " + std::to_string(n));
        if (sync_each) check(cudaDeviceSynchronize(), "sync");
      }
      for (int us : spin_us) {
        spin<<<132, 128>>>(static_cast<long long>(us) * khz / 1000);
        if (keep) labels.push_back("spin " + std::to_string(us) + " us");
        if (sync_each) check(cudaDeviceSynchronize(), "sync");
      }
    }
    check(cudaGetLastError(), "launch");
    check(cudaDeviceSynchronize(), "sync");
  };
  pass(false);
  if (mode != "none") {
    check(cuptiActivityFlushAll(1), "flush");
    durations.clear();
  }
  pass(true);
  if (mode != "none") check(cuptiActivityFlushAll(1), "flush");
  if (mode != "none" && durations.size() != labels.size()) {
    std::fprintf(stderr, "%zu kernel records for %zu kernels\n", durations.size(), labels.size());
    return 1;
  }
  std::printf("# mode %s%s, %zu kernels\n", mode.c_str(), sync_each ? " sync" : "", labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (mode == "none") {
      std::printf("%zu,%s,\n", i, labels[i].c_str());
    } else {
      std::printf("%zu,%s,%llu\n", i, labels[i].c_str(), durations[i]);
    }
  }
  return 0;
}
