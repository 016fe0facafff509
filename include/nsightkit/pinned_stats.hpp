/**
 * @file pinned_stats.hpp
 * @brief The former name of pinned_types.hpp (nsightkit::PinnedPoolStats): it only includes
 *        pinned_types.hpp, and goes away after one release. Include
 *        <nsightkit/pinned_types.hpp> instead.
 */
#pragma once

#include <nsightkit/pinned_types.hpp>
