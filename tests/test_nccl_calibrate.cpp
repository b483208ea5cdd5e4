// Calibration of NCCL's costs (docs/sim.md, "Calibration"): the platform keys nccl_launch,
// nccl_lat and nccl_bw act on exactly the costs they name, in both engines; the fit recovers known
// parameters from a model it is given; `calibrate --nccl-tests` fitted on half of one measured
// all-reduce table predicts the other half and the same machine's other collectives; bad input is
// refused with a located error and exit 2.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "run_command.hpp"
#include "sim/nccl_fit.hpp"
#include "sim_point.hpp"

using namespace sg;
using namespace sg::sim;

namespace {

const std::string kWrapper = std::string(STEPGRAPH_SOURCE_DIR) + "/tests/sim_cases/allreduce_wrapper.sched";
const std::string kTables = std::string(STEPGRAPH_SOURCE_DIR) + "/bench/nccl_accuracy/tables/";

// One all-reduce of `size` over every rank (the wrapper) on `platform`.
PointResult point(const std::string& size, uint32_t n, const std::string& platform, Model m = Model::Analytic) {
  return sgtest::sim_point(kWrapper, n, {{"size", size}}, platform, m);
}

std::string sg_cmd(const std::string& args) { return std::string("'") + STEPGRAPH_BIN + "' " + args; }

}  // namespace

TEST_CASE("the calibration keys act on NCCL's launch, latencies and bandwidth, and nothing else; both engines", "[calibrate][nccl]") {
  // 1 KiB on one H100 node: NCCL's ring with LL, 6.6 us of base latency and 14 hops of 0.6 us.
  PointResult plain = point("1KiB", 8, "dgx-h100:nodes=1");
  CHECK(plain.time_s > (6.6 + 14 * 0.6) * 1e-6);
  CHECK(plain.time_s < (6.6 + 14 * 0.6 + 0.5) * 1e-6);
  // The launch is paid once per call.
  PointResult launched = point("1KiB", 8, "dgx-h100:nodes=1,nccl_launch=10us");
  CHECK(launched.time_s - plain.time_s == Approx(10e-6).margin(1e-9));
  // Doubled latencies: the base and every hop (the NVLink's own 0.6 us is below them now).
  PointResult slow = point("1KiB", 8, "dgx-h100:nodes=1,nccl_lat=2");
  CHECK(slow.time_s - plain.time_s == Approx((6.6 + 14 * 0.6) * 1e-6).epsilon(0.01));
  // Halved bandwidth at 256 MiB on an A100 node (the ring): half the bus bandwidth (the caps
  // bind; the links are faster).
  PointResult full = point("256MiB", 8, "dgx-a100:nodes=1");
  PointResult half = point("256MiB", 8, "dgx-a100:nodes=1,nccl_bw=0.5");
  CHECK(half.busbw == Approx(full.busbw / 2).epsilon(0.03));  // (the latency, a few us, is not halved)
  // A factor above what the links carry: the links' rate, no more.
  PointResult fast = point("256MiB", 8, "dgx-a100:nodes=1,nccl_bw=10");
  CHECK(fast.busbw <= 300 * (1 + 1e-9));
  // SimGrid applies the same calibrated costs.
  for (const char* size : {"1KiB", "64MiB"}) {
    const std::string cal = "dgx-h100:nodes=2,nccl_launch=7us,nccl_lat=1.5,nccl_bw=0.8";
    PointResult a = point(size, 16, cal), b = point(size, 16, cal, Model::SimGrid);
    INFO(size);
    CHECK(b.time_s == Approx(a.time_s).epsilon(0.02));
  }
  // The platform says what it was given (so a calibrated file reads back as it was written).
  CHECK(point("1KiB", 8, "dgx-h100:nodes=1,nccl_lat=2").platform.find("nccl_lat=2") != std::string::npos);
  // A schedule named by the user carries no NCCL costs: the calibration does not touch it.
  PointSpec own;
  own.target = "ring_allreduce";
  own.n = 8;
  own.sets = {{"size", "1MiB"}};
  own.platform = sgtest::platform("dgx-h100:nodes=1");
  PointResult r1 = run_point(own);
  own.platform = sgtest::platform("dgx-h100:nodes=1,nccl_launch=50us,nccl_lat=3,nccl_bw=0.2");
  PointResult r2 = run_point(own);
  REQUIRE(r1.error.empty());
  CHECK(r2.time_s == Approx(r1.time_s));
  // Bad values: located, exit 2.
  sgtest::Ran bad = sgtest::run_command(sg_cmd("sim ring_allreduce -n 8 --platform dgx-h100:nodes=1,nccl_bw=0 2>&1"));
  INFO(bad.out);
  CHECK(bad.rc == 2);
  CHECK(bad.out.find("--platform:1:") != std::string::npos);
  CHECK(bad.out.find("nccl_bw=0: a factor from 0.01 to 100") != std::string::npos);
  sgtest::Ran word = sgtest::run_command(sg_cmd("sim ring_allreduce -n 8 --platform dgx-h100:nodes=1,nccl_lat=fast 2>&1"));
  CHECK(word.rc == 2);
  CHECK(word.out.find("nccl_lat=fast") != std::string::npos);
}

TEST_CASE("the fit recovers the launch, latency and bandwidth of a model it is given", "[calibrate][nccl]") {
  // A model of the shape the simulation has: t = launch + lat · L + bytes / (bw · B), with a
  // floor where the links take over from NCCL's cap.
  const double launch = 12e-6, lat = 0.7, bw = 1.3;
  std::vector<double> L, bytes;
  for (int i = 0; i < 16; ++i) {
    bytes.push_back(std::pow(4.0, i));
    L.push_back(i < 6 ? 15e-6 : i < 11 ? 30e-6 : 25e-6);  // the protocol changes with the size
  }
  auto model = [&](const NcclCalibration& k, std::vector<double>& t, Diagnostics&) {
    t.clear();
    for (size_t i = 0; i < L.size(); ++i) t.push_back(k.launch_s + k.lat * L[i] + bytes[i] / std::min(k.bw * 300e9, 450e9));
    return true;
  };
  std::vector<double> measured;
  Diagnostics diags;
  REQUIRE(model(NcclCalibration{launch, lat, bw}, measured, diags));
  NcclFit fit;
  REQUIRE(fit_nccl_calibration(measured, model, fit, diags));
  CHECK_FALSE(diags.has_errors());
  CHECK(fit.k.launch_s == Approx(launch).epsilon(0.03));
  CHECK(fit.k.lat == Approx(lat).epsilon(0.03));
  CHECK(fit.k.bw == Approx(bw).epsilon(0.03));
  CHECK(fit.rms_log < 0.01);
  CHECK(fit.start_rms_log > 0.1);
  CHECK(fit.simulations < 30);
  // A failing simulation stops the fit with its words.
  auto broken = [](const NcclCalibration&, std::vector<double>&, Diagnostics& d) { return d.fail("no route"); };
  CHECK_FALSE(fit_nccl_calibration(measured, broken, fit, diags));
  CHECK(diags.messages() == "no route");
  // A measured time that is not one.
  std::vector<double> zero = measured;
  zero[3] = 0;
  size_t from = diags.size();
  CHECK_FALSE(fit_nccl_calibration(zero, model, fit, diags));
  CHECK(diags.messages(from) == "a measured time that is not positive");
  diags.clear();

  // With the host's floor: rows measured as max(host, call) give back the host with the rest,
  // profiled out at no extra simulation.
  const double host = 40e-6;
  std::vector<double> floored = measured;
  for (double& m : floored) m = std::max(host, m);
  REQUIRE(std::count_if(measured.begin(), measured.end(), [&](double m) { return m < host; }) >= 3);
  HostFloor hf;
  hf.fit = true;
  hf.host_s = 36e-6;
  NcclFit with_host;
  REQUIRE(fit_nccl_calibration(floored, model, with_host, diags, &hf));
  CHECK(hf.host_s == Approx(host).epsilon(1e-6));
  CHECK_FALSE(hf.kept);
  CHECK(with_host.k.host_s == hf.host_s);
  CHECK(with_host.k.bw == Approx(bw).epsilon(0.03));  // (launch and lat: the floor hides the rows that tell them apart)
  CHECK(with_host.rms_log < 0.01);
  // A host as given is kept, and floors the predictions.
  HostFloor fixed;
  fixed.host_s = 40e-6;
  REQUIRE(fit_nccl_calibration(floored, model, with_host, diags, &fixed));
  CHECK(fixed.host_s == 40e-6);
  CHECK(with_host.rms_log < 0.01);
}

TEST_CASE("the host's floor that fits rows best, and where the rows cannot tell it", "[calibrate][nccl]") {
  bool tells = false;
  // Calls of 10, 20, 50, 100 us measured as 30, 31, 50, 100: the two fastest bounded, at their
  // geometric mean.
  const std::vector<double> call = {10e-6, 20e-6, 50e-6, 100e-6}, meas = {30e-6, 31e-6, 50e-6, 100e-6};
  CHECK(best_host_floor(meas, call, 36e-6, tells) == Approx(std::sqrt(30e-6 * 31e-6)));
  CHECK(tells);
  // Measured as simulated: no row wants a floor; the given 36 us would bound two, so it is
  // lowered just under the fastest call.
  double h = best_host_floor(call, call, 36e-6, tells);
  CHECK_FALSE(tells);
  CHECK(h < 10e-6);
  CHECK(h > 9.99e-6);
  // ... and a given floor under every call stays.
  CHECK(best_host_floor(call, call, 5e-6, tells) == 5e-6);
  // Only small calls may be bounded: a slow third row (say 1 MiB, 50 us simulated, 64 measured)
  // is no host's doing. Free, the floor bounds three rows at 62 us; kept to the first two, which
  // a floor over the third's 50 us call cannot bound alone, it bounds none.
  const std::vector<double> slow = {60e-6, 62e-6, 64e-6, 100e-6};
  CHECK(best_host_floor(slow, call, 36e-6, tells) == Approx(std::cbrt(60e-6 * 62e-6 * 64e-6)));
  CHECK(tells);
  h = best_host_floor(slow, call, 36e-6, tells, {1, 1, 0, 0});
  CHECK_FALSE(tells);
  CHECK(h < 10e-6);
}

TEST_CASE("sim --nccl-tests: a row takes at least the host's time to issue a call (nccl_host), and says so", "[calibrate][nccl]") {
  const std::string ag = "'" + kTables + "h100_8gpu_1node_allgather_together-ring.txt'";
  auto rows = [&](const std::string& platform) {
    sgtest::Ran r = sgtest::run_command("env NCCL_ALGO=Ring " +
                                        sg_cmd("sim --nccl-tests " + ag + " --platform " + platform + " --model analytic --json 2>&1"));
    INFO(r.out);
    REQUIRE(r.rc == 0);
    return nlohmann::json::parse(r.out)["rows"];
  };
  nlohmann::json dflt = rows("dgx-h100:nodes=1"), slow = rows("dgx-h100:nodes=1,nccl_host=80us");
  REQUIRE(dflt.size() == slow.size());
  // 128 B: the GPU's call (NCCL's 10.8 us) is far under the default 36 us: the host's time.
  CHECK(dflt[0]["predicted_us"].get<double>() == Approx(36.0));
  CHECK(dflt[0]["host_bound"] == true);
  CHECK(slow[0]["predicted_us"].get<double>() == Approx(80.0));
  size_t bound = 0;
  for (size_t i = 0; i < dflt.size(); ++i) {
    double d = dflt[i]["predicted_us"].get<double>(), s = slow[i]["predicted_us"].get<double>();
    INFO("row " << i);
    // The floor is a max: a row above it is the simulated call, the same under either floor.
    CHECK(d >= 36.0 - 1e-9);
    CHECK(s == Approx(std::max(80.0, d)).epsilon(1e-9));
    if (!dflt[i]["host_bound"].get<bool>()) CHECK(d > 36.0);
    bound += dflt[i]["host_bound"].get<bool>() ? 1 : 0;
  }
  CHECK(bound > 0);
  CHECK(bound < dflt.size());  // the large calls are the GPU's
  // A bad platform: one located error, before any row, exit 2.
  sgtest::Ran bad = sgtest::run_command(sg_cmd("sim --nccl-tests " + ag + " --platform dgx-h100:nodes=1,nccl_host=abc 2>&1"));
  INFO(bad.out);
  CHECK(bad.rc == 2);
  CHECK(bad.out.find("--platform:1:28: error: dgx-h100: nccl_host=abc") != std::string::npos);
  CHECK(bad.out.find("measured us") == std::string::npos);
}

TEST_CASE("calibrate --nccl-tests: fitted on half of one all-reduce table, the other half and the other collectives held out",
          "[calibrate][nccl]") {
  const std::string out = "/tmp/stepgraph_calibration_" + std::to_string(getpid()) + ".platform";
  const std::string ring = "env NCCL_ALGO=Ring ";
  sgtest::Ran r = sgtest::run_command(
      ring + sg_cmd("calibrate --nccl-tests '" + kTables + "h100_8gpu_1node_allreduce_together-ring.txt' '" + kTables +
                    "h100_8gpu_1node_allgather_together-ring.txt' '" + kTables +
                    "h100_8gpu_1node_reducescatter_together-ring.txt' --platform dgx-h100:nodes=1 -o " + out + " --json 2>&1"));
  INFO(r.out);
  REQUIRE(r.rc == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["fitted"]["rows"] == 16);  // the even rows of 31
  CHECK(j["fitted"]["rms_log_error_after"].get<double>() <= j["fitted"]["rms_log_error_before"].get<double>());
  REQUIRE(j["held_out"].size() == 3);
  // The all-reduce's odd rows: within 5 % on both sides of 1 MiB (the host's floor, nccl_host,
  // was chosen from this table's small calls, so below 1 MiB it is close before the fit too).
  const nlohmann::json& ar = j["held_out"][0];
  CHECK(ar["rows"] == "odd rows");
  CHECK(std::fabs(ar["after"]["below_1MiB"]["geomean_error"].get<double>()) < 0.05);
  CHECK(std::fabs(ar["after"]["from_1MiB"]["geomean_error"].get<double>()) < 0.05);
  // The host's floor, fitted on the all-reduce's small calls (37.4 us).
  CHECK(j["fitted"]["nccl_host"] == "fitted");
  CHECK(j["fitted"]["nccl_host_us"].get<double>() > 35);
  CHECK(j["fitted"]["nccl_host_us"].get<double>() < 40);
  // The all-gather and reduce-scatter, never seen by the fit: within 5 % from 1 MiB up; below it
  // within 7 % (+5.4 %, +6.3 %: their small calls take 34.7 us on this machine, the all-reduce's
  // 36-37 us).
  for (int t : {1, 2}) {
    const nlohmann::json& h = j["held_out"][t];
    INFO(h.dump());
    CHECK(std::fabs(h["after"]["from_1MiB"]["geomean_error"].get<double>()) < 0.05);
    CHECK(std::fabs(h["after"]["below_1MiB"]["geomean_error"].get<double>()) < 0.07);
  }
  // The file: comments, then the platform with the fitted keys; sim reads it back.
  std::ifstream f(out);
  std::stringstream text;
  text << f.rdbuf();
  CHECK(text.str().rfind("# stepgraph calibrate --nccl-tests", 0) == 0);
  CHECK(text.str().find(",nccl_launch=") != std::string::npos);
  sgtest::Ran back =
      sgtest::run_command(ring + sg_cmd("sim --nccl-tests '" + kTables + "h100_8gpu_1node_allgather_together-ring.txt' --platform @" + out +
                                        " --model analytic --json 2>&1"));
  INFO(back.out);
  REQUIRE(back.rc == 0);
  nlohmann::json b = nlohmann::json::parse(back.out);
  CHECK(b["from_1MiB"]["geomean_error"].get<double>() ==
        Approx(j["held_out"][1]["after"]["from_1MiB"]["geomean_error"].get<double>()).margin(1e-9));
  std::remove(out.c_str());
}

TEST_CASE("calibrate --nccl-tests refuses what it cannot fit, with located errors and exit 2", "[calibrate][nccl]") {
  const std::string ar = "'" + kTables + "h100_8gpu_1node_allreduce_together-ring.txt'";
  auto run = [](const std::string& args) { return sgtest::run_command(sg_cmd("calibrate " + args + " -o /dev/null 2>&1")); };
  sgtest::Ran no_platform = run("--nccl-tests " + ar);
  CHECK(no_platform.rc == 2);
  CHECK(no_platform.out.find("needs --platform") != std::string::npos);
  sgtest::Ran unknown = run("--nccl-tests " + ar + " --platform dgx-h900:nodes=1");
  INFO(unknown.out);
  CHECK(unknown.rc == 2);
  CHECK(unknown.out.find("--platform:1:1: error:") != std::string::npos);
  sgtest::Ran star = run("--nccl-tests " + ar + " --platform star:bw=10Gbps");
  CHECK(star.rc == 2);
  CHECK(star.out.find("a preset or a nodes: platform") != std::string::npos);
  sgtest::Ran twice = run("--nccl-tests " + ar + " --platform dgx-h100:nodes=1,nccl_lat=2");
  CHECK(twice.rc == 2);
  CHECK(twice.out.find("already holds a calibration") != std::string::npos);
  // A table whose header does not say its collective: located; FILE:COLLECTIVE says it.
  const std::string sophia = "'" + kTables + "a100_8gpu_2node_allreduce_alcf-sophia-hdr.txt";
  sgtest::Ran unnamed = run("--nccl-tests " + sophia + "' --platform dgx-a100:nodes=2");
  CHECK(unnamed.rc == 2);
  CHECK(unnamed.out.find("a100_8gpu_2node_allreduce_alcf-sophia-hdr.txt:1:1: error: no \"# Collective test starting") != std::string::npos);
  sgtest::Ran named = run("--nccl-tests " + sophia + ":all_reduce' --platform dgx-a100:nodes=2");
  INFO(named.out);
  CHECK(named.rc == 0);
  // A malformed row: its line and column.
  const std::string bad = "/tmp/stepgraph_calibrate_bad_" + std::to_string(getpid()) + ".txt";
  sgtest::write_file(bad,
                     "# Collective test starting: all_reduce_perf\n        1024           256     float     sum      -1    12.5x   0.08    "
                     "0.15       0\n");
  sgtest::Ran m = run("--nccl-tests " + bad + " -n 8 --platform dgx-h100:nodes=1");
  CHECK(m.rc == 2);
  CHECK(m.out.find(bad + ":2:57: error:") != std::string::npos);
  std::remove(bad.c_str());
  // Too few rows to fit three parameters.
  const std::string few = "/tmp/stepgraph_calibrate_few_" + std::to_string(getpid()) + ".txt";
  sgtest::write_file(
      few,
      "# Collective test starting: all_reduce_perf\n        1024           256     float     sum      -1    12.5   0.08    0.15       0\n");
  sgtest::Ran f = run("--nccl-tests " + few + " -n 8 --platform dgx-h100:nodes=1");
  CHECK(f.rc == 2);
  CHECK(f.out.find("6 rows at least") != std::string::npos);
  std::remove(few.c_str());
  sgtest::Ran missing = run("--nccl-tests /nonexistent.txt --platform dgx-h100:nodes=1");
  CHECK(missing.rc == 2);
}
