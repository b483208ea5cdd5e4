// The executor's local arithmetic: element-wise reductions over a chunk range (built with -O3
// so GCC vectorises them) and the stand-in for a generic `compute … flops F` step, which does F
// floating-point operations for real so that overlap with communication is measured, not assumed.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/base/kinds.hpp"
#include "core/graph/step_graph.hpp"

namespace sg::exec {

// dst[i] = dst[i] OP src[i] for n elements of type t.
void reduce_into(DType t, ReduceOp op, void* dst, const void* src, size_t n);

// Performs about `flops` floating-point operations (fused multiply-adds on a small array that
// stays in L1) and returns a value that depends on all of them, so none can be optimised away.
double burn_flops(double flops);

}  // namespace sg::exec
