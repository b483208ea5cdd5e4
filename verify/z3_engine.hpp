// The Z3 engine (see z3_engine.cpp). Built when STEPGRAPH_WITH_Z3 is ON.
#pragma once
#include <chrono>

#include "verify/verdict.hpp"

namespace sg::verify {

struct Z3Options {
  unsigned timeout_ms = 0;         // per query; 0: none
  uint64_t max_pairs = 2'000'000;  // candidate send/receive pairs beyond which it gives up
  // Pair the k-th receive of a queue no wildcard contests with its k-th send only (implied by
  // MPI's order; off: every compatible pair is a candidate, for testing the general encoding).
  bool fixed_queues = true;
  // The engine gives up (verdict Unknown) at this time, while encoding or solving.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

EngineResult run_z3(const StepGraph& g, SendMode mode, const Z3Options& opts = {});

}  // namespace sg::verify
