// MPI's own collectives, the baseline `exec --compare native` times and `--check` compares with:
// the collective a postcondition names, run by the MPI library on the same bytes, and Open MPI's
// tuned-algorithm settings (--native-algo) to pick which algorithm the library runs.
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

#include "core/graph/step_graph.hpp"

namespace sg::exec {

// --native-algo NAME (every collective that has an algorithm of that name) or COLL=NAME|NUMBER:
// sets Open MPI 4.1's coll_tuned variables in the environment, which MPI_Init reads, so it must
// run before MPI_Init. False with the reason for an unknown collective or algorithm.
bool set_native_algo(const std::string& spec, std::string& err);

// MPI's own collective for a postcondition's kind on `bytes` per rank of one element type.
struct Native {
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

// The collective for `kind` on `bytes` per rank of type t, with op and root; zeroed buffers.
Native native_for(ExpectKind kind, DType t, ReduceOp op, int root, uint64_t bytes, int size);

}  // namespace sg::exec
