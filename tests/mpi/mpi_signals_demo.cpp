// A rank of a job that runs until its scheduler ends it (tests/mpi/run_mpi_signals.py): each rank
// enables nsightkit::mpi, records ranges in a loop and prints "rank R pid P ready"; a SIGTERM
// (from mpiexec, which passes it on to every rank) must leave each rank's own files, written
// without any collective.
#include <nsightkit/mpi.hpp>
#include <nsightkit/range.hpp>
#include <nsightkit/report.hpp>

#include <mpi.h>

#include <unistd.h>
#include <cstdio>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (!nsightkit::mpi::enable(MPI_COMM_WORLD)) return 2;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::printf("rank %d pid %ld ready\n", rank, static_cast<long>(::getpid()));
  std::fflush(stdout);
  for (;;) {
    nsightkit::ScopedRange step{"step"};
    nsightkit::ScopedRange work{"rank {} work", rank};
    ::usleep(500);
  }
}
