// The GOAL writer (compile --format goal): the text LogGOPSim's txt2bin reads. A small reader
// here follows txt2bin's grammar (no indentation, `//` comments at the start of a line, labels
// defined before a dependency names them, ranks in order) and checks that every message pairs
// with exactly one receive of the same size, source, destination and tag.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "core/dsl/library.hpp"
#include "core/io/writers.hpp"
#include "test_util.hpp"

using namespace sg;

namespace {

struct GoalOp {
  std::string label, kind;  // send recv calc
  uint64_t size = 0;        // bytes, or the calc time
  int64_t peer = -2, tag = -2;
  int cpu = 0;
};
struct GoalRank {
  std::vector<GoalOp> ops;
  std::vector<std::tuple<std::string, std::string, bool>> deps;  // (who, on, start only)
};
struct GoalFile {
  uint32_t nranks = 0;
  std::vector<GoalRank> ranks;
  std::string error;  // empty when it follows the grammar
};

GoalFile read_goal(const std::string& text) {
  GoalFile f;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  bool in_rank = false;
  std::set<std::string> labels;
  auto bad = [&](const std::string& why) {
    if (f.error.empty()) f.error = "line " + std::to_string(lineno) + ": " + why + ": " + line;
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line.rfind("//", 0) == 0) continue;
    if (line[0] == ' ' || line[0] == '\t') {
      bad("indented (txt2bin skips the character after leading whitespace)");
      continue;
    }
    std::istringstream ls(line);
    std::vector<std::string> w;
    for (std::string t; ls >> t;) w.push_back(t);
    if (w[0] == "num_ranks") {
      f.nranks = static_cast<uint32_t>(std::stoul(w.at(1)));
      continue;
    }
    if (w[0] == "rank") {
      if (in_rank || w.size() != 3 || w[2] != "{") bad("rank block");
      if (std::stoul(w[1]) != f.ranks.size()) bad("ranks out of order");
      f.ranks.emplace_back();
      labels.clear();
      in_rank = true;
      continue;
    }
    if (w[0] == "}") {
      if (!in_rank || w.size() != 1) bad("stray }");
      in_rank = false;
      continue;
    }
    if (!in_rank) {
      bad("operation outside a rank block");
      continue;
    }
    GoalRank& r = f.ranks.back();
    if (w.size() == 3 && (w[1] == "requires" || w[1] == "irequires")) {
      if (!labels.count(w[0]) || !labels.count(w[2])) bad("dependency on an undefined label");
      r.deps.emplace_back(w[0], w[2], w[1] == "irequires");
      continue;
    }
    if (w[0].back() != ':') {
      bad("expected a label");
      continue;
    }
    GoalOp op;
    op.label = w[0].substr(0, w[0].size() - 1);
    op.kind = w.at(1);
    labels.insert(op.label);
    size_t k = 3;
    if (op.kind == "calc") {
      op.size = std::stoull(w.at(2));
    } else if (op.kind == "send" || op.kind == "recv") {
      if (w.at(2).back() != 'b') bad("size without b");
      op.size = std::stoull(w[2].substr(0, w[2].size() - 1));
      if (w.at(3) != (op.kind == "send" ? "to" : "from")) bad("to/from");
      op.peer = std::stoll(w.at(4));
      if (w.at(5) != "tag") bad("tag");
      op.tag = std::stoll(w.at(6));
      k = 7;
    } else {
      bad("unknown operation");
    }
    if (k < w.size()) {
      if (w[k] != "cpu" || k + 2 != w.size()) bad("trailing words");
      else op.cpu = std::stoi(w[k + 1]);
    }
    r.ops.push_back(op);
  }
  if (in_rank) bad("unclosed rank block");
  if (f.ranks.size() != f.nranks) f.error += " (rank blocks: " + std::to_string(f.ranks.size()) + ")";
  return f;
}

std::string goal_text(const StepGraph& g, const GoalOptions& o = {}) {
  GoalPlan plan;
  Diagnostics d;
  REQUIRE(plan_goal(g, plan, d));
  std::ostringstream os;
  write_goal(os, g, plan, o);
  return os.str();
}

// Every send pairs with exactly one receive: same (source, destination, tag), same size; no
// wildcard. Returns the number of messages.
size_t check_exact_pairs(const GoalFile& f) {
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<uint64_t>> sends, recvs;
  for (uint32_t r = 0; r < f.ranks.size(); ++r)
    for (const auto& op : f.ranks[r].ops) {
      if (op.kind == "send") sends[{r, op.peer, op.tag}].push_back(op.size);
      if (op.kind == "recv") {
        CHECK(op.peer >= 0);
        CHECK(op.tag >= 0);
        recvs[{op.peer, r, op.tag}].push_back(op.size);
      }
    }
  CHECK(sends.size() == recvs.size());
  for (const auto& [key, sizes] : sends) {
    INFO("message " << std::get<0>(key) << " -> " << std::get<1>(key) << " tag " << std::get<2>(key));
    CHECK(sizes.size() == 1);
    auto it = recvs.find(key);
    REQUIRE(it != recvs.end());
    CHECK(it->second.size() == 1);
    CHECK(it->second == sizes);
  }
  return sends.size();
}

}  // namespace

TEST_CASE("goal: ring all-reduce at N = 4", "[goal]") {
  auto b = sgtest::build_lib("ring_allreduce", 4, {{"size", "1MiB"}});
  INFO(b.errors);
  REQUIRE(b.ok());
  std::string text = goal_text(*b.graph);
  GoalFile f = read_goal(text);
  INFO(text);
  REQUIRE(f.error.empty());
  CHECK(f.nranks == 4);
  CHECK(text.find("// schedule ring_allreduce (schedules/ring_allreduce.sched), N = 4, size = 1048576\n") != std::string::npos);
  CHECK(text.rfind("// GOAL schedule for LogGOPSim", 0) == 0);
  // 2(N-1) = 6 sends and 6 receives per rank, each rank's k-th message to its successor has tag k.
  CHECK(check_exact_pairs(f) == 24);
  for (uint32_t r = 0; r < 4; ++r) {
    std::vector<int64_t> tags;
    for (const auto& op : f.ranks[r].ops)
      if (op.kind == "send") {
        CHECK(op.peer == (r + 1) % 4);
        CHECK(op.size == 262144);
        tags.push_back(op.tag);
      }
    CHECK(tags == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  }
  // The first reduce-scatter step: rank 0 sends data[0]; rank 1 receives and reduces it (the
  // reduction costs ceil(262144 × 0.1) ns), then forwards data[0] only after that.
  CHECK(text.find("rank 0 {\ns0: send 262144b to 1 tag 0\n") != std::string::npos);
  CHECK(text.find("s1: recv 262144b from 0 tag 0\na1: calc 26215\na1 requires s1\n") != std::string::npos);
  // Dependencies are all on completion (no nonblocking steps), and a receive is posted at once:
  // its hazards go to its apply step.
  for (const auto& r : f.ranks)
    for (const auto& [who, on, start] : r.deps) {
      CHECK_FALSE(start);
      bool on_recv = std::any_of(r.ops.begin(), r.ops.end(), [&](const GoalOp& op) { return op.label == who && op.kind == "recv"; });
      CHECK_FALSE(on_recv);
    }
  // Deterministic.
  CHECK(goal_text(*b.graph) == text);
}

TEST_CASE("goal: every library schedule exports with exact message pairs", "[goal][library]") {
  for (const auto& e : library()) {
    for (uint32_t n : {4u, 7u, 8u}) {
      auto b = sgtest::build_lib(e.name, n);
      if (!b.ok()) continue;  // an N the schedule does not support
      INFO(e.name << " N = " << n);
      GoalPlan plan;
      Diagnostics d;
      bool collectives = false;
      for (StepId s = 0; s < b.graph->size(); ++s) collectives |= b.graph->kind(s) == StepKind::Collective;
      CHECK(plan_goal(*b.graph, plan, d) == !collectives);
      if (collectives) continue;
      std::ostringstream os;
      write_goal(os, *b.graph, plan, {});
      GoalFile f = read_goal(os.str());
      CHECK(f.error == "");
      CHECK(f.nranks == n);
      check_exact_pairs(f);
    }
  }
}

TEST_CASE("goal: MPI programs: nonblocking operations, waits and program order", "[goal][mpi]") {
  auto b = sgtest::build(R"(schedule p() {
  buffer a[4] bytes 8;
  init a contrib;
  expect nothing;
  on 0 {
    isend a[0] to 1 tag 7 as h;  # #0
    isend a[1] to 1 tag 7 as g;  # #1 starts after #0 started
    send a[2] to 1;              # #2 after #1 started
    wait h, g;                   # #3 after #2 completed; completes #0 and #1
    copy a[3] into a[0];         # #4 after the wait (and #0's start)
  }
  on 1 { recv a[0] from 0 tag 7; recv a[1] from 0 tag 7; recv a[2] from 0 reduce; }
}
)",
                         2);
  INFO(b.errors);
  REQUIRE(b.ok());
  std::string text = goal_text(*b.graph);
  INFO(text);
  GoalFile f = read_goal(text);
  REQUIRE(f.error.empty());
  check_exact_pairs(f);
  CHECK(text.find("rank 0 {\n"
                  "s0: send 8b to 1 tag 0\n"
                  "s1: send 8b to 1 tag 1\n"
                  "s1 irequires s0\n"
                  "s2: send 8b to 1 tag 2\n"
                  "s2 irequires s1\n"
                  "s3: calc 0\n"
                  "s3 requires s2\n"
                  "s3 requires s0\n"
                  "s3 requires s1\n"
                  "s4: calc 1\n"
                  "s4 irequires s0\n"  // the isend's start (the graph's hazard edge), and its wait
                  "s4 requires s3\n"
                  "}\n") != std::string::npos);
  // MPI receives are posted in program order; a reducing one is followed by its reduction.
  CHECK(text.find("s5: recv 8b from 0 tag 0\n"
                  "s6: recv 8b from 0 tag 1\n"
                  "s6 requires s5\n"
                  "s7: recv 8b from 0 tag 2\n"
                  "s7 requires s6\n"
                  "a7: calc 1\n"
                  "a7 requires s7\n") != std::string::npos);
}

TEST_CASE("goal: wildcard receives keep MPI's matching", "[goal][mpi]") {
  auto b = sgtest::build(R"(schedule w() {
  buffer s[1] bytes 8;
  buffer t[4] bytes 8;
  init s contrib;
  expect nothing;
  send s[0] from 2 to 3;       # choreographic, into another rank: tag 0
  on 0 { recv t[1] from 1 tag any; recv t[2] from any tag 5; recv t[3] from any; }
  on 1 { send s[0] to 0 tag 3; }
  on 2 { send s[0] to 0 tag 5; }
  on 3 { send s[0] to 0; }
}
)",
                         4);
  INFO(b.errors);
  REQUIRE(b.ok());
  std::string text = goal_text(*b.graph);
  INFO(text);
  REQUIRE(read_goal(text).error.empty());
  // (communicator, tag) pairs numbered in step order: (world, 3) 0, (world, 5) 1, (world, 0) 2.
  CHECK(text.find("recv 8b from 1 tag -1\n") != std::string::npos);
  CHECK(text.find("recv 8b from -1 tag 2147483649\n") != std::string::npos);
  CHECK(text.find("recv 8b from -1 tag 2147483650\n") != std::string::npos);
  CHECK(text.find("send 8b to 0 tag 2147483648\n") != std::string::npos);
  CHECK(text.find("send 8b to 0 tag 2147483649\n") != std::string::npos);
  CHECK(text.find("send 8b to 0 tag 2147483650\n") != std::string::npos);
  CHECK(text.find("send 8b to 3 tag 0\n") != std::string::npos);
}

TEST_CASE("goal: what cannot be exported is an error at its statement", "[goal][errors]") {
  auto refused = [](const std::string& src, uint32_t n) {
    auto b = sgtest::build(src, n);
    INFO(b.errors);
    REQUIRE(b.ok());
    GoalPlan plan;
    Diagnostics d;
    CHECK_FALSE(plan_goal(*b.graph, plan, d));
    return d.render(b.session->sources);
  };
  std::string e = refused("schedule c() {\n  buffer s[4] bytes 8;\n  init s contrib;\n  allreduce s[0];\n}\n", 2);
  CHECK(e.find("test.sched:4:3: error: cannot export to GOAL: a collective step; expand collectives") != std::string::npos);
  e = refused(
      "schedule u() {\n  buffer s[4] bytes 8;\n  init s contrib;\n  on 0 { recv s[1] from 1; recv s[2] from 1; }\n  on 1 { send s[1] to 0; "
      "}\n}\n",
      2);
  CHECK(e.find("a receive that no send matches") != std::string::npos);
  CHECK(e.find("rank 0 step #1: recv s[2] from r1") != std::string::npos);
  e = refused("schedule u() {\n  buffer s[4] bytes 8;\n  init s contrib;\n  on 1 { send s[1] to 0; }\n}\n", 2);
  CHECK(e.find("a send that no receive matches") != std::string::npos);
  // tag any would also take the choreographic message into rank 0.
  e = refused(
      "schedule m() {\n  buffer s[1] bytes 8;\n  buffer t[2] bytes 8;\n  init s contrib;\n  send s[0] from 1 to 0 into t[0];\n"
      "  on 0 { recv t[1] from 1 tag any; }\n  on 1 { send s[0] to 0 tag 3; }\n}\n",
      2);
  CHECK(e.find("test.sched:6:10: error: cannot export to GOAL: a receive with tag any") != std::string::npos);
  // Wildcard receives with more messages than receives.
  e = refused(
      "schedule x() {\n  buffer s[1] bytes 8;\n  init s contrib;\n  on 0 { recv s[0] from any; }\n"
      "  on r in 1 .. N { send s[0] to 0; }\n}\n",
      3);
  CHECK(e.find("must equal its receives (rank 0 on ranks(0, 3): 2 sends, 1 receives)") != std::string::npos);
  // One rank's program.
  auto b = sgtest::build("schedule r() {\n  buffer s[1] bytes 8;\n  send s[0] from 0 to 1;\n}\n", 2, "", {}, true, 1);
  REQUIRE(b.ok());
  GoalPlan plan;
  Diagnostics d;
  CHECK_FALSE(plan_goal(*b.graph, plan, d));
}

TEST_CASE("goal: costs of compute, copy and reduce steps", "[goal][cost]") {
  auto b = sgtest::build(R"(schedule k() {
  buffer x[2] bytes 30;
  buffer z[1] bytes 0;
  init x contrib;
  expect nothing;
  compute gemm flops 3000 reads x[0] writes x[1];
  copy x[1] into x[0];
  reduce x[0] into x[1];
  send z[0] from 0 to 1;
}
)",
                         2);
  INFO(b.errors);
  REQUIRE(b.ok());
  GoalOptions o;
  o.ns_per_flop = 0.01;  // 3000 flops: 30 ns (not 30.000000000000004 rounded up)
  o.ns_per_byte = 0.1;   // 30 bytes: 3 ns
  std::string text = goal_text(*b.graph, o);
  INFO(text);
  CHECK(text.find("s0: calc 30 cpu 1\n") != std::string::npos);
  CHECK(text.find("s2: calc 3\ns2 requires s0\n") != std::string::npos);
  CHECK(text.find("s4: calc 3\ns4 requires s2\n") != std::string::npos);
  // A 0-byte message is written as 1 byte: LogGOPSim charges (size - 1)·G on unsigned numbers.
  CHECK(text.find("send 1b to 1 tag 0\n") != std::string::npos);
  CHECK(text.find("recv 1b from 0 tag 0\n") != std::string::npos);
  o.ns_per_flop = 0;
  o.ns_per_byte = 0;
  text = goal_text(*b.graph, o);
  CHECK(text.find("s0: calc 0 cpu 1\n") != std::string::npos);
  CHECK(text.find("s2: calc 0\n") != std::string::npos);
}
