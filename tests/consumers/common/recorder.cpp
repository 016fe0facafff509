#define NSIGHTKIT_TESTING_INSTALL_RECORDER
#include <nsightkit/testing.hpp>
