// Internal: how the report's files reach the disk without losing them.
//
// - Paths are checked when the report is enabled (missing directories are created; a directory
//   or an unwritable place is reported at once), not only at the end of a long run.
// - A regular file is written to a temporary beside it and renamed over it, so a reader never
//   sees half a file and two processes writing one name never interleave (the last one wins,
//   whole). A device or pipe (/dev/stdout, a FIFO) is written in place.
// - When the target fails (no space, no permission, an I/O error) the same content goes to a
//   fallback file in the working directory, and the message gives the reason (errno) and the
//   fallback's name.
// - A path ending in ".gz" is written gzip-compressed, through zlib loaded at run time
//   (libz.so.1, the system's: nothing to link, and the library builds without zlib). Where zlib or
//   the stream it needs (glibc's fopencookie) is missing, the file is written uncompressed
//   without the ".gz": enabling the report says so, naming the file really written, and so does
//   the line that lists the files written.
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/process.hpp>
#include <nsightkit/detail/report/output/text_sink.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if defined(_WIN32)
#include <direct.h>
#include <io.h>
#include <sys/stat.h>
#else
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

// ---------------------------------------------------------------------------------------------
// gzip through the system's zlib, loaded at run time

namespace gzip {

/// zlib's z_stream, as its ABI defines it (zlib.h is not included: its typedefs and macros would
/// reach every program that includes the report; tests/report_html checks the layout against it).
struct Stream {
  unsigned char const* next_in;
  unsigned avail_in;
  unsigned long total_in;
  unsigned char* next_out;
  unsigned avail_out;
  unsigned long total_out;
  char const* msg;
  void* state;
  void* (*zalloc)(void*, unsigned, unsigned);
  void (*zfree)(void*, void*);
  void* opaque;
  int data_type;
  unsigned long adler;
  unsigned long reserved;
};

struct Api {
  char const* (*version)();
  int (*deflate_init2)(Stream*, int level, int method, int window_bits, int mem_level, int strategy,
                       char const* version, int stream_size);
  int (*deflate)(Stream*, int flush);
  int (*deflate_end)(Stream*);
  int (*inflate_init2)(Stream*, int window_bits, char const* version, int stream_size);
  int (*inflate)(Stream*, int flush);
  int (*inflate_end)(Stream*);
  char const* unavailable;  // why gzip cannot be written here, or null
};

inline Api load() noexcept {
  Api a{};
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  void* lib = ::dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    a.unavailable = "the zlib library libz.so.1 could not be loaded";
    return a;
  }
  static_assert(sizeof(void*) == sizeof(a.version), "function pointers must be pointer-sized");
  a.version = reinterpret_cast<char const* (*)()>(::dlsym(lib, "zlibVersion"));
  a.deflate_init2 = reinterpret_cast<int (*)(Stream*, int, int, int, int, int, char const*, int)>(
      ::dlsym(lib, "deflateInit2_"));
  a.deflate = reinterpret_cast<int (*)(Stream*, int)>(::dlsym(lib, "deflate"));
  a.deflate_end = reinterpret_cast<int (*)(Stream*)>(::dlsym(lib, "deflateEnd"));
  a.inflate_init2 =
      reinterpret_cast<int (*)(Stream*, int, char const*, int)>(::dlsym(lib, "inflateInit2_"));
  a.inflate = reinterpret_cast<int (*)(Stream*, int)>(::dlsym(lib, "inflate"));
  a.inflate_end = reinterpret_cast<int (*)(Stream*)>(::dlsym(lib, "inflateEnd"));
  if (a.version == nullptr || a.deflate_init2 == nullptr || a.deflate == nullptr ||
      a.deflate_end == nullptr || a.inflate_init2 == nullptr || a.inflate == nullptr ||
      a.inflate_end == nullptr) {
    a.unavailable = "libz.so.1 lacks deflate's or inflate's entry points";
  } else if (a.version()[0] != '1') {
    a.unavailable = "libz.so.1 is not zlib 1.x";
  }
#else
  a.unavailable = "gzip output needs glibc (fopencookie) and zlib, which this platform lacks";
#endif
  return a;
}

inline Api const& api() noexcept {
  static Api const a = load();
  return a;
}

#if defined(__GLIBC__) && defined(_GNU_SOURCE)
/// A FILE whose writes are compressed into `out` (gzip format).
struct File {
  Stream z{};
  std::FILE* out{nullptr};
  unsigned char buf[1 << 16];

  /// Runs deflate until the input is consumed (and, with `flush` = Z_FINISH, the end written).
  bool pump(int flush) noexcept {
    Api const& a = api();
    for (;;) {
      z.next_out = buf;
      z.avail_out = sizeof buf;
      int const rc = a.deflate(&z, flush);
      if (rc != 0 && rc != 1 && rc != -5) return false;  // Z_OK, Z_STREAM_END, Z_BUF_ERROR
      std::size_t const n = sizeof buf - z.avail_out;
      if (n != 0 && std::fwrite(buf, 1, n, out) != n) return false;
      if (flush == 4 ? rc == 1 : (z.avail_in == 0 && z.avail_out != 0)) return true;
      if (rc == -5 && n == 0) return flush != 4;
    }
  }

  static ssize_t write(void* cookie, char const* data, std::size_t size) noexcept {
    auto* f = static_cast<File*>(cookie);
    std::size_t done = 0;
    while (done < size) {  // avail_in is 32-bit
      std::size_t const n = std::min<std::size_t>(size - done, std::size_t{1} << 30);
      f->z.next_in = reinterpret_cast<unsigned char const*>(data + done);
      f->z.avail_in = static_cast<unsigned>(n);
      if (!f->pump(0)) {  // Z_NO_FLUSH
        if (errno == 0) errno = EIO;
        return -1;
      }
      done += n;
    }
    return static_cast<ssize_t>(size);
  }

  static int close(void* cookie) noexcept {
    auto* f = static_cast<File*>(cookie);
    f->z.next_in = nullptr;
    f->z.avail_in = 0;
    bool ok = f->pump(4);  // Z_FINISH
    int e = ok ? 0 : (errno != 0 ? errno : EIO);
    api().deflate_end(&f->z);
    if (std::fclose(f->out) != 0 && ok) {
      ok = false;
      e = errno;
    }
    delete f;
    if (!ok) errno = e;
    return ok ? 0 : -1;
  }
};
#endif

/// Starts a gzip deflate stream in `z` (zlib loaded): level 6 (zlib's default), gzip wrapper
/// (window bits 15 + 16), memory level 8.
inline bool start(Stream& z) noexcept {
  Api const& a = api();
  return a.deflate_init2(&z, 6, 8, 15 + 16, 8, 0, a.version(), static_cast<int>(sizeof(Stream))) ==
         0;
}

/// Opens `path` for writing gzip; null with errno (or a reason in `why`) when it cannot.
inline std::FILE* open(std::string const& path, std::string& why) noexcept {
  Api const& a = api();
  if (a.unavailable != nullptr) {
    why = a.unavailable;
    return nullptr;
  }
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  auto* f = new (std::nothrow) File{};
  if (f == nullptr) {
    why = "out of memory";
    return nullptr;
  }
  if (!start(f->z)) {
    delete f;
    why = "zlib refused to start a gzip stream";
    return nullptr;
  }
  f->out = std::fopen(path.c_str(), "wb");
  if (f->out == nullptr) {
    why = std::string{"cannot open it: "} + std::strerror(errno);
    a.deflate_end(&f->z);
    delete f;
    return nullptr;
  }
  cookie_io_functions_t const io{nullptr, &File::write, nullptr, &File::close};
  std::FILE* stream = ::fopencookie(f, "w", io);
  if (stream == nullptr) {
    why = "cannot make a compressing stream";
    std::fclose(f->out);
    a.deflate_end(&f->z);
    delete f;
  }
  return stream;
#else
  (void)path;
  why = a.unavailable;
  return nullptr;
#endif
}

/// Appends `text` to `out` as one complete gzip member (level 6). Several members one after the
/// other are one gzip file (RFC 1952), which is how a streamed trace grows. False when zlib fails.
inline bool member(std::string_view text, std::string& out) {
  Api const& a = api();
  if (a.unavailable != nullptr) return false;
  Stream z{};
  if (!start(z)) return false;
  std::size_t done = 0;
  unsigned char buf[1 << 15];
  int rc = 0;
  for (;;) {
    std::size_t const n = std::min<std::size_t>(text.size() - done, std::size_t{1} << 30);
    z.next_in = reinterpret_cast<unsigned char const*>(text.data() + done);
    z.avail_in = static_cast<unsigned>(n);
    bool const last = done + n == text.size();
    do {
      z.next_out = buf;
      z.avail_out = sizeof buf;
      rc = a.deflate(&z, last ? 4 : 0);  // Z_FINISH or Z_NO_FLUSH
      if (rc != 0 && rc != 1 && rc != -5) {
        a.deflate_end(&z);
        return false;
      }
      out.append(reinterpret_cast<char const*>(buf), sizeof buf - z.avail_out);
    } while (z.avail_out == 0 || (last && rc != 1));
    done += n;
    if (last) break;
  }
  a.deflate_end(&z);
  return true;
}

/// Appends the text of the gzip members in `data` (one or several) to `out`, and counts them in
/// `*members`. False when `data` is not gzip or ends inside a member.
inline bool inflate_members(std::string_view data, std::string& out,
                            std::size_t* members = nullptr) {
  Api const& a = api();
  if (a.unavailable != nullptr) return false;
  unsigned char buf[1 << 16];
  std::size_t at = 0;
  while (at < data.size()) {
    Stream z{};
    if (a.inflate_init2(&z, 15 + 16, a.version(), static_cast<int>(sizeof(Stream))) != 0)
      return false;
    z.next_in = reinterpret_cast<unsigned char const*>(data.data() + at);
    z.avail_in = static_cast<unsigned>(std::min<std::size_t>(data.size() - at, 1u << 30));
    int rc = 0;
    do {
      z.next_out = buf;
      z.avail_out = sizeof buf;
      rc = a.inflate(&z, 0);
      out.append(reinterpret_cast<char const*>(buf), sizeof buf - z.avail_out);
    } while (rc == 0 && (z.avail_in != 0 || z.avail_out == 0));
    std::size_t const used = static_cast<std::size_t>(z.total_in);
    a.inflate_end(&z);
    if (rc != 1 || used == 0) return false;  // Z_STREAM_END ends each member
    at += used;
    if (members != nullptr) ++*members;
  }
  return true;
}

}  // namespace gzip

/// A file written and read at offsets, which a streamed trace grows and cuts back (POSIX;
/// elsewhere it never opens, and the trace is written whole at the end).
class PlacedFile {
 public:
  PlacedFile() = default;
  PlacedFile(PlacedFile const&) = delete;
  PlacedFile& operator=(PlacedFile const&) = delete;
  ~PlacedFile() { close(); }

  /// Creates `path` (or empties it) for reading and writing.
  bool open(std::string const& path) noexcept {
    close();
#if !defined(_WIN32)
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
#else
    (void)path;
#endif
    return fd_ >= 0;
  }
  [[nodiscard]] bool is_open() const noexcept { return fd_ >= 0; }
  void close() noexcept {
#if !defined(_WIN32)
    if (fd_ >= 0) ::close(fd_);
#endif
    fd_ = -1;
  }
  void swap(PlacedFile& other) noexcept { std::swap(fd_, other.fd_); }

#if !defined(_WIN32)
  bool write_at(std::uint64_t at, std::string_view bytes) const noexcept {
    return whole(bytes.size(), [&](std::size_t done) {
      return ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(at + done));
    });
  }
  /// Appends `size` bytes from offset `at` to `out`.
  bool read_at(std::uint64_t at, std::uint64_t size, std::string& out) const {
    std::size_t const base = out.size();
    out.resize(base + size);
    return whole(size, [&](std::size_t done) {
      return ::pread(fd_, &out[base + done], size - done, static_cast<off_t>(at + done));
    });
  }
  bool truncate(std::uint64_t size) const noexcept {
    return fd_ >= 0 && ::ftruncate(fd_, static_cast<off_t>(size)) == 0;
  }
#else
  bool write_at(std::uint64_t, std::string_view) const noexcept { return false; }
  bool read_at(std::uint64_t, std::uint64_t, std::string&) const { return false; }
  bool truncate(std::uint64_t) const noexcept { return false; }
#endif

 private:
  /// Runs `io(done)` (a pread or pwrite from byte `done` on) until `size` bytes are through.
  template <class Io>
  bool whole(std::size_t size, Io io) const noexcept {
    std::size_t done = 0;
    while (fd_ >= 0 && done < size) {
      auto const n = io(done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<std::size_t>(n);
    }
    return fd_ >= 0;
  }

  int fd_{-1};
};

/// True when `path` asks for gzip (ends in ".gz").
inline bool wants_gzip(std::string const& path) noexcept {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
}

/// The file an output really goes to: without ".gz" when gzip cannot be written here.
inline std::string effective_path(std::string const& path) {
  if (wants_gzip(path) && gzip::api().unavailable != nullptr)
    return path.substr(0, path.size() - 3);
  return path;
}

/// Says on stderr, once per path, that `path` (".gz") will be written uncompressed as the file
/// named without ".gz", and why.
inline void say_if_uncompressed(std::string const& path) {
  if (!wants_gzip(path) || gzip::api().unavailable == nullptr) return;
  static std::mutex mutex;
  static std::vector<std::string> said;
  {
    std::lock_guard<std::mutex> lock{mutex};
    if (std::find(said.begin(), said.end(), path) != said.end()) return;
    said.push_back(path);
  }
  std::fprintf(stderr,
               "nsightkit report: '%s' is written uncompressed as '%s': gzip is not available "
               "(%s)\n",
               path.c_str(), effective_path(path).c_str(), gzip::api().unavailable);
}

/// The directory part of `path` ("" for a bare file name).
inline std::string parent_directory(std::string const& path) {
  std::size_t const slash = path.find_last_of("/\\");
  if (slash == std::string::npos) return {};
  if (slash == 0) return path.substr(0, 1);  // "/file"
  return path.substr(0, slash);
}

enum class PathKind { missing, regular, directory, other };

inline PathKind path_kind(std::string const& path) noexcept {
#if defined(_WIN32)
  struct _stat st;
  if (::_stat(path.c_str(), &st) != 0) return PathKind::missing;
  if ((st.st_mode & _S_IFDIR) != 0) return PathKind::directory;
  if ((st.st_mode & _S_IFREG) != 0) return PathKind::regular;
  return PathKind::other;
#else
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return PathKind::missing;
  if (S_ISDIR(st.st_mode)) return PathKind::directory;
  if (S_ISREG(st.st_mode)) return PathKind::regular;
  return PathKind::other;
#endif
}

/// Creates `dir` and its missing parents; "" on success, else the reason.
inline std::string make_directories(std::string const& dir) {
  if (dir.empty()) return {};
  PathKind const k = path_kind(dir);
  if (k == PathKind::directory) return {};
  if (k != PathKind::missing) return "'" + dir + "' exists and is not a directory";
  std::string const up = parent_directory(dir);
  if (!up.empty() && up != dir) {
    std::string why = make_directories(up);
    if (!why.empty()) return why;
  }
#if defined(_WIN32)
  int const rc = ::_mkdir(dir.c_str());
#else
  int const rc = ::mkdir(dir.c_str(), 0777);
#endif
  if (rc != 0 && errno != EEXIST) {
    return "cannot create directory '" + dir + "': " + std::strerror(errno);
  }
  return {};
}

/// Checks that `path` can be written, creating missing directories; "" when it looks writable,
/// else the reason. (A full disk is only found when writing.)
inline std::string check_output_path(std::string const& path) {
  if (path.empty()) return "the path is empty";
  PathKind const k = path_kind(path);
  if (k == PathKind::directory) return "'" + path + "' is a directory";
  std::string const dir = parent_directory(path);
  if (k == PathKind::missing) {
    std::string why = make_directories(dir);
    if (!why.empty()) return why;
  }
#if defined(_WIN32)
  if (k != PathKind::missing)
    return ::_access(path.c_str(), 2) == 0 ? std::string{} : "not writable";
  return ::_access(dir.empty() ? "." : dir.c_str(), 2) == 0 ? std::string{} : "not writable";
#else
  char const* target = k == PathKind::missing ? (dir.empty() ? "." : dir.c_str()) : path.c_str();
  if (::access(target, W_OK) != 0) {
    return std::string{"cannot write to '"} + target + "': " + std::strerror(errno);
  }
  return {};
#endif
}

/// Where an output goes when its target fails: a file in the working directory.
inline std::string fallback_path(char const* stem, char const* extension) {
  return std::string{"nsightkit-"} + stem + "." + std::to_string(process_id()) + extension;
}

/// Writes one file: `produce(TextSink&)` streams the content. "" on success, else the reason.
template <class Produce>
inline std::string write_one_file(std::string const& path, Produce& produce) {
  PathKind const k = path_kind(path);
  if (k == PathKind::directory) return "'" + path + "' is a directory";
  if (k == PathKind::missing) {
    std::string why = make_directories(parent_directory(path));
    if (!why.empty()) return why;
  }
  bool const in_place = k == PathKind::other;  // a device or a pipe: no rename over it
  std::string const target =
      in_place ? path : path + ".nsightkit-tmp." + std::to_string(process_id());
  std::string why;
  std::FILE* f = wants_gzip(path) ? gzip::open(target, why) : std::fopen(target.c_str(), "wb");
  if (f == nullptr)
    return why.empty() ? std::string{"cannot open it: "} + std::strerror(errno) : why;
  TextSink sink{f};
  produce(sink);
  sink.flush();
  int write_errno = sink.ok() ? 0 : sink.error();
  if (std::fflush(f) != 0 && write_errno == 0) write_errno = errno;
  if (std::fclose(f) != 0 && write_errno == 0) write_errno = errno;
  if (write_errno != 0) {
    if (!in_place) (void)std::remove(target.c_str());
    return std::string{"writing failed: "} + std::strerror(write_errno);
  }
  if (!in_place && std::rename(target.c_str(), path.c_str()) != 0) {
    int const e = errno;
    (void)std::remove(target.c_str());
    return std::string{"cannot rename the finished file into place: "} + std::strerror(e);
  }
  return {};
}

/// Writes an output to `path`, or to a fallback in the working directory when that fails.
/// Returns true when the content reached `path`; `wrote` gets "PATH (what)" for the summary line.
/// Every failure is one message on stderr with its reason.
template <class Produce>
inline bool write_output(std::string const& asked, char const* what, char const* stem,
                         char const* extension, Produce&& produce, std::string& wrote) {
  std::string const path = effective_path(asked);
  std::string why;
  NSIGHTKIT_DETAIL_TRY { why = write_one_file(path, produce); }
  NSIGHTKIT_DETAIL_CATCH(...) { why = "out of memory while writing it"; }
  char const* const plain = path != asked ? ", uncompressed: gzip is not available" : "";
  if (why.empty()) {
    wrote = path + " (" + what + plain + ")";
    return true;
  }
  std::string const fallback = fallback_path(stem, extension);
  std::string why2;
  NSIGHTKIT_DETAIL_TRY { why2 = fallback == path ? why : write_one_file(fallback, produce); }
  NSIGHTKIT_DETAIL_CATCH(...) { why2 = "out of memory while writing it"; }
  if (why2.empty()) {
    std::fprintf(stderr, "nsightkit report: cannot write the %s to '%s' (%s); wrote it to '%s'\n",
                 what, path.c_str(), why.c_str(), fallback.c_str());
    wrote = fallback + " (" + what + ", instead of " + path + ")";
  } else {
    std::fprintf(stderr,
                 "nsightkit report: cannot write the %s to '%s' (%s), nor to '%s' (%s): it is "
                 "lost\n",
                 what, path.c_str(), why.c_str(), fallback.c_str(), why2.c_str());
  }
  return false;
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
