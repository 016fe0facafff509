#include "common/backend.hpp"

#include <stdexcept>

namespace nn {

void check_shape(char const* op, char const* what, Tensor const& t, Shape expected) {
  if (!t.defined()) throw std::invalid_argument(std::string{op} + ": " + what + " is undefined");
  if (t.shape() != expected) {
    throw std::invalid_argument(std::string{op} + ": " + what + " is " + t.shape().str() +
                                ", expected " + expected.str());
  }
}

void check_dtype(char const* op, char const* what, Tensor const& t, DType dtype) {
  if (t.dtype() != dtype) {
    throw std::invalid_argument(std::string{op} + ": " + what + " is " + t.describe() +
                                ", expected element type " + to_string(dtype));
  }
}

void check_same(char const* op, Tensor const& a, Tensor const& b) {
  if (a.shape() != b.shape() || a.layout() != b.layout()) {
    throw std::invalid_argument(std::string{op} + ": tensors differ: " + a.describe() + " and " +
                                b.describe());
  }
}

Shape conv_output_shape(Shape const& x, Shape const& w, ConvGeometry g) {
  if (x.c != w.c) {
    throw std::invalid_argument("conv2d: input has " + std::to_string(x.c) +
                                " channels, filter expects " + std::to_string(w.c));
  }
  if (g.stride < 1 || g.pad < 0) {
    throw std::invalid_argument("conv2d: stride must be >= 1 and pad >= 0");
  }
  Shape y{x.n, w.n, conv_output_size(x.h, w.h, g), conv_output_size(x.w, w.w, g)};
  if (y.h < 1 || y.w < 1) {
    throw std::invalid_argument("conv2d: input " + x.str() + " is smaller than filter " + w.str() +
                                " allows");
  }
  return y;
}

}  // namespace nn
