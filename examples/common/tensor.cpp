#include "common/tensor.hpp"

#include <stdexcept>

namespace nn {

char const* to_string(Layout layout) noexcept { return layout == Layout::nchw ? "nchw" : "nhwc"; }

char const* to_string(Device device) noexcept { return device == Device::cpu ? "cpu" : "cuda"; }

char const* to_string(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::i32: return "i32";
  }
  return "?";
}

std::size_t size_of(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::i32: return 4;
  }
  return 1;
}

std::string Shape::str() const {
  return "[" + std::to_string(n) + ", " + std::to_string(c) + ", " + std::to_string(h) + ", " +
         std::to_string(w) + "]";
}

Strides strides_of(Shape const& s, Layout layout) noexcept {
  auto const c = static_cast<std::size_t>(s.c);
  auto const h = static_cast<std::size_t>(s.h);
  auto const w = static_cast<std::size_t>(s.w);
  if (layout == Layout::nchw) return Strides{c * h * w, h * w, w, 1};
  return Strides{h * w * c, 1, w * c, c};
}

Tensor make_tensor(std::shared_ptr<void> storage, std::size_t elements, Shape shape, Layout layout,
                   DType dtype, Device device) {
  if (shape.n < 0 || shape.c < 0 || shape.h < 0 || shape.w < 0) {
    throw std::invalid_argument("nn::Tensor: negative dimension in shape " + shape.str());
  }
  if (shape.numel() > elements) {
    throw std::out_of_range("nn::Tensor: shape " + shape.str() + " needs " +
                            std::to_string(shape.numel()) + " elements, storage holds " +
                            std::to_string(elements));
  }
  Tensor t;
  t.storage_ = std::move(storage);
  t.offset_ = 0;
  t.capacity_ = elements;
  t.shape_ = shape;
  t.layout_ = layout;
  t.dtype_ = dtype;
  t.device_ = device;
  return t;
}

Tensor Tensor::view(std::size_t offset, Shape shape, Layout layout) const {
  if (offset > capacity_ || shape.numel() > capacity_ - offset) {
    throw std::out_of_range("nn::Tensor::view: " + std::to_string(shape.numel()) +
                            " elements at offset " + std::to_string(offset) + " exceed the " +
                            std::to_string(capacity_) + " elements of " + describe());
  }
  Tensor t = *this;
  t.offset_ = offset_ + offset;
  t.capacity_ = capacity_ - offset;
  t.shape_ = shape;
  t.layout_ = layout;
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape.numel() != numel()) {
    throw std::invalid_argument("nn::Tensor::reshaped: " + shape.str() + " has " +
                                std::to_string(shape.numel()) + " elements, " + describe() +
                                " has " + std::to_string(numel()));
  }
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

std::string Tensor::describe() const {
  return std::string{to_string(dtype_)} + " " + shape_.str() + " " + to_string(layout_) + " " +
         to_string(device_);
}

void Tensor::check_type(DType wanted) const {
  if (wanted != dtype_) {
    throw std::logic_error(std::string{"nn::Tensor: accessed as "} + to_string(wanted) + ", is " +
                           describe());
  }
}

}  // namespace nn
