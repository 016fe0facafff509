// Another NVTX tool (as Nsight Systems would be): counts the pushes it receives and says so at exit.
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {

std::atomic<int> pushes{0};

int push_a(char const*) { return ++pushes; }
int push_ex(nvtxEventAttributes_t const*) { return ++pushes; }
int domain_push(nvtxDomainHandle_t, nvtxEventAttributes_t const*) { return ++pushes; }
int pop() { return 0; }
int domain_pop(nvtxDomainHandle_t) { return 0; }
nvtxDomainHandle_t domain_create(char const*) {
  static int domain;
  return reinterpret_cast<nvtxDomainHandle_t>(&domain);
}

void report() { std::fprintf(stderr, "other tool: %d pushes\n", pushes.load()); }

template <class Fn>
void install(NvtxFunctionTable t, unsigned int n, unsigned int id, Fn fn) {
  if (t != nullptr && id < n && t[id] != nullptr)
    *t[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get) {
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
  }
  static bool const registered = std::atexit(report) == 0;
  return registered ? 1 : 0;
}
