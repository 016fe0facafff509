/**
 * @file nsightkit.hpp
 * @brief Umbrella header: includes every public nsightkit header.
 *
 * The testing helper (<nsightkit/testing.hpp>, <nsightkit/testing_types.hpp>) is not included:
 * it is a test tool. <nsightkit/mpi.hpp> needs MPI (the nsightkit::mpi component) and is included
 * by the programs that use it.
 */
#pragma once

#include <nsightkit/attributes.hpp>
#include <nsightkit/capture.hpp>
#include <nsightkit/capture_types.hpp>
#include <nsightkit/config.hpp>
#include <nsightkit/graph_types.hpp>
#include <nsightkit/hooked.hpp>
#include <nsightkit/module.hpp>
#include <nsightkit/module_types.hpp>
#include <nsightkit/pinned_types.hpp>
#include <nsightkit/prefetch_types.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/report.hpp>
#include <nsightkit/report_types.hpp>

#if NSIGHTKIT_HAS_CUDA
#include <nsightkit/cuda_check.hpp>
#include <nsightkit/graph.hpp>
#include <nsightkit/pinned.hpp>
#include <nsightkit/prefetch.hpp>
#include <nsightkit/stream.hpp>
#endif
