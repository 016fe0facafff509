// CUDA-graph recording on the CPU: what is unsafe during recording and how a failure is explained,
// argument checks that need no device, and the disabled build (graph recording is a CUDA utility:
// it works the same under NSIGHTKIT_DISABLE, only its report ranges go).
#include <nsightkit/graph.hpp>

#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace ng = nsightkit::detail::graph;

TEST_CASE("calls unsafe during recording are named by what they do") {
  REQUIRE(std::string{ng::unsafe_by_name("cudaMalloc")}.find("allocating") == 0);
  REQUIRE(ng::unsafe_by_name("cudaMalloc_v3020") != nullptr);  // versioned entry points
  REQUIRE(ng::unsafe_by_name("cudaMallocAsync") == nullptr);   // graph memory nodes are fine
  REQUIRE(std::string{ng::unsafe_by_name("cudaStreamSynchronize")}.find("a synchronization") == 0);
  REQUIRE(std::string{ng::unsafe_by_name("cudaMemcpy")}.find("a synchronous copy") == 0);
  REQUIRE(ng::unsafe_by_name("cudaMemcpyAsync") == nullptr);
  REQUIRE(ng::unsafe_by_name("cudaLaunchKernel") == nullptr);
  REQUIRE(std::string{ng::status_reason(cudaErrorStreamCaptureUnjoined)}.find("not joined back") !=
          std::string::npos);
}

TEST_CASE("the observer records unsafe calls in every running watch, with the module path") {
  ng::Watch* strict = ng::watch_begin([] { return std::string_view{"backbone/layer2"}; }, false);
  ng::Watch* check = ng::watch_begin(nullptr, true);
  REQUIRE(strict != nullptr);
  REQUIRE(check != nullptr);
  REQUIRE(nsightkit::detail::graph_watch.watching.load() >= 2);
  // A refused call (strict recording): kept by both; a call unsafe by name that CUDA allowed
  // (relaxed recording): only by the check-mode watch.
  ng::observe({"cudaMalloc", cudaErrorStreamCaptureUnsupported, true, 7, 0, 0});
  ng::observe({"cudaStreamSynchronize", 0, true, 8, 0, 0});
  ng::observe({"cudaLaunchKernel", 0, true, 8, 0, 0});                                // fine
  ng::observe({"cuMemAlloc_v2", cudaErrorStreamCaptureUnsupported, false, 7, 0, 0});  // driver
  auto const s = ng::watch_end(strict);
  auto const c = ng::watch_end(check);
  REQUIRE(s.size() == 1);
  REQUIRE(s[0].api == "cudaMalloc");
  REQUIRE(s[0].module_path == "backbone/layer2");
  REQUIRE(s[0].thread == 7);
  REQUIRE(s[0].error.rfind("cudaErrorStreamCaptureUnsupported", 0) == 0);
  REQUIRE(c.size() == 2);
  REQUIRE(c[1].api == "cudaStreamSynchronize");
  REQUIRE(c[1].error.empty());
}

TEST_CASE("a failed recording's message names the error, every unsafe call and its module") {
  std::vector<nsightkit::GraphViolation> v(1);
  v[0].api = "cudaMalloc";
  v[0].module_path = "backbone/layer2";
  v[0].reason = "allocating or freeing memory during recording";
  v[0].thread = 42;
  std::string const m = ng::failure_message("forward", cudaErrorStreamCaptureInvalidated, v);
  REQUIRE(m.find("recording of graph 'forward' failed") != std::string::npos);
  REQUIRE(m.find("cudaErrorStreamCaptureInvalidated") != std::string::npos);
  REQUIRE(m.find("cudaMalloc in 'backbone/layer2' (thread 42)") != std::string::npos);
  std::string const bare = ng::failure_message("forward", cudaErrorStreamCaptureUnjoined, {});
  REQUIRE(bare.find("not joined back") != std::string::npos);
  REQUIRE(bare.find("link nsightkit::cupti") != std::string::npos);  // no CUPTI source here
  // With GraphCheck::off nothing was watched: the hint is the check, not CUPTI.
  std::string const off = ng::failure_message("forward", cudaErrorStreamCaptureUnjoined, {}, false);
  REQUIRE(off.find("GraphCheck::off") != std::string::npos);
  REQUIRE(off.find("GraphCheck::strict") != std::string::npos);
  REQUIRE(off.find("link nsightkit::cupti to have") == std::string::npos);
  REQUIRE(off.find("with nsightkit::cupti linked") != std::string::npos);  // no CUPTI source here
}

TEST_CASE("a default stream is refused before any CUDA call") {
  for (auto s : {nsightkit::StreamView::default_stream(), nsightkit::StreamView::legacy(),
                 nsightkit::StreamView::per_thread()}) {
    try {
      nsightkit::GraphRecorder recorder{s, "g"};
      FAIL("no exception");
    } catch (std::invalid_argument const& e) {
      REQUIRE(std::string{e.what()}.find("a default stream cannot be recorded") !=
              std::string::npos);
    }
  }
  nsightkit::RecordedGraph empty;
  REQUIRE_FALSE(empty.valid());
  REQUIRE_THROWS_AS(empty.launch(nsightkit::StreamView::per_thread()), std::logic_error);
}
