/* What every MPI program of bench/sim_vs_smpi shares: the size argument, the data each rank
 * starts with, a common start instant and the report. Compiled by smpicc, run by smpirun.
 *
 * Timing: every rank starts the collective at the same simulated instant, as every rank of a
 * `stepgraph sim` run starts at time 0. After MPI_Barrier the ranks leave at different simulated
 * times, so each reads the simulated clock (MPI_Wtime), the ranks agree on the latest reading
 * (MPI_Allreduce, MAX) and each sleeps (nanosleep, which SMPI turns into a simulated sleep) until
 * that reading + 10 ms. The collective's time is the latest end minus the earliest start, over
 * the ranks; rank 0 prints it, once every rank has slept to 1 s after the start, so that no
 * message of the report shares a link with the collective. */
#ifndef BENCH_SMPI_HARNESS_H
#define BENCH_SMPI_HARNESS_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The byte at offset i of rank r's initial buffer. */
static unsigned char contrib(int r, long long i) { return (unsigned char)(r * 37 + i * 11 + 5); }

static long long size_arg(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SIZE_BYTES\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return atoll(argv[1]);
}

static void sleep_for(double d) {
  struct timespec ts;
  ts.tv_sec = (time_t)d;
  ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9 + 0.5);
  nanosleep(&ts, NULL);
}

static double aligned_start(void) {
  MPI_Barrier(MPI_COMM_WORLD);
  double mine = MPI_Wtime(), latest = 0;
  MPI_Allreduce(&mine, &latest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  double t0 = latest + 0.01, now = MPI_Wtime();
  if (now >= t0) {
    fprintf(stderr, "aligned_start: the agreement took over 10 ms of simulated time\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  sleep_for(t0 - now);
  return MPI_Wtime();
}

/* Rank 0 prints "smpi_time_s=T check=ok|FAILED": T = max(end) - min(start) over the ranks. The
 * report's own messages must not share links with the collective of the ranks still in it, so
 * every rank first sleeps until 1 s of simulated time after the start (the collectives here take
 * milliseconds at most). */
static void report(double start, double end, int ok) {
  if (end - start >= 1.0) {
    fprintf(stderr, "report: the collective took over 1 s of simulated time\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  sleep_for(start + 1.0 - MPI_Wtime());
  double first = 0, last = 0;
  int all_ok = 0, rank = 0;
  MPI_Reduce(&start, &first, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
  MPI_Reduce(&end, &last, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) printf("smpi_time_s=%.17g check=%s\n", last - first, all_ok ? "ok" : "FAILED");
}

static void* must_alloc(long long bytes) {
  void* p = malloc(bytes > 0 ? (size_t)bytes : 1);
  if (!p) {
    fprintf(stderr, "out of memory (%lld bytes)\n", bytes);
    MPI_Abort(MPI_COMM_WORLD, 4);
  }
  return p;
}

#endif
