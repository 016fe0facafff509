// The stream prefetcher on the CPU. Its ordering rules live in detail::prefetch::Core, tested here
// against a fake GPU: every stream is a queue of operations (event records, event waits, work)
// that the test executes when and in which order it wants — eagerly, lagging a given number of
// batches behind the host, or at random. Work the test queues checks what a real GPU would
// corrupt: the consumer's "kernel" reads its slot at its start and at its end (a copy into the
// slot in between is an error), a copy reads its host batch when it runs (a destroyed host batch
// is an error), and a slot destroyed while queued work still refers to it is an error.
// Also: the exact sequence of operations per batch for depths 1-4, the ends (source running dry,
// break, destruction, exceptions at batch k, failing backend calls), no host wait while the GPU
// keeps up, no allocation per batch, the NVTX ranges through the Recorder, and the public
// StreamPrefetcher's argument checks and its clear CudaError where no driver exists.
#include "support.hpp"

#include <nsightkit/detail/prefetch/core.hpp>
#include <nsightkit/prefetch.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// ---- allocation counting (alloc_counter.cpp replaces operator new) -------------------
namespace nsk_test {
extern std::atomic<bool> count_allocations;
extern std::atomic<long> allocations;
extern bool const allocation_counting;
}  // namespace nsk_test

// ---- a fake GPU -------------------------------------------------------------------------------
namespace nsk_test {

constexpr int compute_stream = 1;
constexpr int copy_stream = 2;

struct FakeGpu {
  enum class Kind { record, wait, work };
  struct Op {
    Kind kind{Kind::work};
    int event{-1};
    std::uint64_t ticket{0};  // record: this record's number; wait: the record waited for (0: none)
    std::function<void()> work;
    int slot{-1};     // the slot the work touches (-1: none)
    long kernel{-1};  // the batch of a consumer kernel's first half
  };
  struct EventState {
    std::string name;
    std::uint64_t recorded{0};  // records issued by the host
    std::uint64_t done{0};      // the last record the GPU executed
    bool destroyed{false};
  };

  std::map<int, std::deque<Op>> queues{{compute_stream, {}}, {copy_stream, {}}};
  std::vector<EventState> events;
  std::vector<std::string> log;     // host-side calls, in order
  std::vector<std::string> errors;  // anything a real GPU would have corrupted, or misuse
  int loop_syncs{0};                // blocking waits issued while the loop runs (synchronize)
  int final_syncs{0};               // blocking waits issued by the destructor
  int syncs_that_drained{0};        // blocking waits after which no compute kernel was queued
  std::string fail_record;          // "<stream>: record <event>" that throws (a CUDA error)
  std::mt19937 rng{12345};

  static char const* stream_name(int s) { return s == compute_stream ? "compute" : "copy"; }

  bool ready(Op const& op) const {
    return op.kind != Kind::wait || op.ticket == 0 ||
           events[static_cast<std::size_t>(op.event)].done >= op.ticket;
  }

  // Executes the front operation of stream s if it can run.
  bool step(int s) {
    auto& q = queues[s];
    if (q.empty() || !ready(q.front())) return false;
    Op op = std::move(q.front());
    q.pop_front();
    if (op.kind == Kind::record) events[static_cast<std::size_t>(op.event)].done = op.ticket;
    if (op.kind == Kind::work && op.work) op.work();
    return true;
  }

  // Runs random runnable operations until nothing can run.
  void run_all() {
    for (;;) {
      std::vector<int> runnable;
      for (auto& [s, q] : queues) {
        if (!q.empty() && ready(q.front())) runnable.push_back(s);
      }
      if (runnable.empty()) return;
      step(runnable[rng() % runnable.size()]);
    }
  }

  // Runs up to `n` random runnable operations.
  void run_random(int n) {
    for (int i = 0; i < n; ++i) {
      std::vector<int> runnable;
      for (auto& [s, q] : queues) {
        if (!q.empty() && ready(q.front())) runnable.push_back(s);
      }
      if (runnable.empty()) return;
      step(runnable[rng() % runnable.size()]);
    }
  }

  // A GPU `lag` batches behind the consumer, who just queued kernel `n`: the copy engine runs as
  // far as it can; the compute stream stops before the kernel of batch n - lag + 1.
  void run_lagging(long n, long lag) {
    for (;;) {
      if (step(copy_stream)) continue;
      auto& q = queues[compute_stream];
      if (!q.empty() && q.front().kernel >= 0 && q.front().kernel > n - lag) return;
      if (!step(compute_stream)) return;
    }
  }

  bool complete(int e) const {
    auto const& ev = events[static_cast<std::size_t>(e)];
    return ev.done >= ev.recorded;
  }

  // The stream whose queue holds the record `ticket` of event e, or -1.
  int stream_recording(int e, std::uint64_t ticket) const {
    for (auto const& [s, q] : queues) {
      for (auto const& op : q) {
        if (op.kind == Kind::record && op.event == e && op.ticket == ticket) return s;
      }
    }
    return -1;
  }

  // A blocking host wait: the GPU runs exactly what the record `ticket` of e depends on — the
  // operations before it on its stream and, for each event wait among them, what that depends on.
  void run_until(int e, std::uint64_t ticket) {
    while (events[static_cast<std::size_t>(e)].done < ticket) {
      int const s = stream_recording(e, ticket);
      if (s < 0) {
        errors.push_back("deadlock: " + name(e) + " can never complete");
        return;
      }
      Op const& front = queues[s].front();
      if (!ready(front)) {
        run_until(front.event, front.ticket);
      } else {
        step(s);
      }
    }
  }
  void run_until(int e) { run_until(e, events[static_cast<std::size_t>(e)].recorded); }

  // Runs stream s until it is empty (and what its waits depend on).
  void drain(int s) {
    while (!queues[s].empty()) {
      Op const& front = queues[s].front();
      if (!ready(front)) {
        run_until(front.event, front.ticket);
      } else {
        step(s);
      }
    }
  }

  bool compute_kernel_queued() const {
    for (auto const& op : queues.at(compute_stream)) {
      if (op.kernel >= 0) return true;
    }
    return false;
  }

  bool slot_referenced(int slot) const {
    for (auto const& [s, q] : queues) {
      (void)s;
      for (auto const& op : q) {
        if (op.slot == slot) return true;
      }
    }
    return false;
  }

  std::string const& name(int e) const { return events[static_cast<std::size_t>(e)].name; }

  void push(int s, Op op) { queues[s].push_back(std::move(op)); }
};

// The Backend of prefetch::Core over the fake GPU; every call is logged.
struct FakeBackend {
  using Stream = int;
  using Event = int;

  FakeGpu* gpu{nullptr};

  int create_event(char const* role, std::size_t slot) {
    gpu->events.push_back({std::string{role} + "[" + std::to_string(slot) + "]"});
    return static_cast<int>(gpu->events.size() - 1);
  }
  void destroy_event(int e) noexcept {
    auto& ev = gpu->events[static_cast<std::size_t>(e)];
    if (ev.destroyed) gpu->errors.push_back("event destroyed twice: " + ev.name);
    ev.destroyed = true;
  }
  void record(int e, int s) {
    std::string line = std::string{FakeGpu::stream_name(s)} + ": record " + gpu->name(e);
    if (line == gpu->fail_record) throw std::runtime_error{"fake CUDA failure: " + line};
    gpu->log.push_back(std::move(line));
    auto& ev = gpu->events[static_cast<std::size_t>(e)];
    FakeGpu::Op op;
    op.kind = FakeGpu::Kind::record;
    op.event = e;
    op.ticket = ++ev.recorded;
    gpu->push(s, std::move(op));
  }
  bool record_nothrow(int e, int s) noexcept {
    try {
      record(e, s);
      return true;
    } catch (...) {
      gpu->log.push_back(std::string{FakeGpu::stream_name(s)} + ": record " + gpu->name(e) +
                         " failed");
      return false;
    }
  }
  void wait(int s, int e) {
    gpu->log.push_back(std::string{FakeGpu::stream_name(s)} + ": wait " + gpu->name(e));
    FakeGpu::Op op;
    op.kind = FakeGpu::Kind::wait;
    op.event = e;
    op.ticket = gpu->events[static_cast<std::size_t>(e)].recorded;
    gpu->push(s, std::move(op));
  }
  bool query(int e) {
    bool const done = gpu->complete(e);
    gpu->log.push_back("query " + gpu->name(e) + (done ? " done" : " pending"));
    return done;
  }
  void synchronize(int e) {
    gpu->log.push_back("sync " + gpu->name(e));
    ++gpu->loop_syncs;
    gpu->run_until(e);
    if (!gpu->compute_kernel_queued()) ++gpu->syncs_that_drained;
  }
  void synchronize_nothrow(int e) noexcept {
    gpu->log.push_back("sync " + gpu->name(e));
    ++gpu->final_syncs;
    gpu->run_until(e);
  }
  void synchronize_stream_nothrow(int s) noexcept {
    gpu->log.push_back(std::string{"sync stream "} + FakeGpu::stream_name(s));
    gpu->drain(s);
  }
};

// Host batches: alive or not, so that a copy running after its batch died is caught.
struct Lives {
  std::set<long> alive;
};

class FakeHost {
 public:
  FakeHost(Lives* lives, long index) : lives_{lives}, index_{index} {
    lives_->alive.insert(index_);
  }
  FakeHost(FakeHost&& other) noexcept
      : lives_{std::exchange(other.lives_, nullptr)}, index_{other.index_} {}
  FakeHost& operator=(FakeHost&&) = delete;
  FakeHost(FakeHost const&) = delete;
  FakeHost& operator=(FakeHost const&) = delete;
  ~FakeHost() {
    if (lives_ != nullptr) lives_->alive.erase(index_);
  }
  [[nodiscard]] long index() const noexcept { return index_; }

 private:
  Lives* lives_;
  long index_;
};

// Device slots: a value the copy writes and the kernel reads, and who is reading it right now.
struct SlotData {
  int id{0};
  long value{-1};
  long reader{-1};  // batch of the kernel between its two halves, or -1
};

class FakeSlot {
 public:
  FakeSlot(FakeGpu* gpu, int id) : gpu_{gpu}, data_{std::make_unique<SlotData>()} {
    data_->id = id;
  }
  FakeSlot(FakeSlot&&) noexcept = default;
  FakeSlot& operator=(FakeSlot&&) = delete;
  ~FakeSlot() {
    if (data_ && gpu_->slot_referenced(data_->id)) {
      gpu_->errors.push_back("slot " + std::to_string(data_->id) +
                             " freed while queued work still uses it");
    }
    if (data_) gpu_->log.push_back("free slot " + std::to_string(data_->id));
  }
  [[nodiscard]] SlotData* data() const noexcept { return data_.get(); }

 private:
  FakeGpu* gpu_;
  std::unique_ptr<SlotData> data_;
};

using Core = nsightkit::detail::prefetch::Core<FakeBackend, FakeHost, FakeSlot>;

struct SourceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct TransferError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One run of a prefetcher over `batches` host batches, with the GPU driven by `progress` after
// each batch the consumer queued work for.
struct Run {
  FakeGpu gpu;
  Lives lives;
  long batches{0};
  long source_calls{0};
  long source_throws_at{-1};
  long transfer_throws_at{-1};
  std::vector<long> consumed;

  Core make(std::size_t depth) {
    return Core{[this]() -> std::optional<FakeHost> { return source(); },
                [this](FakeHost& h, FakeSlot& s, std::size_t i) { transfer(h, s, i); },
                [this](std::size_t i) {
                  return FakeSlot{&gpu, static_cast<int>(i)};
                },
                depth,
                compute_stream,
                copy_stream,
                FakeBackend{&gpu}};
  }

  std::optional<FakeHost> source() {
    long const i = source_calls++;
    gpu.log.push_back("source -> " + (i < batches ? std::to_string(i) : std::string{"end"}));
    if (i == source_throws_at) throw SourceError{"source failed at batch " + std::to_string(i)};
    if (i >= batches) return std::nullopt;
    return FakeHost{&lives, i};
  }

  // Queues "the copy": reads the host batch and writes the slot when the GPU runs it.
  void transfer(FakeHost& host, FakeSlot& slot, std::size_t index) {
    long const i = host.index();
    SlotData* d = slot.data();
    gpu.log.push_back("transfer " + std::to_string(index) + " -> slot " + std::to_string(d->id));
    if (static_cast<long>(index) != i)
      gpu.errors.push_back("transfer index differs from the host batch");
    Lives* l = &lives;
    FakeGpu* g = &gpu;
    FakeGpu::Op op;
    op.slot = d->id;
    op.work = [g, l, d, i] {
      if (l->alive.count(i) == 0)
        g->errors.push_back("copy " + std::to_string(i) + " read a destroyed host batch");
      if (d->reader >= 0) {
        g->errors.push_back("copy " + std::to_string(i) + " overwrote slot " +
                            std::to_string(d->id) + " while kernel " + std::to_string(d->reader) +
                            " read it");
      }
      d->value = i;
    };
    gpu.push(copy_stream, std::move(op));
    if (i == transfer_throws_at)
      throw TransferError{"transfer failed at batch " + std::to_string(i)};
  }

  // The consumer's work on batch b: a kernel in two halves that both read the slot.
  void consume(nsightkit::PrefetchedBatch<FakeHost, FakeSlot>& b) {
    long const n = static_cast<long>(b.index());
    SlotData* d = b.device().data();
    gpu.log.push_back("consume " + std::to_string(n) + " slot " + std::to_string(d->id));
    if (b.host().index() != n) gpu.errors.push_back("host batch differs from the index");
    if (b.slot_index() != static_cast<std::size_t>(d->id))
      gpu.errors.push_back("slot_index() is wrong");
    consumed.push_back(n);
    FakeGpu* g = &gpu;
    FakeGpu::Op begin;
    begin.slot = d->id;
    begin.kernel = n;
    begin.work = [g, d, n] {
      if (d->value != n) {
        g->errors.push_back("kernel " + std::to_string(n) + " read batch " +
                            std::to_string(d->value));
      }
      d->reader = n;
    };
    FakeGpu::Op end;
    end.slot = d->id;
    end.work = [g, d, n] {
      if (d->value != n) {
        g->errors.push_back("kernel " + std::to_string(n) + " saw its slot overwritten by batch " +
                            std::to_string(d->value));
      }
      d->reader = -1;
    };
    gpu.push(compute_stream, std::move(begin));
    gpu.push(compute_stream, std::move(end));
  }
};

using Lines = std::vector<std::string>;

std::vector<long> iota(long n) {
  std::vector<long> v;
  for (long i = 0; i < n; ++i) v.push_back(i);
  return v;
}

// Runs the whole loop with an eager GPU (it executes everything after each batch).
Lines eager_log(std::size_t depth, long batches, std::vector<std::string>* errors = nullptr) {
  Run run;
  run.batches = batches;
  {
    Core core = run.make(depth);
    for (auto& b : core) {
      run.consume(b);
      run.gpu.run_all();
    }
    CHECK(run.gpu.loop_syncs == 0);
    CHECK(core.stats().host_waits == 0);
    CHECK(core.stats().delivered == static_cast<std::uint64_t>(batches));
    CHECK(core.stats().fetched == static_cast<std::uint64_t>(batches));
  }
  CHECK(run.consumed == iota(batches));
  if (errors != nullptr) *errors = run.gpu.errors;
  CHECK(run.gpu.errors.empty());
  return run.gpu.log;
}

}  // namespace nsk_test

using nsightkit::PrefetchOptions;
using nsightkit::StreamPrefetcher;
using nsightkit::StreamView;
using nsightkit::testing::Recorder;
using nsk_test::Core;
using nsk_test::FakeHost;
using nsk_test::FakeSlot;
using nsk_test::Lines;
using nsk_test::Run;

// ---- the exact order of operations --------------------------------------------------------------

TEST_CASE("depth 1: copy, wait, compute, release — nothing overlaps") {
  // clang-format off
  Lines const expected{
      "source -> 0", "transfer 0 -> slot 0", "copy: record copied[0]",
      "compute: wait copied[0]", "consume 0 slot 0",
      // advance: release 0, fetch 1, reuse the one slot after the compute work on 0
      "compute: record released[0]", "source -> 1", "query copied[0] done", "copy: wait released[0]",
      "transfer 1 -> slot 0", "copy: record copied[0]", "compute: wait copied[0]", "consume 1 slot 0",
      "compute: record released[0]", "source -> 2", "query copied[0] done", "copy: wait released[0]",
      "transfer 2 -> slot 0", "copy: record copied[0]", "compute: wait copied[0]", "consume 2 slot 0",
      "compute: record released[0]", "source -> end",
      // destruction: the last compute work and the last copy
      "sync released[0]", "sync copied[0]", "free slot 0"};
  // clang-format on
  CHECK(nsk_test::eager_log(1, 3) == expected);
}

namespace {
std::vector<double> waiting_samples;  // "prefetch batches waiting" as the test sink received it
void record_waiting(char const* name, double value) noexcept {
  if (std::string{name} == "prefetch batches waiting") waiting_samples.push_back(value);
}
}  // namespace

TEST_CASE("batches copied and not yet consumed go to the counter sink, none are left after") {
  auto const previous = nsightkit::detail::counter_sink.exchange(&record_waiting);
  waiting_samples.clear();
  auto const base = static_cast<double>(nsightkit::detail::prefetch_batches_waiting.value());
  {
    nsk_test::Run run;
    run.batches = 4;
    nsk_test::Core core = run.make(3);
    auto it = core.begin();  // three copies queued, batch 0 handed over
    CHECK(waiting_samples.size() == 4);
    CHECK(waiting_samples.back() - base == 2.0);
    ++it;  // batch 0 released, batch 3 queued, batch 1 handed over
    CHECK(waiting_samples.back() - base == 2.0);
    run.gpu.run_all();
  }  // destroyed holding batch 1 with batches 2 and 3 waiting: they are not waiting any more
  nsightkit::detail::counter_sink.store(previous);
  std::vector<double> rel;
  for (double v : waiting_samples) rel.push_back(v - base);
  CHECK(rel == std::vector<double>{1, 2, 3, 2, 3, 2, 0});
}

TEST_CASE("depth 2: the copy of batch N+1 is queued before the consumer sees batch N") {
  // clang-format off
  Lines const expected{
      "source -> 0", "transfer 0 -> slot 0", "copy: record copied[0]",
      "source -> 1", "transfer 1 -> slot 1", "copy: record copied[1]",
      "compute: wait copied[0]", "consume 0 slot 0",
      "compute: record released[0]", "source -> 2", "query copied[0] done", "copy: wait released[0]",
      "transfer 2 -> slot 0", "copy: record copied[0]", "compute: wait copied[1]", "consume 1 slot 1",
      "compute: record released[1]", "source -> 3", "query copied[1] done", "copy: wait released[1]",
      "transfer 3 -> slot 1", "copy: record copied[1]", "compute: wait copied[0]", "consume 2 slot 0",
      "compute: record released[0]", "source -> end", "compute: wait copied[1]", "consume 3 slot 1",
      "compute: record released[1]",
      "sync released[0]", "sync copied[0]", "sync released[1]", "sync copied[1]",
      "free slot 0", "free slot 1"};
  // clang-format on
  CHECK(nsk_test::eager_log(2, 4) == expected);
}

TEST_CASE("depth 3: two copies in flight while the consumer works") {
  // clang-format off
  Lines const expected{
      "source -> 0", "transfer 0 -> slot 0", "copy: record copied[0]",
      "source -> 1", "transfer 1 -> slot 1", "copy: record copied[1]",
      "source -> 2", "transfer 2 -> slot 2", "copy: record copied[2]",
      "compute: wait copied[0]", "consume 0 slot 0",
      "compute: record released[0]", "source -> 3", "query copied[0] done", "copy: wait released[0]",
      "transfer 3 -> slot 0", "copy: record copied[0]", "compute: wait copied[1]", "consume 1 slot 1",
      "compute: record released[1]", "source -> 4", "query copied[1] done", "copy: wait released[1]",
      "transfer 4 -> slot 1", "copy: record copied[1]", "compute: wait copied[2]", "consume 2 slot 2",
      "compute: record released[2]", "source -> end", "compute: wait copied[0]", "consume 3 slot 0",
      "compute: record released[0]", "compute: wait copied[1]", "consume 4 slot 1",
      "compute: record released[1]",
      "sync released[0]", "sync copied[0]", "sync released[1]", "sync copied[1]",
      "sync released[2]", "sync copied[2]", "free slot 0", "free slot 1", "free slot 2"};
  // clang-format on
  CHECK(nsk_test::eager_log(3, 5) == expected);
}

TEST_CASE("depth 4: three copies in flight while the consumer works") {
  // clang-format off
  Lines const expected{
      "source -> 0", "transfer 0 -> slot 0", "copy: record copied[0]",
      "source -> 1", "transfer 1 -> slot 1", "copy: record copied[1]",
      "source -> 2", "transfer 2 -> slot 2", "copy: record copied[2]",
      "source -> 3", "transfer 3 -> slot 3", "copy: record copied[3]",
      "compute: wait copied[0]", "consume 0 slot 0",
      "compute: record released[0]", "source -> 4", "query copied[0] done", "copy: wait released[0]",
      "transfer 4 -> slot 0", "copy: record copied[0]", "compute: wait copied[1]", "consume 1 slot 1",
      "compute: record released[1]", "source -> 5", "query copied[1] done", "copy: wait released[1]",
      "transfer 5 -> slot 1", "copy: record copied[1]", "compute: wait copied[2]", "consume 2 slot 2",
      "compute: record released[2]", "source -> end", "compute: wait copied[3]", "consume 3 slot 3",
      "compute: record released[3]", "compute: wait copied[0]", "consume 4 slot 0",
      "compute: record released[0]", "compute: wait copied[1]", "consume 5 slot 1",
      "compute: record released[1]",
      "sync released[0]", "sync copied[0]", "sync released[1]", "sync copied[1]",
      "sync released[2]", "sync copied[2]", "sync released[3]", "sync copied[3]",
      "free slot 0", "free slot 1", "free slot 2", "free slot 3"};
  // clang-format on
  CHECK(nsk_test::eager_log(4, 6) == expected);
}

// ---- the steady state: no host wait while the GPU keeps up --------------------------------------

TEST_CASE("no host synchronization while the GPU is at most `depth` batches behind") {
  for (std::size_t depth = 1; depth <= 4; ++depth) {
    for (long lag = 0; lag <= static_cast<long>(depth); ++lag) {
      INFO("depth " << depth << ", GPU " << lag << " batches behind");
      Run run;
      run.batches = 40;
      {
        Core core = run.make(depth);
        for (auto& b : core) {
          run.consume(b);
          run.gpu.run_lagging(static_cast<long>(b.index()), lag);
        }
        CHECK(run.gpu.loop_syncs == 0);
        CHECK(core.stats().host_waits == 0);
      }
      CHECK(run.consumed == nsk_test::iota(40));
      CHECK(run.gpu.errors.empty());
    }
  }
}

TEST_CASE(
    "a GPU further behind: the host waits for the recycled slot's copy only, never drains the "
    "GPU") {
  for (std::size_t depth = 1; depth <= 4; ++depth) {
    for (long lag = static_cast<long>(depth) + 1; lag <= static_cast<long>(depth) + 3; ++lag) {
      INFO("depth " << depth << ", GPU " << lag << " batches behind");
      Run run;
      run.batches = 40;
      {
        Core core = run.make(depth);
        for (auto& b : core) {
          run.consume(b);
          run.gpu.run_lagging(static_cast<long>(b.index()), lag);
        }
        CHECK(run.gpu.loop_syncs > 0);
        CHECK(core.stats().host_waits == static_cast<std::uint64_t>(run.gpu.loop_syncs));
        CHECK(run.gpu.syncs_that_drained == 0);  // compute work was still queued after each wait
        // Each wait is on a copy event, right after the query that found it pending.
        auto const& log = run.gpu.log;
        std::size_t loop_end = log.size();
        for (std::size_t i = log.size(); i-- > 0;) {
          if (log[i].rfind("compute: record released", 0) == 0) {
            loop_end = i;
            break;
          }
        }
        for (std::size_t i = 0; i < loop_end; ++i) {
          if (log[i].rfind("sync ", 0) != 0) continue;
          INFO(log[i]);
          CHECK(log[i].rfind("sync copied[", 0) == 0);
          REQUIRE(i > 0);
          CHECK(log[i - 1] == "query " + log[i].substr(5) + " pending");
        }
      }
      CHECK(run.consumed == nsk_test::iota(40));
      CHECK(run.gpu.errors.empty());
    }
  }
}

TEST_CASE(
    "random GPU schedules: every batch intact, in order, no slot or host batch used too late") {
  std::mt19937 rng{2024};
  for (int trial = 0; trial < 300; ++trial) {
    std::size_t const depth = 1 + static_cast<std::size_t>(rng() % 4);
    long const batches = static_cast<long>(rng() % 14);
    long const break_at = rng() % 4 == 0 ? static_cast<long>(rng() % 14) : -1;
    INFO("trial " << trial << ": depth " << depth << ", " << batches << " batches, break at "
                  << break_at);
    Run run;
    run.gpu.rng = std::mt19937{static_cast<unsigned>(trial)};
    run.batches = batches;
    {
      Core core = run.make(depth);
      for (auto& b : core) {
        run.consume(b);
        if (static_cast<long>(b.index()) == break_at) break;
        run.gpu.run_random(static_cast<int>(rng() % 12));
      }
    }
    long const expected = break_at >= 0 && break_at < batches ? break_at + 1 : batches;
    CHECK(run.consumed == nsk_test::iota(expected));
    CHECK(run.gpu.errors.empty());
    CHECK(run.lives.alive.empty());
    for (auto const& q : run.gpu.queues) {
      for (auto const& op : q.second) CHECK(op.slot < 0);  // nothing left that touches a slot
    }
  }
}

// ---- ends -------------------------------------------------------------------------------------

TEST_CASE("an empty source: begin() is the end, nothing is transferred") {
  for (std::size_t depth = 1; depth <= 4; ++depth) {
    Run run;
    run.batches = 0;
    {
      Core core = run.make(depth);
      auto it = core.begin();
      CHECK(it == core.end());
      CHECK_FALSE(core.holding());
      CHECK_THROWS_AS(*it, std::logic_error);
    }
    CHECK(run.source_calls == 1);  // asked once, then never again
    Lines expected{"source -> end"};
    for (std::size_t i = 0; i < depth; ++i) expected.push_back("free slot " + std::to_string(i));
    CHECK(run.gpu.log == expected);
  }
}

TEST_CASE("fewer batches than slots: all delivered, the source is asked once past the end") {
  for (std::size_t depth = 2; depth <= 4; ++depth) {
    for (long batches = 1; batches < static_cast<long>(depth); ++batches) {
      Run run;
      run.batches = batches;
      {
        Core core = run.make(depth);
        for (auto& b : core) {
          run.consume(b);
          run.gpu.run_all();
        }
      }
      CHECK(run.consumed == nsk_test::iota(batches));
      CHECK(run.source_calls == batches + 1);
      CHECK(run.gpu.errors.empty());
    }
  }
}

TEST_CASE(
    "break: the destructor waits for the held batch's compute work and the copies in flight") {
  for (std::size_t depth = 1; depth <= 4; ++depth) {
    INFO("depth " << depth);
    Run run;
    run.batches = 20;
    std::size_t loop_log = 0;
    {
      Core core = run.make(depth);
      for (auto& b : core) {
        run.consume(b);
        if (b.index() == 5) break;  // the GPU has not run anything of batch 5 or the copies ahead
        run.gpu.run_all();
      }
      CHECK(core.holding());
      loop_log = run.gpu.log.size();
    }
    // Fetched: batches 0 … 5 + depth - 1, no more.
    CHECK(run.source_calls == 5 + static_cast<long>(depth));
    Lines const tail(run.gpu.log.begin() + static_cast<std::ptrdiff_t>(loop_log),
                     run.gpu.log.end());
    REQUIRE_FALSE(tail.empty());
    CHECK(tail.front() == "compute: record released[" + std::to_string(5 % depth) + "]");
    // Every copy of batches 6 … 5+depth-1 and the compute work of batch 5 ran before slots died.
    CHECK(run.gpu.errors.empty());
    CHECK(run.gpu.queues[nsk_test::copy_stream].empty());
    CHECK(run.gpu.final_syncs >= 1);
    CHECK(run.lives.alive.empty());
    CHECK(run.consumed == nsk_test::iota(6));
  }
}

TEST_CASE("destroying a prefetcher that never started does nothing on the GPU") {
  Run run;
  run.batches = 5;
  { Core core = run.make(3); }
  CHECK(run.source_calls == 0);
  CHECK(run.gpu.log == Lines{"free slot 0", "free slot 1", "free slot 2"});
}

TEST_CASE("an exception in the loop body ends the loop like break") {
  Run run;
  run.batches = 10;
  try {
    Core core = run.make(2);
    for (auto& b : core) {
      run.consume(b);
      if (b.index() == 3) throw std::runtime_error{"loss is NaN"};
    }
  } catch (std::runtime_error const& e) {
    CHECK(std::string{e.what()} == "loss is NaN");
  }
  CHECK(run.consumed == nsk_test::iota(4));
  CHECK(run.gpu.errors.empty());
  CHECK(run.lives.alive.empty());
}

// ---- faults -------------------------------------------------------------------------------------

TEST_CASE(
    "an exception from the source reaches the consumer at that batch, after the earlier ones") {
  for (std::size_t depth = 1; depth <= 4; ++depth) {
    for (long k = 0; k < 6; ++k) {
      INFO("depth " << depth << ", source throws at " << k);
      Run run;
      run.batches = 10;
      run.source_throws_at = k;
      bool thrown = false;
      {
        Core core = run.make(depth);
        try {
          for (auto& b : core) {
            run.consume(b);
            run.gpu.run_random(5);
          }
        } catch (nsk_test::SourceError const& e) {
          thrown = true;
          CHECK(std::string{e.what()} == "source failed at batch " + std::to_string(k));
          CHECK_FALSE(core.holding());
        }
        CHECK(core.stats().delivered == static_cast<std::uint64_t>(k));
      }
      CHECK(thrown);
      CHECK(run.consumed == nsk_test::iota(k));
      CHECK(run.source_calls == k + 1);  // never called again after it threw
      CHECK(run.gpu.errors.empty());
      CHECK(run.lives.alive.empty());
    }
  }
}

TEST_CASE(
    "an exception from the transfer reaches the consumer at that batch, its queued copies are "
    "waited for") {
  for (std::size_t depth = 1; depth <= 4; ++depth) {
    for (long k = 0; k < 6; ++k) {
      INFO("depth " << depth << ", transfer throws at " << k);
      Run run;
      run.batches = 10;
      run.transfer_throws_at = k;
      bool thrown = false;
      {
        Core core = run.make(depth);
        try {
          for (auto& b : core) {
            run.consume(b);
            run.gpu.run_random(3);
          }
        } catch (nsk_test::TransferError const& e) {
          thrown = true;
          CHECK(std::string{e.what()} == "transfer failed at batch " + std::to_string(k));
        }
      }
      CHECK(thrown);
      CHECK(run.consumed == nsk_test::iota(k));
      CHECK(run.source_calls == k + 1);
      CHECK(run.gpu.errors.empty());  // the partial copy ran before its slot was freed
    }
  }
}

TEST_CASE(
    "a failing backend call is thrown where it happens, the destructor then syncs both streams") {
  Run run;
  run.batches = 10;
  run.gpu.fail_record = "copy: record copied[1]";
  std::size_t loop_log = 0;
  {
    Core core = run.make(2);
    CHECK_THROWS_WITH(core.begin(), "fake CUDA failure: copy: record copied[1]");
    CHECK_FALSE(core.holding());
    loop_log = run.gpu.log.size();
    CHECK_THROWS_AS(core.begin(), std::logic_error);
  }
  Lines const tail(run.gpu.log.begin() + static_cast<std::ptrdiff_t>(loop_log), run.gpu.log.end());
  REQUIRE(tail.size() >= 2);
  CHECK(tail[0] == "sync stream copy");
  CHECK(tail[1] == "sync stream compute");
  CHECK(run.gpu.errors.empty());
  CHECK(run.gpu.queues[nsk_test::copy_stream].empty());
}

// ---- misuse -------------------------------------------------------------------------------------

TEST_CASE("misuse is a clear error: begin twice, ++ or * at the end, bad arguments") {
  Run run;
  run.batches = 1;
  {
    Core core = run.make(2);
    auto it = core.begin();
    CHECK_THROWS_WITH(core.begin(), Catch::Contains("begin() was already called"));
    REQUIRE(it != core.end());
    run.consume(*it);
    ++it;
    CHECK(it == core.end());
    CHECK_THROWS_WITH(++it, Catch::Contains("++ on an iterator at the end"));
    CHECK_THROWS_WITH(*it, Catch::Contains("no current batch"));
  }
  nsk_test::FakeGpu gpu;
  auto source = []() -> std::optional<FakeHost> { return std::nullopt; };
  auto transfer = [](FakeHost&, FakeSlot&, std::size_t) {};
  auto slots = [&](std::size_t i) { return FakeSlot{&gpu, static_cast<int>(i)}; };
  auto make = [&](std::size_t depth) {
    Core c{source,
           transfer,
           slots,
           depth,
           nsk_test::compute_stream,
           nsk_test::copy_stream,
           nsk_test::FakeBackend{&gpu}};
  };
  CHECK_THROWS_WITH(make(0), Catch::Contains("depth must be at least 1"));
  CHECK_THROWS_WITH(make(65), Catch::Contains("depth 65 exceeds the maximum of 64"));
  CHECK_THROWS_WITH((Core{nullptr, transfer, slots, 2, 1, 2, nsk_test::FakeBackend{&gpu}}),
                    Catch::Contains("the source is an empty function"));
  CHECK_THROWS_WITH((Core{source, nullptr, slots, 2, 1, 2, nsk_test::FakeBackend{&gpu}}),
                    Catch::Contains("the transfer is an empty function"));
  CHECK_THROWS_WITH((Core{source, transfer, nullptr, 2, 1, 2, nsk_test::FakeBackend{&gpu}}),
                    Catch::Contains("the slot factory is an empty function"));
  CHECK(gpu.events.empty());  // validated before anything was created
}

TEST_CASE("a slot factory that throws: the events made so far are destroyed, nothing leaks") {
  nsk_test::FakeGpu gpu;
  int made = 0;
  auto slots = [&](std::size_t i) {
    if (i == 2) throw std::runtime_error{"cudaMalloc failed"};
    ++made;
    return FakeSlot{&gpu, static_cast<int>(i)};
  };
  CHECK_THROWS_WITH(
      (Core{[]() -> std::optional<FakeHost> { return std::nullopt; },
            [](FakeHost&, FakeSlot&, std::size_t) {}, slots, 3, 1, 2, nsk_test::FakeBackend{&gpu}}),
      "cudaMalloc failed");
  CHECK(made == 2);
  CHECK(gpu.log == Lines{"free slot 0", "free slot 1"});
  for (auto const& e : gpu.events) CHECK(e.destroyed);
}

// ---- costs --------------------------------------------------------------------------------------

namespace {
// A backend that does nothing, to see what the core itself costs.
struct NullBackend {
  using Stream = int;
  using Event = int;
  int create_event(char const*, std::size_t) { return 0; }
  void destroy_event(int) noexcept {}
  void record(int, int) {}
  bool record_nothrow(int, int) noexcept { return true; }
  void wait(int, int) {}
  bool query(int) { return true; }
  void synchronize(int) {}
  void synchronize_nothrow(int) noexcept {}
  void synchronize_stream_nothrow(int) noexcept {}
};
}  // namespace

TEST_CASE("no allocation per batch in the steady state") {
  if (!nsk_test::allocation_counting) {
    FAIL(
        "allocation counting is unavailable in this build (a sanitizer runtime replaces operator "
        "new); run this test in a build without ThreadSanitizer");
  }
  long next = 0;
  long sum = 0;
  nsightkit::detail::prefetch::Core<NullBackend, long, long> core{
      [&]() -> std::optional<long> {
        if (next == 2000) return std::nullopt;
        return next++;
      },
      [&](long& host, long& slot, std::size_t) { slot = host; },
      [](std::size_t) { return -1L; },
      3,
      1,
      2};
  long counted_batches = 0;
  for (auto& b : core) {
    sum += b.device();
    if (b.index() == 10) {
      nsk_test::allocations = 0;
      nsk_test::count_allocations = true;  // from here on: the steady state
    }
    if (nsk_test::count_allocations) ++counted_batches;
  }
  nsk_test::count_allocations = false;
  CHECK(counted_batches == 1990);
  CHECK(nsk_test::allocations.load() == 0);
  CHECK(sum == 1999L * 2000L / 2);
}

// ---- NVTX ---------------------------------------------------------------------------------------

TEST_CASE("NVTX: a source range and a copy range per batch, the batch index as payload") {
  Recorder rec;
  Run run;
  run.batches = 3;
  {
    Core core = run.make(2);
    for (auto& b : core) {
      run.consume(b);
      run.gpu.run_all();
    }
  }
  Lines const batch{"push nsightkit prefetch source", "pop nsightkit",
                    "push nsightkit prefetch copy", "pop nsightkit"};
  Lines expected;
  for (int i = 0; i < 3; ++i) expected.insert(expected.end(), batch.begin(), batch.end());
  expected.push_back("push nsightkit prefetch source");  // the call that found the end
  expected.push_back("pop nsightkit");
  REQUIRE(rec.lines() == nsk_test::expect(expected));
  std::vector<std::uint64_t> source_payloads;
  std::vector<std::uint64_t> copy_payloads;
  for (auto const& e : rec.range_events()) {
    if (e.kind != nsightkit::testing::EventKind::push) continue;
    CHECK(e.payload.kind == nsightkit::testing::RecordedPayload::Kind::uint64);
    (e.message == "prefetch source" ? source_payloads : copy_payloads).push_back(e.payload.u);
    CHECK(e.registered);  // fixed names: registered strings, aggregated by the report
  }
  if (nsightkit::enabled) {
    CHECK(source_payloads == std::vector<std::uint64_t>{0, 1, 2, 3});
    CHECK(copy_payloads == std::vector<std::uint64_t>{0, 1, 2});
  }
  CHECK(rec.open_ranges() == 0);
}

TEST_CASE(
    "NVTX: a host wait is a range between the source and the copy, payload = the batch waited "
    "for") {
  Recorder rec;
  Run run;
  run.batches = 8;
  std::uint64_t waits = 0;
  {
    Core core = run.make(1);
    for (auto& b : core) {
      run.consume(b);
      run.gpu.run_lagging(static_cast<long>(b.index()), 3);
    }
    waits = core.stats().host_waits;
  }
  REQUIRE(waits > 0);
  CHECK(run.gpu.errors.empty());
  auto const lines = rec.lines();
  auto const events = rec.range_events();
  std::size_t wait_ranges = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind != nsightkit::testing::EventKind::push ||
        events[i].message != "prefetch wait")
      continue;
    ++wait_ranges;
    REQUIRE(i >= 2);
    CHECK(lines[i - 2] == "push nsightkit prefetch source");
    CHECK(lines[i - 1] == "pop nsightkit");
    REQUIRE(i + 2 < lines.size());
    CHECK(lines[i + 1] == "pop nsightkit");
    CHECK(lines[i + 2] == "push nsightkit prefetch copy");
    // The payload is the batch whose copy was waited for: the one before (depth 1).
    CHECK(events[i].payload.u + 1 == events[i - 2].payload.u);
  }
  CHECK(wait_ranges == (nsightkit::enabled ? waits : 0));
}

// ---- the public StreamPrefetcher ----------------------------------------------------------------

namespace {

struct DeviceSlot {
  int* data{nullptr};
};

bool have_gpu() {
  int n = 0;
  bool const ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  (void)cudaGetLastError();
  return ok;
}

using Prefetcher = StreamPrefetcher<std::vector<int>, DeviceSlot>;

std::optional<std::vector<int>> no_batches() { return std::nullopt; }
void copy_nothing(std::vector<int>&, DeviceSlot&, nsightkit::PrefetchCopier&) {}
DeviceSlot null_slot(std::size_t) { return {}; }

}  // namespace

TEST_CASE("StreamPrefetcher: the types a consumer relies on") {
  STATIC_REQUIRE(std::is_move_constructible_v<Prefetcher>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<Prefetcher>);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<Prefetcher>);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<Prefetcher::Batch>);
  STATIC_REQUIRE_FALSE(std::is_move_constructible_v<Prefetcher::Batch>);
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<nsightkit::PrefetchCopier>);
  STATIC_REQUIRE(std::is_same_v<std::iterator_traits<Prefetcher::iterator>::iterator_category,
                                std::input_iterator_tag>);
  STATIC_REQUIRE(
      std::is_same_v<decltype(*std::declval<Prefetcher::iterator>()), Prefetcher::Batch&>);
  STATIC_REQUIRE(
      std::is_same_v<decltype(std::declval<Prefetcher::Batch&>().device()), DeviceSlot&>);
  STATIC_REQUIRE(
      std::is_same_v<decltype(std::declval<Prefetcher::Batch&>().host()), std::vector<int>&>);
  // Iterator ranges: elements construct the HostBatch (here by reference, no copy).
  using ByRef = StreamPrefetcher<std::reference_wrapper<std::vector<int> const>, DeviceSlot>;
  using It = std::vector<std::vector<int>>::const_iterator;
  STATIC_REQUIRE(
      std::is_constructible_v<ByRef, It, It, ByRef::Transfer, ByRef::SlotFactory, StreamView>);
  STATIC_REQUIRE_FALSE(
      std::is_constructible_v<ByRef, int, int, ByRef::Transfer, ByRef::SlotFactory, StreamView>);
  PrefetchOptions const defaults;
  CHECK(defaults.depth == 2);
  CHECK_FALSE(defaults.copy_stream.has_value());
  CHECK(defaults.staging_pool == nullptr);
  CHECK(defaults.staging == nsightkit::PrefetchStaging::automatic);
}

TEST_CASE("StreamPrefetcher: bad arguments are std::invalid_argument before any CUDA call") {
  PrefetchOptions options;
  options.depth = 0;
  CHECK_THROWS_WITH(
      (Prefetcher{no_batches, copy_nothing, null_slot, StreamView::per_thread(), options}),
      Catch::Contains("depth must be at least 1"));
  options.depth = 100;
  CHECK_THROWS_WITH(
      (Prefetcher{no_batches, copy_nothing, null_slot, StreamView::per_thread(), options}),
      Catch::Contains("depth 100 exceeds"));
  options.depth = 2;
  CHECK_THROWS_WITH(
      (Prefetcher{nullptr, copy_nothing, null_slot, StreamView::per_thread(), options}),
      Catch::Contains("source is an empty function"));
  CHECK_THROWS_WITH((Prefetcher{no_batches, nullptr, null_slot, StreamView::per_thread(), options}),
                    Catch::Contains("transfer is an empty function"));
  CHECK_THROWS_WITH(
      (Prefetcher{no_batches, copy_nothing, nullptr, StreamView::per_thread(), options}),
      Catch::Contains("slot factory is an empty function"));
  options.copy_stream = StreamView::per_thread();
  CHECK_THROWS_WITH(
      (Prefetcher{no_batches, copy_nothing, null_slot, StreamView::per_thread(), options}),
      Catch::Contains("the copy stream is the compute stream"));
  // The iterator-range constructor validates the same way.
  std::vector<std::vector<int>> batches(3);
  options.depth = 0;
  options.copy_stream.reset();
  CHECK_THROWS_WITH((Prefetcher{batches.begin(), batches.end(), copy_nothing, null_slot,
                                StreamView::per_thread(), options}),
                    Catch::Contains("depth must be at least 1"));
}

TEST_CASE(
    "StreamPrefetcher without a driver or GPU: a clear CudaError at construction (with one it "
    "works)") {
  if (!have_gpu()) {
    try {
      Prefetcher p{no_batches, copy_nothing, null_slot, StreamView::per_thread()};
      FAIL("constructed without a usable device");
    } catch (nsightkit::CudaError const& e) {
      CHECK(e.code() != cudaSuccess);
      CHECK_THAT(std::string{e.what()}, Catch::Contains("cudaStreamCreateWithFlags"));
      CHECK_THAT(std::string{e.what()},
                 Catch::Contains("nsightkit::StreamPrefetcher's copy stream"));
    }
    PrefetchOptions options;
    options.copy_stream = StreamView::legacy();  // given: the first CUDA call is an event
    CHECK_THROWS_WITH(
        (Prefetcher{no_batches, copy_nothing, null_slot, StreamView::per_thread(), options}),
        Catch::Contains("cudaEventCreateWithFlags"));
    return;
  }
  int slots = 0;
  Prefetcher p{no_batches, copy_nothing,
               [&](std::size_t) {
                 ++slots;
                 return DeviceSlot{};
               },
               StreamView::per_thread()};
  CHECK(slots == 2);
  CHECK(p.depth() == 2);
  CHECK(p.begin() == p.end());
  CHECK(p.stats().delivered == 0);
}
