// A point's result as JSON and back (sim/point.hpp): what `sim --json` prints, and what the
// sweep's worker processes hand back to the parent.
#include <string>
#include <vector>

#include "sim/point.hpp"

namespace sg::sim {

void to_json(nlohmann::json& j, const PointResult& r) {
  // A run that never finished has no time: null, not the moment it stopped.
  auto when = [&](double x) { return r.completed ? nlohmann::json(x) : nlohmann::json(nullptr); };
  auto if_world = [&](double x) { return r.completed && r.world ? nlohmann::json(x) : nlohmann::json(nullptr); };
  j = {{"schedule", r.schedule},
       {"ranks", r.n},
       {"platform", r.platform},
       {"model", r.model},
       {"engine", r.model},
       {"network_model", r.network_model},
       {"time_s", when(r.time_s)},
       {"algbw_GBps", if_world(r.algbw)},
       {"busbw_GBps", if_world(r.busbw)},
       {"messages", r.messages},
       {"bytes", r.bytes},
       {"wall_s", r.wall_s},
       {"size_bytes", r.world ? nlohmann::json(r.size_bytes) : nlohmann::json(nullptr)},
       {"completed", r.completed}};
  if (!r.param.empty()) j[r.param] = r.param_value;
  if (!r.error.empty()) j["error"] = r.error;
  if (!r.wire.empty()) j["wire"] = r.wire;
  if (!r.engine_note.empty()) j["engine_note"] = r.engine_note;
  if (!r.symmetry_json.is_null()) j["symmetry"] = r.symmetry_json;
  if (!r.memo_json.is_null()) j["memo"] = r.memo_json;
  if (r.window_min >= 0) j["window"] = {{"min_bytes", r.window_min}, {"max_bytes", r.window_max}};
  if (!r.collectives_json.empty()) j["collectives"] = r.collectives_json;
  if (!r.check.is_null()) j["check"] = r.check;
  if (!r.params_json.empty()) j["params"] = r.params_json;
  if (r.model_flops > 0) j["attention"] = {{"model_flops", r.model_flops}, {"tflops", when(r.tflops)}, {"mfu", when(r.mfu)}};
  if (r.completed) {
    j["slowest_rank"] = r.slowest_rank;
    j["overlap"] = {{"rank", r.slowest_rank},
                    {"compute_s", r.compute_s},
                    {"comm_s", r.comm_s},
                    {"comm_while_computing_s", r.overlap_s},
                    {"comm_on_critical_path_s", r.exposed_s},
                    {"comm_off_critical_path_s", std::max(0.0, r.comm_s - r.exposed_s)}};
    j["breakdown"] = {{"rank", r.slowest_rank},   {"time_s", r.time_s},
                      {"compute_s", r.compute_s}, {"exposed_comm_s", r.exposed_total_s},
                      {"idle_s", r.idle_s},       {"exposed_by_statement", r.breakdown_json}};
    j["critical_path"] = {{"local_s", r.cp_local_s}, {"comm_s", r.cp_comm_s}, {"sync_s", r.cp_sync_s}, {"statements", r.critical_json}};
    j["links"] = r.links_json;
  }
}

nlohmann::json point_to_json(const PointResult& r) {
  nlohmann::json j;
  to_json(j, r);
  // What the public form leaves out or rounds away, for the trip between processes.
  j["_text"] = r.text;
  j["_diag"] = r.diag;
  j["_warnings"] = r.warnings;
  j["_status"] = r.status;
  j["_param"] = r.param;
  j["_factor"] = r.factor_name;
  j["_events"] = r.events;
  j["_slowest_s"] = r.slowest_s;
  j["_unsupported"] = r.unsupported;
  j["_trace"] = r.trace_file;
  j["_raw"] = {r.time_s,    r.algbw,     r.busbw,       r.compute_s, r.comm_s, r.overlap_s, r.cp_local_s,     r.cp_comm_s,
               r.cp_sync_s, r.exposed_s, r.model_flops, r.tflops,    r.mfu,    r.idle_s,    r.exposed_total_s};
  j["_breakdown"] = r.breakdown_json;
  j["_breakdown_text"] = r.breakdown_text;
  j["_symmetry"] = r.symmetry;
  j["_memo"] = r.memo;
  j["_world"] = r.world;
  j["_size"] = r.size_bytes;
  j["_slowest"] = r.slowest_rank;
  j["_critical"] = r.critical_json;
  j["_links"] = r.links_json;
  j["_expansions"] = r.expansions;
  j["_check_line"] = r.check_line;
  j["_params"] = r.params;
  return j;
}

PointResult point_from_json(const nlohmann::json& j) {
  PointResult r;
  r.schedule = j.at("schedule");
  r.n = j.at("ranks");
  r.platform = j.at("platform");
  r.model = j.at("model");
  r.network_model = j.at("network_model");
  r.wire = j.value("wire", "");
  r.engine_note = j.value("engine_note", "");
  r.symmetry = j.value("_symmetry", "");
  if (j.contains("symmetry")) r.symmetry_json = j.at("symmetry");
  r.memo = j.value("_memo", "");
  if (j.contains("memo")) r.memo_json = j.at("memo");
  if (j.contains("window")) r.window_min = j["window"].at("min_bytes"), r.window_max = j["window"].at("max_bytes");
  r.messages = j.at("messages");
  r.bytes = j.at("bytes");
  r.wall_s = j.at("wall_s");
  r.completed = j.at("completed");
  r.param = j.at("_param");
  if (!r.param.empty()) r.param_value = j.at(r.param);
  if (j.contains("error")) r.error = j.at("error");
  if (j.contains("collectives")) r.collectives_json = j.at("collectives");
  if (j.contains("check")) r.check = j.at("check");
  r.check_line = j.value("_check_line", "");
  r.params = j.value("_params", "");
  if (j.contains("params")) r.params_json = j.at("params");
  r.text = j.at("_text");
  r.diag = j.at("_diag");
  r.warnings = j.at("_warnings");
  r.status = j.at("_status");
  r.factor_name = j.at("_factor");
  r.events = j.at("_events");
  r.slowest_s = j.at("_slowest_s");
  r.unsupported = j.at("_unsupported");
  r.trace_file = j.at("_trace");
  const nlohmann::json& raw = j.at("_raw");
  double* fields[] = {&r.time_s,    &r.algbw,     &r.busbw,       &r.compute_s, &r.comm_s, &r.overlap_s, &r.cp_local_s,     &r.cp_comm_s,
                      &r.cp_sync_s, &r.exposed_s, &r.model_flops, &r.tflops,    &r.mfu,    &r.idle_s,    &r.exposed_total_s};
  for (size_t k = 0; k < std::size(fields); ++k) *fields[k] = raw.at(k);
  r.world = j.at("_world");
  r.size_bytes = j.at("_size");
  r.slowest_rank = j.at("_slowest");
  r.critical_json = j.at("_critical");
  r.breakdown_json = j.at("_breakdown");
  r.breakdown_text = j.at("_breakdown_text");
  r.links_json = j.at("_links");
  r.expansions = j.at("_expansions").get<std::vector<std::string>>();
  return r;
}

}  // namespace sg::sim
