// Internal: the module registry's cold paths (registry.hpp) — changing hook sets, running hooks,
// the once-per-process messages. Header-only, registry.hpp includes them; in the compiled mode
// (detail/compiled.hpp) src/nsightkit.cpp defines them once.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/compiled.hpp>
#include <nsightkit/detail/module/registry.hpp>
#include <nsightkit/module_types.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::module {

NSIGHTKIT_DETAIL_MEMBER HookSet::~HookSet() {
  if (int const n = count_.load(std::memory_order_relaxed)) {
    registry().instance_hooks.fetch_sub(n, std::memory_order_relaxed);
  }
}

NSIGHTKIT_DETAIL_MEMBER std::shared_ptr<HookList const> HookSet::snapshot() const noexcept {
  std::lock_guard<std::mutex> lock{mutex_};
  return list_;
}

NSIGHTKIT_DETAIL_MEMBER std::shared_ptr<HookList const> HookSet::snapshot(
    std::uint64_t& version) const noexcept {
  std::lock_guard<std::mutex> lock{mutex_};
  version = version_.load(std::memory_order_relaxed);
  return list_;
}

NSIGHTKIT_DETAIL_MEMBER void HookSet::publish(std::shared_ptr<HookList const> next) noexcept {
  list_ = std::move(next);
  version_.fetch_add(1, std::memory_order_release);
}

NSIGHTKIT_DETAIL_MEMBER void HookSet::add(std::shared_ptr<HookEntry> e, bool post) {
  std::lock_guard<std::mutex> lock{mutex_};
  auto next = list_ ? std::make_shared<HookList>(*list_) : std::make_shared<HookList>();
  (post ? next->post : next->pre).push_back(std::move(e));
  publish(std::move(next));
  count_.fetch_add(1, std::memory_order_release);
}

NSIGHTKIT_DETAIL_MEMBER bool HookSet::erase(HookEntry const* e) noexcept {
  std::lock_guard<std::mutex> lock{mutex_};
  if (!list_) return false;
  NSIGHTKIT_DETAIL_TRY {
    auto next = std::make_shared<HookList>(*list_);
    bool found = false;
    for (auto* v : {&next->pre, &next->post}) {
      for (auto it = v->begin(); it != v->end(); ++it) {
        if (it->get() == e) {
          v->erase(it);
          found = true;
          break;
        }
      }
    }
    if (!found) return false;
    if (next->pre.empty() && next->post.empty()) next.reset();
    publish(std::move(next));
  }
  NSIGHTKIT_DETAIL_CATCH(...) {
    // Out of memory for the new list: the entry stays listed but is marked removed, so it is
    // never called again; it is dropped with the next successful change.
    return false;
  }
  count_.fetch_sub(1, std::memory_order_release);
  return true;
}

/// True for the first caller only: the once-per-process rule of the messages below. A plain load
/// first, so that callers after the first do not write the shared flag.
inline bool first_report(std::atomic<bool>& reported) noexcept {
  return !reported.load(std::memory_order_relaxed) && !reported.exchange(true);
}

NSIGHTKIT_DETAIL_ENTRY void report_bad_name(char const* name) noexcept {
  if (!first_report(registry().bad_name_reported)) return;
  std::fprintf(stderr,
               "nsightkit: module name \"%s\" is empty or contains '/'; module names are path "
               "components (paths and ncu's --nvtx-include filters join them with '/'). "
               "Reported once.\n",
               name);
}

NSIGHTKIT_DETAIL_ENTRY void report_depth_limit() noexcept {
  if (!first_report(registry().depth_limit_reported)) return;
  std::fprintf(stderr,
               "nsightkit: module scopes are nested deeper than %d levels "
               "(nsightkit::max_module_depth); deeper scopes still push their ranges but get no "
               "path of their own: hooks do not run for them and current_module_path() names "
               "their ancestor at the limit. Reported once.\n",
               depth_limit);
}

NSIGHTKIT_DETAIL_ENTRY void report_out_of_memory() noexcept {
  if (!first_report(registry().out_of_memory_reported)) return;
  std::fprintf(stderr,
               "nsightkit: out of memory while storing a module path; module calls whose path "
               "could not be stored run without hooks, and current_module_path() is \"\" in "
               "them. Reported once.\n");
}

NSIGHTKIT_DETAIL_ENTRY HookList const* global_hooks_snapshot() noexcept {
  struct Cache {
    std::uint64_t version{0};
    std::shared_ptr<HookList const> list;
  };
  thread_local Cache cache;
  HookSet const& set = registry().global;
  if (cache.version != set.version()) cache.list = set.snapshot(cache.version);
  return cache.list.get();
}

NSIGHTKIT_DETAIL_ENTRY void report_hook_exception() noexcept {
  if (!first_report(registry().hook_exception_reported)) return;
  std::fprintf(stderr,
               "nsightkit: a module hook threw an exception; hooks must not throw, the exception "
               "was ignored (reported once)\n");
}

NSIGHTKIT_DETAIL_ENTRY void invoke_hook(HookEntry& e, ModuleInfo const& info) noexcept {
  // seq_cst on both sides: either this thread sees `removed`, or remove() sees `running`.
  e.running.fetch_add(1, std::memory_order_seq_cst);
  if (!e.removed.load(std::memory_order_seq_cst)) {
    RunningHooks& rh = running_hooks;
    int const slot = rh.depth++;
    if (slot < RunningHooks::capacity) rh.entries[slot] = &e;
    NSIGHTKIT_DETAIL_TRY { e.fn(info); }
    NSIGHTKIT_DETAIL_CATCH(...) { report_hook_exception(); }
    --rh.depth;
  }
  e.running.fetch_sub(1, std::memory_order_release);
}

NSIGHTKIT_DETAIL_ENTRY void run_hooks(HookList const* list, bool post,
                                      ModuleInfo const& info) noexcept {
  if (list == nullptr) return;
  for (auto const& e : post ? list->post : list->pre) invoke_hook(*e, info);
}

NSIGHTKIT_DETAIL_ENTRY void remove_hook(HookSet& set,
                                        std::shared_ptr<HookEntry> const& e) noexcept {
  if (!e || e->removed.exchange(true, std::memory_order_seq_cst)) return;
  Registry& reg = registry();
  if (set.erase(e.get()) && &set != &reg.global) {
    reg.instance_hooks.fetch_sub(1, std::memory_order_relaxed);
  }
  RunningHooks const& rh = running_hooks;
  int own = 0;
  bool unknown = rh.depth > RunningHooks::capacity;
  for (int i = 0; i < rh.depth && i < RunningHooks::capacity; ++i)
    own += rh.entries[i] == e.get() ? 1 : 0;
  if (unknown) return;  // too deep to tell which hooks run here: do not risk waiting on ourselves
  while (e->running.load(std::memory_order_seq_cst) > own) std::this_thread::yield();
  // Nothing calls it any more: release what the hook captured now, not when the last stale
  // snapshot goes away. Not while it runs on this very thread.
  if (own == 0) e->fn = nullptr;
}

}  // namespace detail::module
NSIGHTKIT_DETAIL_END_NAMESPACE
