/**
 * @file graph.hpp
 * @brief CUDA graphs: record a stream's work into a graph, with diagnostics that name the unsafe
 *        call and its module, and replays the report attributes to the modules that recorded them.
 *
 * @code
 * nsightkit::RecordedGraph graph;
 * {
 *   nsightkit::GraphRecorder recorder{nsightkit::StreamView{stream}, "forward"};
 *   model.forward(x, stream);                 // module scopes, kernels, cuBLAS ... as eagerly
 *   recorder.end(graph);                      // instantiate, or update `graph` in place
 * }
 * for (int step = 0; step < steps; ++step) graph.launch(nsightkit::StreamView{stream});
 * @endcode
 *
 * A CUDA utility like pinned.hpp: it calls the CUDA runtime, so the program links it
 * (CUDA::cudart, or nvcc). With the `nsightkit::cupti` component linked, diagnostics see every API
 * call during recording (its name, thread and module path) and the report attributes each
 * replayed kernel to the module path active when its node was recorded; without it, a failed
 * recording names CUDA's error and the first failing call CUDA reported. See docs/cuda-graphs.md.
 */
#pragma once

#include <nsightkit/config.hpp>

#if !NSIGHTKIT_HAS_CUDA
#error "nsightkit/graph.hpp needs the CUDA runtime headers (cuda_runtime_api.h)"
#endif

#include <nsightkit/attributes.hpp>
#include <nsightkit/detail/graph/recorder.hpp>
#include <nsightkit/graph_types.hpp>
#include <nsightkit/module.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/stream.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE

/**
 * @brief An instantiated CUDA graph: launch it, count its replays, update it in place.
 *
 * Made by GraphRecorder::end(). Move-only; destroys its executable graph. Each launch() is a
 * start/end range `graph NAME (replay)` in the report (a start/end range, so the modules its
 * kernels are attributed to keep their eager paths).
 *
 * Thread safety: none of its own (the counters are plain integers); one object must not be used
 * by two threads at once.
 *
 * @code
 * graph.launch(nsightkit::StreamView{stream});
 * std::printf("%llu replays\n", static_cast<unsigned long long>(graph.replays()));
 * @endcode
 */
class RecordedGraph {
 public:
  /// An empty graph (valid() is false).
  RecordedGraph() noexcept = default;
  /// Takes over `other`'s graph; `other` becomes empty.
  /// @param other the graph to take over.
  RecordedGraph(RecordedGraph&& other) noexcept { swap(other); }
  /// Destroys this graph, then takes over `other`'s.
  /// @param other the graph to take over.
  /// @return `*this`.
  RecordedGraph& operator=(RecordedGraph&& other) noexcept {
    if (this != &other) {
      RecordedGraph gone{std::move(other)};
      swap(gone);
    }
    return *this;
  }
  RecordedGraph(RecordedGraph const&) = delete;
  RecordedGraph& operator=(RecordedGraph const&) = delete;
  ~RecordedGraph() { detail::graph::destroy(exec_, graph_); }

  /**
   * @brief Launches the graph on `stream` (cudaGraphLaunch) and counts the replay.
   * @param stream the stream the replay is ordered on.
   * @throws std::logic_error when the graph is empty; CudaError when the launch fails.
   */
  void launch(StreamView stream) {
    if (exec_ == nullptr) {
      NSIGHTKIT_DETAIL_THROW(std::logic_error{"nsightkit::RecordedGraph::launch: empty graph"});
    }
    UniqueRange replay{replay_name_};
    detail::graph::check(cudaGraphLaunch(exec_, stream.value()), "cudaGraphLaunch", name_);
    ++replays_;
  }

  /// Whether it holds a graph. @return true when it holds an executable graph.
  [[nodiscard]] bool valid() const noexcept { return exec_ != nullptr; }
  /// Launches so far. @return the number of successful launch() calls.
  [[nodiscard]] std::uint64_t replays() const noexcept { return replays_; }
  /// The graph's name. @return the name given to the GraphRecorder ("" when empty).
  [[nodiscard]] std::string const& name() const noexcept { return name_; }
  /// In-place updates. @return how many times GraphRecorder::end() updated the executable graph
  /// in place instead of re-instantiating it.
  [[nodiscard]] std::uint64_t updates() const noexcept { return updates_; }
  /// Instantiations. @return how many times the graph was (re-)instantiated.
  [[nodiscard]] std::uint64_t instantiations() const noexcept { return instantiations_; }
  /// The executable graph, for CUDA calls of your own.
  /// @return the handle (null when empty); it stays owned by this object.
  [[nodiscard]] cudaGraphExec_t exec() const noexcept { return exec_; }

 private:
  friend class GraphRecorder;

  void swap(RecordedGraph& o) noexcept {
    std::swap(exec_, o.exec_);
    std::swap(graph_, o.graph_);
    std::swap(name_, o.name_);
    std::swap(replay_name_, o.replay_name_);
    std::swap(replays_, o.replays_);
    std::swap(updates_, o.updates_);
    std::swap(instantiations_, o.instantiations_);
  }

  /// Takes `graph` (just recorded): updates the executable graph in place when CUDA accepts the
  /// new topology, else instantiates anew.
  void adopt(cudaGraph_t graph, std::string const& name) {
    if (exec_ != nullptr && detail::graph::update(exec_, graph)) {
      ++updates_;
      detail::graph::destroy(nullptr, graph_);
      graph_ = graph;
    } else {
      cudaGraphExec_t exec = nullptr;
      cudaError_t const st = cudaGraphInstantiate(&exec, graph, 0);
      if (st != cudaSuccess) {
        detail::graph::destroy(nullptr, graph);
        detail::graph::check(st, "cudaGraphInstantiate", name);
      }
      detail::graph::destroy(exec_, graph_);
      exec_ = exec;
      graph_ = graph;
      ++instantiations_;
    }
    name_ = name;
    replay_name_ = "graph " + name + " (replay)";
  }

  cudaGraphExec_t exec_{nullptr};
  cudaGraph_t graph_{nullptr};
  std::string name_;
  std::string replay_name_;
  std::uint64_t replays_{0};
  std::uint64_t updates_{0};
  std::uint64_t instantiations_{0};
};

/**
 * @brief Records the work issued to a stream into a CUDA graph (CUDA's stream capture,
 *        cudaStreamBeginCapture/End), naming any unsafe call and the module that made it.
 *
 * Construction begins recording `stream` (a start/end range `graph NAME (record)` in the report
 * while it lasts); end() ends it and instantiates (or updates) the graph. Not copyable, not
 * movable. The destructor ends a recording that end() did not, and discards it.
 *
 * Unsafe during recording (and named, with the module path, where the CUPTI component sees the
 * calls): synchronous calls (cudaMemcpy, cudaMemset, cudaDeviceSynchronize,
 * cudaStreamSynchronize, cudaEventSynchronize, cudaEventQuery, cudaStreamQuery), allocation and
 * freeing (cudaMalloc, cudaFree, cudaMallocHost, ...), work on the legacy default stream, a stream
 * forked from the recorded stream and not joined back before end(), and unsafe calls from another
 * thread in global mode.
 *
 * Thread safety: one object belongs to the thread that records; recordings of different streams
 * may run on different threads at once.
 *
 * @code
 * nsightkit::GraphRecorder recorder{nsightkit::StreamView{s}, "decoder",
 *                                   {{}, nsightkit::GraphCheck::check}};
 * decoder.forward(x, s);
 * auto graph = recorder.end();
 * for (auto const& v : recorder.violations())
 *   std::printf("%s in %s\n", v.api.c_str(), v.module_path.c_str());
 * @endcode
 */
class GraphRecorder {
 public:
  /**
   * @brief Begins recording `stream`'s work.
   * @param stream the stream to record (not a default stream: CUDA cannot capture those)
   * @param name names the graph in the report and in messages
   * @param options mode and diagnostics
   * @throws std::invalid_argument for a default stream; CudaError when recording cannot begin
   */
  GraphRecorder(StreamView stream, std::string name, GraphOptions options = {})
      : stream_{stream}, name_{std::move(name)}, options_{options} {
    if (detail::graph::is_default_stream(stream.value())) {
      NSIGHTKIT_DETAIL_THROW(std::invalid_argument{
          "nsightkit::GraphRecorder '" + name_ +
          "': a default stream cannot be recorded; use a stream of your own"});
    }
    if (options_.check != GraphCheck::off) {
      track_module_paths();  // the module of an unsafe call comes from the thread's module stack
      watch_ =
          detail::graph::watch_begin(&current_module_path, options_.check == GraphCheck::check);
    }
    range_.emplace("graph " + name_ + " (record)");
    cudaStreamCaptureMode const mode = options_.check == GraphCheck::check
                                           ? cudaStreamCaptureModeRelaxed
                                           : detail::graph::cuda_mode(options_.mode);
    cudaError_t const st = cudaStreamBeginCapture(stream_.value(), mode);
    if (st != cudaSuccess) {
      detail::graph::watch_end(watch_);
      watch_ = nullptr;
      range_.reset();
      detail::graph::check(st, "cudaStreamBeginCapture", name_);
    }
    recording_ = true;
  }

  GraphRecorder(GraphRecorder const&) = delete;
  GraphRecorder& operator=(GraphRecorder const&) = delete;
  GraphRecorder(GraphRecorder&&) = delete;
  GraphRecorder& operator=(GraphRecorder&&) = delete;

  /// Ends an unfinished recording and discards it (errors are swallowed: destructors do not throw).
  ~GraphRecorder() {
    if (recording_) {
      cudaGraph_t g = nullptr;
      (void)cudaStreamEndCapture(stream_.value(), &g);
      detail::graph::destroy(nullptr, g);
      (void)cudaGetLastError();
    }
    detail::graph::watch_end(watch_);
  }

  /**
   * @brief Ends the recording and returns the instantiated graph.
   * @return the graph; empty (valid() false) in check mode when violations() is not empty.
   * @throws GraphRecordError when the recording failed (strict and off modes; never in check
   *         mode); CudaError when instantiation fails; std::logic_error when called twice.
   */
  RecordedGraph end() {
    RecordedGraph g;
    end(g);
    return g;
  }

  /**
   * @brief Ends the recording into `graph`: updated in place (cudaGraphExecUpdate) when it already
   *        holds a graph of the same topology, else (re)instantiated.
   * @param graph receives the recorded graph; left as it was when the recording yields none
   *        (check mode with violations) or throws.
   * @throws as end().
   */
  void end(RecordedGraph& graph) {
    if (!recording_) {
      NSIGHTKIT_DETAIL_THROW(std::logic_error{"nsightkit::GraphRecorder::end: called twice"});
    }
    recording_ = false;
    cudaGraph_t recorded = nullptr;
    cudaError_t const st = cudaStreamEndCapture(stream_.value(), &recorded);
    range_.reset();
    violations_ = detail::graph::watch_end(watch_);
    watch_ = nullptr;
    if (options_.check == GraphCheck::check) {
      if (st != cudaSuccess || !violations_.empty()) {
        detail::graph::destroy(nullptr, recorded);
        (void)cudaGetLastError();
        if (st != cudaSuccess && violations_.empty()) {
          violations_.push_back(detail::graph::from_status(st, "cudaStreamEndCapture"));
        }
        return;
      }
    } else if (st != cudaSuccess) {
      detail::graph::destroy(nullptr, recorded);
      std::vector<GraphViolation> v = std::move(violations_);
      violations_.clear();
      std::string const what =
          detail::graph::failure_message(name_, st, v, options_.check != GraphCheck::off);
      (void)cudaGetLastError();
      NSIGHTKIT_DETAIL_THROW(GraphRecordError{what, std::move(v)});
    }
    graph.adopt(recorded, name_);
  }

  /// The unsafe calls seen, after end().
  /// @return check mode: all of them. Strict mode: empty after a failure, whose
  ///         GraphRecordError took them (those before CUDA refused).
  [[nodiscard]] std::vector<GraphViolation> const& violations() const noexcept {
    return violations_;
  }

 private:
  StreamView stream_;
  std::string name_;
  GraphOptions options_;
  std::optional<UniqueRange> range_;
  detail::graph::Watch* watch_{nullptr};
  std::vector<GraphViolation> violations_;
  bool recording_{false};
};

NSIGHTKIT_DETAIL_END_NAMESPACE
