#include "model.hpp"

#include <stdexcept>

namespace resnet {

void ModelSpec::validate(int image_size) const {
  auto fail = [](std::string const& m) { throw std::invalid_argument("model: " + m); };
  if (in_channels < 1) fail("in_channels must be >= 1");
  if (classes < 2) fail("classes must be >= 2");
  if (width < 1) fail("width must be >= 1");
  if (stages < 1 || stages > 4) fail("stages must be in [1, 4]");
  if (blocks < 1) fail("blocks must be >= 1");
  if (bn_groups < 1) fail("bn_groups must be >= 1");
  int const final_size = image_size >> (stages - 1);
  if (image_size < 2 || final_size < 1 || (final_size << (stages - 1)) != image_size) {
    fail("image size " + std::to_string(image_size) + " must be at least 2 and divisible by " +
         std::to_string(1 << (stages - 1)) + " (each of the " + std::to_string(stages - 1) +
         " later stages halves it)");
  }
}

std::string ModelSpec::describe() const {
  std::string widths;
  for (int s = 0; s < stages; ++s) widths += (s ? "-" : "") + std::to_string(width << s);
  return std::to_string(stages) + " stages x " + std::to_string(blocks) + " blocks, widths " +
         widths + ", " + std::to_string(classes) + " classes, " + nn::to_string(layout);
}

Downsample::Downsample(nn::Backend& be, nn::ParameterStore& ps, std::string const& prefix, int in,
                       int out, int stride, nn::Layout layout, int bn_groups)
    : conv_{"conv", be, ps, prefix + ".conv", in, out, 1, stride, 0, layout},
      bn_{"bn", be, ps, prefix + ".bn", out, layout, 1e-5, 0.1, 1.0, bn_groups} {}

nn::Tensor const& Downsample::forward(nn::Tensor const& x) { return bn_(conv_(x)); }

nn::Tensor const& Downsample::backward(nn::Tensor const& dy) {
  return nn::backward(conv_, nn::backward(bn_, dy));
}

BasicBlock::BasicBlock(nn::Backend& be, nn::ParameterStore& ps, std::string const& prefix, int in,
                       int out, int stride, ModelSpec const& spec)
    : be_{&be},
      conv1_{"conv1", be, ps, prefix + ".conv1", in, out, 3, stride, 1, spec.layout},
      bn1_{"bn1", be, ps, prefix + ".bn1", out, spec.layout, 1e-5, 0.1, 1.0, spec.bn_groups},
      relu1_{"relu1", be},
      conv2_{"conv2", be, ps, prefix + ".conv2", out, out, 3, 1, 1, spec.layout},
      bn2_{"bn2",
           be,
           ps,
           prefix + ".bn2",
           out,
           spec.layout,
           1e-5,
           0.1,
           spec.zero_init_residual ? 0.0 : 1.0,
           spec.bn_groups},
      add_{"add", be},
      relu2_{"relu2", be} {
  if (stride != 1 || in != out) {
    downsample_.emplace("downsample", be, ps, prefix + ".downsample", in, out, stride, spec.layout,
                        spec.bn_groups);
  }
}

nn::Tensor const& BasicBlock::forward(nn::Tensor const& x) {
  nn::Tensor const& main = bn2_(conv2_(relu1_(bn1_(conv1_(x)))));
  nn::Tensor const& shortcut = downsample_ ? (*downsample_)(x) : x;
  return relu2_(add_(main, shortcut));
}

nn::Tensor const& BasicBlock::backward(nn::Tensor const& dy) {
  nn::Tensor const& g = nn::backward(relu2_, dy);  // the add passes g to both branches
  nn::Tensor const& main = nn::backward(
      conv1_,
      nn::backward(bn1_, nn::backward(relu1_, nn::backward(conv2_, nn::backward(bn2_, g)))));
  nn::Tensor const& shortcut = downsample_ ? nn::backward(*downsample_, g) : g;
  // x fed both branches: its gradient is the sum (kernels attributed to the block itself).
  nn::ensure(*be_, dx_, main.shape(), main.layout());
  be_->add(main, shortcut, dx_);
  return dx_;
}

Stem::Stem(nn::Backend& be, nn::ParameterStore& ps, int in, int out, nn::Layout layout,
           int bn_groups)
    : conv_{"conv", be, ps, "stem.conv", in, out, 3, 1, 1, layout, false},
      bn_{"bn", be, ps, "stem.bn", out, layout, 1e-5, 0.1, 1.0, bn_groups},
      relu_{"relu", be} {}

nn::Tensor const& Stem::forward(nn::Tensor const& x) { return relu_(bn_(conv_(x))); }

void Stem::backward(nn::Tensor const& dy) {
  nn::backward(conv_, nn::backward(bn_, nn::backward(relu_, dy)));
}

Stage::Stage(nn::Backend& be, nn::ParameterStore& ps, std::string const& prefix, int in, int out,
             int stride, ModelSpec const& spec) {
  blocks_.reserve(static_cast<std::size_t>(spec.blocks));
  for (int b = 0; b < spec.blocks; ++b) {
    std::string const name = "block" + std::to_string(b);
    blocks_.emplace_back(name, be, ps, prefix + "." + name, b == 0 ? in : out, out,
                         b == 0 ? stride : 1, spec);
  }
}

nn::Tensor const& Stage::forward(nn::Tensor const& x) {
  nn::Tensor const* h = &x;
  for (auto& block : blocks_) h = &block(*h);
  return *h;
}

nn::Tensor const& Stage::backward(nn::Tensor const& dy) {
  nn::Tensor const* g = &dy;
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) g = &nn::backward(*it, *g);
  return *g;
}

namespace {
ModelSpec const& checked(ModelSpec const& spec) {
  if (spec.stages < 1 || spec.stages > 4 || spec.width < 1 || spec.blocks < 1 || spec.classes < 2 ||
      spec.bn_groups < 1) {
    spec.validate(1 << 10);  // throws with the precise message
  }
  return spec;
}
}  // namespace

ResNet::ResNet(nn::Backend& be, nn::ParameterStore& ps, ModelSpec const& spec)
    : spec_{checked(spec)},
      stem_{"stem", be, ps, spec.in_channels, spec.width, spec.layout, spec.bn_groups},
      pool_{"pool", be},
      fc_{"fc", be, ps, "fc", spec.width << (spec.stages - 1), spec.classes},
      loss_{"loss", be} {
  // Parameters are declared in forward order (stem, stages, fc), except fc above: the order only
  // decides where each lives in the flat buffers and which random stream initialises it.
  stages_.reserve(static_cast<std::size_t>(spec.stages));
  for (int s = 0; s < spec.stages; ++s) {
    int const in = s == 0 ? spec.width : spec.width << (s - 1);
    std::string const name = "stage" + std::to_string(s + 1);
    stages_.emplace_back(name, be, ps, name, in, spec.width << s, s == 0 ? 1 : 2, spec);
  }
}

nn::Tensor const& ResNet::forward(nn::Tensor const& images, nn::Tensor const& labels,
                                  nn::Tensor& metrics) {
  nn::Tensor const* h = &stem_(images);
  for (auto& stage : stages_) h = &stage(*h);
  nn::Tensor const& logits = fc_(pool_(*h));
  loss_(logits, labels, metrics);
  return logits;
}

void ResNet::backward() {
  nn::Tensor const* g = &nn::backward(pool_, nn::backward(fc_, loss_->grad()));
  for (auto it = stages_.rbegin(); it != stages_.rend(); ++it) g = &nn::backward(*it, *g);
  nn::backward(stem_, *g);
}

}  // namespace resnet
