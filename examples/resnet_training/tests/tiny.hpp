// A tiny ResNet, a batch and helpers shared by the example's tests.
#pragma once

#include "common/backend.hpp"
#include "common/nn.hpp"
#include "common/rng.hpp"
#include "model.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace resnet_test {

/// A small network for the tests: 5 classes, width 4, 2 stages of 1 block.
inline resnet::ModelSpec small_spec(nn::Layout layout = nn::Layout::nchw) {
  resnet::ModelSpec spec;
  spec.classes = 5;
  spec.width = 4;
  spec.stages = 2;
  spec.blocks = 1;
  spec.layout = layout;
  return spec;
}

/// Everything needed to train a tiny ResNet on one backend.
struct Tiny {
  nn::Backend* be;
  resnet::ModelSpec spec;
  nn::ParameterStore params;
  std::unique_ptr<resnet::ResNet> model;
  nn::Tensor images, labels, metrics;
  int image_size;

  /// Builds the model and a fixed random batch (the same on every backend for one starting value of its random numbers).
  Tiny(nn::Backend& backend, resnet::ModelSpec const& s, int batch, int size,
       std::uint64_t rng_start)
      : be{&backend}, spec{s}, image_size{size} {
    model = std::make_unique<resnet::ResNet>(backend, params, spec);
    params.allocate(backend);
    params.initialize(backend, rng_start);
    images = backend.empty(nn::Shape{batch, spec.in_channels, size, size}, spec.layout);
    labels = backend.empty(nn::Shape{batch, 1, 1, 1}, nn::Layout::nchw, nn::DType::i32);
    metrics = backend.empty(nn::Shape{2, 1, 1, 1}, nn::Layout::nchw);
    nn::Rng rng{rng_start + 99};
    nn::Shape const is = images.shape();
    nn::Strides const st = nn::strides_of(is, spec.layout);
    std::vector<double> x(images.numel()), y(static_cast<std::size_t>(batch));
    // Logical order, stored at the layout's offsets: the same images in NCHW and NHWC.
    for (int n = 0; n < is.n; ++n)
      for (int c = 0; c < is.c; ++c)
        for (int h = 0; h < is.h; ++h)
          for (int w = 0; w < is.w; ++w) x[nn::offset_of(st, n, c, h, w)] = rng.normal();
    for (auto& v : y) v = rng.below(static_cast<std::uint32_t>(spec.classes));
    backend.write(images, x);
    backend.write(labels, y);
  }

  /// Forward + loss; returns the mean loss.
  double loss() {
    model->forward(images, labels, metrics);
    return be->read(metrics)[0];
  }

  /// Forward, loss and backward: every Param::grad holds d(loss)/d(param).
  double loss_and_gradients() {
    double const l = loss();
    model->backward();
    return l;
  }
};

/// A parameter's values in logical [n, c, h, w] order (layout-independent).
inline std::vector<double> logical(nn::Backend& be, nn::Tensor const& t) {
  std::vector<double> const raw = be.read(t);
  std::vector<double> out(raw.size());
  nn::Shape const s = t.shape();
  nn::Strides const st = nn::strides_of(s, t.layout());
  std::size_t i = 0;
  for (int n = 0; n < s.n; ++n)
    for (int c = 0; c < s.c; ++c)
      for (int h = 0; h < s.h; ++h)
        for (int w = 0; w < s.w; ++w) out[i++] = raw[nn::offset_of(st, n, c, h, w)];
  return out;
}

}  // namespace resnet_test
