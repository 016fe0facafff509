#include "common/nn.hpp"

#include "common/rng.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

namespace nn {

// ---- ParameterStore ----

Param& ParameterStore::add(std::string name, Shape shape, Layout layout, Init init, bool decay) {
  if (allocated_) throw std::logic_error("ParameterStore::add(" + name + ") after allocate()");
  Param p;
  p.name = std::move(name);
  p.shape = shape;
  p.layout = layout;
  p.init = init;
  p.decay = decay;
  params_.push_back(std::move(p));
  return params_.back();
}

std::size_t ParameterStore::size() const noexcept {
  std::size_t n = 0;
  for (auto const& p : params_) n += p.shape.numel();
  return n;
}

namespace {
GradientObserver* g_gradient_observer = nullptr;  // one training loop per process
}  // namespace

GradientObserver* set_gradient_observer(GradientObserver* observer) noexcept {
  GradientObserver* const previous = g_gradient_observer;
  g_gradient_observer = observer;
  return previous;
}

GradientObserver* gradient_observer() noexcept { return g_gradient_observer; }

void ParameterStore::allocate(Backend& backend) {
  if (allocated_) throw std::logic_error("ParameterStore::allocate() called twice");
  std::size_t const total = size();
  if (total == 0) throw std::logic_error("ParameterStore::allocate(): no parameters");
  Shape const flat{static_cast<int>(total), 1, 1, 1};
  Tensor values = backend.empty(flat, Layout::nchw);
  Tensor grads = backend.empty(flat, Layout::nchw);
  Tensor momenta = backend.empty(flat, Layout::nchw);
  std::size_t offset = 0;
  for (bool decay : {true, false}) {
    std::size_t const begin = offset;
    for (auto& p : params_) {
      if (p.decay != decay) continue;
      p.value = values.view(offset, p.shape, p.layout);
      p.grad = grads.view(offset, p.shape, p.layout);
      p.momentum = momenta.view(offset, p.shape, p.layout);
      offset += p.shape.numel();
    }
    if (offset != begin) {
      Shape const s{static_cast<int>(offset - begin), 1, 1, 1};
      ranges_.push_back(Range{values.view(begin, s, Layout::nchw),
                              grads.view(begin, s, Layout::nchw),
                              momenta.view(begin, s, Layout::nchw), decay});
    }
  }
  allocated_ = true;
}

void ParameterStore::initialize(Backend& backend, std::uint64_t start) {
  if (!allocated_) throw std::logic_error("ParameterStore::initialize() before allocate()");
  std::uint64_t index = 0;
  for (auto& p : params_) {
    Rng rng{mix64(start ^ mix64(++index))};
    std::vector<double> values(p.shape.numel());
    Strides const st = strides_of(p.shape, p.layout);
    // Logical order, stored at the layout's offsets: identical weights in NCHW and NHWC.
    for (int n = 0; n < p.shape.n; ++n)
      for (int c = 0; c < p.shape.c; ++c)
        for (int h = 0; h < p.shape.h; ++h)
          for (int w = 0; w < p.shape.w; ++w) {
            double v = p.init.value;
            if (p.init.kind == Init::Kind::normal) v = p.init.value * rng.normal();
            if (p.init.kind == Init::Kind::uniform) v = p.init.value * (2.0 * rng.uniform() - 1.0);
            values[offset_of(st, n, c, h, w)] = v;
          }
    backend.write(p.value, values);
    backend.fill(p.grad, 0.0);
    backend.fill(p.momentum, 0.0);
  }
}

// ---- Sgd ----

void Sgd::step() {
  for (auto const& r : store_->ranges()) {
    Tensor value = r.value, momentum = r.momentum;
    backend_->sgd_momentum(value, r.grad, momentum, options_.lr, options_.momentum,
                           r.decay ? options_.weight_decay : 0.0);
  }
}

// ---- layers ----

void ensure(Backend& backend, Tensor& t, Shape shape, Layout layout) {
  if (t.defined() && t.shape() == shape && t.layout() == layout) return;
  t = backend.empty(shape, layout);
}

Conv2d::Conv2d(Backend& backend, ParameterStore& store, std::string const& name, int in, int out,
               int kernel, int stride, int pad, Layout layout, bool input_grad)
    : backend_{&backend}, geometry_{stride, pad}, input_grad_{input_grad} {
  if (in < 1 || out < 1 || kernel < 1 || stride < 1 || pad < 0) {
    throw std::invalid_argument("Conv2d " + name + ": bad geometry");
  }
  // Kaiming (He) normal initialisation for a ReLU network: std = sqrt(2 / fan_in).
  double const fan_in = static_cast<double>(in) * kernel * kernel;
  w_ = &store.add(name + ".weight", Shape{out, in, kernel, kernel}, layout,
                  Init{Init::Kind::normal, std::sqrt(2.0 / fan_in)}, true);
}

Tensor const& Conv2d::forward(Tensor const& x) {
  x_ = x;
  ensure(*backend_, y_, conv_output_shape(x.shape(), w_->shape, geometry_), x.layout());
  backend_->conv2d_forward(x, w_->value, geometry_, y_);
  return y_;
}

Tensor const& Conv2d::backward(Tensor const& dy) {
  backend_->conv2d_backward_filter(x_, dy, geometry_, w_->grad);
  if (!input_grad_) {
    dx_ = Tensor{};
    return dx_;
  }
  ensure(*backend_, dx_, x_.shape(), x_.layout());
  backend_->conv2d_backward_data(dy, w_->value, geometry_, dx_);
  return dx_;
}

BatchNorm2d::BatchNorm2d(Backend& backend, ParameterStore& store, std::string const& name,
                         int channels, Layout layout, double eps, double momentum,
                         double gamma_init, int groups)
    : backend_{&backend}, eps_{eps}, momentum_{momentum}, groups_{groups} {
  if (groups < 1) {
    throw std::invalid_argument(name + ": batch-norm groups must be >= 1, got " +
                                std::to_string(groups));
  }
  Shape const cs{channels, 1, 1, 1};
  gamma_ = &store.add(name + ".gamma", cs, layout, Init{Init::Kind::constant, gamma_init}, false);
  beta_ = &store.add(name + ".beta", cs, layout, Init{Init::Kind::constant, 0.0}, false);
  running_mean_ = backend.empty(cs, layout);
  running_var_ = backend.empty(cs, layout);
  // One [c] slice of statistics per group.
  saved_mean_ = backend.empty(Shape{channels * groups, 1, 1, 1}, layout);
  saved_invstd_ = backend.empty(Shape{channels * groups, 1, 1, 1}, layout);
  backend.fill(running_mean_, 0.0);
  backend.fill(running_var_, 1.0);
  if (groups > 1) {
    dgamma_ = backend.empty(cs, layout);
    dbeta_ = backend.empty(cs, layout);
  }
}

namespace {
/// Slice `g` of `groups` equal slices of t along n (n is outermost in NCHW and NHWC alike).
Tensor batch_slice(Tensor const& t, int g, int groups) {
  Shape s = t.shape();
  s.n /= groups;
  return t.view(static_cast<std::size_t>(g) * s.numel(), s, t.layout());
}
Tensor stats_slice(Tensor const& t, int g, int channels) {
  return t.view(static_cast<std::size_t>(g * channels), Shape{channels, 1, 1, 1}, t.layout());
}
}  // namespace

Tensor const& BatchNorm2d::forward(Tensor const& x) {
  if (x.shape().n % groups_ != 0) {
    throw std::invalid_argument("batch norm: a batch of " + std::to_string(x.shape().n) +
                                " does not split into " + std::to_string(groups_) +
                                " equal groups (--bn-groups)");
  }
  x_ = x;
  ensure(*backend_, y_, x.shape(), x.layout());
  int const c = x.shape().c;
  for (int g = 0; g < groups_; ++g) {
    Tensor mean = stats_slice(saved_mean_, g, c);
    Tensor invstd = stats_slice(saved_invstd_, g, c);
    Tensor y = batch_slice(y_, g, groups_);
    backend_->batchnorm_forward(batch_slice(x, g, groups_), gamma_->value, beta_->value, eps_,
                                momentum_, running_mean_, running_var_, mean, invstd, y);
  }
  return y_;
}

Tensor const& BatchNorm2d::backward(Tensor const& dy) {
  ensure(*backend_, dx_, x_.shape(), x_.layout());
  int const c = x_.shape().c;
  for (int g = 0; g < groups_; ++g) {
    Tensor dx = batch_slice(dx_, g, groups_);
    // The parameter gradients are sums over the batch: the groups' shares add up.
    Tensor& dgamma = g == 0 ? gamma_->grad : dgamma_;
    Tensor& dbeta = g == 0 ? beta_->grad : dbeta_;
    backend_->batchnorm_backward(batch_slice(x_, g, groups_), batch_slice(dy, g, groups_),
                                 gamma_->value, stats_slice(saved_mean_, g, c),
                                 stats_slice(saved_invstd_, g, c), dx, dgamma, dbeta);
    if (g > 0) {
      backend_->add(gamma_->grad, dgamma_, gamma_->grad);
      backend_->add(beta_->grad, dbeta_, beta_->grad);
    }
  }
  return dx_;
}

Tensor const& ReLU::forward(Tensor const& x) {
  ensure(*backend_, y_, x.shape(), x.layout());
  backend_->relu_forward(x, y_);
  return y_;
}

Tensor const& ReLU::backward(Tensor const& dy) {
  ensure(*backend_, dx_, y_.shape(), y_.layout());
  backend_->relu_backward(y_, dy, dx_);
  return dx_;
}

Tensor const& Add::forward(Tensor const& a, Tensor const& b) {
  ensure(*backend_, y_, a.shape(), a.layout());
  backend_->add(a, b, y_);
  return y_;
}

Tensor const& GlobalAvgPool::forward(Tensor const& x) {
  in_shape_ = x.shape();
  in_layout_ = x.layout();
  ensure(*backend_, y_, Shape{x.shape().n, x.shape().c, 1, 1}, x.layout());
  backend_->global_avg_pool_forward(x, y_);
  return y_;
}

Tensor const& GlobalAvgPool::backward(Tensor const& dy) {
  ensure(*backend_, dx_, in_shape_, in_layout_);
  backend_->global_avg_pool_backward(dy, dx_);
  return dx_;
}

Linear::Linear(Backend& backend, ParameterStore& store, std::string const& name, int in, int out)
    : backend_{&backend}, in_{in}, out_{out} {
  if (in < 1 || out < 1) throw std::invalid_argument("Linear " + name + ": bad size");
  double const bound = 1.0 / std::sqrt(static_cast<double>(in));  // PyTorch's default
  w_ = &store.add(name + ".weight", Shape{out, in, 1, 1}, Layout::nchw,
                  Init{Init::Kind::uniform, bound}, true);
  b_ = &store.add(name + ".bias", Shape{out, 1, 1, 1}, Layout::nchw,
                  Init{Init::Kind::uniform, bound}, false);
}

Tensor const& Linear::forward(Tensor const& x) {
  if (x.cols() != in_) {
    throw std::invalid_argument("Linear: input " + x.describe() + " has " +
                                std::to_string(x.cols()) + " features, expected " +
                                std::to_string(in_));
  }
  x_ = x.reshaped(Shape{x.rows(), in_, 1, 1});
  ensure(*backend_, y_, Shape{x.rows(), out_, 1, 1}, Layout::nchw);
  backend_->gemm(false, true, 1.0, x_, w_->value, 0.0, y_);
  backend_->add_bias(y_, b_->value);
  return y_;
}

Tensor const& Linear::backward(Tensor const& dy) {
  backend_->gemm(true, false, 1.0, dy, x_, 0.0, w_->grad);
  backend_->sum_rows(dy, b_->grad);
  ensure(*backend_, dx_, x_.shape(), Layout::nchw);
  backend_->gemm(false, false, 1.0, dy, w_->value, 0.0, dx_);
  return dx_;
}

void SoftmaxCrossEntropy::forward(Tensor const& logits, Tensor const& labels, Tensor& metrics) {
  ensure(*backend_, dlogits_, logits.shape(), logits.layout());
  backend_->softmax_cross_entropy(logits, labels, metrics, dlogits_);
}

}  // namespace nn
