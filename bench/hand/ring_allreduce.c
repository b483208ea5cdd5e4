/* Ring all-reduce by hand: a reduce-scatter around the ring, then an all-gather of the finished
 * chunks, 2(N-1) steps of count/N floats.
 *
 * Source: Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
 * workstations", JPDC 69(2), 2009 (the ring of Baidu's allreduce and NCCL). The data moves as in
 * schedules/ring_allreduce.sched: N chunks; in reduce-scatter step s rank r sends chunk r-s to
 * r+1 and adds the chunk r-1-s it receives from r-1; in all-gather step s it sends chunk r+1-s
 * and receives chunk r-s in place (all mod N). */
#include "harness.h"

static void ring_allreduce(float* data, float* out, float* tmp, int count, int r, int n) {
  (void)out;
  int c = count / n, right = mod(r + 1, n), left = mod(r - 1, n);
  MPI_Request q;
  for (int s = 0; s < n - 1; ++s) {
    MPI_Irecv(tmp, c, MPI_FLOAT, left, 0, MPI_COMM_WORLD, &q);
    MPI_Send(data + mod(r - s, n) * c, c, MPI_FLOAT, right, 0, MPI_COMM_WORLD);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    add(data + mod(r - 1 - s, n) * c, tmp, c);
  }
  for (int s = 0; s < n - 1; ++s) {
    MPI_Irecv(data + mod(r - s, n) * c, c, MPI_FLOAT, left, 0, MPI_COMM_WORLD, &q);
    MPI_Send(data + mod(r + 1 - s, n) * c, c, MPI_FLOAT, right, 0, MPI_COMM_WORLD);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
  }
}

int main(int argc, char** argv) { return hand_main(argc, argv, "hand_ring_allreduce", HAND_ALLREDUCE, ring_allreduce); }
