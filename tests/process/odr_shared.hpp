// Used from two translation units of test_odr: the same inline functions and call sites must
// share one registration and one sink table across TUs.
#pragma once
#include <nsightkit/range.hpp>

inline void odr_shared_function() { NSIGHTKIT_FUNC_RANGE(); }
inline void odr_shared_static() { nsightkit::ScopedRange r{"odr-static"}; }
void call_from_a();
void call_from_b();
