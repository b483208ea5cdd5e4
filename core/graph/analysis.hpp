// What a schedule costs each rank, read off its step graph alone (no timing model): bytes and
// messages sent and received, compute (flops and attention tiles), and the peak memory of the
// buffers it needs beyond its inputs and outputs. `stepgraph analyze` prints it; the figures
// people compare context-parallel attention variants by (RingX's table, the causal imbalance of a
// contiguous ring) come out of it.
#pragma once
#include <cstdint>
#include <vector>

#include "core/graph/step_graph.hpp"

namespace sg {

struct RankCost {
  uint64_t bytes_sent = 0, bytes_received = 0;
  uint64_t messages_sent = 0, messages_received = 0;
  double flops = 0;            // compute steps' flops
  uint64_t tiles = 0;          // attn and attn_bwd steps
  double tile_work = 0;        // tiles weighted by their area: a full tile 1, a causal (diagonal) one 1/2
  uint64_t reduced_bytes = 0;  // bytes combined by reductions (reduce steps, reducing receives)
  uint64_t peak_extra_bytes = 0;
};

struct GraphCost {
  std::vector<RankCost> ranks;
  // Buffers counted as extra memory: neither initialised by an `init` nor named by an `expect`
  // (double buffers, gathered copies, partial accumulators, an algorithm's scratch).
  std::vector<uint32_t> extra_buffers;
  // max / mean of the ranks' compute flops (of their tile work when no step gives flops; 1 when
  // nothing computes): the load imbalance.
  double imbalance = 1;
  bool has_collectives = false;  // unexpanded collective steps: their traffic is not counted
};

// Per rank. Messages are the graph's send steps (a collective left unexpanded moves nothing
// here). Peak extra memory: a chunk of an extra buffer is live on a rank from the first step of
// that rank touching it to the last, in the rank's program order, and the peak is the largest
// sum of live chunk bytes at any step (a lower bound on what an implementation must allocate).
GraphCost analyze_cost(const StepGraph& g);

}  // namespace sg
