#include "core/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/base/errors.hpp"
#include "core/base/memory.hpp"
#include "core/base/sizes.hpp"
#include "core/dsl/printer.hpp"
#include "core/graph/passes.hpp"
#include "core/graph/shift_proof.hpp"
#include "core/io/writers.hpp"
#include "core/msccl/open.hpp"

namespace sg {

namespace {

// A front end: which targets it reads, how it opens one, how it elaborates an instance. The
// first entry after the language whose `claims` accepts a spec reads it; the schedule language,
// entry 0 (also the front end of a Target built by hand from a parsed program), reads every spec
// no other entry claims, so a new front end is one line here and nothing else in this table.
struct FrontEnd {
  const char* name;
  bool (*claims)(const std::string& spec);
  Target (*open)(Session& s, const std::string& spec);
  std::unique_ptr<StepGraph> (*elaborate)(Session& s, const Target& t, const ElabOptions& o, SizeEstimate* est);
};

const std::vector<FrontEnd>& front_ends() {
  static const std::vector<FrontEnd> table = {
      {"the schedule language", nullptr, [](Session& s, const std::string& spec) { return s.open_schedule(spec); },
       [](Session& s, const Target& t, const ElabOptions& o, SizeEstimate* est) { return elaborate(s, t, o, est); }},
      {"MSCCL XML", msccl::claims, msccl::open_target,
       [](Session& s, const Target& t, const ElabOptions& o, SizeEstimate*) { return msccl::elaborate_target(s, t, o); }},
  };
  return table;
}

}  // namespace

bool DumpRequest::wants(const std::string& point) const {
  return std::find(after.begin(), after.end(), point) != after.end() || std::find(after.begin(), after.end(), "all") != after.end();
}

std::vector<std::string> dump_point_names() { return dump_points(); }

uint64_t default_memory_limit() { return memory_room().available / 10 * 8; }

Target open_target(Session& s, const std::string& spec, const DumpRequest* dump) {
  const auto& fe = front_ends();
  size_t i = 1;
  while (i < fe.size() && !fe[i].claims(spec)) ++i;
  if (i == fe.size()) i = 0;  // the schedule language reads what no other front end claims
  Target t = fe[i].open(s, spec);
  t.front_end = static_cast<uint8_t>(i);
  if (t.program && !s.diags.has_errors() && dump && dump->sink && dump->wants("parse")) dump->sink("parse", print_program(*t.program));
  return t;
}

Built build(Session& s, const Target& t, const BuildOptions& o) {
  Built b;
  size_t first = s.diags.all().size();
  auto finish_failed = [&]() -> Built {
    b.graph.reset();
    b.as_written.reset();
    if (const Diagnostic* why = s.diags.unsupported_since(first)) {
      b.unsupported = true;
      b.unsupported_reason = unsupported_reason(*why);
    }
    return std::move(b);
  };
  if (!t.opened()) return finish_failed();
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  auto t0 = Clock::now();
  b.graph = front_ends()[t.front_end].elaborate(s, t, o.elab, o.estimate);
  b.elaborate_s = since(t0);
  if (!b.graph) return finish_failed();
  std::function<void(const std::string&)> dump;
  if (o.dump.sink)
    dump = [&](const std::string& point) {
      std::ostringstream text;
      write_text(text, *b.graph, s.sources);
      o.dump.sink(point, text.str());
    };
  auto t1 = Clock::now();
  bool passed = run_passes(*b.graph, s.diags, o.dump.after, dump);
  b.passes_s = since(t1);
  if (!passed) return finish_failed();
  // Fault injection for the tests: an internal error where a broken invariant would surface.
  if (const char* f = std::getenv("STEPGRAPH_FAULT"); f && std::string(f) == "internal")
    internal_error("fault injected after the passes (STEPGRAPH_FAULT=internal)", b.graph->size() ? b.graph->loc(0) : Loc{});
  if (t.schedule && t.program) {
    ShiftProofInput in;
    in.program = t.program;
    in.schedule = t.schedule;
    in.nranks = b.graph->nranks;
    in.params = b.graph->params;
    for (const BufferInfo& buf : b.graph->buffers) in.buffers.push_back({buf.name, buf.chunks, static_cast<uint32_t>(buf.dims.size())});
    b.graph->prove_shift = [in = std::move(in)](const RankSymmetry& group, const RankShift& shift) {
      return prove_shift(in, group, shift);
    };
  }
  bool expand = o.expand == Expansion::Always ||
                (o.expand == Expansion::ForCost && std::any_of(b.graph->instances.begin(), b.graph->instances.end(),
                                                               [](const Instance& in) { return in.complete && in.consistent; }));
  if (expand) {
    auto t2 = Clock::now();
    auto x = expand_collectives(*b.graph, s, o.algo, library_instantiation(s), s.diags, &b.expansion, o.elab.max_memory,
                                o.consumer_bytes_per_step);
    b.expand_s = since(t2);
    if (!x) return finish_failed();
    if (o.keep_as_written) b.as_written = std::move(b.graph);
    b.graph = std::move(x);
  }
  return b;
}

Instantiation library_instantiation(Session& s) {
  Instantiation in;
  in.algorithm = [&s](const Target& t, const ElabOptions& o, Diagnostics& diags) -> std::unique_ptr<StepGraph> {
    // elaborate reports to the session's diagnostics: the algorithm's go to the caller's.
    std::swap(s.diags, diags);
    auto g = elaborate(s, t, o);
    bool ok = g && run_passes(*g, s.diags, {}, nullptr);
    std::swap(s.diags, diags);
    return ok ? std::move(g) : nullptr;
  };
  in.passes = [](StepGraph& g, Diagnostics& diags) { return run_passes(g, diags, {}, nullptr); };
  return in;
}

std::string expansion_line(const ExpandedInstance& e) {
  std::string l = coll_name(e.kind);
  l += " over " + std::to_string(e.members) + " rank" + (e.members == 1 ? "" : "s");
  if (e.kind != CollKind::Barrier) l += ", " + human_bytes(static_cast<double>(e.bytes));
  l += ": ";
  l += !e.schedule.empty() ? e.schedule : e.expanded ? std::string("one no-op step") : std::string("not expanded");
  if (!e.why.empty()) l += " (" + e.why + ")";
  return l;
}

}  // namespace sg
