// The explicit engine (see explicit_engine.cpp).
#pragma once
#include <chrono>

#include "verify/verdict.hpp"

namespace sg::verify {

struct ExplicitOptions {
  uint64_t max_executions = 20000;  // bound on the executions explored with wildcard receives
  bool strict = false;              // an unfinished search yields Unknown even when it found a defect
  // The search stops here (an unfinished search, like one cut by max_executions).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

EngineResult run_explicit(const StepGraph& g, SendMode mode, const ExplicitOptions& opts = {});

}  // namespace sg::verify
