// The stream order (core/graph/stream_order.hpp): groups of transfers in one global order for a
// transport whose sends complete only when the receiver takes part (NCCL). Checked as invariants
// over library schedules, and on the cases that must share a group or be refused.
#include <catch2/catch.hpp>

#include "core/graph/stream_order.hpp"
#include "test_util.hpp"

using namespace sg;

namespace {

// Every rank's order, and per step of the whole graph its level.
std::vector<uint32_t> levels_of(const StepGraph& g, uint32_t& groups, Diagnostics& d) {
  std::vector<uint32_t> lv(g.size(), 0);
  groups = 0;
  for (uint32_t r = 0; r < g.nranks; ++r) {
    StreamOrder o;
    if (!stream_order(g, r, o, d)) return {};
    groups = std::max(groups, o.groups);
    size_t k = 0;
    for (StepId s = 0; s < g.size(); ++s)
      if (g.rank(s) == r) {
        REQUIRE(o.kind[k] == static_cast<uint8_t>(g.kind(s)));
        lv[s] = o.level[k++];
      }
    REQUIRE(k == o.level.size());
  }
  return lv;
}

// The order's rules: a message's two sides and a collective's members share a group; a transfer
// comes after (strictly) what it waits to complete and local work after what it needs.
void check_rules(const StepGraph& g, const std::vector<uint32_t>& lv) {
  for (StepId s = 0; s < g.size(); ++s) {
    StepKind k = g.kind(s);
    bool xfer = stream_transfer(k);
    if (k == StepKind::Send || k == StepKind::Recv) CHECK(lv[s] == lv[g.match(s)]);
    if (xfer) CHECK(lv[s] >= 1);
    for (StepId d : g.deps(s)) {
      bool dx = stream_transfer(g.kind(d));
      if (dx && g.nonblocking(d)) {
        if (xfer) CHECK(lv[s] >= lv[d]);
      } else if (xfer) {
        CHECK(lv[s] >= lv[d] + 1);
      } else {
        CHECK(lv[s] >= lv[d]);
      }
    }
    if (k == StepKind::Wait)
      for (const StepId* h = g.handles_begin(s); h != g.handles_end(s); ++h) CHECK(lv[s] >= lv[*h]);
  }
  for (const Instance& in : g.instances)
    for (uint32_t i = 1; i < in.steps_cnt; ++i) CHECK(lv[g.instance_steps[in.steps_off + i]] == lv[g.instance_steps[in.steps_off]]);
}

}  // namespace

TEST_CASE("library schedules get a stream order that keeps the rules", "[stream_order]") {
  struct Case {
    const char* name;
    uint32_t n;
    uint32_t groups;  // expected number of groups (0: not checked)
  };
  for (Case c : {Case{"ring_allreduce", 4, 6}, Case{"recursive_doubling_allreduce", 8, 3}, Case{"bruck_alltoall", 5, 0},
                 Case{"linear_alltoall", 4, 1}, Case{"parity_ring_allgather", 4, 0}, Case{"hierarchical_allreduce", 8, 0},
                 Case{"binomial_bcast", 7, 3}, Case{"ring_attention", 4, 3}, Case{"ringx4_attention_bwd", 4, 0}}) {
    INFO(c.name << " N = " << c.n);
    std::vector<std::pair<std::string, std::string>> sets;
    if (c.name == std::string("hierarchical_allreduce")) sets.push_back({"mp", "2"});
    sgtest::Built b = sgtest::build_lib(c.name, c.n, sets);
    INFO(b.errors);
    REQUIRE(b.ok());
    Diagnostics d;
    uint32_t groups = 0;
    std::vector<uint32_t> lv = levels_of(*b.graph, groups, d);
    INFO(d.render(b.session->sources));
    REQUIRE(!lv.empty());
    check_rules(*b.graph, lv);
    if (c.groups) CHECK(groups == c.groups);
  }
}

TEST_CASE("an exchange of isends shares one group; sends that need buffering are refused at their line", "[stream_order]") {
  // isend; recv; wait on both sides: the receive needs only the isend's start, so both messages
  // go in one group (NCCL's sendrecv).
  auto ok = sgtest::build(R"(schedule x() {
  buffer a[2] bytes 64;
  init a contrib;
  on r in 0 .. 2 {
    isend a[r] to 1 - r as h;
    recv a[1 - r] from 1 - r;
    wait h;
  }
}
)",
                          2);
  INFO(ok.errors);
  REQUIRE(ok.ok());
  Diagnostics d;
  uint32_t groups = 0;
  std::vector<uint32_t> lv = levels_of(*ok.graph, groups, d);
  REQUIRE(!lv.empty());
  CHECK(groups == 1);
  check_rules(*ok.graph, lv);

  // Every rank sends first with blocking sends: fine when MPI buffers, a deadlock when a send
  // completes only with its receive. Refused, naming the receive.
  auto bad = sgtest::build(R"(schedule y() {
  buffer a[2] bytes 64;
  init a contrib;
  on r in 0 .. 2 {
    send a[r] to 1 - r;
    recv a[1 - r] from 1 - r;
  }
}
)",
                           2);
  REQUIRE(bad.ok());
  StreamOrder o;
  Diagnostics d2;
  CHECK_FALSE(stream_order(*bad.graph, 0, o, d2));
  std::string text = d2.render(bad.session->sources);
  CHECK(text.find("test.sched:6:5: error: this transfer and one it depends on wait on each other's completion") != std::string::npos);
  CHECK(text.find("^") != std::string::npos);

  // A receive from any source: NCCL has none.
  auto wild = sgtest::build(R"(schedule z() {
  buffer a[2] bytes 64;
  init a contrib;
  on 0 { send a[0] to 1; }
  on 1 { recv a[0] from any; }
}
)",
                            2);
  INFO(wild.errors);
  REQUIRE(wild.ok());
  Diagnostics d3;
  bool wild_ok = stream_order(*wild.graph, 1, o, d3);
  // (The match pass may resolve a lone wildcard to its one candidate: then it is ordered.)
  if (!wild_ok) CHECK(d3.render(wild.session->sources).find("any source") != std::string::npos);
}

TEST_CASE("the stream order is laid on one rank's own program and prints per group", "[stream_order]") {
  auto b = sgtest::build_lib("ring_allgather", 3);
  REQUIRE(b.ok());
  StreamOrder o;
  Diagnostics d;
  REQUIRE(stream_order(*b.graph, 1, o, d));
  CHECK(o.groups == 2);
  // Rank 1's program alone (only_rank, what exec elaborates) has the same steps in the same order.
  Session s;
  Target t = s.open_schedule("ring_allgather");
  ElabOptions eo;
  eo.nranks = 3;
  eo.only_rank = 1;
  std::unique_ptr<StepGraph> mine = elaborate(s, t, eo);
  REQUIRE(mine);
  REQUIRE(run_passes(*mine, s.diags, {}, nullptr));
  REQUIRE(mine->size() == o.level.size());
  for (StepId k = 0; k < mine->size(); ++k) {
    CHECK(o.kind[k] == static_cast<uint8_t>(mine->kind(k)));
    CHECK(o.stmt[k] == mine->stmt(k));
  }
  std::string text = stream_order_text(*mine, 1, o);
  INFO(text);
  CHECK(text.find("group 1 (lane 1):\n  recv data[0] from 0  (line 18)\n  send data[1] to 2  (line 18)") != std::string::npos);
  CHECK(text.find("group 2 (lane 1):") != std::string::npos);
  CHECK(stream_order_text(*b.graph, 1, o) == text);  // the same from the whole graph
}

TEST_CASE("local work after an isend still waits for what the isend waited for (dependencies the prune pass removed)", "[stream_order]") {
  // Rank 0: the copy overwrites a[0] while the blocking send of a[0] may still read it; its
  // dependency on that send was pruned (copy -> isend -> send), so it must come through the isend.
  // Rank 1: the second copy reads a[1], written by the first copy after the receive; that
  // dependency was pruned the same way.
  auto b = sgtest::build(R"(schedule p() {
  buffer a[3] bytes 64;
  init a contrib;
  on 0 {
    send a[0] to 1;
    isend a[1] to 1 as h;
    copy a[2] into a[0];
    wait h;
    recv a[1] from 1;
  }
  on 1 {
    recv a[0] from 0;
    recv a[1] from 0;
    copy a[0] into a[1];
    isend a[1] to 0 as k;
    copy a[1] into a[2];
    wait k;
  }
}
)",
                         2);
  INFO(b.errors);
  REQUIRE(b.ok());
  const StepGraph& g = *b.graph;
  Diagnostics d;
  uint32_t groups = 0;
  std::vector<uint32_t> lv = levels_of(g, groups, d);
  REQUIRE(!lv.empty());
  StepId send0 = kNoStep, copy0 = kNoStep, recv1 = kNoStep, copy1a = kNoStep, copy1b = kNoStep;
  for (StepId s = 0; s < g.size(); ++s) {
    if (g.rank(s) == 0 && g.kind(s) == StepKind::Send && !g.nonblocking(s)) send0 = s;
    if (g.rank(s) == 0 && g.kind(s) == StepKind::Copy) copy0 = s;
    if (g.rank(s) == 1 && g.kind(s) == StepKind::Recv && recv1 == kNoStep) recv1 = s;
    if (g.rank(s) == 1 && g.kind(s) == StepKind::Copy) (copy1a == kNoStep ? copy1a : copy1b) = s;
  }
  REQUIRE(send0 != kNoStep);
  REQUIRE(copy0 != kNoStep);
  REQUIRE(copy1b != kNoStep);
  CHECK(lv[copy0] >= lv[send0]);  // after the send's group, not before it
  CHECK(lv[copy1a] >= lv[recv1]);
  CHECK(lv[copy1b] >= lv[copy1a]);  // lane 0 keeps the order within a level
  check_rules(g, lv);
}
