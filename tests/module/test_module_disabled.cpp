// test_module.cpp compiled with NSIGHTKIT_DISABLE (see module.cmake): the same model code builds
// unchanged, Hooked and instrument still call through, nothing is emitted and no hook runs.
#include "test_module.cpp"
