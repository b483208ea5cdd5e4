// What both engines report from a finished runtime: the simulated time, the slowest rank, the
// critical path by statement, the busiest links and, after a deadlock, who waits for what.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_set>

#include "core/io/writers.hpp"
#include "sim/sim.hpp"

namespace sg::sim {

const char* model_name(Model m) { return m == Model::SimGrid ? "simgrid" : "analytic"; }

namespace {

// Statements by their seconds, most first (ties: in program order).
bool most_seconds_first(const CriticalEntry& a, const CriticalEntry& b) {
  return a.seconds > b.seconds || (a.seconds == b.seconds && a.stmt < b.stmt);
}

// The critical path, walked back from the step that finished last (the slowest rank's last: of
// ranks that end together the lowest, which a quotient graph holds too): at each step, the input that
// became available last (a dependency's completion, or for a receive the message: its send) is
// the one that held it up. The time between the two is charged to the later step's statement.
// (Waiting for a busy CPU or NIC is charged to the step that waited.) Each segment is also
// counted by what it was: a message the path waited for (a receive's or a send's segment),
// synchronisation (waits, collective steps), or local work.
// On a quotient graph (o.quotient) a step stands for one step of each rank of its class: the walk
// keeps the rank it is on in the full graph (`at`), so that "the slowest rank's messages" are its
// own, not its class's.
void critical_path(const StepGraph& g, const Runtime& rt, const SimOptions& o, uint32_t slowest, SimResult& r) {
  const QuotientRun* q = o.quotient;
  auto dst = [&](StepId s) { return q ? q->dst(s) : g.peer(s); };
  auto full = [&](uint32_t rank) { return q ? q->full_rank(rank) : rank; };
  auto moved = [&](uint32_t rank, uint32_t j) { return q ? q->shift().moved(rank, j) : rank; };
  const uint32_t slowest_full = full(slowest);
  auto end = [&](StepId s) { return rt.finish(s); };
  StepId last = kNoStep;
  for (StepId s = 0; s < g.size(); ++s)
    if (rt.ran(s) && g.rank(s) == slowest && (last == kNoStep || end(s) > end(last))) last = s;
  std::map<uint32_t, CriticalEntry> by_stmt;
  std::map<std::pair<uint32_t, std::string>, double> by_kind;       // (stmt, what) -> seconds
  std::map<std::pair<uint32_t, std::string>, uint64_t> kind_steps;  // (stmt, what) -> steps on the path
  std::unordered_set<uint64_t> seen;
  uint32_t j = 0;  // the step stands for its representative's step moved j times (on a quotient)
  // (A quotient's step is on the path once for each rank it stands for there: keyed with j.)
  for (StepId s = last; s != kNoStep && seen.insert((uint64_t{j} << 32) | s).second;) {
    StepId pred = kNoStep;
    double best = -1;
    bool via_partner = false;  // the message was the last input (not a dependency, even one that is the same quotient step)
    // Only inputs that were there before the step ended: a dependency on a nonblocking step is
    // on its start, and the step may end after the ones that depend on it.
    auto consider = [&](StepId p, bool partner) {
      if (p != kNoStep && rt.ran(p) && end(p) <= end(s) && end(p) > best) best = end(p), pred = p, via_partner = partner;
    };
    for (StepId d : g.deps(s)) consider(d, false);
    if (g.kind(s) == StepKind::Recv) consider(rt.partner(s), true);
    StepKind k = g.kind(s);
    // A collective costed as a whole (RuntimeOptions::collective_times): from its last member's
    // entry on, communication; before, waiting for that member, whose last input is followed.
    double coll_comm = -1;
    const CollectiveTimes* ct = o.runtime.collective_times;
    if (k == StepKind::Collective && ct && ct->has(g.coll(s).instance)) {
      uint32_t i = g.coll(s).instance;
      Runtime::Entries in = rt.collective_entries(i);
      if (in.last_step != kNoStep) {
        // Members that all entered at one instant (alike ranks do) tie: the path stays on this
        // rank, whichever the engine served last (so a quotient's walk and the full one's agree).
        // Otherwise it goes on from the last member's last input.
        StepId m = in.first == in.last ? s : in.last_step;
        // (Compared as the runtime keeps step ends: in single precision unless a trace asks.)
        double at_entry = o.runtime.record_starts ? in.last : static_cast<double>(static_cast<float>(in.last));
        pred = kNoStep, best = -1, via_partner = false;
        for (StepId d : g.deps(m))
          if (rt.ran(d) && end(d) <= at_entry && end(d) > best) best = end(d), pred = d;
        // The member's own time after the last entry, exactly (step ends are single precision).
        const Instance& inst = g.instances[i];
        const StepId* first = g.instance_steps.data() + inst.steps_off;
        auto kk = static_cast<uint32_t>(std::find(first, first + inst.steps_cnt, s) - first);
        coll_comm = kk < inst.steps_cnt ? ct->at(i, kk) : std::max(0.0, end(s) - at_entry);
        // Slowed by other traffic on its ports (the analytic engine's collectives on shared ports).
        if (kk < inst.steps_cnt && end(s) - at_entry > coll_comm * (1 + 1e-6) + 1e-9) coll_comm = end(s) - at_entry;
        coll_comm = std::min(coll_comm, pred == kNoStep ? end(s) : end(s) - end(pred));
      }
    }
    double since = pred == kNoStep ? end(s) : end(s) - end(pred);
    // A receive's segment runs from its last input to its end: whether that input was its
    // message's send or one of its dependencies (the data came later or was there already, then
    // only its processing counts), it is the message's time on the path.
    bool message = k == StepKind::Send || k == StepKind::Recv;
    uint32_t at = moved(full(g.rank(s)), j);  // the rank it is on in the full graph
    uint32_t other_j = j;                     // a receive's partner: the send moved this many times
    if (message) {
      r.cp_comm_s += since;
      StepId other = k == StepKind::Recv ? rt.partner(s) : kNoStep;
      if (other != kNoStep && q) other_j = q->shift().times(dst(other), at);
      bool mine = at == slowest_full || (other != kNoStep && moved(full(g.rank(other)), other_j) == slowest_full) ||
                  (k == StepKind::Send && moved(dst(s), j) == slowest_full);
      if (mine) r.exposed_s += since;
    } else if (coll_comm >= 0) {
      r.cp_comm_s += coll_comm;
      r.cp_sync_s += since - coll_comm;
      if (at == slowest_full) r.exposed_s += coll_comm;
    } else if (k == StepKind::Wait || k == StepKind::Collective) {
      r.cp_sync_s += since;
    } else {
      r.cp_local_s += since;
    }
    CriticalEntry& e = by_stmt[g.stmt(s)];
    e.stmt = g.stmt(s);
    e.loc = g.loc(s);
    std::string what = step_kind_name(g.kind(s));
    if (g.kind(s) == StepKind::Compute && g.compute(s).name < g.names.size()) what += " " + g.names[g.compute(s).name];
    by_kind[{e.stmt, what}] += since;
    ++kind_steps[{e.stmt, what}];
    e.seconds += since;
    if (via_partner) j = other_j;
    s = pred;
  }
  // A statement's steps may be of several kinds (an expanded collective's sends, receives and
  // markers; a transfer's send and receive): it is named by the kind that spent the most time on
  // the path, and counted in steps of that kind (a 7-hop phase is "recv (7 steps)", not 14 for
  // its sends and receives together).
  for (auto& [stmt, e] : by_stmt) {
    double best = -1;
    for (auto it = by_kind.lower_bound({stmt, std::string()}); it != by_kind.end() && it->first.first == stmt; ++it)
      if (it->second > best) best = it->second, e.what = it->first.second;
    e.steps = kind_steps[{stmt, e.what}];
    r.critical.push_back(e);
  }
  std::sort(r.critical.begin(), r.critical.end(), most_seconds_first);
  if (r.critical.size() > o.top) r.critical.resize(o.top);
}

void link_loads(const StepGraph& g, const Platform& p, const SimOptions& o, const Runtime& rt, SimResult& r) {
  if (p.links.empty() || r.time_s <= 0) return;
  std::vector<uint64_t> bytes(p.links.size(), 0);
  std::vector<uint32_t> ids;
  // Bytes by rank pair first (a schedule uses few pairs); a quotient's pair stands for its
  // translates, every one routed.
  const QuotientRun* q = o.quotient;
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> pairs;
  for (StepId s = 0; s < g.size(); ++s)
    if (g.kind(s) == StepKind::Send && rt.ran(s))
      pairs[{q ? q->full_rank(g.rank(s)) : g.rank(s), q ? q->dst(s) : g.peer(s)}] += g.range_bytes(g.range(s));
  const uint32_t copies = q ? q->copies() : 1;
  for (const auto& [pair, k] : pairs) {
    for (uint32_t j = 0; j < copies; ++j) {
      uint32_t a = q ? q->shift().moved(pair.first, j) : pair.first, b = q ? q->shift().moved(pair.second, j) : pair.second;
      if (!o.map.empty()) a = o.map[a], b = o.map[b];
      double lat = 0;
      p.route(a, b, ids, lat);
      for (uint32_t id : ids) bytes[id] += k;
    }
  }
  std::vector<uint32_t> order(p.links.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  // Ranked by utilisation (bytes over what the link could carry in the run), then bytes.
  std::vector<double> busy(p.links.size(), 0);
  for (uint32_t i = 0; i < busy.size(); ++i) busy[i] = p.links[i].bw > 0 ? static_cast<double>(bytes[i]) / (p.links[i].bw * r.time_s) : 0;
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    return busy[x] > busy[y] || (busy[x] == busy[y] && (bytes[x] > bytes[y] || (bytes[x] == bytes[y] && x < y)));
  });
  for (uint32_t i = 0; i < order.size() && r.links.size() < o.top; ++i) {
    uint32_t id = order[i];
    if (bytes[id] == 0) break;
    r.links.push_back({p.links[id].name, bytes[id], busy[id]});
  }
}

}  // namespace

void summarise(const StepGraph& g, const Platform& p, const SimOptions& o, const Runtime& rt, SimResult& r) {
  r.completed = rt.finished();
  // A quotient's messages stand for one a rank of their class.
  const uint64_t copies = o.quotient ? o.quotient->copies() : 1;
  r.messages = rt.messages() * copies;
  r.bytes = rt.bytes() * copies;
  r.steps = o.quotient ? o.quotient->quotient->full_steps : g.size();
  r.time_s = rt.end_time();
  const auto& rank_end = rt.rank_end();
  // The slowest rank: the lowest of those that end last, to 1e-9 (ranks alike end together;
  // a reshare's rounding is no reason to name another, and a quotient graph has the lowest).
  for (uint32_t k = 0; k < g.nranks; ++k) r.slowest_rank_s = std::max(r.slowest_rank_s, rank_end[k]);
  for (uint32_t k = 0; k < g.nranks; ++k)
    if (rank_end[k] >= r.slowest_rank_s * (1 - 1e-9)) {
      r.slowest_rank = k;
      break;
    }
  if (g.nranks) {
    const Runtime::Busy& b = rt.busy()[r.slowest_rank];
    r.compute_s = b.compute;
    r.comm_s = b.comm;
    r.overlap_s = std::max(0.0, b.compute + b.comm - b.either);
    for (const auto& [stmt, secs] : b.exposed) {
      r.exposed_total_s += secs;
      CriticalEntry e;
      e.stmt = stmt;
      e.seconds = secs;
      r.exposed_by.push_back(e);
    }
    r.idle_s = std::max(0.0, r.time_s - r.compute_s - r.exposed_total_s);
    std::sort(r.exposed_by.begin(), r.exposed_by.end(), most_seconds_first);
    if (r.exposed_by.size() > o.top) r.exposed_by.resize(o.top);
    for (CriticalEntry& e : r.exposed_by) e.loc = e.stmt < g.stmt_locs.size() ? g.stmt_locs[e.stmt] : Loc{};
  }
  critical_path(g, rt, o, r.slowest_rank, r);
  if (o.quotient) r.slowest_rank = o.quotient->full_rank(r.slowest_rank);  // (a class, until here)
  if (o.rank_ends) {
    const QuotientRun* q = o.quotient;
    uint32_t n = q ? q->shift().nranks : g.nranks;
    r.rank_ends.resize(n);
    for (uint32_t k = 0; k < n; ++k) r.rank_ends[k] = rt.rank_end()[q ? q->shift().class_of(k) : k];
  }
  r.watched.reserve(o.watch.size());
  for (StepId s : o.watch) r.watched.push_back(s < g.size() && rt.ran(s) ? rt.finish(s) : std::numeric_limits<double>::quiet_NaN());
  link_loads(g, p, o, rt, r);
  if (o.trace) {
    r.starts = rt.start_times();
    r.ends = rt.end_times();
    r.transfer_starts = rt.transfer_starts();
    r.arrivals = rt.arrival_times();
    r.partners.resize(g.size());
    for (StepId s = 0; s < g.size(); ++s) r.partners[s] = rt.partner(s);
  }
  if (!r.completed) {
    std::vector<StepId> partner(g.size(), kNoStep);
    for (StepId s = 0; s < g.size(); ++s) partner[s] = rt.partner(s);
    // A send that holds its rank waits for its receive: it went by rendezvous, whatever the
    // protocol (under auto, it was above the eager limit).
    r.stuck = analyze_stuck(g, rt.status(), partner, o.runtime.protocol == Protocol::Eager ? SendMode::Eager : SendMode::Rendezvous);
  }
}

}  // namespace sg::sim
