/* Ring all-gather by hand: N-1 steps, each passing on the block received in the step before.
 *
 * Source: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication Operations in
 * MPICH", IJHPCA 19(1), 2005 (MPIR_Allgather_intra_ring), as in schedules/ring_allgather.sched:
 * N blocks of count/N floats, rank r starts with block r; in step s it sends block r-s to r+1
 * and receives block r-1-s from r-1 in place (mod N). */
#include "harness.h"

static void ring_allgather(float* data, float* out, float* tmp, int count, int r, int n) {
  (void)out;
  (void)tmp;
  int b = count / n, right = mod(r + 1, n), left = mod(r - 1, n);
  MPI_Request q;
  for (int s = 0; s < n - 1; ++s) {
    MPI_Irecv(data + mod(r - 1 - s, n) * b, b, MPI_FLOAT, left, 0, MPI_COMM_WORLD, &q);
    MPI_Send(data + mod(r - s, n) * b, b, MPI_FLOAT, right, 0, MPI_COMM_WORLD);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
  }
}

int main(int argc, char** argv) { return hand_main(argc, argv, "hand_ring_allgather", HAND_ALLGATHER, ring_allgather); }
