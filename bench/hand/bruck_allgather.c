/* Bruck's all-gather by hand: ceil(log2 N) steps for any N, through a rotated buffer.
 *
 * Source: Bruck, Ho, Kipnis, Upfal & Weathersby, IEEE TPDS 8(11), 1997; MPICH's
 * MPIR_Allgather_intra_brucks (Thakur, Rabenseifner & Gropp, IJHPCA 19(1), 2005), as in
 * schedules/bruck_allgather.sched: rank r copies its block to tmp[0], so that tmp[i] collects
 * block r+i; in step d = 1, 2, 4, … it sends tmp[0 .. min(d, N-d)) to r-d and receives as many
 * blocks from r+d at tmp[d]; two copies undo the rotation into data. */
#include "harness.h"

static void bruck_allgather(float* data, float* out, float* tmp, int count, int r, int n) {
  (void)out;
  int b = count / n;
  MPI_Request q;
  memcpy(tmp, data + r * b, (size_t)b * sizeof(float));
  for (int d = 1; d < n; d *= 2) {
    int cnt = d < n - d ? d : n - d;
    MPI_Irecv(tmp + d * b, cnt * b, MPI_FLOAT, mod(r + d, n), 0, MPI_COMM_WORLD, &q);
    MPI_Send(tmp, cnt * b, MPI_FLOAT, mod(r - d, n), 0, MPI_COMM_WORLD);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
  }
  memcpy(data + r * b, tmp, (size_t)(n - r) * b * sizeof(float));
  memcpy(data, tmp + (n - r) * b, (size_t)r * b * sizeof(float));
}

int main(int argc, char** argv) { return hand_main(argc, argv, "hand_bruck_allgather", HAND_ALLGATHER, bruck_allgather); }
