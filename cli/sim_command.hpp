// The pieces of `stepgraph sim` (cli/sim_command.cpp): points planned from the flags, run one by
// one (or split over MPI processes, cli/sim_mpi.cpp), reported (and plotted, cli/plot.cpp).
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/dsl/diagnostics.hpp"
#include "core/graph/algorithm_choice.hpp"
#include "sim/point.hpp"
#include "sim/sim.hpp"

namespace sg::cli {

// One point of a sweep: a target at N ranks, with the swept parameter's value.
struct SweepPoint {
  size_t target = 0;  // index into PointPlan::targets
  uint32_t n = 0;
  uint64_t value = 0;  // the swept parameter's value
  bool has_value = false;
};

struct PointPlan {
  std::vector<std::string> targets;
  std::vector<std::string> names;  // the schedule each target names (for trace file names)
  // Per target: the --set values it takes, and whether the swept parameter is one of its own.
  std::vector<std::vector<std::pair<std::string, std::string>>> target_sets;
  std::vector<bool> sweeps;
  std::string param;  // the swept parameter ("" if none)
  uint64_t max_memory = 0;
  std::vector<SweepPoint> points;
  sim::SimOptions sim;
  AlgoChoice algo;               // --algo: collective steps' algorithms (empty: Open MPI's choice)
  sim::PlatformChoice platform;  // --platform, read once (api::read_platform)
};

// One point's outcome (sim/point.hpp).
using sim::PointResult;

int plan_points(const SimOpts& o, PointPlan& plan);
// --algo, and NCCL_ALGO / NCCL_PROTO from the environment (NCCL's syntax; a located error and 2
// where NCCL would refuse them), into plan.algo.
int parse_algo(const SimOpts& o, PointPlan& plan);
// --model, --protocol, --eager-limit, --gamma, --loggp, --map, --top into SimOptions.
// `platform` gives the reduction speed a calibrated platform file carries (unless --gamma).
int sim_options(const SimOpts& o, const sim::PlatformChoice& platform, sim::SimOptions& so);
// The three above in order, as sim runs them: the points, the options, the algorithm choice;
// the first non-zero exit code.
int plan_sim(const SimOpts& o, PointPlan& plan);
PointResult run_point(const SimOpts& o, const PointPlan& plan, size_t index);
// Runs every point: in this process, or split over the MPI world when started by mpiexec (then
// only rank 0 gets `root` and the merged results). Shows a progress bar on a terminal.
int run_points_distributed(const SimOpts& o, const PointPlan& plan, std::vector<PointResult>& results, bool& root);
int report_points(const SimOpts& o, const PointPlan& plan, const std::vector<PointResult>& results);
// Draws --plot's picture (gnuplot); false with what went wrong in `diags`.
bool plot_points(const SimOpts& o, const PointPlan& plan, const std::vector<PointResult>& results, Diagnostics& diags);

}  // namespace sg::cli
