// Internal: how a range path reads in every output — a component's label and the join of a path.
// C++'s one copy of the rule: snapshots, traces and the MPI merge use it (python/nsightkit/
// report_file.py holds it for Python).
#pragma once

#include <nsightkit/config.hpp>

#include <string>

NSIGHTKIT_DETAIL_BEGIN_NAMESPACE
namespace detail::report {

/// A path component as the report shows it: the name, or "domain@name" outside the "nsightkit"
/// and global domains (ncu's notation for domain-qualified ranges).
inline std::string component(std::string const& domain, std::string const& name) {
  if (domain.empty() || domain == "nsightkit") return name;
  return domain + "@" + name;
}

/// The path of a range: its parent's path (null for a range with no enclosing range) and its
/// component, joined by '/'.
inline std::string child_path(std::string const* parent, std::string const& comp) {
  return parent == nullptr ? comp : *parent + "/" + comp;
}

}  // namespace detail::report
NSIGHTKIT_DETAIL_END_NAMESPACE
