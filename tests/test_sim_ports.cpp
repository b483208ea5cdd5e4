// The analytic engine's ports (sim/port_sharing.hpp) held against SimGrid: wherever the links
// inside the network carry one message at a time, the two engines agree within 1% — independent
// ports run in parallel (NVLink beside a NIC, the NICs of a node, the directions of a torus) and
// one port is shared by what crosses it (an incast, a fold message beside a partner's), on GPU
// platforms, a torus and a star.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/pipeline.hpp"
#include "sim/sim.hpp"

using namespace sg;
using namespace sg::sim;

namespace {

struct Timed {
  double time = 0;
  std::vector<double> ends;  // per step
};

Timed simulate_text(const std::string& text, uint32_t n, const std::string& spec, Model m, const std::string& library = "") {
  Session s;
  Target t;
  if (library.empty()) {
    const Program* p = s.load_text("case.sched", text);
    REQUIRE(p);
    t = Target{p, p->schedules.back().get()};
  } else {
    t = open_target(s, library);
  }
  BuildOptions bo;
  bo.elab.nranks = n;
  Built b = build(s, t, bo);
  INFO(s.diags.render(s.sources));
  REQUIRE(b.ok());
  Platform p;
  sg::SourceManager sm;
  sg::Diagnostics diags;
  REQUIRE(parse_platform(spec, n, p, sm, diags));
  SimOptions o;
  o.model = m;
  o.trace = true;
  SimResult r = simulate(*b.graph, p, o);
  INFO(r.error);
  REQUIRE(r.error.empty());
  REQUIRE(r.completed);
  return Timed{r.time_s, r.ends};
}

double rel(double a, double b) { return std::fabs(a - b) / b; }

// Both engines on one case: their times, which must agree within 1%.
void agree(const std::string& what, const std::string& text, uint32_t n, const std::string& spec, const std::string& library = "") {
  INFO(what << " on " << spec);
  Timed a = simulate_text(text, n, spec, Model::Analytic, library);
#ifdef STEPGRAPH_HAVE_SIMGRID
  Timed s = simulate_text(text, n, spec, Model::SimGrid, library);
  INFO("analytic " << a.time << " s, SimGrid " << s.time << " s");
  CHECK(rel(a.time, s.time) < 0.01);
#endif
  CHECK(a.time > 0);
}

}  // namespace

TEST_CASE("a GPU sends over NVLink and its NIC at once: neither waits for the other", "[sim][ports]") {
  // 64 MiB to a GPU of the other node (NIC, 400 Gbps) and to one of its own node (NVLink).
  const std::string two =
      "schedule two(size = 64MiB) { buffer a[2] bytes size; init a[0] on 0; init a[1] on 0; expect nothing;"
      " send a[1] from 0 to 4; send a[0] from 0 to 1; }";
  const std::string spec = "nodes:count=2,gpus=4,model=ideal";
  double nic = 2e-6 + 64.0 * (1 << 20) / 50e9, nvlink = 1e-6 + 64.0 * (1 << 20) / 450e9;
  for (Model m : {Model::Analytic
#ifdef STEPGRAPH_HAVE_SIMGRID
                  ,
                  Model::SimGrid
#endif
       }) {
    INFO(model_name(m));
    Timed r = simulate_text(two, 8, spec, m);
    CHECK(rel(r.time, nic) < 0.01);  // the NIC message, as if alone
    // The NVLink message's receive (rank 1) ends as if it were alone too, long before.
    double first = 1e9;
    for (double e : r.ends)
      if (std::isfinite(e) && e > 0) first = std::min(first, e);
    CHECK(rel(first, nvlink) < 0.01);
  }
  agree("NVLink + NIC", two, 8, spec);
}

TEST_CASE("the NICs of a node are independent ports; GPUs behind one NIC share it", "[sim][ports]") {
  // GPUs 0 and 2 use NICs 0 and 1 (4 GPUs, 2 NICs); GPUs 0 and 1 share NIC 0.
  const std::string apart =
      "schedule apart(size = 32MiB) { buffer a[8] bytes size; init a contrib; expect nothing;"
      " send a[0] from 0 to 4; send a[2] from 2 to 6; }";
  const std::string shared =
      "schedule shared(size = 32MiB) { buffer a[8] bytes size; init a contrib; expect nothing;"
      " send a[0] from 0 to 4; send a[1] from 1 to 6; }";
  const std::string spec = "nodes:count=2,gpus=4,nics=2,model=ideal";
  double one = 2e-6 + 32.0 * (1 << 20) / 50e9;
  CHECK(rel(simulate_text(apart, 8, spec, Model::Analytic).time, one) < 0.01);
  CHECK(rel(simulate_text(shared, 8, spec, Model::Analytic).time, 2e-6 + 2 * 32.0 * (1 << 20) / 50e9) < 0.01);
  agree("two NICs", apart, 8, spec);
  agree("one NIC, two GPUs", shared, 8, spec);
}

TEST_CASE("a torus rank sends in several directions at once", "[sim][ports]") {
  // Rank 5 of a 4x4 torus sends to its four neighbours at once: four links, four ports.
  const std::string cross =
      "schedule cross(size = 16MiB) { buffer a[4] bytes size; init a[0] on 5; init a[1] on 5; init a[2] on 5; init a[3] on 5;"
      " expect nothing; send a[0] from 5 to 6; send a[1] from 5 to 4; send a[2] from 5 to 9; send a[3] from 5 to 1; }";
  const std::string spec = "torus:4x4,bw=100Gbps,lat=1us,model=ideal";
  Timed r = simulate_text(cross, 16, spec, Model::Analytic);
  CHECK(rel(r.time, 1e-6 + 16.0 * (1 << 20) / 12.5e9) < 0.01);
  agree("torus directions", cross, 16, spec);
  agree("ring all-reduce on a torus", "", 16, spec, "ring_allreduce");
}

TEST_CASE("what a rank receives shares its receiving port: incasts and folds as in SimGrid", "[sim][ports]") {
  const std::string incast =
      "schedule incast(size = 8MiB) { buffer a[N] bytes size; init a contrib; expect nothing;"
      " for r in 1 .. N { send a[r] from r to 0; } }";
  const std::string star = "star:bw=100Gbps,lat=1us,model=ideal";
  // 7 × 8 MiB through rank 0's link: 4.70 ms, not the 0.67 ms of one message.
  CHECK(rel(simulate_text(incast, 8, star, Model::Analytic).time, 1e-6 + 7 * 8.0 * (1 << 20) / 12.5e9) < 0.01);
  agree("incast", incast, 8, star);
  // The fold message of a non-power-of-two N shares the receiver's link with the partner's.
  for (uint32_t n : {3u, 7u}) {
    agree("recursive doubling N=" + std::to_string(n), "", n, star, "recursive_doubling_allreduce");
    agree("Rabenseifner N=" + std::to_string(n), "", n, star, "rabenseifner_allreduce");
  }
  agree("Bruck N=12", "", 12, star, "bruck_allgather");
}

TEST_CASE("many messages of one pair in flight at once share as one group, exactly as flows", "[sim][ports]") {
  // Every rank sends K 8-byte and K 64-byte chunks to rank 0 at once: 2K flows a pair, of two
  // sizes, that end at different times inside their group (sim/port_sharing.hpp). Rank 0's port is
  // the bottleneck throughout (it has N - 1 times a sender's flows), so it is never idle: the last
  // byte lands after L + every byte / C.
  const std::string gather =
      "schedule gather(K = 16) { buffer a[K] bytes 8; buffer b[K] bytes 64; init a contrib; init b contrib;"
      " for k in 0 .. K { for r in 1 .. N { send a[k] from r to 0 reduce; send b[k] from r to 0 reduce; } } }";
  const std::string star = "star:bw=100Gbps,lat=1us,model=ideal";
  for (uint32_t n : {3u, 16u}) {
    double t = simulate_text(gather, n, star, Model::Analytic).time;
    INFO("N = " << n);
    CHECK(rel(t, 1e-6 + (n - 1) * 16 * 72 / 12.5e9) < 1e-12);
  }
  // Each pair's one 8 MiB message and 64 small ones beside it: the small ones end first, at
  // their share, and the large one's end moves as they leave.
  const std::string mixed =
      "schedule mixed(K = 64) { buffer big[1] bytes 8MiB; buffer s[K] bytes 1KiB; init big contrib; init s contrib;"
      " for r in 1 .. N { send big[0] from r to 0 reduce; } for k in 0 .. K { for r in 1 .. N { send s[k] from r to 0 reduce; } } }";
  agree("mixed sizes in one group", mixed, 4, star);
}
