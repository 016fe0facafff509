// The CPU runtime: the model's input tensors live in ordinary memory; "h2d" is a memcpy from the
// loader's batch into them, so the step has the same ranges as on a GPU.
#include "common/cpu_backend.hpp"
#include "runtime.hpp"

#include <nsightkit/range.hpp>

#include <map>
#include <stdexcept>

namespace resnet {
namespace {
namespace nsk = nsightkit;

class CpuRuntime final : public Runtime {
 public:
  explicit CpuRuntime(RuntimeOptions const& o)
      : backend_{nn::make_cpu_backend(nn::DType::f32)}, allocator_{make_pageable_allocator()} {
    batch_.images =
        backend_->empty(nn::Shape{o.batch, o.channels, o.image_size, o.image_size}, o.layout);
    batch_.labels = backend_->empty(nn::Shape{o.batch, 1, 1, 1}, nn::Layout::nchw, nn::DType::i32);
  }

  [[nodiscard]] nn::Backend& backend() noexcept override { return *backend_; }
  [[nodiscard]] HostAllocator& host_allocator() noexcept override { return *allocator_; }
  [[nodiscard]] std::string describe() const override {
    return "pageable host memory, batches copied into the model's input (no device)";
  }

  void set_source(std::function<HostBatch()> fetch) override { fetch_ = std::move(fetch); }

  DeviceBatch next_batch() override {
    HostBatch host = fetch_();  // "data"
    nsk::ScopedRange const range{"h2d"};
    backend_->upload(batch_.images, host.images, host.image_bytes);
    backend_->upload(batch_.labels, host.labels, host.label_bytes);
    return batch_;
  }

  void end_step(std::int64_t step, nn::Tensor const& metrics) override {
    auto const v = backend_->read(metrics);
    done_[step] = StepMetrics{v.at(0), v.at(1)};
  }

  StepMetrics wait_step(std::int64_t step) override {
    auto it = done_.find(step);
    if (it == done_.end())
      throw std::logic_error("wait_step: step " + std::to_string(step) + " not ended");
    StepMetrics const m = it->second;
    done_.erase(it);
    return m;
  }

  void finish() override {}

 private:
  std::unique_ptr<nn::Backend> backend_;
  std::unique_ptr<HostAllocator> allocator_;
  std::function<HostBatch()> fetch_;
  DeviceBatch batch_;
  std::map<std::int64_t, StepMetrics> done_;
};

}  // namespace

std::unique_ptr<Runtime> make_cpu_runtime(RuntimeOptions const& options) {
  return std::make_unique<CpuRuntime>(options);
}

}  // namespace resnet
