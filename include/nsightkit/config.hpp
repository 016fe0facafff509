/**
 * @file config.hpp
 * @brief Version, compile-time switches and feature detection for nsightkit.
 *
 * Every knob follows one rule: the user's definition wins, else detect, else default.
 *
 * - `NSIGHTKIT_DISABLE` (or NVTX's own `NVTX_DISABLE`): every instrumentation API keeps its
 *   shape but does nothing. NVTX headers are then not included at all. It must be the same for
 *   every translation unit of a program; mixing is detected at link time by the ABI namespace
 *   (disabled and enabled entities live in different inline namespaces, so they never alias).
 * - `NSIGHTKIT_HAS_CUDA`: 1 when the CUDA runtime headers can be included (nvcc, or the toolkit's
 *   include directory on the path), else 0. Define it to 0 to build without any CUDA header.
 */
#pragma once

/// Major version of nsightkit.
#define NSIGHTKIT_VERSION_MAJOR 0
/// Minor version of nsightkit.
#define NSIGHTKIT_VERSION_MINOR 1
/// Patch version of nsightkit.
#define NSIGHTKIT_VERSION_PATCH 0
/// Version as one integer: major * 10000 + minor * 100 + patch.
#define NSIGHTKIT_VERSION                                                                          \
  (NSIGHTKIT_VERSION_MAJOR * 10000 + NSIGHTKIT_VERSION_MINOR * 100 + NSIGHTKIT_VERSION_PATCH)

#if __cplusplus < 201703L && !(defined(_MSVC_LANG) && _MSVC_LANG >= 201703L)
#error "nsightkit requires C++17 or later"
#endif

// NVTX's own switch is honoured: a program built with NVTX_DISABLE wants no instrumentation.
#if defined(NVTX_DISABLE) && !defined(NSIGHTKIT_DISABLE)
#define NSIGHTKIT_DISABLE
#endif

/// 1 when instrumentation is compiled in, 0 under `NSIGHTKIT_DISABLE`.
#if defined(NSIGHTKIT_DISABLE)
#define NSIGHTKIT_ENABLED 0
#else
#define NSIGHTKIT_ENABLED 1
#endif

#if !defined(NSIGHTKIT_HAS_CUDA)
#if defined(__CUDACC__)
#define NSIGHTKIT_HAS_CUDA 1
#elif defined(__has_include)
#if __has_include(<cuda_runtime_api.h>)
#define NSIGHTKIT_HAS_CUDA 1
#else
#define NSIGHTKIT_HAS_CUDA 0
#endif
#else
#define NSIGHTKIT_HAS_CUDA 0
#endif
#endif

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND)
#define NSIGHTKIT_DETAIL_HAS_EXCEPTIONS 1
#else
#define NSIGHTKIT_DETAIL_HAS_EXCEPTIONS 0
#endif

// The exception guard, written once ({fmt}'s FMT_TRY/FMT_CATCH): without exceptions the try block
// runs as a plain block and the handler is compiled out.
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
#define NSIGHTKIT_DETAIL_TRY try
#define NSIGHTKIT_DETAIL_CATCH(x) catch (x)
#else
#define NSIGHTKIT_DETAIL_TRY if (true)
#define NSIGHTKIT_DETAIL_CATCH(x) if (false)
#endif

// Throwing, written once ({fmt}'s FMT_THROW): without exceptions the error's what() goes to
// stderr and the program aborts (variadic: braced arguments hold commas). A handler that names
// its exception is compiled out by NSIGHTKIT_DETAIL_CATCH, so handlers catch by type or `...`.
#if NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
#define NSIGHTKIT_DETAIL_THROW(...) throw __VA_ARGS__
#define NSIGHTKIT_DETAIL_RETHROW() throw
#else
#include <cstdio>
#include <cstdlib>
#define NSIGHTKIT_DETAIL_THROW(...)                                                                \
  ::nsightkit::detail::fail_without_exceptions((__VA_ARGS__).what())
#define NSIGHTKIT_DETAIL_RETHROW() static_cast<void>(0)
#endif

// Process-wide state (sink registry, module registry, report) must exist once per process even
// when several shared libraries of the process embed nsightkit. Default visibility lets the
// dynamic linker unify the inline variables (GCC emits them as STB_GNU_UNIQUE), also when a
// library is built with -fvisibility=hidden.
#if defined(__GNUC__) || defined(__clang__)
#define NSIGHTKIT_DETAIL_VISIBLE __attribute__((visibility("default")))
#else
#define NSIGHTKIT_DETAIL_VISIBLE
#endif

// Keeps the slow path (a tool or consumer listens) out of line, so the inlined fast path of a range
// is a load and a branch with nothing materialised before it.
#if defined(__GNUC__) || defined(__clang__)
#define NSIGHTKIT_DETAIL_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define NSIGHTKIT_DETAIL_NOINLINE __declspec(noinline)
#else
#define NSIGHTKIT_DETAIL_NOINLINE
#endif

#define NSIGHTKIT_DETAIL_STR(x) #x
#define NSIGHTKIT_DETAIL_XSTR(x) NSIGHTKIT_DETAIL_STR(x)
#define NSIGHTKIT_DETAIL_CAT_(a, b) a##b
#define NSIGHTKIT_DETAIL_CAT(a, b) NSIGHTKIT_DETAIL_CAT_(a, b)
/// A name unique within a translation unit, for variables declared by macros.
#if defined(__COUNTER__)
#define NSIGHTKIT_DETAIL_UNIQUE(prefix) NSIGHTKIT_DETAIL_CAT(prefix, __COUNTER__)
#else
#define NSIGHTKIT_DETAIL_UNIQUE(prefix) NSIGHTKIT_DETAIL_CAT(prefix, __LINE__)
#endif

// Enabled and disabled builds put their entities in different inline namespaces, so a program
// that mixes the two modes gets two distinct sets of types instead of an ODR violation.
// The NVTX tool library (nsightkit profile) compiles the report in a namespace of its own, so it
// never shares a symbol with a copy of the report compiled into the program it is injected into.
#if NSIGHTKIT_ENABLED && defined(NSIGHTKIT_DETAIL_NVTX_TOOL)
#define NSIGHTKIT_DETAIL_ABI_NAMESPACE v0_nvtx_tool
#elif NSIGHTKIT_ENABLED
#define NSIGHTKIT_DETAIL_ABI_NAMESPACE v0
#else
#define NSIGHTKIT_DETAIL_ABI_NAMESPACE v0_disabled
#endif
#define NSIGHTKIT_DETAIL_BEGIN_NAMESPACE                                                           \
  namespace nsightkit {                                                                            \
  inline namespace NSIGHTKIT_DETAIL_ABI_NAMESPACE {
#define NSIGHTKIT_DETAIL_END_NAMESPACE                                                             \
  }                                                                                                \
  }

/**
 * @namespace nsightkit
 * @brief Everything public in nsightkit: ranges, module hooks, the capture window, the report,
 *        CUDA graphs, pinned memory, the prefetcher and the CUDA helpers.
 *
 * Users usually alias it: `namespace nsk = nsightkit;`. Enabled and disabled builds place the same
 * names in different inline namespaces (an ABI detail that never appears in user code).
 */
NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

/// True when instrumentation is compiled in (no `NSIGHTKIT_DISABLE`).
inline constexpr bool enabled = NSIGHTKIT_ENABLED != 0;

/// True when nsightkit was compiled with the CUDA runtime headers available.
inline constexpr bool has_cuda = NSIGHTKIT_HAS_CUDA != 0;

/// The version nsightkit's headers carry, as "major.minor.patch".
inline constexpr char const version_string[] =
    NSIGHTKIT_DETAIL_XSTR(NSIGHTKIT_VERSION_MAJOR) "." NSIGHTKIT_DETAIL_XSTR(
        NSIGHTKIT_VERSION_MINOR) "." NSIGHTKIT_DETAIL_XSTR(NSIGHTKIT_VERSION_PATCH);

#if !NSIGHTKIT_DETAIL_HAS_EXCEPTIONS
namespace detail {
/// NSIGHTKIT_DETAIL_THROW without exceptions: names the error, then aborts. Out of line, so each
/// throw site stays one call.
[[noreturn]] NSIGHTKIT_DETAIL_NOINLINE inline void fail_without_exceptions(
    char const* what) noexcept {
  std::fprintf(stderr, "nsightkit: %s (built without exceptions: aborting)\n",
               what == nullptr ? "error" : what);
  std::fflush(stderr);
  std::abort();
}
}  // namespace detail
#endif

NSIGHTKIT_DETAIL_END_NAMESPACE
