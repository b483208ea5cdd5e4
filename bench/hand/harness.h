/* bench/hand: what the six hand-written MPI programs share. Each program is one algorithm as an
 * HPC engineer writes it (per step MPI_Irecv + MPI_Send + MPI_Wait, a `restrict` float add),
 * moving the same data as the stepgraph library schedule of the same name; bench_exec --hand
 * runs it next to `stepgraph exec` and MPI's own collective.
 *
 * Usage: hand_NAME SIZES [ITERS [WARMUP [PASSES]]] under mpiexec. SIZES: comma-separated byte
 * counts, each the whole buffer per rank (the schedule's `size`: an all-reduce's vector, an
 * all-gather's gathered buffer, an all-to-all's send buffer), of f32 elements. Defaults: 20
 * iterations, 5 warm-up, 1 pass (stepgraph exec's defaults).
 *
 * Per size: the inputs are filled, the collective runs once and every rank checks its result
 * against the known inputs (a wrong element aborts the job, exit 1). Then per pass: inputs
 * refilled, WARMUP untimed runs, a barrier, ITERS timed runs; the pass's time is the slowest
 * rank's mean per iteration (as exec's slowest_mean in exec/exec_point.cpp); the size's time is
 * the fastest pass. Rank 0 prints JSON: [{"size_bytes": S, "time_us": T}, ...]. */
#ifndef BENCH_HAND_HARNESS_H
#define BENCH_HAND_HARNESS_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum hand_kind { HAND_ALLREDUCE, HAND_ALLGATHER, HAND_ALLTOALL };

/* One run of the collective on rank r of n: data holds count floats (the all-to-all's send
 * buffer), out count floats (the all-to-all's receive buffer), tmp count floats of scratch. */
typedef void (*hand_collective)(float* data, float* out, float* tmp, int count, int r, int n);

static inline int mod(int a, int n) { return ((a % n) + n) % n; }

static inline void add(float* restrict dst, const float* restrict src, int count) {
  for (int i = 0; i < count; ++i) dst[i] += src[i];
}

/* Small integers, so that every sum is exact in float and any order of adds gives it. */
static float value(int r, int s, int i) { return (float)((r * 7 + s * 3 + i) % 13); }

/* Rank r's inputs: the all-reduce's vector, the all-gather's own block (the rest -1), the
 * all-to-all's block for rank s at block s. */
static void fill(enum hand_kind kind, float* data, float* out, int count, int r, int n) {
  int b = count / n;
  for (int i = 0; i < count; ++i) {
    switch (kind) {
      case HAND_ALLREDUCE: data[i] = value(r, 0, i); break;
      case HAND_ALLGATHER: data[i] = i / b == r ? value(r, 0, i % b) : -1.0f; break;
      case HAND_ALLTOALL:
        data[i] = value(r, i / b, i % b);
        out[i] = -1.0f;
        break;
    }
  }
}

/* The number of elements of this rank's result that differ from what the inputs give; the first
 * one is printed. */
static long wrong(enum hand_kind kind, const float* data, const float* out, int count, int r, int n, const char* name) {
  int b = count / n;
  long bad = 0;
  for (int i = 0; i < count; ++i) {
    float want = 0, got = data[i];
    switch (kind) {
      case HAND_ALLREDUCE:
        for (int q = 0; q < n; ++q) want += value(q, 0, i);
        break;
      case HAND_ALLGATHER: want = value(i / b, 0, i % b); break;
      case HAND_ALLTOALL:
        want = value(i / b, r, i % b);
        got = out[i];
        break;
    }
    if (got != want && bad++ == 0)
      fprintf(stderr, "%s: WRONG result on rank %d, %d floats: element %d is %g, want %g\n", name, r, count, i, (double)got, (double)want);
  }
  return bad;
}

static float* must_alloc(int count) {
  float* p = aligned_alloc(64, ((size_t)count * sizeof(float) + 63) / 64 * 64);
  if (!p) {
    fprintf(stderr, "out of memory (%d floats)\n", count);
    MPI_Abort(MPI_COMM_WORLD, 4);
  }
  return p;
}

static int hand_main(int argc, char** argv, const char* name, enum hand_kind kind, hand_collective run) {
  MPI_Init(&argc, &argv);
  int r = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (argc < 2) {
    if (r == 0) fprintf(stderr, "usage: %s SIZES [ITERS [WARMUP [PASSES]]] (SIZES: bytes per rank, comma-separated)\n", name);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int iters = argc > 2 ? atoi(argv[2]) : 20, warmup = argc > 3 ? atoi(argv[3]) : 5, passes = argc > 4 ? atoi(argv[4]) : 1;
  if (iters < 1 || warmup < 0 || passes < 1) MPI_Abort(MPI_COMM_WORLD, 2);
  if (r == 0) printf("[");
  const char* p = argv[1];
  for (int first = 1; *p; first = 0) {
    char* end = NULL;
    long long bytes = strtoll(p, &end, 10);
    p = *end == ',' ? end + 1 : end;
    /* Every library schedule here cuts the buffer into N (or a power of two <= N) blocks of
     * size/N bytes: only sizes that split into whole floats per block are measured. */
    if (bytes <= 0 || bytes % (4LL * n) != 0 || bytes / 4 > 0x7fffffff) {
      if (r == 0) fprintf(stderr, "%s: size %lld bytes does not split into %d blocks of whole floats\n", name, bytes, n);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int count = (int)(bytes / 4);
    float *data = must_alloc(count), *out = must_alloc(count), *tmp = must_alloc(count);
    fill(kind, data, out, count, r, n);
    run(data, out, tmp, count, r, n);
    long bad = wrong(kind, data, out, count, r, n, name), all_bad = 0;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (all_bad) {
      if (r == 0) fprintf(stderr, "%s: %ld wrong elements at %lld bytes on %d processes\n", name, all_bad, bytes, n);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double best = 0;
    for (int pass = 0; pass < passes; ++pass) {
      fill(kind, data, out, count, r, n); /* the all-reduce's sums grow by N per run: start small */
      for (int k = 0; k < warmup; ++k) run(data, out, tmp, count, r, n);
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int k = 0; k < iters; ++k) run(data, out, tmp, count, r, n);
      double mine = (MPI_Wtime() - t0) / iters, slowest = 0;
      MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (pass == 0 || slowest < best) best = slowest;
    }
    if (r == 0) printf("%s{\"size_bytes\": %lld, \"time_us\": %.4f}", first ? "" : ", ", bytes, best * 1e6);
    free(data);
    free(out);
    free(tmp);
  }
  if (r == 0) printf("]\n");
  MPI_Finalize();
  return 0;
}

#endif
