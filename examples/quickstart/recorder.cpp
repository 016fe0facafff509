// Installs nsightkit's in-process NVTX recorder, so the quickstart can show what it emitted even
// without Nsight Systems. Under nsys/ncu their injection takes precedence and this one stays idle.
#define NSIGHTKIT_TESTING_INSTALL_RECORDER
#include <nsightkit/testing.hpp>
