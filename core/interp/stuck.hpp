// Where a run stopped (see stuck.cpp).
#pragma once
#include <string>
#include <vector>

#include "core/interp/interpret.hpp"

namespace sg {

struct StuckRank {
  uint32_t rank = 0;
  StepId step = kNoStep;           // its first step that cannot complete
  std::vector<uint32_t> waits_on;  // the ranks it waits for
  std::string why;                 // "waits for a message from rank 1 (tag 0)"
  Loc cause;                       // a step that never becomes ready: the line it waits on (else invalid)
};

struct StuckState {
  std::vector<StuckRank> ranks;            // every rank that cannot finish, in rank order
  std::vector<uint32_t> cycle;             // a wait-for cycle, first rank repeated at the end; or empty
  std::vector<uint32_t> awaited_finished;  // ranks waited for that have finished their programs
};

// status: per step kStepIssued | kStepCompleted; partner: what each point-to-point step matched.
StuckState analyze_stuck(const StepGraph& g, const std::vector<uint8_t>& status, const std::vector<StepId>& partner, SendMode mode);

}  // namespace sg
