/* Rabenseifner's all-reduce by hand: a reduce-scatter by recursive halving, then an all-gather by
 * recursive doubling, over p = 2^floor(log2 N) blocks of count/p floats.
 *
 * Source: Rabenseifner, "Optimization of Collective Reduction Operations", ICCS 2004; Thakur,
 * Rabenseifner & Gropp, IJHPCA 19(1), 2005 (MPIR_Allreduce_intra_reduce_scatter_allgather), as in
 * schedules/rabenseifner_allreduce.sched: in halving step d = p/2, p/4, …, 1 new rank v and
 * v XOR d share 2d blocks, each sends the half the other keeps and adds the half it keeps; then
 * in doubling step d = 1, 2, …, p/2 each sends its finished d blocks and receives the partner's
 * in place. The same fold as recursive doubling for N not a power of two. */
#include "harness.h"

/* Exchange with partner: send count floats from send, receive as many into recv. */
static void swap(const float* send, float* recv, int count, int partner) {
  MPI_Request q;
  MPI_Irecv(recv, count, MPI_FLOAT, partner, 0, MPI_COMM_WORLD, &q);
  MPI_Send(send, count, MPI_FLOAT, partner, 0, MPI_COMM_WORLD);
  MPI_Wait(&q, MPI_STATUS_IGNORE);
}

static void rabenseifner_allreduce(float* data, float* out, float* tmp, int count, int r, int n) {
  (void)out;
  int p = 1;
  while (p * 2 <= n) p *= 2;
  int rem = n - p, b = count / p, v = r < 2 * rem ? (r % 2 ? r / 2 : -1) : r - rem;
  if (r < 2 * rem && r % 2 == 0) MPI_Send(data, count, MPI_FLOAT, r + 1, 0, MPI_COMM_WORLD);
  if (r < 2 * rem && r % 2 == 1) {
    MPI_Recv(tmp, count, MPI_FLOAT, r - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    add(data, tmp, count);
  }
  for (int d = p / 2; v >= 0 && d >= 1; d /= 2) {
    int w = v ^ d, partner = w < rem ? 2 * w + 1 : w + rem, lo = v / (2 * d) * (2 * d);
    int keep = v & d ? lo + d : lo, give = v & d ? lo : lo + d;
    swap(data + give * b, tmp, d * b, partner);
    add(data + keep * b, tmp, d * b);
  }
  for (int d = 1; v >= 0 && d < p; d *= 2) {
    int w = v ^ d, partner = w < rem ? 2 * w + 1 : w + rem;
    swap(data + v / d * d * b, data + w / d * d * b, d * b, partner);
  }
  if (r < 2 * rem && r % 2 == 1) MPI_Send(data, count, MPI_FLOAT, r - 1, 0, MPI_COMM_WORLD);
  if (r < 2 * rem && r % 2 == 0) MPI_Recv(data, count, MPI_FLOAT, r + 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char** argv) { return hand_main(argc, argv, "hand_rabenseifner_allreduce", HAND_ALLREDUCE, rabenseifner_allreduce); }
