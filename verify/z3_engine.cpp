// The Z3 engine: the step graph as an SMT problem over executions.
//
// Variables per step: issued I_s and completed D_s (Booleans), issue time t_s and completion
// time c_s (integers); per candidate pair of an MPI receive r and send m (same destination and
// communicator, compatible source and tag): M_rm, "r takes m". Constraints (the partial
// executions, prefix-closed):
//   I_s => every dependency d holds: D_d and c_d < t_s, or for a nonblocking d: I_d and t_d < t_s
//   D_s => I_s and t_s <= c_s, and what completing means for its kind (a receive: matched to a
//     send issued before it completes; a rendezvous send: matched to a receive posted before it
//     completes; a wait: its handles completed; a collective: every member issued)
//   each receive and each send in at most one pair; MPI's non-overtaking order per channel
// A stuck state adds maximality: whatever could run or complete did. Times make every model a
// real execution (no circular "r completes because m was sent because r completed").
// Queries, in the verdict order: a receive taking a message of another size (unmatched, in any
// partial execution), unmatched and deadlock (stuck states), race (two conflicting
// accesses of one chunk whose intervals overlap), undefined data, lifecycle, wrong result
// (complete executions whose final values break the postcondition; values are sums of 64-bit
// atom hashes, so a multiset is one bit-vector and a receive's value depends on its M_rm).
//
// This file holds the entry (run_z3) and the driver: the queries in the verdict order, each
// solver call and the time limit. The encoding, the queries and the values are apart, in
// z3_encode.cpp, z3_queries.cpp and z3_values.cpp (members of the Encoder of z3_engine_impl.hpp).
#include "verify/z3_engine.hpp"

#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "verify/static_checks.hpp"
#include "verify/z3_engine_impl.hpp"

namespace sg::verify {

namespace detail {

EngineResult Encoder::run() {
  auto t0 = std::chrono::steady_clock::now();
  EngineResult res;
  try {
    build();
    phase("stuck");
    std::optional<Counterexample> found;
    if (!found) found = q_size_mismatch();
    if (!found) found = q_unmatched();
    if (!found) found = q_deadlock();
    phase("deadlock");
    if (!found) found = q_race();
    phase("race");
    if (!found) found = q_undefined();
    phase("undefined");
    if (!found) {
      if (auto cx = find_lifecycle(g_)) found = *cx;
    }
    if (!found) found = q_wrong();
    phase("wrong");
    if (found) {
      res.verdict = found->verdict;
      res.cx = *found;
      res.cx.mode = mode_;
      res.cx.engine = "z3";
    } else {
      res.verdict = Verdict::Ok;
    }
    if (!note_.empty()) res.note = note_;
  } catch (const Timeout&) {
    res.verdict = Verdict::Unknown;
    res.complete = false;
    res.timed_out = std::chrono::steady_clock::now() + std::chrono::milliseconds(50) >= o_.deadline;
    res.note = res.timed_out   ? "z3 stopped at the time limit"
               : note_.empty() ? "z3 gave up (per-query timeout or resource limit)"
                               : "z3 gave up: " + note_;
  } catch (const z3::exception& e) {
    res.verdict = Verdict::Unknown;
    res.note = std::string("z3 error: ") + e.msg();
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

void Encoder::phase(const char* what) {
  if (!std::getenv("STEPGRAPH_Z3_DEBUG")) return;
  auto now = std::chrono::steady_clock::now();
  std::fprintf(stderr, "z3 phase %s: %.3f s\n", what, std::chrono::duration<double>(now - phase_t_).count());
  phase_t_ = now;
}

z3::check_result Encoder::check(const std::vector<z3::expr>& extra) {
  // Each query gets what is left of the time (and at most the per-query limit).
  auto now = std::chrono::steady_clock::now();
  if (now >= o_.deadline) throw Timeout{};
  if (o_.deadline != std::chrono::steady_clock::time_point::max() || o_.timeout_ms) {
    uint64_t ms = o_.timeout_ms ? o_.timeout_ms : UINT32_MAX;
    if (o_.deadline != std::chrono::steady_clock::time_point::max())
      ms = std::min<uint64_t>(ms, std::chrono::duration_cast<std::chrono::milliseconds>(o_.deadline - now).count() + 1);
    params_.set("timeout", static_cast<unsigned>(ms));
    solver_.set(params_);
  }
  phase("before push");
  solver_.push();
  for (const auto& e : extra) solver_.add(e);
  phase("push+add");
  auto q0 = std::chrono::steady_clock::now();
  z3::check_result r = solver_.check();
  if (std::getenv("STEPGRAPH_Z3_DEBUG"))
    std::fprintf(stderr, "z3 query %d: %s in %.3f s\n", query_++,
                 r == z3::sat     ? "sat"
                 : r == z3::unsat ? "unsat"
                                  : "unknown",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - q0).count());
  if (r == z3::unknown) {
    solver_.pop();
    throw Timeout{};
  }
  if (r == z3::sat) model_ = std::make_unique<z3::model>(solver_.get_model());
  phase("check");
  solver_.pop();
  phase("pop");
  return r;
}

}  // namespace detail

EngineResult run_z3(const StepGraph& g, SendMode mode, const Z3Options& opts) {
  auto t0 = std::chrono::steady_clock::now();
  EngineResult r;
  if (!g.never_ready.empty()) {
    // Steps that wait for an event nothing produces (MSCCL flags no step posts) have no encoding:
    // the explicit engine decides them (it runs the interpreter, which counts them as stuck).
    r.verdict = Verdict::Unknown;
    r.complete = false;
    r.note = "no encoding of steps that never become ready (MSCCL flags no step posts): the explicit engine decides them";
    return r;
  }
  {
    detail::Encoder e(g, mode, opts);  // creating (and destroying) Z3's context is part of its time
    r = e.run();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace sg::verify
