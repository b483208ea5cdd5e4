// The reference interpreter and the postconditions: each defect class is found with the right
// rank, chunk and source line, and the fixed schedule passes.
#include <catch2/catch.hpp>

#include "test_util.hpp"

using namespace sg;

namespace {

const Issue* first(const std::vector<Issue>& v, IssueKind k) {
  for (const auto& i : v)
    if (i.kind == k) return &i;
  return nullptr;
}

uint32_t line_of(const sgtest::Checked& c, const Issue& i) {
  if (i.step != kNoStep) return c.b.graph->loc(i.step).line;
  return c.b.graph->stmt_locs[i.stmt].line;
}

// A ring all-reduce for 4 ranks with one statement replaceable.
std::string ring(const std::string& phase1, const std::string& phase2) {
  return "schedule r() {\n"
         "  buffer data[N] bytes 8;\n"
         "  init data contrib;\n"
         "  expect allreduce(data);\n"
         "  for s in 0 .. N - 1 { for r in 0 .. N {\n"
         "    " +
         phase1 +
         "\n"
         "  } }\n"
         "  for s in 0 .. N - 1 { for r in 0 .. N {\n"
         "    " +
         phase2 +
         "\n"
         "  } }\n"
         "}\n";
}
const std::string kReduce = "send data[(r - s) % N] from r to (r + 1) % N reduce;";
const std::string kGather = "send data[(r + 1 - s) % N] from r to (r + 1) % N;";

}  // namespace

TEST_CASE("the correct ring passes", "[interp]") {
  auto c = sgtest::check(ring(kReduce, kGather), 4);
  INFO(c.findings);
  CHECK(c.ok);
  CHECK(c.post.chunks_checked == 16);
}

TEST_CASE("a skipped reduce step is a missing term at the line of the last write", "[interp][postcondition]") {
  auto c = sgtest::check(ring("if !(s == 1 && r == 2) { " + kReduce + " }", kGather), 4);
  REQUIRE_FALSE(c.ok);
  const Issue* i = first(c.post.issues, IssueKind::Missing);
  REQUIRE(i);
  CHECK(c.b.graph->buffers[i->buf].name == "data");
  CHECK(line_of(c, *i) == 6);  // the owner's chunk was last written by the reduce-scatter
  CHECK(i->text.find("missing d(") != std::string::npos);
}

TEST_CASE("a doubled reduce counts a term twice", "[interp][postcondition]") {
  auto c = sgtest::check(ring(kReduce + " if s == 0 && r == 0 { " + kReduce + " }", kGather), 4);
  REQUIRE_FALSE(c.ok);
  const Issue* i = first(c.post.issues, IssueKind::Duplicate);
  REQUIRE(i);
  CHECK(i->text.find("counted twice") != std::string::npos);
  CHECK(i->text.find("d(0, 0)") != std::string::npos);
}

TEST_CASE("a chunk never updated is stale", "[interp][postcondition]") {
  auto c = sgtest::check(ring(kReduce, "if !(r == 3) { " + kGather + " }"), 4);
  REQUIRE_FALSE(c.ok);
  const Issue* i = first(c.post.issues, IssueKind::Stale);
  REQUIRE(i);
  CHECK(i->rank == 0);
  CHECK(i->step == kNoStep);
  CHECK(line_of(c, *i) == 4);  // no step wrote it: the expect is pointed at
  CHECK(i->text.find("still holds its initial value d(0, ") != std::string::npos);
}

TEST_CASE("data from the wrong chunk is foreign", "[interp][postcondition]") {
  auto c = sgtest::check(ring(kReduce, "send data[(r + 1 - s) % N] from r to (r + 1) % N into data[(r + 2 - s) % N];"), 4);
  REQUIRE_FALSE(c.ok);
  bool foreign = false;
  for (const auto& i : c.post.issues) foreign |= i.text.find("; foreign d(") != std::string::npos;
  CHECK(foreign);
}

TEST_CASE("reading a never-written chunk is undefined data", "[interp]") {
  auto c = sgtest::check(R"(schedule u() {
  buffer a[N] bytes 8;
  buffer b[N] bytes 8;
  init a contrib;
  expect allreduce(b);
  send b[0] from 0 to 1 reduce;
}
)",
                         2);
  REQUIRE_FALSE(c.ok);
  const Issue* i = first(c.r.issues, IssueKind::UndefinedRead);
  REQUIRE(i);
  CHECK(i->rank == 0);
  CHECK(line_of(c, *i) == 6);
  CHECK(c.findings.find("test.sched:6:3: error: undefined data: send on rank 0 reads b[0], which was never written") != std::string::npos);
  const Issue* u = first(c.post.issues, IssueKind::Undefined);
  REQUIRE(u);
}

TEST_CASE("a receive nobody sends to leaves the run stuck", "[interp]") {
  auto c = sgtest::check(R"(schedule d() {
  buffer a[2] bytes 8;
  init a contrib;
  on 0 { recv a[0] from 1; send a[1] to 1; }
  on 1 { recv a[1] from 0; send a[0] to 0; }
}
)",
                         2);
  REQUIRE_FALSE(c.ok);
  REQUIRE_FALSE(c.r.completed);
  const Issue* i = first(c.r.issues, IssueKind::Stuck);
  REQUIRE(i);
  CHECK(i->text == "rank 0 is stuck at recv #0: it waits for a message from rank 1 (tag 0)");
  CHECK(line_of(c, *i) == 4);
  // The fix: one side sends first.
  auto f = sgtest::check(R"(schedule d() {
  buffer a[2] bytes 8;
  init a contrib;
  on 0 { send a[1] to 1; recv a[0] from 1; }
  on 1 { recv a[1] from 0; send a[0] to 0; }
}
)",
                         2);
  INFO(f.findings);
  CHECK(f.ok);
}

TEST_CASE("a collective missing a participant leaves the run stuck", "[interp][collectives]") {
  auto c = sgtest::check(
      "schedule m() {\n  buffer a[3] bytes 8;\n  init a contrib;\n  on 0 { allreduce a[0]; }\n"
      "  on 1 { allreduce a[0]; }\n}\n",
      3);
  REQUIRE_FALSE(c.r.completed);
  const Issue* i = first(c.r.issues, IssueKind::Stuck);
  REQUIRE(i);
  CHECK(i->text.find("waits in allreduce #0 for rank 2") != std::string::npos);
}

TEST_CASE("a message nobody receives is reported", "[interp]") {
  auto c = sgtest::check("schedule m() {\n  buffer a[2] bytes 8;\n  init a contrib;\n  on 0 { send a[0] to 1 tag 3; }\n}\n", 2);
  REQUIRE_FALSE(c.ok);
  const Issue* i = first(c.r.issues, IssueKind::Unmatched);
  REQUIRE(i);
  CHECK(line_of(c, *i) == 4);
}

TEST_CASE("collectives as steps compute their collective", "[interp][collectives]") {
  const char* text = R"(schedule c() {
  buffer a[N] bytes 8;
  buffer b[N] bytes 8;
  buffer x[N] bytes 8;
  buffer y[N] bytes 8;
  buffer z[N] bytes 8;
  init a contrib;
  init b owned;
  init x contrib;
  init y on 1;
  init z contrib;
  expect allreduce(a);
  expect allgather(b);
  expect reduce_scatter(x);
  expect broadcast(y, 1);
  allreduce a;
  allgather b;
  reduce_scatter x;
  bcast y root 1;
  buffer o[N] bytes 8;
  alltoall z into o;
  expect alltoall(z, o);
}
)";
  for (uint32_t n : {2u, 3u, 5u}) {
    auto c = sgtest::check(text, n);
    INFO(n << c.findings);
    CHECK(c.ok);
  }
}

TEST_CASE("ring attention with causal masking meets the attention postcondition", "[interp][attention]") {
  const char* text = R"(schedule ra() {
  buffer Q[N] bytes 64;
  buffer KV[N] bytes 64;
  buffer O[N] bytes 64;
  init Q owned;
  init KV owned;
  expect attention(Q, KV, O, causal);
  for s in 0 .. N {
    for r in 0 .. N {
      let j = (r - s) % N;
      if j < r { compute attn(Q[r], KV[j]) into O[r] mask full at r; }
      if j == r { compute attn(Q[r], KV[j]) into O[r] mask causal at r; }
    }
    if s < N - 1 { for r in 0 .. N { send KV[(r - s) % N] from r to (r + 1) % N; } }
  }
}
)";
  for (uint32_t n : {1u, 2u, 4u, 7u}) {
    auto c = sgtest::check(text, n);
    INFO(c.findings);
    CHECK(c.ok);
  }
  // Forgetting the diagonal tile is a missing term A(i, i, causal).
  std::string broken = text;
  broken.replace(broken.find("if j == r"), 9, "if 0 && j == r");
  auto c = sgtest::check(broken, 3);
  REQUIRE_FALSE(c.ok);
  const Issue* i = first(c.post.issues, IssueKind::Missing);
  REQUIRE(i);
  CHECK(i->text.find("causal") != std::string::npos);
}

TEST_CASE("a kv item keeps its identity through a double buffer (review bug)", "[interp][attention]") {
  // The ring rotates kv(m) through cur[0] / cur[1]; the tile's operand is cur, not KV, and must
  // be taken as the kv(m) it holds. It used to be refused as "not a single kv(m)".
  const char* text = R"(schedule ring_db() {
  buffer Q[N] bytes 64;
  buffer KV[N] bytes 128;
  buffer O[N] bytes 64;
  buffer cur[2] bytes 128;
  init Q owned;
  init KV owned;
  expect attention(Q, KV, O, causal);
  for r in 0 .. N { copy KV[r] into cur[0] at r; }
  for s in 0 .. N {
    for r in 0 .. N {
      let j = (r - s) % N;
      if j < r { compute attn(Q[r], cur[s % 2]) into O[r] mask full at r; }
      if j == r { compute attn(Q[r], cur[s % 2]) into O[r] mask causal at r; }
      if s < N - 1 { send cur[s % 2] from r to (r + 1) % N into cur[(s + 1) % 2]; }
    }
  }
}
)";
  for (uint32_t n : {1u, 2u, 3u, 5u, 8u}) {
    auto c = sgtest::check(text, n);
    INFO("N=" << n << "\n" << c.findings);
    CHECK(c.ok);
  }
  // One buffer instead of two: each tile then sees the block that arrived for the next step.
  std::string single = text;
  for (std::string from : {"cur[s % 2]", "cur[(s + 1) % 2]"})
    for (size_t at; (at = single.find(from)) != std::string::npos;) single.replace(at, from.size(), "cur[0]");
  auto c = sgtest::check(single, 4);
  REQUIRE_FALSE(c.ok);
  const Issue* i = first(c.post.issues, IssueKind::Missing);
  REQUIRE(i);
  CHECK(i->text.find("foreign A(") != std::string::npos);
}

TEST_CASE("an attention tile with a wrong operand is reported", "[interp][attention]") {
  auto c = sgtest::check(R"(schedule ra() {
  buffer Q[N] bytes 64;
  buffer KV[N] bytes 64;
  buffer O[N] bytes 64;
  init Q owned;
  init KV contrib;
  compute attn(Q[0], KV[0]) into O[0] mask full at 0;
}
)",
                         2);
  REQUIRE_FALSE(c.ok);
  const Issue* i = first(c.r.issues, IssueKind::BadOperand);
  REQUIRE(i);
  CHECK(i->text.find("not a single kv(m)") != std::string::npos);
}

TEST_CASE("K and V apart: a tile whose V holds another item than its K is reported at its line; the same item passes",
          "[interp][attention]") {
  auto text = [](const char* v) {
    return std::string(R"(schedule kv() {
  buffer Q[N] bytes 64;
  buffer K[N] bytes 64;
  buffer V[N] bytes 64;
  buffer O[N] bytes 64;
  init Q owned;
  init K owned;
  init V owned;
  expect attention(Q, K, V, O, full);
  for r in 0 .. N { for j in 0 .. N { compute attn(Q[r], K[j], )") +
           v + R"() into O[r] mask full at r; } }
}
)";
  };
  // Every rank holds every K and V item here only where it owns them: give each rank all of them.
  auto everywhere = [](std::string t) {
    t.replace(t.find("init K owned;"), 13, "for r in 0 .. N { for j in 0 .. N { init K[j] on r; } }");
    t.replace(t.find("init V owned;"), 13, "for r in 0 .. N { for j in 0 .. N { init V[j] on r; } }");
    return t;
  };
  auto bad = sgtest::check(everywhere(text("V[(j + 1) % N]")), 2);
  REQUIRE_FALSE(bad.ok);
  const Issue* i = first(bad.r.issues, IssueKind::BadOperand);
  REQUIRE(i);
  CHECK(i->text.find("operand V = V[1] holds") != std::string::npos);
  CHECK(i->text.find("not v(0), the item K holds") != std::string::npos);
  CHECK(bad.b.graph->loc(i->step).line == 10);
  auto good = sgtest::check(everywhere(text("V[j]")), 2);
  INFO(good.findings);
  CHECK(good.ok);
}

TEST_CASE("a generic compute produces the rank's own term", "[interp]") {
  auto c = sgtest::check(R"(schedule g() {
  buffer act[N] bytes 8;
  buffer grad[N] bytes 8;
  init act contrib;
  expect allreduce(grad);
  compute bwd flops 100 reads act[0] writes grad;
  allreduce grad;
}
)",
                         3);
  INFO(c.findings);
  CHECK(c.ok);
}

TEST_CASE("a wildcard receive that takes a larger message is unmatched, at the receive and the send", "[interp][size]") {
  // Issue 23's reproducer: 128 bytes into a 64-byte receive (MPI_ERR_TRUNCATE under mpiexec).
  const std::string bad =
      "schedule trunc() {\n"
      "  buffer a[4] bytes 64;\n"
      "  init a contrib;\n"
      "  expect nothing;\n"
      "  on 0 { send a[0 .. 2] to 1 tag 3; }\n"
      "  on 1 { recv a[0] from any tag 3; }\n"
      "}\n";
  auto c = sgtest::check(bad, 2);
  REQUIRE(c.b.ok());
  CHECK_FALSE(c.ok);
  CHECK(std::string(check_verdict(c.r, c.ok)) == "unmatched");
  const Issue* i = first(c.r.issues, IssueKind::SizeMismatch);
  REQUIRE(i);
  CHECK(line_of(c, *i) == 6);                // the receive
  CHECK(c.b.graph->loc(i->send).line == 5);  // the send
  CHECK(i->text.find("truncated") != std::string::npos);
  INFO(c.findings);
  CHECK(c.findings.find("test.sched:6:") != std::string::npos);
  CHECK(c.findings.find("test.sched:5:") != std::string::npos);
  CHECK(c.findings.find("unmatched: message size mismatch") != std::string::npos);

  // A smaller message is refused too (the receive's second chunk would stay unwritten).
  std::string smaller = bad;
  smaller.replace(smaller.find("a[0 .. 2] to"), 9, "a[1]");
  smaller.replace(smaller.find("recv a[0]"), 9, "recv a[2 .. 4]");
  auto s = sgtest::check(smaller, 2);
  REQUIRE(s.b.ok());
  CHECK(std::string(check_verdict(s.r, s.ok)) == "unmatched");
  REQUIRE(first(s.r.issues, IssueKind::SizeMismatch));
  CHECK(first(s.r.issues, IssueKind::SizeMismatch)->text.find("never written") != std::string::npos);

  // The fix: a receive of the message's size.
  std::string fixed = bad;
  fixed.replace(fixed.find("recv a[0]"), 9, "recv a[2 .. 4]");
  auto f = sgtest::check(fixed, 2);
  INFO(f.findings);
  CHECK(f.ok);
  CHECK(std::string(check_verdict(f.r, f.ok)) == "ok");
  CHECK_FALSE(first(f.r.issues, IssueKind::SizeMismatch));
}
