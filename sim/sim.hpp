// `stepgraph sim`: simulate a step graph on a platform with SimGrid (contention) or the analytic
// LogGP / α-β engine (speed). Both run the same semantics (sim/runtime.hpp) and return the same
// result; docs/sim.md describes the models.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dsl/source.hpp"
#include "core/graph/step_graph.hpp"
#include "core/graph/symmetry.hpp"
#include "core/interp/stuck.hpp"
#include "sim/platform.hpp"
#include "sim/runtime.hpp"

namespace sg::sim {

enum class Model : uint8_t { SimGrid, Analytic };
const char* model_name(Model m);

// LogGP(S) parameters of the analytic engine (--loggp). When given, the engine follows
// LogGOPSim's rules (docs/sim.md), so its answers can be held against LogGOPSim's on the same
// schedule exported as GOAL: o per message on the sending and the receiving CPU, g between two
// messages on one NIC, O per byte on the CPU, and L and G from the platform's route unless given.
struct LogGP {
  bool enabled = false;
  double o = 0, g = 0, O = 0;
  double L = -1, G = -1;  // seconds, seconds per byte; < 0: from the platform's route
};

// A run of a quotient graph (core/graph/symmetry.hpp; sim/symmetry.hpp decides when): one rank
// per class of ranks a translation by `shift` cannot tell apart, standing for all of them.
struct QuotientRun {
  const Quotient* quotient = nullptr;  // the graph run: its shift, the full graph's steps, each send's destination
  // Per link: the representative of its class (the links the shift maps onto each other carry the
  // same flows at the same times): the analytic engine's ports.
  std::vector<uint32_t> port;
  const RankSymmetry& shift() const { return quotient->shift; }
  uint32_t copies() const { return quotient->shift.size(); }
  uint32_t full_rank(uint32_t c) const { return quotient->shift.representative(c); }  // (the graph's rank c is class c)
  uint32_t dst(StepId send) const { return quotient->dst[send]; }                     // in the full graph
};

struct SimOptions {
  Model model = Model::SimGrid;
  RuntimeOptions runtime;
  LogGP loggp;                // analytic only
  std::vector<uint32_t> map;  // rank -> host; empty: rank r on host r
  bool trace = false;         // keep every step's start and end (and each message) for a trace
  std::vector<StepId> watch;  // steps whose end times the result reports (SimResult::watched)
  bool rank_ends = false;     // report when each rank ended (SimResult::rank_ends), exactly
  unsigned top = 5;           // how many critical-path statements and links to report
  // Called now and then with the fraction of steps completed (for a progress bar; the SimGrid
  // engine calls it in its child process, which shares the terminal).
  std::function<void(double)> progress;
  // Simulate one rank per class of ranks alike where the graph and the platform prove the classes
  // (sim/symmetry.hpp; --no-symmetry: false, every rank).
  bool symmetry = true;
  // Where symmetry may spare it, the simulator's state for every rank is not counted before the
  // graph is built: a simulation of every rank whose state would pass this is refused then
  // (SimResult::refused; 0: no limit).
  uint64_t max_memory = 0;
  const QuotientRun* quotient = nullptr;  // set by simulate_symmetric: the graph is a quotient
};

// One statement's share of the critical path.
struct CriticalEntry {
  uint32_t stmt = 0;
  Loc loc;
  std::string what;    // "send", "compute bwd", …
  double seconds = 0;  // time on the critical path spent in its steps (and their transfers)
  uint64_t steps = 0;
};

struct LinkLoad {
  std::string name;
  uint64_t bytes = 0;
  // Utilisation: bytes / (bandwidth × simulated time), the share of the run the link would be busy
  // carrying its bytes at full speed. The busiest links are ranked by it, not by bytes: a fast
  // NVLink carrying much is less of a bottleneck than a NIC carrying less.
  double busy = 0;
};

struct SimResult {
  bool completed = false;  // every step ran; false: a deadlock (see stuck)
  std::string error;       // the engine failed (empty otherwise)
  bool refused = false;    // not run: a simulation of every rank would pass SimOptions::max_memory (error says)
  std::string model, platform;
  double time_s = 0;  // simulated
  uint64_t messages = 0, bytes = 0, steps = 0;
  uint32_t slowest_rank = 0;
  double slowest_rank_s = 0;  // when the slowest rank finished
  // On the slowest rank: time computing, time with messages of its own in flight (sent or to be
  // received), and how much of the two overlapped (communication while it computed).
  double compute_s = 0, comm_s = 0, overlap_s = 0;
  // The critical path's length by what it was spent on (they add up to time_s): local work
  // (compute, copies, reductions, a receive's processing), messages the path waited for (from a
  // send to its arrival), and synchronisation (waits, collectives waiting for their members).
  double cp_local_s = 0, cp_comm_s = 0, cp_sync_s = 0;
  // Of cp_comm_s, the slowest rank's messages: comm_s - exposed_s of its communication is off the
  // critical path (it delayed nothing).
  double exposed_s = 0;
  // The step time on the slowest rank (its parts add up to time_s): compute_s; communication
  // exposed there (messages in flight while it computed nothing), by statement, most first
  // (CriticalEntry's steps unused), at most `top`, and in all; and idle_s, the rest: it waited
  // with nothing of its own moving, for other ranks' work (a pipeline's bubble) or members.
  std::vector<CriticalEntry> exposed_by;
  double exposed_total_s = 0, idle_s = 0;
  std::vector<double> watched;    // SimOptions::watch: when each step ended (NaN: never; single precision unless traced)
  std::vector<double> rank_ends;  // SimOptions::rank_ends: per rank (of the full graph), when its last step ended
  std::vector<CriticalEntry> critical;
  std::vector<LinkLoad> links;
  StuckState stuck;     // where it stopped, when !completed
  double wall_s = 0;    // the simulation's own run time
  uint64_t events = 0;  // transfers and local activities timed
  // With SimOptions::trace: per step start and end (NaN if it never ran), what each send and
  // receive matched (kNoStep if nothing), and per send when its data began to move and when it
  // arrived (Runtime::transfer_starts, arrival_times; NaN elsewhere).
  std::vector<double> starts, ends;
  std::vector<StepId> partners;
  std::vector<double> transfer_starts, arrivals;
};

// Runs the graph (collectives already expanded, or left to complete at no cost). The SimGrid
// engine runs in a child process (SimGrid allows one engine per process): many simulations can
// run from one stepgraph process, and a crash in one is reported, not inherited.
SimResult simulate(const StepGraph& g, const Platform& p, const SimOptions& o);

// The engines (sim/analytic.cpp, sim/simgrid_engine.cpp); simulate() picks one.
SimResult simulate_analytic(const StepGraph& g, const Platform& p, const SimOptions& o);
SimResult simulate_simgrid(const StepGraph& g, const Platform& p, const SimOptions& o);

// What both engines report from a finished runtime (sim/summary.cpp): time, slowest rank,
// critical path, stuck state, link loads (through the platform's routes).
void summarise(const StepGraph& g, const Platform& p, const SimOptions& o, const Runtime& rt, SimResult& r);

}  // namespace sg::sim
