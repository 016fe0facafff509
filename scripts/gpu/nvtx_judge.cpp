// The judge of `nsightkit profile` on a GPU machine: a minimal NVTX tool of its own, independent of
// nsightkit, with CUPTI. Loaded with NVTX_INJECTION64_PATH=libnvtx_judge.so into another run of
// the same deterministic program, it keeps each thread's stack of open push/pop ranges (any
// domain; "domain@name" outside the default one), notes in CUPTI's runtime and driver API callbacks
// which stack each call (a launch among them) was made under (by correlation id; libraries such as
// cuDNN launch through the driver API), and takes CUPTI's own
// kernel records. At exit it writes one line per kernel to NSIGHTKIT_JUDGE_OUT:
//   <correlation>,<start ns>,<end ns>,<path of the ranges open at launch, '/'-joined; empty outside>
// scripts/gpu/compare_nvtx_judge.py sums them per path.
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct Kernel {
  std::uint64_t start, end;
};

std::mutex mutex;
std::unordered_map<std::uint32_t, std::string>* launched = nullptr;  // correlation -> path
std::unordered_map<std::uint32_t, Kernel>* kernels = nullptr;        // correlation -> kernel
std::uint64_t dropped = 0;

struct Domain {
  std::string name;
};

std::vector<std::string>& stack() {
  thread_local std::vector<std::string> s;
  return s;
}

std::string message(nvtxEventAttributes_t const* a) {
  if (a == nullptr) return {};
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii != nullptr)
    return a->message.ascii;
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED && a->message.registered != nullptr)
    return *reinterpret_cast<std::string const*>(a->message.registered);
  return "?";
}

int domain_push(nvtxDomainHandle_t d, nvtxEventAttributes_t const* a) {
  std::string name = message(a);
  if (d != nullptr) name = reinterpret_cast<Domain const*>(d)->name + "@" + name;
  stack().push_back(std::move(name));
  return 0;
}
int domain_pop(nvtxDomainHandle_t) {
  if (!stack().empty()) stack().pop_back();
  return 0;
}
int push_a(char const* m) {
  stack().emplace_back(m == nullptr ? "" : m);
  return 0;
}
int push_ex(nvtxEventAttributes_t const* a) { return domain_push(nullptr, a); }
int pop() { return domain_pop(nullptr); }
nvtxDomainHandle_t domain_create(char const* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(new Domain{name == nullptr ? "" : name});
}
nvtxStringHandle_t register_string(nvtxDomainHandle_t, char const* s) {
  return reinterpret_cast<nvtxStringHandle_t>(new std::string{s == nullptr ? "" : s});
}

void CUPTIAPI on_launch(void*, CUpti_CallbackDomain, CUpti_CallbackId, void const* data) {
  auto const* d = static_cast<CUpti_CallbackData const*>(data);
  if (d->callbackSite != CUPTI_API_ENTER) return;
  std::string path;
  for (auto const& s : stack()) path += (path.empty() ? "" : "/") + s;
  std::lock_guard<std::mutex> lock{mutex};
  (*launched)[d->correlationId] = std::move(path);
}

void CUPTIAPI request(std::uint8_t** buffer, std::size_t* size, std::size_t* max) {
  constexpr std::size_t bytes = std::size_t{16} << 20;
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, bytes));
  *size = *buffer != nullptr ? bytes : 0;
  *max = 0;
}

void CUPTIAPI complete(CUcontext ctx, std::uint32_t stream, std::uint8_t* buffer, std::size_t,
                       std::size_t valid) {
  CUpti_Activity* r = nullptr;
  std::lock_guard<std::mutex> lock{mutex};
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    auto const* k = reinterpret_cast<CUpti_ActivityKernel10 const*>(r);
    (*kernels)[k->correlationId] = Kernel{k->start, k->end};
  }
  std::size_t n = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &n) == CUPTI_SUCCESS) dropped += n;
  std::free(buffer);
}

void finish() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  char const* path = std::getenv("NSIGHTKIT_JUDGE_OUT");
  std::FILE* f = std::fopen(path != nullptr ? path : "judge.csv", "w");
  if (f == nullptr) {
    std::perror("nvtx_judge: cannot write its output");
    return;
  }
  std::lock_guard<std::mutex> lock{mutex};
  std::size_t unmatched = 0;
  for (auto const& [corr, k] : *kernels) {
    auto const it = launched->find(corr);
    if (it == launched->end()) {
      ++unmatched;
      continue;
    }
    std::fprintf(f, "%u,%llu,%llu,%s\n", corr, static_cast<unsigned long long>(k.start),
                 static_cast<unsigned long long>(k.end), it->second.c_str());
  }
  std::fclose(f);
  std::fprintf(stderr, "nvtx_judge: %zu kernels, %zu without a launch seen, %llu records dropped\n",
               kernels->size(), unmatched, static_cast<unsigned long long>(dropped));
}

template <class Fn>
void install(NvtxFunctionTable t, unsigned int n, unsigned int id, Fn fn) {
  if (t != nullptr && id < n && t[id] != nullptr)
    *t[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

bool start_cupti() {
  launched = new std::unordered_map<std::uint32_t, std::string>{};
  kernels = new std::unordered_map<std::uint32_t, Kernel>{};
  CUpti_SubscriberHandle sub{};
  if (cuptiSubscribe(&sub, on_launch, nullptr) != CUPTI_SUCCESS) return false;
  // Every runtime and driver call: whichever one launches a kernel, its correlation id finds its
  // ranges (a driver call the runtime makes itself is not reported on its own).
  if (cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API) != CUPTI_SUCCESS) return false;
  if (cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS) return false;
  if (cuptiActivityRegisterCallbacks(request, complete) != CUPTI_SUCCESS) return false;
  if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) return false;
  return std::atexit(finish) == 0;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get) {
  static bool const started = start_cupti();
  if (!started) {
    std::fprintf(stderr, "nvtx_judge: CUPTI could not be started\n");
    return 0;
  }
  auto const* cb = static_cast<NvtxExportTableCallbacks const*>(get(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable t = nullptr;
  unsigned int n = 0;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) != 0) {
    install(t, n, NVTX_CBID_CORE_RangePushA, &push_a);
    install(t, n, NVTX_CBID_CORE_RangePushEx, &push_ex);
    install(t, n, NVTX_CBID_CORE_RangePop, &pop);
  }
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) != 0) {
    install(t, n, NVTX_CBID_CORE2_DomainRangePushEx, &domain_push);
    install(t, n, NVTX_CBID_CORE2_DomainRangePop, &domain_pop);
    install(t, n, NVTX_CBID_CORE2_DomainCreateA, &domain_create);
    install(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string);
  }
  return 1;
}
