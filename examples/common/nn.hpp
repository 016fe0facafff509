// Layers with hand-written backward passes, written once against nn::Backend, plus the
// parameter store and SGD. The layer classes are plain C++ with no instrumentation: networks
// wrap them in nsightkit::Hooked<...> so every forward call is a module scope (an NVTX range
// named after the module, nested into paths like "stage2/block0/conv1"), and run their backward
// through nn::backward(), which opens the same module scope around the backward call.
//
// Each layer owns its output and input-gradient tensors (allocated on first use, reused while
// the shape stays), so a training step allocates nothing.
#pragma once

#include "common/backend.hpp"
#include "common/tensor.hpp"

#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <type_traits>
#include <utility>

namespace nn {

/// How a parameter starts: N(0, value^2), U(-value, value), or the constant value.
struct Init {
  enum class Kind { normal, uniform, constant };
  Kind kind{Kind::constant};
  double value{0.0};
};

/// One trainable tensor with its gradient and momentum buffer (views of the store's flat buffers).
struct Param {
  std::string name;  ///< "stage2.block0.conv1.weight"
  Shape shape;
  Layout layout{Layout::nchw};
  Init init;
  bool decay{true};  ///< weight decay applies (conv and linear weights; not BN or biases)
  Tensor value, grad, momentum;
};

/**
 * All parameters of a model in three flat buffers (values, gradients, momenta), weight-decayed
 * parameters first, so the optimizer updates everything in two calls. Layers add() their
 * parameters while the model is built; allocate() then lays them out.
 */
class ParameterStore {
 public:
  /// Declares a parameter; its tensors exist after allocate(). The reference stays valid.
  Param& add(std::string name, Shape shape, Layout layout, Init init, bool decay);

  /// Allocates the flat buffers on `backend` and points every parameter's tensors into them.
  /// @throws std::logic_error when called twice or with no parameter.
  void allocate(Backend& backend);

  /// Sets every value from its Init with a generator started from (start, parameter index), in the
  /// logical [n, c, h, w] order — the same weights for every backend and layout; zeroes the
  /// gradients and momenta.
  void initialize(Backend& backend, std::uint64_t start);

  [[nodiscard]] std::deque<Param>& params() noexcept { return params_; }
  [[nodiscard]] std::deque<Param> const& params() const noexcept { return params_; }
  /// Total number of scalars.
  [[nodiscard]] std::size_t size() const noexcept;

  /// A contiguous range of the flat buffers (one optimizer call).
  struct Range {
    Tensor value, grad, momentum;
    bool decay{true};
  };
  /// The decayed and the non-decayed parameters (a range may be missing when empty).
  [[nodiscard]] std::deque<Range> const& ranges() const noexcept { return ranges_; }

 private:
  std::deque<Param> params_;
  std::deque<Range> ranges_;
  bool allocated_{false};
};

/// SGD with momentum over a whole ParameterStore (see Backend::sgd_momentum).
class Sgd {
 public:
  struct Options {
    double lr{0.05};
    double momentum{0.9};
    double weight_decay{0.0};
  };
  Sgd(Backend& backend, ParameterStore& store, Options options)
      : backend_{&backend}, store_{&store}, options_{options} {}

  /// One update of every parameter from its gradient.
  void step();
  [[nodiscard]] Options const& options() const noexcept { return options_; }

 private:
  Backend* backend_;
  ParameterStore* store_;
  Options options_;
};

/// Makes `t` a float tensor of `shape` and `layout` unless it already is one (keeps its memory).
void ensure(Backend& backend, Tensor& t, Shape shape, Layout layout);

/// 2-D convolution without bias (a batch norm follows it).
class Conv2d {
 public:
  /// @param input_grad false for a network's first convolution (no gradient for the images).
  Conv2d(Backend& backend, ParameterStore& store, std::string const& name, int in, int out,
         int kernel, int stride, int pad, Layout layout, bool input_grad = true);
  Tensor const& forward(Tensor const& x);
  /// Computes the filter gradient; returns dx (an undefined tensor when input_grad is false).
  Tensor const& backward(Tensor const& dy);
  [[nodiscard]] Param& weight() noexcept { return *w_; }
  /// The parameters whose gradients backward() writes.
  [[nodiscard]] std::array<Param*, 1> params() const noexcept { return {w_}; }

 private:
  Backend* backend_;
  Param* w_;
  ConvGeometry geometry_;
  bool input_grad_;
  Tensor x_, y_, dx_;
};

/// Batch normalisation over n, h, w (training mode), with running statistics.
///
/// `groups` > 1 normalises each of `groups` equal slices of the batch with its own statistics
/// ("ghost" batch norm): what data-parallel training on `groups` replicas computes, each replica
/// normalising over its own share of the global batch (DDP without SyncBatchNorm). A single
/// process with --bn-groups N therefore reproduces an N-rank run of the same global batch.
class BatchNorm2d {
 public:
  BatchNorm2d(Backend& backend, ParameterStore& store, std::string const& name, int channels,
              Layout layout, double eps = 1e-5, double momentum = 0.1, double gamma_init = 1.0,
              int groups = 1);
  /// @throws std::invalid_argument when the batch does not split into `groups` equal slices.
  Tensor const& forward(Tensor const& x);
  Tensor const& backward(Tensor const& dy);
  [[nodiscard]] Tensor const& running_mean() const noexcept { return running_mean_; }
  [[nodiscard]] Tensor const& running_var() const noexcept { return running_var_; }
  /// The parameters whose gradients backward() writes.
  [[nodiscard]] std::array<Param*, 2> params() const noexcept { return {gamma_, beta_}; }

 private:
  Backend* backend_;
  Param* gamma_;
  Param* beta_;
  double eps_, momentum_;
  int groups_;
  Tensor running_mean_, running_var_, saved_mean_, saved_invstd_;
  Tensor x_, y_, dx_, dgamma_, dbeta_;  // dgamma_/dbeta_: one group's share (groups > 1)
};

/// max(x, 0).
class ReLU {
 public:
  explicit ReLU(Backend& backend) : backend_{&backend} {}
  Tensor const& forward(Tensor const& x);
  Tensor const& backward(Tensor const& dy);

 private:
  Backend* backend_;
  Tensor y_, dx_;
};

/// a + b (a residual connection). Its backward is the identity for both inputs.
class Add {
 public:
  explicit Add(Backend& backend) : backend_{&backend} {}
  Tensor const& forward(Tensor const& a, Tensor const& b);

 private:
  Backend* backend_;
  Tensor y_;
};

/// Mean over h and w: [n, c, h, w] -> [n, c, 1, 1].
class GlobalAvgPool {
 public:
  explicit GlobalAvgPool(Backend& backend) : backend_{&backend} {}
  Tensor const& forward(Tensor const& x);
  Tensor const& backward(Tensor const& dy);

 private:
  Backend* backend_;
  Shape in_shape_{};
  Layout in_layout_{Layout::nchw};
  Tensor y_, dx_;
};

/// y = x W^T + b on rows of x ([n, in] read as a matrix) -> [n, out, 1, 1].
class Linear {
 public:
  Linear(Backend& backend, ParameterStore& store, std::string const& name, int in, int out);
  Tensor const& forward(Tensor const& x);
  Tensor const& backward(Tensor const& dy);
  /// The parameters whose gradients backward() writes.
  [[nodiscard]] std::array<Param*, 2> params() const noexcept { return {w_, b_}; }

 private:
  Backend* backend_;
  Param* w_;
  Param* b_;
  int in_, out_;
  Tensor x_, y_, dx_;
};

/// Softmax cross-entropy; forward() also leaves the gradient of the mean loss (grad()).
class SoftmaxCrossEntropy {
 public:
  explicit SoftmaxCrossEntropy(Backend& backend) : backend_{&backend} {}
  /// metrics (2 floats) receives the mean loss and the number of correct predictions.
  void forward(Tensor const& logits, Tensor const& labels, Tensor& metrics);
  [[nodiscard]] Tensor const& grad() const noexcept { return dlogits_; }

 private:
  Backend* backend_;
  Tensor dlogits_;
};

/**
 * Told when a layer's backward has written its parameters' gradients: data-parallel training
 * starts reducing a bucket of gradients as soon as all of its parameters are done, while the
 * backward pass goes on (see resnet_training/gradient_sync.hpp).
 */
class GradientObserver {
 public:
  virtual ~GradientObserver() = default;
  /// `p.grad` holds this step's gradient (queued on the backend's stream).
  virtual void ready(Param& p) = 0;
};

/// The observer nn::backward() notifies; nullptr (the default) for none. Returns the previous one.
GradientObserver* set_gradient_observer(GradientObserver* observer) noexcept;
GradientObserver* gradient_observer() noexcept;

namespace detail {
template <class M, class = void>
struct HasParams : std::false_type {};
template <class M>
struct HasParams<M, std::void_t<decltype(std::declval<M&>().params())>> : std::true_type {};
}  // namespace detail

/**
 * Runs a hooked module's backward inside the module's scope, so backward kernels sit under the
 * same path as forward ones ("backward/stage2/block0/conv1" in the report;
 * `ncu --nvtx-include "nsightkit@stage2/block0/"` selects both directions). For a layer with
 * parameters it then tells the gradient observer, outside the layer's scope.
 */
template <class M, class... A>
decltype(auto) backward(nsightkit::Hooked<M>& module, A&&... args) {
  if constexpr (detail::HasParams<M>::value) {
    decltype(auto) dx = [&]() -> decltype(auto) {
      nsightkit::ModuleScope const scope{module.name()};
      return module->backward(std::forward<A>(args)...);
    }();
    if (GradientObserver* o = gradient_observer()) {
      for (Param* p : module->params()) o->ready(*p);
    }
    return dx;
  } else {
    nsightkit::ModuleScope const scope{module.name()};
    return module->backward(std::forward<A>(args)...);
  }
}

}  // namespace nn
