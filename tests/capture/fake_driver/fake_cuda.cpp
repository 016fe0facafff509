// A fake CUDA driver for nsightkit's tests, built as a shared library named libcuda.so.1 in a
// directory of its own. A test run with LD_LIBRARY_PATH pointing there makes nsightkit's driver
// loader (detail/cuda_driver.hpp) find it instead of a real driver, so the profiler backend's
// calls can be checked on a machine without a GPU.
//
// It exports the driver entry points nsightkit calls, with the behaviour that matters here: every
// call is recorded by name, in order; cuInit must come first (else CUDA_ERROR_NOT_INITIALIZED);
// contexts are current per thread and start out absent; cuCtxSynchronize and the profiler calls
// need a current context (else CUDA_ERROR_INVALID_CONTEXT).
//
// Told what to do by the environment variable NSK_FAKE_CUDA (read when the library is loaded),
// a comma-separated list of:
//   no_device             cuInit returns CUDA_ERROR_NO_DEVICE (100)
//   init=<status>         cuInit returns <status>
//   fail=<call>:<status>  <call> (e.g. cuProfilerStart) returns <status> instead of working
// and, from a test in the same process, by the nsk_fake_cuda_* functions below (found with dlsym:
// the test does not link this library).
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#define NSK_FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr int ok = 0;
constexpr int invalid_value = 1;
constexpr int not_initialized = 3;
constexpr int no_device = 100;
constexpr int invalid_device = 101;
constexpr int invalid_context = 201;

struct ErrorText {
  int status;
  char const* name;
  char const* text;
};

// The driver's names and descriptions for the statuses the tests use.
constexpr ErrorText error_texts[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

ErrorText const* find_error(int status) {
  for (auto const& e : error_texts) {
    if (e.status == status) return &e;
  }
  return nullptr;
}

struct State {
  std::mutex mutex;
  std::vector<std::string> calls;
  std::map<std::string, int> failures;  // call name -> status it returns
  int init_status{ok};
  bool initialized{false};
  bool profiler_running{false};
  int primary_retains{0};
};

void configure(State& s, char const* spec) {
  std::string const all = spec;
  std::size_t pos = 0;
  while (pos <= all.size()) {
    std::size_t const comma = all.find(',', pos);
    std::string const item =
        all.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item == "no_device") {
      s.init_status = no_device;
    } else if (item.rfind("init=", 0) == 0) {
      s.init_status = std::atoi(item.c_str() + 5);
    } else if (item.rfind("fail=", 0) == 0) {
      std::size_t const colon = item.find(':');
      if (colon != std::string::npos) {
        s.failures[item.substr(5, colon - 5)] = std::atoi(item.c_str() + colon + 1);
      }
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
}

// Leaked on purpose: calls may come from atexit handlers and static destructors.
State& state() {
  static State* const s = [] {
    auto* st = new State;
    if (char const* spec = std::getenv("NSK_FAKE_CUDA")) configure(*st, spec);
    return st;
  }();
  return *s;
}

// The primary context of device 0 is this object's address; the current context is per thread.
int primary_context_object = 0;
thread_local void* current_context = nullptr;

void* primary_context() { return &primary_context_object; }

// Records the call; returns the status a configured failure gives it, or CUDA_ERROR_NOT_INITIALIZED
// before cuInit succeeded, or CUDA_SUCCESS.
int record(char const* call, bool needs_init = true) {
  State& s = state();
  std::lock_guard<std::mutex> lock{s.mutex};
  s.calls.emplace_back(call);
  auto const f = s.failures.find(call);
  if (f != s.failures.end()) return f->second;
  if (needs_init && !s.initialized) return not_initialized;
  return ok;
}

}  // namespace

// ---- driver entry points (the driver ABI: CUresult is an int, handles are pointers) ----

NSK_FAKE_EXPORT int cuInit(unsigned flags) {
  int const st = record("cuInit", false);
  if (st != ok) return st;
  if (flags != 0) return invalid_value;
  State& s = state();
  std::lock_guard<std::mutex> lock{s.mutex};
  if (s.init_status != ok) return s.init_status;
  s.initialized = true;
  return ok;
}

NSK_FAKE_EXPORT int cuDriverGetVersion(int* version) {
  int const st = record("cuDriverGetVersion", false);
  if (st != ok) return st;
  if (version == nullptr) return invalid_value;
  *version = 13000;
  return ok;
}

NSK_FAKE_EXPORT int cuGetErrorName(int status, char const** name) {
  int const st = record("cuGetErrorName", false);
  if (st != ok) return st;
  if (name == nullptr) return invalid_value;
  ErrorText const* e = find_error(status);
  *name = e != nullptr ? e->name : nullptr;
  return e != nullptr ? ok : invalid_value;
}

NSK_FAKE_EXPORT int cuGetErrorString(int status, char const** text) {
  int const st = record("cuGetErrorString", false);
  if (st != ok) return st;
  if (text == nullptr) return invalid_value;
  ErrorText const* e = find_error(status);
  *text = e != nullptr ? e->text : nullptr;
  return e != nullptr ? ok : invalid_value;
}

NSK_FAKE_EXPORT int cuCtxGetCurrent(void** ctx) {
  int const st = record("cuCtxGetCurrent");
  if (st != ok) return st;
  if (ctx == nullptr) return invalid_value;
  *ctx = current_context;
  return ok;
}

NSK_FAKE_EXPORT int cuCtxSetCurrent(void* ctx) {
  int const st = record("cuCtxSetCurrent");
  if (st != ok) return st;
  if (ctx != nullptr && ctx != primary_context()) return invalid_context;
  current_context = ctx;
  return ok;
}

NSK_FAKE_EXPORT int cuCtxGetDevice(int* device) {
  int const st = record("cuCtxGetDevice");
  if (st != ok) return st;
  if (device == nullptr) return invalid_value;
  if (current_context == nullptr) return invalid_context;
  *device = 0;
  return ok;
}

NSK_FAKE_EXPORT int cuCtxSynchronize() {
  int const st = record("cuCtxSynchronize");
  if (st != ok) return st;
  return current_context != nullptr ? ok : invalid_context;
}

NSK_FAKE_EXPORT int cuDeviceGet(int* device, int ordinal) {
  int const st = record("cuDeviceGet");
  if (st != ok) return st;
  if (device == nullptr) return invalid_value;
  if (ordinal != 0) return invalid_device;
  *device = 0;
  return ok;
}

NSK_FAKE_EXPORT int cuDeviceGetCount(int* count) {
  int const st = record("cuDeviceGetCount");
  if (st != ok) return st;
  if (count == nullptr) return invalid_value;
  *count = 1;
  return ok;
}

NSK_FAKE_EXPORT int cuDevicePrimaryCtxRetain(void** ctx, int device) {
  int const st = record("cuDevicePrimaryCtxRetain");
  if (st != ok) return st;
  if (ctx == nullptr) return invalid_value;
  if (device != 0) return invalid_device;
  State& s = state();
  std::lock_guard<std::mutex> lock{s.mutex};
  ++s.primary_retains;
  *ctx = primary_context();
  return ok;
}

NSK_FAKE_EXPORT int cuProfilerStart() {
  int const st = record("cuProfilerStart");
  if (st != ok) return st;
  if (current_context == nullptr) return invalid_context;
  State& s = state();
  std::lock_guard<std::mutex> lock{s.mutex};
  s.profiler_running = true;
  return ok;
}

NSK_FAKE_EXPORT int cuProfilerStop() {
  int const st = record("cuProfilerStop");
  if (st != ok) return st;
  if (current_context == nullptr) return invalid_context;
  State& s = state();
  std::lock_guard<std::mutex> lock{s.mutex};
  s.profiler_running = false;
  return ok;
}

// ---- control, for tests in the same process ----

/// Forgets the calls and the failures, stops the profiler, and makes the calling thread's
/// context absent again (as in a thread that never used CUDA). cuInit's outcome stays.
NSK_FAKE_EXPORT void nsk_fake_cuda_reset() {
  State& s = state();
  std::lock_guard<std::mutex> lock{s.mutex};
  s.calls.clear();
  s.failures.clear();
  s.profiler_running = false;
  s.primary_retains = 0;
  current_context = nullptr;
}

/// From now on `call` returns `status` (0: works again).
NSK_FAKE_EXPORT void nsk_fake_cuda_fail(char const* call, int status) {
  State& s = state();
  std::lock_guard<std::mutex> lock{s.mutex};
  if (status == ok) {
    s.failures.erase(call);
  } else {
    s.failures[call] = status;
  }
}

/// Adds a line of the test's own to the log (e.g. "step 3"), to show where calls happen.
NSK_FAKE_EXPORT void nsk_fake_cuda_note(char const* text) {
  State& s = state();
  std::lock_guard<std::mutex> lock{s.mutex};
  s.calls.emplace_back(text);
}

/// The log, one call per line, into `out` (NUL-terminated, cut to `size`); returns its length.
NSK_FAKE_EXPORT std::size_t nsk_fake_cuda_log(char* out, std::size_t size) {
  State& s = state();
  std::lock_guard<std::mutex> lock{s.mutex};
  std::string all;
  for (auto const& c : s.calls) {
    all += c;
    all += '\n';
  }
  if (out != nullptr && size > 0) {
    std::size_t const n = all.size() < size - 1 ? all.size() : size - 1;
    std::memcpy(out, all.data(), n);
    out[n] = '\0';
  }
  return all.size();
}

/// 1 while the profiler is started (between a successful cuProfilerStart and cuProfilerStop).
NSK_FAKE_EXPORT int nsk_fake_cuda_profiler_running() {
  State& s = state();
  std::lock_guard<std::mutex> lock{s.mutex};
  return s.profiler_running ? 1 : 0;
}

/// How many times cuDevicePrimaryCtxRetain succeeded since the last reset.
NSK_FAKE_EXPORT int nsk_fake_cuda_primary_retains() {
  State& s = state();
  std::lock_guard<std::mutex> lock{s.mutex};
  return s.primary_retains;
}

/// Makes the primary context current on the calling thread without logging a call: the state a
/// program leaves after its first CUDA runtime call.
NSK_FAKE_EXPORT void nsk_fake_cuda_make_context_current() { current_context = primary_context(); }

/// 1 when the calling thread has a current context.
NSK_FAKE_EXPORT int nsk_fake_cuda_has_current_context() {
  return current_context != nullptr ? 1 : 0;
}
