// Writing the subcommands' outputs (output.hpp).
#include "output.hpp"

#include "report_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace nsightkit_command {

void write_file(std::string const& path, std::string const& text) {
  auto failed = [&](int error) {
    throw InputError(path + ": cannot write: " + std::strerror(error));
  };
  if (path == "-") {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
      failed(errno);
    return;
  }
  struct stat st {};
  bool const special = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  if (special && S_ISDIR(st.st_mode)) failed(EISDIR);
  std::string const target = special ? path : path + ".tmp" + std::to_string(::getpid());
  std::FILE* f = std::fopen(target.c_str(), "wb");
  if (f == nullptr) failed(errno);
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  int error = ok ? 0 : errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    error = errno;
  }
  if (ok && !special && std::rename(target.c_str(), path.c_str()) != 0) {
    ok = false;
    error = errno;
  }
  if (!ok) {
    if (!special) std::remove(target.c_str());
    failed(error);
  }
}

}  // namespace nsightkit_command
