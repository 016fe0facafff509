// Internal: a RankReport as bytes, for MPI_Gatherv to rank 0. Fixed-width integers in the host's
// byte order (the ranks of one job run one build of the program), strings length-first; reading
// checks every length against what is left, so a damaged buffer is refused, never overrun.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/mpi/merge.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::mpi {

/// Appends values to a byte buffer.
class WireWriter {
 public:
  void u64(std::uint64_t v) { raw(&v, sizeof v); }
  void i64(std::int64_t v) { raw(&v, sizeof v); }
  void flag(bool v) { u64(v ? 1 : 0); }
  void str(std::string const& s) {
    u64(s.size());
    buf_.append(s);
  }
  [[nodiscard]] std::string const& bytes() const noexcept { return buf_; }

 private:
  void raw(void const* p, std::size_t n) { buf_.append(static_cast<char const*>(p), n); }
  std::string buf_;
};

/// Reads values back; every read fails (and later ones too) once the buffer is short.
class WireReader {
 public:
  WireReader(char const* data, std::size_t size) noexcept : p_{data}, left_{size} {}
  bool u64(std::uint64_t& v) noexcept { return raw(&v, sizeof v); }
  bool i64(std::int64_t& v) noexcept { return raw(&v, sizeof v); }
  bool flag(bool& v) noexcept {
    std::uint64_t x = 0;
    if (!u64(x)) return false;
    v = x != 0;
    return true;
  }
  bool str(std::string& s) {
    std::uint64_t n = 0;
    if (!u64(n) || n > left_) return ok_ = false;
    s.assign(p_, static_cast<std::size_t>(n));
    p_ += n;
    left_ -= static_cast<std::size_t>(n);
    return true;
  }
  /// A count of items, each taking at least `min_bytes`: refused when the buffer cannot hold them.
  bool count(std::size_t& n, std::size_t min_bytes) noexcept {
    std::uint64_t x = 0;
    if (!u64(x) || x > left_ / (min_bytes == 0 ? 1 : min_bytes)) return ok_ = false;
    n = static_cast<std::size_t>(x);
    return true;
  }
  [[nodiscard]] bool done() const noexcept { return ok_ && left_ == 0; }

 private:
  bool raw(void* out, std::size_t n) noexcept {
    if (!ok_ || left_ < n) return ok_ = false;
    std::memcpy(out, p_, n);
    p_ += n;
    left_ -= n;
    return true;
  }
  char const* p_;
  std::size_t left_;
  bool ok_{true};
};

inline void put_row(WireWriter& w, RankRow const& r) {
  w.u64(r.key.size());
  for (Component const& c : r.key) {
    w.str(c.domain);
    w.str(c.name);
  }
  w.str(r.path);
  w.str(r.label);
  w.u64(r.depth);
  w.u64(r.count);
  w.i64(r.total_ns);
  w.u64(r.gpu_count);
  w.i64(r.gpu_total_ns);
  w.u64(static_cast<std::uint64_t>(r.gpu_from));
}

inline bool get_row(WireReader& in, RankRow& r) {
  std::size_t n = 0;
  if (!in.count(n, 16)) return false;
  r.key.resize(n);
  for (Component& c : r.key) {
    if (!in.str(c.domain) || !in.str(c.name)) return false;
  }
  std::uint64_t depth = 0, from = 0;
  bool const ok =
      in.str(r.path) && in.str(r.label) && in.u64(depth) && in.u64(r.count) && in.i64(r.total_ns) &&
      in.u64(r.gpu_count) && in.i64(r.gpu_total_ns) && in.u64(from) &&
      from <= static_cast<std::uint64_t>(GpuFrom::cupti);  // a rank's row is never mixed
  r.depth = static_cast<std::size_t>(depth);
  r.gpu_from = static_cast<GpuFrom>(from);
  return ok;
}

/// The bytes of `r`.
inline std::string encode(RankReport const& r) {
  WireWriter w;
  w.u64(0x6e736b3172616e6bULL);  // "nsk1rank": a buffer of something else is refused
  w.i64(r.rank);
  w.flag(r.present);
  w.i64(r.pid);
  w.str(r.version);
  w.i64(r.run_ns);
  w.flag(r.captured_only);
  w.str(r.gpu_error);
  w.str(r.summary_file);
  w.u64(r.rows.size());
  for (RankRow const& row : r.rows) put_row(w, row);
  w.flag(r.has_steps);
  w.u64(r.steps_count);
  w.i64(r.steps_total_ns);
  w.u64(r.start_end.size());
  for (RankRow const& row : r.start_end) put_row(w, row);
  w.u64(r.marks.size());
  for (RankMark const& m : r.marks) {
    w.str(m.domain);
    w.str(m.name);
    w.u64(m.count);
  }
  w.flag(r.has_trace);
  w.str(r.trace_file);
  w.flag(r.steady_clock);
  w.i64(r.origin_ns);
  w.u64(r.events_dropped);
  w.u64(r.async_ids);
  w.i64(r.node);
  w.str(r.host);
  return w.bytes();
}

/// `r` from its bytes; false for a buffer that is not one.
inline bool decode(char const* data, std::size_t size, RankReport& r) {
  WireReader in{data, size};
  std::uint64_t magic = 0;
  std::int64_t rank = 0, pid = 0, node = 0;
  std::size_t n = 0;
  if (!in.u64(magic) || magic != 0x6e736b3172616e6bULL || !in.i64(rank) || !in.flag(r.present) ||
      !in.i64(pid) || !in.str(r.version) || !in.i64(r.run_ns) || !in.flag(r.captured_only) ||
      !in.str(r.gpu_error) || !in.str(r.summary_file) || !in.count(n, 64))
    return false;
  r.rank = static_cast<int>(rank);
  r.pid = static_cast<long>(pid);
  r.rows.resize(n);
  for (RankRow& row : r.rows) {
    if (!get_row(in, row)) return false;
  }
  if (!in.flag(r.has_steps) || !in.u64(r.steps_count) || !in.i64(r.steps_total_ns) ||
      !in.count(n, 64))
    return false;
  r.start_end.resize(n);
  for (RankRow& row : r.start_end) {
    if (!get_row(in, row)) return false;
  }
  if (!in.count(n, 24)) return false;
  r.marks.resize(n);
  for (RankMark& m : r.marks) {
    if (!in.str(m.domain) || !in.str(m.name) || !in.u64(m.count)) return false;
  }
  bool const ok = in.flag(r.has_trace) && in.str(r.trace_file) && in.flag(r.steady_clock) &&
                  in.i64(r.origin_ns) && in.u64(r.events_dropped) && in.u64(r.async_ids) &&
                  in.i64(node) && in.str(r.host);
  r.node = static_cast<int>(node);
  return ok && in.done();
}

}  // namespace detail::mpi
NSIGHTKIT_DETAIL_END_NAMESPACE
