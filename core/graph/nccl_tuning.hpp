// NCCL's tuning model, as NCCL itself runs it to pick an algorithm, a protocol and a channel
// count for each collective (src/graph/tuning.cc and src/enqueue.cc, NCCL v2.30.7), on the
// machine a platform describes (NcclHardware: the GPU generation, its NVLinks, the NICs and
// their PCIe path, the host CPU; a `nodes:` platform is an H100 node, the presets name others,
// sim/platform/presets.cpp). nccl_choice.cpp turns its answer into a library schedule and
// its parameters; it is a file of its own because it is a model of another library's decisions,
// with its own tables and its own sources, like Open MPI's tables are.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "core/base/kinds.hpp"
#include "core/dsl/diagnostics.hpp"

namespace sg {

// What NCCL's topology search and tuning tables read off a machine. The defaults are an H100
// node of 8 GPUs with one 400 Gb/s NIC each behind a PCIe Gen5 x16 switch and Intel CPUs.
struct NcclHardware {
  // compCapIndex (tuning.cc:263-276): 0 Volta (sm70), 1 Ampere (sm80), 2 Hopper (sm90),
  // 3 Blackwell (sm100): which row of the per-architecture tables, and which speed arrays.
  int arch = 2;
  uint32_t gpus_per_node = 8;     // 0: one rank per node, no NVLink
  double nvlink_per_gpu = 370.8;  // GB/s into the NVSwitch as NCCL counts it: links × SMxx_NVLINK_BW (topo.h:17-35)
  uint32_t nics_per_node = 0;     // 0: one per GPU
  double nic_GBps = 50;           // per NIC: mbps / 8000 (topo.cc:415-418)
  double pcie_GBps = 48;          // the GPU–NIC path: PCIe width·speed/80 (topo.cc:545-557): Gen4 x16 24, Gen5 x16 48
  bool amd_cpu = false;           // AMD hosts: 2 µs net overhead and llMaxBws' AMD row across nodes (tuning.cc:228-233, 269-271)
  std::string name;               // the GPU, for the reasons printed ("… on 2 nodes of 8 H100s"); "" says GPUs
};

// NCCL_ALGO and NCCL_PROTO as NCCL reads them (tuning.cc parseList, l.55-136): per function
// (Broadcast, Reduce, AllGather, ReduceScatter, AllReduce), which algorithms (Tree, Ring,
// CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT) and protocols (LL, LL128, Simple) NCCL may
// use. Everything is enabled by default.
struct NcclEnables {
  std::array<std::array<bool, 7>, 5> algo;
  std::array<std::array<bool, 3>, 5> proto;
  std::string algo_text, proto_text;  // the variables as given ("" when unset)
  NcclEnables() {
    for (auto& f : algo) f.fill(true);
    for (auto& f : proto) f.fill(true);
  }
};

// Parses one variable's value into `out` with NCCL's grammar (v2.24 on): entries separated by
// ';', each `[function:]list`, every entry but the first with its function; a list is names
// separated by ',' (only those enabled) or '^' and names (all but those); names compare without
// case; spaces are not trimmed (NCCL fails on "ring, tree" and so does this). `protocols`:
// NCCL_PROTO's names, else NCCL_ALGO's. False with NCCL's own words for the error in `diags`
// (without a location: the caller knows where `text` came from) and the 0-based offset of the
// token at fault in `at` (NCCL refuses the communicator there).
bool parse_nccl_list(const std::string& text, bool protocols, NcclEnables& out, Diagnostics& diags, size_t& at);

// NCCL's algorithms and protocols that we model: NCCL_ALGO_TREE 0, NCCL_ALGO_RING 1 and
// NCCL_ALGO_NVLS (NCCL's 4, our 2: NVLink SHARP on one node of NVSwitch GPUs, sm90 on);
// NCCL_PROTO_LL 0, NCCL_PROTO_LL128 1, NCCL_PROTO_SIMPLE 2.
enum class NcclAlgo : uint8_t { Tree, Ring, Nvls };
enum class NcclProto : uint8_t { LL, LL128, Simple };
const char* nccl_algo_name(NcclAlgo a);    // "tree", "ring", "nvls"
const char* nccl_proto_name(NcclProto p);  // "LL", "LL128", "Simple"

// What NCCL's topology search (ncclTopoCompute) and channel setup (ncclTopoPostset) find on our
// node: per algorithm graph, the channel count and the bandwidth per channel, and the
// communicator's channel count.
struct NcclTopo {
  uint32_t ranks = 0, nodes = 0, gpus = 0;  // gpus: per node (the last node may have fewer ranks)
  int graph_channels = 0;                   // graphs[RING]->nChannels (the tree's is the same)
  double graph_bw = 0;                      // bwIntra = bwInter, GB/s per channel
  int comm_channels = 0;                    // comm->nChannels
  // The NVLS graph (one node of NVSwitch GPUs, sm90 on; 0 channels: no NVLS): its channels and
  // bandwidths (search.cc:1124-1138, 1254-1287), and the channels a call runs on (nvlsChannels,
  // nvls.cc:155-157).
  int nvls_graph_channels = 0;
  double nvls_bw_intra = 0, nvls_bw_inter = 0;
  int nvls_channels = 0;
};
NcclTopo nccl_topo(uint32_t ranks, const NcclHardware& hw);
NcclTopo nccl_topo(uint32_t ranks, uint32_t gpus_per_node);  // an H100 node of that many GPUs

// The model's cost of one algorithm and protocol: NCCL's latency (µs) and bandwidth (GB/s of
// algorithm bandwidth), and the time it predicts for the size (latency + bytes / bandwidth, with
// NCCL's corrections), or enabled = false where NCCL does not consider the pair.
struct NcclCost {
  bool enabled = false;
  double latency_us = 0, bw_GBps = 0, time_us = 0;
  // The same model taken apart for a simulation that moves the algorithm's messages itself
  // (sim: CallCost, core/graph/step_graph.hpp): the call's base latency, a hop's latency inside
  // a node and across nodes (both with the plateau factor where NCCL applies it), and the bus
  // bandwidth after the protocol's factors and caps (GB/s; the busiest rank's traffic rate).
  double base_us = 0, hop_intra_us = 0, hop_inter_us = 0, bus_GBps = 0;
};

struct NcclTuning {
  NcclTopo topo;
  std::array<std::array<NcclCost, 3>, 3> cost{};  // [NcclAlgo][NcclProto]
  bool modelled = false;                          // false: NCCL has no choice to make for this kind
  // NCCL_ALGO / NCCL_PROTO leave this kind no pair the model has (ring or tree, LL, LL128 or
  // Simple): NCCL itself fails the call ("No algorithm/protocol available", enqueue.cc:2052).
  bool none_enabled = false;
  NcclAlgo algo = NcclAlgo::Ring;
  NcclProto proto = NcclProto::Simple;
  double time_us = 0;  // the winner's
  int channels = 1;    // topoGetAlgoInfo's nMaxChannels for the winner
  // The winner's pipeline: the schedule's `chunks` (NCCL's chunks per channel, the ring's loops
  // of N chunks), at most kMaxPieces so that an expansion stays small.
  int pieces = 1;
  uint64_t chunk = 0;  // the winner's chunk in bytes (calcCollChunking's chunkSize)
};
constexpr int kMaxPieces = 64;

// NCCL's all-to-all (nccl-tests' alltoall_perf) is a group of sends and receives, which NCCL's
// tuning model does not cost. A rank's group runs in rounds, one peer a round (p2pSchedule:
// send to r+i, receive from r-i, i = 0 .. N-1), and a round's step waits on its connection's
// flags before the next: each round pays a Simple step's latency, hwLat[NVLINK][Ring][Simple] =
// 3.4 µs (tuning.cc:159), one after another. NCCL's own constant, not fitted; the measured tables
// show 3.4-5.7 µs a peer (docs/sim.md, "All-to-all on GPU nodes").
constexpr double kP2pRoundUs = 3.4;

// NVLS pays a fixed time a chunk, beyond NCCL's model: each loop of a channel (one chunk from
// every head) waits on the switch's reduce and multicast flags before the next. NCCL's bus
// bandwidth for NVLS (476 GB/s on H100) is what its kernel reaches at the default 128 KiB chunk;
// small calls run 64, 32 and 16 KiB chunks (enqueue.cc:2258-2275) and reach less. Chosen from a
// measurement, not NCCL's source: in together.ai's NVLS table of an H100 node the rate between
// sizes of one chunk is 481 GB/s of busbw at 128 KiB, 450 at 64 KiB and 381 at 32 KiB, which a
// cost of 4.2 and 5.5 µs a chunk-loop give; 5 µs it is (bench/nccl_accuracy/manifest.tsv: that
// table chosen from, xxrjun-cluster01's tested on; docs/sim.md, "NVLS on one node").
constexpr double kNvlsChunkCostUs = 5.0;
// The share of NCCL's NVLS bus bandwidth a call in chunks of `chunk` bytes reaches: 1 at 128 KiB,
// less below. heads: the GPUs in the node; channel_GBps: NCCL's bus bandwidth a channel.
double nvls_chunk_efficiency(uint64_t chunk, uint32_t heads, double channel_GBps);

// NCCL's pick for a collective of `bytes` per rank over n ranks on nodes of `gpus_per_node` GPUs
// (0: one rank per node, no NVLink). `bytes` is the library's `size` (the vector of an
// all-reduce or a reduce-scatter, the gathered buffer of an all-gather, the message of a
// broadcast), which is NCCL's own nBytes (ncclFuncMaxSendRecvCount). Modelled kinds: allreduce
// (ring, tree, NVLS on one node), allgather, reduce_scatter, bcast (ring).
NcclTuning nccl_tune(CollKind k, uint64_t bytes, uint32_t n, const NcclHardware& hw, const NcclEnables& enables = NcclEnables());
NcclTuning nccl_tune(CollKind k, uint64_t bytes, uint32_t n, uint32_t gpus_per_node);  // an H100 node of that many GPUs

}  // namespace sg
