// Internal: page-locked memory and events from the CUDA runtime, for PinnedMemoryResource and
// PinnedMemoryPool (the Backend of detail::pinned::PoolCore, in detail/pinned/cuda_impl.hpp:
// included here header-only, by src/nsightkit_cuda.cpp in the compiled mode).
//
// Error policy: out of page-locked memory (cudaErrorMemoryAllocation) is std::bad_alloc; every
// other failure is nsightkit::CudaError naming the call (no driver: cudaErrorInsufficientDriver,
// no device: cudaErrorNoDevice) — thrown at first use, since constructing a pool or resource
// makes no CUDA call. Calls that cannot throw (frees, event records) report on stderr.
#pragma once

#include <nsightkit/config.hpp>

#if !NSIGHTKIT_HAS_CUDA
#error "nsightkit's pinned memory needs the CUDA runtime headers (cuda_runtime_api.h)"
#endif

#include <nsightkit/cuda_check.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/pinned/size_class.hpp>
#include <nsightkit/detail/pinned/status.hpp>
#include <nsightkit/stream.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::pinned {

/// The alignment every page-locked block is guaranteed to have. CUDA documents no alignment for
/// cudaHostAlloc; measured on an H100 host (driver 580), blocks below about 1 MiB come back only
/// 512-byte aligned (the driver sub-allocates), so nsightkit promises what cudaMalloc promises:
/// 256 bytes, and checks it.
inline constexpr std::size_t max_alignment = 256;

/// What nsightkit's std::pmr resources return for zero bytes: a non-null, suitably aligned address
/// that owns no memory. (libstdc++ declares memory_resource::allocate `returns_nonnull`, so null
/// is not an option there.) Deallocating it with zero bytes does nothing.
struct alignas(max_alignment) ZeroSizeBlock {
  char unused;  ///< never read or written
};

/// The one zero-size block of the process (default visibility: one per process).
NSIGHTKIT_DETAIL_VISIBLE inline ZeroSizeBlock zero_size_block{};

/// The address returned for zero-byte requests through std::pmr.
inline void* zero_size_pointer() noexcept { return &zero_size_block; }

/// Throws std::invalid_argument unless `alignment` is a power of two no larger than a page.
inline void check_alignment(std::size_t alignment, char const* who) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    NSIGHTKIT_DETAIL_THROW(std::invalid_argument{
        std::string{who} + ": alignment " + std::to_string(alignment) + " is not a power of two"});
  }
  if (alignment > max_alignment) {
    NSIGHTKIT_DETAIL_THROW(std::invalid_argument{
        std::string{who} + ": alignment " + std::to_string(alignment) + " exceeds the " +
        std::to_string(max_alignment) + " bytes page-locked memory is aligned to"});
  }
}

/// cudaHostAlloc: std::bad_alloc when out of page-locked memory, CudaError for other failures.
inline void* host_alloc(std::size_t bytes, unsigned int flags) {
  void* p = nullptr;
  cudaError_t const e = cudaHostAlloc(&p, bytes, flags);
  if (e == cudaSuccess) {
    // nsightkit promises max_alignment; CUDA does not document it, so check every block.
    if (reinterpret_cast<std::uintptr_t>(p) % max_alignment != 0) {
      (void)cudaFreeHost(p);
      NSIGHTKIT_DETAIL_THROW(std::runtime_error{
          "nsightkit: cudaHostAlloc(" + std::to_string(bytes) +
          ") returned memory aligned to less than " + std::to_string(max_alignment) + " bytes"});
    }
    return p;
  }
  (void)cudaGetLastError();
  if (e == cudaErrorMemoryAllocation) NSIGHTKIT_DETAIL_THROW(std::bad_alloc{});
  std::string const call = "cudaHostAlloc(&p, " + std::to_string(bytes) + ", " +
                           std::to_string(flags) + ") for nsightkit's pinned memory";
  NSIGHTKIT_DETAIL_THROW(CudaError{e, call.c_str(), __FILE__, __LINE__});
}

/// cudaFreeHost, reporting (not throwing) a failure.
inline void free_host(void* p) noexcept { (void)NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaFreeHost(p)); }

/// The CUDA backend of PoolCore (detail/pinned/cuda_impl.hpp): only the pool's members use it,
/// and in the compiled mode they are libnsightkit's (src/nsightkit_cuda.cpp).
struct CudaBackend;

/// The NVTX range names of page-locked allocations and frees (MemoryRange).
inline constexpr char const* host_alloc_label = "cudaHostAlloc";
inline constexpr char const* free_host_label = "cudaFreeHost";

/// cudaHostAlloc inside an NVTX range ("cudaHostAlloc 1 MiB", payload = bytes): memory that
/// bypasses the pool (PinnedMemoryResource, oversized PinnedBlocks).
inline void* direct_allocate(std::size_t bytes, unsigned int flags) {
  return in_memory_range(host_alloc_label, bytes, [&] { return host_alloc(bytes, flags); });
}

/// cudaFreeHost inside an NVTX range; failures are reported on stderr.
inline void direct_free(void* p, std::size_t bytes) noexcept {
  in_memory_range(free_host_label, bytes, [&] { free_host(p); });
}

}  // namespace detail::pinned
NSIGHTKIT_DETAIL_END_NAMESPACE

#if !NSIGHTKIT_DETAIL_COMPILED
#include <nsightkit/detail/pinned/cuda_impl.hpp>
#endif
