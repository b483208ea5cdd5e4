// Elaboration: steps, dependencies (dataflow and MPI program order), matching, collective
// instances, one-rank programs, the size estimate, and the errors that point at statements.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/dsl/library.hpp"
#include "core/io/writers.hpp"
#include "test_util.hpp"

using namespace sg;

namespace {

std::vector<StepId> deps(const StepGraph& g, StepId s) { return {g.deps(s).begin(), g.deps(s).end()}; }

}  // namespace

TEST_CASE("choreographic statements depend only on hazards", "[elaborate][dataflow]") {
  auto b = sgtest::build(R"(schedule h() {
  buffer a[4] bytes 8;
  init a contrib;
  send a[0] from 0 to 1;            # #0 send r0 reads a[0]; #1 recv r1 writes a[0]
  send a[1] from 0 to 1;            # #2 independent of #0 (other chunk); #3
  send a[0] from 1 to 0 reduce;     # #4 r1 reads a[0]: RAW on #1; #5 r0 reduce into a[0]: RAW and WAR on #0
  copy a[2] into a[0] at 1;         # #6 r1 writes a[0]: WAR on #4 (reader since #1)
}
)",
                         2, "", {}, false);
  INFO(b.errors);
  REQUIRE(b.ok());
  const StepGraph& g = *b.graph;
  REQUIRE(g.size() == 7);
  CHECK(deps(g, 0).empty());
  CHECK(deps(g, 1).empty());
  CHECK(deps(g, 2).empty());
  CHECK(deps(g, 4) == std::vector<StepId>{1});
  CHECK(deps(g, 5) == std::vector<StepId>{0});
  CHECK(deps(g, 6) == std::vector<StepId>{4});
}

TEST_CASE("on blocks follow MPI program order; nonblocking steps complete at their wait", "[elaborate][mpi]") {
  auto b = sgtest::build(R"(schedule p() {
  buffer a[4] bytes 8;
  init a contrib;
  on 0 {
    isend a[0] to 1 as h;     # #0
    isend a[1] to 1 as g;     # #1 starts after #0 started
    send a[2] to 1;           # #2 blocking: after #1 started, not after the isends completed
    wait h, g;                # #3 after #2 and completes #0, #1
    copy a[3] into a[0];      # #4 writes a[0]: ordered after the wait
  }
  on 1 { recv a[0] from 0; recv a[1] from 0; recv a[2] from 0; }
}
)",
                         2, "", {}, false);
  INFO(b.errors);
  REQUIRE(b.ok());
  const StepGraph& g = *b.graph;
  CHECK(deps(g, 0).empty());
  CHECK(deps(g, 1) == std::vector<StepId>{0});
  CHECK(deps(g, 2) == std::vector<StepId>{1});
  CHECK(g.kind(3) == StepKind::Wait);
  CHECK(deps(g, 3) == std::vector<StepId>{0, 1, 2});
  CHECK(std::vector<StepId>(g.handles_begin(3), g.handles_end(3)) == std::vector<StepId>{0, 1});
  CHECK(deps(g, 4) == std::vector<StepId>{0, 3});
  CHECK(deps(g, 6) == std::vector<StepId>{5});
}

TEST_CASE("MPI matching pairs sends and receives per channel in order", "[elaborate][match]") {
  auto b = sgtest::build(R"(schedule m() {
  buffer a[4] bytes 8;
  init a contrib;
  on 0 { send a[0] to 1 tag 1; send a[1] to 1 tag 2; send a[2] to 1 tag 1; }
  on 1 { recv a[0] from 0 tag 2; recv a[1] from 0 tag 1; recv a[2] from 0 tag 1; }
}
)",
                         2);
  INFO(b.errors);
  REQUIRE(b.ok());
  const StepGraph& g = *b.graph;
  CHECK(g.match(3) == 1);  // tag 2
  CHECK(g.match(4) == 0);  // first tag 1
  CHECK(g.match(5) == 2);  // second tag 1
  CHECK(g.match(0) == 4);
}

TEST_CASE("wildcard receives get candidate sets", "[elaborate][match]") {
  auto b = sgtest::build(R"(schedule w() {
  buffer a[4] bytes 8;
  init a contrib;
  on 1 { send a[1] to 0 tag 5; }
  on 2 { send a[2] to 0 tag 6; }
  on 0 { recv a[1] from any tag any; recv a[2] from any tag 6; }
}
)",
                         3);
  INFO(b.errors);
  REQUIRE(b.ok());
  const StepGraph& g = *b.graph;
  const P2PInfo& r0 = g.p2p_info(2);
  const P2PInfo& r1 = g.p2p_info(3);
  CHECK(r0.cand_cnt == 2);
  CHECK(r1.cand_cnt == 1);
  CHECK(g.candidates[r1.cand_off] == 1);
  CHECK(r0.match == kNoStep);
}

TEST_CASE("a message size mismatch is an error at the receive", "[elaborate][match]") {
  auto b = sgtest::build(
      "schedule z() {\n  buffer a[4] bytes 8;\n  init a contrib;\n  on 0 { send a[0 .. 2] to 1; }\n"
      "  on 1 { recv a[0] from 0; }\n}\n",
      2);
  REQUIRE_FALSE(b.ok());
  CHECK(b.errors.find("test.sched:5:10: error: message size mismatch: rank 1 receives 8 bytes") != std::string::npos);
}

TEST_CASE("collectives form instances per group in issue order", "[elaborate][collectives]") {
  auto b = sgtest::build(R"(schedule c() {
  buffer a[4] bytes 8;
  init a contrib;
  allreduce a[0];                       # instance 0 of world
  on 0 { bcast a[1] root 0; allreduce a[2]; }
  on 1 { allreduce a[2]; bcast a[1] root 0; }   # swapped order: instances 1 and 2 inconsistent
  barrier over ranks(0, 1);
}
)",
                         2);
  INFO(b.errors);
  REQUIRE(b.ok());
  const StepGraph& g = *b.graph;
  REQUIRE(g.instances.size() == 4);
  CHECK(g.instances[0].consistent);
  CHECK(g.instances[0].steps_cnt == 2);
  CHECK_FALSE(g.instances[1].consistent);
  CHECK_FALSE(g.instances[2].consistent);
  CHECK(g.instances[3].complete);
  auto missing = sgtest::build("schedule c() {\n  buffer a[4] bytes 8;\n  init a contrib;\n  on 0 { allreduce a[0]; }\n}\n", 2);
  REQUIRE(missing.ok());
  CHECK_FALSE(missing.graph->instances[0].complete);
}

TEST_CASE("ring all-reduce has the design's shape", "[elaborate]") {
  for (uint32_t n : {2u, 3u, 8u}) {
    auto b = sgtest::build_lib("ring_allreduce", n);
    INFO(b.errors);
    REQUIRE(b.ok());
    const StepGraph& g = *b.graph;
    CHECK(g.size() == uint64_t{4} * n * (n - 1));
    uint64_t sends = 0;
    for (StepId s = 0; s < g.size(); ++s) {
      if (g.kind(s) != StepKind::Send) continue;
      ++sends;
      CHECK(g.peer(s) == (g.rank(s) + 1) % n);
      CHECK(g.match(g.match(s)) == s);
    }
    CHECK(sends == uint64_t{2} * n * (n - 1));
  }
}

TEST_CASE("one rank's program equals that rank's part of the whole graph", "[elaborate][per-rank]") {
  for (const auto& e : library()) {
    for (uint32_t n : {4u, 6u, 8u}) {
      auto full = sgtest::build_lib(e.name, n);
      if (!full.ok()) continue;  // refused N
      const StepGraph& g = *full.graph;
      auto ix = g.rank_index();
      for (uint32_t r = 0; r < n; ++r) {
        Session s;
        Target t = s.open_schedule(e.name);
        ElabOptions o;
        o.nranks = n;
        o.only_rank = r;
        auto one = elaborate(s, t, o);
        INFO(e.name << " N=" << n << " rank " << r << "\n" << s.diags.render(s.sources));
        REQUIRE(one);
        REQUIRE(one->size() == ix.off[r + 1] - ix.off[r]);
        for (StepId k = 0; k < one->size(); ++k) {
          StepId x = ix.steps[ix.off[r] + k];
          CHECK(one->kind(k) == g.kind(x));
          CHECK(one->range(k) == g.range(x));
          CHECK(one->stmt(k) == g.stmt(x));
          CHECK((one->flags(k) & ~kFlagWide) == (g.flags(x) & ~kFlagWide));
          if (g.kind(x) == StepKind::Send || g.kind(x) == StepKind::Recv) CHECK(one->peer(k) == g.peer(x));
        }
      }
    }
  }
}

TEST_CASE("the size estimate counts exactly what elaboration builds", "[elaborate][estimate]") {
  for (const auto& e : library()) {
    for (uint32_t n : {2u, 5u, 8u, 16u}) {
      Session s;
      Target t = s.open_schedule(e.name);
      ElabOptions o;
      o.nranks = n;
      SizeEstimate est;
      auto g = elaborate(s, t, o, &est);
      if (!g) continue;
      INFO(e.name << " N=" << n);
      CHECK(est.steps == g->size());
      for (int64_t r : {0, 1}) {
        ElabOptions one = o;
        one.only_rank = r;
        Session s2;
        SizeEstimate est2;
        auto g2 = elaborate(s2, s2.open_schedule(e.name), one, &est2);
        REQUIRE(g2);
        CHECK(est2.steps == g2->size());
      }
    }
  }
}

TEST_CASE("an instance too big to build is refused before building", "[elaborate][estimate]") {
  Session s;
  Target t = s.open_schedule("ring_allreduce");
  ElabOptions o;
  o.nranks = 4096;
  o.max_memory = uint64_t{1} << 30;
  SizeEstimate est;
  auto g = elaborate(s, t, o, &est);
  CHECK_FALSE(g);
  CHECK(est.steps == uint64_t{4} * 4096 * 4095);
  CHECK(est.transfers == uint64_t{2} * 4096 * 4095);
  std::string text = s.diags.render(s.sources);
  CHECK(text.find("instance too big to build: 67,092,480 steps (33,546,240 transfers) for N = 4096") != std::string::npos);
  CHECK(text.find("the memory limit is 1.0 GiB") != std::string::npos);
}

TEST_CASE("compute entries are shared; a build whose entries are not is refused as it grows", "[elaborate][estimate][memory]") {
  // The same work on the same chunks is one entry, whichever rank does it (a training step's
  // 8 M compute steps at N = 8,192 share about a thousand).
  const char* shared =
      "schedule s(K = 256) {\n  buffer d[K] bytes 8;\n  buffer e[K] bytes 8;\n  init d contrib;\n"
      "  on r in 0 .. N { for k in 0 .. K { compute f flops 1000 reads d[k] writes e[k]; } }\n}\n";
  auto b = sgtest::build(shared, 64);
  REQUIRE(b.ok());
  CHECK(b.graph->size() == 64 * 256);
  CHECK(b.graph->computes.size() == 256);
  // The estimate counts them as shared; flops that differ on every rank make 1 M entries (64 MB
  // beyond the estimate's 56 MB), and the build's own watch refuses it under an 80 MiB limit.
  const char* distinct =
      "schedule s(K = 1024) {\n  buffer d[K] bytes 8;\n  buffer e[K] bytes 8;\n  init d contrib;\n"
      "  on r in 0 .. N { for k in 0 .. K { compute f flops 1 + r * K + k reads d[k] writes e[k]; } }\n}\n";
  Session s;
  const Program* p = s.load_text("distinct.sched", distinct);
  REQUIRE(p);
  ElabOptions o;
  o.nranks = 1024;
  o.max_memory = uint64_t{80} << 20;
  SizeEstimate est;
  auto g = elaborate(s, Target{p, p->schedules.back().get()}, o, &est);
  CHECK_FALSE(g);
  CHECK(est.bytes < o.max_memory);  // the estimate let it start
  std::string text = s.diags.render(s.sources);
  INFO(text);
  CHECK(text.find("instance too big to build: after ") != std::string::npos);
  CHECK(text.find("of 1,048,576 steps the graph holds") != std::string::npos);
  CHECK(text.find("the memory limit is 80.0 MiB") != std::string::npos);
  o.max_memory = uint64_t{1} << 30;
  Session s2;
  const Program* p2 = s2.load_text("distinct.sched", distinct);
  auto g2 = elaborate(s2, Target{p2, p2->schedules.back().get()}, o);
  REQUIRE(g2);
  CHECK(g2->computes.size() == 1024 * 1024);
}

TEST_CASE("the graph stays compact", "[elaborate][memory]") {
  auto b = sgtest::build_lib("ring_allreduce", 512);
  REQUIRE(b.ok());
  double per_step = static_cast<double>(b.graph->memory_bytes()) / static_cast<double>(b.graph->size());
  CHECK(per_step < 36.0);  // 26 bytes of step arrays + about one 4-byte dependency
}

TEST_CASE("elaboration errors point at the statement that caused them", "[elaborate][errors]") {
  struct Case {
    const char* body;
    const char* message;
    uint32_t line, col;
  };
  const Case cases[] = {
      {"send d[N] from 0 to 1;", "chunk index out of range for 'd' (index 4, valid 0 .. 3)", 4, 10},
      {"send d[0] from 0 to N;", "destination rank out of range (rank 4, valid 0 .. 3)", 4, 23},
      {"send d[0] from -1 to 0;", "source rank out of range (rank -1, valid 0 .. 3)", 4, 18},
      {"let z = N - N; let y = N / z;", "division by zero", 4, 30},
      {"let q = log2(N - 1);", "log2 of a value that is not a power of two (log2(3))", 4, 11},
      {"on 0 { isend d[0] to 1 as h; wait h; wait h; } on 1 { recv d[0] from 0; }",
       "handle 'h' is waited twice on rank 0 (first wait at line 4)", 4, 45},
      {"on 0 { wait nope; }", "unknown handle 'nope' on rank 0 (no isend/irecv … as nope before this wait)", 4, 15},
      {"send d[0 .. 0] from 0 to 1;", "chunk range out of bounds for 'd' (0 .. 0, valid within 0 .. 4, and it must not be empty)", 4, 10},
      {"require N == 8, \"needs eight ranks\";", "needs eight ranks (require N == 8 with N = 4)", 4, 3},
      {"on 7 { }", "'on' rank out of range (rank 7, valid 0 .. 3)", 4, 6},
      {"send d[0] from 0 to 1 into e[0];", "a send between chunks of different sizes (8 bytes from d[0], 4 bytes into e[0])", 4, 30},
      {"bcast d[0] root 9;", "root rank out of range (rank 9, valid 0 .. 3)", 4, 19},
      {"allgather d[0 .. 3];", "allgather needs a chunk count that is a multiple of the group size (3 chunks, 4 members)", 4, 13},
      {"buffer d[2] bytes 3;", "buffer 'd' is declared twice", 4, 3},
      {"for i in 0 .. 4 step 0 { }", "a loop step must not be zero", 4, 24},
      {"recv d[0] from 1;", "'recv' is a local-view statement: put it inside an 'on' block", 4, 3},
      {"on 0 { send d[0] from 0 to 1; }",
       "a choreographic 'send … from … to …' cannot appear inside an 'on' block (write 'send B[i] to P')", 4, 10},
      {"call nothere(d);", "unknown schedule 'nothere' (not in this file nor in the library)", 4, 8},
  };
  for (const auto& c : cases) {
    std::string text =
        std::string("schedule e() {\n  buffer d[N] bytes 8;\n  buffer e[N] bytes 4;\n  ") + c.body + "\n  init d contrib;\n}\n";
    auto b = sgtest::build(text, 4);
    INFO(c.body << "\n" << b.errors);
    REQUIRE_FALSE(b.ok());
    const auto& d = b.session->diags.all();
    REQUIRE(!d.empty());
    CHECK(d[0].message == c.message);
    CHECK(d[0].loc.line == c.line);
    CHECK(d[0].loc.col == c.col);
  }
}

TEST_CASE("an unknown --set parameter and a bad value are errors", "[elaborate][errors]") {
  auto b = sgtest::build_lib("ring_allreduce", 4, {{"sizee", "1"}});
  REQUIRE_FALSE(b.ok());
  CHECK(b.errors.find("schedules/ring_allreduce.sched:9:10: error: unknown parameter 'sizee' (--set sizee=1)") != std::string::npos);
  CHECK(b.errors.find("takes parameters: size") != std::string::npos);
  auto c = sgtest::build_lib("ring_allreduce", 4, {{"size", "N * 2KiB"}});
  REQUIRE(c.ok());
  CHECK(c.graph->buffers[0].chunk_bytes == 2048);
  auto d = sgtest::build_lib("ring_allreduce", 4, {{"size", "x"}});
  REQUIRE_FALSE(d.ok());
  CHECK(d.errors.find("a --set value may only use numbers and N (found 'x')") != std::string::npos);
}

TEST_CASE("a failed require marks the instance unsupported, with its message as the reason", "[elaborate][errors]") {
  const char* text = R"sched(schedule e(k = 1) {
  require k >= 1, "k must be positive";
  buffer d[N] bytes 8;
  for i in 0 .. N { require i < 3 || N % 2 == 0, "odd N needs fewer than 3 (see (require) note)"; }
  # Never reached when a require above fails: counting (the size estimate) stops there too.
  for i in 0 .. 1000000000000 { let x = i; }
}
)sched";
  auto b = sgtest::build(text, 5);
  REQUIRE_FALSE(b.ok());
  const Diagnostic* why = b.session->diags.unsupported_since(0);
  REQUIRE(why != nullptr);
  CHECK(why->message == "odd N needs fewer than 3 (see (require) note) (require i < 3 || N % 2 == 0 with N = 5; with i = 3)");
  CHECK(unsupported_reason(*why) == "odd N needs fewer than 3 (see (require) note)");
  CHECK(b.session->diags.error_count() == 1);
  // Without a message, the reason says only that the requirement failed.
  auto c = sgtest::build(text, 4, "", {{"k", "0"}});
  REQUIRE(c.session->diags.unsupported_since(0) != nullptr);
  CHECK(unsupported_reason(*c.session->diags.unsupported_since(0)) == "k must be positive");
  auto m = sgtest::build("schedule e() {\n  require N == 2;\n}\n", 3);
  REQUIRE(m.session->diags.unsupported_since(0) != nullptr);
  CHECK(unsupported_reason(*m.session->diags.unsupported_since(0)) == "requirement failed");
  // Any other error makes it bad input, even next to a failed require.
  auto e = sgtest::build("schedule e() {\n  let z = 1 / (N - 3);\n  require N == 2, \"two\";\n}\n", 3);
  REQUIRE_FALSE(e.ok());
  CHECK(e.session->diags.unsupported_since(0) == nullptr);
}

TEST_CASE("a chunk size that division rounds down is a warning, once per statement", "[elaborate][warnings]") {
  const char* text = R"(schedule w(size = 1000) {
  buffer data[N] bytes size / N;
  buffer exact[N] bytes 1020 / N;
  buffer up[N] bytes cdiv(size, N);
  buffer tiny[N] bytes 2 / N;
  for s in 0 .. 4 { buffer again[N] bytes size / N / 2; }
  call sub(data);
  call sub(data);
}
schedule sub(buffer B) {
  buffer inner[2] bytes size(B) * 10 / 4;
}
)";
  auto b = sgtest::build(text, 3, "w");
  REQUIRE(b.ok());  // warnings do not fail the build
  std::vector<const Diagnostic*> w;
  for (const auto& d : b.session->diags.all())
    if (d.severity == Severity::Warning) w.push_back(&d);
  REQUIRE(w.size() == 4);
  CHECK(w[0]->loc.line == 2);
  CHECK(w[0]->loc.col == 24);
  CHECK(w[0]->length == 8);
  CHECK(w[0]->message == "chunk size size / N = 1000 / 3 rounds down to 333 bytes: the 3 chunks of 'data' hold 999 of the 1000 bytes");
  CHECK(w[1]->message == "chunk size 2 / N = 2 / 3 rounds down to 0 bytes: every chunk of 'tiny' is empty");
  CHECK(w[2]->loc.line == 6);  // once, though the loop runs it four times
  CHECK(w[2]->message == "chunk size size / N / 2 is 166 bytes, rounded down: size / N = 1000 / 3 drops a remainder of 1");
  CHECK(w[3]->loc.line == 11);  // once, though called twice
  CHECK(w[3]->message == "chunk size size(B) * 10 / 4 = 30 / 4 rounds down to 7 bytes (a remainder of 2 bytes is dropped)");
  // Where every division is exact there is nothing to say.
  auto e = sgtest::build(text, 2, "w");
  REQUIRE(e.ok());
  for (const auto& d : e.session->diags.all()) CHECK(d.severity != Severity::Warning);
}

TEST_CASE("errors in loops are reported once with the loop variables", "[elaborate][errors]") {
  auto b = sgtest::build("schedule e() {\n  buffer d[N] bytes 8;\n  for r in 0 .. N {\n    send d[r + 2] from r to 0;\n  }\n}\n", 4);
  REQUIRE_FALSE(b.ok());
  const auto& d = b.session->diags.all();
  REQUIRE(d.size() == 1);
  CHECK(d[0].message == "chunk index out of range for 'd' (index 4, valid 0 .. 3; with r = 2)");
  CHECK(d[0].repeats == 1);
}

TEST_CASE("one rank's program skips only the loop iterations that concern other ranks", "[elaborate][per-rank]") {
  // Every endpoint form the one-rank fast path inverts ((v ± c) % M, (c ± v) % M, v), with
  // M below N, negative offsets, loops not starting at 0, and forms it leaves to the general path.
  const std::string text = R"(
schedule shapes() {
  buffer a[N] bytes 64;
  buffer b[2 * N] bytes 64;
  init a contrib;
  init b contrib;
  expect nothing;
  for s in 0 .. 3 {
    for r in 0 .. N { send a[(r - s) % N] from r to (r + 1) % N reduce; }
    for r in 1 .. N { send b[r] from (r + s) % N to (s - r) % N into b[N + r]; }
    for r in 0 .. N { send a[r] from (2 + r) % N to r; }
    for r in 0 .. N - 1 { send b[r] from (r - 3) % N to (r + 5) % (N - 1); }
    for r in 0 .. N { send a[r] from r to (2 * r + 1) % N; }
  }
}
)";
  for (uint32_t n : {3u, 4u, 7u, 9u}) {
    auto full = sgtest::build(text, n, "", {}, false);
    REQUIRE(full.ok());
    const StepGraph& g = *full.graph;
    auto ix = g.rank_index();
    for (uint32_t r = 0; r < n; ++r) {
      auto one = sgtest::build(text, n, "", {}, false, r);
      INFO("N=" << n << " rank " << r << "\n" << one.errors);
      REQUIRE(one.ok());
      REQUIRE(one.graph->size() == ix.off[r + 1] - ix.off[r]);
      for (StepId k = 0; k < one.graph->size(); ++k) {
        StepId x = ix.steps[ix.off[r] + k];
        CHECK(one.graph->kind(k) == g.kind(x));
        CHECK(one.graph->range(k) == g.range(x));
        CHECK(one.graph->stmt(k) == g.stmt(x));
        CHECK(one.graph->peer(k) == g.peer(x));
        CHECK(one.graph->dep_count(k) == g.dep_count(x));
      }
    }
  }
}

TEST_CASE("check's interpreter is counted before the graph is built", "[elaborate][estimate][bounds]") {
  // Issue 23: check ring_allreduce -n 8192 built its 268 M-step graph (8.7 GB, 150-210 s) before
  // refusing it for the interpreter's state. Now the interpreter's need is part of the estimate.
  Session s;
  Target t = s.open_schedule("ring_allreduce");
  ElabOptions o;
  o.nranks = 8192;
  o.max_memory = uint64_t{16} << 30;
  count_interpreter(o);
  SizeEstimate est;
  auto g = elaborate(s, t, o, &est);
  CHECK_FALSE(g);
  CHECK(est.chunks == 8192);
  std::string text = s.diags.render(s.sources);
  INFO(text);
  CHECK(text.find("instance too big to build: 268,402,688 steps") != std::string::npos);
  CHECK(text.find("of it for the interpreter's state") != std::string::npos);
  // The estimate is an upper bound of what interpret() is then charged at a size that fits.
  Session s2;
  ElabOptions o2;
  o2.nranks = 64;
  count_interpreter(o2);
  SizeEstimate e2;
  auto g2 = elaborate(s2, s2.open_schedule("ring_allreduce"), o2, &e2);
  REQUIRE(g2);
  CHECK(interpreter_bytes(e2, 64) >= interpreter_bytes(*g2));
}

TEST_CASE("loops that build nothing are bounded: iterations count as work", "[elaborate][bounds]") {
  // Issue 23: an empty loop of 2^62 iterations elaborated for ever (only statements were counted),
  // and one whose body is an `if` that never holds ran 2,000,000,000 statements (26 s) first.
  for (const char* body : {"", "if t == -1 { send a[0] from 0 to 1; }"}) {
    std::string text = std::string("schedule big() {\n  buffer a[4] bytes 64;\n  init a contrib;\n  expect nothing;\n") +
                       "  for t in 0 .. 4611686018427387904 { " + body + " }\n}\n";
    auto b = sgtest::build(text, 2);
    INFO(b.errors);
    REQUIRE_FALSE(b.ok());
    CHECK(b.errors.find("test.sched:5:3: error: elaboration would run more than 300,000,000 statements or loop iterations") !=
          std::string::npos);
  }
  // A long loop that builds steps is bounded by memory instead, not by the work limit.
  auto ok = sgtest::build(
      "schedule many() {\n  buffer a[2] bytes 8;\n  init a contrib;\n  expect nothing;\n"
      "  for t in 0 .. 200000 { copy a[0] into a[1] at 0; }\n}\n",
      1);
  CHECK(ok.ok());
}

TEST_CASE("byte sizes and totals past 4 EiB are refused where they arise, never wrapped", "[elaborate][bounds]") {
  // Issue 23: compile ring_allreduce -n 4 --set size=8388607TiB printed 18,446,737,476,639,784,960
  // bytes moved (the total wrapped at 2^64).
  Session s;
  ElabOptions o;
  o.nranks = 4;
  o.sets = {{"size", "8388607TiB"}};
  auto g = elaborate(s, s.open_schedule("ring_allreduce"), o);
  CHECK_FALSE(g);
  REQUIRE(s.diags.error_count() == 1);  // not followed by "used before it is declared" at every use
  const Diagnostic& d = s.diags.all()[0];
  CHECK(d.message.find("buffer 'data' would hold 4 chunks of 2,305,842,734,335,787,008 bytes on every rank, more than 2^62 bytes") == 0);
  CHECK(d.loc.line == 10);
  CHECK(d.loc.col == 24);  // the size expression
  // Each buffer fits, but the data all ranks move does not: the totals pass stops at the statement.
  auto b = sgtest::build(
      "schedule wide() {\n  buffer a[2] bytes 1TiB * 1024;\n  init a contrib;\n  expect nothing;\n"
      "  for k in 0 .. 4096 { send a[0] from 0 to 1; }\n}\n",
      2);
  INFO(b.errors);
  CHECK_FALSE(b.ok());
  CHECK(b.errors.find("test.sched:5:24: error: the data this instance moves comes to more than 2^62 bytes") != std::string::npos);
  // Just under the limit the totals are exact.
  auto fits = sgtest::build(
      "schedule wide() {\n  buffer a[2] bytes 1TiB * 1024;\n  init a contrib;\n  expect nothing;\n"
      "  for k in 0 .. 1000 { send a[0] from 0 to 1; }\n}\n",
      2);
  CHECK(fits.ok());
}

TEST_CASE("a buffer no step uses and no postcondition covers is warned about at its declaration", "[elaborate][unused]") {
  // Issue 28: an input buffer declared and never used got no warning.
  auto b = sgtest::build(
      "schedule s() {\n  buffer data[N] bytes 64;\n  buffer tmp[N] bytes 64;\n  init data contrib;\n"
      "  expect allreduce(data);\n  for r in 0 .. N { send data[0] from r to (r + 1) % N reduce; }\n}\n",
      4);
  REQUIRE(b.ok());
  CHECK(b.errors.find("test.sched:3:3: warning: buffer 'tmp' is declared, but no step reads or writes it and no postcondition covers it") !=
        std::string::npos);
  CHECK(b.errors.find("'data'") == std::string::npos);
  // Every library schedule uses every buffer it declares.
  for (const char* name : {"ring_allreduce", "hierarchical_allreduce", "zigzag_ring_attention", "dp_bucketed_step", "tp_backward"}) {
    auto l = sgtest::build_lib(name, 8);
    INFO(name << "\n" << l.errors);
    CHECK(l.errors.find("is declared, but no step") == std::string::npos);
  }
}

TEST_CASE("a range of a buffer with several dimensions is named by its chunks, not by a count", "[elaborate][names]") {
  // Issue 28: verify's notes said `data[0, 0] +2`.
  auto b = sgtest::build("schedule s() {\n  buffer m[2, 4] bytes 8;\n  init m contrib;\n  expect nothing;\n}\n", 2);
  REQUIRE(b.ok());
  const sg::StepGraph& g = *b.graph;
  CHECK(g.range_name(sg::Range{0, 1, 2}) == "m[0, 1 .. 3]");
  CHECK(g.range_name(sg::Range{0, 4, 4}) == "m[1, 0 .. 4]");
  CHECK(g.range_name(sg::Range{0, 3, 3}) == "m[0, 3] .. m[1, 1] (3 chunks)");
  CHECK(g.range_name(sg::Range{0, 0, 8}) == "m");
}

namespace {

// The longest chain by relaxation in step order until nothing grows (what compute_stats did,
// capped at 256 passes): the oracle.
uint64_t rounds_by_relaxation(const StepGraph& g) {
  std::vector<uint32_t> start(g.size(), 0), done(g.size(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (StepId x = 0; x < g.size(); ++x) {
      uint32_t st = start[x];
      for (StepId p : g.deps(x)) st = std::max(st, g.nonblocking(p) ? start[p] : done[p]);
      uint32_t d = std::max(st, done[x]);
      if (g.kind(x) == StepKind::Recv && g.match(x) != kNoStep) d = std::max(d, start[g.match(x)] + 1);
      if (g.kind(x) == StepKind::Wait)
        for (const StepId* h = g.handles_begin(x); h != g.handles_end(x); ++h) d = std::max(d, done[*h]);
      if (g.kind(x) == StepKind::Collective) {
        const Instance& in = g.instances[g.coll(x).instance];
        for (uint32_t k = 0; k < in.steps_cnt; ++k) d = std::max(d, start[g.instance_steps[in.steps_off + k]] + 1);
      }
      if (st != start[x] || d != done[x]) start[x] = st, done[x] = d, changed = true;
    }
  }
  return *std::max_element(done.begin(), done.end());
}

}  // namespace

TEST_CASE("rounds: the longest chain of messages, in one walk, as relaxation finds it", "[elaborate][stats]") {
  struct Case {
    const char* name;
    uint32_t n;
    std::vector<std::pair<std::string, std::string>> sets;
  };
  // A pipeline's backward passes run against emission order (many relaxation passes); an MPI
  // ring of isends and irecvs; collectives; a plain ring.
  const Case cases[] = {
      {"train_step", 128, {{"layers", "16"}, {"microbatches", "8"}, {"buckets", "1"}}},
      {"ring_attention", 8, {}},
      {"dp_bucketed_step", 8, {}},
      {"ring_allreduce", 16, {}},
      {"tp_forward", 8, {}},
  };
  for (const Case& c : cases) {
    auto b = sgtest::build_lib(c.name, c.n, c.sets);
    INFO(c.name << "\n" << b.errors);
    REQUIRE(b.ok());
    GraphStats s = compute_stats(*b.graph);
    CHECK(s.rounds_converged);
    CHECK(s.rounds == rounds_by_relaxation(*b.graph));
  }
  CHECK(compute_stats(*sgtest::build_lib("ring_allreduce", 16).graph).rounds == 30);  // 2(N - 1)
  // Both ranks receive before they send: a cycle, so the count is a lower bound, and says so.
  auto dl = sgtest::build(
      "schedule dl() {\n  buffer d[1] bytes 8;\n  init d contrib;\n"
      "  on 0 { recv d[0] from 1; send d[0] to 1; }\n  on 1 { recv d[0] from 0; send d[0] to 0; }\n}\n",
      2);
  INFO(dl.errors);
  REQUIRE(dl.ok());
  CHECK_FALSE(compute_stats(*dl.graph).rounds_converged);
}

TEST_CASE("after a top-level on block, a rank's chunk states go only where no later statement names the buffer", "[elaborate][memory]") {
  // An `on` block touches only its own rank's chunks, so once rank r's part is done, the states
  // of buffers no later statement names can go (a training step's ranks held 4.6 GB of them at
  // N = 131,072). Buffers named later keep theirs: the second block depends on the first.
  auto dep_on = [](const StepGraph& g, StepId s, StepId t) {
    for (StepId d : g.deps(s))
      if (d == t) return true;
    return false;
  };
  auto compute_steps = [](const StepGraph& g, uint32_t rank) {
    std::vector<StepId> out;
    for (StepId s = 0; s < g.size(); ++s)
      if (g.rank(s) == rank && g.kind(s) == StepKind::Compute) out.push_back(s);
    return out;
  };
  const char* two_blocks =
      "schedule t() {\n  buffer a[1] bytes 8;\n  buffer b[1] bytes 8;\n  buffer c[1] bytes 8;\n  init a contrib;\n  init b contrib;\n"
      "  on r in 0 .. N { compute f flops 1 reads a[0] writes b[0], c[0]; }\n"
      "  on r in 0 .. N { compute g flops 1 reads b[0] writes a[0]; }\n}\n";
  auto b = sgtest::build(two_blocks, 4, "", {}, false);
  INFO(b.errors);
  REQUIRE(b.ok());
  for (uint32_t r = 0; r < 4; ++r) {
    auto cs = compute_steps(*b.graph, r);
    REQUIRE(cs.size() == 2);
    CHECK(dep_on(*b.graph, cs[1], cs[0]));  // b read after its write, a written after its read
  }
  // In a loop, the block runs again: nothing is released, and the second pass depends on the first.
  const char* looped =
      "schedule t() {\n  buffer a[1] bytes 8;\n  init a contrib;\n"
      "  for it in 0 .. 2 { on r in 0 .. N { compute f flops 1 reads a[0] writes a[0]; } }\n}\n";
  auto l = sgtest::build(looped, 4, "", {}, false);
  INFO(l.errors);
  REQUIRE(l.ok());
  for (uint32_t r = 0; r < 4; ++r) {
    auto cs = compute_steps(*l.graph, r);
    REQUIRE(cs.size() == 2);
    CHECK(dep_on(*l.graph, cs[1], cs[0]));
  }
  // Every library schedule with on blocks: the same graph as one rank's own program (which
  // releases nothing), checked in "one rank's program equals that rank's part of the whole
  // graph" above; and a training step's gradients (named by the all-reduces after its block)
  // keep their states: each bucket's all-reduce depends on the backward passes that wrote it.
  auto ts = sgtest::build_lib("train_step", 256, {{"layers", "16"}, {"microbatches", "2"}, {"buckets", "1"}});  // dp = 2
  INFO(ts.errors);
  REQUIRE(ts.ok());
  const StepGraph& g = *ts.graph;
  int checked = 0;
  for (StepId s = 0; s < g.size(); ++s)
    if (g.kind(s) == StepKind::Collective && g.rank(s) == 0 && g.coll(s).kind == CollKind::Allreduce) {
      bool on_compute = false;
      for (StepId d : g.deps(s)) on_compute |= g.kind(d) == StepKind::Compute;
      CHECK(on_compute);
      ++checked;
    }
  CHECK(checked == 1);
}
