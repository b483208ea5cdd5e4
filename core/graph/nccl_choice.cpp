// NCCL's choice of algorithm mapped to the library's schedules: nccl_choice, apply_gpu_platform,
// nccl_default and nccl_named (NCCL's model itself is nccl_tuning.cpp).
//
// nccl_tune (nccl_tuning.cpp, NCCL v2.30.7's ncclTopoTuneModel and topoGetAlgoInfo) picks the
// algorithm, the protocol and the channel count; we run
//   ring all-reduce → nccl_ring_allreduce     tree all-reduce → nccl_tree_allreduce
//   NVLS all-reduce (one node) → nccl_nvls_allreduce
//   ring all-gather → nccl_ring_allgather     ring reduce-scatter → nccl_ring_reduce_scatter
//   ring broadcast → nccl_ring_bcast
// with channels = NCCL's nMaxChannels, chunks = NCCL's chunks per channel (the ring's loops;
// nccl_tuning.hpp), gpus = the node size. The protocol (LL, LL128, Simple) changes NCCL's
// estimate and its chunks, not the messages: the platform moves bytes at its links' speed, so
// LL's halved bandwidth (a flag beside every 8 bytes) is not simulated.

#include "core/graph/algorithm_choice.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "core/graph/nccl_tuning.hpp"

namespace sg {

AlgoChoice nccl_choice(uint32_t gpus_per_node) {
  AlgoChoice c;
  c.defaults = AlgoDefault::Nccl;
  c.gpus_per_node = gpus_per_node;
  return c;
}

void apply_gpu_platform(AlgoChoice& c, uint32_t gpus_per_node) {
  if (c.defaults == AlgoDefault::Auto) c.defaults = AlgoDefault::Nccl;
  if (c.gpus_per_node == 0) c.gpus_per_node = gpus_per_node;
}

void apply_gpu_platform(AlgoChoice& c, const NcclHardware& hw) {
  uint32_t given = c.gpus_per_node;  // --algo nccl:gpus=G wins over the platform's node size
  c.nccl_hw = hw;
  apply_gpu_platform(c, hw.gpus_per_node);
  if (given) c.gpus_per_node = given;
}

AlgoPick nccl_default(CollKind k, uint64_t bytes, uint32_t n, uint32_t gpus_per_node) {
  NcclHardware hw;
  hw.gpus_per_node = gpus_per_node;
  return nccl_default(k, bytes, n, hw, NcclEnables());
}

AlgoPick nccl_named(const std::string& schedule, uint64_t bytes, uint32_t n, const NcclHardware& hw, NcclEnables enables, bool& known) {
  known = false;
  // NCCL's function index (init.cc:52) and algorithm index (Tree 0, Ring 1, NVLS 4).
  const std::pair<CollKind, size_t> kinds[] = {
      {CollKind::Bcast, 0}, {CollKind::Allgather, 2}, {CollKind::ReduceScatter, 3}, {CollKind::Allreduce, 4}};
  const std::pair<NcclAlgo, size_t> algos[] = {{NcclAlgo::Tree, 0}, {NcclAlgo::Ring, 1}, {NcclAlgo::Nvls, 4}};
  for (auto [k, fn] : kinds)
    for (auto [a, ai] : algos) {
      if (schedule != std::string("nccl_") + nccl_algo_name(a) + "_" + coll_name(k)) continue;
      known = true;
      enables.algo[fn].fill(false);  // naming the schedule forces its algorithm, as NCCL_ALGO would
      enables.algo[fn][ai] = true;
      enables.algo_text = std::string(nccl_algo_name(a)) + " (the schedule named)";
      AlgoPick p = nccl_default(k, bytes, n, hw, enables);
      if (p.schedule != schedule) {
        p = AlgoPick{};
        p.why = std::string("NCCL cannot run ") + nccl_algo_name(a) + " " + coll_name(k) + " here (" + std::to_string(n) +
                " ranks on nodes of " + std::to_string(hw.gpus_per_node) + " " + (hw.name.empty() ? "GPUs" : hw.name + "s") +
                "): the schedule runs as written, without NCCL's costs";
      }
      return p;
    }
  return AlgoPick{};
}

AlgoPick nccl_default(CollKind k, uint64_t bytes, uint32_t n, const NcclHardware& hw, const NcclEnables& enables) {
  NcclTuning t = nccl_tune(k, bytes, n, hw, enables);
  AlgoPick p;
  if (t.none_enabled) {
    p.why = std::string("NCCL_ALGO=") + (enables.algo_text.empty() ? "(unset)" : enables.algo_text) +
            " and NCCL_PROTO=" + (enables.proto_text.empty() ? "(unset)" : enables.proto_text) + " leave " + coll_name(k) +
            " no algorithm and protocol stepgraph models (ring or tree; LL, LL128 or Simple): NCCL itself would fail the call "
            "(\"No algorithm/protocol available\")";
    return p;
  }
  if (!t.modelled) {
    switch (k) {
      case CollKind::Reduce: p.schedule = "binomial_reduce"; break;
      case CollKind::Alltoall: p.schedule = "linear_alltoall"; break;
      default: p.schedule = "dissemination_barrier"; break;
    }
    p.why = std::string("NCCL has no algorithm choice for ") + coll_name(k) + ": " + p.schedule;
    if (k == CollKind::Alltoall && hw.gpus_per_node >= 2 && n >= 2) {
      // nccl-tests' all-to-all is grouped sends and receives to every peer at once. A GPU's
      // messages to the peers of its node share its NVLink at the bandwidth NCCL's topology
      // gives it (links × SMxx_NVLINK_BW, topo.h), not the link's datasheet rate: NCCL's p2p
      // runs at most that fast (its channels per peer come from that path bandwidth,
      // ncclTopoGetNchannels). Across nodes the NIC binds first. NCCL's model has no latency
      // for p2p; its rounds each pay a step's (below).
      uint32_t peers = std::min(hw.gpus_per_node, n) - 1;
      p.costed = true;
      p.cost.channel_Bps = hw.nvlink_per_gpu * 1e9 / peers;
      // The group's rounds, one peer each (nccl-tests sends to every rank, itself included), their
      // step latencies one after another (nccl_tuning.hpp).
      p.cost.base_s = n * kP2pRoundUs * 1e-6;
      char bw[32], round[32];
      std::snprintf(bw, sizeof bw, "%.1f", hw.nvlink_per_gpu);
      std::snprintf(round, sizeof round, "%.1f", kP2pRoundUs);
      p.why += std::string(" (grouped sends and receives; a GPU's NVLink at NCCL's ") + bw + " GB/s, shared by its " +
               std::to_string(peers) + " peers in the node; " + std::to_string(n) + " rounds of a peer each, itself too, " + round +
               " us apiece)";
    }
    return p;
  }
  // The schedules are named nccl_ALGO_KIND, KIND as the language writes it.
  p.schedule = std::string("nccl_") + nccl_algo_name(t.algo) + "_" + coll_name(k);
  p.params = {{"channels", t.channels}, {"chunks", t.pieces}, {"gpus", t.topo.gpus}};
  // The winner's costs, per message: its bus bandwidth shared by the communicator's channels (a
  // channel is one CUDA block with a rate of its own, so a small call on fewer channels moves
  // less), its hop and base latencies.
  const NcclCost& w = t.cost[static_cast<size_t>(t.algo)][static_cast<size_t>(t.proto)];
  p.costed = true;
  p.cost.base_s = w.base_us * 1e-6;
  p.cost.hop_intra_s = w.hop_intra_us * 1e-6;
  p.cost.hop_inter_s = w.hop_inter_us * 1e-6;
  p.cost.channel_Bps = w.bus_GBps * 1e9 / std::max({1, t.channels, t.topo.comm_channels});
  if (t.algo == NcclAlgo::Nvls && n >= 2) {
    // NVLS written between GPUs (nccl_nvls_allreduce) sends to every other rank at once: its bus
    // bandwidth is shared by the N-1 peers too; and the switch's reduce and multicast leave each
    // GPU's NVLink (N+1)/N of the vector each way against the schedule's 2(N-1)/N, its wire.
    // (NVLS's model bandwidth is its graph's, run on nvlsChannels: those share it, not the
    // communicator's ring channels.)
    double nn = n;
    p.cost.wire = (nn + 1) / (2 * (nn - 1));
    p.cost.channel_Bps = w.bus_GBps * 1e9 / std::max(1, t.channels) / (nn - 1) * p.cost.wire;
    // NVLS's fixed cost a chunk-loop: smaller chunks reach less of it (nccl_tuning.hpp).
    p.cost.channel_Bps *= nvls_chunk_efficiency(t.chunk, std::min(t.topo.gpus, n), w.bus_GBps / std::max(1, t.channels));
  }
  // NCCL's FIFO: a connection has NCCL_STEPS = 8 slots (device.h:26), but one channel's chunks
  // go through its CUDA block one after another, at the channel's rate: one message (about one
  // chunk: the pieces follow NCCL's chunk size) per channel on a pair's wire at a time.
  p.cost.window = static_cast<uint32_t>(std::max(1, t.channels));
  char est[64];
  std::snprintf(est, sizeof est, "%.1f", t.time_us);
  auto count = [](uint32_t x, const char* one, const char* many) { return std::to_string(x) + " " + (x == 1 ? one : many); };
  p.why = std::string("NCCL 2.30 picks ") + nccl_algo_name(t.algo) + "/" + nccl_proto_name(t.proto) + " on " +
          count(static_cast<uint32_t>(t.channels), "channel", "channels") + " of " +
          count(static_cast<uint32_t>(t.pieces), "chunk", "chunks") + " (" + est + " us) for " + std::to_string(bytes) +
          " B at N = " + std::to_string(n) + " on " + count(t.topo.nodes, "node", "nodes") + " of " +
          (hw.name.empty() ? count(t.topo.gpus, "GPU", "GPUs") : count(t.topo.gpus, hw.name.c_str(), (hw.name + "s").c_str()));
  return p;
}

}  // namespace sg
