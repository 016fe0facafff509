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
#pragma once

#include <nsightkit/config.hpp>
#include <nsightkit/detail/process.hpp>
#include <nsightkit/detail/report/output.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#if defined(_WIN32)
#include <direct.h>
#include <io.h>
#include <sys/stat.h>
#else
#include <sys/stat.h>
#include <unistd.h>
#endif

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

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
  std::FILE* f = std::fopen(target.c_str(), "wb");
  if (f == nullptr) return std::string{"cannot open it: "} + std::strerror(errno);
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
inline bool write_output(std::string const& path, char const* what, char const* stem,
                         char const* extension, Produce&& produce, std::string& wrote) {
  std::string why;
  NSIGHTKIT_DETAIL_TRY { why = write_one_file(path, produce); }
  NSIGHTKIT_DETAIL_CATCH(...) { why = "out of memory while writing it"; }
  if (why.empty()) {
    wrote = path + " (" + what + ")";
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
