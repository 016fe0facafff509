// nn::InferenceOps on the GPU: this file's kernels and cuBLAS strided batched GEMMs, all on the
// compute stream of the CUDA backend they work next to. fp32 storage; reductions in fp32
// (two passes: mean, then squared deviations, so large means do not cancel).
#include "common/inference_ops_detail.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace nn::detail {
namespace {

using std::size_t;

constexpr int kThreads = 256;

unsigned blocks_for(size_t n) {
  size_t const b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<size_t>(std::max<size_t>(b, 1), size_t{1} << 20));
}

__device__ float activate(Activation act, float v) {
  switch (act) {
    case Activation::none: return v;
    case Activation::relu: return v > 0.0f ? v : 0.0f;
    case Activation::sigmoid: return 1.0f / (1.0f + expf(-v));
  }
  return v;
}

__global__ void bias_act_kernel(float* y, float const* bias, float const* residual, size_t n,
                                size_t cols, Activation act) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    float v = y[i] + bias[i % cols];
    if (residual != nullptr) v += residual[i];
    y[i] = activate(act, v);
  }
}

__global__ void add_repeat_kernel(float const* a, float const* b, float* y, size_t n,
                                  size_t block) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    y[i] = a[i] + b[i % block];
  }
}

/// Sum of `v` over the block (every thread gets the result). `scratch` holds 32 floats.
__device__ float block_sum(float v, float* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  int const warp = static_cast<int>(threadIdx.x) / 32;
  int const lane = static_cast<int>(threadIdx.x) % 32;
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  int const warps = static_cast<int>(blockDim.x + 31) / 32;
  v = lane < warps ? scratch[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Maximum of `v` over the block (every thread gets the result).
__device__ float block_max(float v, float* scratch) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  int const warp = static_cast<int>(threadIdx.x) / 32;
  int const lane = static_cast<int>(threadIdx.x) % 32;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  int const warps = static_cast<int>(blockDim.x + 31) / 32;
  v = lane < warps ? scratch[lane] : -INFINITY;
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// One block per row.
__global__ void layer_norm_kernel(float const* x, float const* residual, float const* gamma,
                                  float const* beta, float eps, float* y, size_t cols) {
  __shared__ float scratch[32];
  size_t const row = blockIdx.x;
  float const* xr = x + row * cols;
  float const* rr = residual != nullptr ? residual + row * cols : nullptr;
  float* yr = y + row * cols;
  float sum = 0.0f;
  for (size_t j = threadIdx.x; j < cols; j += blockDim.x) sum += xr[j] + (rr ? rr[j] : 0.0f);
  float const mean = block_sum(sum, scratch) / static_cast<float>(cols);
  float sq = 0.0f;
  for (size_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float const d = xr[j] + (rr ? rr[j] : 0.0f) - mean;
    sq += d * d;
  }
  float const inv = rsqrtf(block_sum(sq, scratch) / static_cast<float>(cols) + eps);
  // Each thread writes only the elements it read, so y may alias x or residual.
  for (size_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float const v = xr[j] + (rr ? rr[j] : 0.0f);
    yr[j] = (v - mean) * inv * gamma[j] + beta[j];
  }
}

// One block per row; y may alias x (each thread rewrites only its own elements, after the
// reductions have read the whole row).
__global__ void softmax_rows_kernel(float const* x, float* y, size_t cols) {
  __shared__ float scratch[32];
  size_t const row = blockIdx.x;
  float const* xr = x + row * cols;
  float* yr = y + row * cols;
  float m = -INFINITY;
  for (size_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
  m = block_max(m, scratch);
  float sum = 0.0f;
  for (size_t j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(xr[j] - m);
  float const inv = 1.0f / block_sum(sum, scratch);
  for (size_t j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = expf(xr[j] - m) * inv;
}

// Indexed by the per-head element (b, h, t, j); tokens are [batch * seq, heads * dh].
__global__ void heads_kernel(float const* in, float* out, size_t n, size_t seq, size_t heads,
                             size_t dh, bool split) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    size_t const j = i % dh;
    size_t const t = (i / dh) % seq;
    size_t const bh = i / (dh * seq);
    size_t const h = bh % heads;
    size_t const b = bh / heads;
    size_t const tok = (b * seq + t) * heads * dh + h * dh + j;
    if (split) {
      out[i] = in[tok];
    } else {
      out[tok] = in[i];
    }
  }
}

struct PoolDims {
  int n, c, h, w, oh, ow;
  Strides sx, sy;
};

// Indexed by the output element in logical (n, c, oh, ow) order.
__global__ void max_pool_kernel(float const* x, float* y, PoolDims d, PoolGeometry g) {
  size_t const total = static_cast<size_t>(d.n) * d.c * d.oh * d.ow;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total;
       i += size_t{gridDim.x} * blockDim.x) {
    int const ow = static_cast<int>(i % static_cast<size_t>(d.ow));
    int const oh = static_cast<int>((i / static_cast<size_t>(d.ow)) % static_cast<size_t>(d.oh));
    int const c =
        static_cast<int>((i / (static_cast<size_t>(d.ow) * d.oh)) % static_cast<size_t>(d.c));
    int const n = static_cast<int>(i / (static_cast<size_t>(d.ow) * d.oh * d.c));
    float best = -INFINITY;
    for (int r = 0; r < g.kernel; ++r) {
      int const ih = oh * g.stride - g.pad + r;
      if (ih < 0 || ih >= d.h) continue;
      for (int s = 0; s < g.kernel; ++s) {
        int const iw = ow * g.stride - g.pad + s;
        if (iw < 0 || iw >= d.w) continue;
        best = fmaxf(best, x[n * d.sx.n + c * d.sx.c + ih * d.sx.h + iw * d.sx.w]);
      }
    }
    y[n * d.sy.n + c * d.sy.c + oh * d.sy.h + ow * d.sy.w] = best;
  }
}

void cublas_check(cublasStatus_t status, char const* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string{"cuBLAS error: "} + call + " returned " +
                           cublasGetStatusName(status) + ": " + cublasGetStatusString(status));
}

class CudaInferenceOps final : public InferenceOps {
 public:
  CudaInferenceOps(cudaStream_t stream, InferenceOpsOptions const& o)
      : stream_{stream}, options_{o} {
    cublas_check(cublasCreate(&cublas_), "cublasCreate");
    cublas_check(cublasSetStream(cublas_, stream_), "cublasSetStream");
    // A workspace of our own, set after cublasSetStream (which resets it): GEMMs captured into
    // a CUDA graph then use this fixed buffer, not one cuBLAS allocates during the capture.
    cudaError_t const st = cudaMalloc(&workspace_, workspace_bytes);
    if (st != cudaSuccess) {
      cublasDestroy(cublas_);
      throw std::runtime_error(std::string{"CUDA error: cudaMalloc of the cuBLAS workspace ("} +
                               std::to_string(workspace_bytes >> 20) + " MiB) returned " +
                               cudaGetErrorName(st) + ": " + cudaGetErrorString(st));
    }
    cublasStatus_t const ws = cublasSetWorkspace(cublas_, workspace_, workspace_bytes);
    if (ws != CUBLAS_STATUS_SUCCESS) {
      cublasDestroy(cublas_);
      (void)cudaFree(workspace_);
      cublas_check(ws, "cublasSetWorkspace");
    }
  }

  ~CudaInferenceOps() override {
    if (cublas_ != nullptr) cublasDestroy(cublas_);
    if (workspace_ != nullptr) (void)cudaFree(workspace_);
  }

  void bias_act(Tensor& y, Tensor const& bias, Tensor const* residual, Activation act) override {
    check_bias_act(y, bias, residual);
    float const* r = residual != nullptr ? f(*residual, "bias_act", "residual") : nullptr;
    bias_act_kernel<<<blocks_for(y.numel()), kThreads, 0, stream_>>>(
        f(y, "bias_act", "y"), f(bias, "bias_act", "bias"), r, y.numel(),
        static_cast<size_t>(y.shape().c), act);  // pixels x channels
    launched("bias_act");
  }

  void add_repeat(Tensor const& a, Tensor const& b, Tensor& y) override {
    check_add_repeat(a, b, y);
    add_repeat_kernel<<<blocks_for(a.numel()), kThreads, 0, stream_>>>(
        f(a, "add_repeat", "a"), f(b, "add_repeat", "b"), f(y, "add_repeat", "y"), a.numel(),
        b.numel());
    launched("add_repeat");
  }

  void layer_norm(Tensor const& x, Tensor const* residual, Tensor const& gamma, Tensor const& beta,
                  double eps, Tensor& y) override {
    check_layer_norm(x, residual, gamma, beta, eps, y);
    if (x.rows() == 0) return;
    float const* r = residual != nullptr ? f(*residual, "layer_norm", "residual") : nullptr;
    layer_norm_kernel<<<static_cast<unsigned>(x.rows()), kThreads, 0, stream_>>>(
        f(x, "layer_norm", "x"), r, f(gamma, "layer_norm", "gamma"), f(beta, "layer_norm", "beta"),
        static_cast<float>(eps), f(y, "layer_norm", "y"), static_cast<size_t>(x.cols()));
    launched("layer_norm");
  }

  void softmax_rows(Tensor const& x, Tensor& y) override {
    check_softmax_rows(x, y);
    if (x.rows() == 0) return;
    softmax_rows_kernel<<<static_cast<unsigned>(x.rows()), kThreads, 0, stream_>>>(
        f(x, "softmax_rows", "x"), f(y, "softmax_rows", "y"), static_cast<size_t>(x.cols()));
    launched("softmax_rows");
  }

  void split_heads(Tensor const& x, int batch, int heads, Tensor& y) override {
    check_heads(true, x, batch, heads, y);
    heads_launch(f(x, "split_heads", "x"), f(y, "split_heads", "y"), x, batch, heads, true);
  }

  void merge_heads(Tensor const& x, int batch, int heads, Tensor& y) override {
    check_heads(false, x, batch, heads, y);
    heads_launch(f(x, "merge_heads", "x"), f(y, "merge_heads", "y"), y, batch, heads, false);
  }

  void batched_gemm(bool ta, bool tb, int batch, int m, int n, int k, double alpha, Tensor const& a,
                    Tensor const& b, double beta, Tensor& c) override {
    check_batched_gemm(ta, tb, batch, m, n, k, a, b, c);
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
    float const al = static_cast<float>(alpha);
    float const be = static_cast<float>(beta);
    long long const sa = static_cast<long long>(m) * k;
    long long const sb = static_cast<long long>(k) * n;
    long long const sc = static_cast<long long>(m) * n;
    cublas_check(
        cublasGemmStridedBatchedEx(
            cublas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &al,
            f(b, "batched_gemm", "b"), CUDA_R_32F, tb ? k : n, sb, f(a, "batched_gemm", "a"),
            CUDA_R_32F, ta ? m : k, sa, &be, f(c, "batched_gemm", "c"), CUDA_R_32F, n, sc, batch,
            options_.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
  }

  void max_pool2d(Tensor const& x, PoolGeometry g, Tensor& y) override {
    check_max_pool2d(x, g, y);
    Shape const& xs = x.shape();
    Shape const& ys = y.shape();
    PoolDims const d{
        xs.n, xs.c, xs.h, xs.w, ys.h, ys.w, strides_of(xs, x.layout()), strides_of(ys, y.layout())};
    max_pool_kernel<<<blocks_for(y.numel()), kThreads, 0, stream_>>>(f(x, "max_pool2d", "x"),
                                                                     f(y, "max_pool2d", "y"), d, g);
    launched("max_pool2d");
  }

 private:
  void heads_launch(float const* in, float* out, Tensor const& tokens, int batch, int heads,
                    bool split) {
    size_t const seq = static_cast<size_t>(tokens.rows() / batch);
    size_t const dh = static_cast<size_t>(tokens.cols() / heads);
    heads_kernel<<<blocks_for(tokens.numel()), kThreads, 0, stream_>>>(
        in, out, tokens.numel(), seq, static_cast<size_t>(heads), dh, split);
    launched(split ? "split_heads" : "merge_heads");
  }

  static float* f(Tensor const& t, char const* op, char const* what) {
    check_float(op, what, t, DType::f32);
    if (t.device() != Device::cuda) {
      throw std::invalid_argument(std::string{op} + ": " + what + " is " + t.describe() +
                                  ", expected a cuda tensor");
    }
    return static_cast<float*>(t.raw());
  }

  static void launched(char const* op) {
    cudaError_t const e = cudaGetLastError();
    if (e != cudaSuccess) {
      throw std::runtime_error(std::string{"CUDA error: launching "} + op + ": " +
                               cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
    }
  }

  /// 32 MiB: cuBLAS's recommendation for Hopper, more than enough elsewhere.
  static constexpr size_t workspace_bytes = size_t{32} << 20;

  cudaStream_t stream_;
  InferenceOpsOptions options_;
  cublasHandle_t cublas_{};
  void* workspace_{nullptr};
};

}  // namespace

std::unique_ptr<InferenceOps> make_cuda_inference_ops(void* stream,
                                                      InferenceOpsOptions const& options) {
  return std::make_unique<CudaInferenceOps>(static_cast<cudaStream_t>(stream), options);
}

}  // namespace nn::detail
