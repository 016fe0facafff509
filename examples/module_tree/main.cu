// module_tree: a small ResNet-shaped module tree on the GPU. Every leaf module launches one
// kernel, every residual block one more (the add), so the number of kernels under any module is
// known. The program runs two training-like steps, each inside a "step N" range, and prints:
//   - per module path: kernels launched by the module itself and by its whole subtree;
//   - "expect <ncu --nvtx-include filter> <count>" lines: how many kernels ncu must profile for
//     each filter, computed from the NVTX stack recorded at every launch with ncu's documented
//     push/pop matching rules. scripts/gpu/module.sh runs ncu with each filter and compares.
//
// usage: module_tree [--domain model]
//   default: module ranges in domain "nsightkit", the same domain as the "step N" ranges;
//   --domain model: module ranges in a domain of their own ("model"), so that filters anchored
//   at the bottom of the stack ("[") work.
#include <nsightkit/cuda_check.hpp>
#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>
#include <nsightkit/range.hpp>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace nsk = nsightkit;

namespace {

struct ModelDomain {
  static constexpr char const* name{"model"};
};

// ---- kernels: one per kind of module, so ncu's output names the module kind too ----
__global__ void k_conv(float* x, int n, float w) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] = x[i] * w + 0.5f;
}
__global__ void k_bn(float* x, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] = (x[i] - 1.0f) * 0.5f;
}
__global__ void k_relu(float* x, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
__global__ void k_add(float* x, float const* y, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] += y[i];
}
__global__ void k_pool(float* x, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] *= 0.25f;
}
__global__ void k_fc(float* x, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] = x[i] * 0.9f + 0.1f;
}

constexpr int n = 1 << 16;
constexpr unsigned threads = 256;
constexpr unsigned blocks = (n + threads - 1) / threads;

/// NVTX push/pop stacks are per thread and per domain: domain name -> ranges, bottom first.
using Stacks = std::map<std::string, std::vector<std::string>>;

/// Where kernels go, and the record of which NVTX stacks each launch ran under.
struct Context {
  cudaStream_t stream{};
  std::string step;                 // "step N" (empty outside a step), domain "nsightkit"
  std::vector<Stacks> launches;     // per launch
  std::map<std::string, int> self;  // per module path: kernels the module launched itself
};
Context ctx;

/// Notes one launch under the current module (and checks the launch itself).
void launched() {
  NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
  std::string const path{nsk::current_module_path()};
  ++ctx.self[path];
  Stacks stacks;
  if (!ctx.step.empty()) stacks[nsk::DefaultDomain::name].push_back(ctx.step);
  auto& modules = stacks[nsk::module_domain()];
  for (std::size_t begin = 0; !path.empty();) {
    std::size_t const end = path.find('/', begin);
    modules.push_back(
        path.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  ctx.launches.push_back(std::move(stacks));
}

// ---- modules: plain structs; nsightkit only wraps them (Hooked) or scopes a forward ----
struct Conv {
  float w;
  void forward(float* x) const {
    k_conv<<<blocks, threads, 0, ctx.stream>>>(x, n, w);
    launched();
  }
};
struct BatchNorm {
  void operator()(float* x) const {
    k_bn<<<blocks, threads, 0, ctx.stream>>>(x, n);
    launched();
  }
};
struct ReLU {
  void operator()(float* x) const {
    k_relu<<<blocks, threads, 0, ctx.stream>>>(x, n);
    launched();
  }
};

/// conv1 bn1 relu conv2 bn2 [downsample] + the block's own residual add: 6 (7) kernels.
struct BasicBlock {
  float* identity;
  nsk::Hooked<Conv> conv1{"conv1", 1.01f};
  nsk::Hooked<BatchNorm> bn1{"bn1"};
  nsk::Hooked<ReLU> relu{"relu"};
  nsk::Hooked<Conv> conv2{"conv2", 0.99f};
  nsk::Hooked<BatchNorm> bn2{"bn2"};
  std::optional<nsk::Hooked<Conv>> downsample{};

  void forward(float* x) {
    NSIGHTKIT_CUDA_CHECK(
        cudaMemcpyAsync(identity, x, n * sizeof(float), cudaMemcpyDeviceToDevice, ctx.stream));
    conv1(x);
    bn1(x);
    relu(x);
    conv2(x);
    bn2(x);
    if (downsample) (*downsample)(identity);
    k_add<<<blocks, threads, 0, ctx.stream>>>(x, identity, n);  // the block's own kernel
    launched();
  }
};

struct Stem {
  nsk::Hooked<Conv> conv{"conv", 1.1f};
  nsk::Hooked<BatchNorm> bn{"bn"};
  nsk::Hooked<ReLU> relu{"relu"};
  void operator()(float* x) {
    conv(x);
    bn(x);
    relu(x);
  }
};

struct Layer {
  std::vector<nsk::Hooked<BasicBlock>> blocks;
  Layer(float* scratch, bool downsample_first) {
    blocks.reserve(2);
    blocks.emplace_back("0", scratch);
    blocks.emplace_back("1", scratch);
    if (downsample_first) blocks[0]->downsample.emplace("downsample", 0.5f);
  }
  void forward(float* x) {
    for (auto& b : blocks) b(x);
  }
};

struct Backbone {
  nsk::Hooked<Stem> stem{"stem"};
  nsk::Hooked<Layer> layer1;
  nsk::Hooked<Layer> layer2;
  explicit Backbone(float* scratch)
      : layer1{"layer1", scratch, false}, layer2{"layer2", scratch, true} {}
  void forward(float* x) {
    nsk::ModuleScope scope{"backbone"};  // the "edit one line" style
    stem(x);
    layer1(x);
    layer2(x);
  }
};

struct Head {
  void forward(float* x) const {
    nsk::ModuleScope scope{"head"};
    {
      nsk::ModuleScope pool{"pool"};
      k_pool<<<blocks, threads, 0, ctx.stream>>>(x, n);
      launched();
    }
    {
      nsk::ModuleScope fc{"fc"};
      k_fc<<<blocks, threads, 0, ctx.stream>>>(x, n);
      launched();
    }
  }
};

// ---- ncu's push/pop filter semantics (Nsight Compute CLI docs, "NVTX Filtering") ----
// "A/B" : B directly above A, anywhere in the stack; "[A" : A at the bottom; "B]" : B on top.
// Only the forms this program prints are modelled (no '+', '*', regex or escapes).
bool matches(std::vector<std::string> const& stack, std::string_view range_part) {
  bool bottom = false;
  bool top = false;
  if (!range_part.empty() && range_part.front() == '[') {
    bottom = true;
    range_part.remove_prefix(1);
  }
  if (!range_part.empty() && range_part.back() == ']') {
    top = true;
    range_part.remove_suffix(1);
  }
  std::vector<std::string> want;
  std::size_t begin = 0;
  while (begin < range_part.size()) {
    std::size_t end = range_part.find('/', begin);
    if (end == std::string_view::npos) end = range_part.size();
    if (end > begin) want.emplace_back(range_part.substr(begin, end - begin));
    begin = end + 1;
  }
  if (want.empty() || want.size() > stack.size()) return false;
  for (std::size_t at = 0; at + want.size() <= stack.size(); ++at) {
    if (bottom && at != 0) break;
    if (top && at + want.size() != stack.size()) continue;
    bool ok = true;
    for (std::size_t k = 0; k < want.size() && ok; ++k) ok = stack[at + k] == want[k];
    if (ok) return true;
  }
  return false;
}

/// Kernels ncu must profile for `filter` ("domain@ranges"; no '@': NVTX's global domain).
int expected_for(std::string const& filter) {
  std::size_t const at = filter.find('@');
  std::string const domain = at == std::string::npos ? "" : filter.substr(0, at);
  std::string_view const ranges =
      at == std::string::npos ? std::string_view{filter} : std::string_view{filter}.substr(at + 1);
  int count = 0;
  for (auto const& stacks : ctx.launches) {
    auto const it = stacks.find(domain);
    count += it != stacks.end() && matches(it->second, ranges) ? 1 : 0;
  }
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  bool own_domain = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--domain") == 0 && i + 1 < argc &&
        std::strcmp(argv[i + 1], "model") == 0) {
      own_domain = true;
      ++i;
    } else {
      std::fprintf(stderr, "usage: %s [--domain model]\n", argv[0]);
      return 2;
    }
  }
  // launched() reads current_module_path(): keep the module stack also when no tool is attached
  // (a plain run, the one that prints the expectations).
  nsk::track_module_paths();
  if (own_domain) nsk::set_module_domain<ModelDomain>();
  std::string const domain = nsk::module_domain();
  if (!nsk::enabled) {
    std::printf("built with NSIGHTKIT_DISABLE: no module ranges, nothing to select\n");
  }

  try {
    float* x = nullptr;
    float* scratch = nullptr;
    NSIGHTKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking));
    NSIGHTKIT_CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
    NSIGHTKIT_CUDA_CHECK(cudaMalloc(&scratch, n * sizeof(float)));
    NSIGHTKIT_CUDA_CHECK(cudaMemsetAsync(x, 0, n * sizeof(float), ctx.stream));
    nsk::name_stream(ctx.stream, "compute");

    Backbone backbone{scratch};
    Head head;
    constexpr int steps = 2;
    for (int s = 0; s < steps; ++s) {
      ctx.step = "step " + std::to_string(s);
      nsk::ScopedRange step{ctx.step};  // domain "nsightkit", below the modules
      backbone.forward(x);
      head.forward(x);
    }
    ctx.step.clear();
    NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    NSIGHTKIT_CUDA_CHECK(cudaFree(x));
    NSIGHTKIT_CUDA_CHECK(cudaFree(scratch));
    NSIGHTKIT_CUDA_CHECK(cudaStreamDestroy(ctx.stream));
  } catch (nsk::CudaError const& e) {
    std::fprintf(stderr, "module_tree: %s\n", e.what());
    return 1;
  }

  // Per module: its own kernels and its subtree's, over all steps. Paths of modules that launch
  // nothing themselves (backbone, layer1, ...) are added from their descendants' paths.
  std::map<std::string, int> self = ctx.self;
  for (auto const& entry : ctx.self) {
    for (std::size_t cut = entry.first.find('/'); cut != std::string::npos;
         cut = entry.first.find('/', cut + 1)) {
      self.emplace(entry.first.substr(0, cut), 0);
    }
  }
  std::printf("%zu kernels in 2 steps; module ranges in domain \"%s\"\n", ctx.launches.size(),
              domain.c_str());
  std::printf("%-32s %6s %10s\n", "module path", "self", "inclusive");
  for (auto const& [path, own] : self) {
    if (path.empty()) continue;
    int inclusive = 0;
    for (auto const& [p, c] : self) {
      if (p == path || p.rfind(path + "/", 0) == 0) inclusive += c;
    }
    std::printf("%-32s %6d %10d\n", path.c_str(), own, inclusive);
  }

  std::vector<std::string> filters;
  if (!own_domain) {
    filters = {nsk::ncu_nvtx_include("backbone/layer1"),  // "nsightkit@backbone/layer1/"
               domain + "@backbone/layer1",               // the docs' form, no trailing '/'
               domain + "@backbone/layer2/0/downsample/",
               domain + "@backbone/layer1/0]",  // block 0's own kernel only
               domain + "@conv1]",              // every conv1, any block
               domain + "@head/",
               domain + "@[backbone/layer1",  // "step N" is below: nothing
               domain + "@[step 1/backbone/layer1"};
  } else {
    filters = {domain + "@[backbone/layer1",  // modules alone in their domain
               nsk::ncu_nvtx_include("backbone/layer1"), domain + "@backbone/layer1/0]",
               "nsightkit@[step 1"};  // the steps, in their own domain
  }
  for (auto const& f : filters) std::printf("expect %s %d\n", f.c_str(), expected_for(f));
  return 0;
}
