// The Z3 engine (see z3_engine.cpp). Built when STEPGRAPH_WITH_Z3 is ON.
#pragma once
#include "verify/verdict.hpp"

namespace sg::verify {

struct Z3Options {
  unsigned timeout_ms = 0;          // per query; 0: none
  uint64_t max_pairs = 2'000'000;   // candidate send/receive pairs beyond which it gives up
};

EngineResult run_z3(const StepGraph& g, SendMode mode, const Z3Options& opts = {});

}  // namespace sg::verify
