// One simulation point: a schedule at N ranks with its parameters, built through the pipeline
// (collectives expanded into the algorithms MPI would run), placed on a platform and simulated;
// the result holds everything a report needs, rendered with this process's source lines, and
// travels as JSON between the processes of `mpiexec … stepgraph sim` (cli/sim_mpi.cpp).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/dsl/session.hpp"
#include "core/graph/algorithm_choice.hpp"
#include "sim/sim.hpp"

namespace sg::sim {

struct PointSpec {
  std::string target;  // FILE, FILE:SCHEDULE or a library name
  uint32_t n = 0;
  std::vector<std::pair<std::string, std::string>> sets;  // --set and the swept value, unparsed
  uint64_t max_memory = 0;
  AlgoChoice algo;          // --algo (empty: Open MPI's choice)
  PlatformChoice platform;  // read (sim::read_platform); not read: the default platform (said so in the result)
  SimOptions options;
  std::string trace_file;  // "" = no trace
  bool quiet = false;      // an unsupported point keeps its diagnostics out of `diag`
  // --collectives memo: each collective instance timed by its algorithm run alone, once per shape
  // (sim/memo_collectives.hpp), instead of expanded into the job's graph.
  bool memo = false;
  // Neither the engine nor the collectives' treatment was chosen: where the default (SimGrid,
  // every collective expanded) cannot hold the instance, the point is simulated with the
  // analytic engine and the collectives costed once per shape instead, and says so (engine_note).
  bool engine_defaulted = false;
};

// One point's outcome (serialisable: MPI processes send these).
struct PointResult {
  std::string schedule, platform, model, param, error, diag, warnings, text, factor_name, trace_file;
  std::string network_model;  // the platform's (ideal, lv08, cm02); `model` is the engine
  // The protocol's line: its wire overhead, where the program has one (MSCCL LL, LL128), or what
  // NCCL runs for a library NCCL schedule named on GPU nodes (its channels, chunks and costs).
  std::string wire;
  std::string engine_note;  // the engine chosen for the default's sake (PointSpec::engine_defaulted)
  // Whether ranks alike were simulated once a class (sim/symmetry.hpp): the line, and as JSON.
  std::string symmetry;
  nlohmann::json symmetry_json = nullptr;
  int64_t window_min = -1, window_max = -1;  // the sizes the runtime picks the program for (MSCCL)
  uint32_t n = 0;
  uint64_t param_value = 0, size_bytes = 0, messages = 0, bytes = 0, events = 0;
  // size_bytes, algbw and busbw mean something only for one collective over every rank (world).
  bool world = false;
  double time_s = 0, algbw = 0, busbw = 0, wall_s = 0, slowest_s = 0;
  double compute_s = 0, comm_s = 0, overlap_s = 0;
  double cp_local_s = 0, cp_comm_s = 0, cp_sync_s = 0, exposed_s = 0;  // SimResult's, for the overlap line
  // The step time on the slowest rank: compute_s, exposed communication (by statement in
  // breakdown_json and breakdown_text, rendered with the source lines) and idle (SimResult's).
  double exposed_total_s = 0, idle_s = 0;
  nlohmann::json breakdown_json = nlohmann::json::array();
  std::string breakdown_text;
  double model_flops = 0, tflops = 0, mfu = 0;  // attention: model FLOPs, TFLOP/s, and that over the platform's peak
  uint32_t slowest_rank = 0;
  bool completed = false, unsupported = false;
  int status = 0;  // exit code this point asks for: 0 ok, 1 deadlock, 2 bad input, 3 engine failure
  nlohmann::json critical_json, links_json;
  // Collectives expanded (composite schedules): per kind of instance (collective, group size,
  // bytes, algorithm), how many, their simulated time (mean, max) and bus bandwidth.
  nlohmann::json collectives_json = nlohmann::json::array();
  std::vector<std::string> expansions;  // a line per row of collectives_json
  // --collectives memo: what was costed once per shape and what that leaves out (the line), and as
  // JSON {instances, shapes, steps_not_expanded, wall_s, not_modelled}.
  std::string memo;
  nlohmann::json memo_json = nullptr;
  // What the check before the run found (cli/precheck.hpp; the CLI fills these, sim does not):
  // its JSON object (null when none ran) and its line for the header.
  nlohmann::json check = nullptr;
  std::string check_line;
  // The parameter values the point was built with ("seq = 131,072, heads = 32"), and as JSON.
  std::string params;
  nlohmann::json params_json = nlohmann::json::object();
};

PointResult run_point(const PointSpec& p);

// A refused platform, as read_platform, size_platform, parse_platform or load_xml_platform
// reported it into s.diags (from index `from` on): its message, and where it points somewhere
// (into the --platform string itself, shown as the file "--platform", or into the file it names)
// the diagnostic rendered as file:line:col with the line and a caret ("" where it points nowhere
// in particular: the caller says "bad --platform 'SPEC': MESSAGE").
struct PlatformError {
  std::string message;
  std::string located;
};
PlatformError platform_error(const Session& s, size_t from);

// The public JSON of a point (`sim --json`).
void to_json(nlohmann::json& j, const PointResult& r);
// Everything, for the trip between processes, and back.
nlohmann::json point_to_json(const PointResult& r);
PointResult point_from_json(const nlohmann::json& j);

}  // namespace sg::sim
