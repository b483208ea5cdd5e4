/* Recursive-doubling all-reduce by hand: log2(N) exchanges of the whole vector with rank XOR 2^k,
 * each followed by the add.
 *
 * Source: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication Operations in
 * MPICH", IJHPCA 19(1), 2005 (MPIR_Allreduce_intra_recursive_doubling), as in
 * schedules/recursive_doubling_allreduce.sched: for N not a power of two (p = 2^floor(log2 N),
 * rem = N - p) the even ranks below 2·rem first hand their vector to the odd rank above, which
 * stands for both as new rank r/2 (ranks >= 2·rem are new rank r - rem), and get the sum back at
 * the end. The partner's vector arrives in tmp, so that what it sends is its old vector. */
#include "harness.h"

static void recursive_doubling_allreduce(float* data, float* out, float* tmp, int count, int r, int n) {
  (void)out;
  int p = 1;
  while (p * 2 <= n) p *= 2;
  int rem = n - p, v = r < 2 * rem ? (r % 2 ? r / 2 : -1) : r - rem;
  MPI_Request q;
  if (r < 2 * rem && r % 2 == 0) MPI_Send(data, count, MPI_FLOAT, r + 1, 0, MPI_COMM_WORLD);
  if (r < 2 * rem && r % 2 == 1) {
    MPI_Recv(tmp, count, MPI_FLOAT, r - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    add(data, tmp, count);
  }
  for (int m = 1; v >= 0 && m < p; m *= 2) {
    int w = v ^ m, partner = w < rem ? 2 * w + 1 : w + rem;
    MPI_Irecv(tmp, count, MPI_FLOAT, partner, 0, MPI_COMM_WORLD, &q);
    MPI_Send(data, count, MPI_FLOAT, partner, 0, MPI_COMM_WORLD);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    add(data, tmp, count);
  }
  if (r < 2 * rem && r % 2 == 1) MPI_Send(data, count, MPI_FLOAT, r - 1, 0, MPI_COMM_WORLD);
  if (r < 2 * rem && r % 2 == 0) MPI_Recv(data, count, MPI_FLOAT, r + 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char** argv) {
  return hand_main(argc, argv, "hand_recursive_doubling_allreduce", HAND_ALLREDUCE, recursive_doubling_allreduce);
}
