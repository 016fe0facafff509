// A small ResNet (He et al. 2016, "basic block" variant): a 3x3 stem, stages of basic blocks
// (the first block of each later stage halves the resolution, doubles the channels and projects
// the shortcut with a 1x1 convolution + batch norm), global average pooling, a linear head and
// softmax cross-entropy. Written once against nn::Backend.
//
// Instrumentation: every layer is an nsightkit::Hooked<...> member, so each forward call is a
// module scope; backward runs through nn::backward(), which opens the same scope. Module paths:
//   stem/conv  stem/bn  stem/relu
//   stage1/block0/conv1 … /bn1 /relu1 /conv2 /bn2 /add /relu2
//   stage2/block0/downsample/conv  stage2/block0/downsample/bn   (first block of stages 2+)
//   pool  fc  loss
// The model itself is not a module, so these are the paths ncu filters name
// (`--nvtx-include "nsightkit@stage2/block0/"`); the training loop's "forward" and "backward"
// ranges sit below them on the NVTX stack.
#pragma once

#include "common/backend.hpp"
#include "common/nn.hpp"

#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>

#include <optional>
#include <string>
#include <vector>

namespace resnet {

namespace nsk = nsightkit;

struct ModelSpec {
  int in_channels{3};
  int classes{10};
  int width{16};  ///< channels of the stem and stage 1; doubled by each later stage
  int stages{3};  ///< stages of basic blocks (1 … 4)
  int blocks{2};  ///< basic blocks per stage
  nn::Layout layout{nn::Layout::nchw};
  /// Start each block's last batch-norm scale at 0 (Goyal et al. 2017): blocks begin as the
  /// identity. Off for gradient checks, where it would zero the gradients of the block's convs.
  bool zero_init_residual{true};
  /// Batch-norm statistics over this many equal slices of the batch (nn::BatchNorm2d): 1 for
  /// ordinary batch norm; N reproduces an N-rank data-parallel run of the same global batch.
  int bn_groups{1};

  /// Throws std::invalid_argument naming the bad field (or an image too small for the stages).
  void validate(int image_size) const;
  /// "3 stages x 2 blocks, widths 16-32-64, 10 classes, nhwc".
  [[nodiscard]] std::string describe() const;
};

/// 1x1 convolution (with the block's stride) + batch norm on the shortcut.
class Downsample {
 public:
  Downsample(nn::Backend& be, nn::ParameterStore& ps, std::string const& prefix, int in, int out,
             int stride, nn::Layout layout, int bn_groups);
  nn::Tensor const& forward(nn::Tensor const& x);
  nn::Tensor const& backward(nn::Tensor const& dy);

 private:
  nsk::Hooked<nn::Conv2d> conv_;
  nsk::Hooked<nn::BatchNorm2d> bn_;
};

/// relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)).
class BasicBlock {
 public:
  BasicBlock(nn::Backend& be, nn::ParameterStore& ps, std::string const& prefix, int in, int out,
             int stride, ModelSpec const& spec);
  nn::Tensor const& forward(nn::Tensor const& x);
  nn::Tensor const& backward(nn::Tensor const& dy);

 private:
  nn::Backend* be_;
  nsk::Hooked<nn::Conv2d> conv1_;
  nsk::Hooked<nn::BatchNorm2d> bn1_;
  nsk::Hooked<nn::ReLU> relu1_;
  nsk::Hooked<nn::Conv2d> conv2_;
  nsk::Hooked<nn::BatchNorm2d> bn2_;
  std::optional<nsk::Hooked<Downsample>> downsample_;
  nsk::Hooked<nn::Add> add_;
  nsk::Hooked<nn::ReLU> relu2_;
  nn::Tensor dx_;
};

/// 3x3 convolution + batch norm + ReLU on the images.
class Stem {
 public:
  Stem(nn::Backend& be, nn::ParameterStore& ps, int in, int out, nn::Layout layout, int bn_groups);
  nn::Tensor const& forward(nn::Tensor const& x);
  void backward(nn::Tensor const& dy);  // no gradient for the images

 private:
  nsk::Hooked<nn::Conv2d> conv_;
  nsk::Hooked<nn::BatchNorm2d> bn_;
  nsk::Hooked<nn::ReLU> relu_;
};

/// Basic blocks "block0", "block1", …
class Stage {
 public:
  Stage(nn::Backend& be, nn::ParameterStore& ps, std::string const& prefix, int in, int out,
        int stride, ModelSpec const& spec);
  nn::Tensor const& forward(nn::Tensor const& x);
  nn::Tensor const& backward(nn::Tensor const& dy);

 private:
  std::vector<nsk::Hooked<BasicBlock>> blocks_;
};

class ResNet {
 public:
  /// Declares the parameters in `ps` (allocate and initialize the store afterwards).
  ResNet(nn::Backend& be, nn::ParameterStore& ps, ModelSpec const& spec);

  /// Runs the network and the loss: metrics (2 floats) receives the mean loss and the number of
  /// correct predictions. Returns the logits [n, classes].
  nn::Tensor const& forward(nn::Tensor const& images, nn::Tensor const& labels,
                            nn::Tensor& metrics);
  /// Gradients of the last forward's loss for every parameter (written to Param::grad).
  void backward();

  [[nodiscard]] ModelSpec const& spec() const noexcept { return spec_; }
  /// Module paths of the first block of `stage` (1-based), e.g. "stage2/block0".
  [[nodiscard]] static std::string block_path(int stage, int block) {
    return "stage" + std::to_string(stage) + "/block" + std::to_string(block);
  }

 private:
  ModelSpec spec_;
  nsk::Hooked<Stem> stem_;
  std::vector<nsk::Hooked<Stage>> stages_;
  nsk::Hooked<nn::GlobalAvgPool> pool_;
  nsk::Hooked<nn::Linear> fc_;
  nsk::Hooked<nn::SoftmaxCrossEntropy> loss_;
};

}  // namespace resnet
