/**
 * @file nsightkit.hpp
 * @brief Umbrella header: includes every public nsightkit header.
 *
 * The testing helper (<nsightkit/testing.hpp>) is not included: it is a test tool.
 */
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/capture.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/module.hpp>
#include <nsightkit/pinned_stats.hpp>
#include <nsightkit/prefetch_batch.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/report.hpp>

#if NSIGHTKIT_HAS_CUDA
#include <nsightkit/cuda_check.hpp>
#include <nsightkit/pinned.hpp>
#include <nsightkit/prefetch.hpp>
#include <nsightkit/stream.hpp>
#endif
