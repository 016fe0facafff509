// main() for tests that need a CUDA device. Where none is usable it prints why and exits 77,
// which ctest reports as "skipped" (SKIP_RETURN_CODE), never as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

int main(int argc, char* argv[]) {
  int devices = 0;
  cudaError_t const status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no usable CUDA device (%s: %s)\n",
                status == cudaSuccess ? "cudaGetDeviceCount" : cudaGetErrorName(status),
                status == cudaSuccess ? "0 devices" : cudaGetErrorString(status));
    return 77;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
    std::printf("CUDA device 0: %s (sm_%d%d), %d device(s)\n", prop.name, prop.major, prop.minor,
                devices);
  }
  return Catch::Session().run(argc, argv);
}
