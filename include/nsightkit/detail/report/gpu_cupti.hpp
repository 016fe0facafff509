// Internal: forwards to the CUPTI source (detail/cupti/source.hpp) for <nsightkit/cupti.hpp>, which
// includes this path; remove once that header includes detail/cupti/source.hpp itself.
#pragma once

#include <nsightkit/detail/cupti/source.hpp>
