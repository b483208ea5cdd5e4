// Expansion of collective steps into library algorithms (core/graph/expand_collectives.hpp) and
// the choice of algorithm (core/graph/algorithm_choice.hpp): for every kind and algorithm, over
// the world, a sub-group and a strided group, in global view and in `on` blocks, the expansion
// leaves no collective step, passes validate, sends what the algorithm sends, keeps the
// collective's place in every member's order, and runs to completion in the interpreter with the
// algorithms' own postconditions holding on their buffers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "core/graph/expand_collectives.hpp"
#include "core/graph/nccl_tuning.hpp"
#include "core/pipeline.hpp"
#include "test_util.hpp"

using namespace sg;

namespace {

struct Grp {
  uint32_t start, count, stride;
  std::string text() const { return "ranks(" + std::to_string(start) + ", " + std::to_string(count) + ", " + std::to_string(stride) + ")"; }
  uint32_t member(uint32_t k) const { return start + k * stride; }
};

// One collective of `kind` over `gr`, between a compute that writes its buffer and one that
// reads it; in `on` blocks (local = true) or in global view.
std::string program(CollKind kind, const Grp& gr, bool local) {
  uint32_t chunks = 2 * gr.count;
  std::string root = std::to_string(gr.member(gr.count > 1 ? 1 : 0));
  std::string over = " over " + gr.text() + ";";
  std::string coll;
  switch (kind) {
    case CollKind::Allreduce: coll = "allreduce data" + over; break;
    case CollKind::Bcast: coll = "bcast data root " + root + over; break;
    case CollKind::Reduce: coll = "reduce data root " + root + over; break;
    case CollKind::Allgather: coll = "allgather data" + over; break;
    case CollKind::ReduceScatter: coll = "reduce_scatter data" + over; break;
    case CollKind::Alltoall: coll = "alltoall data into dst" + over; break;
    case CollKind::Barrier: coll = "barrier" + over; break;
  }
  std::string t =
      "schedule t() {\n"
      "  buffer data[" +
      std::to_string(chunks) +
      "] bytes 1KiB;\n"
      "  buffer dst[" +
      std::to_string(chunks) +
      "] bytes 1KiB;\n"
      "  buffer out[1] bytes 8;\n"
      "  init data contrib;\n"
      "  init dst contrib;\n"
      "  expect nothing;\n";
  if (!local) {
    t += "  compute pre flops 10 writes data;\n";
    t += "  " + coll + "\n";
    t += "  compute post flops 10 reads data, dst writes out;\n";
  } else {
    t += "  on r in 0 .. N {\n"
         "    compute pre flops 10 writes data;\n"
         "    if r >= " +
         std::to_string(gr.start) + " && (r - " + std::to_string(gr.start) + ") % " + std::to_string(gr.stride) + " == 0 && (r - " +
         std::to_string(gr.start) + ") / " + std::to_string(gr.stride) + " < " + std::to_string(gr.count) +
         " {\n"
         "      " +
         coll +
         "\n"
         "      compute post flops 10 reads data, dst writes out;\n"
         "    }\n"
         "  }\n";
  }
  return t + "}\n";
}

struct Expanded {
  sgtest::Built b;
  std::unique_ptr<StepGraph> g;
  ExpandReport rep;
  std::string errors;
};

Expanded expand(const std::string& text, uint32_t n, const AlgoChoice& choice, uint64_t max_memory = 0) {
  Expanded e;
  e.b = sgtest::build(text, n);
  if (!e.b.ok()) {
    e.errors = e.b.errors;
    return e;
  }
  e.g = expand_collectives(*e.b.graph, *e.b.session, choice, library_instantiation(*e.b.session), e.b.session->diags, &e.rep, max_memory);
  e.errors = e.b.session->diags.render(e.b.session->sources);
  return e;
}

// Send steps per rank of a library schedule elaborated on its own, with `size` and `root` set as
// the expansion sets them.
std::vector<uint64_t> library_sends(const std::string& sched, uint32_t n, uint64_t bytes, bool rooted, uint32_t root) {
  Session s;
  Target t = s.open_schedule(sched);
  REQUIRE(t.schedule);
  ElabOptions o;
  o.nranks = n;
  for (const Param& p : t.schedule->params) {
    if (p.name == "size") o.sets.emplace_back("size", std::to_string(bytes));
    if (p.name == "root" && rooted) o.sets.emplace_back("root", std::to_string(root));
  }
  auto g = elaborate(s, t, o);
  REQUIRE(g);
  std::vector<uint64_t> per(n, 0);
  for (StepId x = 0; x < g->size(); ++x)
    if (g->kind(x) == StepKind::Send) ++per[g->rank(x)];
  return per;
}

// Every step that `s` depends on, directly or not.
std::set<StepId> ancestors(const StepGraph& g, StepId s) {
  std::set<StepId> seen;
  std::vector<StepId> todo = {s};
  while (!todo.empty()) {
    StepId x = todo.back();
    todo.pop_back();
    for (StepId d : g.deps(x))
      if (seen.insert(d).second) todo.push_back(d);
  }
  return seen;
}

StepId compute_on(const StepGraph& g, uint32_t rank, const std::string& name) {
  for (StepId x = 0; x < g.size(); ++x)
    if (g.kind(x) == StepKind::Compute && g.rank(x) == rank && g.names[g.compute(x).name] == name) return x;
  return kNoStep;
}

StepId collective_on(const StepGraph& g, uint32_t rank) {
  for (StepId x = 0; x < g.size(); ++x)
    if (g.kind(x) == StepKind::Collective && g.rank(x) == rank) return x;
  return kNoStep;
}

uint64_t count_kind(const StepGraph& g, StepKind k) {
  uint64_t c = 0;
  for (StepId x = 0; x < g.size(); ++x) c += g.kind(x) == k;
  return c;
}

}  // namespace

TEST_CASE("every algorithm expands every collective kind over world, sub-group and strided group", "[expand]") {
  for (size_t ki = 0; ki < kCollKindCount; ++ki) {
    CollKind kind = static_cast<CollKind>(ki);
    for (const AlgoName& algo : algorithms_for(kind)) {
      AlgoChoice choice;
      Diagnostics diags;
      REQUIRE(parse_algo_choice(std::string(coll_name(kind)) + "=" + algo.name, choice, diags));
      for (uint32_t n : {2u, 3u, 4u, 5u, 8u}) {
        std::vector<Grp> groups = {{0, n, 1}};
        if (n >= 4) groups.push_back({1, 3, 1});
        if (n >= 4) groups.push_back({0, n / 2, 2});
        for (const Grp& gr : groups) {
          for (bool local : {false, true}) {
            std::string text = program(kind, gr, local);
            Expanded e = expand(text, n, choice);
            INFO(coll_name(kind) << " " << algo.name << " N=" << n << " over " << gr.text() << (local ? " (on blocks)" : "") << "\n"
                                 << text << e.errors);
            REQUIRE(e.g);
            const StepGraph& old = *e.b.graph;
            const StepGraph& g = *e.g;
            CHECK(count_kind(g, StepKind::Collective) == 0);
            Diagnostics vd;
            validate(*e.g, vd);
            CHECK_FALSE(vd.has_errors());

            // The algorithm used: the one asked for, unless it refuses the group size.
            REQUIRE(e.rep.instances.size() == 1);
            const ExpandedInstance& ei = e.rep.instances[0];
            CHECK(ei.expanded);
            bool refuses = std::string(algo.schedule) == "recursive_doubling_allgather" && (gr.count & (gr.count - 1));
            CHECK(ei.schedule == (refuses ? std::string("bruck_allgather") : std::string(algo.schedule)));

            // Each member sends what the algorithm's own rank sends.
            uint64_t bytes = kind == CollKind::Barrier ? 0 : uint64_t{2} * gr.count * 1024;
            auto want = library_sends(ei.schedule, gr.count, bytes, kind == CollKind::Bcast || kind == CollKind::Reduce, 1);
            for (uint32_t k = 0; k < gr.count; ++k) {
              uint64_t sends = 0;
              for (StepId x = 0; x < g.size(); ++x) sends += g.kind(x) == StepKind::Send && g.rank(x) == gr.member(k);
              CHECK(sends == want[k]);
            }

            // Order: where the collective came after `pre` (before `post`), every step of its
            // expansion on that member does too; and they all name the collective's line.
            for (uint32_t k = 0; k < gr.count; ++k) {
              uint32_t m = gr.member(k);
              StepId oc = collective_on(old, m);
              REQUIRE(oc != kNoStep);
              uint32_t line = old.loc(oc).line;
              StepId opre = compute_on(old, m, "pre"), opost = compute_on(old, m, "post");
              bool after_pre = ancestors(old, oc).count(opre) > 0;
              bool before_post = ancestors(old, opost).count(oc) > 0;
              if (local) CHECK((after_pre && before_post));
              StepId pre = compute_on(g, m, "pre"), post = compute_on(g, m, "post");
              std::set<StepId> post_anc = ancestors(g, post);
              uint64_t mine = 0;
              for (StepId x = 0; x < g.size(); ++x) {
                if (g.rank(x) != m || g.stmt(x) != old.stmt(oc)) continue;
                ++mine;
                CHECK(g.loc(x).line == line);
                if (after_pre) CHECK(ancestors(g, x).count(pre) == 1);
                if (before_post) CHECK(post_anc.count(x) == 1);
              }
              CHECK(mine >= 2 + want[k]);  // entry, exit, and at least the sends
            }

            // The interpreter runs it to the end; the algorithms' postconditions, carried on
            // their own buffers, hold.
            // (The program's own buffers are initialised: after expansion nothing writes what
            // the collective wrote, so a program that reads only collective results would read
            // undefined data.)
            InterpResult r = interpret(g);
            CHECK(r.completed);
            for (const Issue& is : r.issues) CHECK(is.text == "");
            CHECK(r.issues.empty());
            if (r.completed) {
              PostconditionReport post = check_postconditions(g, r.initial, r.final);
              CHECK(post.chunks_wrong == 0);
              if (kind != CollKind::Barrier) CHECK(post.chunks_checked > 0);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("expansion keeps the program's own steps and their order", "[expand]") {
  const char* text = R"(
schedule t() {
  buffer data[8] bytes 1KiB;
  buffer x[1] bytes 8;
  init data contrib;
  init x contrib;
  expect allreduce(data);
  on r in 0 .. N {
    if r == 0 { recv x from any; }
    if r == 1 { send x to 0; }
    alltoall data;
    allreduce data op max;
  }
})";
  AlgoChoice c;
  Diagnostics diags;
  REQUIRE(parse_algo_choice("alltoall=pairwise,allreduce=ring", c, diags));
  Expanded e = expand(text, 8, c);
  INFO(e.errors);
  REQUIRE(e.g);
  const StepGraph& g = *e.g;
  CHECK(count_kind(g, StepKind::Collective) == 0);
  CHECK(e.rep.expanded == 2);
  // The program's wildcard receive can take only the program's send: the expansion's MPI
  // sends (pairwise_alltoall is an MPI program) are on a communicator of their own.
  StepId wild = kNoStep;
  for (StepId x = 0; x < g.size(); ++x)
    if (g.kind(x) == StepKind::Recv && (g.flags(x) & kFlagAnySource)) wild = x;
  REQUIRE(wild != kNoStep);
  REQUIRE(g.p2p_info(wild).cand_cnt == 1);
  StepId cand = g.candidates[g.p2p_info(wild).cand_off];
  CHECK(g.rank(cand) == 1);
  CHECK(g.loc(cand).line == 10);
  // The synthetic buffers are named after the instance.
  bool named = false;
  for (const auto& b : g.buffers) named |= b.name.rfind("alltoall#", 0) == 0;
  CHECK(named);
  // Values are not carried through: the program's postcondition no longer holds, but the run
  // completes and only the program's buffer is wrong.
  InterpResult r = interpret(g);
  REQUIRE(r.completed);
  PostconditionReport post = check_postconditions(g, r.initial, r.final);
  CHECK(post.chunks_wrong > 0);
  for (const Issue& is : post.issues) CHECK(g.buffers[is.buf].name == "data");
}

TEST_CASE("incomplete instances stay collectives; a group of one becomes one no-op step", "[expand]") {
  const char* text = R"(
schedule t() {
  buffer data[4] bytes 64;
  init data contrib;
  expect nothing;
  on r in 0 .. N {
    allreduce data;
    if r != 2 { allreduce data; }
  }
  allreduce data[1] over ranks(3, 1);
})";
  Expanded e = expand(text, 4, AlgoChoice{});
  INFO(e.errors);
  REQUIRE(e.g);
  CHECK(e.rep.expanded == 2);
  CHECK(e.rep.kept == 1);
  const StepGraph& g = *e.g;
  CHECK(count_kind(g, StepKind::Collective) == 3);  // the second allreduce: ranks 0, 1, 3
  REQUIRE(g.instances.size() == 1);
  CHECK_FALSE(g.instances[0].complete);
  // The one-member instance: a single step on rank 3 in its place.
  const ExpandedInstance* one = nullptr;
  for (const auto& x : e.rep.instances)
    if (x.members == 1) one = &x;
  REQUIRE(one);
  CHECK(one->expanded);
  CHECK(one->schedule.empty());
  CHECK(one->steps == 1);
  // The interpreter gets stuck at the incomplete instance, as the program does.
  InterpResult r = interpret(g);
  CHECK_FALSE(r.completed);
}

TEST_CASE("a refused group size falls back, with a note at the collective", "[expand]") {
  const char* text = "schedule t() {\n  buffer data[6] bytes 64;\n  init data owned;\n  expect nothing;\n  allgather data;\n}\n";
  AlgoChoice c;
  Diagnostics diags;
  REQUIRE(parse_algo_choice("allgather=recursive_doubling", c, diags));
  Expanded e = expand(text, 6, c);
  REQUIRE(e.g);
  CHECK(e.rep.instances[0].schedule == "bruck_allgather");
  CHECK(e.errors.find("test.sched:5:3: note: recursive_doubling_allgather does not support N = 6") != std::string::npos);
  CHECK(e.errors.find("uses bruck_allgather instead") != std::string::npos);
  CHECK_FALSE(e.b.session->diags.has_errors());
}

TEST_CASE("an expansion too big for the memory limit is refused", "[expand]") {
  const char* text = "schedule t() {\n  buffer data[64] bytes 1MiB;\n  init data contrib;\n  expect nothing;\n  allreduce data;\n}\n";
  AlgoChoice c;
  Diagnostics diags;
  REQUIRE(parse_algo_choice("allreduce=ring", c, diags));
  Expanded e = expand(text, 64, c, 64 * 1024);
  CHECK_FALSE(e.g);
  CHECK(e.errors.find("would need about") != std::string::npos);
}

TEST_CASE("--algo names collectives and algorithms, and says what is allowed", "[expand][algo]") {
  AlgoChoice c;
  Diagnostics diags;
  CHECK(parse_algo_choice("allreduce=ring,bcast=binomial,reduce_scatter=recursive_halving,barrier=dissemination", c, diags));
  CHECK(c[CollKind::Allreduce] == "ring_allreduce");
  CHECK(c[CollKind::Bcast] == "binomial_bcast");
  CHECK(c[CollKind::ReduceScatter] == "recursive_halving_reduce_scatter");
  CHECK(c[CollKind::Barrier] == "dissemination_barrier");
  CHECK(c[CollKind::Alltoall].empty());
  CHECK(parse_algo_choice("alltoall=bruck_alltoall", c, diags));  // a full schedule name works too
  CHECK(c[CollKind::Alltoall] == "bruck_alltoall");

  AlgoChoice d;
  diags.clear();
  CHECK_FALSE(parse_algo_choice("allreduce=ringg", d, diags));
  CHECK(diags.messages() ==
        "unknown algorithm 'ringg' for allreduce (choose from ring, recursive_doubling, rabenseifner, reduce_bcast, binomial, nccl_ring, "
        "nccl_tree, nccl_nvls)");
  diags.clear();
  CHECK_FALSE(parse_algo_choice("allreduc=ring", d, diags));
  CHECK(diags.messages() ==
        "unknown collective 'allreduc' in --algo (choose from allreduce, bcast, reduce, allgather, reduce_scatter, alltoall, barrier)");
  diags.clear();
  CHECK_FALSE(parse_algo_choice("allreduce", d, diags));
  CHECK(diags.messages().find("COLLECTIVE=ALGORITHM") != std::string::npos);
  diags.clear();
  CHECK_FALSE(parse_algo_choice("bcast=binomial,bcast=pipeline", d, diags));
  CHECK(diags.messages() == "--algo names bcast twice");
  diags.clear();
  CHECK_FALSE(parse_algo_choice("", d, diags));
  diags.clear();
  CHECK_FALSE(parse_algo_choice("allgather=pairwise", d, diags));
  CHECK(diags.messages() == "unknown algorithm 'pairwise' for allgather (choose from ring, recursive_doubling, bruck, nccl_ring)");
}

TEST_CASE("every library algorithm named by --algo exists in the library", "[expand][algo]") {
  for (size_t ki = 0; ki < kCollKindCount; ++ki)
    for (const AlgoName& a : algorithms_for(static_cast<CollKind>(ki))) {
      Session s;
      INFO(a.schedule);
      CHECK(s.load_library(a.schedule) != nullptr);
      if (a.fallback) CHECK(find_algorithm(static_cast<CollKind>(ki), a.fallback) != nullptr);
    }
}

TEST_CASE("the default follows Open MPI 4.1's tuned decisions", "[expand][algo]") {
  constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;
  struct Case {
    CollKind kind;
    uint64_t bytes;
    uint32_t n;
    const char* schedule;
  };
  const Case cases[] = {
      // allreduce (total = the vector): small -> recursive doubling, large -> Rabenseifner.
      {CollKind::Allreduce, 1 * KiB, 16, "recursive_doubling_allreduce"},
      {CollKind::Allreduce, 64 * MiB, 16, "rabenseifner_allreduce"},
      {CollKind::Allreduce, 1 * KiB, 64, "recursive_doubling_allreduce"},
      {CollKind::Allreduce, 1 * MiB, 64, "rabenseifner_allreduce"},
      {CollKind::Allreduce, 4095, 3, "recursive_doubling_allreduce"},  // row < 4: < 4096 -> 3
      {CollKind::Allreduce, 4096, 3, "ring_allreduce"},                // < 8192 -> 4 (ring)
      {CollKind::Allreduce, 8, 5, "ring_allreduce"},                   // row < 8: < 16 -> 4
      {CollKind::Allreduce, 100 * KiB, 200, "binomial_allreduce"},     // row < 256: < 131072 -> 2 (nonoverlapping)
      {CollKind::Allreduce, 3000, 5000, "ring_allreduce"},             // last row: < 16384 -> 5 (segmented ring)
      // bcast (total = the message): small -> binomial (knomial), large -> scatter + allgather.
      {CollKind::Bcast, 1 * KiB, 16, "binomial_bcast"},
      {CollKind::Bcast, 4 * MiB, 16, "scatter_allgather_bcast"},
      {CollKind::Bcast, 16, 2, "pipeline_bcast"},  // row < 4: < 32 -> 3 (pipeline)
      // allgather (total = one rank's block): small -> recursive doubling, large -> ring.
      {CollKind::Allgather, 64 * 128, 64, "recursive_doubling_allgather"},
      {CollKind::Allgather, 64 * MiB, 64, "ring_allgather"},
      {CollKind::Allgather, 64 * KiB, 64, "ring_allgather"},              // neighbor exchange -> ring
      {CollKind::Allgather, 512 * 64, 512, "bruck_allgather"},            // row < 512: < 128 -> 2 (bruck)
      {CollKind::Allgather, 1 * MiB, 2, "recursive_doubling_allgather"},  // two_proc
      // alltoall (total = one block for one peer): small -> Bruck, large -> pairwise.
      {CollKind::Alltoall, 64 * 256, 64, "bruck_alltoall"},
      {CollKind::Alltoall, 64 * MiB, 64, "pairwise_alltoall"},
      {CollKind::Alltoall, 8 * 1024, 8, "linear_alltoall"},  // row < 16: linear_sync
      // reduce_scatter (total = the vector): small -> recursive halving, large -> ring.
      {CollKind::ReduceScatter, 1 * KiB, 16, "recursive_halving_reduce_scatter"},
      {CollKind::ReduceScatter, 64 * MiB, 16, "ring_reduce_scatter"},
      {CollKind::ReduceScatter, 1 * MiB, 1000, "recursive_halving_reduce_scatter"},  // butterfly
      {CollKind::Reduce, 1 * KiB, 16, "binomial_reduce"},
      {CollKind::Reduce, 64 * MiB, 16, "binomial_reduce"},
      {CollKind::Barrier, 0, 8, "dissemination_barrier"},
      {CollKind::Barrier, 0, 300, "dissemination_barrier"},
  };
  for (const Case& c : cases) {
    AlgoPick p = openmpi_default(c.kind, c.bytes, c.n);
    INFO(coll_name(c.kind) << " " << c.bytes << " B at N = " << c.n << ": " << p.why);
    CHECK(p.schedule == c.schedule);
    CHECK(p.why.rfind("Open MPI 4.1 tuned picks ", 0) == 0);
  }
  // Open MPI's fixed rules do not segment: its pipeline broadcast sends the message whole.
  AlgoPick pipe = openmpi_default(CollKind::Bcast, 16, 2);
  REQUIRE(pipe.params.size() == 1);
  CHECK(pipe.params[0] == std::make_pair(std::string("segments"), int64_t{1}));

  // End to end: no --algo, a small and a large all-reduce over 16 ranks.
  const char* text =
      "schedule t() {\n  buffer a[16] bytes 64;\n  buffer b[16] bytes 4MiB;\n  init a contrib;\n  init b contrib;\n"
      "  expect nothing;\n  allreduce a;\n  allreduce b;\n}\n";
  Expanded e = expand(text, 16, AlgoChoice{});
  INFO(e.errors);
  REQUIRE(e.g);
  REQUIRE(e.rep.instances.size() == 2);
  CHECK(e.rep.instances[0].schedule == "recursive_doubling_allreduce");
  CHECK(e.rep.instances[1].schedule == "rabenseifner_allreduce");
}

TEST_CASE("--algo openmpi and nccl[:gpus=G] pick the default for the kinds not named", "[expand][algo][nccl]") {
  Diagnostics diags;
  AlgoChoice c;
  CHECK(c.defaults == AlgoDefault::Auto);
  REQUIRE(parse_algo_choice("nccl:gpus=8,allreduce=ring", c, diags));
  CHECK(c.defaults == AlgoDefault::Nccl);
  CHECK(c.gpus_per_node == 8);
  CHECK(c[CollKind::Allreduce] == "ring_allreduce");
  AlgoChoice plain;
  REQUIRE(parse_algo_choice("nccl", plain, diags));
  CHECK(plain.defaults == AlgoDefault::Nccl);
  CHECK(plain.gpus_per_node == 0);
  AlgoChoice o;
  REQUIRE(parse_algo_choice("bcast=binomial,openmpi", o, diags));
  CHECK(o.defaults == AlgoDefault::OpenMpi);
  for (const char* bad : {"nccl:gpus=0", "nccl:gpus=", "nccl:gpus=8x", "nccl:gpu=8", "nccl:gpus=-1", "nccl:gpus=+8", "nccl:gpus=99999"}) {
    AlgoChoice d;
    INFO(bad);
    diags.clear();
    CHECK_FALSE(parse_algo_choice(bad, d, diags));
    CHECK(diags.messages().find("gpus=G") != std::string::npos);
  }
  AlgoChoice twice;
  diags.clear();
  CHECK_FALSE(parse_algo_choice("nccl,openmpi", twice, diags));
  CHECK(diags.messages() == "--algo names a default twice (openmpi or nccl)");

  // What sim does on a `nodes:` platform: NCCL unless --algo said openmpi; the platform's node
  // size unless --algo gave one.
  AlgoChoice none;
  apply_gpu_platform(none, 8);
  CHECK(none.defaults == AlgoDefault::Nccl);
  CHECK(none.gpus_per_node == 8);
  apply_gpu_platform(o, 8);
  CHECK(o.defaults == AlgoDefault::OpenMpi);
  AlgoChoice four;
  REQUIRE(parse_algo_choice("nccl:gpus=4", four, diags));
  apply_gpu_platform(four, 8);
  CHECK(four.gpus_per_node == 4);
  AlgoChoice n8 = nccl_choice(8);
  CHECK(n8.defaults == AlgoDefault::Nccl);
  CHECK(n8.gpus_per_node == 8);
}

TEST_CASE("NCCL's tuning model: the topology, latencies and bandwidths NCCL computes", "[expand][algo][nccl]") {
  // One node of 8 H100s: 6 ring channels of 60 GB/s doubled to 12 of 30, 24 in the communicator
  // (NCCL's logs on DGX H100 say 24 channels).
  NcclTopo one = nccl_topo(8, 8);
  CHECK(one.nodes == 1);
  CHECK(one.graph_channels == 12);
  CHECK(one.graph_bw == Approx(30.0));
  CHECK(one.comm_channels == 24);
  // Four nodes: one channel per NIC at 48 GB/s (the PCIe Gen5 path), 16 in the communicator.
  NcclTopo four = nccl_topo(32, 8);
  CHECK(four.nodes == 4);
  CHECK(four.graph_channels == 8);
  CHECK(four.graph_bw == Approx(48.0));
  CHECK(four.comm_channels == 16);
  // Four GPUs a node: 4 channels of 48 doubled to 8 of 24; one GPU a node: 2 of 24.
  CHECK(nccl_topo(16, 4).graph_channels == 8);
  CHECK(nccl_topo(16, 4).graph_bw == Approx(24.0));
  CHECK(nccl_topo(8, 0).nodes == 8);  // 0: every rank a node of its own
  CHECK(nccl_topo(8, 0).graph_channels == 2);

  // Every number below worked out by hand from tuning.cc's formulas (4 nodes, 32 ranks).
  NcclTuning t = nccl_tune(CollKind::Allreduce, 1 << 20, 32, 8);
  auto at = [&](NcclAlgo a, NcclProto p) { return t.cost[static_cast<int>(a)][static_cast<int>(p)]; };
  CHECK(at(NcclAlgo::Ring, NcclProto::Simple).latency_us == Approx(8.4 + 56 * 3.4 + 6 * 14.0));
  CHECK(at(NcclAlgo::Ring, NcclProto::Simple).bw_GBps == Approx(384.0 * 32 / 62));
  CHECK(at(NcclAlgo::Ring, NcclProto::LL).latency_us == Approx(6.6 + 56 * 1.0 + 6 * 2.7));
  CHECK(at(NcclAlgo::Ring, NcclProto::LL).bw_GBps == Approx(20.4 * 32 / 62));
  CHECK(at(NcclAlgo::Ring, NcclProto::LL128).latency_us == Approx(14.0 + 56 * 1.9 + 6 * 4.0));
  CHECK(at(NcclAlgo::Ring, NcclProto::LL128).bw_GBps == Approx(8 * 36.7 * 32 / 62));
  CHECK(at(NcclAlgo::Tree, NcclProto::Simple).latency_us == Approx(8.4 + 2 * (7 * 4.0 + 2 * 14.0)));
  CHECK(at(NcclAlgo::Tree, NcclProto::Simple).bw_GBps == Approx(8 * 36.0 / 2));
  CHECK(at(NcclAlgo::Tree, NcclProto::LL).latency_us == Approx(6.8 + 2 * (7 * 0.6 + 2 * 5.0)));
  CHECK(at(NcclAlgo::Tree, NcclProto::LL).bw_GBps == Approx(20.4 / 2));
  CHECK(at(NcclAlgo::Tree, NcclProto::LL128).latency_us == Approx(14.0 + 2 * (7 * 1.25 + 2 * 8.5)));
  CHECK(at(NcclAlgo::Tree, NcclProto::LL128).bw_GBps == Approx(8 * 29.0 / 2));
  // 1 MiB: log2(1 MiB / 64) = 14, LL128's tree correction .6.
  CHECK(at(NcclAlgo::Tree, NcclProto::LL128).time_us == Approx(65.5 + 1048576 / (1000 * 116.0 * .6)));
  CHECK(t.algo == NcclAlgo::Tree);
  CHECK(t.proto == NcclProto::LL128);
  CHECK(t.channels == 16);
  // One node: the ring's LL latency is 6.6 + 14 NVLink steps of 0.6 µs.
  NcclTuning u = nccl_tune(CollKind::Allreduce, 1024, 8, 8);
  CHECK(u.cost[1][0].latency_us == Approx(6.6 + 14 * 0.6));
  CHECK(u.cost[1][0].bw_GBps == Approx(141.0 * 8 / 14));
  // Fewer channels for small sizes: while bytes < nc × threads × threshold.
  CHECK(u.channels == 1);                                                         // LL ring: 1 KiB < 2 × 512 × 8 × 8
  CHECK(nccl_tune(CollKind::Allreduce, 65536, 8, 8).channels == 2);               // 64 KiB / 32 KiB per channel
  CHECK(nccl_tune(CollKind::Allreduce, uint64_t{1} << 20, 8, 8).channels == 24);  // all of them
  CHECK(nccl_tune(CollKind::Allreduce, uint64_t{1} << 30, 8, 8).channels == 16);  // NVLS: nvlsChannels
}

TEST_CASE("NVLS on one node of NVSwitch GPUs from Hopper on: NCCL's bandwidth, latency, channels and chunks; never elsewhere",
          "[expand][algo][nccl][nvls]") {
  constexpr uint64_t MiB = 1024 * 1024;
  // One H100 node: the NVLS graph is 8 channels of 40 GB/s (bwInter 60): bus bandwidth 8 ×
  // min(2 × 0.85 × 40 × 7/8, 60) = 476 GB/s, algorithm bandwidth × 8/14, latency 25 µs.
  NcclTuning t = nccl_tune(CollKind::Allreduce, 1024 * MiB, 8, 8);
  CHECK(t.topo.nvls_graph_channels == 8);
  CHECK(t.topo.nvls_bw_intra == 40);
  CHECK(t.topo.nvls_bw_inter == 60);
  const NcclCost& c = t.cost[static_cast<int>(NcclAlgo::Nvls)][static_cast<int>(NcclProto::Simple)];
  REQUIRE(c.enabled);
  CHECK(c.bus_GBps == Approx(476));
  CHECK(c.bw_GBps == Approx(476.0 * 8 / 14));
  CHECK(c.latency_us == 25);
  CHECK(c.base_us == 25);
  CHECK(t.algo == NcclAlgo::Nvls);
  CHECK(t.proto == NcclProto::Simple);
  CHECK(t.channels == 16);
  CHECK(t.pieces == 64);  // 1 GiB / 16 channels in loops of 8 × 128 KiB: 64, at most 64
  // Only Simple: the other protocols have no NVLS cost.
  CHECK_FALSE(t.cost[static_cast<int>(NcclAlgo::Nvls)][static_cast<int>(NcclProto::LL)].enabled);
  // Small calls: the ring's LL; the crossover lies between 1 and 4 MiB.
  CHECK(nccl_tune(CollKind::Allreduce, 1 * MiB, 8, 8).algo == NcclAlgo::Ring);
  CHECK(nccl_tune(CollKind::Allreduce, 4 * MiB, 8, 8).algo == NcclAlgo::Nvls);
  // A smaller chunk for smaller calls (nChannels × nHeads × chunk): 4 MiB < 2 × 16 × 8 × 32 KiB.
  CHECK(nccl_tune(CollKind::Allreduce, 4 * MiB, 8, 8).pieces == 2);  // 4 MiB / 16 / (8 × 16 KiB)
  // NCCL_ALGO=^NVLS leaves the ring.
  NcclEnables no;
  Diagnostics diags;
  size_t at = 0;
  REQUIRE(parse_nccl_list("^NVLS", false, no, diags, at));
  NcclHardware h100;
  CHECK(nccl_tune(CollKind::Allreduce, 1024 * MiB, 8, h100, no).algo == NcclAlgo::Ring);
  // A DGX B200: 8 × 80 GB/s (bwInter 90): 8 × min(2 × 0.74 × 80 × 7/8, 90) = 720 GB/s, 24 channels.
  NcclHardware b200 = h100;
  b200.arch = 3;
  b200.nvlink_per_gpu = 18 * 40.1;
  NcclTuning b = nccl_tune(CollKind::Allreduce, 1024 * MiB, 8, b200);
  CHECK(b.cost[static_cast<int>(NcclAlgo::Nvls)][static_cast<int>(NcclProto::Simple)].bus_GBps == Approx(720));
  CHECK(b.algo == NcclAlgo::Nvls);
  CHECK(b.channels == 24);
  // No NVLS: an A100 node (sm80), two nodes (NVLS across nodes needs SHARP), all-gather.
  NcclHardware a100 = h100;
  a100.arch = 1;
  a100.nvlink_per_gpu = 240;
  CHECK(nccl_tune(CollKind::Allreduce, 1024 * MiB, 8, a100).topo.nvls_graph_channels == 0);
  CHECK(nccl_tune(CollKind::Allreduce, 1024 * MiB, 8, a100).algo == NcclAlgo::Ring);
  CHECK(nccl_tune(CollKind::Allreduce, 1024 * MiB, 16, h100).algo != NcclAlgo::Nvls);
  CHECK(nccl_tune(CollKind::Allgather, 1024 * MiB, 8, h100).algo == NcclAlgo::Ring);
  // The expansion runs it by name, with NCCL's channels and chunks.
  AlgoPick p = nccl_default(CollKind::Allreduce, 1024 * MiB, 8, 8);
  CHECK(p.schedule == "nccl_nvls_allreduce");
  CHECK(p.why.find("nvls/Simple on 16 channels") != std::string::npos);
}

TEST_CASE("NVLS's cost a chunk-loop: NCCL's bandwidth at its 128 KiB chunk, less at the smaller chunks of smaller calls",
          "[expand][algo][nccl][nvls]") {
  constexpr uint64_t MiB = 1024 * 1024;
  // H100 node: 476 GB/s of bus bandwidth on 16 channels, a loop of 8 heads × 128 KiB at 17 GB/s
  // of algorithm bandwidth a channel takes 61.7 µs; 5 µs of it is the loop's fixed cost.
  double ch = 476.0 / 16;
  CHECK(nvls_chunk_efficiency(131072, 8, ch) == Approx(1.0));
  double e64 = nvls_chunk_efficiency(65536, 8, ch), e32 = nvls_chunk_efficiency(32768, 8, ch);
  double t = 8 * 131072 / (ch * 1e3 * 8 / 14);
  CHECK(t == Approx(61.68).epsilon(1e-3));
  CHECK(e64 == Approx(0.5 * t / (5 + 0.5 * (t - 5))));
  CHECK(e32 == Approx(0.25 * t / (5 + 0.25 * (t - 5))));
  // The rates nccl-tests measures between sizes of one chunk (busbw: 481 at 128 KiB, 450 at 64,
  // 381 at 32 on together.ai's node) come out within 4 % of NCCL's 476 scaled so.
  CHECK(476 * e64 == Approx(450).epsilon(0.04));
  CHECK(476 * e32 == Approx(381).epsilon(0.04));
  // The chunk the pick runs: 128 KiB from 1 GiB up, 64 KiB from 64 MiB, 32 KiB from 8 MiB.
  CHECK(nccl_tune(CollKind::Allreduce, 1024 * MiB, 8, 8).chunk == 131072);
  CHECK(nccl_tune(CollKind::Allreduce, 512 * MiB, 8, 8).chunk == 65536);
  CHECK(nccl_tune(CollKind::Allreduce, 32 * MiB, 8, 8).chunk == 32768);
  // The pick's per-message cap carries it: at 32 MiB that share of the cap at 1 GiB.
  AlgoPick big = nccl_default(CollKind::Allreduce, 1024 * MiB, 8, 8), mid = nccl_default(CollKind::Allreduce, 32 * MiB, 8, 8);
  REQUIRE(mid.schedule == "nccl_nvls_allreduce");
  CHECK(mid.cost.channel_Bps == Approx(big.cost.channel_Bps * e32));
  // Nothing else changes: the ring keeps NCCL's cap.
  CHECK(nvls_chunk_efficiency(0, 8, ch) == 1.0);
}

TEST_CASE("NCCL's choice: the tree across nodes up to its crossover, the ring above it, the ring then NVLS on one node",
          "[expand][algo][nccl]") {
  constexpr uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;
  struct Case {
    uint32_t n, gpus;
    uint64_t bytes;
    const char* schedule;
  };
  const Case cases[] = {
      {8, 8, 1 * KiB, "nccl_ring_allreduce"},  // one node: the tree is a chain, the ring wins up to NVLS
      {8, 8, 16 * MiB, "nccl_nvls_allreduce"},   {8, 8, 8 * GiB, "nccl_nvls_allreduce"},
      {16, 8, 1 * KiB, "nccl_tree_allreduce"},  // 2 nodes: tree up to 21.5 MiB
      {16, 8, 16 * MiB, "nccl_tree_allreduce"},  {16, 8, 32 * MiB, "nccl_ring_allreduce"},
      {32, 8, 1 * MiB, "nccl_tree_allreduce"},  // 4 nodes: tree up to 25 MiB
      {32, 8, 16 * MiB, "nccl_tree_allreduce"},  {32, 8, 32 * MiB, "nccl_ring_allreduce"},
      {32, 8, 1 * GiB, "nccl_ring_allreduce"},   {64, 8, 64 * MiB, "nccl_tree_allreduce"},    // 8 nodes: tree up to 66 MiB
      {64, 8, 128 * MiB, "nccl_ring_allreduce"}, {128, 8, 512 * MiB, "nccl_tree_allreduce"},  // 16 nodes: up to 800 MiB
      {128, 8, 1 * GiB, "nccl_ring_allreduce"},
  };
  for (const Case& c : cases) {
    AlgoPick p = nccl_default(CollKind::Allreduce, c.bytes, c.n, c.gpus);
    INFO(c.bytes << " B at N = " << c.n << ": " << p.why);
    CHECK(p.schedule == c.schedule);
    CHECK(p.why.rfind("NCCL 2.30 picks ", 0) == 0);
    std::map<std::string, int64_t> params(p.params.begin(), p.params.end());
    CHECK(params["gpus"] == c.gpus);
    CHECK(params["channels"] >= 1);
    CHECK(params["chunks"] >= 1);
    CHECK(params["chunks"] <= kMaxPieces);
  }
  AlgoChoice nc = nccl_choice(8);
  CHECK(default_pick(nc, CollKind::Allgather, 64 * MiB, 32).schedule == "nccl_ring_allgather");
  CHECK(default_pick(nc, CollKind::ReduceScatter, 64 * MiB, 32).schedule == "nccl_ring_reduce_scatter");
  CHECK(default_pick(nc, CollKind::Bcast, 64 * MiB, 32).schedule == "nccl_ring_bcast");
  CHECK(default_pick(nc, CollKind::Reduce, 64 * MiB, 32).schedule == "binomial_reduce");
  CHECK(default_pick(nc, CollKind::Alltoall, 64 * MiB, 32).schedule == "linear_alltoall");
  CHECK(default_pick(nc, CollKind::Barrier, 0, 32).schedule == "dissemination_barrier");
  CHECK(default_pick(AlgoChoice{}, CollKind::Allreduce, 64 * MiB, 32).schedule == "rabenseifner_allreduce");  // Auto: Open MPI
}

TEST_CASE("an expansion by NCCL's choice validates, and its schedules' postconditions hold", "[expand][nccl]") {
  // 16 ranks on 4 nodes of 4 GPUs: a small all-reduce (NCCL's tree), a large one (its ring), the
  // other kinds, and an all-reduce over one rank of each node.
  const char* text = R"(schedule t() {
  buffer a[16] bytes 64;
  buffer b[16] bytes 4MiB;
  buffer c[16] bytes 4KiB;
  buffer s[4] bytes 1KiB;
  init a contrib;
  init b contrib;
  init c contrib;
  init s contrib;
  expect nothing;
  allreduce a;
  allreduce b;
  allgather c;
  reduce_scatter c;
  bcast c root 5;
  allreduce s over ranks(1, 4, 4);
})";
  AlgoChoice choice;
  Diagnostics diags;
  REQUIRE(parse_algo_choice("nccl:gpus=4", choice, diags));
  Expanded e = expand(text, 16, choice);
  INFO(e.errors);
  REQUIRE(e.g);
  const StepGraph& g = *e.g;
  CHECK(count_kind(g, StepKind::Collective) == 0);
  Diagnostics vd;
  validate(*e.g, vd);
  CHECK_FALSE(vd.has_errors());
  REQUIRE(e.rep.instances.size() == 6);
  CHECK(e.rep.instances[0].schedule == "nccl_tree_allreduce");
  CHECK(e.rep.instances[1].schedule == "nccl_ring_allreduce");
  CHECK(e.rep.instances[2].schedule == "nccl_ring_allgather");
  CHECK(e.rep.instances[3].schedule == "nccl_ring_reduce_scatter");
  CHECK(e.rep.instances[4].schedule == "nccl_ring_bcast");
  // One member on each node: NCCL sees 4 nodes of one GPU.
  CHECK(e.rep.instances[5].why.find("on 4 nodes of 1 GPU") != std::string::npos);
  InterpResult r = interpret(g);
  REQUIRE(r.completed);
  CHECK(r.issues.empty());
  PostconditionReport post = check_postconditions(g, r.initial, r.final);
  CHECK(post.chunks_wrong == 0);
  CHECK(post.chunks_checked > 0);

  // An algorithm named by --algo gets the node size too.
  AlgoChoice named;
  REQUIRE(parse_algo_choice("nccl:gpus=4,allreduce=nccl_tree", named, diags));
  Expanded f = expand(text, 16, named);
  REQUIRE(f.g);
  CHECK(f.rep.instances[1].schedule == "nccl_tree_allreduce");
  CHECK(f.rep.instances[1].why == "--algo");
}

TEST_CASE("NCCL's model on other machines: A100, B200, AMD hosts, fewer NICs, as NCCL's tables say", "[expand][algo][nccl][hardware]") {
  // DGX A100 (Ampere: 12 NVLinks of 20 GB/s as NCCL counts them, HDR NICs behind PCIe Gen4, AMD
  // CPUs). One node: the search starts at 40 GB/s (sm<90's array), 6 channels, doubled (before
  // Hopper the 50 GB/s rule does not apply) to 12 of 20 and 24 in the communicator, which NCCL's
  // log on a DGX A100 shows (nccl-tests#100: "Channel 19/24").
  NcclHardware a100;
  a100.arch = 1;
  a100.nvlink_per_gpu = 240;
  a100.nic_GBps = 25;
  a100.pcie_GBps = 24;
  a100.amd_cpu = true;
  NcclTopo one = nccl_topo(8, a100);
  CHECK(one.graph_channels == 12);
  CHECK(one.graph_bw == Approx(20.0));
  CHECK(one.comm_channels == 24);
  // Across nodes: the GPU–NIC path is 24 GB/s (PCIe Gen4 x16 under the 25 GB/s NIC): 8 channels,
  // not doubled (below 25 GB/s), 16 in the communicator.
  NcclTopo two = nccl_topo(16, a100);
  CHECK(two.graph_channels == 8);
  CHECK(two.graph_bw == Approx(24.0));
  CHECK(two.comm_channels == 16);
  // Ampere's rows of the tables: ring LL128 20 GB/s a channel; across nodes an AMD host's LL cap
  // (llMaxBws[1][1] = 22.5) and a 2 µs network overhead per intra-node step (×3 with Simple).
  NcclTuning t = nccl_tune(CollKind::Allreduce, 1 << 20, 16, a100);
  auto at = [&](NcclAlgo x, NcclProto p) { return t.cost[static_cast<int>(x)][static_cast<int>(p)]; };
  CHECK(at(NcclAlgo::Ring, NcclProto::LL128).bw_GBps == Approx(8 * 20.0 * 16 / 30));
  CHECK(at(NcclAlgo::Ring, NcclProto::LL).bw_GBps == Approx(22.5 * 16 / 30));
  CHECK(at(NcclAlgo::Ring, NcclProto::Simple).latency_us == Approx(8.4 + 28 * 6.0 + 2 * 14.0));
  CHECK(at(NcclAlgo::Tree, NcclProto::Simple).bw_GBps == Approx(0.92 * 8 * 24 / 2));  // under perChMaxTreeBws[Ampere][2 nodes] = 23.6
  // The same sizes on H100 pick other pairs: the model is the machine's, not a fixed H100.
  NcclTuning h = nccl_tune(CollKind::Allreduce, 1 << 20, 16, NcclHardware{});
  CHECK(h.cost[1][1].bw_GBps == Approx(8 * 36.7 * 16 / 30));

  // B200 (Blackwell: 18 NVLinks of 40.1): one node, 8 channels of 90 doubled to 16 of 45.
  NcclHardware b200;
  b200.arch = 3;
  b200.nvlink_per_gpu = 18 * 40.1;
  NcclTopo b = nccl_topo(8, b200);
  CHECK(b.graph_channels == 16);
  CHECK(b.graph_bw == Approx(45.0));
  CHECK(nccl_tune(CollKind::Allreduce, 1024, 8, b200).cost[1][0].bw_GBps == Approx(282.0 * 8 / 14));  // 2 × Hopper's LL cap

  // Four NICs for eight H100s: one channel per NIC, 4 of 48 GB/s, which the search doubles
  // (ncclTopoDupChannels keeps 4 channels or fewer below 50 GB/s) to 8 of 24.
  NcclHardware four = NcclHardware{};
  four.nics_per_node = 4;
  CHECK(nccl_topo(16, four).graph_channels == 8);
  CHECK(nccl_topo(16, four).graph_bw == Approx(24.0));
  // A slower NIC lowers the first speed the search tries: 200 Gb/s = 25 GB/s gives 24.
  NcclHardware slow = NcclHardware{};
  slow.nic_GBps = 25;
  CHECK(nccl_topo(16, slow).graph_bw == Approx(24.0));
}

TEST_CASE("NCCL_ALGO and NCCL_PROTO as NCCL parses them", "[expand][algo][nccl][env]") {
  NcclEnables e;
  Diagnostics diags;
  size_t at = 0;
  REQUIRE(parse_nccl_list("Ring", false, e, diags, at));
  CHECK(e.algo[4][1]);   // AllReduce, Ring
  CHECK(!e.algo[4][0]);  // AllReduce, Tree
  CHECK(!e.algo[0][0]);
  // '^' excludes; names compare without case; per-function entries after the first.
  NcclEnables f;
  REQUIRE(parse_nccl_list("^nvls;allreduce:TREE", false, f, diags, at));
  CHECK(f.algo[2][1]);   // AllGather keeps Ring
  CHECK(!f.algo[2][4]);  // no NVLS
  CHECK(f.algo[4][0]);   // AllReduce: Tree only
  CHECK(!f.algo[4][1]);
  NcclEnables p;
  REQUIRE(parse_nccl_list("LL,Simple;allreduce:^LL", true, p, diags, at));
  CHECK(p.proto[0][0]);
  CHECK(!p.proto[0][1]);
  CHECK(!p.proto[4][0]);
  CHECK(p.proto[4][1]);
  // NCCL's errors, at the token.
  NcclEnables bad;
  diags.clear();
  CHECK_FALSE(parse_nccl_list("ring, tree", false, bad, diags, at));
  CHECK(diags.messages().find("Unrecognized element token \" tree\"") != std::string::npos);
  CHECK(diags.messages().find("NCCL does not trim spaces") != std::string::npos);
  CHECK(at == 5);
  diags.clear();
  CHECK_FALSE(parse_nccl_list("ring;tree", false, bad, diags, at));
  CHECK(diags.messages().find("All entries except the first must have a prefix") != std::string::npos);
  CHECK(at == 5);
  diags.clear();
  CHECK_FALSE(parse_nccl_list("allgathr:ring", false, bad, diags, at));
  CHECK(diags.messages().find("Unrecognized prefix token \"allgathr\"") != std::string::npos);
  CHECK(at == 0);
  diags.clear();
  CHECK_FALSE(parse_nccl_list("LL256", true, bad, diags, at));
  // The model honours them: forcing the ring where NCCL would pick the tree.
  NcclEnables ring;
  REQUIRE(parse_nccl_list("Ring", false, ring, diags, at));
  NcclTuning free = nccl_tune(CollKind::Allreduce, 1 << 20, 32, NcclHardware{});
  NcclTuning forced = nccl_tune(CollKind::Allreduce, 1 << 20, 32, NcclHardware{}, ring);
  CHECK(free.algo == NcclAlgo::Tree);
  CHECK(forced.algo == NcclAlgo::Ring);
  // Nothing the model has: NCCL fails the call, and so does the expansion (with the reason).
  NcclEnables nvls;
  REQUIRE(parse_nccl_list("NVLS", false, nvls, diags, at));
  CHECK(nccl_tune(CollKind::Allreduce, 1 << 20, 32, NcclHardware{}, nvls).none_enabled);
  AlgoPick none = nccl_default(CollKind::Allreduce, 1 << 20, 32, NcclHardware{}, nvls);
  CHECK(none.schedule.empty());
  CHECK(none.why.find("NCCL itself would fail the call") != std::string::npos);
}

TEST_CASE("NCCL's picks carry NCCL's protocol costs to their sends; an algorithm named by --algo carries none", "[expand][nccl][cost]") {
  // One all-reduce of 1 KiB over 8 ranks on one node of 8 GPUs: NCCL's ring with LL.
  const char* text = R"(schedule t() {
  buffer a[8] bytes 128;
  init a contrib;
  expect nothing;
  allreduce a;
})";
  AlgoChoice choice;
  Diagnostics diags;
  REQUIRE(parse_algo_choice("nccl:gpus=8", choice, diags));
  Expanded e = expand(text, 8, choice);
  INFO(e.errors);
  REQUIRE(e.g);
  const StepGraph& g = *e.g;
  REQUIRE(g.call_costs.size() == 1);
  NcclTuning t = nccl_tune(CollKind::Allreduce, 1024, 8, 8);
  REQUIRE(t.algo == NcclAlgo::Ring);
  const NcclCost& w = t.cost[1][static_cast<size_t>(t.proto)];
  const CallCost& c = g.call_costs[0];
  CHECK(c.base_s == Approx(w.base_us * 1e-6));
  CHECK(c.hop_intra_s == Approx(w.hop_intra_us * 1e-6));
  CHECK(c.channel_Bps == Approx(w.bus_GBps * 1e9 / t.topo.comm_channels));
  // NCCL's own latency is the base plus one hop per ring step: 2(N-1) of them on one node.
  CHECK(w.latency_us == Approx(w.base_us + 14 * w.hop_intra_us));
  // Every send pays it; the first send of each channel's ring on each rank is an entry (the base).
  size_t sends = 0, entries = 0;
  for (StepId s = 0; s < g.size(); ++s) {
    bool entry = false;
    const CallCost* cc = g.call_cost(s, entry);
    if (g.kind(s) == StepKind::Send) {
      ++sends;
      CHECK(cc == &g.call_costs[0]);
      entries += entry;
    } else {
      CHECK(cc == nullptr);
    }
  }
  CHECK(sends == 8 * 14 * static_cast<size_t>(t.channels) * static_cast<size_t>(t.pieces));
  CHECK(entries == 8 * static_cast<size_t>(t.channels) * static_cast<size_t>(t.pieces));
  // Named by --algo: the schedule as written, no protocol costs.
  AlgoChoice named;
  REQUIRE(parse_algo_choice("nccl:gpus=8,allreduce=nccl_ring", named, diags));
  Expanded f = expand(text, 8, named);
  REQUIRE(f.g);
  CHECK(f.g->call_costs.empty());
}

TEST_CASE("an all-to-all on GPU nodes: every isend is one of its rank's first messages, and pays the group's rounds",
          "[expand][nccl][cost][alltoall]") {
  // linear_alltoall posts its irecvs, then its isends, before its one wait: no message is awaited
  // before any isend, so each pays the call's launch and base (the group's N rounds).
  const char* text = R"(schedule t() {
  buffer a[8] bytes 1024;
  buffer b[8] bytes 1024;
  init a contrib;
  init b contrib;
  expect nothing;
  alltoall a into b;
})";
  AlgoChoice choice;
  Diagnostics diags;
  REQUIRE(parse_algo_choice("nccl:gpus=8", choice, diags));
  Expanded e = expand(text, 8, choice);
  INFO(e.errors);
  REQUIRE(e.g);
  const StepGraph& g = *e.g;
  REQUIRE(g.call_costs.size() == 1);
  CHECK(g.call_costs[0].base_s == Approx(8 * kP2pRoundUs * 1e-6));
  size_t sends = 0, entries = 0;
  for (StepId s = 0; s < g.size(); ++s) {
    bool entry = false;
    if (g.kind(s) == StepKind::Send && g.call_cost(s, entry)) {
      ++sends;
      entries += entry;
    }
  }
  CHECK(sends == 8 * 7);
  CHECK(entries == sends);
  // (A send after an awaited message is no entry: the ring's, in the test above, only each
  // channel's first on each rank.)
}
