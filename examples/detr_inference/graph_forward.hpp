// The detector's forward as CUDA graphs (--cuda-graph): one graph recorded per input shape with
// nsightkit::GraphRecorder, replayed for every later batch of that shape. Each shape has a static
// input tensor (every batch is copied into it on the compute stream before the replay) and
// static outputs (the model's own output buffers at recording time, kept alive with everything
// else the graph uses). This header needs no CUDA header; builds without the CUDA backend get a
// factory that says so.
#pragma once

#include "model.hpp"

#include "common/backend.hpp"
#include "common/inference_ops.hpp"

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace detr {

/// Forward passes replayed from CUDA graphs, one per input shape (N, H, W).
class GraphForward {
 public:
  virtual ~GraphForward() = default;
  GraphForward() = default;
  GraphForward(GraphForward const&) = delete;
  GraphForward& operator=(GraphForward const&) = delete;

  /// The model's outputs for `images` (a CUDA tensor, NHWC [N, 3, H, W], ready on the
  /// backend's stream): the first batch of a shape runs the forward once eagerly on the static
  /// input (so every algorithm choice, workspace growth and allocation happens outside the
  /// recording), then records it; every batch is then copied into the static input and the graph
  /// is replayed. The returned tensors are the graph's static outputs: valid until the next
  /// run() of the same shape.
  /// @throws std::runtime_error when the recording fails: the message names each call that was
  ///         unsafe during recording and the module that made it (with the nsightkit::cupti
  ///         component), or CUDA's error; CudaError when a copy or a launch fails.
  virtual DetrOutput run(Tensor const& images) = 0;

  /// Fills the static outputs of `images`'s shape with NaN (a shape recorded before), so that a
  /// check after the next replay sees only what the replay wrote.
  virtual void poison_outputs(Tensor const& images) = 0;

  /// Graphs recorded so far (input shapes seen).
  [[nodiscard]] virtual std::size_t graphs() const noexcept = 0;
  /// One line per graph: its shape, replays, and how it was made.
  [[nodiscard]] virtual std::string describe() const = 0;
};

/// Graph forwards of `model` on `backend` (the CUDA backend) and `ops` (its InferenceOps). All
/// three must outlive the result. Calls backend.retain_freed_memory(): buffers a graph used
/// stay allocated while the backend lives.
/// @throws std::runtime_error in a build without the CUDA backend, or for a CPU backend.
std::unique_ptr<GraphForward> make_graph_forward(nn::Backend& backend, nn::InferenceOps& ops,
                                                 Detr& model);

/// The first difference between two output vectors, or "" when they are identical bit for bit
/// (NaN compares by its bits, so a NaN left in the graph's outputs is a difference).
/// `what` names the tensor in the message ("logits").
std::string first_mismatch(char const* what, std::vector<double> const& eager,
                           std::vector<double> const& graph);

}  // namespace detr
