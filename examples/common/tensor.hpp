// A small 4-D tensor for nsightkit's examples: shape [n, c, h, w], a memory layout (NCHW or
// channels-last NHWC), an element type and a device. Storage is shared and reference-counted;
// views alias part of another tensor's storage (the flat parameter buffer of the optimizer).
//
// Matrices are tensors too: a tensor is read as a row-major matrix of n rows and c*h*w columns,
// which for h = w = 1 is the same memory in both layouts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace nn {

/// Where a tensor's memory lives.
enum class Device { cpu, cuda };

/// Memory order of a 4-D tensor. Filters use the same order: KCRS for NCHW, KRSC for NHWC.
enum class Layout { nchw, nhwc };

/// Element type.
enum class DType { f32, f64, i32 };

/// "nchw" / "nhwc".
char const* to_string(Layout layout) noexcept;
/// "cpu" / "cuda".
char const* to_string(Device device) noexcept;
/// "f32" / "f64" / "i32".
char const* to_string(DType dtype) noexcept;
/// Bytes per element.
std::size_t size_of(DType dtype) noexcept;

/// A 4-D shape [n, c, h, w] (logical order, whatever the layout).
struct Shape {
  int n{1};
  int c{1};
  int h{1};
  int w{1};

  /// Number of elements.
  [[nodiscard]] std::size_t numel() const noexcept {
    return static_cast<std::size_t>(n) * static_cast<std::size_t>(c) * static_cast<std::size_t>(h) *
           static_cast<std::size_t>(w);
  }
  /// "[n, c, h, w]".
  [[nodiscard]] std::string str() const;

  friend bool operator==(Shape const& a, Shape const& b) noexcept {
    return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w;
  }
  friend bool operator!=(Shape const& a, Shape const& b) noexcept { return !(a == b); }
};

/// Element strides of a 4-D tensor in a layout: offset = n*sn + c*sc + h*sh + w*sw.
struct Strides {
  std::size_t n, c, h, w;
};

/// The strides of `shape` stored in `layout`.
Strides strides_of(Shape const& shape, Layout layout) noexcept;

/// Offset of element (n, c, h, w) of `shape` stored in `layout`.
inline std::size_t offset_of(Strides const& s, int n, int c, int h, int w) noexcept {
  return static_cast<std::size_t>(n) * s.n + static_cast<std::size_t>(c) * s.c +
         static_cast<std::size_t>(h) * s.h + static_cast<std::size_t>(w) * s.w;
}

/**
 * A tensor: shared storage, an element offset into it, shape, layout, element type, device.
 * Copying a Tensor copies the handle (both refer to the same memory), as in PyTorch.
 * Tensors are made by a Backend (Backend::empty) or as views of another tensor.
 */
class Tensor {
 public:
  /// An empty tensor (no storage).
  Tensor() = default;

  [[nodiscard]] bool defined() const noexcept { return storage_ != nullptr; }
  [[nodiscard]] Shape const& shape() const noexcept { return shape_; }
  [[nodiscard]] Layout layout() const noexcept { return layout_; }
  [[nodiscard]] DType dtype() const noexcept { return dtype_; }
  [[nodiscard]] Device device() const noexcept { return device_; }
  [[nodiscard]] std::size_t numel() const noexcept { return shape_.numel(); }
  [[nodiscard]] std::size_t bytes() const noexcept { return numel() * size_of(dtype_); }
  /// Rows when read as a matrix (n).
  [[nodiscard]] int rows() const noexcept { return shape_.n; }
  /// Columns when read as a matrix (c*h*w).
  [[nodiscard]] int cols() const noexcept { return shape_.c * shape_.h * shape_.w; }

  /// The first element's address (device memory for CUDA tensors).
  [[nodiscard]] void* raw() const noexcept {
    return static_cast<char*>(storage_.get()) + offset_ * size_of(dtype_);
  }
  /// Typed access; throws std::logic_error when T does not match the element type.
  template <class T>
  [[nodiscard]] T* data() const {
    check_type(type_of<T>());
    return static_cast<T*>(raw());
  }

  /// A tensor aliasing `shape.numel()` elements of this one's storage, starting `offset`
  /// elements after this tensor's first element. Throws std::out_of_range past the end.
  [[nodiscard]] Tensor view(std::size_t offset, Shape shape, Layout layout) const;

  /// The same memory with another shape of the same size (e.g. [n, c, 1, 1] as a matrix).
  [[nodiscard]] Tensor reshaped(Shape shape) const;

  /// "f32 [n, c, h, w] nhwc cuda".
  [[nodiscard]] std::string describe() const;

 private:
  template <class T>
  static constexpr DType type_of() noexcept;
  void check_type(DType wanted) const;

  std::shared_ptr<void> storage_;
  std::size_t offset_{0};
  std::size_t capacity_{0};  // elements of storage_ after offset_ (0: unknown, unchecked)
  Shape shape_{};
  Layout layout_{Layout::nchw};
  DType dtype_{DType::f32};
  Device device_{Device::cpu};

  friend Tensor make_tensor(std::shared_ptr<void> storage, std::size_t elements, Shape shape,
                            Layout layout, DType dtype, Device device);
};

template <>
constexpr DType Tensor::type_of<float>() noexcept {
  return DType::f32;
}
template <>
constexpr DType Tensor::type_of<double>() noexcept {
  return DType::f64;
}
template <>
constexpr DType Tensor::type_of<std::int32_t>() noexcept {
  return DType::i32;
}

/// A tensor owning `storage` of `elements` elements (backends call this).
Tensor make_tensor(std::shared_ptr<void> storage, std::size_t elements, Shape shape, Layout layout,
                   DType dtype, Device device);

}  // namespace nn
