// A CUDA injection library (CUDA_INJECTION64_PATH=libnsightkit_cupti_floor.so) that turns on the
// CUPTI activity kinds the report's CUPTI source collects — kernels, copies, memsets, device
// memory — and only walks and frees the buffers. Run under it, an unmodified program pays CUPTI's
// own collection cost and nothing of nsightkit's: the floor that the report's cost on a program's
// step time is compared with (scripts/gpu/cupti.sh, COST_MODES=floor). At exit it prints how many
// records it saw, so a run shows the floor was really on.
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

namespace {

std::atomic<std::uint64_t> records{0};

void CUPTIAPI request(std::uint8_t** buffer, std::size_t* size, std::size_t* max) {
  *size = std::size_t{8} << 20;
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, *size));
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

void at_exit() {
  (void)cuptiActivityFlushAll(1);
  std::fprintf(stderr, "cupti_floor: %llu activity records\n",
               static_cast<unsigned long long>(records.load()));
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
  std::atexit(&at_exit);
  return 1;
}
