#include "common/report_files.hpp"

namespace nn {

std::string tagged_path(std::string const& path, char const* tag) {
  std::size_t const slash = path.find_last_of('/');
  std::size_t const dot = path.find_last_of('.');
  std::size_t const name = slash == std::string::npos ? 0 : slash + 1;
  // No extension (or a leading dot, as in ".hidden"): the tag goes at the end.
  if (dot == std::string::npos || dot <= name) return path + "." + tag;
  std::size_t at = dot;
  if (path.compare(dot, std::string::npos, ".gz") == 0) {
    std::size_t const inner = path.find_last_of('.', dot - 1);
    if (inner != std::string::npos && inner > name) at = inner;
  }
  return path.substr(0, at) + "." + tag + path.substr(at);
}

nsightkit::ReportOptions tagged_options(nsightkit::ReportOptions o, char const* tag) {
  for (std::string* f : {&o.json, &o.csv, &o.trace, &o.html}) {
    if (!f->empty()) *f = tagged_path(*f, tag);
  }
  if (!o.table.empty() && o.table != "stdout" && o.table != "stderr") {
    o.table = tagged_path(o.table, tag);
  }
  return o;
}

}  // namespace nn
