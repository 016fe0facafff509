// Installs nsightkit's in-process NVTX recorder for this executable (one TU, nothing else in it).
#define NSIGHTKIT_TESTING_INSTALL_RECORDER
#include <nsightkit/testing.hpp>
