// test_capture.cpp compiled with NSIGHTKIT_DISABLE (see capture.cmake): the same expectations,
// which under NSIGHTKIT_DISABLE say "no backend call, no NVTX, no callback, no environment".
#if !defined(NSIGHTKIT_DISABLE)
#error "this translation unit must be compiled with NSIGHTKIT_DISABLE"
#endif
#include "test_capture.cpp"
