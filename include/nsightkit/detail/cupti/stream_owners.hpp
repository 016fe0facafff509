// Internal: which range owns which stream, for the "cupti" source's delegated launches — work a
// thread without ranges (NCCL's launch thread) launches on a stream that a range made current is
// counted for that range (attribution.hpp). Keeps the owners per stream and finds the owner
// of a launch by its time.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/cupti/thread_work.hpp>
#include <nsightkit/detail/report/state.hpp>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// A range that made a stream current, as the source's index of stream owners keeps it.
struct StreamOwner {
  std::uint32_t thread, node, seq;
  std::uint64_t generation;
  std::int64_t start, end;  // end: INT64_MAX while the range is open
};

/// The owner of a stream for work launched at `when` by a thread outside any range: of the
/// ranges that had made the stream current by then (`owners` sorted by start), the innermost one
/// still open at `when`, else the one that ended last (a library may launch after the call that
/// queued the work returned). Null when none had begun.
inline StreamOwner const* owner_at(std::vector<StreamOwner> const& owners, std::int64_t when) {
  auto it = std::upper_bound(owners.begin(), owners.end(), when,
                             [](std::int64_t t, StreamOwner const& o) { return t < o.start; });
  StreamOwner const* last = nullptr;
  while (it != owners.begin()) {
    --it;
    if (it->end >= when) return &*it;  // the latest start among those open at `when`
    if (last == nullptr || it->end > last->end) last = &*it;
  }
  return last;
}

/// The owners of every stream (key: device << 32 | CUPTI stream id), sorted by start. Its own
/// lock is the innermost of the source's.
class StreamOwners {
 public:
  static constexpr std::size_t max_per_stream = std::size_t{1} << 14;

  /// Takes every thread's ended owners (under each thread's lock) and adds the open ones, which
  /// the next prune() drops again (they come back when they end).
  void collect(std::vector<ThreadData*> const& threads) {
    std::map<std::uint64_t, std::vector<StreamOwner>> found;
    for (ThreadData* td : threads) {
      SpinGuard lock{td->lock};
      auto* t = static_cast<AttributionThread*>(td->gpu[cupti_slot].get());
      if (t == nullptr) continue;
      for (AttributionThread::Owned const& o : t->owned) {
        // Ranges of an earlier generation (before a reset) own nothing any more.
        if (o.generation == td->generation) {
          found[o.key].push_back(
              StreamOwner{t->index, o.node, o.seq, o.generation, o.start, o.end});
        }
      }
      t->owned.clear();
      if (td->stack_generation != td->generation) continue;
      for (AttributionThread::Open const& o : t->open) {
        if (o.owns) {
          found[o.key].push_back(
              StreamOwner{t->index, o.node, o.seq_begin, td->generation, o.start, INT64_MAX});
        }
      }
    }
    std::lock_guard<std::mutex> lock{mutex_};
    for (auto& [key, v] : found) {
      std::vector<StreamOwner>& all = by_stream_[key];
      all.insert(all.end(), v.begin(), v.end());
      std::sort(all.begin(), all.end(),
                [](StreamOwner const& a, StreamOwner const& b) { return a.start < b.start; });
    }
  }

  /// The owner of stream `key` for work launched at `when` (owner_at); false when none.
  bool find(std::uint64_t key, std::int64_t when, StreamOwner& out) const {
    std::lock_guard<std::mutex> lock{mutex_};
    auto it = by_stream_.find(key);
    StreamOwner const* o = it != by_stream_.end() ? owner_at(it->second, when) : nullptr;
    if (o != nullptr) out = *o;
    return o != nullptr;
  }

  /// Keeps what later work may still need: every ended owner until a flush has delivered all
  /// work launched so far (`everything`; then the last one of each stream), at most
  /// max_per_stream per stream.
  void prune(bool everything) {
    std::lock_guard<std::mutex> lock{mutex_};
    for (auto& [key, v] : by_stream_) {
      (void)key;
      v.erase(std::remove_if(v.begin(), v.end(),
                             [](StreamOwner const& o) { return o.end == INT64_MAX; }),
              v.end());
      if (everything && v.size() > 1) {
        StreamOwner const last = *std::max_element(
            v.begin(), v.end(),
            [](StreamOwner const& a, StreamOwner const& b) { return a.end < b.end; });
        v.assign(1, last);
      } else if (v.size() > max_per_stream) {
        v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() - max_per_stream));
      }
    }
  }

  void clear() {
    std::lock_guard<std::mutex> lock{mutex_};
    by_stream_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::uint64_t, std::vector<StreamOwner>> by_stream_;
};

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
