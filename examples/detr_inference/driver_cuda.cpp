// The GPU loop: nsightkit::StreamPrefetcher feeds the model from the image cache; the module
// ranges of each iteration are timed on the compute stream by nsightkit's report.
#include "driver.hpp"

#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>
#include <nsightkit/prefetch.hpp>
#include <nsightkit/report.hpp>

#include <cuda_runtime_api.h>

#include <optional>

namespace detr {

namespace nsk = nsightkit;

namespace {
/// A batch as the source produces it: views of the cached (pageable) images.
struct HostBatch {
  std::vector<float const*> images;
};
}  // namespace

std::string run_cuda_loop(nn::Backend& backend, ImageCache const& images, LoopSpec spec,
                          LoopBody const& body) {
  nsk::StreamView const compute{static_cast<cudaStream_t>(backend.stream_handle())};
  std::size_t const bytes = images.floats_per_image() * sizeof(float);
  std::size_t produced = 0;
  // The data loader, "monkey patched" into a module: its row sits under "prefetch source".
  auto loader = nsk::instrument(
      [&]() -> std::optional<HostBatch> {
        if (produced == spec.iterations) return std::nullopt;
        HostBatch b;
        for (int j = 0; j < spec.batch; ++j) {
          b.images.push_back(images.image(produced * static_cast<std::size_t>(spec.batch) +
                                          static_cast<std::size_t>(j)));
        }
        ++produced;
        return b;
      },
      "loader");
  nsk::PrefetchOptions options;
  options.depth = 2;  // batch N+1 is copied while batch N computes
  nsk::StreamPrefetcher<HostBatch, nn::Tensor> prefetcher{
      [&loader] { return loader(); },
      [bytes](HostBatch& host, nn::Tensor& slot, nsk::PrefetchCopier& copy) {
        auto* dst = static_cast<char*>(slot.raw());
        // Pageable cache -> pinned staging block of the prefetcher's pool -> device, per image.
        for (std::size_t j = 0; j < host.images.size(); ++j) {
          copy.to_device(dst + j * bytes, host.images[j], bytes);
        }
      },
      [&](std::size_t) {
        return backend.empty(nn::Shape{spec.batch, 3, images.size(), images.size()},
                             nn::Layout::nhwc);
      },
      compute, options};
  for (auto& batch : prefetcher) {
    nsk::CurrentStream const timing{compute};  // GPU time of every range in the body
    body(batch.index(), batch.device());
  }
  nsk::PrefetchStats const s = prefetcher.stats();
  nsk::PinnedPoolStats const pool = prefetcher.staging_pool().stats();
  return "prefetch: " + std::to_string(s.delivered) + " batches, " +
         std::to_string(s.bytes_copied >> 20) + " MiB copied (" +
         std::to_string(s.bytes_staged >> 20) + " MiB staged through pinned memory), " +
         std::to_string(s.host_waits) +
         " host waits; pinned pool: " + std::to_string(pool.peak_bytes_reserved >> 20) +
         " MiB peak, " + std::to_string(pool.host_alloc_calls) + " cudaHostAlloc calls for " +
         std::to_string(pool.allocations) + " staging blocks (" + std::to_string(pool.cache_hits) +
         " from the cache)";
}

}  // namespace detr
