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
// peers, tags and wildcards, waits, barriers on random subsets of ranks. Many deadlock, leave
// messages unmatched or race: they exercise every verdict.
RandomSchedule random_mpi_schedule(std::mt19937_64& rng);

}  // namespace sgtest
