#include "core/interp/run_check.hpp"

#include "core/base/sizes.hpp"
#include "core/interp/trail_notes.hpp"
#include "core/pipeline.hpp"

#include <memory>

namespace sg {

void render_findings(const StepGraph& g, const InterpResult& r, const PostconditionReport& p, Diagnostics& out) {
  out.set_fold_repeats(false);
  auto loc_of = [&](const Issue& is) {
    if (is.step != kNoStep) return g.loc(is.step);
    if (is.stmt < g.stmt_locs.size()) return g.stmt_locs[is.stmt];
    return Loc{};
  };
  for (const Issue& is : r.issues) {
    std::string prefix;
    bool warn = false;
    switch (is.kind) {
      case IssueKind::UndefinedRead: prefix = "undefined data: "; break;
      case IssueKind::BadOperand: prefix = "wrong operand: "; break;
      case IssueKind::Stuck:
        if (is.step != kNoStep && g.never_ready_step(is.step)) {
          // Waits for an event nothing produces: stuck under every semantics and every order.
          Diagnostic& d = out.error(loc_of(is), "deadlock: " + is.text);
          d.notes.push_back({g.never_ready_entry(is.step)->cause, "the step it waits for, which never posts"});
          continue;
        }
        prefix = "stuck (eager sends, one order): ";
        break;
      case IssueKind::Unmatched: prefix = "unmatched: "; break;
      case IssueKind::SizeMismatch: {
        // The receive is the error; the send it took, on its own line, is the note.
        Diagnostic& d = out.error(loc_of(is), "unmatched: " + is.text);
        d.notes.push_back({g.loc(is.send), "rank " + std::to_string(g.rank(is.send)) + " sends the " +
                                               std::to_string(g.range_bytes(g.range(is.send))) + " bytes here"});
        continue;
      }
      case IssueKind::Lifecycle:
        prefix = "lifecycle: ";
        warn = true;
        break;
      default: break;
    }
    if (warn) out.warning(loc_of(is), prefix + is.text);
    else out.error(loc_of(is), prefix + is.text);
  }
  // Where the followed terms went (follow_wrong_terms), per issue.
  std::vector<std::pair<size_t, Run>> followed = r.trails.empty() ? std::vector<std::pair<size_t, Run>>{} : trail_atoms(p);
  std::unique_ptr<ExpectedIndex> where;
  if (!followed.empty()) where = std::make_unique<ExpectedIndex>(g, r.initial);
  for (size_t i = 0; i < p.issues.size(); ++i) {
    const Issue& is = p.issues[i];
    // A tile's term that should not be there points at the tile that computed it.
    StepId tile = tile_culprit(r, is);
    Loc at = tile != kNoStep ? g.loc(tile) : loc_of(is);
    Diagnostic& d = out.error(at, std::string("wrong result: ") + is.text);
    if (is.step != kNoStep) {
      d.notes.push_back({Loc{}, "last written by step #" + std::to_string(is.step) + " on rank " + std::to_string(g.rank(is.step))});
      if (tile != kNoStep) d.notes.push_back({g.loc(is.step), "the chunk was last written here; the wrong term comes from the tile above"});
    }
    for (size_t k = 0; k < followed.size() && k < r.trails.size(); ++k)
      if (followed[k].first == i) add_trail_notes(g, r, is, r.trails[k], *where, d);
    if (is.stmt < g.stmt_locs.size() && is.step != kNoStep) d.notes.push_back({g.stmt_locs[is.stmt], "required by this postcondition"});
  }
  if (p.chunks_wrong > p.issues.size())
    out.error(Loc{}, "wrong result: " + std::to_string(p.chunks_wrong) + " chunks differ in all (" +
                         std::to_string(p.chunks_wrong - p.issues.size()) + " more not shown)");
}

void follow_wrong_terms(const StepGraph& g, const PostconditionReport& p, InterpResult& r) {
  std::vector<std::pair<size_t, Run>> atoms = trail_atoms(p);
  if (atoms.empty()) return;
  InterpOptions o;
  for (const auto& [i, a] : atoms) o.follow.push_back(a);
  InterpResult again = interpret(g, o);
  r.trails = std::move(again.trails);
}

void count_interpreter(ElabOptions& opts) {
  opts.consumer_bytes = [](const SizeEstimate& e, uint32_t n) { return interpreter_bytes(e, n); };
  opts.consumer = "the interpreter's state";
}

bool interpreter_fits(const StepGraph& g, const Target& t, const ElabOptions& opts, Diagnostics& diags) {
  uint64_t need = interpreter_bytes(g);
  if (!opts.max_memory || need <= opts.max_memory) return true;
  auto& d = diags.error(t.loc(),
                        "the interpreter would need about " + human_bytes(need) + " for N = " + std::to_string(g.nranks) +
                            " (every chunk of every rank holds a symbolic value)",
                        static_cast<uint32_t>(t.name().size()));
  d.notes.push_back({Loc{}, "the memory limit is " + human_bytes(opts.max_memory) + " (--max-memory); check fewer ranks"});
  return false;
}

const char* check_verdict(const InterpResult& r, bool ok) {
  auto has = [&](IssueKind k) {
    for (const auto& is : r.issues)
      if (is.kind == k) return true;
    return false;
  };
  // A size mismatch first: the run went on past it, but an MPI program stops there.
  if (has(IssueKind::SizeMismatch)) return "unmatched";
  if (!r.completed) return "stuck";
  if (has(IssueKind::Unmatched)) return "unmatched";
  if (has(IssueKind::UndefinedRead)) return "undefined-data";
  if (!ok) return "wrong-result";
  return "ok";
}

CheckOutcome run_check(Session& s, const Target& t, const ElabOptions& opts) {
  CheckOutcome o;
  BuildOptions bo;
  bo.elab = opts;
  count_interpreter(bo.elab);
  o.graph = build(s, t, bo).graph;
  if (!o.graph) return o;
  if (!interpreter_fits(*o.graph, t, opts, s.diags)) return o;
  o.built = true;
  o.interp = interpret(*o.graph);
  if (o.interp.completed) o.post = check_postconditions(*o.graph, o.interp.initial, o.interp.final);
  follow_wrong_terms(*o.graph, o.post, o.interp);
  render_findings(*o.graph, o.interp, o.post, o.findings);
  o.ok = o.interp.completed && o.post.chunks_wrong == 0 && !o.findings.has_errors();
  return o;
}

}  // namespace sg
