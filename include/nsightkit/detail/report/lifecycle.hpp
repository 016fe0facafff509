// Internal: the report's life, one header per job — creating the State (create.hpp, after the
// claim of claim.hpp), enable and the choice of GPU source (enable.hpp, gpu_source_choice.hpp),
// disable and reset (control.hpp), the strict mode (strict.hpp), a forked child's fresh start
// (fork.hpp), the MPI write hook (write_hook.hpp) and the at-exit write (at_exit.hpp).
#pragma once

#include <nsightkit/detail/report/at_exit.hpp>
#include <nsightkit/detail/report/claim.hpp>
#include <nsightkit/detail/report/control.hpp>
#include <nsightkit/detail/report/create.hpp>
#include <nsightkit/detail/report/enable.hpp>
#include <nsightkit/detail/report/fork.hpp>
#include <nsightkit/detail/report/gpu_source_choice.hpp>
#include <nsightkit/detail/report/strict.hpp>
#include <nsightkit/detail/report/write_hook.hpp>
