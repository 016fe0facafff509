// Internal: the CUDA driver API, loaded at run time (dlopen of libcuda.so.1 / nvcuda.dll).
//
// Why: nsightkit's instrumentation (the capture window's profiler calls, the report's GPU events)
// must link with nothing but the C++ standard library, whatever compiler builds the program and
// whether or not the CUDA headers are visible, just as NVTX loads its tool at run time. The
// driver is the one CUDA library every process that runs GPU work has loaded already (the runtime,
// static or shared, sits on top of it), so calls made here act on the same contexts, streams and
// events as the program's own: a cudaStream_t is a CUstream, a cudaEvent_t a CUevent.
//
// No CUDA header is needed: the few types are declared here as the driver ABI defines them.
#pragma once

#include <nsightkit/config.hpp>

#include <cstdint>

#if defined(_WIN32)
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#else
#include <dlfcn.h>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::cuda_driver {

/// CUresult values nsightkit tests for (the driver ABI's numbers).
enum Status : int {
  success = 0,
  not_initialized = 3,
  deinitialized = 4,
  stub_library = 34,
  insufficient_driver = 35,
  no_device = 100,
  invalid_context = 201,
  not_ready = 600,
};

/// CU_STREAM_PER_THREAD: what stream 0 means in code built with `--default-stream per-thread`.
inline void* per_thread_stream() noexcept { return reinterpret_cast<void*>(std::uintptr_t{2}); }

/// The driver functions nsightkit calls; null members were not found (an old driver).
struct Api {
  int (*init)(unsigned flags) noexcept;
  int (*driver_get_version)(int* version) noexcept;
  int (*get_error_name)(int status, char const** name) noexcept;
  int (*get_error_string)(int status, char const** text) noexcept;
  int (*ctx_get_current)(void** ctx) noexcept;
  int (*ctx_set_current)(void* ctx) noexcept;
  int (*ctx_get_device)(int* device) noexcept;
  int (*ctx_synchronize)() noexcept;
  int (*ctx_push_current)(void* ctx) noexcept;
  int (*ctx_pop_current)(void** ctx) noexcept;
  int (*device_get)(int* device, int ordinal) noexcept;
  int (*device_get_count)(int* count) noexcept;
  int (*device_primary_ctx_retain)(void** ctx, int device) noexcept;
  int (*profiler_start)() noexcept;
  int (*profiler_stop)() noexcept;
  int (*event_create)(void** event, unsigned flags) noexcept;
  int (*event_record)(void* event, void* stream) noexcept;
  int (*event_query)(void* event) noexcept;
  int (*event_synchronize)(void* event) noexcept;
  int (*event_elapsed_time)(float* ms, void* start, void* end) noexcept;
  int (*stream_is_capturing)(void* stream, int* status) noexcept;
  int (*stream_create)(void** stream, unsigned flags) noexcept;
  /// Why the driver could not be used (no library, cuInit failed), or null when it can.
  char const* unavailable;
  /// What cuInit returned (0 when it was not reached: no library, no entry points).
  int init_status;
};

namespace load_detail {
inline void* open_library() noexcept {
#if defined(_WIN32)
  return reinterpret_cast<void*>(::LoadLibraryA("nvcuda.dll"));
#else
  // RTLD_NOLOAD first: a process that runs GPU work has the driver already.
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (h == nullptr) h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return h;
#endif
}

inline void* symbol(void* lib, char const* name) noexcept {
#if defined(_WIN32)
  return reinterpret_cast<void*>(::GetProcAddress(static_cast<HMODULE>(lib), name));
#else
  return ::dlsym(lib, name);
#endif
}

template <class F>
inline void bind(void* lib, F& out, char const* name, char const* fallback = nullptr) noexcept {
  void* p = symbol(lib, name);
  if (p == nullptr && fallback != nullptr) p = symbol(lib, fallback);
  // Function and object pointers have the same size on every platform dlsym exists on.
  static_assert(sizeof(F) == sizeof(void*), "function pointers must be pointer-sized");
  out = reinterpret_cast<F>(p);
}

inline Api load() noexcept {
  Api a{};
  void* lib = open_library();
  if (lib == nullptr) {
#if defined(_WIN32)
    a.unavailable = "the NVIDIA driver library nvcuda.dll could not be loaded";
#else
    a.unavailable = "the NVIDIA driver library libcuda.so.1 could not be loaded";
#endif
    return a;
  }
  bind(lib, a.init, "cuInit");
  bind(lib, a.driver_get_version, "cuDriverGetVersion");
  bind(lib, a.get_error_name, "cuGetErrorName");
  bind(lib, a.get_error_string, "cuGetErrorString");
  bind(lib, a.ctx_get_current, "cuCtxGetCurrent");
  bind(lib, a.ctx_set_current, "cuCtxSetCurrent");
  bind(lib, a.ctx_get_device, "cuCtxGetDevice");
  bind(lib, a.ctx_synchronize, "cuCtxSynchronize");
  bind(lib, a.ctx_push_current, "cuCtxPushCurrent_v2", "cuCtxPushCurrent");
  bind(lib, a.ctx_pop_current, "cuCtxPopCurrent_v2", "cuCtxPopCurrent");
  bind(lib, a.device_get, "cuDeviceGet");
  bind(lib, a.device_get_count, "cuDeviceGetCount");
  bind(lib, a.device_primary_ctx_retain, "cuDevicePrimaryCtxRetain");
  bind(lib, a.profiler_start, "cuProfilerStart");
  bind(lib, a.profiler_stop, "cuProfilerStop");
  bind(lib, a.event_create, "cuEventCreate");
  bind(lib, a.event_record, "cuEventRecord");
  bind(lib, a.event_query, "cuEventQuery");
  bind(lib, a.event_synchronize, "cuEventSynchronize");
  bind(lib, a.event_elapsed_time, "cuEventElapsedTime_v2", "cuEventElapsedTime");
  bind(lib, a.stream_is_capturing, "cuStreamIsCapturing");
  bind(lib, a.stream_create, "cuStreamCreate");
  if (a.init == nullptr || a.get_error_name == nullptr || a.ctx_get_current == nullptr) {
    a.unavailable = "the CUDA driver library lacks its basic entry points";
    return a;
  }
  // cuInit is idempotent and cheap once the runtime has called it.
  int const st = a.init(0);
  a.init_status = st;
  if (st == no_device) {
    a.unavailable = "no CUDA device is present";
  } else if (st == stub_library) {
    a.unavailable = "the CUDA driver found is the toolkit's stub library, not a real driver";
  } else if (st != success) {
    a.unavailable = "the CUDA driver could not be initialised";
  }
  return a;
}
}  // namespace load_detail

/// The driver, loaded once per process on first use (never unloaded).
inline Api const& api() noexcept {
  static Api const a = load_detail::load();
  return a;
}

/// "CUDA_ERROR_NOT_READY (600): device not ready" for a driver status.
template <class Out>
inline void describe(Out& out, int status) {
  Api const& a = api();
  char const* name = nullptr;
  char const* text = nullptr;
  if (a.get_error_name != nullptr) (void)a.get_error_name(status, &name);
  if (a.get_error_string != nullptr) (void)a.get_error_string(status, &text);
  out += name != nullptr ? name : "CUDA error";
  out += " (";
  char num[16];
  int n = 0;
  unsigned v = status < 0 ? 0u - static_cast<unsigned>(status) : static_cast<unsigned>(status);
  do {
    num[n++] = static_cast<char>('0' + v % 10u);
    v /= 10u;
  } while (v != 0u && n < 15);
  if (status < 0) out += '-';
  while (n > 0) out += num[--n];
  out += ')';
  if (text != nullptr) {
    out += ": ";
    out += text;
  }
}

/// Why the driver cannot be used, for a message: api().unavailable, followed by what cuInit
/// returned when it failed for another reason than "no device" or "stub library". Nothing is
/// appended when the driver is usable.
template <class Out>
inline void describe_unavailable(Out& out) {
  Api const& a = api();
  if (a.unavailable == nullptr) return;
  out += a.unavailable;
  if (a.init_status != success && a.init_status != no_device && a.init_status != stub_library) {
    out += "; cuInit() returned ";
    describe(out, a.init_status);
  }
}

/// ensure_context(), also telling which driver call failed ("cuCtxGetCurrent()", ...) through
/// `failed_call` (left untouched on success).
inline int ensure_context(char const*& failed_call) noexcept {
  Api const& a = api();
  if (a.unavailable != nullptr) {
    failed_call = "cuInit()";
    return no_device;
  }
  void* ctx = nullptr;
  int st = a.ctx_get_current(&ctx);
  if (st != success) {
    failed_call = "cuCtxGetCurrent()";
    return st;
  }
  if (ctx != nullptr) return success;
  if (a.device_get == nullptr || a.device_primary_ctx_retain == nullptr ||
      a.ctx_set_current == nullptr) {
    failed_call = "cuDevicePrimaryCtxRetain()";  // an old driver without primary contexts
    return invalid_context;
  }
  int dev = 0;
  if ((st = a.device_get(&dev, 0)) != success) {
    failed_call = "cuDeviceGet()";
    return st;
  }
  if ((st = a.device_primary_ctx_retain(&ctx, dev)) != success) {
    failed_call = "cuDevicePrimaryCtxRetain()";
    return st;
  }
  if ((st = a.ctx_set_current(ctx)) != success) failed_call = "cuCtxSetCurrent()";
  return st;
}

/// Makes sure the calling thread has a current context, as the CUDA runtime does on its first
/// call: the primary context of device 0 when none is current. Returns the driver status.
inline int ensure_context() noexcept {
  char const* ignored = nullptr;
  return ensure_context(ignored);
}

}  // namespace detail::cuda_driver
NSIGHTKIT_DETAIL_END_NAMESPACE
