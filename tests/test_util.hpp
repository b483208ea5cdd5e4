// Helpers shared by the tests: build a graph or run a check from schedule text.
#pragma once
#include <memory>
#include <string>

#include "core/dsl/session.hpp"
#include "core/graph/elaborate.hpp"
#include "core/graph/passes.hpp"
#include "core/interp/run_check.hpp"

namespace sgtest {

struct Built {
  std::unique_ptr<sg::Session> session = std::make_unique<sg::Session>();
  std::unique_ptr<sg::StepGraph> graph;
  std::string errors;  // rendered diagnostics
  bool ok() const { return graph != nullptr; }
};

// Parses `text` (as file `name`), elaborates its last schedule (or `sched`) for n ranks and runs
// every pass unless `passes` is false.
inline Built build(const std::string& text, uint32_t n, const std::string& sched = "",
                   std::vector<std::pair<std::string, std::string>> sets = {}, bool passes = true, int64_t only_rank = -1,
                   const std::string& name = "test.sched") {
  Built b;
  const sg::Program* p = b.session->load_text(name, text);
  if (b.session->diags.has_errors() || p->schedules.empty()) {
    b.errors = b.session->diags.render(b.session->sources);
    return b;
  }
  const sg::Schedule* s = sched.empty() ? p->schedules.back().get() : p->find(sched);
  sg::ElabOptions o;
  o.nranks = n;
  o.sets = std::move(sets);
  o.only_rank = only_rank;
  b.graph = sg::elaborate(*b.session, sg::Target{p, s}, o);
  if (b.graph && passes && !sg::run_passes(*b.graph, b.session->diags, {}, nullptr)) b.graph.reset();
  b.errors = b.session->diags.render(b.session->sources);
  return b;
}

// Elaborates a library schedule.
inline Built build_lib(const std::string& name, uint32_t n, std::vector<std::pair<std::string, std::string>> sets = {}) {
  Built b;
  sg::Target t = b.session->open_schedule(name);
  if (!t.schedule) {
    b.errors = b.session->diags.render(b.session->sources);
    return b;
  }
  sg::ElabOptions o;
  o.nranks = n;
  o.sets = std::move(sets);
  b.graph = sg::elaborate(*b.session, t, o);
  if (b.graph && !sg::run_passes(*b.graph, b.session->diags, {}, nullptr)) b.graph.reset();
  b.errors = b.session->diags.render(b.session->sources);
  return b;
}

struct Checked {
  Built b;
  sg::InterpResult r;
  sg::PostconditionReport post;
  std::string findings;
  bool ok = false;
};

inline Checked check(const std::string& text, uint32_t n, const std::string& sched = "") {
  Checked c;
  c.b = build(text, n, sched);
  if (!c.b.ok()) return c;
  c.r = sg::interpret(*c.b.graph);
  if (c.r.completed) c.post = sg::check_postconditions(*c.b.graph, c.r.initial, c.r.final);
  sg::Diagnostics d;
  sg::render_findings(*c.b.graph, c.r, c.post, d);
  c.findings = d.render(c.b.session->sources);
  c.ok = c.r.completed && c.post.chunks_wrong == 0 && !d.has_errors();
  return c;
}

}  // namespace sgtest
