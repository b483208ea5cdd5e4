// A shift of the ranks proved from the schedule's text (core/graph/shift_proof.hpp): never where
// the graph, checked step by step, is not invariant; refused, with the line, where the rules do
// not follow a value; and the simulator's classes the same either way.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

#include "core/dsl/library.hpp"
#include "core/dsl/session.hpp"
#include "core/graph/elaborate.hpp"
#include "core/graph/passes.hpp"
#include "core/graph/shift_proof.hpp"
#include "core/graph/symmetry.hpp"
#include "sim/point.hpp"
#include "sim_point.hpp"

using namespace sg;

namespace {

struct Built {
  Session s;
  Target t;
  std::unique_ptr<StepGraph> g;
  ShiftProofInput in;
};

// Null where the schedule does not build at n (its parameters' requirements).
std::unique_ptr<Built> build(const std::string& target, uint32_t n, std::vector<std::pair<std::string, std::string>> sets = {}) {
  auto b = std::make_unique<Built>();
  b->t = b->s.open_schedule(target);
  REQUIRE(b->t.schedule);
  ElabOptions o;
  o.nranks = n;
  o.sets = std::move(sets);
  b->g = elaborate(b->s, b->t, o);
  if (!b->g || !run_passes(*b->g, b->s.diags, {}, nullptr)) return nullptr;
  b->in.program = b->t.program;
  b->in.schedule = b->t.schedule;
  b->in.nranks = n;
  b->in.params = b->g->params;
  for (const BufferInfo& buf : b->g->buffers) b->in.buffers.push_back({buf.name, buf.chunks, static_cast<uint32_t>(buf.dims.size())});
  return b;
}

std::string write(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / "stepgraph_shift_proof";
  std::filesystem::create_directories(dir);
  auto p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

// Every candidate shift the text proves (alone, and beside a group proved so before it) is one
// the graph, checked step by step, confirms. Returns how many were proved.
int differential(const Built& b, const std::string& what) {
  int proved = 0;
  RankPositions rp = rank_positions(*b.g);
  RankSymmetry group{{}, b.g->nranks};
  for (const RankShift& s : candidate_shifts(b.g->nranks)) {
    std::string why_graph;
    bool graph = translation_invariant(*b.g, rp, s, why_graph);
    INFO(what << ", " << s.describe());
    if (prove_shift(b.in, RankSymmetry{{}, b.g->nranks}, s).empty()) {
      ++proved;
      CHECK(graph);
    }
    if (group.disjoint(s) && uint64_t{group.size()} * s.count <= b.g->nranks && prove_shift(b.in, group, s).empty()) {
      CHECK(graph);
      group = group.with(s);
    }
  }
  return proved;
}

// A run where fewer ranks stood for the job (a) against every rank simulated (b): the time, the
// totals, the slowest rank, its exposed communication, the links' loads and the collectives
// costed once per shape (the instances not built counted too).
void check_as_every_rank(const sg::sim::PointResult& a, const sg::sim::PointResult& b) {
  CHECK(a.completed == b.completed);
  CHECK(std::abs(a.time_s - b.time_s) <= 1e-9 * b.time_s);
  CHECK(a.messages == b.messages);
  CHECK(a.bytes == b.bytes);
  CHECK(a.slowest_rank == b.slowest_rank);
  CHECK(std::abs(a.exposed_total_s - b.exposed_total_s) <= 1e-9 * b.time_s);
  CHECK(a.links_json.size() == b.links_json.size());
  for (size_t i = 0; i < std::min(a.links_json.size(), b.links_json.size()); ++i)
    CHECK(a.links_json[i].at("bytes") == b.links_json[i].at("bytes"));
  CHECK(a.memo_json.is_null() == b.memo_json.is_null());
  if (!a.memo_json.is_null() && !b.memo_json.is_null()) {
    CHECK(a.memo_json.at("instances") == b.memo_json.at("instances"));
    CHECK(a.memo_json.at("steps_not_expanded") == b.memo_json.at("steps_not_expanded"));
  }
}

}  // namespace

TEST_CASE("a shift proved from the text is one the graph confirms, on every library schedule", "[symmetry][proof]") {
  int proved = 0, built = 0;
  for (uint32_t n : {8u, 12u, 16u}) {
    for (const LibraryEntry& e : library()) {
      auto b = build(e.name, n);
      if (!b) continue;
      ++built;
      proved += differential(*b, e.name + " at N = " + std::to_string(n));
    }
  }
  // The training step's 4D shapes: tensor, context and data parallel shifts inside stages.
  using Sets = std::vector<std::pair<std::string, std::string>>;
  const Sets small = {{"layers", "8"}, {"microbatches", "4"}, {"buckets", "2"},  {"hidden", "256"}, {"ffn", "512"},
                      {"heads", "8"},  {"kv_heads", "2"},     {"vocab", "1024"}, {"seq", "64"}};
  for (auto [n, tp, pp, cp, sp] : std::vector<std::tuple<uint32_t, int, int, int, int>>{
           {16, 2, 2, 1, 1}, {16, 2, 2, 2, 1}, {32, 2, 2, 2, 0}, {32, 2, 2, 4, 1}, {16, 1, 4, 1, 1}, {16, 4, 1, 2, 0}}) {
    Sets sets = small;
    sets.insert(sets.end(),
                {{"tp", std::to_string(tp)}, {"pp", std::to_string(pp)}, {"cp", std::to_string(cp)}, {"sp", std::to_string(sp)}});
    auto b = build("train_step", n, sets);
    INFO("train_step at N = " << n << " tp " << tp << " pp " << pp << " cp " << cp);
    REQUIRE(b);
    int p = differential(*b, "train_step tp " + std::to_string(tp) + " pp " + std::to_string(pp) + " cp " + std::to_string(cp));
    CHECK(p > 0);
    proved += p;
  }
  CHECK(built > 130);
  INFO("proved " << proved << " of the shifts tried, " << built << " graphs");
  CHECK(proved > 40);  // not vacuous
}

TEST_CASE("the proof says which line it cannot follow, and the graph decides", "[symmetry][proof]") {
  // A ring written as a choreography: its chunks move with the ranks (chunk c of rank x stands
  // for chunk c + 1 of rank x + 1), under a shift by 1 and by 2.
  auto ring = build("ring_allreduce", 8);
  REQUIRE(ring);
  CHECK(prove_shift(ring->in, RankSymmetry{{}, 8}, RankShift{1, 8, 8}) == "");
  CHECK(prove_shift(ring->in, RankSymmetry{{}, 8}, RankShift{2, 4, 8}) == "");
  // A tree's transfers have no loop over the ranks.
  auto tree = build("binomial_bcast", 8);
  REQUIRE(tree);
  std::string why = prove_shift(tree->in, RankSymmetry{{}, 8}, RankShift{1, 8, 8});
  CHECK_FALSE(why.empty());
  // Two iterations on one chunk of one rank: rank r + 1 receives chunk 0 in iteration r and sends
  // it in iteration r + 1, an order the shift does not keep at the wrap (rank 0 sends first).
  std::string chain = write("chain.sched", R"(schedule chain(size = 1MiB) {
  buffer x[2] bytes size;
  for r in 0 .. N { send x[0] from r to (r + 1) % N; }
}
schedule mixed(size = 1MiB) {
  buffer x[N] bytes size;
  for r in 0 .. N { send x[r] from r to (r + 1) % N into x[0]; }
}
)");
  auto c = build(chain + ":chain", 8);
  REQUIRE(c);
  why = prove_shift(c->in, RankSymmetry{{}, 8}, RankShift{1, 8, 8});
  CHECK(why.find("touch one chunk of one rank") != std::string::npos);
  CHECK(why.find("line 3") != std::string::npos);
  CHECK(differential(*c, "chain") == 0);
  auto m = build(chain + ":mixed", 8);
  REQUIRE(m);
  why = prove_shift(m->in, RankSymmetry{{}, 8}, RankShift{1, 8, 8});
  CHECK(why.find("indexed by the rank in one place and not") != std::string::npos);

  // Rank 0 unlike the others: the condition depends on the rank. The fixed schedule (every rank
  // alike) is proved.
  const char* text = R"(schedule leader(size = 1MiB) {
  buffer x[1] bytes size;
  on r in 0 .. N {
    if r == 0 { compute work flops 1000 reads x writes x; }
    send x to (r + 1) % N;
    recv x from (r + N - 1) % N;
  }
}
schedule alike(size = 1MiB) {
  buffer x[1] bytes size;
  on r in 0 .. N {
    compute work flops 1000 reads x writes x;
    isend x to (r + 1) % N as s;
    recv x from (r + N - 1) % N;
    wait s;
  }
}
)";
  std::string file = write("leader.sched", text);
  auto leader = build(file + ":leader", 8);
  REQUIRE(leader);
  why = prove_shift(leader->in, RankSymmetry{{}, 8}, RankShift{1, 8, 8});
  CHECK(why.find("depends on the rank") != std::string::npos);
  CHECK(why.find("line 4") != std::string::npos);
  auto alike = build(file + ":alike", 8);
  REQUIRE(alike);
  CHECK(prove_shift(alike->in, RankSymmetry{{}, 8}, RankShift{1, 8, 8}) == "");
  CHECK(prove_shift(alike->in, RankSymmetry{{}, 8}, RankShift{2, 4, 8}) == "");
  // (r + 1) % N is a neighbour only where the shift moves every rank round the whole ring.
  CHECK(prove_shift(alike->in, RankSymmetry{{}, 8}, RankShift{1, 4, 8}).find("a peer") != std::string::npos);
  CHECK(differential(*alike, "alike") > 0);

  // A rank written as a number is the same for every rank of a class: not its image.
  std::string fixed = write("fixed.sched", R"(schedule to_root(size = 1MiB) {
  buffer x[1] bytes size;
  on r in 1 .. N { send x to 0; }
  on 0 { for k in 1 .. N { recv x from k; } }
}
)");
  auto root = build(fixed + ":to_root", 8);
  REQUIRE(root);
  CHECK_FALSE(prove_shift(root->in, RankSymmetry{{}, 8}, RankShift{1, 8, 8}).empty());
}

// Schedules an adversarial review found proved wrongly (each now refused, and its run equal to
// every rank's).
TEST_CASE("the review's counterexamples are refused", "[symmetry][proof]") {
  std::string file = write("review.sched", R"(schedule interleaved() {
  buffer B[2] bytes 64MiB;
  init B contrib;
  expect nothing;
  for i in 0 .. 2 {
    on r in 0 .. N {
      compute work flops (1 + 9 * i) * 1G writes B[0];
      isend B[0] to (r + 1) % N as a;
      irecv B[1] from (r + N - 1) % N as b;
      wait a, b;
    }
    allreduce B[0] over ranks(i, N / 2, 2);
  }
}
schedule no_wrap() {
  buffer B[8] bytes 64MiB;
  init B contrib;
  expect nothing;
  for r in 0 .. N { send B[r] from r to (r + 1) % N; }
  for r in 0 .. N { send B[(r + 7) % 8] from r to (r + 1) % N; }
}
schedule hidden_error() {
  buffer A[4] bytes 16MiB;
  init A contrib;
  expect nothing;
  on r in 0 .. N {
    let z = 5 / (r - 3);
    compute w flops 1G writes A[0];
  }
}
)");
  // A global collective between two `on` blocks on even ranks, after both on odd ones: the lists
  // of global statements alone are images, their places between the blocks are not.
  auto a = build(file + ":interleaved", 4);
  REQUIRE(a);
  CHECK(prove_shift(a->in, RankSymmetry{{}, 4}, RankShift{1, 4, 4}).find("outside `on` blocks") != std::string::npos);
  // Chunk c + 1 of rank r + 1 for chunk c of rank r, 8 chunks, 4 ranks: rank 3 moved is rank 0,
  // chunk c + 4 is not chunk c.
  auto b = build(file + ":no_wrap", 4);
  REQUIRE(b);
  CHECK(prove_shift(b->in, RankSymmetry{{}, 4}, RankShift{1, 4, 4}).find("does not come round") != std::string::npos);
  // Rank 3 divides by zero; a build of rank 0 alone would not.
  Session s;
  Target t = s.open_schedule(file + ":hidden_error");
  REQUIRE(t.schedule);
  ShiftProofInput in;
  in.program = t.program;
  in.schedule = t.schedule;
  in.nranks = 8;
  in.buffers.push_back({"A", 4, 1});
  CHECK(prove_shift(in, RankSymmetry{{}, 8}, RankShift{1, 8, 8}).find("depends on the rank in a way the proof does not follow (line 27)") !=
        std::string::npos);
  // A second review's: an all-gather over every rank, where member k reads its own block k (the
  // shift maps the group onto itself, each rank to another place); a size mismatch with a rank
  // not built (the pairing of a representatives' build must report it as the full graph does).
  std::string more = write("review2.sched", R"(schedule places(size = 256KiB) {
  buffer B[N] bytes size;
  buffer G[2] bytes size;
  init B contrib;
  init G contrib;
  expect nothing;
  on r in 0 .. N { compute g flops (2 - r % 2) * 50M reads B[0] writes G[0]; }
  allgather B;
}
schedule sizes(size = 1MiB) {
  buffer B[2] bytes size;
  buffer C[2] bytes 2 * size;
  init B contrib;
  expect nothing;
  on r in 0 .. N {
    compute k flops (1 + r % 2) * 1G writes B[0];
    isend B[0] to (r + 2) % N as a;
    irecv C[0] from (r + N - 2) % N as b;
    wait a, b;
  }
}
)");
  auto pl = build(more + ":places", 8);
  REQUIRE(pl);
  CHECK(prove_shift(pl->in, RankSymmetry{{}, 8}, RankShift{2, 4, 8}).find("outside `on` blocks") != std::string::npos);
  for (const std::string& target : {more + ":places", more + ":sizes"}) {
    for (bool memo : {false, true}) {
      sg::sim::PointSpec p;
      p.target = target;
      p.n = 8;
      p.memo = memo;
      p.options.model = sg::sim::Model::Analytic;
      p.quiet = true;
      sg::sim::PointResult x = sg::sim::run_point(p);
      p.options.symmetry = false;
      sg::sim::PointResult y = sg::sim::run_point(p);
      INFO(target << (memo ? " memo" : "") << ": " << x.symmetry << " / " << x.error);
      CHECK(x.status == y.status);
      CHECK(x.time_s == y.time_s);
    }
  }
  for (const char* name : {"interleaved", "no_wrap", "hidden_error"}) {
    sg::sim::PointSpec p;
    p.target = file + ":" + name;
    p.n = 4;
    p.options.model = sg::sim::Model::Analytic;
    p.quiet = true;
    sg::sim::PointResult x = sg::sim::run_point(p);
    p.options.symmetry = false;
    sg::sim::PointResult y = sg::sim::run_point(p);
    INFO(name << ": " << x.symmetry << " / " << x.error);
    CHECK(x.status == y.status);
    CHECK(x.time_s == y.time_s);
    CHECK(x.slowest_rank == y.slowest_rank);
  }
}

TEST_CASE("the simulator uses the proof and gets the full simulation's answer", "[symmetry][proof]") {
  sg::sim::PointSpec p;
  p.target = "train_step";
  p.n = 32;
  p.platform = sgtest::platform("dgx-h100:nodes=4");
  p.options.model = sg::sim::Model::Analytic;
  p.memo = true;
  p.sets = {{"tp", "4"}, {"pp", "2"}, {"cp", "2"}, {"layers", "4"}, {"microbatches", "4"}, {"buckets", "2"}};
  p.quiet = true;
  sg::sim::PointResult a = sg::sim::run_point(p);
  REQUIRE(a.error.empty());
  INFO(a.symmetry);
  REQUIRE(a.symmetry_json.at("used").get<bool>());
  CHECK(a.symmetry_json.at("proved_from_text").get<bool>());
  CHECK(a.symmetry.find("proved from the schedule's text") != std::string::npos);
  CHECK(a.symmetry.find("the representatives' programs built alone") != std::string::npos);
  p.options.symmetry = false;
  sg::sim::PointResult b = sg::sim::run_point(p);
  REQUIRE(b.error.empty());
  REQUIRE(!a.memo_json.is_null());
  check_as_every_rank(a, b);
  // A choreography too: the ring's one class.
  sg::sim::PointSpec r;
  r.target = "ring_allreduce";
  r.n = 16;
  r.options.model = sg::sim::Model::Analytic;
  r.quiet = true;
  sg::sim::PointResult ring = sg::sim::run_point(r);
  INFO(ring.symmetry);
  REQUIRE(ring.error.empty());
  CHECK(ring.symmetry_json.at("classes") == 1);
  CHECK(ring.symmetry_json.at("proved_from_text").get<bool>());
}

TEST_CASE("rank 0's program alone stands for the job, with the full simulation's answer", "[symmetry][proof]") {
  // Every library schedule where the path applies (a choreography whose shift by one rank the
  // text proves, on a platform that cannot tell the ranks apart), against every rank simulated.
  int used = 0;
  for (const char* platform : {"", "fat-tree:leaves=4,per_leaf=4"}) {
    for (uint32_t n : {8u, 16u}) {
      for (const LibraryEntry& e : library()) {
        sg::sim::PointSpec p;
        p.target = e.name;
        p.n = n;
        p.platform = sgtest::platform(platform);
        p.options.model = sg::sim::Model::Analytic;
        p.quiet = true;
        sg::sim::PointResult a = sg::sim::run_point(p);
        if (!a.error.empty() || a.symmetry.find("rank 0's program built alone") == std::string::npos) continue;
        ++used;
        p.options.symmetry = false;
        sg::sim::PointResult b = sg::sim::run_point(p);
        INFO(e.name << " at N = " << n << " on " << (*platform ? platform : "the default"));
        REQUIRE(b.error.empty());
        check_as_every_rank(a, b);
        CHECK(std::abs(a.cp_comm_s - b.cp_comm_s) <= 1e-9 * b.time_s);
        CHECK(a.critical_json.size() == b.critical_json.size());
      }
    }
  }
  CHECK(used >= 8);  // the rings (all-reduce, all-gather, reduce-scatter) and the dissemination barrier, twice each
  // Where the platform tells the ranks apart (two GPUs of a node share its NIC), the full graph.
  sg::sim::PointSpec p;
  p.target = "ring_allreduce";
  p.n = 16;
  p.platform = sgtest::platform("nodes:count=2,gpus=8,nics=1,nvlink=400GBps,nic=50GBps");
  p.options.model = sg::sim::Model::Analytic;
  p.quiet = true;
  sg::sim::PointResult nic = sg::sim::run_point(p);
  REQUIRE(nic.error.empty());
  CHECK(nic.symmetry.find("built alone") == std::string::npos);
}

TEST_CASE("the representatives' programs stand for the job, collectives costed once per shape", "[symmetry][proof]") {
  // Training steps of several shapes (the context ring's neighbours are ranks not built: their
  // messages are taken by their representatives' receives), on GPU nodes and a fat tree, against
  // every rank simulated.
  using Sets = std::vector<std::pair<std::string, std::string>>;
  const Sets small = {{"layers", "8"}, {"microbatches", "4"}, {"buckets", "2"},  {"hidden", "256"}, {"ffn", "512"},
                      {"heads", "8"},  {"kv_heads", "2"},     {"vocab", "1024"}, {"seq", "96"}};
  int used = 0;
  for (auto [n, tp, pp, cp, sp, platform] :
       std::vector<std::tuple<uint32_t, int, int, int, int, const char*>>{{32, 2, 2, 2, 1, "dgx-h100:nodes=4"},
                                                                          {64, 4, 4, 1, 1, "dgx-h100:nodes=8"},
                                                                          {48, 2, 2, 3, 0, "dgx-h100:nodes=6"},
                                                                          {32, 2, 2, 2, 1, "fat-tree:leaves=4,per_leaf=8"},
                                                                          {64, 8, 2, 1, 0, "dgx-h100:nodes=8"},
                                                                          {32, 4, 2, 2, 1, "dgx-h100:nodes=4"}}) {
    sg::sim::PointSpec p;
    p.target = "train_step";
    p.n = n;
    p.platform = sgtest::platform(platform);
    p.options.model = sg::sim::Model::Analytic;
    p.memo = true;
    p.sets = small;
    p.sets.insert(p.sets.end(),
                  {{"tp", std::to_string(tp)}, {"pp", std::to_string(pp)}, {"cp", std::to_string(cp)}, {"sp", std::to_string(sp)}});
    p.quiet = true;
    sg::sim::PointResult a = sg::sim::run_point(p);
    INFO("N = " << n << " tp " << tp << " pp " << pp << " cp " << cp << " on " << platform << ": " << a.symmetry << a.error);
    REQUIRE(a.error.empty());
    used += a.symmetry.find("the representatives' programs built alone") != std::string::npos;
    p.options.symmetry = false;
    sg::sim::PointResult b = sg::sim::run_point(p);
    REQUIRE(b.error.empty());
    REQUIRE(!a.memo_json.is_null());
    check_as_every_rank(a, b);
    CHECK(std::abs(a.compute_s - b.compute_s) <= 1e-9 * b.time_s);
  }
  // Where the data-parallel members share a node or a leaf (tp·cp < 8), the text's shift moves a
  // member whose all-reduce sends over NVLink onto one whose sends leave by the NIC: their ports'
  // loads differ (the analytic engine shares a costed collective's ports), so the platform check
  // refuses it and the graph's check finds the shifts that hold. One member a node: built alone.
  CHECK(used >= 2);
}

TEST_CASE("where the default engine cannot hold a job, the scalable one runs it and says so", "[symmetry][memo]") {
  sg::sim::PointSpec p;
  p.target = "train_step";
  p.n = 64;
  p.platform = sgtest::platform("dgx-h100:nodes=8");
  p.sets = {{"tp", "4"}, {"pp", "4"}, {"cp", "1"}, {"layers", "8"}, {"microbatches", "4"}, {"buckets", "2"}};
  p.max_memory = 64ull << 20;  // the expansion's 1.8 M steps and the simulator's state do not fit
  p.engine_defaulted = true;   // (neither --model nor --collectives given)
  p.quiet = true;
  sg::sim::PointResult a = sg::sim::run_point(p);
  INFO(a.error << a.engine_note);
  REQUIRE(a.error.empty());
  CHECK(a.model == "analytic");
  CHECK(a.engine_note.find("would build 1,782,912 steps") != std::string::npos);
  CHECK(!a.memo_json.is_null());
  // The same as asking for it.
  p.engine_defaulted = false;
  p.options.model = sg::sim::Model::Analytic;
  p.memo = true;
  sg::sim::PointResult b = sg::sim::run_point(p);
  REQUIRE(b.error.empty());
  CHECK(b.engine_note.empty());
  CHECK(a.time_s == b.time_s);
  // Chosen, the default refuses with the size, as before.
  p.options.model = sg::sim::Model::SimGrid;
  p.memo = false;
  sg::sim::PointResult c = sg::sim::run_point(p);
  CHECK(c.status == 2);
  CHECK(c.engine_note.empty());
}
