// Which library algorithm replaces a collective step when collectives are expanded
// (expand_collectives.hpp): the user's choice per collective kind (`--algo allreduce=ring,…`),
// or else the algorithm Open MPI 4.1's tuned component would pick for that message size and
// communicator size, mapped to the closest algorithm the library has.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/base/kinds.hpp"

namespace sg {

constexpr size_t kCollKindCount = 7;  // CollKind::Allreduce … CollKind::Barrier

// One library algorithm for a collective kind: the short name `--algo` takes and the schedule.
struct AlgoName {
  const char* name;      // "ring"
  const char* schedule;  // "ring_allreduce"
  // Tried first when this one refuses the group size (its `require`), e.g. Bruck for recursive
  // doubling at N not a power of two, as Open MPI itself falls back; nullptr: the kind's
  // algorithms in order.
  const char* fallback;
};

// The library algorithms for a kind (the first is the fallback of last resort).
const std::vector<AlgoName>& algorithms_for(CollKind k);
// The entry for a schedule name, or nullptr.
const AlgoName* find_algorithm(CollKind k, const std::string& schedule);

// What --algo chose: per collective kind, a library schedule name, or "" for the default.
struct AlgoChoice {
  std::array<std::string, kCollKindCount> schedule;
  const std::string& operator[](CollKind k) const { return schedule[static_cast<size_t>(k)]; }
};

// Parses "allreduce=ring,bcast=binomial": collective kinds as the language writes them
// (allreduce bcast reduce allgather reduce_scatter alltoall barrier), each with a short name
// from algorithms_for() (a library schedule's full name is accepted too). Adds to `out`; on a
// mistake returns false with `err` saying what is wrong and what is allowed.
bool parse_algo_choice(const std::string& spec, AlgoChoice& out, std::string& err);

// An algorithm to run: a library schedule and parameters it takes beyond `size` and `root`
// (which the expansion sets from the collective), with the reason it was picked.
struct AlgoPick {
  std::string schedule;
  std::vector<std::pair<std::string, int64_t>> params;
  std::string why;
};

// The algorithm Open MPI 4.1's tuned component picks (coll_tuned_decision_fixed.c, fixed
// rules, commutative operations: every op of the language commutes) for a collective of `bytes`
// per member over n >= 2 ranks, mapped to the library. `bytes` is what the collective's chunk
// range holds on each member, which is what the library's `size` parameter means: the vector
// (allreduce, reduce, reduce_scatter), the message (bcast), the gathered buffer (allgather),
// the whole send buffer (alltoall); the tables' own measure is derived from it (allgather and
// alltoall decide on the per-rank block, bytes / n). Barrier ignores bytes.
AlgoPick openmpi_default(CollKind k, uint64_t bytes, uint32_t n);

// The kind's name in --algo and in the language ("reduce_scatter"), and the reverse.
bool parse_coll_kind(const std::string& s, CollKind& out);

}  // namespace sg
