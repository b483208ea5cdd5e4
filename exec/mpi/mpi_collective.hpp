// MPI's own collectives, the baseline `exec --compare native` times and `--check` compares with:
// the collective a postcondition names, run by the MPI library on the same bytes, and Open MPI's
// tuned-algorithm settings (--native-algo) to pick which algorithm the library runs.
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "core/graph/step_graph.hpp"

namespace sg::exec {

// --native-algo NAME (every collective that has an algorithm of that name) or COLL=NAME|NUMBER:
// sets Open MPI 4.1's coll_tuned variables in the environment, which MPI_Init reads, so it must
// run before MPI_Init. False with the reason in `diags` for an unknown collective or algorithm.
bool set_native_algo(const std::string& spec, Diagnostics& diags);

// MPI's own collective for a postcondition's kind on `bytes` per rank of one element type.
struct MpiCollective {
  ExpectKind kind = ExpectKind::Nothing;
  int root = 0;
  std::vector<unsigned char> a, b;  // the buffer (in place), and the receive buffer where MPI needs one
  int count = 0, per = 0;           // elements in all, and per rank
  MPI_Datatype t = MPI_FLOAT;
  MPI_Op op = MPI_SUM;
  // Whether MPI has a collective for this postcondition.
  bool available() const;
  void run(MPI_Comm c);
};

// Where MPI's own collective runs for a schedule: on the groups of its postconditions, one call
// per group, as the schedule does it (seed 002's all-reduce in every model-parallel group is
// MPI_Allreduce on each group's communicator, not one over the world). Needs postconditions of
// one kind on groups of one size that no rank shares; otherwise `why` says so and nothing runs.
struct MpiCollectiveGroup {
  const Expectation* x = nullptr;  // this rank's postcondition (null: this rank is in none)
  MPI_Comm comm = MPI_COMM_NULL;   // its group's communicator (owned; null when x is)
  int size = 0;                    // ranks per group
  int index = -1;                  // this rank's place in its group
  int root = 0;                    // the postcondition's root, as a place in its group (0 when it has none)
  std::string why;                 // non-empty: no native collective, and why (the same on every rank)
  MpiCollectiveGroup() = default;
  MpiCollectiveGroup(const MpiCollectiveGroup&) = delete;
  MpiCollectiveGroup& operator=(const MpiCollectiveGroup&) = delete;
  ~MpiCollectiveGroup();
};
// Collective over `world` (every rank calls it).
void mpi_collective_group(const StepGraph& g, MPI_Comm world, MpiCollectiveGroup& ng);

// The collective for `kind` on `bytes` per rank of type t, with op and root; zeroed buffers.
MpiCollective mpi_collective_for(ExpectKind kind, DType t, ReduceOp op, int root, uint64_t bytes, int size);

}  // namespace sg::exec
