/* bench/sim_vs_smpi: binomial-tree broadcast from rank 0 as schedules/binomial_bcast.sched
 * writes it (MPICH's MPIR_Bcast_intra_binomial), in MPI: the schedule is already an MPI program
 * (local view, blocking MPI_Recv and MPI_Send), so this is a transcription. Each rank receives
 * the message from its parent, then sends it to its children one after the other, farthest
 * first. The benchmark's eager/rendezvous boundary case: at 65,535 bytes a blocking send is eager
 * in both simulators (it returns at once and a parent's sends share its link), at 65,536 it is a
 * rendezvous (it returns when the data has arrived, so a parent's sends go one after the other). */
#include "harness.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int r = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  long long size = size_arg(argc, argv);
  int levels = 0; /* ceil(log2 N) */
  while ((1 << levels) < n) ++levels;
  unsigned char* data = must_alloc(size);
  for (long long i = 0; i < size; ++i) data[i] = r == 0 ? contrib(0, i) : 0;

  double start = aligned_start();
  for (int k = 0; k < levels; ++k) {
    int m = 1 << k;
    if (r % (2 * m) == m) MPI_Recv(data, (int)size, MPI_BYTE, r - m, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  for (int k = levels - 1; k >= 0; --k) {
    int m = 1 << k;
    if (r % (2 * m) == 0 && r + m < n) MPI_Send(data, (int)size, MPI_BYTE, r + m, 0, MPI_COMM_WORLD);
  }
  double end = MPI_Wtime();

  int ok = 1;
  for (long long i = 0; i < size && ok; ++i) ok = data[i] == contrib(0, i);
  report(start, end, ok);
  MPI_Finalize();
  return 0;
}
