#include "sim/point.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <sstream>

#include "core/base/format.hpp"
#include "core/base/sizes.hpp"
#include "core/interp/bus_bandwidth.hpp"
#include "core/interp/send_policy.hpp"
#include "core/io/output_file.hpp"
#include "core/io/trace.hpp"
#include "core/io/writers.hpp"
#include "core/pipeline.hpp"
#include "sim/link_intervals.hpp"
#include "sim/memo_collectives.hpp"
#include "sim/symmetry.hpp"
#ifdef STEPGRAPH_HAVE_SIMGRID
#include "sim/simgrid_platform.hpp"
#endif

namespace sg::sim {

namespace {

// Expanded collectives by kind of instance (collective, group size, bytes, algorithm): how many,
// and their simulated time (from the first member's entry to the last member's exit; watched
// holds every instance's entries then exits, in order) with the bus bandwidth that gives.
// A collective's bus bandwidth over its own group (nccl-tests' factors; none for a barrier), GB/s.
double group_busbw(CollKind kind, uint32_t members, uint64_t bytes, double seconds) {
  if (seconds <= 0 || kind == CollKind::Barrier) return 0;
  std::string fname;
  double factor = 1;
  switch (kind) {
    case CollKind::Allreduce: factor = bus_factor(ExpectKind::Allreduce, members, fname); break;
    case CollKind::Allgather: factor = bus_factor(ExpectKind::Allgather, members, fname); break;
    case CollKind::ReduceScatter: factor = bus_factor(ExpectKind::ReduceScatter, members, fname); break;
    case CollKind::Alltoall: factor = bus_factor(ExpectKind::Alltoall, members, fname); break;
    default: factor = 1;
  }
  return static_cast<double>(bytes) / seconds / 1e9 * factor;
}

void collective_breakdown(const ExpandReport& rep, const std::vector<double>& watched, PointResult& r) {
  struct Row {
    std::string line;
    CollKind kind;
    uint32_t members = 0;
    uint64_t bytes = 0, count = 0, timed = 0;
    double sum = 0, max = 0;
  };
  std::vector<Row> rows;
  size_t at = 0;
  for (const ExpandedInstance& e : rep.instances) {
    if (!e.expanded) continue;
    double first = std::numeric_limits<double>::infinity(), last = 0;
    bool ran = true;
    for (size_t k = 0; k < e.entry.size(); ++k, ++at) {
      double t = at < watched.size() ? watched[at] : NAN;
      ran &= std::isfinite(t);
      if (std::isfinite(t)) first = std::min(first, t);
    }
    for (size_t k = 0; k < e.exit.size(); ++k, ++at) {
      double t = at < watched.size() ? watched[at] : NAN;
      ran &= std::isfinite(t);
      if (std::isfinite(t)) last = std::max(last, t);
    }
    std::string line = expansion_line(e);
    auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& x) { return x.line == line; });
    if (it == rows.end()) it = rows.insert(rows.end(), Row{line, e.kind, e.members, e.bytes});
    ++it->count;
    if (ran && e.entry.size()) {
      double d = std::max(0.0, last - first);
      ++it->timed;
      it->sum += d;
      it->max = std::max(it->max, d);
    }
  }
  for (const Row& x : rows) {
    double mean = x.timed ? x.sum / static_cast<double>(x.timed) : 0;
    double busbw = group_busbw(x.kind, x.members, x.bytes, mean);
    r.collectives_json.push_back(
        {{"collective", x.line}, {"instances", x.count}, {"mean_s", mean}, {"max_s", x.max}, {"busbw_GBps", busbw}});
    std::string l = x.line + (x.count > 1 ? "; " + std::to_string(x.count) + " instances" : std::string());
    if (x.timed)
      l += ": " + human_time(mean) + (x.count > 1 ? " each (max " + human_time(x.max) + ")" : std::string()) +
           (busbw > 0 ? ", busbw " + fmt("%.2f", busbw) + " GB/s" : std::string());
    r.expansions.push_back(l);
  }
}

// --collectives memo: a row per shape (as the expansion's rows: its time is the shape's alone,
// from the last member's entry), and the line saying what that leaves out.
void memo_report(const CollectiveMemo& m, PointResult& r) {
  // Shapes that differ only in their slice of the platform but time alike are one row.
  std::vector<MemoShape> rows;
  for (const MemoShape& x : m.shapes) {
    auto it = std::find_if(rows.begin(), rows.end(), [&](const MemoShape& y) { return y.line == x.line && y.seconds == x.seconds; });
    if (it == rows.end()) {
      rows.push_back(x);
    } else {
      it->instances += x.instances;
      it->wall_s += x.wall_s;
    }
  }
  for (const MemoShape& x : rows) {
    double busbw = group_busbw(x.kind, x.members, x.bytes, x.seconds);
    r.collectives_json.push_back({{"collective", x.line},
                                  {"instances", x.instances},
                                  {"mean_s", x.seconds},
                                  {"max_s", x.seconds},
                                  {"busbw_GBps", busbw},
                                  {"memoised", true},
                                  {"steps_alone", x.steps},
                                  {"wall_s", x.wall_s}});
    r.expansions.push_back(x.line + (x.instances > 1 ? "; " + with_commas(x.instances) + " instances" : std::string()) + ": " +
                           human_time(x.seconds) + " alone" + (busbw > 0 ? ", busbw " + fmt("%.2f", busbw) + " GB/s" : std::string()) +
                           " (simulated once: " + with_commas(x.steps) + " steps, " + fmt("%.3f", x.wall_s) + " s)");
  }
  // The analytic engine (α-β) shares each instance's ports with other traffic (its members'
  // messages alone recorded: CollectiveTimes::uses); the others hold each member for its time.
  const bool shared = !m.times.uses_off.empty();
  const char* left_out = shared ? "an early member's progress before the last one enters, and how a shared port slows a collective "
                                  "inside (it slows as a whole, at its most crowded port's share)"
                                : "an early member's progress before the last one enters, and contention between a collective and other "
                                  "traffic (other collectives, the schedule's own messages) on shared links";
  r.memo = with_commas(m.instances) + " collective instance" + (m.instances == 1 ? "" : "s") + " costed from " +
           with_commas(m.shapes.size()) + " shape" + (m.shapes.size() == 1 ? "" : "s") + " simulated alone (" + fmt("%.3f", m.wall_s) +
           " s), instead of " + with_commas(m.expanded_steps) + " steps expanded; each from its last member's entry" +
           (shared ? ", sharing its links' ports with the other traffic there" : "") + "; not modelled: " + left_out;
  r.memo_json = {{"instances", m.instances}, {"shapes", m.shapes.size()}, {"steps_not_expanded", m.expanded_steps},
                 {"wall_s", m.wall_s},       {"shared_ports", shared},    {"not_modelled", left_out}};
}

// The built-in platform, read once for every point that names none.
const PlatformChoice& default_choice() {
  static const PlatformChoice c = default_platform();
  return c;
}

}  // namespace

PlatformError platform_error(const Session& s, size_t from) {
  const std::vector<Diagnostic>& all = s.diags.all();
  const Diagnostic* d = nullptr;
  for (size_t i = from; i < all.size() && !d; ++i)
    if (all[i].severity == Severity::Error) d = &all[i];
  for (size_t i = all.size(); i-- > 0 && !d;)  // (folded into the same error reported before)
    if (all[i].severity == Severity::Error) d = &all[i];
  if (!d) return {};
  return {d->message, d->loc.valid() ? render_diagnostic(*d, s.sources) : std::string()};
}

PointResult run_point(const PointSpec& p) {
  PointResult r;
  r.n = p.n;
  Session s;
  Target t = open_target(s, p.target);
  r.schedule = t.opened() ? t.name() : p.target;
  // Collective steps become the point-to-point traffic of a library algorithm.
  BuildOptions bo;
  bo.elab.nranks = p.n;
  bo.elab.sets = p.sets;
  bo.elab.max_memory = p.max_memory;
  // What the simulation keeps beside the graph (kSimBytesPerStep), counted before building where
  // every rank will be simulated; where symmetry may spare it (the analytic engine), counted
  // once the graph is built and no classes were found (SimOptions::max_memory): a job of
  // 131,072 ranks simulates 16.
  bo.consumer_bytes_per_step = kSimBytesPerStep;
  if (!engine_refusal(p.options).empty() || !p.trace_file.empty())
    bo.elab.consumer_bytes = [](const SizeEstimate& e, uint32_t) { return e.steps * kSimBytesPerStep; };
  bo.elab.consumer = "the simulator's state";
  bo.expand = p.memo ? Expansion::None : Expansion::ForCost;  // memo: costed alone, once per shape (below)
  bo.keep_as_written = true;  // what the schedule says (its postconditions) is read off the graph as written
  bo.algo = p.algo;
  // The platform first: on GPU nodes the collectives expand as NCCL's would.
  const PlatformChoice& choice = p.platform.is_read() ? p.platform : default_choice();
  Platform platform;
  auto refuse_platform = [&](size_t from) {
    PlatformError e = platform_error(s, from);
    r.status = 2;
    r.diag = e.located;
    r.error = "bad --platform '" + choice.spec + "': " + e.message;  // (for JSON, tables and exec --predict; diag says where)
    return r;
  };
  if (size_t from = s.diags.all().size(); !size_platform(choice, p.n, platform, s.sources, s.diags)) return refuse_platform(from);
#ifdef STEPGRAPH_HAVE_SIMGRID
  if (size_t from = s.diags.all().size(); platform.kind == PlatformKind::Xml && !load_xml_platform(platform, s.diags))
    return refuse_platform(from);
#endif
  if (choice.defaulted()) platform.spec += " (the default; --platform to choose)";
  r.network_model = model_name(platform.model);
  // GPUs in nodes: the collectives expand as NCCL's (unless --algo says openmpi), with the node size.
  if (platform.kind == PlatformKind::Nodes) apply_gpu_platform(bo.algo, platform.nodes.hw);
  // One rank's program for all (sim/symmetry.hpp, simulate_one_class), or the representatives'
  // programs (simulate_representatives): tried first where they may apply, from the shifts the
  // schedule's text proves; the full graph built where the text or the platform says otherwise.
  const bool reps_first =
      p.options.symmetry && engine_refusal(p.options).empty() && p.trace_file.empty() && p.options.map.empty() && t.schedule;
  Built b;
  bool one_class = false, reps = false;
  RankSymmetry reps_group;
  if (reps_first) {
    BuildOptions b0 = bo;
    b0.elab.only_rank = 0;
    b0.expand = Expansion::None;
    b0.keep_as_written = false;
    Diagnostics before = s.diags;
    Built zero = build(s, t, b0);
    if (zero.ok() && !p.memo && platform.kind != PlatformKind::Nodes && one_class_refusal(*zero.graph, platform, p.options).empty()) {
      one_class = true;
      b = std::move(zero);
    } else if (zero.ok()) {
      reps_group = text_shifts(*zero.graph);
      if (!reps_group.none() && reps_group.classes() > 1 && reps_group.classes() <= p.n / 2) {
        BuildOptions br = bo;
        br.expand = Expansion::None;  // (its collectives are instances standing for the full ones)
        br.keep_as_written = false;
        for (uint32_t c = 0; c < reps_group.classes(); ++c) br.elab.only_ranks.push_back(reps_group.representative(c));
        std::sort(br.elab.only_ranks.begin(), br.elab.only_ranks.end());
        s.diags = before;
        Built part = build(s, t, br);
        bool collectives = part.ok() && !part.graph->instances.empty();
        reps = part.ok() && (p.memo || !collectives) && representatives_refusal(*part.graph, reps_group, platform, p.options).empty();
        if (reps) b = std::move(part);
      }
    }
    if (!one_class && !reps) s.diags = before;
  }
  SizeEstimate est;
  bo.estimate = &est;
  if (!one_class && !reps) b = build(s, t, bo);
  const uint64_t too_big = est.too_big ? est.steps : b.expansion.too_big_steps;
  if (!b.ok() && too_big && p.engine_defaulted && (p.options.model != Model::Analytic || !p.memo)) {
    // The default engine cannot hold it: the scalable one, said so.
    PointSpec q = p;
    q.engine_defaulted = false;
    q.options.model = Model::Analytic;
    q.memo = true;
    PointResult alt = run_point(q);
    alt.engine_note = "the default (SimGrid, every collective expanded) would build " + with_commas(too_big) + " steps" +
                      (est.too_big ? std::string(" before expanding its collectives") : std::string(" with its collectives expanded")) +
                      ", past " + (p.max_memory ? human_bytes(p.max_memory) : std::string("2^32 steps")) +
                      ": simulated with --model analytic --collectives memo (docs/sim.md, \"Collectives costed once per shape\")";
    return alt;
  }
  if (!b.ok()) {
    r.status = 2;
    r.error = b.unsupported ? "unsupported (" + b.unsupported_reason + ")" : "bad input";
    r.diag = b.unsupported && p.quiet ? "" : s.diags.render(s.sources);
    r.unsupported = b.unsupported;
    return r;
  }
  // A library NCCL schedule run by name on GPU nodes (`sim nccl_ring_allreduce --platform
  // dgx-h100:nodes=4`): what NCCL runs when NCCL_ALGO forces that algorithm, its channels and
  // chunks where --set leaves them, and its costs on every send (docs/sim.md).
  std::string nccl_line;
  if (platform.kind == PlatformKind::Nodes && bo.algo.defaults == AlgoDefault::Nccl && p.target == t.name()) {
    int64_t size = 0;
    for (const auto& [k, v] : b.graph->params)
      if (k == "size") size = v;
    bool known = false;
    AlgoPick pick =
        nccl_named(t.name(), static_cast<uint64_t>(std::max<int64_t>(size, 0)), p.n, bo.algo.nccl_hw, bo.algo.nccl_enables, known);
    if (known && pick.costed) {
      auto given = [&](const std::string& k) {
        return std::any_of(p.sets.begin(), p.sets.end(), [&](const auto& kv) { return kv.first == k; });
      };
      std::vector<std::pair<std::string, std::string>> sets = bo.elab.sets;
      std::string own;  // the parameters --set gives instead of NCCL's
      for (const auto& [k, v] : pick.params)
        if (!given(k)) sets.emplace_back(k, std::to_string(v));
        else own += (own.empty() ? "" : ", ") + k;
      if (sets.size() != bo.elab.sets.size()) {  // elaborated again with NCCL's parameters
        bo.elab.sets = sets;
        s.diags = Diagnostics{};
        b = build(s, t, bo);
        if (!b.ok()) {
          r.status = 2;
          r.error = "bad input with NCCL's parameters";
          r.diag = s.diags.render(s.sources);
          return r;
        }
      }
      // The FIFO's window is one message a channel on each pair: the channels the graph has (the
      // user's where --set gives them).
      CallCost cost = pick.cost;
      for (const auto& [k, v] : b.graph->params)
        if (k == "channels" && v >= 1) cost.window = static_cast<uint32_t>(v);
      b.graph->set_call_cost_everywhere(cost);
      nccl_line = "as NCCL runs it: " + pick.why + (own.empty() ? "" : "; " + own + " as --set gives");
    } else if (known) {
      nccl_line = pick.why;
    }
  }
  const std::unique_ptr<StepGraph>& g = b.graph;
  r.params = parameter_values(*g);
  for (const auto& [k, v] : g->params) r.params_json[k] = v;
  std::ostringstream warn;
  for (const auto& d : s.diags.all())
    if (d.severity == Severity::Warning) warn << render_diagnostic(d, s.sources);
  r.warnings = warn.str();
  SimOptions so = p.options;
  so.trace = !p.trace_file.empty();
  if (!so.map.empty() && so.map.size() != p.n) {  // a longer one would leave its extra hosts unused, silently
    r.status = 2;
    r.error = "--map gives hosts for " + std::to_string(so.map.size()) + " ranks; N = " + std::to_string(p.n) + ": one host per rank";
    return r;
  }
  for (uint32_t k = 0; k < p.n && !so.map.empty(); ++k)
    if (so.map[k] >= platform.hosts) {
      r.status = 2;
      r.error = "--map puts rank " + std::to_string(k) + " on host " + std::to_string(so.map[k]) + ", but the platform has " +
                std::to_string(platform.hosts) + " hosts";
      return r;
    }
  if (so.map.empty() && platform.hosts < p.n) {
    r.status = 2;
    r.error = "the platform has " + std::to_string(platform.hosts) + " hosts for " + std::to_string(p.n) + " ranks";
    return r;
  }
  // A program with FIFO connections (MSCCL) buffers its sends: under --protocol auto they go
  // eagerly (core/interp/send_policy.hpp).
  if (send_policy(*g).fifo() && so.runtime.protocol == Protocol::Auto) so.runtime.protocol = Protocol::Eager;
  so.runtime.wire_factor = g->wire_factor;
  if (!so.runtime.message_latency_given) so.runtime.message_latency = g->message_latency;
  r.wire = nccl_line.empty() ? g->wire_why : nccl_line;
  r.window_min = g->window_min, r.window_max = g->window_max;
  // Every expanded instance's members' entry and exit steps, to time each instance.
  for (const ExpandedInstance& e : b.expansion.instances) {
    so.watch.insert(so.watch.end(), e.entry.begin(), e.entry.end());
    so.watch.insert(so.watch.end(), e.exit.begin(), e.exit.end());
  }
  // --collectives memo: every instance's times from its algorithm alone, once per shape.
  CollectiveMemo memo;
  if (p.memo && so.model == Model::SimGrid) {
    // (SimGrid runs an actor per rank, and a collective's members end in the last one's: the
    // engine takes only expanded collectives.)
    r.status = 2;
    r.error = "--collectives memo runs on the analytic engine (--model analytic); SimGrid simulates the collectives expanded";
    return r;
  }
  // Every rank's graph after all (a quotient that deadlocked, or collectives costed otherwise
  // than their images): false with r filled where it does not build.
  auto full_graph = [&]() {
    one_class = reps = false;
    b = build(s, t, bo);
    if (b.ok()) return true;
    r.status = 2;
    r.error = "bad input";
    r.diag = s.diags.render(s.sources);
    return false;
  };
  auto cost_collectives = [&]() {
    // A run alone that failed (memo.run_failed) is the simulation's failure, exit 3, said by
    // r.error: not among the session's diagnostics, which get the rest (bad input, notes).
    Diagnostics md;
    bool ok = memo_collectives(*g, s, bo.algo, platform, so, memo, md, reps ? &reps_group : nullptr);
    if (!ok && memo.run_failed) {
      r.status = 3;
      r.error = md.messages();
      r.diag = s.diags.render(s.sources);
      for (const Diagnostic& d : md.all())
        if (d.severity != Severity::Error) r.diag += render_diagnostic(d, s.sources);
      return false;
    }
    s.diags.append(md);
    if (!ok) {
      r.status = 2;
      r.error = "bad input";
      r.diag = s.diags.render(s.sources);
      return false;
    }
    so.runtime.collective_times = &memo.times;
    return true;
  };
  if (p.memo) {
    if (!cost_collectives()) return r;
    if (reps && !memo.images_alike && (!full_graph() || !cost_collectives())) return r;
  }
  SymmetryUse sym;
  so.max_memory = p.max_memory;
  SimResult res;
  bool done = one_class ? simulate_one_class(*g, platform, so, sym, res)
              : reps    ? simulate_representatives(*g, reps_group, platform, so, sym, res)
                        : false;
  if (!done) {
    if ((one_class || reps) && (!full_graph() || (p.memo && !cost_collectives()))) return r;
    res = simulate_symmetric(*b.graph, platform, so, sym);
  }
  if (p.memo) memo_report(memo, r);
  if (res.refused) {
    r.status = 2;
    r.error = res.error;
    return r;
  }
  r.symmetry = sym.line();
  r.symmetry_json = {{"used", sym.used}, {"ranks", sym.nranks}};
  if (sym.used) {
    r.symmetry_json["classes"] = sym.shift.classes();
    r.symmetry_json["steps_simulated"] = sym.quotient_steps;
    r.symmetry_json["proved_from_text"] = sym.by_text;
  } else r.symmetry_json["why_not"] = sym.why_not;
  for (const RankShift& sh : sym.shift.shifts) r.symmetry_json["shifts"].push_back({{"by", sh.inner}, {"inside", sh.inner * sh.count}});
  r.platform = res.platform;
  r.model = res.model;
  r.time_s = res.time_s;
  r.messages = res.messages;
  r.bytes = res.bytes;
  r.wall_s = res.wall_s;
  r.events = res.events;
  r.completed = res.completed && res.error.empty();
  r.slowest_rank = res.slowest_rank;
  r.slowest_s = res.slowest_rank_s;
  r.compute_s = res.compute_s;
  r.comm_s = res.comm_s;
  r.overlap_s = res.overlap_s;
  r.cp_local_s = res.cp_local_s;
  r.cp_comm_s = res.cp_comm_s;
  r.cp_sync_s = res.cp_sync_s;
  r.exposed_s = res.exposed_s;
  r.exposed_total_s = res.exposed_total_s;
  r.idle_s = res.idle_s;
  // nccl-tests' size and bandwidths: for one collective over every rank only.
  ExpectKind kind = ExpectKind::Nothing;
  const StepGraph& written = b.as_written ? *b.as_written : *g;  // (the expansion adds its algorithms' postconditions)
  r.world = world_collective(written, kind, r.size_bytes);
  double factor = bus_factor(kind, p.n, r.factor_name);
  if (r.world && r.time_s > 0 && r.size_bytes) {
    r.algbw = static_cast<double>(r.size_bytes) / r.time_s / 1e9;
    r.busbw = r.algbw * factor;
  }
  // Attention: the model's FLOPs per second, and that against the platform's peak (every rank's).
  if (attention_model_flops(written, r.model_flops) && r.time_s > 0) {
    r.tflops = r.model_flops / r.time_s / 1e12;
    r.mfu = r.model_flops / (r.time_s * platform.speed * p.n);
  }
  collective_breakdown(b.expansion, res.watched, r);
  if (!res.error.empty()) {
    r.status = 3;
    r.error = res.error;
    return r;
  }
  // Critical path, exposed communication and links, rendered here: the source lines are this
  // process's.
  auto where = [&](Loc loc) {
    return loc.valid() ? s.sources.file(loc.file).name() + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col)
                       : std::string("?");
  };
  auto source_line = [&](std::ostringstream& out, Loc loc) {
    if (!loc.valid()) return;
    std::string line(s.sources.file(loc.file).line(loc.line));
    line.erase(0, line.find_first_not_of(" \t"));
    if (line.size() > 90) line = line.substr(0, 87) + "...";
    out << "        " << line << "\n";
  };
  std::ostringstream text;
  r.critical_json = nlohmann::json::array();
  for (const auto& c : res.critical) {
    r.critical_json.push_back({{"seconds", c.seconds}, {"source", where(c.loc)}, {"what", c.what}, {"steps", c.steps}});
    text << "    " << human_time(c.seconds) << "  " << where(c.loc) << "  " << c.what << " (" << with_commas(c.steps) << " step"
         << (c.steps == 1 ? "" : "s") << ")\n";
    source_line(text, c.loc);
  }
  r.text = text.str();
  std::ostringstream exposed;
  for (const auto& c : res.exposed_by) {
    r.breakdown_json.push_back({{"seconds", c.seconds}, {"source", where(c.loc)}});
    exposed << "    " << human_time(c.seconds) << "  " << where(c.loc) << "\n";
    source_line(exposed, c.loc);
  }
  r.breakdown_text = exposed.str();
  r.links_json = nlohmann::json::array();
  for (const auto& l : res.links) r.links_json.push_back({{"link", l.name}, {"bytes", l.bytes}, {"busy", l.busy}});
  if (!r.completed) {
    r.status = 1;
    std::ostringstream st;
    st << "    deadlock: " << res.stuck.ranks.size() << " rank" << (res.stuck.ranks.size() == 1 ? "" : "s") << " can never go on\n";
    for (const auto& sr : res.stuck.ranks) {
      if (sr.step == kNoStep) continue;
      Loc loc = g->loc(sr.step);
      st << "    rank " << sr.rank << " at " << describe_step(*g, sr.step) << " ("
         << (loc.valid() ? s.sources.file(loc.file).name() + ":" + std::to_string(loc.line) : std::string("?")) << "): it " << sr.why
         << "\n";
    }
    if (!res.stuck.cycle.empty()) {
      st << "    wait-for cycle:";
      for (size_t i = 0; i < res.stuck.cycle.size(); ++i) st << (i ? " -> " : " ") << "rank " << res.stuck.cycle[i];
      st << "\n";
    }
    r.text = st.str();
  }
  if (!p.trace_file.empty()) {
    const std::string& file = p.trace_file;
    OutputFile out;
    Diagnostics diags;
    bool ok = out.open(file, diags);
    if (ok) {
      write_chrome_trace(out.stream(), *g, s.sources, trace_run(*g, platform, so, res));
      ok = out.close(diags);
    }
    if (!ok) {
      r.status = 2;
      r.error = "--trace: " + diags.messages();
      return r;
    }
    r.trace_file = file;
  }
  return r;
}

}  // namespace sg::sim
