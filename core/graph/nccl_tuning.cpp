// NCCL's tuning model (see nccl_tuning.hpp), transcribed from NCCL v2.30.7
// (github.com/NVIDIA/nccl, commit 5067397c, makefiles/version.mk 2.30.7). Line numbers are that
// version's.
//
// NCCL decides in three steps, and so do we:
//
// 1. Topology (once per communicator). ncclTopoCompute (src/graph/search.cc) searches, per
//    algorithm, for channels of equal bandwidth through the node, trying the speeds of
//    sm90SpeedArrayIntra {60, 50, 40, …} on one node and sm90SpeedArrayInter {48, 45, …} across
//    nodes (lines 1057–1059), starting with the first one that fits the node's best path
//    (1170–1174), as many channels as the links carry; ncclTopoDupChannels (1036–1049) then
//    doubles the channels at half the bandwidth unless the speed is below 25 GB/s, or, on
//    Hopper, below 50 GB/s with more than 4 channels. On our node (H100: 18 NVLinks of
//    SM90_NVLINK_BW = 20.6 GB/s, src/graph/topo.h:22, so 370.8 GB/s per GPU into the NVSwitch;
//    a NIC behind a PCIe Gen5 x16 switch, 240·16/80 = 48 GB/s, src/graph/topo.cc:554–657,
//    below the 400 Gb/s = 50 GB/s NIC) that gives
//      one node: speed 60, ⌊370.8 / 60⌋ = 6 channels, doubled: 12 channels of 30 GB/s;
//      several nodes: speed 48, one channel per NIC (G), limited by the NVLinks (each GPU relays
//        (G-1)/G of the channels): G channels of 48 GB/s for G ≤ 8, doubled at 24 GB/s for G ≤ 4.
//    The tree's graph is searched with the ring's channel count (src/init.cc:1185–1186) and finds
//    the same. ncclTopoPostset doubles the channels once more (src/graph/connect.cc:460), and on
//    Hopper across nodes again while below 16 with more than 45 GB/s (481–483): comm->nChannels.
//    (The search proper explores more than this; these are its results for the machines the
//    `nodes:` platform describes, which match NCCL's logs for H100 nodes: "maxBw 48.0 totalBw
//    370.8", 24 channels on one node.)
//
// 2. Cost model (ncclTopoTuneModel, src/graph/tuning.cc:243–438, with the default constants of
//    lines 148–212; Hopper, so compCapIndex 2; an Intel x86 host, so the LL bandwidth across
//    nodes is llMaxBws[0][·] and the net overhead 1 µs, 228–233). Per collective, algorithm a
//    and protocol p:
//      nsteps = 2(n-1) all-reduce, n-1 all-gather and reduce-scatter, n broadcast (289–291)
//      busBw  = graph channels × graph bandwidth (306, 324), then (327–337)
//               ring LL: min(llMaxBw, busBw/2); ring LL128: min(0.92·busBw, ch × 36.7);
//               tree all-reduce: min(0.92·busBw, ch × perChMaxTreeBw) and then
//               tree LL: min(busBw/3.8, llMaxBw); tree LL128: min(busBw × (7/9 on one node,
//               120/128 across), ch × perChMaxTreeLL128Bw)
//      bw     = busBw × n/nsteps for the ring, busBw/2 for the tree (376–382)
//      latency = baseLatencies[a][p] (384) plus
//               ring broadcast: nsteps × hwLatency (395–402; the search's channels differ, so
//                 Simple takes the tree's NET/NVLink latency);
//               other rings: (nsteps - nInterSteps) × max(intraLat, netOverhead) +
//                 nInterSteps × interLat, nInterSteps = 2(nodes-1) all-reduce, nodes-1 others,
//                 netOverhead 1 µs (3 µs with Simple) across nodes (404–412);
//               tree all-reduce: 2·((n/nodes - 1)·intraLat + ⌊log2 nodes⌋·interLat) (415–417)
//               where intraLat = hwLatencies[NVLINK][a][p], interLat = hwLatencies[NET][a][p]
//               (the tree's with one GPU per node), both plus the NIC's latency, 0 for IB
//               (385–391; src/transport/net_ib/init.cc:558).
//    Only the ring and the tree are modelled, and only where NCCL considers them (294–298): the
//    tree for all-reduce, the ring for all four. NVLS and NVLS tree need NVLink SHARP, CollNet
//    a SHARP network, PAT (all-gather and reduce-scatter with one GPU per node) an algorithm the
//    library does not have: the platform models none of them, as if NCCL_ALGO=ring,tree. LL128
//    is on (Hopper, NVLink inside, the NIC within PXN: 518–536).
//
// 3. Choice (per call, src/enqueue.cc): ncclTopoGetAlgoTime (tuning.cc:630–655) gives each pair
//    the time latency + nBytes / (1000 · bw) µs, the tree's all-reduce bandwidth scaled by
//    treeCorrectionFactor[p][log2(nBytes/64)] (620–628, 639–642), the ring's Simple all-reduce
//    latency × 1.4 across nodes once nBytes / (nChannels · n) ≥ 64 (647–650); topoGetAlgoInfo
//    takes the least time (enqueue.cc:2035–2044), then lowers the channel count while
//    nBytes < nc × nThreads × threadThreshold (2092–2096): threads 512 (LL128: 640,
//    tuning.cc:244–257), thresholds 8 (LL, × n for the ring), 8 (LL128), 64 (Simple)
//    (src/include/comm.h:49–51, tuning.cc:588–593).
//
// The pipeline depth we give a schedule is NCCL's chunk per channel (calcCollChunking,
// enqueue.cc:2222–2227, 2286–2294): a FIFO step is buffSize / 8 (Simple 4 MiB, LL 512 KiB,
// LL128 4.7 MiB: src/init.cc:810–813); the ring's all-reduce, all-gather and reduce-scatter move
// 4 steps a chunk with Simple, everything else 1; LL carries half a step, LL128 15/16 of one.
// LL and LL128 forward each line as it lands, finer than a chunk: for them our pipeline is
// coarser than NCCL's.
#include "core/graph/nccl_tuning.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace sg {

namespace {

constexpr int kTree = 0, kRing = 1;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kNvlink = 0, kNet = 2;  // NCCL_HW_NVLINK, NCCL_HW_NET (PCI is 1)

// tuning.cc:148–212, the Tree and Ring rows, Hopper's columns where there is a choice.
// clang-format off
constexpr double kBaseLat[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};    // 151: [Tree, Ring][LL, LL128, Simple]
constexpr double kHwLat[3][2][3] = {{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},   // 159: NVLINK
                                    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},    // 165: PCI
                                    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}}};   // 171: NET
constexpr double kLlMaxBw[2][3] = {{39.0, 39.0, 20.4}, {141.0, 45.0, 35.0}};  // 179 (Intel CPUs), 181 (Hopper); [·][nodes 1, 2, more]
constexpr double kPerChRingLL128Bw[3] = {36.7, 36.7, 36.7};                   // 188, Hopper
constexpr double kPerChTreeLL128Bw[3] = {36.7, 36.7, 29.0};                   // 195, Hopper
constexpr double kPerChTreeBw[3] = {38.7, 41.4, 36.0};                        // 202, Hopper
// 623–627: powers of two from 64 B to 256 MiB, per protocol.
constexpr double kTreeCorrection[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
// clang-format on

constexpr double kNvlinkPerGpu = 18 * 20.6;  // 18 NVLinks × SM90_NVLINK_BW (topo.h:22)
constexpr double kFirstSpeedIntra = 60.0;    // sm90SpeedArrayIntra[0] (search.cc:1057)
constexpr double kFirstSpeedInter = 48.0;    // sm90SpeedArrayInter[0] = the GPU–NIC path (1058)
constexpr int kMaxGraphChannels = 32;        // MAXCHANNELS / 2 (init.cc:1177)
constexpr int kMaxChannels = 64;             // MAXCHANNELS (src/include/device.h:91)
constexpr double kNetOverhead = 1.0;         // Intel x86 (tuning.cc:230)

// log2Down (src/include/bitops.h:292): -1 for 0.
int log2i(uint64_t x) {
  int r = -1;
  while (x) {
    x >>= 1;
    ++r;
  }
  return r;
}

uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// ncclTopoDupChannels (search.cc:1036–1049) on Hopper.
void dup_channels(int& ch, double& bw) {
  if (bw < 25.0) return;
  if (bw < 50.0 && ch > 4) return;
  int dup = std::min(2 * ch, kMaxGraphChannels);
  bw /= static_cast<double>(cdiv(dup, ch));
  ch = dup;
}

// NCCL's chunk for the pieces we cut a channel's data into (calcCollChunking).
uint64_t chunk_bytes(CollKind k, int algo, int proto, const NcclTopo& t, uint64_t bytes, int channels) {
  constexpr uint64_t kStepLL = 524288 / 8, kStepLL128 = 4915200 / 8, kStepSimple = 4194304 / 8;
  if (proto == kLL) return kStepLL / 2;
  if (proto == kLL128) {
    uint64_t c = kStepLL128 / 16 * 15;
    if (algo == kTree) {  // enqueue.cc:2286–2294
      double ppn = static_cast<double>(t.ranks) / t.nodes;
      double steps = 1 + log2i(t.nodes) + 0.1 * ppn;
      while (static_cast<double>(bytes / (channels * c)) < steps * 64 / ppn && c > 131072) c /= 2;
      while (static_cast<double>(bytes / (channels * c)) < steps * 16 / ppn && c > 32768) c /= 2;
    }
    return c;
  }
  bool four = algo == kRing && k != CollKind::Bcast;  // ALLREDUCE/ALLGATHER/REDUCESCATTER_CHUNKSTEPS
  return kStepSimple * (four ? 4 : 1);
}

}  // namespace

const char* nccl_algo_name(NcclAlgo a) { return a == NcclAlgo::Tree ? "tree" : "ring"; }
const char* nccl_proto_name(NcclProto p) {
  switch (p) {
    case NcclProto::LL: return "LL";
    case NcclProto::LL128: return "LL128";
    case NcclProto::Simple: return "Simple";
  }
  return "?";
}

NcclTopo nccl_topo(uint32_t ranks, uint32_t gpus_per_node) {
  NcclTopo t;
  t.ranks = ranks;
  t.gpus = std::max<uint32_t>(1, gpus_per_node);
  t.nodes = static_cast<uint32_t>(cdiv(std::max<uint32_t>(1, ranks), t.gpus));
  int ch;
  double bw;
  if (t.nodes == 1) {
    bw = kFirstSpeedIntra;
    ch = std::min(kMaxGraphChannels, static_cast<int>(kNvlinkPerGpu / bw));
  } else {
    bw = kFirstSpeedInter;
    int g = static_cast<int>(std::min(t.gpus, ranks));
    ch = g;
    if (g > 1) ch = std::min(g, static_cast<int>(kNvlinkPerGpu / (bw * (g - 1) / g)));
    ch = std::min(ch, kMaxGraphChannels);
  }
  dup_channels(ch, bw);
  t.graph_channels = ch;
  t.graph_bw = bw;
  int comm = std::min(kMaxChannels, 2 * ch);
  if (t.nodes > 1 && bw > 45.0 && comm < 16) comm = std::min(kMaxChannels, 2 * comm);
  t.comm_channels = comm;
  return t;
}

NcclTuning nccl_tune(CollKind k, uint64_t bytes, uint32_t n, uint32_t gpus_per_node) {
  NcclTuning r;
  r.topo = nccl_topo(n, gpus_per_node);
  const NcclTopo& t = r.topo;
  bool allreduce = k == CollKind::Allreduce;
  r.modelled = allreduce || k == CollKind::Allgather || k == CollKind::ReduceScatter || k == CollKind::Bcast;
  if (!r.modelled || n < 2) return r;

  int nodes = static_cast<int>(t.nodes);
  int nranks = static_cast<int>(n);
  int index2 = nodes <= 2 ? nodes - 1 : 2;
  double llMaxBw = kLlMaxBw[nodes == 1 ? 1 : 0][index2];
  int hw = nodes == 1 ? kNvlink : kNet;
  bool ppn1 = nodes == nranks;
  int nsteps = allreduce ? 2 * (nranks - 1) : k == CollKind::Bcast ? nranks : nranks - 1;
  double ch = t.graph_channels;

  for (int a : {kTree, kRing}) {
    if (a == kTree && !allreduce) continue;  // tuning.cc:294–298
    for (int p : {kLL, kLL128, kSimple}) {
      double busBw = ch * t.graph_bw;
      if (a == kRing && p == kLL) busBw = std::min(llMaxBw, busBw * .5);
      if (a == kRing && p == kLL128) busBw = std::min(busBw * .92, ch * kPerChRingLL128Bw[index2]);
      if (a == kTree && allreduce) busBw = std::min(busBw * .92, ch * kPerChTreeBw[index2]);
      if (a == kTree && p == kLL) busBw = std::min(busBw * 1.0 / 3.8, llMaxBw);
      if (a == kTree && p == kLL128) busBw = std::min(busBw * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), ch * kPerChTreeLL128Bw[index2]);
      double bw = busBw * (a == kRing ? static_cast<double>(nranks) / nsteps : .5);

      double lat = kBaseLat[a][p];
      double intraLat = kHwLat[kNvlink][a][p];
      double interLat = ppn1 ? kHwLat[kNet][kTree][p] : kHwLat[kNet][a][p];  // + latencyInter, 0 for IB
      if (a == kRing) {
        if (k == CollKind::Bcast) {
          double l = p == kSimple ? kHwLat[hw][kTree][p] : kHwLat[hw][a][p];
          lat += nsteps * l;
        } else {
          double overhead = nodes > 1 ? kNetOverhead * (p == kSimple ? 3 : 1) : 0.0;
          intraLat = std::max(intraLat, overhead);
          int inter = nodes == 1 ? 0 : allreduce ? 2 * (nodes - 1) : nodes - 1;
          lat += (nsteps - inter) * intraLat + inter * interLat;
        }
      } else {
        lat += 2 * ((nranks / nodes - 1) * intraLat + log2i(static_cast<uint64_t>(nodes)) * interLat);
      }

      // ncclTopoGetAlgoTime (tuning.cc:630–655), one operation.
      double tbw = bw;
      int logSize = log2i(bytes >> 6);
      if (a == kTree && allreduce && logSize >= 0 && logSize < 23) tbw *= kTreeCorrection[p][logSize];
      double tlat = lat;
      if (a == kRing && p == kSimple && nodes > 1 && allreduce && bytes / (static_cast<uint64_t>(t.comm_channels) * n) >= 64) tlat *= 1.4;
      NcclCost& c = r.cost[a][p];
      c.enabled = true;
      c.latency_us = lat;
      c.bw_GBps = bw;
      c.time_us = tlat + static_cast<double>(bytes) / (1000 * tbw);
    }
  }

  // topoGetAlgoInfo: the least time, algorithms then protocols in NCCL's order.
  double best = FLT_MAX;
  int ba = kRing, bp = kSimple;
  for (int a : {kTree, kRing})
    for (int p : {kLL, kLL128, kSimple})
      if (r.cost[a][p].enabled && r.cost[a][p].time_us < best) {
        best = r.cost[a][p].time_us;
        ba = a;
        bp = p;
      }
  r.algo = static_cast<NcclAlgo>(ba);
  r.proto = static_cast<NcclProto>(bp);
  r.time_us = best;
  uint64_t nt = bp == kLL128 ? 640 : 512;
  uint64_t threshold = bp == kSimple ? 64 : bp == kLL && ba == kRing ? 8 * n : 8;
  int nc = t.comm_channels;
  while (bytes < nc * nt * threshold && nc >= 2) --nc;
  r.channels = nc;

  uint64_t chunk = chunk_bytes(k, ba, bp, t, bytes, nc);
  uint64_t per_channel = cdiv(bytes, static_cast<uint64_t>(nc));
  // The ring's loops move N chunks each (runRing's loopCount = nranks · chunkCount).
  uint64_t unit = ba == kRing && k != CollKind::Bcast ? chunk * n : chunk;
  r.pieces = static_cast<int>(std::clamp<uint64_t>(cdiv(per_channel, unit), 1, kMaxPieces));
  return r;
}

}  // namespace sg
