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
//    The ring, the tree and NVLS are modelled, where NCCL considers them (294–298, 502–506):
//    the tree for all-reduce, the ring for all four, NVLS for all-reduce on one node of NVSwitch
//    GPUs from Hopper on (Simple only): its graph has min(32, GPUs) channels at the fastest
//    intra speed s with (channels + 1)·s within the GPU's NVLink, bwInter raised to 2·s or the
//    array's top (search.cc:1124–1138, 1254–1287; docs/nccl_model.md §2.3: 8 × 40/60 on H100,
//    8 × 80/90 on B200); its bandwidth bwIntra·nvlsEfficiency·(ch-1)/ch·2, at most bwInter, per
//    graph channel (307–323; nvlsEfficiency 0.85 Hopper, 0.74 Blackwell, 139–144), as algorithm
//    bandwidth × n/nsteps (377–382), its latency hwLat[NVLINK][NVLS][Simple] = 25 µs in place of
//    the base (424–426). NVLS across nodes needs CollNet (SHARP), and the NVLS tree, CollNet and
//    PAT (all-gather and reduce-scatter with one GPU per node) are algorithms the library does not
//    have: the platform models none of them, as if NCCL_ALGO=^NVLSTree,CollNetDirect,CollNetChain,PAT.
//    NVLS all-gather and reduce-scatter lose to the ring on one node by NCCL's own figures
//    (bwIntra·eff·(ch-1)/ch·(ppn-1)/ppn without the ring's n/nsteps: 208 against 411 GB/s of
//    algorithm bandwidth on H100) and are not modelled. LL128 is on (Hopper, NVLink inside, the
//    NIC within PXN: 518–536).
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
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstring>

namespace sg {

namespace {

constexpr int kTree = 0, kRing = 1, kNvls = 2;  // our indices (NCCL's NVLS is 4)
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kNvlink = 0, kNet = 2;  // NCCL_HW_NVLINK, NCCL_HW_NET (PCI is 1)

// tuning.cc:148–212, the Tree and Ring rows (one table for every architecture), and the
// per-architecture bandwidth caps, rows by compCapIndex (Volta, Ampere, Hopper, Blackwell),
// columns by nodes (1, 2, more).
// clang-format off
constexpr double kBaseLat[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};    // 151: [Tree, Ring][LL, LL128, Simple]
constexpr double kHwLatNvls = 25;                                         // 159: hwLat[NVLINK][NVLS][Simple]
constexpr double kHwLat[3][2][3] = {{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},   // 159: NVLINK
                                    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},    // 165: PCI
                                    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}}};   // 171: NET
// 179–182: row cc on one node; across nodes row 0 (Intel, ARM) or 1 (AMD), columns 2 and more.
constexpr double kLlMaxBw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}};
constexpr double kPerChRingLL128Bw[4][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};  // 186–189
constexpr double kPerChTreeLL128Bw[4][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}; // 193–196
constexpr double kPerChTreeBw[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};        // 200–203
// 623–627: powers of two from 64 B to 256 MiB, per protocol.
constexpr double kTreeCorrection[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
// The speeds the search tries (search.cc:1051–1067): sm<90, sm90, sm100; inside one node (intra)
// and across nodes (inter).
constexpr double kSpeedIntra[3][13] = {{40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3},
                                       {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3, 0, 0},
                                       {90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18, 0}};
constexpr double kSpeedInter[3][20] = {{48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12, 0},
                                       {48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12, 0, 0, 0},
                                       {96, 86, 80, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12}};
// clang-format on

constexpr int kMaxGraphChannels = 32;  // MAXCHANNELS / 2 (init.cc:1177)
constexpr int kMaxChannels = 64;       // MAXCHANNELS (src/include/device.h:91)

// The speed array of an architecture: sm<90 share one (search.cc:1051–1067).
int speed_row(int arch) { return arch >= 3 ? 2 : arch == 2 ? 1 : 0; }

// The first speed the search tries: the first of the array that the best path carries and the
// GPU's links can hold at least once (search.cc:1170–1174).
template <size_t K>
double first_speed(const double (&speeds)[K], double max_bw, double total_bw) {
  for (double s : speeds)
    if (s > 0 && s <= max_bw && s <= total_bw) return s;
  for (size_t i = K; i-- > 0;)
    if (speeds[i] > 0) return speeds[i];
  return 1;
}

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

// ncclTopoDupChannels (search.cc:1036–1049): not below 25 GB/s, nor after Ampere below 50 GB/s
// with more than 4 channels.
void dup_channels(int arch, int& ch, double& bw) {
  if (bw < 25.0) return;
  if (arch >= 2 && bw < 50.0 && ch > 4) return;
  int dup = std::min(2 * ch, kMaxGraphChannels);
  bw /= static_cast<double>(cdiv(dup, ch));
  ch = dup;
}

// NCCL's chunk for the pieces we cut a channel's data into (calcCollChunking).
uint64_t chunk_bytes(CollKind k, int algo, int proto, const NcclTopo& t, uint64_t bytes, int channels) {
  constexpr uint64_t kStepLL = 524288 / 8, kStepLL128 = 4915200 / 8, kStepSimple = 4194304 / 8;
  if (algo == kNvls) {  // enqueue.cc:2258–2275: NCCL_NVLS_CHUNKSIZE 128 KiB, less for small calls
    uint64_t c = 131072, ops = static_cast<uint64_t>(channels) * std::min(t.gpus, t.ranks);  // nChannels × nHeads
    if (bytes < 64 * ops * c && c > 65536) c = 65536;
    if (bytes < 8 * ops * c && c > 32768) c = 32768;
    if (bytes < 2 * ops * c && c > 16384) c = 16384;
    return c;
  }
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

namespace {

bool same_word(const std::string& a, const char* b) {
  size_t n = std::strlen(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

}  // namespace

bool parse_nccl_list(const std::string& text, bool protocols, NcclEnables& out, Diagnostics& diags, size_t& at) {
  // init.cc:52–55: ncclFuncStr, ncclAlgoStr, ncclProtoStr.
  static const char* const kFuncs[5] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
  static const char* const kAlgos[7] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
  static const char* const kProtos[3] = {"LL", "LL128", "Simple"};
  const char* const* names = protocols ? kProtos : kAlgos;
  const size_t count = protocols ? 3 : 7;
  size_t pos = 0;
  bool first = true;
  while (true) {
    size_t end = text.find(';', pos);
    if (end == std::string::npos) end = text.size();
    std::string entry = text.substr(pos, end - pos);
    // [function:]list
    std::array<bool, 5> funcs;
    funcs.fill(true);
    size_t list_at = pos;
    if (size_t colon = entry.find(':'); colon != std::string::npos) {
      std::string fn = entry.substr(0, colon);
      int f = -1;
      for (int i = 0; i < 5; ++i)
        if (same_word(fn, kFuncs[i])) f = i;
      if (f < 0) {
        at = pos;
        return diags.fail("Unrecognized prefix token \"" + fn + "\" when parsing \"" + text +
                          "\" (functions: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce)");
      }
      funcs.fill(false);
      funcs[static_cast<size_t>(f)] = true;
      entry = entry.substr(colon + 1);
      list_at = pos + colon + 1;
    } else if (!first) {
      at = pos;
      return diags.fail("All entries except the first must have a prefix: \"" + text + "\"");
    }
    bool exclude = !entry.empty() && entry[0] == '^';
    if (exclude) {
      entry.erase(0, 1);
      ++list_at;
    }
    // The entry resets its functions' lists: all off, or all on with '^'; then its names flip.
    for (size_t f = 0; f < 5; ++f) {
      if (!funcs[f]) continue;
      for (size_t i = 0; i < count; ++i) (protocols ? out.proto[f][i] : out.algo[f][i]) = exclude;
    }
    size_t tpos = 0;
    while (tpos <= entry.size()) {
      size_t comma = entry.find(',', tpos);
      if (comma == std::string::npos) comma = entry.size();
      std::string token = entry.substr(tpos, comma - tpos);
      size_t idx = count;
      for (size_t i = 0; i < count; ++i)
        if (same_word(token, names[i])) idx = i;
      if (idx == count) {
        std::string all;
        for (size_t i = 0; i < count; ++i) all += (i ? ", " : "") + std::string(names[i]);
        at = list_at + tpos;
        return diags.fail("Unrecognized element token \"" + token + "\" when parsing \"" + text + "\" (" +
                          (protocols ? "protocols" : "algorithms") + ": " + all +
                          (token.find(' ') != std::string::npos ? "; NCCL does not trim spaces" : "") + ")");
      }
      for (size_t f = 0; f < 5; ++f)
        if (funcs[f]) (protocols ? out.proto[f][idx] : out.algo[f][idx]) = !exclude;
      tpos = comma + 1;
    }
    first = false;
    if (end == text.size()) break;
    pos = end + 1;
  }
  (protocols ? out.proto_text : out.algo_text) = text;
  return true;
}

double nvls_chunk_efficiency(uint64_t chunk, uint32_t heads, double channel_GBps) {
  if (chunk == 0 || heads < 2 || channel_GBps <= 0) return 1.0;
  // A loop moves heads × chunk bytes of the vector at the channel's algorithm bandwidth. At the
  // default chunk NCCL's bandwidth holds, so that loop's time T includes the fixed cost a; a
  // loop of chunk c = f · 128 KiB takes a + f·(T - a) where the bandwidth alone gives f·T.
  double h = heads;
  double algbw = channel_GBps * 1e3 * h / (2 * (h - 1));  // bytes per µs
  double t = h * 131072 / algbw, a = kNvlsChunkCostUs, f = static_cast<double>(chunk) / 131072;
  if (a >= t) return 1.0;
  return f * t / (a + f * (t - a));
}

const char* nccl_algo_name(NcclAlgo a) { return a == NcclAlgo::Tree ? "tree" : a == NcclAlgo::Ring ? "ring" : "nvls"; }
const char* nccl_proto_name(NcclProto p) {
  switch (p) {
    case NcclProto::LL: return "LL";
    case NcclProto::LL128: return "LL128";
    case NcclProto::Simple: return "Simple";
  }
  return "?";
}

NcclTopo nccl_topo(uint32_t ranks, const NcclHardware& hw) {
  NcclTopo t;
  t.ranks = ranks;
  t.gpus = std::max<uint32_t>(1, hw.gpus_per_node);
  t.nodes = static_cast<uint32_t>(cdiv(std::max<uint32_t>(1, ranks), t.gpus));
  int row = speed_row(hw.arch);
  int ch;
  double bw;
  if (t.nodes == 1) {
    // The best GPU-to-GPU path is a GPU's NVLinks into the NVSwitch, and so are all its links.
    bw = first_speed(kSpeedIntra[row], hw.nvlink_per_gpu, hw.nvlink_per_gpu);
    ch = std::min(kMaxGraphChannels, std::max(1, static_cast<int>(hw.nvlink_per_gpu / bw)));
  } else {
    // Across nodes the best path is a GPU's way to its NIC (PCIe, then the NIC): one channel per
    // NIC, as many as the NVLinks can relay ((G-1)/G of the channels cross each GPU).
    double path = std::min(hw.pcie_GBps, hw.nic_GBps);
    bw = first_speed(kSpeedInter[row], path, hw.nvlink_per_gpu);
    int g = static_cast<int>(std::min(t.gpus, ranks));
    int nics = hw.nics_per_node ? static_cast<int>(std::min<uint32_t>(hw.nics_per_node, t.gpus)) : g;
    ch = std::min(g, nics);
    if (g > 1) ch = std::min(ch, std::max(1, static_cast<int>(hw.nvlink_per_gpu / (bw * (g - 1) / g))));
    ch = std::min(ch, kMaxGraphChannels);
  }
  dup_channels(hw.arch, ch, bw);
  t.graph_channels = ch;
  t.graph_bw = bw;
  int comm = std::min(kMaxChannels, 2 * ch);
  if (hw.arch >= 2 && t.nodes > 1 && bw > 45.0 && comm < 16) comm = std::min(kMaxChannels, 2 * comm);
  t.comm_channels = comm;
  // NVLS: one node of NVSwitch GPUs (every preset and `nodes` platform has its NVSwitch), sm90 on,
  // two GPUs at least (nvls.cc:248-281; search.cc:1124).
  uint32_t g = std::min(t.gpus, ranks);
  if (t.nodes == 1 && hw.arch >= 2 && g >= 2) {
    int nch = static_cast<int>(std::min<uint32_t>(32, g));
    double intra = 0;
    for (double s : kSpeedIntra[row])
      if (s > 0 && (nch + 1) * s <= hw.nvlink_per_gpu) {
        intra = s;
        break;
      }
    if (intra > 0) {
      double inter = 0, top = 0;
      for (double s : kSpeedIntra[row]) {
        top = std::max(top, s);
        if (s >= 2 * intra && (inter == 0 || s < inter)) inter = s;
      }
      t.nvls_graph_channels = nch;
      t.nvls_bw_intra = intra;
      t.nvls_bw_inter = inter > 0 ? inter : top;
      t.nvls_channels = hw.arch >= 3 ? 24 : 16;  // NVLS_NCHANNELS_SM90 16, SM100_NVL 24 (nvls.cc:155-157)
    }
  }
  return t;
}

NcclTopo nccl_topo(uint32_t ranks, uint32_t gpus_per_node) {
  NcclHardware hw;
  hw.gpus_per_node = gpus_per_node;
  return nccl_topo(ranks, hw);
}

NcclTuning nccl_tune(CollKind k, uint64_t bytes, uint32_t n, uint32_t gpus_per_node) {
  NcclHardware hw;
  hw.gpus_per_node = gpus_per_node;
  return nccl_tune(k, bytes, n, hw);
}

NcclTuning nccl_tune(CollKind k, uint64_t bytes, uint32_t n, const NcclHardware& hwd, const NcclEnables& en) {
  NcclTuning r;
  r.topo = nccl_topo(n, hwd);
  const NcclTopo& t = r.topo;
  bool allreduce = k == CollKind::Allreduce;
  r.modelled = allreduce || k == CollKind::Allgather || k == CollKind::ReduceScatter || k == CollKind::Bcast;
  if (!r.modelled || n < 2) return r;
  // NCCL's function index (init.cc:52): Broadcast, Reduce, AllGather, ReduceScatter, AllReduce.
  int fn = k == CollKind::Bcast ? 0 : k == CollKind::Allgather ? 2 : k == CollKind::ReduceScatter ? 3 : 4;

  int cc = std::clamp(hwd.arch, 0, 3);
  int nodes = static_cast<int>(t.nodes);
  int nranks = static_cast<int>(n);
  int index2 = nodes <= 2 ? nodes - 1 : 2;
  double llMaxBw = nodes == 1 ? kLlMaxBw[cc][0] : kLlMaxBw[hwd.amd_cpu ? 1 : 0][index2];
  double netOverhead = hwd.amd_cpu ? 2.0 : 1.0;  // tuning.cc:228–233
  int hw = nodes == 1 ? kNvlink : kNet;
  bool ppn1 = nodes == nranks;
  int nsteps = allreduce ? 2 * (nranks - 1) : k == CollKind::Bcast ? nranks : nranks - 1;
  double ch = t.graph_channels;

  for (int a : {kTree, kRing}) {
    if (a == kTree && !allreduce) continue;  // tuning.cc:294–298
    if (!en.algo[static_cast<size_t>(fn)][static_cast<size_t>(a)]) continue;
    for (int p : {kLL, kLL128, kSimple}) {
      if (!en.proto[static_cast<size_t>(fn)][static_cast<size_t>(p)]) continue;
      double busBw = ch * t.graph_bw;
      if (a == kRing && p == kLL) busBw = std::min(llMaxBw, busBw * .5);
      if (a == kRing && p == kLL128) busBw = std::min(busBw * .92, ch * kPerChRingLL128Bw[cc][index2]);
      if (a == kTree && allreduce) busBw = std::min(busBw * .92, ch * kPerChTreeBw[cc][index2]);
      if (a == kTree && p == kLL) busBw = std::min(busBw * 1.0 / 3.8, llMaxBw);
      if (a == kTree && p == kLL128) busBw = std::min(busBw * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), ch * kPerChTreeLL128Bw[cc][index2]);
      double bw = busBw * (a == kRing ? static_cast<double>(nranks) / nsteps : .5);

      double lat = kBaseLat[a][p];
      double intraLat = kHwLat[kNvlink][a][p];
      double interLat = ppn1 ? kHwLat[kNet][kTree][p] : kHwLat[kNet][a][p];  // + latencyInter, 0 for IB
      double hopIntra = intraLat, hopInter = interLat;
      if (a == kRing) {
        if (k == CollKind::Bcast) {
          double l = p == kSimple ? kHwLat[hw][kTree][p] : kHwLat[hw][a][p];
          lat += nsteps * l;
          hopIntra = hopInter = l;
        } else {
          double overhead = nodes > 1 ? netOverhead * (p == kSimple ? 3 : 1) : 0.0;
          intraLat = std::max(intraLat, overhead);
          int inter = nodes == 1 ? 0 : allreduce ? 2 * (nodes - 1) : nodes - 1;
          lat += (nsteps - inter) * intraLat + inter * interLat;
          hopIntra = intraLat;
        }
      } else {
        lat += 2 * ((nranks / nodes - 1) * intraLat + log2i(static_cast<uint64_t>(nodes)) * interLat);
      }

      // ncclTopoGetAlgoTime (tuning.cc:630–655), one operation.
      double tbw = bw;
      int logSize = log2i(bytes >> 6);
      if (a == kTree && allreduce && logSize >= 0 && logSize < 23) tbw *= kTreeCorrection[p][logSize];
      double tlat = lat;
      if (a == kRing && p == kSimple && nodes > 1 && allreduce && bytes / (static_cast<uint64_t>(t.comm_channels) * n) >= 64)
        tlat *= cc == 0 ? 1.9 : 1.4;  // 647–650: Volta 1.9
      NcclCost& c = r.cost[a][p];
      c.enabled = true;
      c.latency_us = lat;
      c.bw_GBps = bw;
      c.time_us = tlat + static_cast<double>(bytes) / (1000 * tbw);
      double plateau = tlat / lat;
      c.base_us = kBaseLat[a][p] * plateau;
      c.hop_intra_us = hopIntra * plateau;
      c.hop_inter_us = hopInter * plateau;
      c.bus_GBps = busBw * (tbw / bw);
    }
  }

  // NVLS (all-reduce, one node, Simple): tuning.cc:307–323 (bandwidth), 424–426 (latency).
  if (allreduce && t.nvls_graph_channels >= 2 && en.algo[static_cast<size_t>(fn)][4] && en.proto[static_cast<size_t>(fn)][kSimple]) {
    const double nvlsEfficiency[4] = {0.0, 0.0, 0.85, 0.74};  // 139–144
    double nch = t.nvls_graph_channels;
    double intraBw = t.nvls_bw_intra * nvlsEfficiency[cc] * (nch - 1) / nch * 2;
    double busBw = nch * std::min(intraBw, t.nvls_bw_inter);
    double bw = busBw * nranks / nsteps;
    double lat = kHwLatNvls;
    NcclCost& c = r.cost[kNvls][kSimple];
    c.enabled = busBw > 0;
    c.latency_us = lat;
    c.bw_GBps = bw;
    c.time_us = lat + static_cast<double>(bytes) / (1000 * bw);
    // The whole latency is the call's: the switch reduces and multicasts, no hop between GPUs.
    c.base_us = lat;
    c.bus_GBps = busBw;
  }

  // topoGetAlgoInfo: the least time, algorithms then protocols in NCCL's order.
  double best = FLT_MAX;
  int ba = kRing, bp = kSimple;
  for (int a : {kTree, kRing, kNvls})
    for (int p : {kLL, kLL128, kSimple})
      if (r.cost[a][p].enabled && r.cost[a][p].time_us < best) {
        best = r.cost[a][p].time_us;
        ba = a;
        bp = p;
      }
  if (best == FLT_MAX) {  // NCCL_ALGO / NCCL_PROTO left nothing the model has
    r.none_enabled = true;
    return r;
  }
  r.algo = static_cast<NcclAlgo>(ba);
  r.proto = static_cast<NcclProto>(bp);
  r.time_us = best;
  uint64_t nt = bp == kLL128 ? 640 : 512;
  uint64_t threshold = bp == kSimple ? 64 : bp == kLL && ba == kRing ? 8 * n : 8;
  int nc = t.comm_channels;
  if (ba == kNvls) {
    nc = t.nvls_channels;  // "NVLS should not need more than 16 channels" (enqueue.cc:2084–2090)
  } else {
    while (bytes < nc * nt * threshold && nc >= 2) --nc;
  }
  r.channels = nc;

  uint64_t chunk = chunk_bytes(k, ba, bp, t, bytes, nc);
  r.chunk = chunk;
  uint64_t per_channel = cdiv(bytes, static_cast<uint64_t>(nc));
  // The ring's loops move N chunks each (runRing's loopCount = nranks · chunkCount), NVLS's one
  // chunk a head, every rank a head on one node (loopSize = nChannels · nHeads · chunkSize).
  uint64_t unit = (ba == kRing && k != CollKind::Bcast) || ba == kNvls ? chunk * n : chunk;
  uint64_t pieces = cdiv(per_channel, unit);
  // LL and LL128 forward as they receive, a warp's lines at a time (prims_ll.h: a thread's 16-byte
  // line, 8 data bytes and a flag, 32 lines a warp; prims_ll128.h: a warp's 32 × 128-byte lines,
  // 120 data bytes each): the next hop starts on a chunk long before it has all arrived, and
  // NCCL's model prices the tree so (its bandwidth term has no depth in it). A simulation of
  // whole messages stores and forwards: a small call's one chunk would cross the tree's 2·depth
  // hops one after the other at a channel's rate. So the tree's LL and LL128 chunks are cut into
  // pieces of that grain (at most kMaxPieces), which then follow each other down the tree. The
  // ring needs none: all its links carry a step's chunks at once, and NCCL prices its steps one
  // after the other.
  if (ba == kTree && bp == kLL) pieces = std::max(pieces, cdiv(per_channel, 32 * 8));
  r.pieces = static_cast<int>(std::clamp<uint64_t>(pieces, 1, kMaxPieces));
  return r;
}

}  // namespace sg
