#include "model.hpp"

#include "common/nn.hpp"
#include "common/rng.hpp"

#include <cmath>
#include <stdexcept>

namespace detr {

namespace nsk = nsightkit;
using nn::Layout;
using nn::Shape;

namespace {

[[noreturn]] void fail(char const* where, std::string const& what) {
  throw std::invalid_argument(std::string{where} + ": " + what);
}

std::string child(std::string const& path, char const* name) { return path + "/" + name; }

std::uint64_t fnv1a(std::string const& s) noexcept {
  std::uint64_t h = 1469598103934665603ULL;
  for (char ch : s) {
    h ^= static_cast<std::uint8_t>(ch);
    h *= 1099511628211ULL;
  }
  return h;
}

/// A token matrix: `rows` rows of `cols` values.
Shape matrix(int rows, int cols) { return Shape{rows, cols, 1, 1}; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// configuration

ModelConfig ModelConfig::base() { return ModelConfig{}; }

ModelConfig ModelConfig::tiny() {
  ModelConfig c;
  c.stem_width = 16;
  c.widths = {{16, 32, 64, 128}};
  c.d_model = 64;
  c.heads = 4;
  c.ffn_dim = 128;
  return c;
}

void ModelConfig::validate() const {
  char const* const where = "model config";
  if (stem_width < 1) fail(where, "stem width must be positive");
  for (std::size_t i = 0; i < widths.size(); ++i) {
    if (widths[i] < 1) fail(where, "stage widths must be positive");
    if (depths[i] < 1) fail(where, "every stage needs at least one block");
  }
  if (d_model < 2 || d_model % 2 != 0) fail(where, "d_model must be even (sine positions)");
  if (heads < 1 || d_model % heads != 0) {
    fail(where, "d_model " + std::to_string(d_model) + " is not divisible by " +
                    std::to_string(heads) + " heads");
  }
  if (ffn_dim < 1) fail(where, "ffn_dim must be positive");
  if (enc_layers < 1 || enc_layers > 64) fail(where, "encoder layers must be in [1, 64]");
  if (dec_layers < 1 || dec_layers > 64) fail(where, "decoder layers must be in [1, 64]");
  if (queries < 1 || queries > 10000) fail(where, "queries must be in [1, 10000]");
  if (num_classes < 1) fail(where, "num_classes must be positive");
}

// ---------------------------------------------------------------------------------------------
// synthetic parameters

Tensor Params::uniform(std::string const& name, Shape shape, double bound, double center,
                       Layout layout) {
  nn::Rng rng{nn::mix64(rng_start_ ^ fnv1a(name))};
  std::vector<double> values(shape.numel());
  nn::Strides const st = nn::strides_of(shape, layout);
  // Logical order, stored at the layout's offsets: the same weights in NCHW and NHWC.
  for (int n = 0; n < shape.n; ++n) {
    for (int c = 0; c < shape.c; ++c) {
      for (int h = 0; h < shape.h; ++h) {
        for (int w = 0; w < shape.w; ++w) {
          values[nn::offset_of(st, n, c, h, w)] = center + bound * (2.0 * rng.uniform() - 1.0);
        }
      }
    }
  }
  Tensor t = backend_->empty(shape, layout);
  backend_->write(t, values);
  return t;
}

// ---------------------------------------------------------------------------------------------
// layers

Conv2d::Conv2d(Params& p, std::string const& path, int in, int out, int kernel, int stride, int pad,
               Activation act, double gain)
    : geometry_{stride, pad}, act_{act} {
  double const fan_in = static_cast<double>(in) * kernel * kernel;
  // Uniform with variance gain / fan_in: gain 2 keeps ReLU activations at a steady scale.
  weight_ = p.uniform(path + ".weight", Shape{out, in, kernel, kernel},
                      std::sqrt(3.0 * gain / fan_in), 0.0, Layout::nhwc);
  bias_ = p.uniform(path + ".bias", Shape{out, 1, 1, 1}, 0.05);
}

Tensor const& Conv2d::forward(Context& cx, Tensor const& x, Tensor const* residual) {
  nn::ensure(cx.be, y_, nn::conv_output_shape(x.shape(), weight_.shape(), geometry_), Layout::nhwc);
  cx.be.conv2d_forward(x, weight_, geometry_, y_);
  cx.ops.bias_act(y_, bias_, residual, act_);
  return y_;
}

Tensor const& MaxPool2d::forward(Context& cx, Tensor const& x) {
  nn::ensure(cx.be, y_, nn::pool_output_shape(x.shape(), geometry_), x.layout());
  cx.ops.max_pool2d(x, geometry_, y_);
  return y_;
}

Linear::Linear(Params& p, std::string const& path, int in, int out, Activation act, double gain)
    : out_{out}, act_{act} {
  weight_ = p.uniform(path + ".weight", matrix(out, in), std::sqrt(3.0 * gain / in));
  bias_ = p.uniform(path + ".bias", Shape{out, 1, 1, 1}, 0.05);
}

Tensor const& Linear::forward(Context& cx, Tensor const& x) {
  nn::ensure(cx.be, y_, matrix(x.rows(), out_), Layout::nchw);
  cx.be.gemm(false, true, 1.0, x, weight_, 0.0, y_);
  cx.ops.bias_act(y_, bias_, nullptr, act_);
  return y_;
}

LayerNorm::LayerNorm(Params& p, std::string const& path, int dim)
    : gamma_{p.uniform(path + ".weight", Shape{dim, 1, 1, 1}, 0.1, 1.0)},
      beta_{p.uniform(path + ".bias", Shape{dim, 1, 1, 1}, 0.05)} {}

Tensor const& LayerNorm::forward(Context& cx, Tensor const& x, Tensor const* residual) {
  nn::ensure(cx.be, y_, matrix(x.rows(), x.cols()), Layout::nchw);
  cx.ops.layer_norm(x, residual, gamma_, beta_, 1e-5, y_);
  return y_;
}

Tensor const& scaled_dot_product_attention(Context& cx, Tensor const& q, Tensor const& k,
                                           Tensor const& v, int heads, AttentionWorkspace& ws) {
  int const batch = cx.batch;
  if (batch < 1 || q.rows() % batch != 0 || k.rows() % batch != 0 || k.rows() != v.rows() ||
      q.cols() != k.cols() || k.cols() != v.cols() || heads < 1 || q.cols() % heads != 0) {
    fail("attention", "q " + q.shape().str() + ", k " + k.shape().str() + ", v " + v.shape().str() +
                          " do not fit batch " + std::to_string(batch) + " and " +
                          std::to_string(heads) + " heads");
  }
  int const l = q.rows() / batch;
  int const s = k.rows() / batch;
  int const dh = q.cols() / heads;
  int const entries = batch * heads;
  nn::ensure(cx.be, ws.qh, matrix(entries * l, dh), Layout::nchw);
  nn::ensure(cx.be, ws.kh, matrix(entries * s, dh), Layout::nchw);
  nn::ensure(cx.be, ws.vh, matrix(entries * s, dh), Layout::nchw);
  nn::ensure(cx.be, ws.scores, matrix(entries * l, s), Layout::nchw);
  nn::ensure(cx.be, ws.context_h, matrix(entries * l, dh), Layout::nchw);
  nn::ensure(cx.be, ws.context, matrix(batch * l, q.cols()), Layout::nchw);
  cx.ops.split_heads(q, batch, heads, ws.qh);
  cx.ops.split_heads(k, batch, heads, ws.kh);
  cx.ops.split_heads(v, batch, heads, ws.vh);
  cx.ops.batched_gemm(false, true, entries, l, s, dh, 1.0 / std::sqrt(static_cast<double>(dh)),
                      ws.qh, ws.kh, 0.0, ws.scores);
  cx.ops.softmax_rows(ws.scores, ws.scores);
  cx.ops.batched_gemm(false, false, entries, l, dh, s, 1.0, ws.scores, ws.vh, 0.0, ws.context_h);
  cx.ops.merge_heads(ws.context_h, batch, heads, ws.context);
  return ws.context;
}

MultiHeadAttention::MultiHeadAttention(Params& p, std::string const& path, int dim, int heads)
    : q_proj_{"q_proj", p, child(path, "q_proj"), dim, dim},
      k_proj_{"k_proj", p, child(path, "k_proj"), dim, dim},
      v_proj_{"v_proj", p, child(path, "v_proj"), dim, dim},
      out_proj_{"out_proj", p, child(path, "out_proj"), dim, dim},
      heads_{heads} {}

Tensor const& MultiHeadAttention::forward(Context& cx, Tensor const& query, Tensor const& key,
                                          Tensor const& value) {
  Tensor const& q = q_proj_(cx, query);
  Tensor const& k = k_proj_(cx, key);
  Tensor const& v = v_proj_(cx, value);
  Tensor const* context = nullptr;
  {
    nsk::ModuleScope const sdpa{"sdpa"};  // the attention core, a sibling of the projections
    context = &scaled_dot_product_attention(cx, q, k, v, heads_, ws_);
  }
  return out_proj_(cx, *context);
}

FeedForward::FeedForward(Params& p, std::string const& path, int dim, int hidden)
    : linear1_{"linear1", p, child(path, "linear1"), dim, hidden, Activation::relu, 2.0},
      linear2_{"linear2", p, child(path, "linear2"), hidden, dim} {}

Tensor const& FeedForward::forward(Context& cx, Tensor const& x) {
  return linear2_(cx, linear1_(cx, x));
}

// ---------------------------------------------------------------------------------------------
// backbone

BasicBlock::BasicBlock(Params& p, std::string const& path, int in, int out, int stride)
    : conv1_{"conv1", p, child(path, "conv1"), in, out, 3, stride, 1, Activation::relu, 2.0},
      // A small gain on the residual branch's last convolution keeps the residual stream's
      // scale moderate through all blocks (what a trained network's last BN scale does).
      conv2_{"conv2", p, child(path, "conv2"), out, out, 3, 1, 1, Activation::relu, 0.5} {
  if (stride != 1 || in != out) {
    downsample_.emplace("downsample", p, child(path, "downsample"), in, out, 1, stride, 0,
                        Activation::none, 1.0);
  }
}

Tensor const& BasicBlock::forward(Context& cx, Tensor const& x) {
  Tensor const& identity = downsample_ ? (*downsample_)(cx, x) : x;
  Tensor const& y = conv1_(cx, x);
  return conv2_(cx, y, &identity);  // relu(conv2(y) + bias + identity)
}

Stem::Stem(Params& p, std::string const& path, int width)
    : conv_{"conv", p, child(path, "conv"), 3, width, 7, 2, 3, Activation::relu, 2.0},
      pool_{"pool"} {}

Tensor const& Stem::forward(Context& cx, Tensor const& x) { return pool_(cx, conv_(cx, x)); }

Stage::Stage(Params& p, std::string const& path, int in, int out, int depth, int stride) {
  blocks_.reserve(static_cast<std::size_t>(depth));
  for (int i = 0; i < depth; ++i) {
    std::string const name = "block" + std::to_string(i);
    blocks_.emplace_back(name, p, path + "/" + name, i == 0 ? in : out, out, i == 0 ? stride : 1);
  }
}

Tensor const& Stage::forward(Context& cx, Tensor const& x) {
  Tensor const* y = &x;
  for (auto& block : blocks_) y = &block(cx, *y);
  return *y;
}

Backbone::Backbone(Params& p, ModelConfig const& c)
    : stem_{"stem", p, "backbone/stem", c.stem_width} {
  stages_.reserve(c.widths.size());
  int in = c.stem_width;
  for (std::size_t i = 0; i < c.widths.size(); ++i) {
    std::string const name = "stage" + std::to_string(i + 1);
    stages_.emplace_back(name, p, "backbone/" + name, in, c.widths[i], c.depths[i], i == 0 ? 1 : 2);
    in = c.widths[i];
  }
}

Tensor const& Backbone::forward(Context& cx, Tensor const& images) {
  Tensor const* x = &stem_(cx, images);
  for (auto& stage : stages_) x = &stage(cx, *x);
  return *x;
}

// ---------------------------------------------------------------------------------------------
// transformer

std::vector<double> sine_position_table(int h, int w, int dim) {
  if (h < 1 || w < 1 || dim < 2 || dim % 2 != 0) {
    fail("sine_position_table", "needs h, w >= 1 and an even dim");
  }
  int const half = dim / 2;
  constexpr double two_pi = 6.283185307179586;
  constexpr double eps = 1e-6;
  std::vector<double> table(static_cast<std::size_t>(h) * static_cast<std::size_t>(w) *
                            static_cast<std::size_t>(dim));
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      double const ey = (y + 1) / (h + eps) * two_pi;
      double const ex = (x + 1) / (w + eps) * two_pi;
      std::size_t const row = (static_cast<std::size_t>(y) * static_cast<std::size_t>(w) +
                               static_cast<std::size_t>(x)) *
                              static_cast<std::size_t>(dim);
      for (int i = 0; i < half; ++i) {
        double const freq = std::pow(10000.0, 2.0 * (i / 2) / half);
        bool const even = i % 2 == 0;
        table[row + static_cast<std::size_t>(i)] = even ? std::sin(ey / freq) : std::cos(ey / freq);
        table[row + static_cast<std::size_t>(half + i)] =
            even ? std::sin(ex / freq) : std::cos(ex / freq);
      }
    }
  }
  return table;
}

EncoderLayer::EncoderLayer(Params& p, std::string const& path, ModelConfig const& c)
    : self_attn_{"self_attn", p, child(path, "self_attn"), c.d_model, c.heads},
      norm1_{"norm1", p, child(path, "norm1"), c.d_model},
      ffn_{"ffn", p, child(path, "ffn"), c.d_model, c.ffn_dim},
      norm2_{"norm2", p, child(path, "norm2"), c.d_model} {}

Tensor const& EncoderLayer::forward(Context& cx, Tensor const& x, Tensor const& pos) {
  nn::ensure(cx.be, with_pos_, matrix(x.rows(), x.cols()), Layout::nchw);
  cx.ops.add_repeat(x, pos, with_pos_);
  Tensor const& attended = norm1_(cx, self_attn_(cx, with_pos_, with_pos_, x), &x);
  return norm2_(cx, ffn_(cx, attended), &attended);
}

Encoder::Encoder(Params& p, ModelConfig const& c)
    : input_proj_{"input_proj",     p,  "encoder/input_proj", c.widths.back(), c.d_model, 1, 1, 0,
                  Activation::none, 1.0},
      d_model_{c.d_model} {
  layers_.reserve(static_cast<std::size_t>(c.enc_layers));
  for (int i = 0; i < c.enc_layers; ++i) {
    std::string const name = "layer" + std::to_string(i);
    layers_.emplace_back(name, p, "encoder/" + name, c);
  }
}

EncoderOutput Encoder::forward(Context& cx, Tensor const& features) {
  Tensor const& projected = input_proj_(cx, features);  // NHWC [N, D, h, w] = tokens [N*h*w, D]
  Shape const& s = projected.shape();
  auto const key = std::make_pair(s.h, s.w);
  auto it = pos_cache_.find(key);
  if (it == pos_cache_.end()) {  // once per feature-map size
    Tensor table = cx.be.empty(matrix(s.h * s.w, d_model_), Layout::nchw);
    cx.be.write(table, sine_position_table(s.h, s.w, d_model_));
    it = pos_cache_.emplace(key, table).first;
  }
  Tensor const tokens = projected.reshaped(matrix(s.n * s.h * s.w, s.c));
  Tensor const* x = &tokens;
  for (auto& layer : layers_) x = &layer(cx, *x, it->second);
  return EncoderOutput{*x, it->second};
}

DecoderLayer::DecoderLayer(Params& p, std::string const& path, ModelConfig const& c)
    : self_attn_{"self_attn", p, child(path, "self_attn"), c.d_model, c.heads},
      norm1_{"norm1", p, child(path, "norm1"), c.d_model},
      cross_attn_{"cross_attn", p, child(path, "cross_attn"), c.d_model, c.heads},
      norm2_{"norm2", p, child(path, "norm2"), c.d_model},
      ffn_{"ffn", p, child(path, "ffn"), c.d_model, c.ffn_dim},
      norm3_{"norm3", p, child(path, "norm3"), c.d_model} {}

Tensor const& DecoderLayer::forward(Context& cx, Tensor const& tgt, Tensor const& memory,
                                    Tensor const& memory_pos, Tensor const& query_pos) {
  nn::ensure(cx.be, q1_, matrix(tgt.rows(), tgt.cols()), Layout::nchw);
  nn::ensure(cx.be, q2_, matrix(tgt.rows(), tgt.cols()), Layout::nchw);
  cx.ops.add_repeat(tgt, query_pos, q1_);
  Tensor const& t1 = norm1_(cx, self_attn_(cx, q1_, q1_, tgt), &tgt);
  cx.ops.add_repeat(t1, query_pos, q2_);
  Tensor const& t2 = norm2_(cx, cross_attn_(cx, q2_, memory_pos, memory), &t1);
  return norm3_(cx, ffn_(cx, t2), &t2);
}

Decoder::Decoder(Params& p, ModelConfig const& c)
    : query_pos_{p.uniform("decoder/query_embed", matrix(c.queries, c.d_model), std::sqrt(3.0))},
      norm_{"norm", p, "decoder/norm", c.d_model},
      queries_{c.queries},
      d_model_{c.d_model} {
  layers_.reserve(static_cast<std::size_t>(c.dec_layers));
  for (int i = 0; i < c.dec_layers; ++i) {
    std::string const name = "layer" + std::to_string(i);
    layers_.emplace_back(name, p, "decoder/" + name, c);
  }
}

Tensor const& Decoder::forward(Context& cx, EncoderOutput const& enc) {
  nn::ensure(cx.be, tgt_, matrix(cx.batch * queries_, d_model_), Layout::nchw);
  cx.be.fill(tgt_, 0.0);  // DETR starts every query's content at zero
  nn::ensure(cx.be, memory_pos_, matrix(enc.memory.rows(), enc.memory.cols()), Layout::nchw);
  cx.ops.add_repeat(enc.memory, enc.pos, memory_pos_);  // the keys of every cross-attention
  Tensor const* tgt = &tgt_;
  for (auto& layer : layers_) tgt = &layer(cx, *tgt, enc.memory, memory_pos_, query_pos_);
  return norm_(cx, *tgt);
}

BoxMlp::BoxMlp(Params& p, std::string const& path, int dim)
    : fc0_{"fc0", p, child(path, "fc0"), dim, dim, Activation::relu, 2.0},
      fc1_{"fc1", p, child(path, "fc1"), dim, dim, Activation::relu, 2.0},
      fc2_{"fc2", p, child(path, "fc2"), dim, 4, Activation::sigmoid, 1.0} {}

Tensor const& BoxMlp::forward(Context& cx, Tensor const& x) {
  return fc2_(cx, fc1_(cx, fc0_(cx, x)));
}

Heads::Heads(Params& p, ModelConfig const& c)
    : class_head_{"class_head", p, "heads/class_head", c.d_model, c.num_classes + 1},
      box_head_{"box_head", p, "heads/box_head", c.d_model} {}

DetrOutput Heads::forward(Context& cx, Tensor const& hs) {
  Tensor const& logits = class_head_(cx, hs);
  Tensor const& boxes = box_head_(cx, hs);
  return DetrOutput{logits, boxes};
}

// ---------------------------------------------------------------------------------------------
// the detector

namespace {
ModelConfig const& validated(ModelConfig const& c) {
  c.validate();
  return c;
}
}  // namespace

Detr::Detr(nn::Backend& backend, ModelConfig const& config)
    : config_{validated(config)},
      params_{backend, config.rng_start},
      backbone_{"backbone", params_, config},
      encoder_{"encoder", params_, config},
      decoder_{"decoder", params_, config},
      heads_{"heads", params_, config} {}

DetrOutput Detr::forward(nn::Backend& be, nn::InferenceOps& ops, Tensor const& images) {
  Shape const& s = images.shape();
  if (s.c != 3 || s.n < 1 || s.h < 32 || s.w < 32 || s.h % 32 != 0 || s.w % 32 != 0 ||
      images.layout() != Layout::nhwc) {
    fail("detr", "images must be NHWC [N, 3, H, W] with H and W positive multiples of 32, got " +
                     images.describe());
  }
  Context cx{be, ops, s.n};
  Tensor const& features = backbone_(cx, images);
  EncoderOutput const enc = encoder_(cx, features);
  Tensor const& hs = decoder_(cx, enc);
  return heads_(cx, hs);
}

}  // namespace detr
