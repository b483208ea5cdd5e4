// What a postcondition means for bandwidth, as nccl-tests counts it: the "size" of a run (the
// bytes per rank of the buffer the postcondition is about) and the bus factor that turns
// algorithm bandwidth (size / time) into bus bandwidth, comparable across rank counts. Kept next
// to the postconditions because both read the same `expect`; sim and exec print them.
#pragma once
#include <cstdint>
#include <string>

#include "core/graph/step_graph.hpp"

namespace sg {

// nccl-tests' bus bandwidth factor for a postcondition's kind over n ranks, and its name
// ("2(N-1)/N" for an all-reduce, "(N-1)/N" for the gathers and scatters, "1" otherwise).
double bus_factor(ExpectKind k, uint32_t n, std::string& name);

// The "size" nccl-tests would print: the bytes per rank of the buffer the first postcondition is
// about (the whole gathered buffer for an all-gather, the send buffer for an all-to-all); 0 and
// kind Nothing when there is none. `kind` gets that postcondition's kind.
uint64_t expected_size(const StepGraph& g, ExpectKind& kind);

// Whether the schedule is one collective over every rank (its only postcondition, a collective
// whose group is the world, and no compute step): only then do nccl-tests' size, algbw and busbw
// describe it. With its kind and size when true.
bool world_collective(const StepGraph& g, ExpectKind& kind, uint64_t& bytes);

// Attention's work in the count FlashAttention's and the ring-attention benchmarks report:
// 4·batch·heads·seq²·dim for the forward, halved with a causal mask, × 2.5 for the backward, from
// the schedule's parameters seq, heads, dim (batch: 1 when absent) and its attention postcondition.
// False when the schedule has no attention postcondition or lacks one of those parameters.
bool attention_model_flops(const StepGraph& g, double& flops);

}  // namespace sg
