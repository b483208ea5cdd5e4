// NCCL's tuning model, as NCCL itself runs it to pick an algorithm, a protocol and a channel
// count for each collective (src/graph/tuning.cc and src/enqueue.cc, NCCL v2.30.7), on the
// machine a `nodes:` platform describes: nodes of G GPUs on an NVSwitch, H100-class (NCCL's
// Hopper tables), one 400 Gb/s NIC per GPU. algorithm_choice.cpp turns its answer into a
// library schedule and its parameters; it is a file of its own because it is a model of another
// library's decisions, with its own tables and its own sources, like Open MPI's tables are.
#pragma once
#include <array>
#include <cstdint>

#include "core/base/kinds.hpp"

namespace sg {

// NCCL's algorithm and protocol numbers (NCCL_ALGO_TREE 0, NCCL_ALGO_RING 1; NCCL_PROTO_LL 0,
// NCCL_PROTO_LL128 1, NCCL_PROTO_SIMPLE 2): the only ones we model.
enum class NcclAlgo : uint8_t { Tree, Ring };
enum class NcclProto : uint8_t { LL, LL128, Simple };
const char* nccl_algo_name(NcclAlgo a);    // "tree", "ring"
const char* nccl_proto_name(NcclProto p);  // "LL", "LL128", "Simple"

// What NCCL's topology search (ncclTopoCompute) and channel setup (ncclTopoPostset) find on our
// node: per algorithm graph, the channel count and the bandwidth per channel, and the
// communicator's channel count.
struct NcclTopo {
  uint32_t ranks = 0, nodes = 0, gpus = 0;  // gpus: per node (the last node may have fewer ranks)
  int graph_channels = 0;                   // graphs[RING]->nChannels (the tree's is the same)
  double graph_bw = 0;                      // bwIntra = bwInter, GB/s per channel
  int comm_channels = 0;                    // comm->nChannels
};
NcclTopo nccl_topo(uint32_t ranks, uint32_t gpus_per_node);

// The model's cost of one algorithm and protocol: NCCL's latency (µs) and bandwidth (GB/s of
// algorithm bandwidth), and the time it predicts for the size (latency + bytes / bandwidth, with
// NCCL's corrections), or enabled = false where NCCL does not consider the pair.
struct NcclCost {
  bool enabled = false;
  double latency_us = 0, bw_GBps = 0, time_us = 0;
};

struct NcclTuning {
  NcclTopo topo;
  std::array<std::array<NcclCost, 3>, 2> cost{};  // [NcclAlgo][NcclProto]
  bool modelled = false;                          // false: NCCL has no choice to make for this kind
  NcclAlgo algo = NcclAlgo::Ring;
  NcclProto proto = NcclProto::Simple;
  double time_us = 0;  // the winner's
  int channels = 1;    // topoGetAlgoInfo's nMaxChannels for the winner
  // The winner's pipeline: the schedule's `chunks` (NCCL's chunks per channel, the ring's loops
  // of N chunks), at most kMaxPieces so that an expansion stays small.
  int pieces = 1;
};
constexpr int kMaxPieces = 64;

// NCCL's pick for a collective of `bytes` per rank over n ranks on nodes of `gpus_per_node` GPUs
// (0: one rank per node, no NVLink). `bytes` is the library's `size` (the vector of an
// all-reduce or a reduce-scatter, the gathered buffer of an all-gather, the message of a
// broadcast), which is NCCL's own nBytes (ncclFuncMaxSendRecvCount). Modelled kinds: allreduce
// (ring, tree), allgather, reduce_scatter, bcast (ring).
NcclTuning nccl_tune(CollKind k, uint64_t bytes, uint32_t n, uint32_t gpus_per_node);

}  // namespace sg
