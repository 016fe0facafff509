// Where the subcommands' outputs go: a file written whole, or standard output.
#pragma once

#include <string>

namespace nsightkit_command {

/// Writes `text` to `path`: a regular file through a temporary beside it renamed over it (a
/// reader never sees half of it), a device or pipe in place; "-" is standard output.
/// @throws InputError ("PATH: cannot write: REASON") when it cannot be written.
void write_file(std::string const& path, std::string const& text);

}  // namespace nsightkit_command
