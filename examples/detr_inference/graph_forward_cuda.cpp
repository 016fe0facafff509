// The detector's forward as CUDA graphs: nsightkit::GraphRecorder once per input shape, then
// RecordedGraph::launch for every batch of that shape (graph_forward.hpp).
//
// What makes the forward safe to record here (everything a recording must not see happens in the
// eager pass on the static input just before it):
// - no allocation: the model's modules size their output buffers on a shape's first call, and
//   the backends' workspaces (cuDNN's, the batch-norm scratch) only grow on first use; cuBLAS
//   handles have fixed workspaces of their own (cublasSetWorkspace in examples/common);
// - no host synchronization or host read: the positional-encoding table of a feature-map size is
//   uploaded (a synchronous write) on the first call only; the outputs are read after the replay;
// - no algorithm search: cuDNN's choice per convolution shape is made on the first call;
// - kernels are loaded (CUDA's lazy loading) by that first call, not during the recording.
// Buffers a graph uses must outlive it even when the model reallocates them for another shape:
// the backend keeps released device memory (Backend::retain_freed_memory).
#include "graph_forward.hpp"

#include <nsightkit/cuda_check.hpp>
#include <nsightkit/graph.hpp>
#include <nsightkit/stream.hpp>

#include <cuda_runtime_api.h>

#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

namespace detr {

namespace nsk = nsightkit;

namespace {

using Key = std::array<int, 3>;  // N, H, W

std::string shape_name(Key const& k) {
  return std::to_string(k[0]) + "x" + std::to_string(k[1]) + "x" + std::to_string(k[2]);
}

class CudaGraphForward final : public GraphForward {
 public:
  CudaGraphForward(nn::Backend& backend, nn::InferenceOps& ops, Detr& model)
      : be_{backend}, ops_{ops}, model_{model} {
    if (backend.device() != nn::Device::cuda || backend.stream_handle() == nullptr) {
      throw std::runtime_error("--cuda-graph: the backend is not the CUDA backend");
    }
    stream_ = static_cast<cudaStream_t>(backend.stream_handle());
    backend.retain_freed_memory();
  }

  ~CudaGraphForward() override {
    // The graphs may still run: let them finish before their executable graphs are destroyed.
    NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream_));
  }

  DetrOutput run(Tensor const& images) override {
    Key const key = key_of(images);
    auto it = graphs_.find(key);
    if (it == graphs_.end()) {
      Entry e;
      e.input = be_.empty(images.shape(), nn::Layout::nhwc);
      copy_input(images, e.input);
      std::string const name = "detr forward " + shape_name(key);
      // Eagerly once on the static input: convolution algorithms, workspaces, the model's
      // buffers for this shape, the positional table, lazy kernel loading — all before recording.
      (void)model_.forward(be_, ops_, e.input);
      e.output = record(e, name);
      it = graphs_.emplace(key, std::move(e)).first;
    }
    Entry& e = it->second;
    copy_input(images, e.input);
    e.graph.launch(nsk::StreamView{stream_});
    return e.output;
  }

  void poison_outputs(Tensor const& images) override {
    auto it = graphs_.find(key_of(images));
    if (it == graphs_.end()) {
      throw std::logic_error("poison_outputs: no graph for images " + images.describe());
    }
    for (Tensor const* t : {&it->second.output.logits, &it->second.output.boxes}) {
      // All bytes 0xff: every float is a NaN.
      NSIGHTKIT_CUDA_CHECK(cudaMemsetAsync(t->raw(), 0xff, t->bytes(), stream_));
    }
  }

  [[nodiscard]] std::size_t graphs() const noexcept override { return graphs_.size(); }

  [[nodiscard]] std::string describe() const override {
    std::string out;
    for (auto const& [key, e] : graphs_) {
      if (!out.empty()) out += "\n";
      out += "graph '" + e.graph.name() + "': input " + shape_name(key) + " (NHWC, 3 channels), " +
             std::to_string(e.graph.replays()) + " replays, instantiated " +
             std::to_string(e.graph.instantiations()) + "x, updated in place " +
             std::to_string(e.graph.updates()) + "x";
    }
    return out;
  }

 private:
  struct Entry {
    Tensor input;
    DetrOutput output;
    nsk::RecordedGraph graph;
  };

  static Key key_of(Tensor const& images) {
    nn::Shape const& s = images.shape();
    if (images.device() != nn::Device::cuda || images.layout() != nn::Layout::nhwc || s.c != 3) {
      throw std::invalid_argument(
          "--cuda-graph: images must be a CUDA NHWC tensor of 3 "
          "channels, got " +
          images.describe());
    }
    return Key{s.n, s.h, s.w};
  }

  void copy_input(Tensor const& from, Tensor& to) {
    if (from.raw() == to.raw()) return;
    NSIGHTKIT_CUDA_CHECK(
        cudaMemcpyAsync(to.raw(), from.raw(), from.bytes(), cudaMemcpyDeviceToDevice, stream_));
  }

  /// Records one forward on `e.input` into `e.graph`; returns the forward's outputs (the
  /// graph's static outputs). A failed recording becomes one std::runtime_error: nsightkit's
  /// message (every unsafe call and its module), and what the forward itself threw.
  DetrOutput record(Entry& e, std::string const& name) {
    nsk::GraphOptions options;
    // Thread-local: the prefetcher's thread keeps working (pinned staging, events, copies on
    // its own stream) while this thread records; only this thread's calls can break it.
    options.mode = nsk::GraphRecordMode::thread;
    options.check = nsk::GraphCheck::strict;
    DetrOutput out;
    std::string inside;
    {
      nsk::GraphRecorder recorder{nsk::StreamView{stream_}, name, options};
      try {
        out = model_.forward(be_, ops_, e.input);
      } catch (std::exception const& x) {
        inside = x.what();
      } catch (...) {
        inside = "an exception that is not a std::exception";
      }
      try {
        recorder.end(e.graph);
      } catch (nsk::GraphRecordError const& x) {
        throw std::runtime_error(
            std::string{x.what()} +
            (inside.empty() ? std::string{} : "\n  the forward stopped with: " + inside));
      }
    }
    if (!inside.empty()) {
      throw std::runtime_error("recording of graph '" + name +
                               "': the forward failed during recording: " + inside);
    }
    if (!e.graph.valid()) {
      throw std::runtime_error("recording of graph '" + name + "' produced no graph");
    }
    return out;
  }

  nn::Backend& be_;
  nn::InferenceOps& ops_;
  Detr& model_;
  cudaStream_t stream_{};
  std::map<Key, Entry> graphs_;
};

}  // namespace

std::unique_ptr<GraphForward> make_graph_forward(nn::Backend& backend, nn::InferenceOps& ops,
                                                 Detr& model) {
  return std::make_unique<CudaGraphForward>(backend, ops, model);
}

}  // namespace detr
