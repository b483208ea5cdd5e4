// Deterministic inputs and the numbers a postcondition expects (nccl-tests' trick): every input
// element is a small integer, a function of (buffer, rank, chunk, element) for a contribution
// d(r, c) and of (buffer, item, element) for an item x(i), so that sums over any number of ranks
// are exact in every supported type and a wrong element is a wrong answer, not rounding.
// The expected value of a chunk is its symbolic postcondition value (core/interp/postcondition)
// evaluated with those numbers under the schedule's reduction operator.
#pragma once
#include <cstdint>

#include "core/base/kinds.hpp"
#include "core/interp/input_values.hpp"
#include "core/interp/value.hpp"

namespace sg::exec {

// Element e of d(r, c) in buffer buf, and of x(i): integers in [-4, 4] (core/interp/input_values.hpp,
// shared with the CUDA path's device-side fill).
using sg::contrib_value;
using sg::item_value;

// The value of v at element e under op. False when v is not numeric here (undefined, or an
// attention term, which the attention issue gives numbers to).
bool evaluate(const Value& v, ReduceOp op, uint64_t e, double& out);

}  // namespace sg::exec
