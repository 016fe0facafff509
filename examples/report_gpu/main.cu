// Per-module GPU times with no profiler attached: a small module tree (model/encoder/blockN/...,
// each module a ModuleScope) launches spin kernels of known cost on one stream; nsightkit's report
// times every module on the GPU with pooled CUDA events and prints the layer-by-layer table;
// per-path GPU times go to a CSV.
//
//   report_gpu [--steps N] [--csv report.csv] [--trace trace.json] [--kernels kernels.csv]
//              [--quiet]
//
// scripts/gpu/report.sh runs it as is and under ncu and compares the two (compare_report_ncu.py).
// Module names of leaves are unique (attn0, mlp1, ...) so that ncu's --print-nvtx-rename kernel
// (innermost range only) maps every kernel to one path; each leaf also launches its own kernel
// instantiation spin_kernel<Id>, written to --kernels, as a second way to map ncu rows back.
#include <nsightkit/cuda_check.hpp>
#include <nsightkit/module.hpp>
#include <nsightkit/report.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Spins for `ns` of GPU time (the global timer, so SM clocks do not matter). `Id` only gives
/// every module its own kernel symbol.
template <int Id>
__global__ void spin_kernel(long long ns) {
  unsigned long long const start = global_ns();
  while (static_cast<long long>(global_ns() - start) < ns) {
  }
}

constexpr long long ms = 1000000;

struct Leaf {
  int id;
  char const* path;
  long long ns;
};
constexpr Leaf leaves[] = {{1, "model/embed", 1 * ms},
                           {2, "model/encoder/block0/attn0", 2 * ms},
                           {3, "model/encoder/block0/mlp0", 6 * ms},
                           {4, "model/encoder/block1/attn1", 2 * ms},
                           {5, "model/encoder/block1/mlp1", 6 * ms},
                           {6, "model/head", 1 * ms}};

/// A leaf module: its scope (an NVTX range named after it), then its kernel on the stream.
template <int Id>
void leaf(cudaStream_t stream, char const* name) {
  nsightkit::ModuleScope m{name};
  spin_kernel<Id><<<1, 1, 0, stream>>>(leaves[Id - 1].ns);
  NSIGHTKIT_CUDA_CHECK(cudaGetLastError());
}

template <int Attn, int Mlp>
void block(cudaStream_t stream, char const* name, char const* attn, char const* mlp) {
  nsightkit::ModuleScope m{name};
  leaf<Attn>(stream, attn);
  leaf<Mlp>(stream, mlp);
}

/// One forward pass. CurrentStream makes the stream current for the whole tree, so every module's
/// range is timed on the GPU as well as on the CPU.
void forward(cudaStream_t stream) {
  nsightkit::CurrentStream on{nsightkit::StreamView{stream}};
  nsightkit::ModuleScope model{"model"};
  leaf<1>(stream, "embed");
  {
    nsightkit::ModuleScope encoder{"encoder"};
    block<2, 3>(stream, "block0", "attn0", "mlp0");
    block<4, 5>(stream, "block1", "attn1", "mlp1");
  }
  leaf<6>(stream, "head");
}

char const* arg_value(int& i, int argc, char** argv) {
  if (i + 1 >= argc) {
    std::fprintf(stderr, "report_gpu: %s needs a value\n", argv[i]);
    std::exit(2);
  }
  return argv[++i];
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 5;
  nsightkit::ReportOptions options;
  options.at_exit = false;  // written explicitly below
  options.table = "stdout";
  std::string kernels;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--steps") == 0) {
      steps = std::atoi(arg_value(i, argc, argv));
    } else if (std::strcmp(argv[i], "--csv") == 0) {
      options.csv = arg_value(i, argc, argv);
    } else if (std::strcmp(argv[i], "--trace") == 0) {
      options.trace = arg_value(i, argc, argv);
    } else if (std::strcmp(argv[i], "--kernels") == 0) {
      kernels = arg_value(i, argc, argv);
    } else if (std::strcmp(argv[i], "--quiet") == 0) {
      options.table.clear();
    } else {
      std::fprintf(
          stderr,
          "usage: report_gpu [--steps N] [--csv PATH] [--trace PATH] [--kernels PATH] [--quiet]\n");
      return 2;
    }
  }
  // Load every kernel when the context is created: with lazy loading the first launch of each
  // kernel would stall inside its module's range and show up as GPU idle time there.
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  try {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      std::fprintf(stderr, "report_gpu: no usable CUDA device\n");
      return 77;
    }
    cudaStream_t stream{};
    NSIGHTKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    nsightkit::name_stream(stream, "compute");
    spin_kernel<0><<<1, 1, 0, stream>>>(10000);  // warm-up outside any range (Id 0: no module)
    NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(stream));

    nsightkit::Report::enable(options);
    for (int step = 0; step < steps; ++step) forward(stream);
    NSIGHTKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
    bool const ok = nsightkit::Report::write();  // the table, and the CSV/trace if asked for

    if (!kernels.empty()) {
      std::FILE* f = std::fopen(kernels.c_str(), "w");
      if (f == nullptr) {
        std::perror(kernels.c_str());
        return 1;
      }
      std::fprintf(f, "id,path,spin_ns,launches\n");
      for (Leaf const& l : leaves) std::fprintf(f, "%d,%s,%lld,%d\n", l.id, l.path, l.ns, steps);
      std::fclose(f);
    }
    NSIGHTKIT_CUDA_CHECK(cudaStreamDestroy(stream));
    return ok ? 0 : 1;
  } catch (nsightkit::CudaError const& e) {
    std::fprintf(stderr, "report_gpu: %s\n", e.what());
    return 1;
  }
}
