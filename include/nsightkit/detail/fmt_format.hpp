// Internal: {fmt}'s formatting engine (<fmt/format.h>), for the code that formats text; see
// detail/fmt.hpp for the light part the public headers need in the compiled mode, and for what
// differs between {fmt} versions.
#pragma once

// fmt 9's inlined buffer code trips g++ 12's -Wstringop-overflow at -O3 (through nvcc too, where
// the include directory is not always a system one): a false positive inside {fmt}, silenced for
// {fmt}'s own lines only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
#include <fmt/format.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
