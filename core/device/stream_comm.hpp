// A stream-ordered transport: transfers enqueued on the device's transfer lane in groups, matched
// between two ranks by the order they are issued in, and free to block until every peer of the
// group has issued its side: NCCL's model (exec/cuda/nccl_comm.hpp), and an MPI stand-in that
// keeps the same rules on host memory (exec/mpi/mpi_stream_comm.hpp) so that the executor's
// stream-ordered path (core/graph/stream_order.hpp) is tested on machines without a GPU.
//
// In core/ for the same reason as DeviceOps: the executor (exec/) drives it and exec/cuda
// implements it, and backends know only core/.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/base/kinds.hpp"
#include "core/dsl/diagnostics.hpp"
#include "core/graph/step_graph.hpp"

namespace sg {

class StreamComm {
 public:
  virtual ~StreamComm() = default;
  virtual std::string name() const = 0;  // "NCCL 2.28.9", "MPI standing in for NCCL"
  // A communicator over the world ranks start + k·stride, k < count. Collective over every world
  // rank, called for the same groups in the same order everywhere (`member`: this rank is in it).
  // id: what collective() takes.
  virtual bool add_group(uint32_t start, uint32_t count, uint32_t stride, bool member, int& id, Diagnostics& diags) = 0;
  // A group of transfers: between group_start and group_end they progress together.
  virtual bool group_start(Diagnostics& diags) = 0;
  // Enqueues the group (NCCL) or runs it to completion (the MPI stand-in, at most timeout_s).
  virtual bool group_end(double timeout_s, Diagnostics& diags) = 0;
  // Point-to-point with world ranks; both sides give the same byte count.
  virtual bool send(const unsigned char* p, size_t bytes, uint32_t peer, Diagnostics& diags) = 0;
  virtual bool recv(unsigned char* p, size_t bytes, uint32_t peer, Diagnostics& diags) = 0;
  // A collective on group `comm` (add_group's id), `count` elements of `type` per member block
  // (the whole buffer for allreduce, bcast and reduce). In place: allgather and reduce-scatter
  // read and write this member's block of `p`; alltoall reads `in` and writes `p`; reduce's
  // result lands in p on the root (`root`: its index in the group).
  struct Coll {
    CollKind kind = CollKind::Barrier;
    ReduceOp op = ReduceOp::Sum;
    DType type = DType::F32;
    int comm = 0;
    int root = 0;
    int index = 0;  // this member's index in the group
    int members = 0;
    unsigned char* p = nullptr;
    const unsigned char* in = nullptr;  // alltoall's input
    size_t count = 0;
  };
  virtual bool collective(const Coll& c, Diagnostics& diags) = 0;
};

}  // namespace sg
