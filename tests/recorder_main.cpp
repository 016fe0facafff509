// Installs nsightkit's NVTX Recorder in the test executable. Nothing else belongs in this file:
// it must include <nsightkit/testing.hpp> before any other NVTX header.
#define NSIGHTKIT_TESTING_INSTALL_RECORDER
#include <nsightkit/testing.hpp>
