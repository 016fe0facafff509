// A DETR-style detector on the shared backends of examples/common: a residual convolutional
// backbone (NHWC, batch norm folded into the convolutions as inference does), a transformer
// encoder over the flattened feature map (sine positional encodings, multi-head self-attention,
// feed-forward, post-norm), a decoder with learned object queries (self-attention,
// cross-attention to the encoder memory, feed-forward) and class/box heads.
//
// The modules are plain classes that call nn::Backend (convolutions, GEMMs) and
// nn::InferenceOps (epilogues, layer norm, softmax, batched attention GEMMs); the same code runs
// on the CPU and the GPU. Every sub-module is an nsightkit::Hooked<...> member, so each call runs
// inside a module scope and the NVTX ranges nest into paths such as backbone/stage3/block1/conv2,
// encoder/layer0/self_attn/sdpa and decoder/layer2/cross_attn — with no nsightkit call in the
// modules' forward code (only the attention core opens a ModuleScope "sdpa" itself).
//
// Each module owns its output tensors (allocated on the first call, reused while the shape
// stays), so a steady-state forward allocates nothing; a returned reference stays valid until
// the module's next call. Weights are synthetic: each parameter is filled from a generator started
// from the model's rng_start and the parameter's name, so every backend builds the same model.
#pragma once

#include "common/backend.hpp"
#include "common/inference_ops.hpp"
#include "common/tensor.hpp"

#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace detr {

using nn::Activation;
using nn::Tensor;

/// Sizes of the model. base() is the GPU default; tiny() the CPU default and the size of the
/// CPU/GPU agreement test.
struct ModelConfig {
  int stem_width{64};
  std::array<int, 4> widths{{64, 128, 256, 512}};  ///< channels of stage1..stage4
  std::array<int, 4> depths{{2, 2, 2, 2}};         ///< residual blocks per stage
  int d_model{256};
  int heads{8};
  int ffn_dim{1024};
  int enc_layers{6};
  int dec_layers{6};
  int queries{100};
  int num_classes{80};  ///< the class head has num_classes + 1 outputs (the last: no object)
  std::uint64_t rng_start{20241122};

  /// ResNet-18-shaped backbone; DETR's transformer sizes (d_model 256, 8 heads), FFN 1024.
  static ModelConfig base();
  /// Channels 16..128, d_model 64, 4 heads, FFN 128: quick on one CPU core.
  static ModelConfig tiny();
  /// @throws std::invalid_argument naming the first inconsistent field.
  void validate() const;
};

/// What every module's forward needs: the two op sets and the batch size of the current call.
struct Context {
  nn::Backend& be;
  nn::InferenceOps& ops;
  int batch{1};
};

/// Deterministic synthetic parameters.
class Params {
 public:
  Params(nn::Backend& backend, std::uint64_t rng_start)
      : backend_{&backend}, rng_start_{rng_start} {}
  /// A tensor of `shape` in `layout`, uniform in [center - bound, center + bound]; the values
  /// depend only on (rng_start, name) and the logical index, not on the layout or the backend.
  Tensor uniform(std::string const& name, nn::Shape shape, double bound, double center = 0.0,
                 nn::Layout layout = nn::Layout::nchw);

 private:
  nn::Backend* backend_;
  std::uint64_t rng_start_;
};

/// Convolution with batch norm folded into weight and bias, NHWC; the epilogue adds the bias
/// and an optional residual, then applies the activation.
class Conv2d {
 public:
  Conv2d(Params& p, std::string const& path, int in, int out, int kernel, int stride, int pad,
         Activation act, double gain);
  Tensor const& forward(Context& cx, Tensor const& x, Tensor const* residual = nullptr);

 private:
  Tensor weight_, bias_, y_;
  nn::ConvGeometry geometry_;
  Activation act_;
};

/// 3x3 stride-2 max pooling of the stem.
class MaxPool2d {
 public:
  Tensor const& forward(Context& cx, Tensor const& x);

 private:
  nn::PoolGeometry geometry_{3, 2, 1};
  Tensor y_;
};

/// y = act(x W^T + b) on the rows of x.
class Linear {
 public:
  Linear(Params& p, std::string const& path, int in, int out, Activation act = Activation::none,
         double gain = 1.0);
  Tensor const& forward(Context& cx, Tensor const& x);

 private:
  Tensor weight_, bias_, y_;
  int out_;
  Activation act_;
};

/// LayerNorm(x + residual) over each row.
class LayerNorm {
 public:
  LayerNorm(Params& p, std::string const& path, int dim);
  Tensor const& forward(Context& cx, Tensor const& x, Tensor const* residual = nullptr);

 private:
  Tensor gamma_, beta_, y_;
};

/// Scratch tensors of scaled_dot_product_attention (kept between calls).
struct AttentionWorkspace {
  Tensor qh, kh, vh, scores, context_h, context;
};

/// softmax(q k^T / sqrt(dh)) v with `heads` heads. q [batch * L, D], k and v [batch * S, D]
/// (token matrices) -> [batch * L, D] (a reference into `ws`). Composed of InferenceOps:
/// split_heads, batched_gemm (scores, fp32), softmax_rows, batched_gemm (context), merge_heads.
Tensor const& scaled_dot_product_attention(Context& cx, Tensor const& q, Tensor const& k,
                                           Tensor const& v, int heads, AttentionWorkspace& ws);

/// Multi-head attention: q/k/v projections, the attention core (module scope "sdpa"),
/// output projection.
class MultiHeadAttention {
 public:
  MultiHeadAttention(Params& p, std::string const& path, int dim, int heads);
  Tensor const& forward(Context& cx, Tensor const& query, Tensor const& key, Tensor const& value);

 private:
  nsightkit::Hooked<Linear> q_proj_, k_proj_, v_proj_, out_proj_;
  int heads_;
  AttentionWorkspace ws_;
};

/// linear2(relu(linear1(x))).
class FeedForward {
 public:
  FeedForward(Params& p, std::string const& path, int dim, int hidden);
  Tensor const& forward(Context& cx, Tensor const& x);

 private:
  nsightkit::Hooked<Linear> linear1_, linear2_;
};

/// Two 3x3 convolutions with a shortcut (a 1x1 downsample convolution when the shape changes).
class BasicBlock {
 public:
  BasicBlock(Params& p, std::string const& path, int in, int out, int stride);
  Tensor const& forward(Context& cx, Tensor const& x);

 private:
  nsightkit::Hooked<Conv2d> conv1_, conv2_;
  std::optional<nsightkit::Hooked<Conv2d>> downsample_;
};

/// 7x7 stride-2 convolution and max pooling: the image at 1/4 resolution.
class Stem {
 public:
  Stem(Params& p, std::string const& path, int width);
  Tensor const& forward(Context& cx, Tensor const& x);

 private:
  nsightkit::Hooked<Conv2d> conv_;
  nsightkit::Hooked<MaxPool2d> pool_;
};

/// Residual blocks block0, block1, ...; the first one may downsample.
class Stage {
 public:
  Stage(Params& p, std::string const& path, int in, int out, int depth, int stride);
  Tensor const& forward(Context& cx, Tensor const& x);

 private:
  std::vector<nsightkit::Hooked<BasicBlock>> blocks_;
};

/// stem, stage1..stage4: features at 1/32 resolution, NHWC.
class Backbone {
 public:
  Backbone(Params& p, ModelConfig const& c);
  Tensor const& forward(Context& cx, Tensor const& images);

 private:
  nsightkit::Hooked<Stem> stem_;
  std::vector<nsightkit::Hooked<Stage>> stages_;
};

/// DETR's sine positional encoding (normalized, scale 2*pi) of an h x w map: [h*w, dim]
/// row-major; the first dim/2 channels encode y, the rest x.
std::vector<double> sine_position_table(int h, int w, int dim);

/// Post-norm transformer encoder layer: positions are added to queries and keys.
class EncoderLayer {
 public:
  EncoderLayer(Params& p, std::string const& path, ModelConfig const& c);
  Tensor const& forward(Context& cx, Tensor const& x, Tensor const& pos);

 private:
  nsightkit::Hooked<MultiHeadAttention> self_attn_;
  nsightkit::Hooked<LayerNorm> norm1_;
  nsightkit::Hooked<FeedForward> ffn_;
  nsightkit::Hooked<LayerNorm> norm2_;
  Tensor with_pos_;
};

/// What the encoder hands to the decoder.
struct EncoderOutput {
  Tensor memory;  ///< [batch * S, D]
  Tensor pos;     ///< [S, D]
};

/// input_proj (1x1 convolution to d_model), flatten to tokens, layer0..layerN.
class Encoder {
 public:
  Encoder(Params& p, ModelConfig const& c);
  EncoderOutput forward(Context& cx, Tensor const& features);

 private:
  nsightkit::Hooked<Conv2d> input_proj_;
  std::vector<nsightkit::Hooked<EncoderLayer>> layers_;
  int d_model_;
  std::map<std::pair<int, int>, Tensor> pos_cache_;
};

/// Post-norm decoder layer: self-attention among the queries, cross-attention to the memory,
/// feed-forward.
class DecoderLayer {
 public:
  DecoderLayer(Params& p, std::string const& path, ModelConfig const& c);
  Tensor const& forward(Context& cx, Tensor const& tgt, Tensor const& memory,
                        Tensor const& memory_pos, Tensor const& query_pos);

 private:
  nsightkit::Hooked<MultiHeadAttention> self_attn_;
  nsightkit::Hooked<LayerNorm> norm1_;
  nsightkit::Hooked<MultiHeadAttention> cross_attn_;
  nsightkit::Hooked<LayerNorm> norm2_;
  nsightkit::Hooked<FeedForward> ffn_;
  nsightkit::Hooked<LayerNorm> norm3_;
  Tensor q1_, q2_;
};

/// Learned object queries, layer0..layerN, final norm: [batch * queries, D].
class Decoder {
 public:
  Decoder(Params& p, ModelConfig const& c);
  Tensor const& forward(Context& cx, EncoderOutput const& enc);

 private:
  Tensor query_pos_, tgt_, memory_pos_;
  std::vector<nsightkit::Hooked<DecoderLayer>> layers_;
  nsightkit::Hooked<LayerNorm> norm_;
  int queries_;
  int d_model_;
};

/// The box MLP: fc0, fc1 (ReLU), fc2 (sigmoid) -> 4 box coordinates.
class BoxMlp {
 public:
  BoxMlp(Params& p, std::string const& path, int dim);
  Tensor const& forward(Context& cx, Tensor const& x);

 private:
  nsightkit::Hooked<Linear> fc0_, fc1_, fc2_;
};

/// The model's raw outputs (tensors of the backend, valid until the next forward).
struct DetrOutput {
  Tensor logits;  ///< [batch * queries, num_classes + 1]
  Tensor boxes;   ///< [batch * queries, 4]: (cx, cy, w, h) in [0, 1]
};

/// class_head (linear) and box_head (BoxMlp).
class Heads {
 public:
  Heads(Params& p, ModelConfig const& c);
  DetrOutput forward(Context& cx, Tensor const& hs);

 private:
  nsightkit::Hooked<Linear> class_head_;
  nsightkit::Hooked<BoxMlp> box_head_;
};

/// The detector: backbone, encoder, decoder, heads (the top-level module paths).
class Detr {
 public:
  /// Builds the model's parameters on `backend`.
  /// @throws std::invalid_argument for an invalid config.
  Detr(nn::Backend& backend, ModelConfig const& config);

  /// Images [N, 3, H, W] in NHWC layout, H and W multiples of 32.
  /// @throws std::invalid_argument for other shapes.
  DetrOutput forward(nn::Backend& be, nn::InferenceOps& ops, Tensor const& images);

  [[nodiscard]] ModelConfig const& config() const noexcept { return config_; }

 private:
  ModelConfig config_;
  Params params_;
  nsightkit::Hooked<Backbone> backbone_;
  nsightkit::Hooked<Encoder> encoder_;
  nsightkit::Hooked<Decoder> decoder_;
  nsightkit::Hooked<Heads> heads_;
};

}  // namespace detr
