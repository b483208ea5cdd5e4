// Random well-formed schedules for property tests: every index and rank is reduced modulo its
// bound, so elaboration never fails; values may still be undefined (that is the interpreter's
// business, and the properties hold regardless).
#pragma once
#include <cstdint>
#include <random>
#include <string>

namespace sgtest {

struct RandomSchedule {
  std::string text;
  uint32_t nranks = 2;
};

RandomSchedule random_schedule(std::mt19937_64& rng);

}  // namespace sgtest

namespace sgtest {

// Random MPI programs (local view only): blocking and nonblocking point-to-point with random
// peers, tags and wildcards, waits, barriers on random subsets of ranks, now and then a message
// and its receive of different sizes. Many deadlock, leave messages unmatched or race: they
// exercise every verdict.
RandomSchedule random_mpi_schedule(std::mt19937_64& rng);

// Messages of random sizes into a root's receives, with the verdict worked out independently.
// Ranks 1 .. N-1 each send one message of one or two chunks (tag 0 or 1) to rank 0, which posts
// N-1 blocking receives of one or two chunks, each from any source or one sender, with any tag or
// one; at least one is a wildcard (without one, a pair of two sizes is bad input). `expect` is
// "unmatched" if some order in which the receives can take the messages pairs two sizes or
// leaves a receive nothing it can take, else "ok" (under both semantics: nothing else can go
// wrong); `size_mismatch` says whether some order pairs two sizes, `stuck` whether some order
// leaves a receive without a message.
struct SizedSchedule {
  RandomSchedule program;
  std::string expect;
  bool size_mismatch = false, stuck = false;
  bool all_one_size = false;  // every message and receive the same size: no order can pair two sizes
};
SizedSchedule random_sized_schedule(std::mt19937_64& rng);

}  // namespace sgtest
