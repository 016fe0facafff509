// Internal: the module path table (module.hpp, detail/module/registry.hpp): one node per
// distinct (parent node, name), created once and never freed, found through one hash table keyed
// by (parent, name). Lookups are lock-free (open addressing, slots written once); creation and
// growth take the registry's path mutex, and a grown table keeps the one it replaced, which
// readers may still be probing. A node's full path is built on its first request and kept.
// Frames resolve to nodes lazily, from the innermost resolved ancestor down.
#pragma once

#include <nsightkit/config.hpp>

#if !NSIGHTKIT_ENABLED
#error "nsightkit/detail/module/paths.hpp must not be included when NSIGHTKIT_DISABLE is defined"
#endif

#include <nsightkit/detail/module/registry.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <string_view>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::module {

/// The table key of `name` under `parent`: the name's std::hash mixed with the parent's address
/// (splitmix64's finaliser, so that both reach the low bits the table indexes by).
inline std::uint64_t path_hash(PathNode const* parent, std::string_view name) noexcept {
  std::uint64_t h = static_cast<std::uint64_t>(std::hash<std::string_view>{}(name));
  h ^= static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(parent)) +
       0x9E3779B97F4A7C15ull + (h << 6u) + (h >> 2u);
  h ^= h >> 30u;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 27u;
  h *= 0x94D049BB133111EBull;
  h ^= h >> 31u;
  return h;
}

/// The node for (`parent`, `name`) in `t`, or null.
inline PathNode const* probe(PathTable const& t, std::uint64_t h, PathNode const* parent,
                             std::string_view name) noexcept {
  for (std::size_t i = static_cast<std::size_t>(h) & t.mask;; i = (i + 1) & t.mask) {
    PathNode const* n = t.slots[i].load(std::memory_order_acquire);
    if (n == nullptr) return nullptr;  // the table is never full
    if (n->hash == h && n->parent == parent && n->name_size == name.size() &&
        std::memcmp(n->name(), name.data(), name.size()) == 0) {
      return n;
    }
  }
}

/// Puts `n` in the first free slot of its probe sequence (under path_mutex, or before `t` is
/// published).
inline void place(PathTable const& t, PathNode const* n, std::memory_order order) noexcept {
  std::size_t i = static_cast<std::size_t>(n->hash) & t.mask;
  while (t.slots[i].load(std::memory_order_relaxed) != nullptr) i = (i + 1) & t.mask;
  t.slots[i].store(n, order);
}

/// A table twice the size of `old` (64 slots when null) holding all its nodes; null when memory
/// runs out. Under path_mutex.
inline PathTable* grown_table(PathTable const* old) noexcept {
  std::size_t const slots = old != nullptr ? 2 * (old->mask + 1) : 64;
  if (old != nullptr && slots <= old->mask + 1) return nullptr;  // size_t overflow
  auto* t = new (std::nothrow) PathTable{};
  if (t == nullptr) return nullptr;
  t->slots = new (std::nothrow) std::atomic<PathNode const*>[slots]();
  if (t->slots == nullptr) {
    delete t;
    return nullptr;
  }
  t->mask = slots - 1;
  t->replaced = old;
  if (old != nullptr) {
    for (std::size_t i = 0; i <= old->mask; ++i) {
      if (PathNode const* n = old->slots[i].load(std::memory_order_relaxed)) {
        place(*t, n, std::memory_order_relaxed);  // published by the caller's release store
      }
    }
  }
  return t;
}

/// The node for `name` under `parent` (null parent: top level), created on first sight.
/// Returns null only when memory runs out.
inline PathNode const* find_or_add_child(PathNode const* parent, char const* name) noexcept {
  Registry& reg = registry();
  std::string_view const key{name};
  std::uint64_t const h = path_hash(parent, key);
  if (PathTable const* t = reg.paths.load(std::memory_order_acquire)) {
    if (PathNode const* n = probe(*t, h, parent, key)) return n;
  }
  std::lock_guard<std::mutex> lock{reg.path_mutex};
  PathTable const* t = reg.paths.load(std::memory_order_relaxed);
  if (t != nullptr) {
    if (PathNode const* n = probe(*t, h, parent, key)) return n;
  }
  if (!valid_name(key)) report_bad_name(name);
  // At most half full; past that, grow. When growing fails, the old table takes nodes until one
  // free slot is left (probes end at a free slot).
  if (t == nullptr || 2 * (reg.path_count + 1) > t->mask + 1) {
    if (PathTable* bigger = grown_table(t)) {
      reg.paths.store(bigger, std::memory_order_release);
      t = bigger;
    } else if (t == nullptr || reg.path_count + 2 > t->mask + 1) {
      report_out_of_memory();
      return nullptr;
    }
  }
  // Leaked on purpose: ModuleInfo views stay valid for the life of the process.
  void* const mem = ::operator new(sizeof(PathNode) + key.size() + 1, std::nothrow);
  if (mem == nullptr) {
    report_out_of_memory();
    return nullptr;
  }
  auto* node = ::new (mem) PathNode{};
  char* const name_text = static_cast<char*>(mem) + sizeof(PathNode);  // what name() reads
  std::memcpy(name_text, key.data(), key.size());
  name_text[key.size()] = '\0';
  node->parent = parent;
  node->hash = h;
  node->name_size = key.size();
  if (parent != nullptr) {
    node->depth = parent->depth + 1;
    node->path_size = parent->path_size + 1 + key.size();
  } else {
    node->path_size = key.size();
    node->path.store(node->name(), std::memory_order_relaxed);  // an outermost path is its name
  }
  place(*t, node, std::memory_order_release);
  ++reg.path_count;
  return node;
}

/// Builds, publishes and returns `n`'s full path; null when memory runs out.
NSIGHTKIT_DETAIL_NOINLINE inline char const* build_path(PathNode const& n) noexcept {
  auto* const buf = static_cast<char*>(::operator new(n.path_size + 1, std::nothrow));
  if (buf == nullptr) {
    report_out_of_memory();
    return nullptr;
  }
  // From the end: names and separators up to the first ancestor whose path exists (every
  // outermost node's does), which is copied in one piece.
  char* end = buf + n.path_size;
  *end = '\0';
  for (PathNode const* q = &n; q != nullptr;) {
    if (q != &n) {
      if (char const* known = q->path.load(std::memory_order_acquire)) {
        std::memcpy(buf, known, q->path_size);
        break;
      }
    }
    end -= q->name_size;
    std::memcpy(end, q->name(), q->name_size);
    q = q->parent;
    if (q != nullptr) *--end = '/';
  }
  char const* expected = nullptr;
  if (n.path.compare_exchange_strong(expected, buf, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
    registry().path_bytes.fetch_add(n.path_size + 1, std::memory_order_relaxed);
    return buf;
  }
  ::operator delete(buf);  // another thread built it first: use theirs, so views stay unique
  return expected;
}

/// `n`'s full path (NUL-terminated, n.path_size characters, valid for the rest of the process),
/// built on the first request; null when memory runs out.
inline char const* node_path(PathNode const& n) noexcept {
  if (char const* p = n.path.load(std::memory_order_acquire)) return p;
  return build_path(n);
}

/// find_or_add_child() through a small per-thread cache keyed by the parent and the name's
/// address: a model calls the same scopes with the same name strings over and over, and a hit
/// costs one string comparison instead of hashing the name. The content is compared on every
/// hit, so a buffer reused for another name (a formatted name) is never mistaken.
inline PathNode const* cached_child(PathNode const* parent, char const* name) noexcept {
  struct Entry {
    PathNode const* parent;
    char const* name;
    PathNode const* node;
  };
  static constexpr std::size_t slots = 64;
  thread_local Entry cache[slots]{};  // nodes are never freed: entries cannot dangle
  auto const key =
      reinterpret_cast<std::uintptr_t>(name) ^ (reinterpret_cast<std::uintptr_t>(parent) >> 4u);
  Entry& e = cache[(key ^ (key >> 7u)) % slots];
  if (e.name == name && e.parent == parent && std::strcmp(e.node->name(), name) == 0) return e.node;
  PathNode const* node = find_or_add_child(parent, name);
  if (node != nullptr) e = Entry{parent, name, node};
  return node;
}

/// The node of `f` given its parent frame's node (`up`): its own, or for a frame nested beyond
/// depth_limit, `up` itself (its ancestor at the limit: node depths follow frame depths
/// up to the limit). Null when memory runs out.
inline PathNode const* resolve_frame(Frame const& f, PathNode const* up) noexcept {
  if (up != nullptr && up->depth + 1 >= depth_limit) {
    report_depth_limit();
    return up;
  }
  return cached_child(up, f.name);
}

/// True when `f` (resolved to `node`) is nested beyond depth_limit: it shares its
/// parent's node instead of having its own (only a node at the limit can be shared).
inline bool beyond_depth_limit(Frame const& f, PathNode const& node) noexcept {
  return node.depth + 1 >= depth_limit && f.parent != nullptr && f.parent->node == &node;
}

/// The path node of `f` (see resolve_frame()), resolving and caching its unresolved ancestors
/// first. Iterative, with no allocation, however deep the stack: the walk up reverses the parent
/// links of the unresolved frames (they belong to this thread only), the walk down restores them.
inline PathNode const* resolve(Frame* f) noexcept {
  if (f->node != nullptr) return f->node;
  if (f->parent == nullptr || f->parent->node != nullptr) {  // the common case: one step
    f->node = resolve_frame(*f, f->parent != nullptr ? f->parent->node : nullptr);
    return f->node;
  }
  Frame* reversed = nullptr;  // unresolved frames, outermost first
  Frame* up = f;
  while (up != nullptr && up->node == nullptr) {
    Frame* const next = up->parent;
    up->parent = reversed;
    reversed = up;
    up = next;
  }
  PathNode const* node = up != nullptr ? up->node : nullptr;
  bool resolving = true;
  while (reversed != nullptr) {
    Frame* const next = reversed->parent;
    reversed->parent = up;
    if (resolving) {
      node = resolve_frame(*reversed, node);
      reversed->node = node;
      resolving = node != nullptr;  // out of memory: the frames below stay unresolved
    }
    up = reversed;
    reversed = next;
  }
  return f->node;
}

/// Current sizes of the path table.
inline PathTableStats path_table_stats() noexcept {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock{reg.path_mutex};
  PathTable const* t = reg.paths.load(std::memory_order_relaxed);
  return {reg.path_count, reg.path_bytes.load(std::memory_order_relaxed),
          t != nullptr ? t->mask + 1 : 0};
}

}  // namespace detail::module
NSIGHTKIT_DETAIL_END_NAMESPACE
