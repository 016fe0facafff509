// The CUDA backend's host side: memory, cuDNN convolutions, cuBLAS GEMMs, and launches of the
// example's own kernels, all on one non-blocking compute stream.
#include "common/cuda_backend.hpp"

#include "common/cuda_kernels.hpp"

#include <nsightkit/cuda_check.hpp>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace nn {
namespace {

using std::size_t;

void cudnn_check(cudnnStatus_t status, char const* call) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string{"cuDNN error: "} + call + " returned " +
                           cudnnGetErrorString(status) + " (" +
                           std::to_string(static_cast<int>(status)) + ")");
}

void cublas_check(cublasStatus_t status, char const* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string{"cuBLAS error: "} + call + " returned " +
                           cublasGetStatusName(status) + ": " + cublasGetStatusString(status));
}

#define NN_CUDNN(call) cudnn_check((call), #call)
#define NN_CUBLAS(call) cublas_check((call), #call)

inline size_t uz(int v) noexcept { return static_cast<size_t>(v); }

cudnnTensorFormat_t format_of(Layout layout) noexcept {
  return layout == Layout::nchw ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
}

/// One convolution's cuDNN descriptors and the algorithms chosen for it (per direction).
struct ConvPlan {
  cudnnTensorDescriptor_t x{}, y{};
  cudnnFilterDescriptor_t w{};
  cudnnConvolutionDescriptor_t fwd{}, bwd_data{}, bwd_filter{};  // one per direction: math type
  bool have_fwd{false}, have_bwd_data{false}, have_bwd_filter{false};
  cudnnConvolutionFwdAlgo_t fwd_algo{};
  cudnnConvolutionBwdDataAlgo_t bwd_data_algo{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo{};
  size_t fwd_ws{0}, bwd_data_ws{0}, bwd_filter_ws{0};

  ConvPlan() = default;
  ConvPlan(ConvPlan const&) = delete;
  ConvPlan& operator=(ConvPlan const&) = delete;
  ~ConvPlan() {
    if (x != nullptr) cudnnDestroyTensorDescriptor(x);
    if (y != nullptr) cudnnDestroyTensorDescriptor(y);
    if (w != nullptr) cudnnDestroyFilterDescriptor(w);
    for (auto* c : {fwd, bwd_data, bwd_filter})
      if (c != nullptr) cudnnDestroyConvolutionDescriptor(c);
  }
};

/// The first usable algorithm of cuDNN's ranked list: status ok, workspace within the limit,
/// and, in precise mode, FP32 FMA math and deterministic.
template <class Perf>
Perf const* choose(std::vector<Perf> const& perfs, int count, size_t limit, bool precise) {
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < count; ++i) {
      Perf const& p = perfs[uz(i)];
      if (p.status != CUDNN_STATUS_SUCCESS || p.memory > limit) continue;
      if (pass == 0 && precise &&
          (p.determinism != CUDNN_DETERMINISTIC || p.mathType == CUDNN_TENSOR_OP_MATH ||
           p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) {
        continue;
      }
      return &p;
    }
    if (!precise) break;
  }
  return nullptr;
}

/// Where released device memory goes: back to CUDA, or (once a CUDA graph may use it, see
/// Backend::retain_freed_memory) kept until the last tensor and the backend are gone. Shared by
/// the backend and the deleters of its tensors, so a tensor may outlive the backend.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(DeviceMemory const&) = delete;
  DeviceMemory& operator=(DeviceMemory const&) = delete;
  ~DeviceMemory() {
    for (void* p : kept_) NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaFree(p));
  }
  void retain() {
    std::lock_guard<std::mutex> const lock{mutex_};
    retain_ = true;
  }
  /// Never throws: called from deleters.
  void release(void* p) noexcept {
    if (p == nullptr) return;
    {
      std::lock_guard<std::mutex> const lock{mutex_};
      if (retain_) {
        try {
          kept_.push_back(p);
          return;
        } catch (...) {  // out of memory: leaking the block is safer than freeing it
          return;
        }
      }
    }
    NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaFree(p));
  }

 private:
  std::mutex mutex_;
  bool retain_{false};
  std::vector<void*> kept_;
};

/// cuBLAS's workspace, set explicitly so that a GEMM captured into a CUDA graph uses this fixed
/// buffer rather than one cuBLAS allocates for the capture (32 MiB: cuBLAS's recommendation for
/// Hopper, more than enough elsewhere).
constexpr size_t cublas_workspace_bytes = size_t{32} << 20;

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(CudaBackendOptions const& o) : options_{o} {
    NSIGHTKIT_CUDA_CHECK(cudaSetDevice(o.device));
    cudaDeviceProp prop{};
    NSIGHTKIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, o.device));
    device_name_ = prop.name;
    sm_count_ = prop.multiProcessorCount;
    NSIGHTKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    NN_CUDNN(cudnnCreate(&cudnn_));
    NN_CUDNN(cudnnSetStream(cudnn_, stream_));
    NN_CUBLAS(cublasCreate(&cublas_));
    NN_CUBLAS(cublasSetStream(cublas_, stream_));
    // After cublasSetStream, which resets the handle to cuBLAS's own workspace pool.
    NSIGHTKIT_CUDA_CHECK(cudaMalloc(&cublas_workspace_, cublas_workspace_bytes));
    NN_CUBLAS(cublasSetWorkspace(cublas_, cublas_workspace_, cublas_workspace_bytes));
    NN_CUBLAS(
        cublasSetMathMode(cublas_, o.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH));
  }

  ~CudaBackend() override {
    NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream_));
    plans_.clear();
    workspace_.reset();
    scratch_.reset();
    if (cublas_ != nullptr) cublasDestroy(cublas_);
    if (cublas_workspace_ != nullptr) NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaFree(cublas_workspace_));
    if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
    NSIGHTKIT_CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream_));
  }

  [[nodiscard]] Device device() const noexcept override { return Device::cuda; }
  [[nodiscard]] DType float_type() const noexcept override { return DType::f32; }
  [[nodiscard]] bool supports(Layout) const noexcept override { return true; }
  [[nodiscard]] void* stream_handle() const noexcept override { return stream_; }

  [[nodiscard]] std::string describe() const override {
    size_t const v = cudnnGetVersion();
    int cublas_version = 0;
    cublasGetVersion(cublas_, &cublas_version);
    return "cuda (" + device_name_ + ", cuDNN " + std::to_string(v / 10000) + "." +
           std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) + " [built with " +
           std::to_string(CUDNN_MAJOR) + "." + std::to_string(CUDNN_MINOR) + "], cuBLAS " +
           std::to_string(cublas_version) + ", " +
           (options_.tf32 ? "TF32 tensor-core math" : "FP32 FMA math, deterministic algorithms") +
           (options_.benchmark ? ", algorithms timed (cudnnFind)" : ", heuristic algorithms") + ")";
  }

  [[nodiscard]] Tensor empty(Shape shape, Layout layout, DType dtype) override {
    size_t const n = std::max<size_t>(shape.numel(), 1);
    void* p = nullptr;
    NSIGHTKIT_CUDA_CHECK(cudaMalloc(&p, n * size_of(dtype)));
    std::shared_ptr<void> storage(p, [memory = memory_](void* q) { memory->release(q); });
    return make_tensor(std::move(storage), n, shape, layout, dtype, Device::cuda);
  }

  void write(Tensor& dst, std::vector<double> const& values) override {
    check_device("write", dst);
    if (values.size() != dst.numel()) {
      throw std::invalid_argument("write: " + std::to_string(values.size()) + " values for " +
                                  dst.describe());
    }
    if (dst.dtype() == DType::i32) {
      std::vector<std::int32_t> h(values.begin(), values.end());
      copy_in(dst, h.data(), h.size() * sizeof(std::int32_t));
    } else if (dst.dtype() == DType::f32) {
      std::vector<float> h(values.size());
      for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(values[i]);
      copy_in(dst, h.data(), h.size() * sizeof(float));
    } else {
      throw std::invalid_argument("write: the CUDA backend has no f64 tensors");
    }
  }

  [[nodiscard]] std::vector<double> read(Tensor const& src) override {
    check_device("read", src);
    std::vector<double> out(src.numel());
    if (src.dtype() == DType::i32) {
      std::vector<std::int32_t> h(src.numel());
      copy_out(h.data(), src);
      out.assign(h.begin(), h.end());
    } else {
      std::vector<float> h(src.numel());
      copy_out(h.data(), src);
      for (size_t i = 0; i < h.size(); ++i) out[i] = static_cast<double>(h[i]);
    }
    return out;
  }

  void upload(Tensor& dst, void const* host, size_t bytes) override {
    check_device("upload", dst);
    if (bytes != dst.bytes()) {
      throw std::invalid_argument("upload: " + std::to_string(bytes) + " bytes for " +
                                  dst.describe());
    }
    NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), host, bytes, cudaMemcpyHostToDevice, stream_));
  }

  void fill(Tensor& dst, double value) override {
    cuda::fill(f(dst, "fill", "dst"), dst.numel(), static_cast<float>(value), stream_);
    launched("fill");
  }

  void synchronize() override { NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

  void retain_freed_memory() override { memory_->retain(); }

  // ---- convolution ----

  void conv2d_forward(Tensor const& x, Tensor const& w, ConvGeometry g, Tensor& y) override {
    check_shape("conv2d_forward", "y", y, conv_output_shape(x.shape(), w.shape(), g));
    ConvPlan& p = plan(x, w, g, "conv2d_forward");
    if (!p.have_fwd) {
      int n = 0;
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
      if (options_.benchmark) {
        NN_CUDNN(cudnnFindConvolutionForwardAlgorithm(
            cudnn_, p.x, p.w, p.fwd, p.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perfs.data()));
      } else {
        NN_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(
            cudnn_, p.x, p.w, p.fwd, p.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perfs.data()));
      }
      auto const* best = choose(perfs, n, options_.workspace_limit, !options_.tf32);
      if (best == nullptr) no_algorithm("forward", x, w);
      p.fwd_algo = best->algo;
      set_math(p.fwd, best->mathType);
      NN_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(cudnn_, p.x, p.w, p.fwd, p.y, p.fwd_algo,
                                                       &p.fwd_ws));
      p.have_fwd = true;
    }
    float const one = 1.0f, zero = 0.0f;
    void* ws = workspace(p.fwd_ws);
    NN_CUDNN(cudnnConvolutionForward(cudnn_, &one, p.x, f(x, "conv2d_forward", "x"), p.w,
                                     f(w, "conv2d_forward", "w"), p.fwd, p.fwd_algo, ws, p.fwd_ws,
                                     &zero, p.y, f(y, "conv2d_forward", "y")));
  }

  void conv2d_backward_data(Tensor const& dy, Tensor const& w, ConvGeometry g,
                            Tensor& dx) override {
    check_shape("conv2d_backward_data", "dy", dy, conv_output_shape(dx.shape(), w.shape(), g));
    ConvPlan& p = plan(dx, w, g, "conv2d_backward_data");
    if (!p.have_bwd_data) {
      int n = 0;
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
      if (options_.benchmark) {
        NN_CUDNN(cudnnFindConvolutionBackwardDataAlgorithm(cudnn_, p.w, p.y, p.bwd_data, p.x,
                                                           CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                           &n, perfs.data()));
      } else {
        NN_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_, p.w, p.y, p.bwd_data, p.x,
                                                             CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                             &n, perfs.data()));
      }
      auto const* best = choose(perfs, n, options_.workspace_limit, !options_.tf32);
      if (best == nullptr) no_algorithm("backward data", dx, w);
      p.bwd_data_algo = best->algo;
      set_math(p.bwd_data, best->mathType);
      NN_CUDNN(cudnnGetConvolutionBackwardDataWorkspaceSize(cudnn_, p.w, p.y, p.bwd_data, p.x,
                                                            p.bwd_data_algo, &p.bwd_data_ws));
      p.have_bwd_data = true;
    }
    float const one = 1.0f, zero = 0.0f;
    void* ws = workspace(p.bwd_data_ws);
    NN_CUDNN(cudnnConvolutionBackwardData(cudnn_, &one, p.w, f(w, "conv2d_backward_data", "w"), p.y,
                                          f(dy, "conv2d_backward_data", "dy"), p.bwd_data,
                                          p.bwd_data_algo, ws, p.bwd_data_ws, &zero, p.x,
                                          f(dx, "conv2d_backward_data", "dx")));
  }

  void conv2d_backward_filter(Tensor const& x, Tensor const& dy, ConvGeometry g,
                              Tensor& dw) override {
    check_shape("conv2d_backward_filter", "dy", dy, conv_output_shape(x.shape(), dw.shape(), g));
    ConvPlan& p = plan(x, dw, g, "conv2d_backward_filter");
    if (!p.have_bwd_filter) {
      int n = 0;
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perfs(
          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
      if (options_.benchmark) {
        NN_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithm(
            cudnn_, p.x, p.y, p.bwd_filter, p.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n,
            perfs.data()));
      } else {
        NN_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            cudnn_, p.x, p.y, p.bwd_filter, p.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n,
            perfs.data()));
      }
      auto const* best = choose(perfs, n, options_.workspace_limit, !options_.tf32);
      if (best == nullptr) no_algorithm("backward filter", x, dw);
      p.bwd_filter_algo = best->algo;
      set_math(p.bwd_filter, best->mathType);
      NN_CUDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnn_, p.x, p.y, p.bwd_filter, p.w,
                                                              p.bwd_filter_algo, &p.bwd_filter_ws));
      p.have_bwd_filter = true;
    }
    float const one = 1.0f, zero = 0.0f;
    void* ws = workspace(p.bwd_filter_ws);
    NN_CUDNN(cudnnConvolutionBackwardFilter(cudnn_, &one, p.x, f(x, "conv2d_backward_filter", "x"),
                                            p.y, f(dy, "conv2d_backward_filter", "dy"),
                                            p.bwd_filter, p.bwd_filter_algo, ws, p.bwd_filter_ws,
                                            &zero, p.w, f(dw, "conv2d_backward_filter", "dw")));
  }

  // ---- batch normalisation ----

  void batchnorm_forward(Tensor const& x, Tensor const& gamma, Tensor const& beta, double eps,
                         double momentum, Tensor& running_mean, Tensor& running_var,
                         Tensor& saved_mean, Tensor& saved_invstd, Tensor& y) override {
    char const* op = "batchnorm_forward";
    check_same(op, x, y);
    Shape const cs{x.shape().c, 1, 1, 1};
    for (Tensor const* t : std::initializer_list<Tensor const*>{
             &gamma, &beta, &running_mean, &running_var, &saved_mean, &saved_invstd})
      check_shape(op, "per-channel tensor", *t, cs);
    cuda::ChannelDims const d = dims(x);
    if (d.outer * d.inner < 2)
      throw std::invalid_argument("batchnorm_forward: needs >= 2 values per channel");
    int const groups = cuda::bn_groups(d, sm_count_);
    cuda::batchnorm_forward(f(x, op, "x"), f(gamma, op, "gamma"), f(beta, op, "beta"), eps,
                            momentum, f(running_mean, op, "running_mean"),
                            f(running_var, op, "running_var"), f(saved_mean, op, "saved_mean"),
                            f(saved_invstd, op, "saved_invstd"), f(y, op, "y"), d,
                            scratch(cuda::bn_scratch_total(d.channels, groups)), groups, stream_);
    launched(op);
  }

  void batchnorm_backward(Tensor const& x, Tensor const& dy, Tensor const& gamma,
                          Tensor const& saved_mean, Tensor const& saved_invstd, Tensor& dx,
                          Tensor& dgamma, Tensor& dbeta) override {
    char const* op = "batchnorm_backward";
    check_same(op, x, dy);
    check_same(op, x, dx);
    Shape const cs{x.shape().c, 1, 1, 1};
    for (Tensor const* t :
         std::initializer_list<Tensor const*>{&gamma, &saved_mean, &saved_invstd, &dgamma, &dbeta})
      check_shape(op, "per-channel tensor", *t, cs);
    cuda::ChannelDims const d = dims(x);
    int const groups = cuda::bn_groups(d, sm_count_);
    cuda::batchnorm_backward(f(x, op, "x"), f(dy, op, "dy"), f(gamma, op, "gamma"),
                             f(saved_mean, op, "saved_mean"), f(saved_invstd, op, "saved_invstd"),
                             f(dx, op, "dx"), f(dgamma, op, "dgamma"), f(dbeta, op, "dbeta"), d,
                             scratch(cuda::bn_scratch_total(d.channels, groups)), groups, stream_);
    launched(op);
  }

  // ---- element-wise ----

  void relu_forward(Tensor const& x, Tensor& y) override {
    check_same("relu_forward", x, y);
    cuda::relu_forward(f(x, "relu_forward", "x"), f(y, "relu_forward", "y"), x.numel(), stream_);
    launched("relu_forward");
  }

  void relu_backward(Tensor const& y, Tensor const& dy, Tensor& dx) override {
    check_same("relu_backward", y, dy);
    check_same("relu_backward", y, dx);
    cuda::relu_backward(f(y, "relu_backward", "y"), f(dy, "relu_backward", "dy"),
                        f(dx, "relu_backward", "dx"), y.numel(), stream_);
    launched("relu_backward");
  }

  void add(Tensor const& a, Tensor const& b, Tensor& y) override {
    check_same("add", a, b);
    check_same("add", a, y);
    cuda::add(f(a, "add", "a"), f(b, "add", "b"), f(y, "add", "y"), a.numel(), stream_);
    launched("add");
  }

  // ---- pooling ----

  void global_avg_pool_forward(Tensor const& x, Tensor& y) override {
    Shape const& s = x.shape();
    check_shape("global_avg_pool_forward", "y", y, Shape{s.n, s.c, 1, 1});
    cuda::avgpool_forward(f(x, "global_avg_pool_forward", "x"),
                          f(y, "global_avg_pool_forward", "y"), uz(s.n), uz(s.c), uz(s.h) * uz(s.w),
                          x.layout() == Layout::nhwc, stream_);
    launched("global_avg_pool_forward");
  }

  void global_avg_pool_backward(Tensor const& dy, Tensor& dx) override {
    Shape const& s = dx.shape();
    check_shape("global_avg_pool_backward", "dy", dy, Shape{s.n, s.c, 1, 1});
    cuda::avgpool_backward(f(dy, "global_avg_pool_backward", "dy"),
                           f(dx, "global_avg_pool_backward", "dx"), uz(s.n), uz(s.c),
                           uz(s.h) * uz(s.w), dx.layout() == Layout::nhwc, stream_);
    launched("global_avg_pool_backward");
  }

  // ---- matrices: row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T ----

  void gemm(bool ta, bool tb, double alpha, Tensor const& a, Tensor const& b, double beta,
            Tensor& c) override {
    int const m = ta ? a.cols() : a.rows(), k = ta ? a.rows() : a.cols();
    int const kb = tb ? b.cols() : b.rows(), n = tb ? b.rows() : b.cols();
    if (k != kb || c.rows() != m || c.cols() != n) {
      throw std::invalid_argument("gemm: op(a) is " + std::to_string(m) + "x" + std::to_string(k) +
                                  ", op(b) is " + std::to_string(kb) + "x" + std::to_string(n) +
                                  ", c is " + std::to_string(c.rows()) + "x" +
                                  std::to_string(c.cols()));
    }
    float const al = static_cast<float>(alpha), be = static_cast<float>(beta);
    NN_CUBLAS(cublasSgemm(cublas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                          n, m, k, &al, f(b, "gemm", "b"), b.cols(), f(a, "gemm", "a"), a.cols(),
                          &be, f(c, "gemm", "c"), n));
  }

  void add_bias(Tensor& y, Tensor const& bias) override {
    if (bias.numel() != uz(y.cols())) {
      throw std::invalid_argument("add_bias: bias has " + std::to_string(bias.numel()) +
                                  " elements, y has " + std::to_string(y.cols()) + " columns");
    }
    cuda::add_bias(f(y, "add_bias", "y"), f(bias, "add_bias", "bias"), uz(y.rows()), uz(y.cols()),
                   stream_);
    launched("add_bias");
  }

  void sum_rows(Tensor const& x, Tensor& y) override {
    if (y.numel() != uz(x.cols())) {
      throw std::invalid_argument("sum_rows: y has " + std::to_string(y.numel()) +
                                  " elements, x has " + std::to_string(x.cols()) + " columns");
    }
    cuda::sum_rows(f(x, "sum_rows", "x"), f(y, "sum_rows", "y"), uz(x.rows()), uz(x.cols()),
                   stream_);
    launched("sum_rows");
  }

  void softmax_cross_entropy(Tensor const& logits, Tensor const& labels, Tensor& metrics,
                             Tensor& dlogits) override {
    char const* op = "softmax_cross_entropy";
    check_same(op, logits, dlogits);
    check_dtype(op, "labels", labels, DType::i32);
    check_device(op, labels);
    if (labels.numel() != uz(logits.rows()) || metrics.numel() != 2) {
      throw std::invalid_argument(std::string{op} + ": labels need " +
                                  std::to_string(logits.rows()) + " elements and metrics 2; got " +
                                  labels.describe() + ", " + metrics.describe());
    }
    cuda::softmax_cross_entropy(f(logits, op, "logits"), labels.data<std::int32_t>(),
                                uz(logits.rows()), uz(logits.cols()), f(metrics, op, "metrics"),
                                f(dlogits, op, "dlogits"), stream_);
    launched(op);
  }

  void sgd_momentum(Tensor& w, Tensor const& g, Tensor& v, double lr, double momentum,
                    double weight_decay) override {
    if (w.numel() != g.numel() || w.numel() != v.numel()) {
      throw std::invalid_argument("sgd_momentum: sizes differ");
    }
    cuda::sgd_momentum(f(w, "sgd_momentum", "w"), f(g, "sgd_momentum", "g"),
                       f(v, "sgd_momentum", "v"), w.numel(), static_cast<float>(lr),
                       static_cast<float>(momentum), static_cast<float>(weight_decay), stream_);
    launched("sgd_momentum");
  }

 private:
  /// A device buffer that only grows (reallocation synchronizes: it happens in warm-up steps;
  /// the old block goes through DeviceMemory, so a CUDA graph that used it keeps it).
  struct Buffer {
    std::shared_ptr<DeviceMemory> memory;
    void* p{nullptr};
    size_t bytes{0};
    void reset() noexcept {
      memory->release(p);
      p = nullptr;
      bytes = 0;
    }
    void* at_least(size_t n) {
      if (n <= bytes) return p;
      reset();
      NSIGHTKIT_CUDA_CHECK(cudaMalloc(&p, n));
      bytes = n;
      return p;
    }
  };

  void* workspace(size_t bytes) { return bytes == 0 ? nullptr : workspace_.at_least(bytes); }
  double* scratch(size_t doubles) {
    return static_cast<double*>(scratch_.at_least(doubles * sizeof(double)));
  }

  static cuda::ChannelDims dims(Tensor const& t) noexcept {
    Shape const& s = t.shape();
    size_t const hw = uz(s.h) * uz(s.w);
    if (t.layout() == Layout::nchw) return {uz(s.n), uz(s.c), hw};
    return {uz(s.n) * hw, uz(s.c), 1};
  }

  void set_math(cudnnConvolutionDescriptor_t desc, cudnnMathType_t chosen) {
    NN_CUDNN(cudnnSetConvolutionMathType(desc, options_.tf32 ? chosen : CUDNN_FMA_MATH));
  }

  ConvPlan& plan(Tensor const& x, Tensor const& w, ConvGeometry g, char const* op) {
    if (x.layout() != w.layout()) {
      throw std::invalid_argument(std::string{op} + ": input " + x.describe() + " and filter " +
                                  w.describe() + " differ in layout");
    }
    Shape const& xs = x.shape();
    Shape const& ws = w.shape();
    std::array<int, 11> const key{xs.n,
                                  xs.c,
                                  xs.h,
                                  xs.w,
                                  ws.n,
                                  ws.c,
                                  ws.h,
                                  ws.w,
                                  g.stride,
                                  g.pad,
                                  static_cast<int>(x.layout())};
    auto it = plans_.find(key);
    if (it != plans_.end()) return *it->second;
    auto p = std::make_unique<ConvPlan>();
    Shape const ys = conv_output_shape(xs, ws, g);
    cudnnTensorFormat_t const fmt = format_of(x.layout());
    NN_CUDNN(cudnnCreateTensorDescriptor(&p->x));
    NN_CUDNN(cudnnSetTensor4dDescriptor(p->x, fmt, CUDNN_DATA_FLOAT, xs.n, xs.c, xs.h, xs.w));
    NN_CUDNN(cudnnCreateTensorDescriptor(&p->y));
    NN_CUDNN(cudnnSetTensor4dDescriptor(p->y, fmt, CUDNN_DATA_FLOAT, ys.n, ys.c, ys.h, ys.w));
    NN_CUDNN(cudnnCreateFilterDescriptor(&p->w));
    NN_CUDNN(cudnnSetFilter4dDescriptor(p->w, CUDNN_DATA_FLOAT, fmt, ws.n, ws.c, ws.h, ws.w));
    for (auto* desc : {&p->fwd, &p->bwd_data, &p->bwd_filter}) {
      NN_CUDNN(cudnnCreateConvolutionDescriptor(desc));
      NN_CUDNN(cudnnSetConvolution2dDescriptor(*desc, g.pad, g.pad, g.stride, g.stride, 1, 1,
                                               CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
      NN_CUDNN(cudnnSetConvolutionMathType(*desc,
                                           options_.tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
    }
    ConvPlan& ref = *p;
    plans_.emplace(key, std::move(p));
    return ref;
  }

  [[noreturn]] void no_algorithm(char const* direction, Tensor const& x, Tensor const& w) const {
    throw std::runtime_error(std::string{"cuDNN: no convolution "} + direction +
                             " algorithm for input " + x.describe() + " and filter " +
                             w.describe() + " within a workspace of " +
                             std::to_string(options_.workspace_limit >> 20) + " MiB" +
                             (options_.tf32 ? "" : " (deterministic FP32 FMA math)"));
  }

  void copy_in(Tensor& dst, void const* host, size_t bytes) {
    NSIGHTKIT_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), host, bytes, cudaMemcpyHostToDevice, stream_));
    NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void copy_out(void* host, Tensor const& src) {
    NSIGHTKIT_CUDA_CHECK(
        cudaMemcpyAsync(host, src.raw(), src.bytes(), cudaMemcpyDeviceToHost, stream_));
    NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  /// Reports a failed launch (bad configuration) at once; faults inside kernels surface later.
  static void launched(char const* op) {
    cudaError_t const e = cudaGetLastError();
    if (e != cudaSuccess) throw nsightkit::CudaError(e, op, __FILE__, __LINE__);
  }

  static void check_device(char const* op, Tensor const& t) {
    if (!t.defined()) throw std::invalid_argument(std::string{op} + ": tensor is undefined");
    if (t.device() != Device::cuda) {
      throw std::invalid_argument(std::string{op} + ": " + t.describe() + " is not a CUDA tensor");
    }
  }

  static float* f(Tensor const& t, char const* op, char const* what) {
    if (!t.defined()) throw std::invalid_argument(std::string{op} + ": " + what + " is undefined");
    if (t.device() != Device::cuda) {
      throw std::invalid_argument(std::string{op} + ": " + what + " is " + t.describe() +
                                  ", the CUDA backend needs CUDA tensors");
    }
    check_dtype(op, what, t, DType::f32);
    return static_cast<float*>(t.raw());
  }

  CudaBackendOptions options_;
  std::string device_name_;
  int sm_count_{1};
  cudaStream_t stream_{};
  cudnnHandle_t cudnn_{};
  cublasHandle_t cublas_{};
  std::map<std::array<int, 11>, std::unique_ptr<ConvPlan>> plans_;
  std::shared_ptr<DeviceMemory> memory_{std::make_shared<DeviceMemory>()};
  Buffer workspace_{memory_}, scratch_{memory_};
  void* cublas_workspace_{nullptr};
};

}  // namespace

bool cuda_backend_built() noexcept { return true; }

bool cuda_available(std::string* why) {
  int count = 0;
  cudaError_t const e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (why != nullptr) {
      *why = std::string{"cudaGetDeviceCount returned "} + cudaGetErrorName(e) + ": " +
             cudaGetErrorString(e);
    }
    return false;
  }
  if (count == 0) {
    if (why != nullptr) *why = "no CUDA device";
    return false;
  }
  return true;
}

std::unique_ptr<Backend> make_cuda_backend(CudaBackendOptions const& options) {
  std::string why;
  if (!cuda_available(&why)) throw std::runtime_error("CUDA backend unavailable: " + why);
  return std::make_unique<CudaBackend>(options);
}

}  // namespace nn
