// nsightkit's compiled part for CUDA (NSIGHTKIT_COMPILED; see src/nsightkit.cpp and
// docs/compile-cost.md): the members of PinnedMemoryPool and GraphRecorder's text and watch
// functions, in the enabled and (built with NSIGHTKIT_DISABLE) the disabled mode alike: neither is
// instrumentation. A separate object, so that a program that uses neither neither links it nor
// needs the CUDA runtime; without the CUDA headers it is empty.
#ifndef NSIGHTKIT_COMPILED
#define NSIGHTKIT_COMPILED 1
#endif

#include <nsightkit/config.hpp>

#if NSIGHTKIT_HAS_CUDA
#include <nsightkit/detail/graph/recorder_impl.hpp>
#include <nsightkit/detail/pinned/pool_impl.hpp>
#endif
