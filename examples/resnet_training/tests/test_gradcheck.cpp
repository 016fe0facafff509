// The proof that training is real: the gradients the hand-written backward passes compute for
// every parameter of a whole (tiny) ResNet — stem, identity and projection blocks, batch norm,
// ReLU, pooling, the linear head and the loss — match central finite differences of the loss.
// Run in double precision (the CPU backend in f64) so the comparison is tight, in both layouts.
#include "tiny.hpp"

#include "common/cpu_backend.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

using resnet_test::Tiny;

namespace {

struct Worst {
  double error{0.0};
  std::string where;
  double analytic{0.0}, numeric{0.0};
};

resnet::ModelSpec tiny_spec(nn::Layout layout) {
  resnet::ModelSpec spec;
  spec.in_channels = 3;
  spec.classes = 4;
  spec.width = 2;
  spec.stages = 2;  // stage2's first block downsamples (stride 2, 1x1 projection)
  spec.blocks = 2;  // and its second block has an identity shortcut
  spec.layout = layout;
  spec.zero_init_residual = false;  // a zero gamma would zero the gradients of the block's convs
  return spec;
}

}  // namespace

TEST_CASE("every parameter gradient of a tiny ResNet matches finite differences (f64)") {
  auto const layout = GENERATE(nn::Layout::nchw, nn::Layout::nhwc);
  CAPTURE(nn::to_string(layout));
  auto be = nn::make_cpu_backend(nn::DType::f64);
  Tiny t{*be, tiny_spec(layout), /*batch=*/3, /*size=*/6, /*rng_start=*/7};

  double const loss = t.loss_and_gradients();
  REQUIRE(std::isfinite(loss));
  // Untrained, with 4 classes: the loss is near ln 4.
  REQUIRE(loss > 0.5);
  REQUIRE(loss < 5.0);

  double const eps = 1e-5;
  Worst worst;
  std::size_t checked = 0, nonzero = 0;
  for (nn::Param& p : t.params.params()) {
    std::vector<double> const analytic = be->read(p.grad);
    std::vector<double> values = be->read(p.value);
    double largest = 0.0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      double const v = values[i];
      values[i] = v + eps;
      be->write(p.value, values);
      double const plus = t.loss();
      values[i] = v - eps;
      be->write(p.value, values);
      double const minus = t.loss();
      values[i] = v;
      be->write(p.value, values);
      double const numeric = (plus - minus) / (2 * eps);
      double const err = std::abs(numeric - analytic[i]) /
                         std::max(1e-3, std::abs(numeric) + std::abs(analytic[i]));
      if (err > worst.error) {
        worst = {err, p.name + "[" + std::to_string(i) + "]", analytic[i], numeric};
      }
      largest = std::max(largest, std::abs(analytic[i]));
      ++checked;
      if (std::abs(analytic[i]) > 1e-6) ++nonzero;
    }
    // Every parameter tensor takes part in the loss: a gradient that is zero everywhere would
    // mean a backward path was dropped (and would pass a check against equally flat numbers).
    INFO(p.name << ": largest |gradient| " << largest);
    CHECK(largest > 1e-5);
  }
  std::printf(
      "%s: %zu gradients checked (%zu non-zero); worst relative error %.2e at %s "
      "(analytic %.9g, finite difference %.9g)\n",
      nn::to_string(layout), checked, nonzero, worst.error, worst.where.c_str(), worst.analytic,
      worst.numeric);
  REQUIRE(checked == t.params.size());
  REQUIRE(nonzero > checked * 9 / 10);
  INFO("worst: " << worst.where << " analytic " << worst.analytic << " numeric " << worst.numeric);
  REQUIRE(worst.error < 1e-6);
  // The model is unchanged by the perturbations: the loss comes back exactly.
  REQUIRE(t.loss() == Approx(loss).epsilon(1e-12));
}

TEST_CASE("the gradient check notices a wrong gradient") {
  // The same comparison, fed a gradient that is off by 1 %, must fail: the tolerance above is
  // far below the error of any real mistake in a backward pass.
  auto be = nn::make_cpu_backend(nn::DType::f64);
  Tiny t{*be, tiny_spec(nn::Layout::nchw), 3, 6, 7};
  t.loss_and_gradients();
  nn::Param& p = t.params.params().front();  // the stem's filter
  std::vector<double> const analytic = be->read(p.grad);
  std::vector<double> values = be->read(p.value);
  double const eps = 1e-5;
  std::size_t i = 0;
  while (std::abs(analytic[i]) < 1e-3) ++i;
  double const v = values[i];
  values[i] = v + eps;
  be->write(p.value, values);
  double const plus = t.loss();
  values[i] = v - eps;
  be->write(p.value, values);
  double const minus = t.loss();
  double const numeric = (plus - minus) / (2 * eps);
  double const wrong = analytic[i] * 1.01;
  double const err = std::abs(numeric - wrong) / (std::abs(numeric) + std::abs(wrong));
  REQUIRE(err > 1e-3);
  REQUIRE(std::abs(numeric - analytic[i]) / (std::abs(numeric) + std::abs(analytic[i])) < 1e-6);
}
