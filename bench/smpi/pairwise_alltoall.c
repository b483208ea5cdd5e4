/* bench/sim_vs_smpi: pairwise-exchange all-to-all as schedules/pairwise_alltoall.sched writes
 * it, in MPI: the schedule is already an MPI program (local view), so this is a transcription.
 * Rank r copies its own block, then in step k (1 <= k < N) posts MPI_Irecv from r - k, MPI_Isend
 * to r + k and MPI_Waitall on both. Each block is size/N bytes; sent eagerly below 64 KiB (SMPI's
 * detached sends, stepgraph's eager limit) and by rendezvous from 64 KiB on. */
#include "harness.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int r = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  long long size = size_arg(argc, argv), blk = size / n;
  unsigned char* sendbuf = must_alloc(n * blk);
  unsigned char* recvbuf = must_alloc(n * blk);
  /* sendbuf[s] on rank r: r's block for s */
  for (long long i = 0; i < n * blk; ++i) sendbuf[i] = contrib(r, i);

  double start = aligned_start();
  memcpy(recvbuf + r * blk, sendbuf + r * blk, (size_t)blk);
  for (int k = 1; k < n; ++k) {
    int dst = (r + k) % n, src = (r - k + n) % n;
    MPI_Request req[2];
    MPI_Irecv(recvbuf + src * blk, (int)blk, MPI_BYTE, src, 0, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(sendbuf + dst * blk, (int)blk, MPI_BYTE, dst, 0, MPI_COMM_WORLD, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
  }
  double end = MPI_Wtime();

  int ok = 1; /* recvbuf[s] on rank r: s's block for r */
  for (int s = 0; s < n && ok; ++s)
    for (long long i = 0; i < blk && ok; ++i) ok = recvbuf[s * blk + i] == contrib(s, r * blk + i);
  report(start, end, ok);
  MPI_Finalize();
  return 0;
}
