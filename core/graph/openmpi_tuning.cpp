// Open MPI 4.1's default choice of algorithm per collective (openmpi_default), beside NCCL's
// (nccl_choice.cpp, nccl_tuning.cpp).
//
// Open MPI's tuned component (ompi/mca/coll/tuned/coll_tuned_decision_fixed.c, tag v4.1.8, the
// same tables throughout 4.1.x) picks an algorithm from the communicator size and a message
// size, by rules measured on several clusters and averaged (the file's own comment). The tables
// below are those rules, transcribed: a row {comm, size, alg} means "communicator size < comm
// and total_dsize < size: algorithm alg", first match wins, kAny for the file's final `else`
// (`communicator_size == 2` is written as < 3: n >= 2 here). Only the commutative branch is
// used: every reduction the language has (sum max min prod) commutes.
//
// total_dsize, per function: allreduce, reduce and bcast: the whole buffer (dsize * count);
// reduce_scatter: the sum of rcounts, the whole input vector; allgather and alltoall: dsize *
// scount, one rank's block (bytes / n). The collective's own byte count is what the library's
// `size` means, so allgather and alltoall divide it by n before looking the table up.
//
// Open MPI's algorithms mapped to ours (ours in brackets):
//
// | collective (lines) | Open MPI algorithm → ours |
// |---|---|
// | allreduce (118–212) | 1 basic_linear [reduce_bcast] · 2 nonoverlapping: reduce then bcast, each by its own tuned decision [binomial: binomial reduce + binomial bcast] · 3 recursive_doubling [recursive_doubling] · 4 ring [ring] · 5 segmented_ring [ring: we have no segmented ring; the fixed rules pass segsize 0] · 6 rabenseifner [rabenseifner] |
// | alltoall (250–405) | 1 linear [linear] · 2 pairwise [pairwise] · 3 modified_bruck [bruck] · 4 linear_sync [linear: with the default alltoall_algorithm_max_requests = 0 it posts all N-1 requests at once, as linear does] · 5 two_proc, N = 2 [pairwise: one exchange] |
// | barrier (480–497) | 1 linear · 2 double_ring · 3 recursive_doubling · 4 bruck · 5 two_proc · 6 tree [all: dissemination; Open MPI's "bruck" barrier is the dissemination barrier, the others reach the same ⌈log2 N⌉ rounds or more] |
// | bcast (530–647) | 1 basic_linear [binomial: we have no flat tree; binomial is the closest unsegmented tree] · 2 chain, 3 pipeline [pipeline with segments = 1: the fixed rules pass segsize 0, which Open MPI's COLL_BASE_COMPUTED_SEGCOUNT reads as "no segmentation"] · 4 split_binary_tree [scatter_allgather: the message split in parts that are exchanged afterwards] · 5 binary_tree, 6 binomial, 7 knomial [binomial] · 8 scatter_allgather, 9 scatter_allgather_ring [scatter_allgather] |
// | reduce (725–809) | 1 linear · 2 chain · 3 pipeline · 4 binary · 5 binomial · 6 in-order_binary · 7 rabenseifner [all: binomial, the library's only reduce] |
// | reduce_scatter (856–957) | 1 non-overlapping: reduce then scatterv [recursive_halving: chosen only below 1 KiB, where the ⌈log2 N⌉ rounds matter, not the bytes] · 2 recursive_halving [recursive_halving] · 3 ring [ring] · 4 butterfly [recursive_halving: also log2 N rounds with halving messages] |
// | allgather (1118–1220) | 2 bruck [bruck] · 3 recursive_doubling [recursive_doubling; Open MPI switches to Bruck at N not a power of two, and so does our fallback] · 4 ring [ring] · 5 neighbor exchange [ring: the same bandwidth, half the rounds; Open MPI itself uses the ring at odd N] · 6 two_proc, N = 2 [recursive_doubling: one exchange] |
//
// Our reduce_scatter gives every member an equal block, which is MPI_Reduce_scatter_block, but
// we follow MPI_Reduce_scatter's table (the same operation with equal rcounts): the block
// variant's table (lines 999–1078) never picks a ring and its long-message choice, basic_linear
// (a reduce followed by a scatter), has no counterpart among ours.

#include "core/graph/algorithm_choice.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace sg {

namespace {

constexpr uint64_t kAny = std::numeric_limits<uint64_t>::max();

struct Rule {
  uint64_t comm;  // communicator size < comm
  uint64_t size;  // total_dsize < size
  int alg;
};

// One row per communicator-size bracket, as in Open MPI's source (kept so by hand):
// clang-format off
// coll_tuned_decision_fixed.c (v4.1.8) lines 118–212, the commutative branch.
constexpr Rule kAllreduce[] = {
    {4, 8, 4}, {4, 4096, 3}, {4, 8192, 4}, {4, 16384, 3}, {4, 65536, 4}, {4, 262144, 5}, {4, kAny, 6},
    {8, 16, 4}, {8, 8192, 3}, {8, kAny, 6},
    {16, 8192, 3}, {16, kAny, 6},
    {32, 64, 5}, {32, 4096, 3}, {32, kAny, 6},
    {64, 128, 5}, {64, kAny, 6},
    {128, 262144, 3}, {128, kAny, 6},
    {256, 131072, 2}, {256, 262144, 3}, {256, kAny, 6},
    {512, 4096, 2}, {512, kAny, 6},
    {2048, 2048, 2}, {2048, 16384, 3}, {2048, kAny, 6},
    {4096, 2048, 2}, {4096, 4096, 5}, {4096, 16384, 3}, {4096, kAny, 6},
    {kAny, 2048, 2}, {kAny, 16384, 5}, {kAny, 32768, 3}, {kAny, kAny, 6},
};

// Lines 250–405 (total_dsize: one rank's block for one peer).
constexpr Rule kAlltoall[] = {
    {3, 2, 2}, {3, 4, 5}, {3, 16, 2}, {3, 64, 5}, {3, 256, 2}, {3, 4096, 5}, {3, 32768, 2}, {3, 262144, 4},
    {3, 1048576, 5}, {3, kAny, 2},
    {8, 8192, 4}, {8, 16384, 1}, {8, 65536, 4}, {8, 524288, 1}, {8, 1048576, 2}, {8, kAny, 1},
    {16, 262144, 4}, {16, kAny, 1},
    {32, 4, 4}, {32, 512, 3}, {32, 8192, 4}, {32, 32768, 1}, {32, 262144, 4}, {32, 524288, 1}, {32, kAny, 4},
    {64, 512, 3}, {64, 524288, 1}, {64, kAny, 4},
    {128, 1024, 3}, {128, 2048, 1}, {128, 4096, 4}, {128, 262144, 1}, {128, kAny, 2},
    {256, 1024, 3}, {256, 2048, 4}, {256, 262144, 1}, {256, kAny, 2},
    {512, 1024, 3}, {512, 8192, 4}, {512, 32768, 1}, {512, kAny, 2},
    {1024, 512, 3}, {1024, 8192, 4}, {1024, 16384, 1}, {1024, 131072, 4}, {1024, 262144, 1}, {1024, kAny, 2},
    {2048, 512, 3}, {2048, 1024, 4}, {2048, 2048, 1}, {2048, 16384, 4}, {2048, 262144, 1}, {2048, kAny, 4},
    {4096, 1024, 3}, {4096, 4096, 4}, {4096, 8192, 1}, {4096, 131072, 4}, {4096, kAny, 1},
    {kAny, 2048, 3}, {kAny, 8192, 4}, {kAny, 16384, 1}, {kAny, 32768, 4}, {kAny, 65536, 1}, {kAny, kAny, 4},
};

// Lines 480–497 (communicator size only).
constexpr Rule kBarrier[] = {
    {4, kAny, 3}, {8, kAny, 1}, {64, kAny, 3}, {256, kAny, 4}, {512, kAny, 6}, {1024, kAny, 4}, {4096, kAny, 6},
    {kAny, kAny, 4},
};

// Lines 530–647.
constexpr Rule kBcast[] = {
    {4, 32, 3}, {4, 256, 5}, {4, 512, 3}, {4, 1024, 7}, {4, 32768, 1}, {4, 131072, 5}, {4, 262144, 2}, {4, 524288, 1},
    {4, 1048576, 6}, {4, kAny, 5},
    {8, 64, 5}, {8, 128, 6}, {8, 2048, 5}, {8, 8192, 6}, {8, 1048576, 1}, {8, kAny, 2},
    {16, 8, 7}, {16, 64, 5}, {16, 4096, 7}, {16, 16384, 5}, {16, 32768, 6}, {16, kAny, 1},
    {32, 4096, 7}, {32, 1048576, 6}, {32, kAny, 8},
    {64, 2048, 6}, {64, kAny, 7},
    {128, kAny, 7},
    {256, 2, 6}, {256, 16384, 5}, {256, 32768, 1}, {256, 65536, 5}, {256, kAny, 7},
    {1024, 16384, 7}, {1024, 32768, 4}, {1024, kAny, 7},
    {2048, 524288, 7}, {2048, kAny, 8},
    {4096, 262144, 7}, {4096, kAny, 8},
    {kAny, 8192, 7}, {kAny, 16384, 5}, {kAny, 262144, 7}, {kAny, kAny, 8},
};

// Lines 725–809, the commutative branch.
constexpr Rule kReduce[] = {
    {4, 8, 7}, {4, 16, 4}, {4, 32, 3}, {4, 262144, 1}, {4, 524288, 3}, {4, 1048576, 2}, {4, kAny, 3},
    {8, 4096, 4}, {8, 65536, 2}, {8, 262144, 5}, {8, 524288, 1}, {8, 1048576, 5}, {8, kAny, 1},
    {16, 8192, 4}, {16, kAny, 5},
    {32, 4096, 4}, {32, kAny, 5},
    {256, kAny, 5},
    {512, 8192, 5}, {512, 16384, 6}, {512, kAny, 5},
    {2048, kAny, 5},
    {4096, 512, 5}, {4096, 1024, 6}, {4096, 8192, 5}, {4096, 16384, 6}, {4096, kAny, 5},
    {kAny, 16, 5}, {kAny, 32, 6}, {kAny, 1024, 5}, {kAny, 2048, 6}, {kAny, 8192, 5}, {kAny, 16384, 6}, {kAny, kAny, 5},
};

// Lines 856–957, MPI_Reduce_scatter's commutative branch (see the note at the top).
constexpr Rule kReduceScatter[] = {
    {4, 65536, 3}, {4, 131072, 4}, {4, kAny, 3},
    {8, 8, 1}, {8, 262144, 2}, {8, kAny, 3},
    {32, 262144, 2}, {32, kAny, 3},
    {64, 64, 1}, {64, 2048, 2}, {64, 524288, 4}, {64, kAny, 3},
    {128, 256, 1}, {128, 512, 2}, {128, 2048, 4}, {128, 4096, 2}, {128, kAny, 4},
    {256, 256, 1}, {256, 512, 2}, {256, kAny, 4},
    {512, 256, 1}, {512, 1024, 2}, {512, kAny, 4},
    {1024, 512, 1}, {1024, 2048, 2}, {1024, 8192, 4}, {1024, 16384, 2}, {1024, kAny, 4},
    {2048, 512, 1}, {2048, 4096, 2}, {2048, 16384, 4}, {2048, 32768, 2}, {2048, kAny, 4},
    {4096, 512, 1}, {4096, 4096, 2}, {4096, kAny, 4},
    {kAny, 1024, 1}, {kAny, 8192, 2}, {kAny, kAny, 4},
};

// Lines 1118–1220 (total_dsize: one rank's block).
constexpr Rule kAllgather[] = {
    {3, kAny, 6},
    {32, kAny, 3},
    {64, 1024, 3}, {64, 65536, 5}, {64, kAny, 4},
    {128, 512, 3}, {128, 65536, 5}, {128, kAny, 4},
    {256, 512, 3}, {256, 131072, 5}, {256, 524288, 4}, {256, 1048576, 5}, {256, kAny, 4},
    {512, 32, 3}, {512, 128, 2}, {512, 1024, 3}, {512, 131072, 5}, {512, 524288, 4}, {512, 1048576, 5}, {512, kAny, 4},
    {1024, 64, 3}, {1024, 256, 2}, {1024, 2048, 3}, {1024, kAny, 5},
    {2048, 4, 3}, {2048, 8, 2}, {2048, 16, 3}, {2048, 32, 2}, {2048, 256, 3}, {2048, 512, 2}, {2048, 4096, 3},
    {2048, kAny, 5},
    {4096, 32, 2}, {4096, 128, 3}, {4096, 512, 2}, {4096, 4096, 3}, {4096, kAny, 5},
    {kAny, 2, 3}, {kAny, 8, 2}, {kAny, 16, 3}, {kAny, 512, 2}, {kAny, 4096, 3}, {kAny, kAny, 5},
};
// clang-format on

template <size_t K>
int lookup(const Rule (&rules)[K], uint64_t n, uint64_t total) {
  for (const Rule& r : rules)
    if (n < r.comm && total < r.size) return r.alg;
  return rules[K - 1].alg;  // unreachable: the last rule is {kAny, kAny, …}
}

// Open MPI's algorithm names, per function, indexed by its algorithm number (the
// "Algorithms:" comment above each table).
const char* openmpi_name(CollKind k, int alg) {
  static const char* const allreduce[] = {"",     "basic_linear",   "nonoverlapping", "recursive_doubling",
                                          "ring", "segmented_ring", "rabenseifner"};
  static const char* const alltoall[] = {"", "linear", "pairwise", "modified_bruck", "linear_sync", "two_proc"};
  static const char* const barrier[] = {"", "linear", "double_ring", "recursive_doubling", "bruck", "two_proc", "tree"};
  static const char* const bcast[] = {"",
                                      "basic_linear",
                                      "chain",
                                      "pipeline",
                                      "split_binary_tree",
                                      "binary_tree",
                                      "binomial",
                                      "knomial",
                                      "scatter_allgather",
                                      "scatter_allgather_ring"};
  static const char* const reduce[] = {"", "linear", "chain", "pipeline", "binary", "binomial", "in-order_binary", "rabenseifner"};
  static const char* const reduce_scatter[] = {"", "non-overlapping", "recursive_halving", "ring", "butterfly"};
  static const char* const allgather[] = {"", "linear", "bruck", "recursive_doubling", "ring", "neighbor", "two_proc"};
  auto at = [&](const char* const* names, size_t count) { return alg > 0 && static_cast<size_t>(alg) < count ? names[alg] : "?"; };
  switch (k) {
    case CollKind::Allreduce: return at(allreduce, std::size(allreduce));
    case CollKind::Alltoall: return at(alltoall, std::size(alltoall));
    case CollKind::Barrier: return at(barrier, std::size(barrier));
    case CollKind::Bcast: return at(bcast, std::size(bcast));
    case CollKind::Reduce: return at(reduce, std::size(reduce));
    case CollKind::ReduceScatter: return at(reduce_scatter, std::size(reduce_scatter));
    case CollKind::Allgather: return at(allgather, std::size(allgather));
  }
  return "?";
}

// Open MPI's algorithm number -> our schedule (the table at the top of this file).
const char* ours(CollKind k, int alg) {
  switch (k) {
    case CollKind::Allreduce:
      switch (alg) {
        case 1: return "reduce_bcast_allreduce";
        case 2: return "binomial_allreduce";
        case 3: return "recursive_doubling_allreduce";
        case 6: return "rabenseifner_allreduce";
        default: return "ring_allreduce";  // 4 ring, 5 segmented_ring
      }
    case CollKind::Alltoall:
      switch (alg) {
        case 2:
        case 5: return "pairwise_alltoall";
        case 3: return "bruck_alltoall";
        default: return "linear_alltoall";  // 1 linear, 4 linear_sync
      }
    case CollKind::Barrier: return "dissemination_barrier";
    case CollKind::Bcast:
      switch (alg) {
        case 2:
        case 3: return "pipeline_bcast";
        case 4:
        case 8:
        case 9: return "scatter_allgather_bcast";
        default: return "binomial_bcast";  // 1 basic_linear, 5 binary_tree, 6 binomial, 7 knomial
      }
    case CollKind::Reduce: return "binomial_reduce";
    case CollKind::ReduceScatter: return alg == 3 ? "ring_reduce_scatter" : "recursive_halving_reduce_scatter";
    case CollKind::Allgather:
      switch (alg) {
        case 2: return "bruck_allgather";
        case 3:
        case 6: return "recursive_doubling_allgather";
        default: return "ring_allgather";  // 4 ring, 5 neighbor (1 linear is never chosen)
      }
  }
  return "";
}

}  // namespace

AlgoPick openmpi_default(CollKind k, uint64_t bytes, uint32_t n) {
  uint64_t total = bytes;
  int alg = 0;
  switch (k) {
    case CollKind::Allreduce: alg = lookup(kAllreduce, n, total); break;
    case CollKind::Alltoall:
      total = n ? bytes / n : bytes;
      alg = lookup(kAlltoall, n, total);
      break;
    case CollKind::Barrier: alg = lookup(kBarrier, n, 0); break;
    case CollKind::Bcast: alg = lookup(kBcast, n, total); break;
    case CollKind::Reduce: alg = lookup(kReduce, n, total); break;
    case CollKind::ReduceScatter: alg = lookup(kReduceScatter, n, total); break;
    case CollKind::Allgather:
      total = n ? bytes / n : bytes;
      alg = lookup(kAllgather, n, total);
      break;
  }
  AlgoPick p;
  p.schedule = ours(k, alg);
  // The fixed rules pass segsize 0: Open MPI's chain and pipeline broadcasts then send the
  // whole message at once.
  if (p.schedule == "pipeline_bcast") p.params.emplace_back("segments", 1);
  p.why = "Open MPI 4.1 tuned picks ";
  p.why += openmpi_name(k, alg);
  p.why += " (";
  p.why += std::to_string(alg);
  p.why += ")";
  if (k != CollKind::Barrier) {
    p.why += " for ";
    p.why += std::to_string(total);
    p.why += k == CollKind::Allgather ? " B per rank" : k == CollKind::Alltoall ? " B per peer" : " B";
  }
  p.why += " at N = ";
  p.why += std::to_string(n);
  return p;
}

}  // namespace sg
