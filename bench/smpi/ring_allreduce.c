/* bench/sim_vs_smpi: ring all-reduce as schedules/ring_allreduce.sched writes it, in MPI.
 *
 * The buffer is N chunks of size/N bytes. Step t (0 <= t < 2(N-1)) on rank r sends one chunk to
 * r + 1 and receives one from r - 1: reduce-scatter for t < N-1 (send chunk r - t, add the
 * received chunk r - 1 - t), then all-gather (s = t - (N-1): send chunk r + 1 - s, copy the
 * received chunk r - s in), all mod N.
 *
 * The semantics are the schedule's under `stepgraph sim` (sim/runtime.hpp): its sends are
 * choreographic, so a send starts as soon as the chunk it reads is final (step t's send waits only
 * for step t-1's receive), it completes at once (the data is buffered: here a copy into a
 * per-step send buffer, then MPI_Isend) and its receive was posted from the start (here every
 * MPI_Irecv is posted before the first send, with the step as tag). So the data of every message
 * moves the moment it is sent, eager or not. */
#include "harness.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int r = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  long long size = size_arg(argc, argv), chunk = size / n;
  int steps = 2 * (n - 1), left = (r + n - 1) % n, right = (r + 1) % n;
  unsigned char* data = must_alloc(n * chunk);
  unsigned char* rbuf = must_alloc(steps * chunk);
  unsigned char* sbuf = must_alloc(steps * chunk);
  MPI_Request* rreq = must_alloc((long long)sizeof(MPI_Request) * (steps + 1));
  MPI_Request* sreq = must_alloc((long long)sizeof(MPI_Request) * (steps + 1));
  for (long long i = 0; i < n * chunk; ++i) data[i] = contrib(r, i);

  double start = aligned_start();
  for (int t = 0; t < steps; ++t) MPI_Irecv(rbuf + t * chunk, (int)chunk, MPI_BYTE, left, t, MPI_COMM_WORLD, &rreq[t]);
  for (int t = 0; t <= steps; ++t) {
    if (t > 0) { /* step t-1's chunk has arrived: reduce it (reduce-scatter) or copy it in */
      int u = t - 1;
      MPI_Wait(&rreq[u], MPI_STATUS_IGNORE);
      long long c = u < n - 1 ? ((r - 1 - u) % n + n) % n : ((r - (u - (n - 1))) % n + n) % n;
      unsigned char* dst = data + c * chunk;
      const unsigned char* got = rbuf + u * chunk;
      if (u < n - 1)
        for (long long i = 0; i < chunk; ++i) dst[i] = (unsigned char)(dst[i] + got[i]);
      else memcpy(dst, got, (size_t)chunk);
    }
    if (t == steps) break;
    long long c = t < n - 1 ? ((r - t) % n + n) % n : ((r + 1 - (t - (n - 1))) % n + n) % n;
    memcpy(sbuf + t * chunk, data + c * chunk, (size_t)chunk);
    MPI_Isend(sbuf + t * chunk, (int)chunk, MPI_BYTE, right, t, MPI_COMM_WORLD, &sreq[t]);
  }
  MPI_Waitall(steps, sreq, MPI_STATUSES_IGNORE);
  double end = MPI_Wtime();

  int ok = 1;
  for (long long i = 0; i < n * chunk && ok; ++i) {
    unsigned char want = 0;
    for (int q = 0; q < n; ++q) want = (unsigned char)(want + contrib(q, i));
    ok = data[i] == want;
  }
  report(start, end, ok);
  MPI_Finalize();
  return 0;
}
