// Deadlock counterexamples from a stuck state, for both engines.
#pragma once
#include <vector>

#include "verify/verdict.hpp"

namespace sg::verify {

// Where an execution stopped: per step kStepIssued | kStepCompleted, and per point-to-point
// step what it matched (kNoStep if nothing).
struct ExecState {
  const std::vector<uint8_t>& status;
  const std::vector<StepId>& partner;
};

Counterexample build_deadlock(const StepGraph& g, const ExecState& state, SendMode mode);

}  // namespace sg::verify
