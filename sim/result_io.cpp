#include "sim/result_io.hpp"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

namespace sg::sim {

namespace {

using nlohmann::json;

// NaN (a step that never ran) has no JSON form: null stands for it.
json times(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(std::isnan(x) ? json(nullptr) : json(x));
  return a;
}
std::vector<double> times(const json& a) {
  std::vector<double> v;
  v.reserve(a.size());
  for (const auto& x : a) v.push_back(x.is_null() ? std::numeric_limits<double>::quiet_NaN() : x.get<double>());
  return v;
}

// One statement's seconds (the critical path's, or its exposed communication's).
json entry_json(const CriticalEntry& c) {
  return {{"stmt", c.stmt}, {"file", c.loc.file},   {"line", c.loc.line}, {"col", c.loc.col},
          {"what", c.what}, {"seconds", c.seconds}, {"steps", c.steps}};
}
CriticalEntry entry_from_json(const json& c) {
  CriticalEntry e;
  e.stmt = c.at("stmt");
  e.loc.file = c.at("file");
  e.loc.line = c.at("line");
  e.loc.col = c.at("col");
  e.what = c.at("what");
  e.seconds = c.at("seconds");
  e.steps = c.at("steps");
  return e;
}

}  // namespace

std::string result_to_json(const SimResult& r) {
  json j;
  j["completed"] = r.completed;
  j["error"] = r.error;
  j["model"] = r.model;
  j["platform"] = r.platform;
  j["time_s"] = r.time_s;
  j["messages"] = r.messages;
  j["bytes"] = r.bytes;
  j["steps"] = r.steps;
  j["slowest_rank"] = r.slowest_rank;
  j["slowest_rank_s"] = r.slowest_rank_s;
  j["compute_s"] = r.compute_s;
  j["comm_s"] = r.comm_s;
  j["overlap_s"] = r.overlap_s;
  j["cp"] = {r.cp_local_s, r.cp_comm_s, r.cp_sync_s, r.exposed_s};
  j["watched"] = times(r.watched);
  j["wall_s"] = r.wall_s;
  j["events"] = r.events;
  json crit = json::array();
  for (const auto& c : r.critical) crit.push_back(entry_json(c));
  j["critical"] = crit;
  json exposed = json::array();
  for (const auto& c : r.exposed_by) exposed.push_back(entry_json(c));
  j["exposed_by"] = exposed;
  j["exposed_total_s"] = r.exposed_total_s;
  j["idle_s"] = r.idle_s;
  json links = json::array();
  for (const auto& l : r.links) links.push_back({{"name", l.name}, {"bytes", l.bytes}, {"busy", l.busy}});
  j["links"] = links;
  json ranks = json::array();
  for (const auto& s : r.stuck.ranks) ranks.push_back({{"rank", s.rank}, {"step", s.step}, {"waits_on", s.waits_on}, {"why", s.why}});
  j["stuck"] = {{"ranks", ranks}, {"cycle", r.stuck.cycle}, {"awaited_finished", r.stuck.awaited_finished}};
  j["starts"] = times(r.starts);
  j["ends"] = times(r.ends);
  j["partners"] = r.partners;
  j["transfer_starts"] = times(r.transfer_starts);
  j["arrivals"] = times(r.arrivals);
  return j.dump();
}

bool result_from_json(const std::string& text, SimResult& r, Diagnostics& diags) {
  try {
    json j = json::parse(text);
    r.completed = j.at("completed");
    r.error = j.at("error");
    r.model = j.at("model");
    r.platform = j.at("platform");
    r.time_s = j.at("time_s");
    r.messages = j.at("messages");
    r.bytes = j.at("bytes");
    r.steps = j.at("steps");
    r.slowest_rank = j.at("slowest_rank");
    r.slowest_rank_s = j.at("slowest_rank_s");
    r.compute_s = j.at("compute_s");
    r.comm_s = j.at("comm_s");
    r.overlap_s = j.at("overlap_s");
    const json& cp = j.at("cp");
    r.cp_local_s = cp.at(0), r.cp_comm_s = cp.at(1), r.cp_sync_s = cp.at(2), r.exposed_s = cp.at(3);
    r.watched = times(j.at("watched"));
    r.wall_s = j.at("wall_s");
    r.events = j.at("events");
    for (const auto& c : j.at("critical")) r.critical.push_back(entry_from_json(c));
    for (const auto& c : j.at("exposed_by")) r.exposed_by.push_back(entry_from_json(c));
    r.exposed_total_s = j.at("exposed_total_s");
    r.idle_s = j.at("idle_s");
    for (const auto& l : j.at("links")) r.links.push_back({l.at("name"), l.at("bytes"), l.at("busy")});
    for (const auto& s : j.at("stuck").at("ranks"))
      r.stuck.ranks.push_back({s.at("rank"), s.at("step"), s.at("waits_on").get<std::vector<uint32_t>>(), s.at("why"), Loc{}});
    r.stuck.cycle = j.at("stuck").at("cycle").get<std::vector<uint32_t>>();
    r.stuck.awaited_finished = j.at("stuck").at("awaited_finished").get<std::vector<uint32_t>>();
    r.starts = times(j.at("starts"));
    r.ends = times(j.at("ends"));
    r.partners = j.at("partners").get<std::vector<StepId>>();
    r.transfer_starts = times(j.at("transfer_starts"));
    r.arrivals = times(j.at("arrivals"));
    return true;
  } catch (const std::exception& e) {
    return diags.fail(e.what());
  }
}

void refuse_non_finite_times(SimResult& r) {
  const char* bad = nullptr;
  auto check = [&](double x, const char* what) {
    if (!bad && !std::isfinite(x)) bad = what;
  };
  auto check_all = [&](const std::vector<double>& v, const char* what) {
    for (double x : v)
      if (!std::isnan(x)) check(x, what);  // NaN there: a step that never ran
  };
  check(r.time_s, "the simulated time");
  check(r.slowest_rank_s, "the slowest rank's time");
  for (double x : {r.compute_s, r.comm_s, r.overlap_s, r.cp_local_s, r.cp_comm_s, r.cp_sync_s, r.exposed_s, r.exposed_total_s, r.idle_s})
    check(x, "a rank's time");
  for (const auto& c : r.critical) check(c.seconds, "a time on the critical path");
  for (const auto& c : r.exposed_by) check(c.seconds, "a statement's exposed communication");
  for (const auto& l : r.links) check(l.busy, "a link's busy share");
  check_all(r.starts, "a step's start");
  check_all(r.ends, "a step's end");
  check_all(r.watched, "a step's end");
  check_all(r.transfer_starts, "a message's start");
  check_all(r.arrivals, "a message's arrival");
  if (!bad) return;
  SimResult refused;
  refused.model = r.model;
  refused.platform = r.platform;
  refused.wall_s = r.wall_s;
  refused.events = r.events;
  refused.error = std::string(bad) +
                  " is not a finite number (it overflowed): the platform's or the options' numbers are too far "
                  "out (docs/sim.md, \"Numbers in range\")";
  r = std::move(refused);
}

}  // namespace sg::sim
