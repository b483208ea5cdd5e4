// What `sim` reports, held together: the overlap line comes from the critical path's own segments
// (they add up to the run's time, and a rank's exposed communication never exceeds its
// communication); links are ranked by utilisation; algbw and busbw only for one collective over
// every rank, collectives over sub-groups get a breakdown of their own; attention gets model
// TFLOP/s and MFU; a deadlock has no time and names the protocol its stuck sends use; one network
// model whatever the platform is called; -n means the same as in check; --set per target.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "run_command.hpp"
#include "sim/point.hpp"
#include "sim_point.hpp"

using namespace sg;
using namespace sg::sim;

namespace {

using sgtest::sim_point;

std::string sg_cmd(const std::string& args) { return "'" STEPGRAPH_BIN "' " + args; }

}  // namespace

TEST_CASE("the overlap line and the critical path are one account", "[sim][metrics]") {
  for (auto [target, n, sets] : std::vector<std::tuple<std::string, uint32_t, std::vector<std::pair<std::string, std::string>>>>{
           {"dp_bucketed_step", 8, {{"buckets", "4"}}},
           {"zigzag_ring_attention", 8, {{"seq", "16K"}}},
           {"tp_backward", 8, {}},
           {"ring_allreduce", 8, {}}}) {
    INFO(target);
    PointResult r = sim_point(target, n, sets);
    REQUIRE(r.completed);
    // The critical path's segments add up to the run (step end times are kept in single
    // precision at scale: 1e-6 relative).
    double eps = 1e-6 * r.time_s;
    CHECK(std::fabs(r.cp_local_s + r.cp_comm_s + r.cp_sync_s - r.time_s) <= eps);
    // What of the slowest rank's communication is on the path cannot exceed its communication.
    CHECK(r.exposed_s <= r.comm_s + eps);
    CHECK(r.exposed_s <= r.cp_comm_s + eps);
    CHECK(r.overlap_s <= std::min(r.comm_s, r.compute_s) + eps);
    nlohmann::json j;
    to_json(j, r);
    CHECK(j["overlap"]["comm_off_critical_path_s"].get<double>() == Approx(std::max(0.0, r.comm_s - r.exposed_s)));
  }
  // The zigzag ring on GPU nodes waits for its messages most of the time: the overlap line says
  // so (it said "100 % hidden" before it was computed from the critical path).
  PointResult z = sim_point("zigzag_ring_attention", 32, {{"seq", "128K"}}, "nodes:count=4,gpus=8,speed=400Tf,model=ideal");
  CHECK(z.cp_comm_s > 0.5 * z.time_s);
  CHECK(z.comm_s - z.exposed_s < 0.5 * z.comm_s);
}

TEST_CASE("the busiest links are ranked by utilisation, bytes beside it", "[sim][metrics]") {
  PointResult z = sim_point("zigzag_ring_attention", 32, {{"seq", "128K"}}, "nodes:count=4,gpus=8,speed=400Tf,model=ideal");
  REQUIRE(!z.links_json.empty());
  double prev = 2;
  for (const auto& l : z.links_json) {
    CHECK(l.at("busy").get<double>() <= prev);
    prev = l.at("busy").get<double>();
  }
  // The NICs carry the ring's inter-node hops at ~100 %: they come first, not the NVLinks.
  CHECK(z.links_json[0].at("link").get<std::string>().find("nic") != std::string::npos);
  CHECK(z.links_json[0].at("busy").get<double>() > 0.9);
}

TEST_CASE("algbw and busbw only for one collective over every rank", "[sim][metrics]") {
  PointResult ring = sim_point("ring_allreduce", 8);
  CHECK(ring.world);
  CHECK(ring.busbw > 0);
  CHECK(ring.factor_name == "2(N-1)/N");
  // A training step (compute, its own all-reduce), tensor-parallel sub-groups: no nccl-tests figures.
  for (const char* t : {"dp_bucketed_step", "tp_backward"}) {
    PointResult r = sim_point(t, 8);
    CHECK_FALSE(r.world);
    nlohmann::json j;
    to_json(j, r);
    CHECK(j["busbw_GBps"].is_null());
    CHECK(j["size_bytes"].is_null());
  }
  // Collectives over sub-groups (RingX's all-reduces and broadcasts) get a breakdown of their own:
  // per kind of instance, how many, their time and bus bandwidth.
  PointResult x = sim_point("ringx2_attention", 4, {{"seq", "4K"}});
  CHECK_FALSE(x.world);
  REQUIRE(!x.collectives_json.empty());
  for (const auto& c : x.collectives_json) {
    CHECK(c.at("instances").get<uint64_t>() >= 1);
    CHECK(c.at("mean_s").get<double>() > 0);
    CHECK(c.at("max_s").get<double>() >= c.at("mean_s").get<double>() * (1 - 1e-12));
  }
}

TEST_CASE("on GPU nodes collectives expand as NCCL's, elsewhere as Open MPI's", "[sim][metrics][nccl]") {
  const std::string wrapper = std::string(STEPGRAPH_SOURCE_DIR) + "/tests/sim_cases/allreduce_wrapper.sched";
  PointResult gpu = sim_point(wrapper, 16, {{"size", "256MiB"}}, "nodes:count=2,gpus=8");
  REQUIRE(!gpu.collectives_json.empty());
  CHECK(gpu.collectives_json[0].at("collective").get<std::string>().find("nccl_ring_allreduce") != std::string::npos);
  CHECK(gpu.world);
  // NCCL's modelled bus bandwidth bounds it (8 channels of 48 GB/s, the NICs' PCIe path), below
  // the links' own bound (8 NICs of 50 GB/s).
  CHECK(gpu.busbw > 300);
  CHECK(gpu.busbw <= 384);
  PointResult cpu = sim_point(wrapper, 16, {{"size", "256MiB"}});
  REQUIRE(!cpu.collectives_json.empty());
  CHECK(cpu.collectives_json[0].at("collective").get<std::string>().find("Open MPI") != std::string::npos);
}

TEST_CASE("attention reports model TFLOP/s and MFU against the platform's peak", "[sim][metrics]") {
  PointResult z =
      sim_point("zigzag_ring_attention", 8, {{"seq", "16384"}, {"heads", "8"}, {"dim", "128"}}, "nodes:count=1,gpus=8,speed=400Tf");
  double flops = 4.0 * 8 * 16384.0 * 16384 * 128 / 2;  // causal by default
  CHECK(z.model_flops == Approx(flops));
  CHECK(z.tflops == Approx(flops / z.time_s / 1e12));
  CHECK(z.mfu == Approx(flops / (z.time_s * 400e12 * 8)));
  CHECK(z.mfu > 0);
  CHECK(z.mfu <= 1 + 1e-9);
}

TEST_CASE("a deadlocked simulation prints no time, and its stuck sends are rendezvous", "[sim][metrics][deadlock]") {
  // Two ranks that both send 8 MiB first: above the eager limit, so both wait for a receive.
  std::string text =
      "schedule both_send(size = 8MiB) { buffer a[2] bytes size; init a owned; expect allgather(a);"
      " on r in 0 .. 2 { send a[r] to 1 - r; recv a[1 - r] from 1 - r; } }";
  std::string path = "/tmp/stepgraph_test_metrics_both_send_" + std::to_string(::getpid()) + ".sched";
  REQUIRE(sgtest::run_command("printf '%s' '" + text + "' > " + path).rc == 0);
  auto r = sgtest::run_command(sg_cmd("sim " + path + " -n 2 2>&1"));
  CHECK(r.rc == 1);
  CHECK(r.out.find("did not finish") != std::string::npos);
  CHECK(r.out.find("  time ") == std::string::npos);
  CHECK(r.out.find("algbw") == std::string::npos);
  CHECK(r.out.find("(rendezvous)") != std::string::npos);
  CHECK(r.out.find("(eager)") == std::string::npos);
  auto j = sgtest::run_command(sg_cmd("sim " + path + " -n 2 --json 2>/dev/null"));
  nlohmann::json o = nlohmann::json::parse(j.out);
  CHECK(o["time_s"].is_null());
  CHECK(o["busbw_GBps"].is_null());
  std::remove(path.c_str());
}

TEST_CASE("naming a platform does not change the network model; the header says which", "[sim][metrics][model]") {
  auto d = sgtest::run_command(sg_cmd("sim ring_allreduce -n 8 --json 2>/dev/null"));
  auto e = sgtest::run_command(sg_cmd("sim ring_allreduce -n 8 --platform star:bw=100Gbps --json 2>/dev/null"));
  nlohmann::json a = nlohmann::json::parse(d.out), b = nlohmann::json::parse(e.out);
  CHECK(a["time_s"].get<double>() == b["time_s"].get<double>());
  CHECK(b["network_model"] == "ideal");
  auto lv = sgtest::run_command(sg_cmd("sim ring_allreduce -n 8 --platform star:bw=100Gbps,model=lv08 --json 2>/dev/null"));
  CHECK(nlohmann::json::parse(lv.out)["time_s"].get<double>() > a["time_s"].get<double>());  // SimGrid's TCP factors, asked for
  auto t = sgtest::run_command(sg_cmd("sim ring_allreduce -n 8 --platform nodes:count=1,gpus=8 2>/dev/null"));
  CHECK(t.out.find("network model ideal") != std::string::npos);
}

TEST_CASE("-n a..b means every count in sim as in check; a..b:x2 doubles", "[sim][cli]") {
  auto every = sgtest::run_command(sg_cmd("sim ring_allreduce -n 4..6 --model analytic --csv - 2>/dev/null"));
  CHECK(std::count(every.out.begin(), every.out.end(), '\n') == 1 + 3);
  auto dbl = sgtest::run_command(sg_cmd("sim ring_allreduce -n 4..16:x2 --model analytic --csv - 2>/dev/null"));
  CHECK(std::count(dbl.out.begin(), dbl.out.end(), '\n') == 1 + 3);
  auto chk = sgtest::run_command(sg_cmd("check ring_allreduce -n 4..16:x2 -q 2>&1"));
  CHECK(chk.rc == 0);
  CHECK(sgtest::run_command(sg_cmd("sim ring_allreduce -n 4..16:x3 2>/dev/null")).rc == 2);
}

TEST_CASE("--set goes to the targets that take it, or to one named target", "[sim][cli][set]") {
  // ring_allreduce has no `seq`: left out for it, with a note; zigzag takes it.
  auto r = sgtest::run_command(sg_cmd("sim ring_allreduce,zigzag_ring_attention -n 4 --set seq=4K --model analytic 2>&1"));
  CHECK(r.rc == 0);
  CHECK(r.out.find("note: --set seq=4K left out for ring_allreduce") != std::string::npos);
  auto one = sgtest::run_command(
      sg_cmd("sim ring_allreduce,zigzag_ring_attention -n 4 --set zigzag_ring_attention:seq=4K --set ring_allreduce:size=1MiB --model "
             "analytic --json 2>/dev/null"));
  REQUIRE(one.rc == 0);
  nlohmann::json a = nlohmann::json::parse(one.out);
  CHECK(a[0]["size_bytes"] == 1048576);
  // One target: a key it does not take is still an error (located, exit 2).
  CHECK(sgtest::run_command(sg_cmd("sim ring_allreduce -n 4 --set seq=4K 2>/dev/null")).rc == 2);
  CHECK(sgtest::run_command(sg_cmd("sim ring_allreduce -n 4 --set nosuch:size=1MiB 2>/dev/null")).rc == 2);
}

TEST_CASE("sim says what the check before the run found: ok at this N, at a smaller N, or not checked and why", "[sim][precheck]") {
  auto sim_json = [](const std::string& args) {
    sgtest::Ran r = sgtest::run_command(sg_cmd("sim " + args + " --model analytic --json 2>/dev/null"));
    INFO(args << "\n" << r.out);
    REQUIRE(r.rc == 0);
    return nlohmann::json::parse(r.out);
  };
  auto a = sim_json("ring_allreduce -n 8 --set size=1MiB");
  CHECK(a["check"]["state"] == "ok");
  CHECK(a["check"]["n"] == 8);
  CHECK(a["params"]["size"] == 1048576);
  // Past 64 ranks: verified at the largest of 64, 32, … the schedule accepts.
  auto b = sim_json("ring_allreduce -n 256 --set size=1MiB");
  CHECK(b["check"]["state"] == "ok");
  CHECK(b["check"]["n"] == 64);
  // A schedule that accepts no N of the check's: not checked, and why.
  const std::string f = "/tmp/stepgraph_precheck_" + std::to_string(getpid()) + ".sched";
  sgtest::write_file(
      f,
      "schedule big() {\n  require N == 128, \"128 ranks\";\n  buffer a[N] bytes 64;\n  init a owned;\n  expect allgather(a);\n"
      "  for s in 0 .. N - 1 { for r in 0 .. N { send a[(r - s) % N] from r to (r + 1) % N; } }\n}\n");
  auto c = sim_json(f + " -n 128");
  CHECK(c["check"]["state"] == "not checked");
  CHECK(c["check"]["why_not"] == "the schedule accepts none of N = 64, 32, 16, 8, 4, 2");
  sgtest::Ran t = sgtest::run_command(sg_cmd("sim " + f + " -n 128 --model analytic 2>&1"));
  CHECK(t.out.find("  not checked: the schedule accepts none of N = 64, 32, 16, 8, 4, 2") != std::string::npos);
  CHECK(t.out.find("  parameters: ") == std::string::npos);  // it has none
  std::remove(f.c_str());
}

TEST_CASE("the critical path counts a phase's hops once, and a tie is said as one", "[sim][metrics]") {
  // Issue 28: a 7-hop phase read "recv (14 steps)" (its sends and receives together), and two
  // equal times "1.00x faster than".
  sgtest::Ran r = sgtest::run_command(sg_cmd("sim ring_allreduce -n 8 --model analytic 2>&1"));
  INFO(r.out);
  REQUIRE(r.rc == 0);
  size_t first = r.out.find("recv (7 steps)");
  REQUIRE(first != std::string::npos);
  CHECK(r.out.find("recv (7 steps)", first + 1) != std::string::npos);
  CHECK(r.out.find("14 steps") == std::string::npos);
  // The same schedule under another file name: the same time.
  const std::string copy = "/tmp/stepgraph_tie_" + std::to_string(getpid()) + ".sched";
  REQUIRE(std::system(("cp '" STEPGRAPH_SOURCE_DIR "/schedules/ring_allreduce.sched' '" + copy + "'").c_str()) == 0);
  sgtest::Ran t = sgtest::run_command(sg_cmd("sim ring_allreduce," + copy + " -n 8 --model analytic 2>&1"));
  INFO(t.out);
  CHECK(t.out.find(", as fast as ") != std::string::npos);
  CHECK(t.out.find("(within 0.5%)") != std::string::npos);
  CHECK(t.out.find("1.00x faster") == std::string::npos);
  std::remove(copy.c_str());
}

TEST_CASE("sim on a preset follows NCCL's choice for that machine, and honours NCCL_ALGO and NCCL_PROTO", "[sim][presets][nccl]") {
  // One all-reduce step: expanded as NCCL would run it on the platform.
  const std::string ar = "/tmp/stepgraph_nccl_ar_" + std::to_string(getpid()) + ".sched";
  sgtest::write_file(ar,
                     "schedule ar(size = 1MiB) {\n  buffer data[N] bytes size / N;\n  init data contrib;\n  expect allreduce(data);\n"
                     "  allreduce data over world;\n}\n");
  auto run = [&](const std::string& env, const std::string& args) {
    std::string a = args;
    if (a.rfind("AR ", 0) == 0) a = ar + a.substr(2);
    return sgtest::run_command(env + " " + sg_cmd("sim " + a + " --model analytic 2>&1"));
  };
  // A 2-node DGX A100: NCCL's choice is reported with the machine's GPUs.
  sgtest::Ran a = run("", "AR -n 16 --platform dgx-a100:nodes=2");
  INFO(a.out);
  REQUIRE(a.rc == 0);
  CHECK(a.out.find("of 8 A100s") != std::string::npos);
  // NCCL_ALGO=Ring: the ring where the tree would win across 4 nodes at 1 MiB.
  sgtest::Ran free = run("", "AR -n 32 --platform dgx-h100:nodes=4");
  sgtest::Ran ring = run("NCCL_ALGO=Ring", "AR -n 32 --platform dgx-h100:nodes=4");
  INFO(free.out << "\n" << ring.out);
  REQUIRE(free.rc == 0);
  REQUIRE(ring.rc == 0);
  CHECK(free.out.find("picks tree/") != std::string::npos);
  CHECK(ring.out.find("picks ring/") != std::string::npos);
  CHECK(ring.out.find("picks tree/") == std::string::npos);
  sgtest::Ran simple = run("NCCL_PROTO=Simple", "AR -n 32 --platform dgx-h100:nodes=4");
  CHECK(simple.out.find("/Simple on") != std::string::npos);
  // What NCCL refuses, refused here with the token: exit 2.
  sgtest::Ran bad = run("env 'NCCL_ALGO=ring, tree'", "AR -n 8 --platform dgx-h100:nodes=1");
  INFO(bad.out);
  CHECK(bad.rc == 2);
  CHECK(bad.out.find("NCCL_ALGO:1:6: error: Unrecognized element token \" tree\"") != std::string::npos);
  CHECK(bad.out.find("^") != std::string::npos);
  // Nothing the model has left for the kind: NCCL would fail the call, and the point is refused.
  sgtest::Ran nvls = run("NCCL_ALGO=NVLS", "AR -n 32 --platform dgx-h100:nodes=4");
  INFO(nvls.out);
  CHECK(nvls.rc == 2);
  CHECK(nvls.out.find("NCCL itself would fail the call") != std::string::npos);
  std::remove(ar.c_str());
}

TEST_CASE("sim --nccl-tests: a measured table read, each size predicted, the error per row and overall", "[sim][nccl-tests]") {
  const std::string dir = STEPGRAPH_SOURCE_DIR "/bench/nccl_accuracy/tables/";
  sgtest::Ran r = sgtest::run_command(sg_cmd("sim --nccl-tests '" + dir + "h100_8gpu_1node_allreduce_together-ring.txt'" +
                                             " --platform dgx-h100:nodes=1 --model analytic --json 2>&1"));
  INFO(r.out);
  REQUIRE(r.rc == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["collective"] == "all_reduce");
  CHECK(j["ranks"] == 8);
  CHECK(j["hosts"] == 1);
  CHECK(j["device"] == "NVIDIA H100 80GB HBM3");
  REQUIRE(j["rows"].size() == 31);  // 8 B to 8 GiB
  CHECK(j["rows"][0]["size_bytes"] == 8);
  CHECK(j["rows"][0]["measured_us"] == Approx(37.33));
  double e = j["rows"][30]["error"].get<double>();
  CHECK(e == Approx(j["rows"][30]["predicted_us"].get<double>() / 40848.80 - 1));
  CHECK(j["below_1MiB"]["mean_abs_error"].get<double>() > 0);
  CHECK(j["from_1MiB"]["geomean_error"].is_number());
  // A header without the collective: --nccl-collective says it; without it, a located error.
  sgtest::Ran no = sgtest::run_command(sg_cmd(
      "sim --nccl-tests '" + dir + "a100_8gpu_2node_allreduce_alcf-sophia-hdr.txt' --platform dgx-a100:nodes=2 --model analytic 2>&1"));
  CHECK(no.rc == 2);
  CHECK(no.out.find("a100_8gpu_2node_allreduce_alcf-sophia-hdr.txt:1:1: error: no \"# Collective test starting: …\" line") !=
        std::string::npos);
  sgtest::Ran yes = sgtest::run_command(sg_cmd("sim --nccl-tests '" + dir +
                                               "a100_8gpu_2node_allreduce_alcf-sophia-hdr.txt' --nccl-collective all_reduce "
                                               "--platform dgx-a100:nodes=2 --model analytic 2>&1"));
  INFO(yes.out);
  CHECK(yes.rc == 0);
  CHECK(yes.out.find("below 1 MiB (") != std::string::npos);
  // A malformed row: its line and column, exit 2.
  const std::string bad = "/tmp/stepgraph_nccl_bad_" + std::to_string(getpid()) + ".txt";
  sgtest::write_file(bad,
                     "# Collective test starting: all_reduce_perf\n#  Rank  0 Group  0 Pid 1 on h device  0 [0x07] GPU\n"
                     "        1024           256     float     sum      -1    12.5x   0.08    0.15       0\n");
  sgtest::Ran m = sgtest::run_command(sg_cmd("sim --nccl-tests " + bad + " -n 8 2>&1"));
  INFO(m.out);
  CHECK(m.rc == 2);
  CHECK(m.out.find(bad + ":3:57: error: the time (us) of the out-of-place run is not a number: '12.5x'") != std::string::npos);
  std::remove(bad.c_str());
  sgtest::Ran none = sgtest::run_command(sg_cmd("sim --nccl-tests /nonexistent.txt 2>&1"));
  CHECK(none.rc == 2);
  sgtest::Ran target_missing = sgtest::run_command(sg_cmd("sim -n 8 2>&1"));
  CHECK(target_missing.rc == 2);
  CHECK(target_missing.out.find("sim needs a TARGET") != std::string::npos);
}

TEST_CASE("NCCL's costs in simulated time: its base and hop latencies, its bus bandwidth, its FIFO; both engines", "[sim][nccl][cost]") {
  const std::string wrapper = std::string(STEPGRAPH_SOURCE_DIR) + "/tests/sim_cases/allreduce_wrapper.sched";
  // 1 KiB over one node of 8 H100s: NCCL's ring with LL on one channel. NCCL's latency is
  // 6.6 + 14 × 0.6 us (a preset's NVLink hop is NCCL's 0.6 us), plus the bytes.
  PointResult small = sim_point(wrapper, 8, {{"size", "1KiB"}}, "dgx-h100:nodes=1");
  CHECK(small.time_s > (6.6 + 14 * 0.6) * 1e-6);
  CHECK(small.time_s < (6.6 + 14 * 0.6 + 0.5) * 1e-6);
  // 256 MiB on an A100 node (no NVLS): the ring with Simple on 24 channels, at NCCL's modelled
  // bus bandwidth (12 graph channels of 20 GB/s, shared by the 24), not at the NVLinks' 300 GB/s.
  PointResult big = sim_point(wrapper, 8, {{"size", "256MiB"}}, "dgx-a100:nodes=1");
  CHECK(big.busbw > 220);
  CHECK(big.busbw <= 240 * (1 + 1e-9));
  // On an H100 node NCCL takes NVLS there: 476 GB/s in its model, above the NVLinks' 450, which
  // the switch's reduce and multicast allow (each GPU's link carries (N+1)/N of the vector, not
  // the ring's 2(N-1)/N: the messages' wire bytes); NCCL's own estimate at 1 GiB: 3972.6 us.
  PointResult nvls = sim_point(wrapper, 8, {{"size", "1GiB"}}, "dgx-h100:nodes=1");
  CHECK(nvls.expansions.at(0).find("nccl_nvls_allreduce") != std::string::npos);
  CHECK(nvls.time_s == Approx(3972.6e-6).epsilon(0.03));
  CHECK(nvls.busbw > 450);
  CHECK(nvls.busbw <= 476 * (1 + 1e-9));
  PointResult nvls_sg = sim_point(wrapper, 8, {{"size", "64MiB"}}, "dgx-h100:nodes=1", Model::SimGrid);
  CHECK(nvls_sg.time_s == Approx(sim_point(wrapper, 8, {{"size", "64MiB"}}, "dgx-h100:nodes=1").time_s).epsilon(0.02));
  // SimGrid applies the same costs: the two engines agree where links carry what the caps allow.
  for (const char* size : {"1KiB", "1MiB", "64MiB"}) {
    PointResult a = sim_point(wrapper, 16, {{"size", size}}, "dgx-h100:nodes=2");
    PointResult b = sim_point(wrapper, 16, {{"size", size}}, "dgx-h100:nodes=2", Model::SimGrid);
    INFO(size);
    CHECK(b.time_s == Approx(a.time_s).epsilon(0.02));
  }
  // The FIFO: a call of many chunks keeps at most the window's messages on each pair's wire, so
  // the time still follows the bandwidth (and the simulation stays linear in the messages).
  PointResult huge = sim_point(wrapper, 8, {{"size", "4GiB"}}, "dgx-a100:nodes=1");
  CHECK(huge.busbw > 225);  // NCCL's own estimate: 239
  CHECK(huge.busbw <= 240 * (1 + 1e-9));
  // A schedule named by --algo is the schedule as written: no NCCL costs, the links' rate.
  PointSpec named;
  named.target = wrapper;
  named.n = 8;
  named.sets = {{"size", "256MiB"}};
  named.platform = sgtest::platform("dgx-h100:nodes=1");
  named.options.model = Model::Analytic;
  Diagnostics diags;
  REQUIRE(parse_algo_choice("allreduce=nccl_ring", named.algo, diags));
  PointResult asis = run_point(named);
  INFO(asis.error << asis.diag);
  REQUIRE(asis.error.empty());
  CHECK(asis.busbw > 400);
}
