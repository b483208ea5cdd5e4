/* Pairwise-exchange all-to-all by hand: N-1 steps, one partner each way per step.
 *
 * Source: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication Operations in
 * MPICH", IJHPCA 19(1), 2005 (MPIR_Alltoall_intra_pairwise), as in
 * schedules/pairwise_alltoall.sched: rank r copies its own block, then in step k = 1 … N-1 sends
 * its block for r+k and receives r-k's block for it; a step ends before the next starts. */
#include "harness.h"

static void pairwise_alltoall(float* data, float* out, float* tmp, int count, int r, int n) {
  (void)tmp;
  int b = count / n;
  MPI_Request q;
  memcpy(out + r * b, data + r * b, (size_t)b * sizeof(float));
  for (int k = 1; k < n; ++k) {
    int dst = mod(r + k, n), src = mod(r - k, n);
    MPI_Irecv(out + src * b, b, MPI_FLOAT, src, 0, MPI_COMM_WORLD, &q);
    MPI_Send(data + dst * b, b, MPI_FLOAT, dst, 0, MPI_COMM_WORLD);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
  }
}

int main(int argc, char** argv) { return hand_main(argc, argv, "hand_pairwise_alltoall", HAND_ALLTOALL, pairwise_alltoall); }
