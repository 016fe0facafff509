// Launchers of the CUDA backend's own kernels (cuda_kernels.cu). Plain C++: host code compiled
// by any compiler calls them; every launch goes on the given stream and returns at once.
// Float tensors are f32; per-channel work uses the (outer, channels, inner) view of a tensor:
// element (o, c, i) at (o * channels + c) * inner + i — NCHW: outer = n, inner = h*w;
// NHWC: outer = n*h*w, inner = 1.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace nn::cuda {

struct ChannelDims {
  std::size_t outer, channels, inner;
};

/// Doubles of scratch the batch-norm partial sums need (`groups` per channel).
inline std::size_t bn_scratch_doubles(std::size_t channels, int groups) noexcept {
  return channels * static_cast<std::size_t>(groups) * 2;
}
/// Scratch (in doubles) a batch-norm call needs: partial sums, then 3 floats per channel of
/// per-channel coefficients.
inline std::size_t bn_scratch_total(std::size_t channels, int groups) noexcept {
  return bn_scratch_doubles(channels, groups) + (3 * channels + 1) / 2;
}
/// How many partial groups per channel the batch-norm reductions use on `sm_count` SMs.
int bn_groups(ChannelDims const& d, int sm_count) noexcept;

void fill(float* p, std::size_t n, float value, cudaStream_t stream);
void relu_forward(float const* x, float* y, std::size_t n, cudaStream_t stream);
void relu_backward(float const* y, float const* dy, float* dx, std::size_t n, cudaStream_t stream);
void add(float const* a, float const* b, float* y, std::size_t n, cudaStream_t stream);

/// Training-mode batch norm: statistics, running-statistics update and normalisation.
void batchnorm_forward(float const* x, float const* gamma, float const* beta, double eps,
                       double momentum, float* running_mean, float* running_var, float* saved_mean,
                       float* saved_invstd, float* y, ChannelDims d, double* scratch, int groups,
                       cudaStream_t stream);
/// Gradients for x, gamma and beta.
void batchnorm_backward(float const* x, float const* dy, float const* gamma,
                        float const* saved_mean, float const* saved_invstd, float* dx,
                        float* dgamma, float* dbeta, ChannelDims d, double* scratch, int groups,
                        cudaStream_t stream);

/// y[n*c] = mean over the hw pixels; x in NCHW (channels_last false) or NHWC.
void avgpool_forward(float const* x, float* y, std::size_t n, std::size_t c, std::size_t hw,
                     bool channels_last, cudaStream_t stream);
void avgpool_backward(float const* dy, float* dx, std::size_t n, std::size_t c, std::size_t hw,
                      bool channels_last, cudaStream_t stream);

/// y[i*cols + j] += bias[j].
void add_bias(float* y, float const* bias, std::size_t rows, std::size_t cols, cudaStream_t stream);
/// y[j] = sum_i x[i*cols + j].
void sum_rows(float const* x, float* y, std::size_t rows, std::size_t cols, cudaStream_t stream);

/// Softmax cross-entropy over rows of logits [n, k]; metrics[0] = mean loss (NaN when a label
/// is outside [0, k)), metrics[1] = correct predictions; dlogits = (softmax - one_hot) / n.
void softmax_cross_entropy(float const* logits, std::int32_t const* labels, std::size_t n,
                           std::size_t k, float* metrics, float* dlogits, cudaStream_t stream);

/// g' = g + wd * w; v = momentum * v + g'; w -= lr * v.
void sgd_momentum(float* w, float const* g, float* v, std::size_t n, float lr, float momentum,
                  float weight_decay, cudaStream_t stream);

}  // namespace nn::cuda
