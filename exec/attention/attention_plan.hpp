// The attention plan's two halves (internal to exec/attention/attention_plan*.cpp, included by nothing
// else): plan_attention (exec/attention/attention_plan.cpp), collective over the ranks, calls plan_local
// (exec/attention/attention_plan_local.cpp) for what one rank can read and check alone.
#pragma once
#include <string>

#include "core/dsl/diagnostics.hpp"
#include "core/graph/step_graph.hpp"
#include "exec/attention/attention_exec.hpp"

namespace sg::exec::attention_detail {

// This rank's part of plan_attention, without collectives (so that a rank that refuses still
// takes part in the ones that follow).
bool plan_local(const StepGraph& g, AttentionLayout& a, Diagnostics& diags);

}  // namespace sg::exec::attention_detail
