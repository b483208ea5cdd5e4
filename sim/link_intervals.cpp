#include "sim/link_intervals.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/base/format.hpp"
#include "core/base/sizes.hpp"

namespace sg::sim {

std::vector<TraceLink> link_intervals(const StepGraph& g, const Platform& p, const std::vector<uint32_t>& map,
                                      std::span<const double> transfer_starts, std::span<const double> arrivals, size_t max_crossings,
                                      std::string& note) {
  note.clear();
  if (transfer_starts.size() < g.size() || arrivals.size() < g.size()) {
    note = "no link tracks: the run recorded no transfer times";
    return {};
  }
  if (!p.has_routes()) {
    note = "no link tracks: the platform's routes are unknown";
    return {};
  }
  auto host = [&](uint32_t rank) { return map.empty() ? rank : map[rank]; };
  // The messages that moved, and how many links each crossed (the cap counts crossings).
  struct Message {
    double t0;
    StepId send;
    uint32_t hops;
  };
  std::vector<Message> messages;
  std::vector<uint32_t> ids;
  double lat = 0;
  size_t crossings = 0;
  for (StepId s = 0; s < g.size(); ++s) {
    if (g.kind(s) != StepKind::Send || !std::isfinite(transfer_starts[s]) || !std::isfinite(arrivals[s])) continue;
    p.route(host(g.rank(s)), host(g.peer(s)), ids, lat);
    messages.push_back({transfer_starts[s], s, static_cast<uint32_t>(ids.size())});
    crossings += ids.size();
  }
  // Over the cap: a prefix in time, so the counters stay exact up to where they stop.
  double until = std::numeric_limits<double>::infinity();
  if (crossings > max_crossings) {
    std::stable_sort(messages.begin(), messages.end(), [](const Message& a, const Message& b) { return a.t0 < b.t0; });
    size_t kept = 0, i = 0;
    for (; i < messages.size() && kept + messages[i].hops <= max_crossings; ++i) kept += messages[i].hops;
    until = messages[i].t0;
    size_t before = 0;
    for (const Message& m : messages) before += m.t0 < until ? 1 : 0;
    note = "link tracks capped at " + with_commas(max_crossings) + " link crossings: they show the " + with_commas(before) + " of " +
           with_commas(messages.size()) + " messages that began to move before " + human_time(until);
  }
  std::vector<std::vector<TraceLinkUse>> uses(p.links.size());
  for (const Message& m : messages) {
    if (!(m.t0 < until)) continue;
    p.route(host(g.rank(m.send)), host(g.peer(m.send)), ids, lat);
    uint64_t bytes = g.range_bytes(g.range(m.send));
    for (uint32_t id : ids) uses[id].push_back({m.t0, arrivals[m.send], bytes});
  }
  std::vector<TraceLink> out;
  for (uint32_t id = 0; id < uses.size(); ++id)
    if (!uses[id].empty()) out.push_back({p.links[id].name, p.links[id].bw, std::move(uses[id])});
  return out;
}

TraceRun trace_run(const StepGraph& g, const Platform& p, const SimOptions& o, const SimResult& r, size_t max_crossings) {
  TraceRun t;
  t.starts = r.starts;
  t.ends = r.ends;
  t.partners = r.partners;
  t.transfer_starts = r.transfer_starts;
  t.arrivals = r.arrivals;
  // The analytic engine runs a rank's local work one piece after the other (a piece waits for
  // the CPU from its start): it ran for its last flops / speed + seconds. SimGrid starts it at
  // once and shares the CPU among what runs at the same time: it ran from start to end.
  if (o.model == Model::Analytic)
    t.work = [&g, &p, &o](StepId s) {
      LocalWork w = local_work(g, o.runtime, s);
      return w.flops / p.speed + w.seconds;
    };
  t.links = link_intervals(g, p, o.map, r.transfer_starts, r.arrivals, max_crossings, t.links_note);
  return t;
}

}  // namespace sg::sim
