// Which library algorithm replaces a collective step when collectives are expanded
// (expand_collectives.hpp): the user's choice per collective kind (`--algo allreduce=ring,…`),
// or else a library's own choice for that message size and communicator size, mapped to the
// closest algorithm the library has: Open MPI 4.1's tuned component (CPU clusters, the default)
// or NCCL's tuning model (GPU platforms: `--algo nccl`, nccl_tuning.hpp).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/base/kinds.hpp"
#include "core/dsl/diagnostics.hpp"
#include "core/graph/nccl_tuning.hpp"
#include "core/graph/step_graph.hpp"

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

// Whose decisions pick the algorithm of a kind --algo does not name. Auto is Open MPI's unless
// the caller knows better: sim makes it NCCL's on a GPU platform (apply_gpu_platform).
enum class AlgoDefault : uint8_t { Auto, OpenMpi, Nccl };

// What --algo chose: per collective kind, a library schedule name, or "" for the default; the
// default; and the platform's shape, which NCCL's choice and its schedules need.
struct AlgoChoice {
  std::array<std::string, kCollKindCount> schedule;
  AlgoDefault defaults = AlgoDefault::Auto;
  // GPUs per node (ranks gpus·k … gpus·k + gpus - 1 share node k's NVLink), from the `nodes:`
  // platform or `--algo nccl:gpus=G`; 0 on a CPU platform, where NCCL's choice takes every
  // rank for a node of its own. It also reaches the NCCL schedules' `gpus` when named by --algo.
  uint32_t gpus_per_node = 0;
  // The machine NCCL's model runs on (its gpus_per_node is the field above, which the
  // expansion narrows to a group's members on a node), and NCCL_ALGO / NCCL_PROTO.
  NcclHardware nccl_hw;
  NcclEnables nccl_enables;
  const std::string& operator[](CollKind k) const { return schedule[static_cast<size_t>(k)]; }
};

// Parses "allreduce=ring,bcast=binomial": collective kinds as the language writes them
// (allreduce bcast reduce allgather reduce_scatter alltoall barrier), each with a short name
// from algorithms_for() (a library schedule's full name is accepted too), and the words
// `openmpi` and `nccl[:gpus=G]`, which set the default for the kinds not named (NCCL's with G
// GPUs per node). Adds to `out`; on a mistake returns false with an error in `diags` saying what
// is wrong and what is allowed.
bool parse_algo_choice(const std::string& spec, AlgoChoice& out, Diagnostics& diags);

// NCCL's choice for every kind on nodes of `gpus_per_node` GPUs: what `--algo nccl:gpus=G` gives.
AlgoChoice nccl_choice(uint32_t gpus_per_node);

// What a simulator does on a GPU platform of nodes with `gpus_per_node` GPUs: the kinds --algo
// did not name follow NCCL unless --algo said `openmpi`, and the node size is the platform's
// unless --algo said `nccl:gpus=G` (gpus_per_node already set). Per-kind names stay as they are.
void apply_gpu_platform(AlgoChoice& c, uint32_t gpus_per_node);
// The same for a platform that says what its GPUs are (a preset: sim/platform/presets.cpp).
void apply_gpu_platform(AlgoChoice& c, const NcclHardware& hw);

// An algorithm to run: a library schedule and parameters it takes beyond `size` and `root`
// (which the expansion sets from the collective), with the reason it was picked.
struct AlgoPick {
  std::string schedule;
  std::vector<std::pair<std::string, int64_t>> params;
  std::string why;
  // NCCL's picks: what its protocol adds to the schedule's messages (a simulation applies it).
  bool costed = false;
  CallCost cost;
};

// The algorithm Open MPI 4.1's tuned component picks (coll_tuned_decision_fixed.c, fixed
// rules, commutative operations: every op of the language commutes) for a collective of `bytes`
// per member over n >= 2 ranks, mapped to the library. `bytes` is what the collective's chunk
// range holds on each member, which is what the library's `size` parameter means: the vector
// (allreduce, reduce, reduce_scatter), the message (bcast), the gathered buffer (allgather),
// the whole send buffer (alltoall); the tables' own measure is derived from it (allgather and
// alltoall decide on the per-rank block, bytes / n). Barrier ignores bytes.
AlgoPick openmpi_default(CollKind k, uint64_t bytes, uint32_t n);

// The algorithm NCCL's tuning model picks (nccl_tuning.hpp: ring or tree, with its protocol and
// channel count) for the same collective over n >= 2 ranks on nodes of `gpus_per_node` GPUs (0:
// one rank per node), as an NCCL schedule with `channels`, `chunks` (NCCL's pipeline) and
// `gpus`. Kinds NCCL has no algorithm choice for: reduce (our only reduce, binomial), alltoall
// (linear: NCCL posts every peer's send and receive at once), barrier (dissemination).
AlgoPick nccl_default(CollKind k, uint64_t bytes, uint32_t n, uint32_t gpus_per_node);
// The same on the machine `hw` (its gpus_per_node), with NCCL_ALGO / NCCL_PROTO applied; a kind
// they leave no pair the model has gets an empty schedule and the reason in `why`.
AlgoPick nccl_default(CollKind k, uint64_t bytes, uint32_t n, const NcclHardware& hw, const NcclEnables& enables);

// A library NCCL schedule named by the user (`sim nccl_ring_allreduce`): what NCCL does when
// NCCL_ALGO forces that algorithm (NCCL_PROTO as `enables` says), with its channels, chunks and
// costs for `bytes` over n ranks on `hw`. `known` false: `schedule` is none of NCCL's; a pick with
// an empty schedule: NCCL cannot run that algorithm there, with the reason in `why`.
AlgoPick nccl_named(const std::string& schedule, uint64_t bytes, uint32_t n, const NcclHardware& hw, NcclEnables enables, bool& known);

// The pick for a kind --algo did not name: NCCL's or Open MPI's, as c.defaults says.
AlgoPick default_pick(const AlgoChoice& c, CollKind k, uint64_t bytes, uint32_t n);

// The kind's name in --algo and in the language ("reduce_scatter"), and the reverse.
bool parse_coll_kind(const std::string& s, CollKind& out);

}  // namespace sg
