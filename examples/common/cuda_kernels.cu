// The CUDA backend's own kernels: element-wise ops, batch norm, pooling, loss, SGD.
// Convolutions and GEMMs go to cuDNN and cuBLAS (cuda_backend.cpp).
#include "common/cuda_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace nn::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::size_t n) {
  std::size_t const b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<std::size_t>(std::max<std::size_t>(b, 1), 8192));
}

__device__ inline std::size_t global_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::size_t grid_stride() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

__global__ void fill_kernel(float* p, std::size_t n, float v) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) p[i] = v;
}

__global__ void relu_forward_kernel(float const* x, float* y, std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) y[i] = fmaxf(x[i], 0.0f);
}

__global__ void relu_backward_kernel(float const* y, float const* dy, float* dx, std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += grid_stride())
    dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

__global__ void add_kernel(float const* a, float const* b, float* y, std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) y[i] = a[i] + b[i];
}

// ---- batch norm ----
// Reductions write per (channel, group) partial sums of two quantities into scratch
// [channels][groups][2]; a finalize kernel (one block per channel) adds the groups.
// Mode 0 (forward): x and x^2. Mode 1 (backward): dy and dy * xhat.
// Loads are float4 where the layout allows it (channels-first planes of a multiple of 4
// elements; channels-last rows of a multiple of 4 channels), else scalar.

template <int Mode>
__device__ inline void accumulate(float v, float g, float mean, float invstd, double& s1,
                                  double& s2) {
  if (Mode == 0) {
    s1 += v;
    s2 += static_cast<double>(v) * v;
  } else {
    s1 += g;
    s2 += static_cast<double>(g) * ((v - mean) * invstd);
  }
}

template <int Mode>
__device__ inline void accumulate4(float4 v, float4 g, float4 mean, float4 invstd, double* s1,
                                   double* s2) {
  accumulate<Mode>(v.x, g.x, mean.x, invstd.x, s1[0], s2[0]);
  accumulate<Mode>(v.y, g.y, mean.y, invstd.y, s1[1], s2[1]);
  accumulate<Mode>(v.z, g.z, mean.z, invstd.z, s1[2], s2[2]);
  accumulate<Mode>(v.w, g.w, mean.w, invstd.w, s1[3], s2[3]);
}

__device__ inline float4 load4(float const* p, std::size_t i) {
  return reinterpret_cast<float4 const*>(p)[i];
}

// Block-wide sum of two doubles over kThreads threads; thread 0 gets the result.
__device__ inline void block_sum(double& a, double& b) {
  __shared__ double sa[kThreads];
  __shared__ double sb[kThreads];
  sa[threadIdx.x] = a;
  sb[threadIdx.x] = b;
  __syncthreads();
  for (unsigned s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      sa[threadIdx.x] += sa[threadIdx.x + s];
      sb[threadIdx.x] += sb[threadIdx.x + s];
    }
    __syncthreads();
  }
  a = sa[0];
  b = sb[0];
}

// Channels-first (inner > 1): grid (channels, groups), 256 threads walking the channel's
// outer x inner elements (float4 units when inner % 4 == 0).
template <int Mode, bool Vec>
__global__ void bn_reduce_planes(float const* x, float const* dy, float const* mean,
                                 float const* invstd, ChannelDims d, double* scratch) {
  std::size_t const c = blockIdx.x;
  std::size_t const g = blockIdx.y, groups = gridDim.y;
  float const m = Mode == 1 ? mean[c] : 0.0f;
  float const is = Mode == 1 ? invstd[c] : 0.0f;
  double s1 = 0.0, s2 = 0.0;
  if (Vec) {
    std::size_t const q = d.inner / 4, total = d.outer * q;
    double a1[4] = {0, 0, 0, 0}, a2[4] = {0, 0, 0, 0};
    float4 const m4 = make_float4(m, m, m, m), is4 = make_float4(is, is, is, is);
    for (std::size_t u = g * kThreads + threadIdx.x; u < total; u += groups * kThreads) {
      std::size_t const o = u / q, j = u - o * q;
      std::size_t const at = (o * d.channels + c) * q + j;
      float4 const v = load4(x, at);
      float4 const gr = Mode == 1 ? load4(dy, at) : v;
      accumulate4<Mode>(v, gr, m4, is4, a1, a2);
    }
    s1 = (a1[0] + a1[1]) + (a1[2] + a1[3]);
    s2 = (a2[0] + a2[1]) + (a2[2] + a2[3]);
  } else {
    std::size_t const total = d.outer * d.inner;
    for (std::size_t e = g * kThreads + threadIdx.x; e < total; e += groups * kThreads) {
      std::size_t const o = e / d.inner, i = e - o * d.inner;
      std::size_t const at = (o * d.channels + c) * d.inner + i;
      accumulate<Mode>(x[at], Mode == 1 ? dy[at] : 0.0f, m, is, s1, s2);
    }
  }
  block_sum(s1, s2);
  if (threadIdx.x == 0) {
    scratch[(c * groups + g) * 2] = s1;
    scratch[(c * groups + g) * 2 + 1] = s2;
  }
}

// Channels-last (inner == 1): blocks of 32 x 8 threads; with Vec each thread takes 4
// consecutive channels (a warp reads 512 contiguous bytes of one pixel), else 1; the 8 rows of
// threads take 8 pixels. grid (ceil(channels / (32 * lanes)), groups).
template <int Mode, bool Vec>
__global__ void bn_reduce_rows(float const* x, float const* dy, float const* mean,
                               float const* invstd, ChannelDims d, double* scratch) {
  constexpr int kLanes = Vec ? 4 : 1;
  __shared__ double sh1[8][32 * kLanes];
  __shared__ double sh2[8][32 * kLanes];
  std::size_t const c0 = (static_cast<std::size_t>(blockIdx.x) * 32 + threadIdx.x) * kLanes;
  std::size_t const g = blockIdx.y, groups = gridDim.y;
  double a1[kLanes] = {}, a2[kLanes] = {};
  if (c0 < d.channels) {
    if (Vec) {
      float4 const m4 = Mode == 1 ? load4(mean, c0 / 4) : make_float4(0, 0, 0, 0);
      float4 const is4 = Mode == 1 ? load4(invstd, c0 / 4) : make_float4(0, 0, 0, 0);
      std::size_t const q = d.channels / 4;
      for (std::size_t r = g * 8 + threadIdx.y; r < d.outer; r += groups * 8) {
        std::size_t const at = r * q + c0 / 4;
        float4 const v = load4(x, at);
        float4 const gr = Mode == 1 ? load4(dy, at) : v;
        accumulate4<Mode>(v, gr, m4, is4, a1, a2);
      }
    } else {
      float const m = Mode == 1 ? mean[c0] : 0.0f;
      float const is = Mode == 1 ? invstd[c0] : 0.0f;
      for (std::size_t r = g * 8 + threadIdx.y; r < d.outer; r += groups * 8) {
        std::size_t const at = r * d.channels + c0;
        accumulate<Mode>(x[at], Mode == 1 ? dy[at] : 0.0f, m, is, a1[0], a2[0]);
      }
    }
  }
  for (int k = 0; k < kLanes; ++k) {
    sh1[threadIdx.y][threadIdx.x * kLanes + k] = a1[k];
    sh2[threadIdx.y][threadIdx.x * kLanes + k] = a2[k];
  }
  __syncthreads();
  if (threadIdx.y == 0) {
    for (int k = 0; k < kLanes; ++k) {
      std::size_t const c = c0 + static_cast<std::size_t>(k);
      if (c >= d.channels) break;
      double s1 = 0.0, s2 = 0.0;
      for (int y = 0; y < 8; ++y) {
        s1 += sh1[y][threadIdx.x * kLanes + k];
        s2 += sh2[y][threadIdx.x * kLanes + k];
      }
      scratch[(c * groups + g) * 2] = s1;
      scratch[(c * groups + g) * 2 + 1] = s2;
    }
  }
}

// Channels-last with channels % 4 == 0 and at most kFlatChannels channels: the tensor read as
// a flat array of float4 units, consecutive threads taking consecutive units (fully coalesced
// whatever the channel count). Thread t keeps one channel quad (t % quads) and walks rows; the
// block adds its threads' sums in shared memory (one partial per channel and block).
constexpr std::size_t kFlatChannels = 1024;

template <int Mode>
__global__ void bn_reduce_flat(float const* x, float const* dy, float const* mean,
                               float const* invstd, ChannelDims d, double* scratch) {
  __shared__ double sh1[kFlatChannels];
  __shared__ double sh2[kFlatChannels];
  std::size_t const C = d.channels, quads = C / 4;
  for (std::size_t c = threadIdx.x; c < C; c += blockDim.x) {
    sh1[c] = 0.0;
    sh2[c] = 0.0;
  }
  __syncthreads();
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t const lanes = threads / quads * quads;  // threads in use: whole rows of quads
  std::size_t const t = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t < lanes) {
    std::size_t const q = t % quads, row_step = lanes / quads;
    float4 const m4 = Mode == 1 ? load4(mean, q) : make_float4(0, 0, 0, 0);
    float4 const is4 = Mode == 1 ? load4(invstd, q) : make_float4(0, 0, 0, 0);
    double a1[4] = {0, 0, 0, 0}, a2[4] = {0, 0, 0, 0};
    for (std::size_t r = t / quads; r < d.outer; r += row_step) {
      std::size_t const at = r * quads + q;
      float4 const v = load4(x, at);
      float4 const gr = Mode == 1 ? load4(dy, at) : v;
      accumulate4<Mode>(v, gr, m4, is4, a1, a2);
    }
    for (int k = 0; k < 4; ++k) {
      atomicAdd(&sh1[q * 4 + static_cast<std::size_t>(k)], a1[k]);
      atomicAdd(&sh2[q * 4 + static_cast<std::size_t>(k)], a2[k]);
    }
  }
  __syncthreads();
  std::size_t const groups = gridDim.x, g = blockIdx.x;
  for (std::size_t c = threadIdx.x; c < C; c += blockDim.x) {
    scratch[(c * groups + g) * 2] = sh1[c];
    scratch[(c * groups + g) * 2 + 1] = sh2[c];
  }
}

// One block per channel: the sum of the channel's group partials.
__device__ inline void channel_totals(double const* scratch, int groups, double& s1, double& s2) {
  std::size_t const c = blockIdx.x;
  auto const ng = static_cast<std::size_t>(groups);
  s1 = 0.0;
  s2 = 0.0;
  for (std::size_t g = threadIdx.x; g < ng; g += kThreads) {
    s1 += scratch[(c * ng + g) * 2];
    s2 += scratch[(c * ng + g) * 2 + 1];
  }
  block_sum(s1, s2);
}

__global__ void bn_finalize_forward(double const* scratch, int groups, double count, double eps,
                                    double momentum, float* running_mean, float* running_var,
                                    float* saved_mean, float* saved_invstd) {
  double s1, s2;
  channel_totals(scratch, groups, s1, s2);
  if (threadIdx.x != 0) return;
  std::size_t const c = blockIdx.x;
  double const mean = s1 / count;
  double const var = fmax(s2 / count - mean * mean, 0.0);
  double const invstd = 1.0 / sqrt(var + eps);
  saved_mean[c] = static_cast<float>(mean);
  saved_invstd[c] = static_cast<float>(invstd);
  running_mean[c] = static_cast<float>((1.0 - momentum) * running_mean[c] + momentum * mean);
  running_var[c] = static_cast<float>((1.0 - momentum) * running_var[c] +
                                      momentum * var * count / (count - 1.0));
}

__global__ void bn_finalize_backward(double const* scratch, int groups, float* dgamma,
                                     float* dbeta) {
  double s1, s2;
  channel_totals(scratch, groups, s1, s2);
  if (threadIdx.x != 0) return;
  dbeta[blockIdx.x] = static_cast<float>(s1);
  dgamma[blockIdx.x] = static_cast<float>(s2);
}

// Per-channel coefficients of the element-wise passes:
//   forward  y  = x * a[c] + b[c]                     a = gamma*invstd, b = beta - mean*a
//   backward dx = dy * a[c] + x * b[c] + k[c]         a = gamma*invstd, b = -a*invstd*dgamma/n,
//                                                     k = -a*(dbeta/n) - b*mean
__global__ void bn_coefficients(float const* gamma, float const* beta, float const* mean,
                                float const* invstd, float const* dgamma, float const* dbeta,
                                float inv_count, std::size_t channels, float* coef) {
  std::size_t const c = global_index();
  if (c >= channels) return;
  float const a = gamma[c] * invstd[c];
  if (dgamma == nullptr) {
    coef[c] = a;
    coef[channels + c] = beta[c] - mean[c] * a;
    return;
  }
  float const b = -a * invstd[c] * dgamma[c] * inv_count;
  coef[c] = a;
  coef[channels + c] = b;
  coef[2 * channels + c] = -a * dbeta[c] * inv_count - b * mean[c];
}

// y = x * a[c] + b[c]   (Backward: y = dy * a[c] + x * b[c] + k[c].)
// Vec: 4 elements per thread, either of one channel (planes, inner % 4 == 0) or of 4
// consecutive channels (rows, channels % 4 == 0).
template <bool Backward, bool Vec>
__global__ void bn_apply(float const* x, float const* dy, float const* coef, float* y,
                         ChannelDims d, std::size_t n) {
  std::size_t const C = d.channels;
  if (Vec) {
    for (std::size_t u = global_index(); u < n / 4; u += grid_stride()) {
      std::size_t const i = u * 4;
      float4 const v = load4(x, u);
      float4 const gr = Backward ? load4(dy, u) : v;
      float r[4];
      float const vs[4] = {v.x, v.y, v.z, v.w}, gs[4] = {gr.x, gr.y, gr.z, gr.w};
      for (int k = 0; k < 4; ++k) {
        std::size_t const c =
            d.inner == 1 ? (i + static_cast<std::size_t>(k)) % C : (i / d.inner) % C;
        r[k] = Backward ? gs[k] * coef[c] + vs[k] * coef[C + c] + coef[2 * C + c]
                        : vs[k] * coef[c] + coef[C + c];
      }
      reinterpret_cast<float4*>(y)[u] = make_float4(r[0], r[1], r[2], r[3]);
    }
  } else {
    for (std::size_t i = global_index(); i < n; i += grid_stride()) {
      std::size_t const c = (i / d.inner) % C;
      y[i] = Backward ? dy[i] * coef[c] + x[i] * coef[C + c] + coef[2 * C + c]
                      : x[i] * coef[c] + coef[C + c];
    }
  }
}

bool planes_vec(ChannelDims const& d) { return d.inner % 4 == 0; }
bool rows_vec(ChannelDims const& d) { return d.inner == 1 && d.channels % 4 == 0; }
bool rows_flat(ChannelDims const& d) { return rows_vec(d) && d.channels <= kFlatChannels; }
/// float4 loads need 16-byte aligned pointers (cudaMalloc gives 256; views might not).
bool aligned16(void const* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }
bool all_aligned(std::initializer_list<void const*> ps) {
  for (void const* p : ps)
    if (p != nullptr && !aligned16(p)) return false;
  return true;
}

template <int Mode>
void bn_reduce(float const* x, float const* dy, float const* mean, float const* invstd,
               ChannelDims d, double* scratch, int groups, cudaStream_t stream) {
  bool const aligned = all_aligned({x, dy, mean, invstd});
  if (aligned && rows_flat(d)) {
    bn_reduce_flat<Mode>
        <<<static_cast<unsigned>(groups), kThreads, 0, stream>>>(x, dy, mean, invstd, d, scratch);
    return;
  }
  if (d.inner == 1) {
    bool const vec = aligned && rows_vec(d);
    std::size_t const per_block = vec ? 128 : 32;
    dim3 const grid(static_cast<unsigned>((d.channels + per_block - 1) / per_block),
                    static_cast<unsigned>(groups));
    if (vec) {
      bn_reduce_rows<Mode, true><<<grid, dim3(32, 8), 0, stream>>>(x, dy, mean, invstd, d, scratch);
    } else {
      bn_reduce_rows<Mode, false>
          <<<grid, dim3(32, 8), 0, stream>>>(x, dy, mean, invstd, d, scratch);
    }
  } else {
    dim3 const grid(static_cast<unsigned>(d.channels), static_cast<unsigned>(groups));
    if (aligned && planes_vec(d)) {
      bn_reduce_planes<Mode, true><<<grid, kThreads, 0, stream>>>(x, dy, mean, invstd, d, scratch);
    } else {
      bn_reduce_planes<Mode, false><<<grid, kThreads, 0, stream>>>(x, dy, mean, invstd, d, scratch);
    }
  }
}

template <bool Backward>
void bn_apply_launch(float const* x, float const* dy, float const* coef, float* y, ChannelDims d,
                     cudaStream_t stream) {
  std::size_t const n = d.outer * d.channels * d.inner;
  if ((planes_vec(d) || rows_vec(d)) && all_aligned({x, dy, y})) {
    bn_apply<Backward, true><<<blocks_for(n / 4), kThreads, 0, stream>>>(x, dy, coef, y, d, n);
  } else {
    bn_apply<Backward, false><<<blocks_for(n), kThreads, 0, stream>>>(x, dy, coef, y, d, n);
  }
}

// ---- pooling ----

__global__ void avgpool_forward_kernel(float const* x, float* y, std::size_t n, std::size_t c,
                                       std::size_t hw, bool channels_last) {
  std::size_t const stride_c = channels_last ? 1 : hw, stride_hw = channels_last ? c : 1;
  for (std::size_t i = global_index(); i < n * c; i += grid_stride()) {
    std::size_t const img = i / c, ch = i % c;
    float const* base = x + img * c * hw + ch * stride_c;
    float acc = 0.0f;
    for (std::size_t p = 0; p < hw; ++p) acc += base[p * stride_hw];
    y[i] = acc / static_cast<float>(hw);
  }
}

__global__ void avgpool_backward_kernel(float const* dy, float* dx, std::size_t n, std::size_t c,
                                        std::size_t hw, bool channels_last) {
  float const inv = 1.0f / static_cast<float>(hw);
  for (std::size_t i = global_index(); i < n * c * hw; i += grid_stride()) {
    std::size_t const img = i / (c * hw);
    std::size_t const ch = channels_last ? i % c : (i / hw) % c;
    dx[i] = dy[img * c + ch] * inv;
  }
}

// ---- matrices ----

__global__ void add_bias_kernel(float* y, float const* bias, std::size_t rows, std::size_t cols) {
  for (std::size_t i = global_index(); i < rows * cols; i += grid_stride()) y[i] += bias[i % cols];
}

__global__ void sum_rows_kernel(float const* x, float* y, std::size_t rows, std::size_t cols) {
  for (std::size_t j = global_index(); j < cols; j += grid_stride()) {
    double acc = 0.0;
    for (std::size_t i = 0; i < rows; ++i) acc += x[i * cols + j];
    y[j] = static_cast<float>(acc);
  }
}

// ---- loss: one block; each thread takes rows ----

__global__ void softmax_xent_kernel(float const* logits, std::int32_t const* labels, std::size_t n,
                                    std::size_t k, float* metrics, float* dlogits) {
  __shared__ double loss_sh[kThreads];
  __shared__ double correct_sh[kThreads];
  double loss = 0.0, correct = 0.0;
  for (std::size_t r = threadIdx.x; r < n; r += kThreads) {
    float const* z = logits + r * k;
    float* dz = dlogits + r * k;
    std::size_t best = 0;
    for (std::size_t j = 1; j < k; ++j)
      if (z[j] > z[best]) best = j;
    double const mx = z[best];
    double sum = 0.0;
    for (std::size_t j = 0; j < k; ++j) sum += exp(static_cast<double>(z[j]) - mx);
    double const lse = mx + log(sum);
    std::int32_t const label = labels[r];
    bool const valid = label >= 0 && static_cast<std::size_t>(label) < k;
    loss += valid ? lse - z[label] : nan("");
    if (valid && best == static_cast<std::size_t>(label)) correct += 1.0;
    for (std::size_t j = 0; j < k; ++j) {
      double const p = exp(static_cast<double>(z[j]) - lse);
      double const t = valid && j == static_cast<std::size_t>(label) ? 1.0 : 0.0;
      dz[j] = static_cast<float>((p - t) / static_cast<double>(n));
    }
  }
  loss_sh[threadIdx.x] = loss;
  correct_sh[threadIdx.x] = correct;
  __syncthreads();
  for (unsigned s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      loss_sh[threadIdx.x] += loss_sh[threadIdx.x + s];
      correct_sh[threadIdx.x] += correct_sh[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    metrics[0] = static_cast<float>(loss_sh[0] / static_cast<double>(n));
    metrics[1] = static_cast<float>(correct_sh[0]);
  }
}

__global__ void sgd_kernel(float* w, float const* g, float* v, std::size_t n, float lr,
                           float momentum, float weight_decay) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    float const grad = g[i] + weight_decay * w[i];
    float const vel = momentum * v[i] + grad;
    v[i] = vel;
    w[i] -= lr * vel;
  }
}

}  // namespace

int bn_groups(ChannelDims const& d, int sm_count) noexcept {
  if (rows_flat(d)) {  // one group per block of the flat kernel: two blocks per SM
    std::size_t const rows_per_block = std::max<std::size_t>(1, kThreads / (d.channels / 4));
    std::size_t const needed = (d.outer + rows_per_block - 1) / rows_per_block;
    return static_cast<int>(std::clamp<std::size_t>(
        std::min(needed, static_cast<std::size_t>(std::max(sm_count, 1)) * 2), 1, 4096));
  }
  // (Sized for the vectorised rows kernel; the scalar one then just runs more blocks in x.)
  std::size_t const blocks_x =
      d.inner == 1 ? (d.channels + (rows_vec(d) ? 127 : 31)) / (rows_vec(d) ? 128 : 32)
                   : d.channels;
  std::size_t const target = static_cast<std::size_t>(std::max(sm_count, 1)) * 8;
  std::size_t const want = (target + blocks_x - 1) / blocks_x;
  // At least ~1024 elements per block, so partial sums stay few.
  std::size_t const per_channel = d.outer * d.inner;
  std::size_t const cap = std::max<std::size_t>(1, per_channel / 1024);
  return static_cast<int>(std::clamp<std::size_t>(std::min(want, cap), 1, 4096));
}

void fill(float* p, std::size_t n, float value, cudaStream_t stream) {
  fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, n, value);
}

void relu_forward(float const* x, float* y, std::size_t n, cudaStream_t stream) {
  relu_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n);
}

void relu_backward(float const* y, float const* dy, float* dx, std::size_t n, cudaStream_t stream) {
  relu_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, dy, dx, n);
}

void add(float const* a, float const* b, float* y, std::size_t n, cudaStream_t stream) {
  add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a, b, y, n);
}

void batchnorm_forward(float const* x, float const* gamma, float const* beta, double eps,
                       double momentum, float* running_mean, float* running_var, float* saved_mean,
                       float* saved_invstd, float* y, ChannelDims d, double* scratch, int groups,
                       cudaStream_t stream) {
  bn_reduce<0>(x, nullptr, nullptr, nullptr, d, scratch, groups, stream);
  double const count = static_cast<double>(d.outer * d.inner);
  auto const channels = static_cast<unsigned>(d.channels);
  bn_finalize_forward<<<channels, kThreads, 0, stream>>>(
      scratch, groups, count, eps, momentum, running_mean, running_var, saved_mean, saved_invstd);
  float* coef = reinterpret_cast<float*>(scratch + bn_scratch_doubles(d.channels, groups));
  bn_coefficients<<<blocks_for(d.channels), kThreads, 0, stream>>>(
      gamma, beta, saved_mean, saved_invstd, nullptr, nullptr, 0.0f, d.channels, coef);
  bn_apply_launch<false>(x, nullptr, coef, y, d, stream);
}

void batchnorm_backward(float const* x, float const* dy, float const* gamma,
                        float const* saved_mean, float const* saved_invstd, float* dx,
                        float* dgamma, float* dbeta, ChannelDims d, double* scratch, int groups,
                        cudaStream_t stream) {
  bn_reduce<1>(x, dy, saved_mean, saved_invstd, d, scratch, groups, stream);
  auto const channels = static_cast<unsigned>(d.channels);
  bn_finalize_backward<<<channels, kThreads, 0, stream>>>(scratch, groups, dgamma, dbeta);
  float const inv_count = 1.0f / static_cast<float>(d.outer * d.inner);
  float* coef = reinterpret_cast<float*>(scratch + bn_scratch_doubles(d.channels, groups));
  bn_coefficients<<<blocks_for(d.channels), kThreads, 0, stream>>>(
      gamma, nullptr, saved_mean, saved_invstd, dgamma, dbeta, inv_count, d.channels, coef);
  bn_apply_launch<true>(x, dy, coef, dx, d, stream);
}

void avgpool_forward(float const* x, float* y, std::size_t n, std::size_t c, std::size_t hw,
                     bool channels_last, cudaStream_t stream) {
  avgpool_forward_kernel<<<blocks_for(n * c), kThreads, 0, stream>>>(x, y, n, c, hw, channels_last);
}

void avgpool_backward(float const* dy, float* dx, std::size_t n, std::size_t c, std::size_t hw,
                      bool channels_last, cudaStream_t stream) {
  avgpool_backward_kernel<<<blocks_for(n * c * hw), kThreads, 0, stream>>>(dy, dx, n, c, hw,
                                                                           channels_last);
}

void add_bias(float* y, float const* bias, std::size_t rows, std::size_t cols,
              cudaStream_t stream) {
  add_bias_kernel<<<blocks_for(rows * cols), kThreads, 0, stream>>>(y, bias, rows, cols);
}

void sum_rows(float const* x, float* y, std::size_t rows, std::size_t cols, cudaStream_t stream) {
  sum_rows_kernel<<<blocks_for(cols), kThreads, 0, stream>>>(x, y, rows, cols);
}

void softmax_cross_entropy(float const* logits, std::int32_t const* labels, std::size_t n,
                           std::size_t k, float* metrics, float* dlogits, cudaStream_t stream) {
  softmax_xent_kernel<<<1, kThreads, 0, stream>>>(logits, labels, n, k, metrics, dlogits);
}

void sgd_momentum(float* w, float const* g, float* v, std::size_t n, float lr, float momentum,
                  float weight_decay, cudaStream_t stream) {
  sgd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(w, g, v, n, lr, momentum, weight_decay);
}

}  // namespace nn::cuda
