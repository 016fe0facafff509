// CudaError and NSIGHTKIT_CUDA_CHECK. Runs with or without a GPU: the checked call fails either way
// (no driver: cudaErrorInsufficientDriver; with a GPU: cudaErrorInvalidDevice).
#include <nsightkit/cuda_check.hpp>

#include <catch2/catch.hpp>

#include <string>

TEST_CASE("a failing call throws CudaError naming the call, file, line and CUDA's message") {
  int const line = __LINE__ + 2;
  try {
    NSIGHTKIT_CUDA_CHECK(cudaSetDevice(-1));
    FAIL("cudaSetDevice(-1) succeeded");
  } catch (nsightkit::CudaError const& e) {
    std::string const what = e.what();
    CHECK(e.code() != cudaSuccess);
    CHECK(e.call() == "cudaSetDevice(-1)");
    CHECK(e.line() == line);
    CHECK_THAT(e.file(), Catch::EndsWith("test_cuda_check.cpp"));
    CHECK_THAT(what, Catch::Contains("cudaSetDevice(-1)"));
    CHECK_THAT(what, Catch::Contains(cudaGetErrorName(e.code())));
    CHECK_THAT(what, Catch::Contains(cudaGetErrorString(e.code())));
    CHECK_THAT(what, Catch::Contains("test_cuda_check.cpp:" + std::to_string(line)));
  }
}

TEST_CASE("success does not throw, and the error is a std::runtime_error") {
  REQUIRE_NOTHROW(NSIGHTKIT_CUDA_CHECK(cudaSuccess));
  REQUIRE_THROWS_AS(NSIGHTKIT_CUDA_CHECK(cudaErrorMemoryAllocation), std::runtime_error);
}

TEST_CASE("the message is built from CUDA's own tables") {
  nsightkit::CudaError const e{cudaErrorMemoryAllocation, "cudaMalloc(&p, n)", "f.cu", 7};
  CHECK(std::string{e.what()} ==
        "CUDA error: cudaMalloc(&p, n) returned cudaErrorMemoryAllocation (2): out of memory at "
        "f.cu:7");
}

TEST_CASE("the no-throw twin returns the code and tolerates shutdown") {
  CHECK(NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaSuccess) == cudaSuccess);
  CHECK(NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaErrorCudartUnloading) == cudaErrorCudartUnloading);
  CHECK(NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaErrorInvalidValue) == cudaErrorInvalidValue);
}

TEST_CASE("a CUDA call without a usable driver is an error, not a crash") {
  int n = -1;
  cudaError_t const status = cudaGetDeviceCount(&n);
  if (status == cudaSuccess) {
    // A driver is present (the no-driver path runs on the CPU CI): the checked call succeeds too
    // and reports the same devices.
    int checked = -1;
    REQUIRE_NOTHROW(NSIGHTKIT_CUDA_CHECK(cudaGetDeviceCount(&checked)));
    CHECK(checked == n);
    return;
  }
  CHECK(n <= 0);
  try {
    NSIGHTKIT_CUDA_CHECK(cudaGetDeviceCount(&n));
    FAIL("cudaGetDeviceCount succeeded after failing");
  } catch (nsightkit::CudaError const& e) {
    CHECK(e.code() == status);
    CHECK_THAT(e.what(), Catch::Contains("cudaGetDeviceCount(&n)"));
  }
}
