/* bench/sim_vs_smpi: recursive-doubling all-reduce as schedules/recursive_doubling_allreduce.sched
 * writes it (MPICH's fold for N not a power of two), in MPI.
 *
 * p = the largest power of two <= N, rem = N - p. Fold: each even rank r < 2 rem sends its
 * vector to r + 1, which adds it. Then log2(p) steps among the p survivors (new rank v: r / 2
 * below 2 rem, r - rem above): in step k, v exchanges its vector with v XOR 2^k (the real rank
 * of new rank w is 2w + 1 for w < rem, else w + rem) and adds what it received. Unfold: each
 * odd rank r < 2 rem sends the sum back to r - 1. Every message is the whole vector (size bytes).
 *
 * The semantics are the schedule's under `stepgraph sim`: its sends are choreographic, so a send
 * starts when the vector it reads is final, completes at once (buffered: a copy into a per-step
 * send buffer, then MPI_Isend) and its receive was posted from the start (every MPI_Irecv is
 * posted before the first send, each into its own buffer, as the schedule's `tmp` is only read by
 * the step's reduce). */
#include "harness.h"

enum { kFold = 1000, kUnfold = 1001 };

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int r = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  long long size = size_arg(argc, argv);
  int p = 1, logp = 0;
  while (2 * p <= n) p *= 2, ++logp;
  int rem = n - p;
  int sits_out = r < 2 * rem && r % 2 == 0, folds = r < 2 * rem && r % 2 == 1;
  int v = r < 2 * rem ? r / 2 : r - rem;
  unsigned char* data = must_alloc(size);
  unsigned char* tmp = must_alloc((long long)(logp + 1) * size);
  unsigned char* sbuf = must_alloc((long long)(logp + 1) * size);
  MPI_Request rreq[64], sreq[64];
  int nsend = 0;
  for (long long i = 0; i < size; ++i) data[i] = contrib(r, i);

  double start = aligned_start();
  if (sits_out) {
    MPI_Irecv(data, (int)size, MPI_BYTE, r + 1, kUnfold, MPI_COMM_WORLD, &rreq[0]);
    memcpy(sbuf, data, (size_t)size);
    MPI_Isend(sbuf, (int)size, MPI_BYTE, r + 1, kFold, MPI_COMM_WORLD, &sreq[nsend++]);
    MPI_Wait(&rreq[0], MPI_STATUS_IGNORE);
  } else {
    for (int k = 0; k < logp; ++k) {
      int w = v ^ (1 << k), b = w < rem ? 2 * w + 1 : w + rem;
      MPI_Irecv(tmp + k * size, (int)size, MPI_BYTE, b, k, MPI_COMM_WORLD, &rreq[k]);
    }
    if (folds) {
      MPI_Irecv(tmp + logp * size, (int)size, MPI_BYTE, r - 1, kFold, MPI_COMM_WORLD, &rreq[logp]);
      MPI_Wait(&rreq[logp], MPI_STATUS_IGNORE);
      for (long long i = 0; i < size; ++i) data[i] = (unsigned char)(data[i] + tmp[logp * size + i]);
    }
    for (int k = 0; k < logp; ++k) {
      int w = v ^ (1 << k), b = w < rem ? 2 * w + 1 : w + rem;
      memcpy(sbuf + k * size, data, (size_t)size);
      MPI_Isend(sbuf + k * size, (int)size, MPI_BYTE, b, k, MPI_COMM_WORLD, &sreq[nsend++]);
      MPI_Wait(&rreq[k], MPI_STATUS_IGNORE);
      for (long long i = 0; i < size; ++i) data[i] = (unsigned char)(data[i] + tmp[k * size + i]);
    }
    if (folds) {
      memcpy(sbuf + logp * size, data, (size_t)size);
      MPI_Isend(sbuf + logp * size, (int)size, MPI_BYTE, r - 1, kUnfold, MPI_COMM_WORLD, &sreq[nsend++]);
    }
  }
  MPI_Waitall(nsend, sreq, MPI_STATUSES_IGNORE);
  double end = MPI_Wtime();

  int ok = 1;
  for (long long i = 0; i < size && ok; ++i) {
    unsigned char want = 0;
    for (int q = 0; q < n; ++q) want = (unsigned char)(want + contrib(q, i));
    ok = data[i] == want;
  }
  report(start, end, ok);
  MPI_Finalize();
  return 0;
}
