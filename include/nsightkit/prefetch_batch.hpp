/**
 * @file prefetch_batch.hpp
 * @brief The former name of prefetch_types.hpp (nsightkit::PrefetchedBatch and
 *        nsightkit::PrefetchStats): it only includes prefetch_types.hpp, and goes away after one
 *        release. Include <nsightkit/prefetch_types.hpp> instead.
 */
#pragma once

#include <nsightkit/prefetch_types.hpp>
