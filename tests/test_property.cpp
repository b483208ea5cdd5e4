// Property tests over random well-formed schedules: printing and parsing round-trips, the
// passes keep the interpreter's results, a rank's own program equals its part of the whole
// graph, and the size estimate is exact.
#include <catch2/catch.hpp>

#include <set>

#include "core/dsl/printer.hpp"
#include "random_schedule.hpp"
#include "test_util.hpp"

using namespace sg;

namespace {

constexpr int kCases = 300;

bool same_steps(const StepGraph& a, const StepGraph& b) {
  if (a.size() != b.size() || a.dep_total() != b.dep_total()) return false;
  for (StepId s = 0; s < a.size(); ++s) {
    if (a.kind(s) != b.kind(s) || a.rank(s) != b.rank(s) || !(a.range(s) == b.range(s)) || a.flags(s) != b.flags(s)) return false;
    if (!std::ranges::equal(a.deps(s), b.deps(s))) return false;
  }
  return true;
}

bool same_state(const StepGraph& g, const MachineState& a, const MachineState& b) {
  for (uint32_t buf = 0; buf < g.buffers.size(); ++buf)
    for (uint32_t r = 0; r < g.nranks; ++r)
      for (uint32_t c = 0; c < g.buffers[buf].chunks; ++c)
        if (!(a.at(r, buf, c).v == b.at(r, buf, c).v)) return false;
  return true;
}

}  // namespace

TEST_CASE("print then parse round-trips random schedules, and both elaborate alike", "[property][printer]") {
  std::mt19937_64 rng(12345);
  for (int i = 0; i < kCases; ++i) {
    auto rs = sgtest::random_schedule(rng);
    INFO("case " << i << "\n" << rs.text);
    Session s;
    const Program* p = s.load_text("r.sched", rs.text);
    REQUIRE_FALSE(s.diags.has_errors());
    std::string once = print_program(*p);
    const Program* q = s.load_text("r2.sched", once);
    REQUIRE_FALSE(s.diags.has_errors());
    CHECK(print_program(*q) == once);
    auto a = sgtest::build(rs.text, rs.nranks);
    auto b = sgtest::build(once, rs.nranks);
    INFO(a.errors << b.errors);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(same_steps(*a.graph, *b.graph));
  }
}

TEST_CASE("passes keep the interpreter's results", "[property][passes]") {
  std::mt19937_64 rng(777);
  for (int i = 0; i < kCases; ++i) {
    auto rs = sgtest::random_schedule(rng);
    INFO("case " << i << "\n" << rs.text);
    // Only what the interpreter needs (collective instances) versus the whole pipeline.
    auto raw = sgtest::build(rs.text, rs.nranks, "", {}, false);
    REQUIRE(raw.ok());
    group_collectives(*raw.graph, raw.session->diags);
    auto full = sgtest::build(rs.text, rs.nranks);
    REQUIRE(full.ok());
    CHECK(full.graph->dep_total() <= raw.graph->dep_total());
    InterpResult r1 = interpret(*raw.graph), r2 = interpret(*full.graph);
    CHECK(r1.completed == r2.completed);
    CHECK(r1.executed == r2.executed);
    CHECK(same_state(*full.graph, r1.final, r2.final));
  }
}

TEST_CASE("prune keeps every dependency as a path", "[property][passes]") {
  std::mt19937_64 rng(99);
  for (int i = 0; i < kCases; ++i) {
    auto rs = i % 2 ? sgtest::random_mpi_schedule(rng) : sgtest::random_schedule(rng);
    INFO("case " << i << "\n" << rs.text);
    auto raw = sgtest::build(rs.text, rs.nranks, "", {}, false);
    if (!raw.ok()) continue;
    StepGraph pruned = *raw.graph;
    prune_deps(pruned, raw.session->diags);
    for (StepId s = 0; s < raw.graph->size(); ++s) {
      for (StepId d : raw.graph->deps(s)) {
        // d must still reach s: search backwards from s in the pruned graph.
        std::vector<StepId> stack{s};
        std::set<StepId> seen;
        bool found = false;
        while (!stack.empty() && !found) {
          StepId x = stack.back();
          stack.pop_back();
          for (StepId e : pruned.deps(x)) {
            if (e == d) found = true;
            if (e > d && seen.insert(e).second) stack.push_back(e);
          }
        }
        INFO("step " << s << " lost its dependency on " << d);
        CHECK(found);
      }
    }
  }
}

TEST_CASE("a rank's own program is its part of the whole graph; the estimate is exact", "[property][per-rank]") {
  std::mt19937_64 rng(4242);
  for (int i = 0; i < kCases / 3; ++i) {
    auto rs = sgtest::random_schedule(rng);
    INFO("case " << i << "\n" << rs.text);
    Session s;
    const Program* p = s.load_text("r.sched", rs.text);
    Target t{p, p->schedules.back().get()};
    ElabOptions o;
    o.nranks = rs.nranks;
    SizeEstimate est;
    auto g = elaborate(s, t, o, &est);
    REQUIRE(g);
    CHECK(est.steps == g->size());
    auto ix = g->rank_index();
    for (uint32_t r = 0; r < rs.nranks; ++r) {
      ElabOptions one = o;
      one.only_rank = r;
      SizeEstimate est1;
      auto g1 = elaborate(s, t, one, &est1);
      REQUIRE(g1);
      CHECK(est1.steps == g1->size());
      REQUIRE(g1->size() == ix.off[r + 1] - ix.off[r]);
      for (StepId k = 0; k < g1->size(); ++k) {
        StepId x = ix.steps[ix.off[r] + k];
        CHECK(g1->kind(k) == g->kind(x));
        CHECK(g1->range(k) == g->range(x));
        if (g->kind(x) == StepKind::Send || g->kind(x) == StepKind::Recv) CHECK(g1->peer(k) == g->peer(x));
      }
    }
  }
}
