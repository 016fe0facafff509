// A CUDA injection library (CUDA_INJECTION64_PATH=libnsightkit_cupti_floor.so) that turns on the
// CUPTI activity kinds the report's CUPTI source collects — kernels, copies, memsets, device
// memory — and only walks and frees the buffers. Run under it, an unmodified program pays CUPTI's
// own collection cost and nothing of nsightkit's: the floor that the report's cost on a program's
// step time is compared with (scripts/gpu/cupti.sh, COST_MODES=floor). With
// NSIGHTKIT_CUPTI_FLOOR_CALLBACKS=1 it also subscribes an empty callback to the calls the report
// watches (detail/cupti/calls.hpp) and to CUPTI's resource domain, as the report does: the
// floor of the callback design (COST_MODES=floor_cb). At exit it prints how many records and
// callbacks it saw, so a run shows the floor was really on.
#include <nsightkit/detail/cupti/calls.hpp>

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace {

std::atomic<std::uint64_t> records{0}, callbacks{0};

void CUPTIAPI request(std::uint8_t** buffer, std::size_t* size, std::size_t* max) {
  constexpr std::size_t bytes = std::size_t{8} << 20;
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, bytes));
  *size = *buffer != nullptr ? bytes : 0;  // no buffer: CUPTI drops the records and counts them
  *max = 0;
}

void CUPTIAPI complete(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                       std::size_t valid) {
  CUpti_Activity* r = nullptr;
  std::uint64_t n = 0;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) ++n;
  records.fetch_add(n, std::memory_order_relaxed);
  std::free(buffer);
}

void CUPTIAPI on_call(void*, CUpti_CallbackDomain, CUpti_CallbackId, void const*) {
  callbacks.fetch_add(1, std::memory_order_relaxed);
}

void at_exit() {
  (void)cuptiActivityFlushAll(1);
  std::fprintf(stderr, "cupti_floor: %llu activity records, %llu callbacks\n",
               static_cast<unsigned long long>(records.load()),
               static_cast<unsigned long long>(callbacks.load()));
}

/// Empty callbacks on the calls the report's CUPTI source enables, chosen the same way: launches
/// in the driver's calls (the runtime's only if none there), the runtime's host-blocking calls
/// and capture edges; and the resource domain. False when CUPTI refused.
bool subscribe_like_the_report() {
  namespace nr = nsightkit::detail::report;
  CUpti_SubscriberHandle sub{};
  if (cuptiSubscribe(&sub, &on_call, nullptr) != CUPTI_SUCCESS) return false;
  int driver_launches = 0;
  for (CUpti_CallbackDomain domain : {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RUNTIME_API}) {
    bool const runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    std::uint32_t const size = runtime ? static_cast<std::uint32_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE)
                                       : static_cast<std::uint32_t>(CUPTI_DRIVER_TRACE_CBID_SIZE);
    for (std::uint32_t cbid = 1; cbid < size; ++cbid) {
      char const* n = nullptr;
      if (cuptiGetCallbackName(domain, cbid, &n) != CUPTI_SUCCESS || n == nullptr) continue;
      bool const launch = nr::launch_like(domain, n) && (!runtime || driver_launches == 0);
      if (!launch && nr::capture_edge(n) == 0 && !nr::host_blocking(domain, n)) continue;
      if (cuptiEnableCallback(1, sub, domain, cbid) == CUPTI_SUCCESS && launch && !runtime)
        ++driver_launches;
    }
  }
  return cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE) == CUPTI_SUCCESS;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  if (cuptiActivityRegisterCallbacks(&request, &complete) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "cupti_floor: cuptiActivityRegisterCallbacks failed\n");
    return 0;
  }
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                               CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMORY2}) {
    if (cuptiActivityEnable(k) != CUPTI_SUCCESS) {
      std::fprintf(stderr, "cupti_floor: cuptiActivityEnable(%d) failed\n", static_cast<int>(k));
    }
  }
  char const* cb = std::getenv("NSIGHTKIT_CUPTI_FLOOR_CALLBACKS");
  if (cb != nullptr && std::strcmp(cb, "1") == 0 && !subscribe_like_the_report())
    std::fprintf(stderr, "cupti_floor: the callbacks could not be subscribed\n");
  std::atexit(&at_exit);
  return 1;
}
