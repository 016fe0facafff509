// A consumer of nsightkit's CUDA utilities (PinnedMemoryPool / PinnedAllocator, StreamPrefetcher,
// StreamView, NSIGHTKIT_CUDA_CHECK, CurrentStream / GpuRange): CUDA runtime code by nature, so
// this program links the CUDA runtime (CMake: CUDA::cudart; pkg-config: the toolkit's -lcudart),
// compiled by a plain C++ compiler. With a device it moves data through them and checks it;
// without one (no driver, no GPU) every utility must fail soft: a nsightkit::CudaError naming
// the failed call and the CUDA error, caught here and checked.
// Exit code 0 on success; every failed check is printed.
#include <nsightkit/cuda_check.hpp>
#include <nsightkit/pinned.hpp>
#include <nsightkit/prefetch.hpp>
#include <nsightkit/report.hpp>
#include <nsightkit/stream.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace nsk = nsightkit;

namespace {

int failures = 0;

void check(bool ok, std::string const& what) {
  if (!ok) {
    std::fprintf(stderr, "cuda consumer: FAILED: %s\n", what.c_str());
    ++failures;
  }
}

bool contains(std::string const& text, std::string const& part) {
  return text.find(part) != std::string::npos;
}

/// Runs `f`, which must throw a CudaError whose call contains `call`; checks its message.
void expect_cuda_error(char const* what, std::string const& call, std::function<void()> const& f) {
  try {
    f();
    check(false, std::string{what} + ": no CudaError without a device");
  } catch (nsk::CudaError const& e) {
    std::string const message = e.what();
    char const* name = cudaGetErrorName(e.code());
    check(e.code() != cudaSuccess, std::string{what} + ": an error code");
    check(contains(e.call(), call), std::string{what} + ": the failed call is named: " + e.call());
    check(name != nullptr && contains(message, name) && contains(message, "CUDA error: "),
          std::string{what} + ": the message names the CUDA error: " + message);
    std::printf("  %s failed soft: %s\n", what, message.c_str());
  } catch (std::exception const& e) {
    check(false, std::string{what} + ": not a CudaError: " + e.what());
  }
}

/// Device memory for one batch (a prefetcher slot).
struct DeviceFloats {
  float* data{nullptr};
  std::size_t n{0};
  explicit DeviceFloats(std::size_t count) : n{count} {
    void* p = nullptr;
    NSIGHTKIT_CUDA_CHECK(cudaMalloc(&p, n * sizeof(float)));
    data = static_cast<float*>(p);
  }
  DeviceFloats(DeviceFloats&& o) noexcept : data{o.data}, n{o.n} { o.data = nullptr; }
  DeviceFloats& operator=(DeviceFloats&&) = delete;
  DeviceFloats(DeviceFloats const&) = delete;
  DeviceFloats& operator=(DeviceFloats const&) = delete;
  ~DeviceFloats() { NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaFree(data)); }
};

using Prefetcher = nsk::StreamPrefetcher<std::vector<float>, DeviceFloats>;

Prefetcher make_prefetcher(std::size_t batches, std::size_t n, nsk::StreamView compute) {
  auto next = std::make_shared<std::size_t>(0);
  return Prefetcher{[next, batches, n]() -> std::optional<std::vector<float>> {
                      if (*next == batches) return std::nullopt;
                      return std::vector<float>(n, static_cast<float>((*next)++));
                    },
                    [](std::vector<float>& h, DeviceFloats& d, nsk::PrefetchCopier& copy) {
                      copy.to_device(d.data, h.data(), h.size() * sizeof(float));
                    },
                    [n](std::size_t) { return DeviceFloats{n}; }, compute};
}

void without_device(cudaError_t status) {
  std::printf("cuda consumer: no usable device (%s): checking that every utility fails soft\n",
              cudaGetErrorName(status));
  int devices = 0;
  expect_cuda_error("NSIGHTKIT_CUDA_CHECK", "cudaGetDeviceCount(&devices)",
                    [&] { NSIGHTKIT_CUDA_CHECK(cudaGetDeviceCount(&devices)); });
  nsk::PinnedMemoryPool pool;  // makes no CUDA call
  expect_cuda_error("PinnedMemoryPool::allocate", "cudaHostAlloc",
                    [&] { (void)pool.allocate(1 << 20); });
  expect_cuda_error("PinnedAllocator", "cudaHostAlloc", [&] {
    std::vector<float, nsk::PinnedAllocator<float>> v{nsk::PinnedAllocator<float>{pool}};
    v.resize(256);
  });
  expect_cuda_error("StreamPrefetcher", "cuda",
                    [&] { auto p = make_prefetcher(3, 16, nsk::StreamView::per_thread()); });
  // CurrentStream / GpuRange: GPU timing stops (one message on stderr), CPU times go on.
  nsk::ReportOptions o;
  o.table = "";
  o.at_exit = false;
  check(nsk::Report::enable(o), "Report::enable");
  {
    nsk::GpuRange r{nsk::StreamView::per_thread(), "gpu step"};
    nsk::CurrentStream on{nsk::StreamView::default_stream()};
    nsk::ScopedRange inner{"inner"};
  }
  nsk::ReportSnapshot const snap = nsk::Report::snapshot();
  nsk::PathStats const* step = snap.find("gpu step");
  nsk::PathStats const* inner = snap.find("gpu step/inner");
  check(step != nullptr && step->cpu.count == 1 && step->gpu.count == 0,
        "GpuRange without a device: CPU time, no GPU time");
  check(inner != nullptr && inner->cpu.count == 1, "CurrentStream without a device: CPU time");
  check(!snap.gpu.error.empty(), "the report says why GPU timing stopped");
  std::printf("  the report's GPU timing stopped: %s\n", snap.gpu.error.c_str());
  nsk::Report::disable();
}

void with_device() {
  std::printf("cuda consumer: a device is present: moving data through the utilities\n");
  cudaStream_t compute_handle{};
  NSIGHTKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&compute_handle, cudaStreamNonBlocking));
  nsk::StreamView const compute{compute_handle};
  check(compute.value() == compute_handle, "StreamView keeps the handle");

  nsk::PinnedMemoryPool pool;
  std::vector<float, nsk::PinnedAllocator<float>> pinned(256, 1.5f,
                                                         nsk::PinnedAllocator<float>{pool});
  check(pool.stats().bytes_in_use >= 256 * sizeof(float), "the vector lives in the pool");

  nsk::ReportOptions o;
  o.table = "";
  o.at_exit = false;
  check(nsk::Report::enable(o), "Report::enable");
  std::size_t const n = 1024;
  std::vector<float> back(n);
  std::size_t seen = 0;
  {
    auto prefetcher = make_prefetcher(4, n, compute);
    for (auto& batch : prefetcher) {
      nsk::GpuRange r{compute, "consume {}", batch.index()};
      NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(back.data(), batch.device().data, n * sizeof(float),
                                           cudaMemcpyDeviceToHost, compute.value()));
      NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(compute.value()));
      check(back.front() == static_cast<float>(batch.index()) &&
                back.back() == static_cast<float>(batch.index()),
            "batch " + std::to_string(batch.index()) + " arrived on the device");
      ++seen;
    }
  }
  check(seen == 4, "4 batches prefetched");
  nsk::ReportSnapshot const snap = nsk::Report::snapshot();
  nsk::PathStats const* first = snap.find("consume 0");
  check(first != nullptr && first->cpu.count == 1 && first->gpu.count == 1,
        "GpuRange on a device: CPU and GPU time");
  check(snap.gpu.error.empty(), "GPU timing without error: " + snap.gpu.error);
  nsk::Report::disable();
  NSIGHTKIT_CUDA_CHECK(cudaStreamDestroy(compute_handle));
}

}  // namespace

int main() {
  int devices = 0;
  cudaError_t const status = cudaGetDeviceCount(&devices);
  (void)cudaGetLastError();
  check(nsk::StreamView::default_stream().value() == cudaStream_t{},
        "StreamView::default_stream() is handle 0");
  try {
    if (status == cudaSuccess && devices > 0) {
      with_device();
    } else {
      without_device(status == cudaSuccess ? cudaErrorNoDevice : status);
    }
  } catch (std::exception const& e) {
    check(false, std::string{"unexpected exception: "} + e.what());
  }
  if (failures != 0) {
    std::fprintf(stderr, "cuda consumer: %d check(s) failed\n", failures);
    return 1;
  }
  std::printf("cuda consumer ok: nsightkit %s, CUDA utilities %s\n", nsk::version_string,
              status == cudaSuccess && devices > 0 ? "used on a device" : "failed soft");
  return 0;
}
