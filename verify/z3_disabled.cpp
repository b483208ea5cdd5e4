// Built instead of z3_engine.cpp when STEPGRAPH_WITH_Z3 is OFF: the engine says it is absent.
#include "verify/z3_engine.hpp"

namespace sg::verify {

EngineResult run_z3(const StepGraph&, SendMode, const Z3Options&) {
  EngineResult r;
  r.verdict = Verdict::Unknown;
  r.note = "this stepgraph was built without Z3 (STEPGRAPH_WITH_Z3=OFF)";
  return r;
}

}  // namespace sg::verify
