// `stepgraph exec` under mpiexec: real processes, real buffers. Every library schedule gives
// exactly the postcondition's numbers at 2, 3, 4 and 8 processes (oversubscribed on 2 cores);
// the failure cases end as the contract says (a stall names the step and source line, exit 3;
// a wrong result counts its elements, exit 1; bad input is refused once, exit 2).
#include <sys/wait.h>

#include <unistd.h>

#include <catch2/catch.hpp>

#include <fstream>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>
#include "mpi_launch.hpp"
#include "run_command.hpp"

namespace {

// train_step (schedules/train_step.sched) at a shape that runs in milliseconds: tp = pp = 2, so
// N = 4 is one data-parallel replica and N = 8 two.
const std::string kSmallTrainStep =
    "--set tp=2 --set pp=2 --set layers=2 --set microbatches=2 --set buckets=1 --set seq=32 --set hidden=32 --set ffn=64 "
    "--set heads=4 --set kv_heads=2 --set vocab=64";

using sgtest::Ran;

Ran sh(const std::string& cmd, bool with_stderr = false) { return sgtest::run_command(cmd + (with_stderr ? " 2>&1" : " 2>/dev/null")); }

using sgtest::write_file;

const std::string kBin = STEPGRAPH_BIN;
const std::string kSrc = STEPGRAPH_SOURCE_DIR;
const std::string kMpi = sgtest::mpiexec();
using sgtest::have_mpiexec;
using sgtest::temp_path;

Ran exec(int n, const std::string& args, bool with_stderr = false) {
  return sh(kMpi + " -n " + std::to_string(n) + " '" + kBin + "' exec " + args, with_stderr);
}

size_t count(const std::string& s, const std::string& what) {
  size_t k = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++k;
  return k;
}

}  // namespace

TEST_CASE("every library schedule runs under mpiexec, gives exactly the postcondition's numbers and agrees with MPI's own collective",
          "[exec][mpi]") {
  if (!have_mpiexec()) {
    WARN("mpiexec is not installed: exec is not tested");
    return;
  }
  Ran list = sh("'" + kBin + "' list");
  REQUIRE(list.rc == 0);
  std::vector<std::string> names;
  std::istringstream ls(list.out);
  for (std::string line; std::getline(ls, line);)
    if (!line.empty()) names.push_back(line.substr(0, line.find(' ')));
  REQUIRE(names.size() >= 20);
  int compared = 0;
  for (const std::string& name : names) {
    if (name == "dissemination_barrier") continue;  // no data: its own test below
    // The attention variants take seq/heads/dim, not size: test_exec_attention runs them.
    if (name.find("attention") != std::string::npos) continue;
    int ran = 0;
    for (int n : {2, 3, 4, 8}) {
      std::string sets = "--set size=48KiB";
      if (name.rfind("tp_", 0) == 0 || name == "hierarchical_allreduce" || name == "dp_grid_allreduce") sets += " --set mp=2";
      if (name == "dp_bucketed_step" || name.rfind("tp_", 0) == 0) sets += " --set flops=1M";
      if (name == "train_step") sets = kSmallTrainStep;  // no size: a model's shape, tp = pp = 2
      Ran r = exec(n, name + " " + sets + " --check --iters 1 --warmup 0 --timeout 20 --json", true);
      if (r.rc == 2 && r.out.find("unsupported") != std::string::npos) continue;  // its require refuses this N
      INFO(name << " at N = " << n << ":\n" << r.out);
      REQUIRE(r.rc == 0);
      size_t a = r.out.find("[\n"), b = r.out.rfind("\n]");
      REQUIRE(a != std::string::npos);
      REQUIRE(b != std::string::npos);
      auto j = nlohmann::json::parse(r.out.substr(a, b + 2 - a));
      REQUIRE(j.size() == 1);
      CHECK(j[0]["wrong"] == 0);
      CHECK(j[0]["ranks"] == n);
      // MPI's own collective on the same inputs gives the same elements (where the
      // postcondition is one MPI has, over every rank).
      if (j[0]["mpi_agrees"].is_boolean()) {
        CHECK(j[0]["mpi_agrees"] == true);
        ++compared;
      }
      ++ran;
    }
    INFO(name);
    CHECK(ran >= 1);
  }
  CHECK(compared >= 60);  // 20 collectives' schedules, most at all four process counts
}

TEST_CASE("exec's JSON has nccl-tests' keys; a sweep gives one object per size; every type checks exactly, f16 and bf16 too",
          "[exec][mpi]") {
  if (!have_mpiexec()) return;
  Ran r = exec(4, "ring_allreduce --sweep size=1KiB..16KiB --check --compare native --iters 2 --warmup 1 --json");
  REQUIRE(r.rc == 0);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.size() == 5);
  for (const char* k : {"size_bytes", "count", "dtype", "time_us", "algbw_GBps", "busbw_GBps", "wrong", "native_time_us"})
    for (const auto& row : j) CHECK(row.contains(k));
  CHECK(j[0]["size_bytes"] == 1024);
  CHECK(j[0]["count"] == 256);
  CHECK(j[4]["size_bytes"] == 16384);
  CHECK(j[2]["native_time_us"].get<double>() > 0);
  for (const char* t : {"f64", "i32", "i64", "f16", "bf16", "i8"}) {
    Ran x = exec(3, std::string("recursive_halving_reduce_scatter --set size=24KiB --dtype ") + t + " --check --iters 1 --warmup 0 --json");
    INFO(t);
    REQUIRE(x.rc == 0);
    CHECK(nlohmann::json::parse(x.out)[0]["wrong"] == 0);
    CHECK(nlohmann::json::parse(x.out)[0]["dtype"] == t);
    CHECK(nlohmann::json::parse(x.out)[0]["mpi_agrees"] == true);  // MPI's own reduce-scatter, with our f16 / bf16 operator
  }
  // The text table: nccl-tests' columns.
  Ran t = exec(2, "ring_allreduce --set size=4KiB --check --compare native --iters 1 --warmup 0");
  REQUIRE(t.rc == 0);
  for (const char* col : {"size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong", "MPI time", "vs MPI"})
    CHECK(t.out.find(col) != std::string::npos);
}

TEST_CASE("a stalled run names each rank's waiting step, its peer and source line, and exits 3", "[exec][mpi][fail]") {
  if (!have_mpiexec()) return;
  // The check before the run finds the deadlock and refuses it (issue 28), on rank 0 with the
  // verdict and line, exit 1; --allow-defects runs it, and the hang is reported.
  Ran refused = exec(2, kSrc + "/tests/verify_cases/recv_first.sched:bad --timeout 1", true);
  INFO(refused.out);
  CHECK(refused.rc == 1);
  CHECK(count(refused.out, "refused: defect: deadlock (eager sends, verify at N = 2) at ") == 1);
  CHECK(count(refused.out, "exits with code 1: the check before the run found a defect") == 1);
  Ran r = exec(2, kSrc + "/tests/verify_cases/recv_first.sched:bad --timeout 1 --allow-defects", true);
  CHECK(r.rc == 3);
  CHECK(r.out.find("no progress for 1 s") != std::string::npos);
  CHECK(r.out.find("waits on recv a[1] from rank 1 tag 0 at") != std::string::npos);
  CHECK(r.out.find("recv_first.sched:9:5") != std::string::npos);
  CHECK(r.out.find("recv a[1 - r] from 1 - r;") != std::string::npos);
  // The fixed program runs.
  CHECK(exec(2, kSrc + "/tests/verify_cases/recv_first.sched:fixed --check --iters 1").rc == 0);
}

TEST_CASE("what verify calls a size mismatch is what MPI itself refuses: the truncating run fails, the fixed one runs",
          "[exec][mpi][fail]") {
  if (!have_mpiexec()) return;
  // Held against the MPI library, not against stepgraph's own verdict: size_mismatch.sched:bad
  // (verify: unmatched) takes 128 bytes into a 64-byte receive, which MPI reports as truncation
  // (Open MPI: "MPI_ERR_TRUNCATE: message truncated", MPICH: "Message truncated").
  Ran bad = exec(2, kSrc + "/tests/verify_cases/size_mismatch.sched:bad --iters 1 --warmup 0 --allow-defects", true);
  INFO(bad.out);
  CHECK(bad.rc != 0);
  CHECK(bad.out.find("essage truncated") != std::string::npos);
  Ran fixed = exec(2, kSrc + "/tests/verify_cases/size_mismatch.sched:fixed --iters 1 --warmup 0", true);
  INFO(fixed.out);
  CHECK(fixed.rc == 0);
}

// Hidden from test_exec's own run ([.]): CTest runs it alone (test_exec_serial, RUN_SERIAL), since
// the two ranks' computes must take about the same time, which they do not when other tests'
// processes share the 2 cores (a 0.15 s gap became more than 2 s under ctest -j2).
TEST_CASE("a long compute is progress: the wait after it is timed from its end, and a real stall after it is still caught",
          "[exec][mpi][fail][.serial]") {
  if (!have_mpiexec()) return;
  // Rank 0 computes about 4.4 s (1.8e11 flops on the 2-core development machine), rank 1 5 %
  // longer before it sends: rank 0 then waits about 0.2 s. Timed from before its compute (the
  // old timer), that wait looked like 4.6 s without progress (over the 4 s timeout) and the run
  // was aborted. The 4 s leave room for a noisy machine (a 2 s timeout failed once here when the
  // ranks' computes drifted apart under I/O load, a 3 s one once in a clean clone's run).
  const std::string f = temp_path("exec_long_compute.sched");
  write_file(f,
             "schedule slow(flops = 180000000000, reply = 1) {\n  buffer a[2] bytes 64;\n  init a contrib;\n  expect nothing;\n"
             "  on 0 { compute work flops flops reads a[0] writes a[0]; recv a[1] from 1; }\n"
             "  on 1 { compute work flops flops * 21 / 20 reads a[1] writes a[1]; if reply == 1 { send a[1] to 0; } }\n}\n");
  // --timeout 4: the old timer still aborts (4.6 s), and two computes that drift apart on a
  // shared 2-core machine get 3.8 s of room; one drift beyond that (one rank descheduled for
  // seconds: seen once in a clean-clone run) is retried once, since the old bug failed every run.
  Ran ok = exec(2, f + " --iters 1 --warmup 0 --timeout 4", true);
  if (ok.rc != 0 && ok.out.find("no progress") != std::string::npos) ok = exec(2, f + " --iters 1 --warmup 0 --timeout 4", true);
  INFO(ok.out);
  CHECK(ok.rc == 0);
  CHECK(ok.out.find("no progress") == std::string::npos);
  // Rank 1 never sends: rank 0's receive is reported after the timeout, with its line.
  // (The check before the run finds the receive no send matches: run anyway to see the report.)
  Ran stuck = exec(2, f + " --set reply=0 --iters 1 --warmup 0 --timeout 3 --allow-defects", true);
  INFO(stuck.out);
  CHECK(stuck.rc == 3);
  CHECK(stuck.out.find("waits on recv a[1] from rank 1 tag 0 at " + f + ":5:") != std::string::npos);
}

TEST_CASE("a rank that dies takes the job down with a message, not a hang", "[exec][mpi][fail]") {
  if (!have_mpiexec()) return;
  auto t0 = std::chrono::steady_clock::now();
  // (The launcher passes its environment to the processes it starts here: no -x, which is Open MPI's.)
  Ran r = sh("STEPGRAPH_EXEC_DIE=1 " + kMpi + " -n 3 '" + kBin + "' exec ring_allreduce --set size=1MiB --timeout 30", true);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.rc != 0);
  CHECK(r.rc != 124);  // not timeout's: the job ended by itself
  CHECK(s < 25);
  // The launcher names the signal: Open MPI "signal 9", Hydra "KILLED BY SIGNAL: 9".
  std::string low = r.out;
  for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  CHECK((low.find("signal 9") != std::string::npos || low.find("signal: 9") != std::string::npos));
}

TEST_CASE("an MPI error is reported with MPI's own string and the step, exit 3", "[exec][mpi][fail]") {
  if (!have_mpiexec()) return;
  // A wildcard receive of one chunk takes a message of two: MPI truncates.
  std::string f = temp_path("exec_truncate.sched");
  write_file(f,
             "schedule trunc() {\n  buffer a[4] bytes 64;\n  init a contrib;\n  expect nothing;\n"
             "  on 0 { send a[0 .. 2] to 1 tag 3; }\n  on 1 { recv a[0] from any tag 3; }\n}\n");
  Ran r = exec(2, f + " --timeout 10 --allow-defects", true);
  CHECK(r.rc == 3);
  // MPI's own words: Open MPI's MPI_ERR_TRUNCATE, MPICH's "Message truncated".
  CHECK((r.out.find("MPI_ERR_TRUNCATE") != std::string::npos || r.out.find("truncated") != std::string::npos));
  CHECK(r.out.find("recv a[0] from any rank tag 3 at") != std::string::npos);
  // --native-algo: under Open MPI a name it has runs and one it lacks is refused once; under
  // another MPI, which has no such control, it is refused with the reason, never ignored.
  Ran a = exec(2, "ring_allreduce --set size=64KiB --compare native --native-algo allreduce=ring --iters 2", true);
  Ran b = exec(2, "ring_allreduce --native-algo bogus", true);
  CHECK(b.rc == 2);
  if (a.out.find("has no such control") == std::string::npos) {
    CHECK(a.rc == 0);
    CHECK(count(b.out, "no Open MPI collective has an algorithm named 'bogus'") == 1);
  } else {
    CHECK(a.rc == 2);
    CHECK(count(a.out, "--native-algo picks an algorithm of Open MPI's tuned collectives") == 1);
  }
}

TEST_CASE("a wrong result is counted and exits 1; the fixed schedule passes", "[exec][mpi][fail]") {
  if (!have_mpiexec()) return;
  // stderr apart from the JSON: the other rank's message may land in the middle of it.
  std::string err = temp_path("exec_wrong.err");
  Ran bad = sh(kMpi + " -n 2 '" + kBin + "' exec " + kSrc +
               "/tests/verify_cases/doubled_reduce.sched:bad --check --iters 1 --json --allow-defects 2>" + err + "; exit $?");
  CHECK(bad.rc == 1);
  CHECK(sh("grep -c expected " + err).out != "0\n");
  std::remove(err.c_str());
  size_t a = bad.out.find("[\n"), b = bad.out.rfind("\n]");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  auto j = nlohmann::json::parse(bad.out.substr(a, b + 2 - a));
  CHECK(j[0]["wrong"].get<int>() > 0);
  Ran good = exec(2, kSrc + "/tests/verify_cases/doubled_reduce.sched:fixed --check --iters 1 --json");
  CHECK(good.rc == 0);
}

TEST_CASE("bad input is refused on every rank with one message and exit 2", "[exec][mpi][fail]") {
  if (!have_mpiexec()) return;
  Ran n = exec(2, "ring_allreduce -n 4", true);
  CHECK(n.rc == 2);
  CHECK(count(n.out, "but the job has 2 processes") == 1);
  Ran u = exec(3, "recursive_doubling_allgather", true);
  CHECK(u.rc == 2);
  CHECK(count(u.out, "unsupported") == 1);
  Ran d = exec(2, "ring_allreduce --sweep count=1..4", true);
  CHECK(d.rc == 2);
  CHECK(count(d.out, "error: unknown parameter 'count'") == 1);  // any parameter may be swept; this one is not declared
  Ran dn = exec(2, "ring_allreduce --sweep size", true);
  CHECK(dn.rc == 2);
  CHECK(count(dn.out, "--sweep needs NAME=RANGE") == 1);
  Ran p = exec(2, "dissemination_barrier --set size=1KiB", true);
  CHECK(p.rc == 2);
  CHECK(count(p.out, "unknown parameter 'size'") == 1);
  Ran both = exec(2, "ring_allreduce --set size=1KiB --sweep size=2KiB..4KiB", true);
  CHECK(both.rc == 2);
  CHECK(count(both.out, "both give size") == 1);
  Ran m = exec(2, "no_such_schedule", true);
  CHECK(m.rc == 2);
  // An error only ranks 2 and 3 elaborate (ranks 0 and 1 skip other ranks' transfers): the
  // ranks agree to stop, and the error is printed once, with its location.
  std::string f = temp_path("exec_bad_index.sched");
  write_file(f, "schedule bad() {\n  buffer a[4] bytes 8;\n  init a contrib;\n  expect nothing;\n  send a[9] from 2 to 3;\n}\n");
  Ran bi = exec(4, f, true);
  INFO(bi.out);
  CHECK(bi.rc == 2);
  CHECK(count(bi.out, "exec_bad_index.sched:5:") == 1);
  // Every other rank points to rank 2, the lowest that failed (issue 34: none exits in silence).
  CHECK(count(bi.out, "exits with code 2: rank 2 printed why") == 3);
  // The barrier has no data: it runs and has nothing to check.
  CHECK(exec(4, "dissemination_barrier --check --iters 1").rc == 0);
}

TEST_CASE("the training steps run for real on an mp = 2 x dp = 4 grid, checked, with the overlap achieved", "[exec][mpi]") {
  if (!have_mpiexec()) return;
  // The sequence-parallel pair and Megatron-LM's all-reduce pair (three layers: three
  // all-reduces per mp group, each checked over its group only).
  for (const char* s : {"tp_forward", "tp_backward", "tp_allreduce_forward", "tp_allreduce_backward"}) {
    std::string layers = std::string(s).find("allreduce") != std::string::npos ? " --set layers=3" : "";
    Ran r = exec(8, std::string(s) + " --set mp=2 --set size=64KiB --set flops=20M" + layers + " --check --iters 2 --warmup 1 --json");
    INFO(s << "\n" << r.out);
    REQUIRE(r.rc == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j[0]["wrong"] == 0);
    CHECK(j[0].contains("overlap"));
    CHECK(j[0]["compute_us"].get<double>() > 0);
  }
  // The gradient all-reduce in the dp groups ranks(t, 4, 2): summed over dp = 4 ranks, not 8.
  for (const char* mp : {"2", "4"}) {
    Ran g = exec(8, std::string("dp_grid_allreduce --set mp=") + mp + " --set size=64KiB --check --iters 2 --warmup 1 --json");
    INFO("dp_grid_allreduce mp = " << mp << "\n" << g.out);
    REQUIRE(g.rc == 0);
    auto jg = nlohmann::json::parse(g.out);
    CHECK(jg[0]["wrong"] == 0);
    CHECK(jg[0]["ranks"] == 8);
  }
  Ran dp = exec(4, "dp_bucketed_step --set size=256KiB --set flops=20M --check --iters 2 --warmup 1 --json");
  REQUIRE(dp.rc == 0);
  auto j = nlohmann::json::parse(dp.out);
  CHECK(j[0]["wrong"] == 0);
  CHECK(j[0]["compute_us"].get<double>() > 0);
  CHECK(j[0]["comm_alone_us"].get<double>() > 0);
  CHECK(j[0]["overlap"].get<double>() >= 0);
  CHECK(j[0]["overlap"].get<double>() <= 1);
}

TEST_CASE("calibrate fits alpha and beta and writes a platform that sim and exec --predict read", "[exec][mpi][calibrate]") {
  if (!have_mpiexec()) return;
  std::string file = temp_path("calibration.platform");
  std::remove(file.c_str());
  Ran c = sh(kMpi + " -n 2 '" + kBin + "' calibrate --sizes 1KiB..1MiB --iters 5 -o " + file + " --json");
  REQUIRE(c.rc == 0);
  auto j = nlohmann::json::parse(c.out);
  REQUIRE(j["classes"].size() == 1);  // one node: the same-node class only
  CHECK(j["classes"][0]["class"] == "same node");
  CHECK(j["classes"][0]["alpha_us"].get<double>() >= 0);
  CHECK(j["classes"][0]["bw_GBps"].get<double>() > 0);
  CHECK(j["classes"][0]["points"].size() == 11);
  CHECK(j["gamma_ns_per_byte"].get<double>() > 0);
  CHECK(j["platform"].get<std::string>().rfind("star:bw=", 0) == 0);
  // sim reads the file; exec --predict puts the simulator's time next to the measured one.
  Ran s = sh("'" + kBin + "' sim ring_allreduce -n 4 --model analytic --platform @" + file);
  CHECK(s.rc == 0);
  Ran p = exec(2, "ring_allreduce --sweep size=64KiB,1MiB --predict @" + file + " --iters 2 --warmup 1 --json");
  REQUIRE(p.rc == 0);
  auto pj = nlohmann::json::parse(p.out);
  REQUIRE(pj.size() == 2);
  CHECK(pj[1]["predicted_time_us"].get<double>() > 0);
  CHECK(pj[1].contains("predict_error"));
  CHECK(sh("'" + kBin + "' sim ring_allreduce -n 4 --platform @/nonexistent.platform").rc == 2);
  CHECK(sh(kMpi + " -n 1 '" + kBin + "' calibrate -o " + temp_path("x.platform")).rc == 2);  // needs two processes
}

TEST_CASE("collectives on one communicator start in program order on every rank, whatever order dataflow readies them", "[exec][mpi]") {
  if (!have_mpiexec()) return;
  // On rank 0 the first all-reduce waits for a compute and the second is ready at once; rank 1
  // has both ready at the start. MPI matches nonblocking collectives by the order they start in:
  // started as they became ready, rank 0's 64-byte all-reduce met rank 1's 4 KiB one (a crash
  // or MPI_ERR_TRUNCATE before the executor kept program order per communicator).
  const std::string path = temp_path("exec_coll_order.sched");
  write_file(path, R"(schedule order() {
  buffer A[1] bytes 4096;
  buffer B[1] bytes 64;
  init A contrib;
  init B contrib;
  expect allreduce(B);
  compute slow flops 300M writes A[0] at 0;
  allreduce A[0];
  allreduce B[0];
}
)");
  Ran r = exec(2, path + " --check --iters 2 --warmup 1 --timeout 20 --json", true);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  size_t a = r.out.find("[\n"), b = r.out.rfind("\n]");
  REQUIRE(a != std::string::npos);
  auto j = nlohmann::json::parse(r.out.substr(a, b + 2 - a));
  CHECK(j[0]["wrong"] == 0);
  CHECK(j[0]["mpi_agrees"] == true);
}

TEST_CASE("the GPU path's staged transport, with host memory as the device, gives every library schedule's exact numbers", "[exec][mpi]") {
  if (!have_mpiexec()) return;
  // --device host-staged runs device mode (copies and reductions on the "device", MPI through
  // host mirrors copied down before MPI reads and up after it writes) without a GPU.
  Ran list = sh("'" + kBin + "' list");
  REQUIRE(list.rc == 0);
  std::istringstream ls(list.out);
  int ran = 0;
  for (std::string line; std::getline(ls, line);) {
    std::string name = line.substr(0, line.find(' '));
    if (name.empty() || name == "dissemination_barrier" || name.find("attention") != std::string::npos) continue;
    std::string sets = "--set size=48KiB";
    if (name.rfind("tp_", 0) == 0 || name == "hierarchical_allreduce" || name == "dp_grid_allreduce") sets += " --set mp=2";
    if (name == "dp_bucketed_step" || name.rfind("tp_", 0) == 0) sets += " --set flops=1M";
    if (name == "train_step") sets = kSmallTrainStep;
    // Staged (MPI on host mirrors) at N = 4, MPI on the "device" memory itself (what CUDA-aware
    // MPI does) at N = 3, NCCL's rules (transfers matched by issue order, in groups issued in
    // the stream order, core/graph/stream_order.hpp) kept by MPI at N = 4, and IPC (each rank
    // copies from the sender's mapped memory, exec/executor/executor_ipc.cpp) at N = 4.
    for (const char* transport : {"staged", "cuda-aware", "nccl", "ipc"}) {
      int n = std::string(transport) == "cuda-aware" ? 3 : 4;
      Ran r = exec(
          n, name + " " + sets + " --device host-staged --transport " + transport + " --check --iters 2 --warmup 1 --timeout 20 --json",
          true);
      if (r.rc == 2 && r.out.find("unsupported") != std::string::npos) continue;  // its require refuses this N
      INFO(name << " " << transport << ":\n" << r.out);
      REQUIRE(r.rc == 0);
      size_t a = r.out.find("[\n"), b = r.out.rfind("\n]");
      REQUIRE(a != std::string::npos);
      auto j = nlohmann::json::parse(r.out.substr(a, b + 2 - a));
      CHECK(j[0]["wrong"] == 0);
      CHECK(j[0]["device"] == "host-staged");
      CHECK(j[0]["transport"] == transport);
      if (j[0]["mpi_agrees"].is_boolean()) CHECK(j[0]["mpi_agrees"] == true);
      ++ran;
    }
  }
  CHECK(ran >= 60);
  // The text header says where the buffers are and how MPI reaches them.
  Ran t = exec(2, "ring_allreduce --set size=4KiB --device host-staged --check --iters 1", true);
  CHECK(t.out.find("# device: host memory standing in for a device; transport: staged (staged through host mirrors)") != std::string::npos);
  // A transport without a device is refused.
  CHECK(exec(2, "ring_allreduce --transport staged --iters 1").rc == 2);
  CHECK(exec(2, "ring_allreduce --transport nccl --iters 1").rc == 2);
  Ran nccl = exec(2, "ring_allreduce --set size=4KiB --device host-staged --transport nccl --check --iters 1", true);
  CHECK(nccl.rc == 0);
  CHECK(nccl.out.find("transport: nccl (MPI standing in for NCCL on host memory") != std::string::npos);
  // Blocking sends on every rank before its receive: fine when MPI buffers them, a deadlock
  // under NCCL, whose sends complete only with their receive. Refused before anything runs.
  const std::string unsafe = temp_path("exec_unsafe_ring.sched");
  {
    std::ofstream f(unsafe);
    f << "schedule unsafe_ring(size = 3KiB) {\n"
         "  buffer data[N] bytes size / N;\n"
         "  init data owned;\n"
         "  expect allgather(data);\n"
         "  on r in 0 .. N {\n"
         "    for s in 0 .. N - 1 {\n"
         "      send data[(r - s) % N] to (r + 1) % N;\n"
         "      recv data[(r - s - 1) % N] from (r - 1) % N;\n"
         "    }\n"
         "  }\n"
         "}\n";
  }
  Ran refused = exec(3, unsafe + " --device host-staged --transport nccl --check --iters 1", true);
  CHECK(refused.rc == 2);
  CHECK(refused.out.find("unsafe_ring.sched:") != std::string::npos);
  CHECK(refused.out.find(":7: error: this transfer and one it depends on wait on each other's completion") != std::string::npos);
  CHECK(refused.out.find("      ^") != std::string::npos);
  // The same program with even ranks sending first (the library's parity ring) runs.
  CHECK(exec(3, "parity_ring_allgather --set size=3KiB --device host-staged --transport nccl --check --iters 1").rc == 0);
  // On-block point-to-point and a reducing receive go through the same staging.
  CHECK(exec(2, kSrc + "/tests/verify_cases/recv_first.sched:fixed --device host-staged --check --iters 2").rc == 0);
  CHECK(exec(2, kSrc + "/tests/verify_cases/recv_first.sched:fixed --device host-staged --transport cuda-aware --check --iters 2").rc == 0);
  CHECK(exec(2, kSrc + "/tests/verify_cases/recv_first.sched:fixed --device host-staged --transport ipc --check --iters 2").rc == 0);
  // IPC: the header says how every pair moves its bytes; without a device it is refused.
  Ran ipc = exec(3, "ring_allreduce --set size=3KiB --device host-staged --transport ipc --check --iters 1", true);
  CHECK(ipc.rc == 0);
  CHECK(ipc.out.find("transport: ipc (6 ordered pairs within one node copy from each other's stand-in device memory, mapped shared "
                     "(CUDA IPC's protocol); collectives staged)") != std::string::npos);
  // Two nodes of two ranks (STEPGRAPH_NODE_SIZE=2): pairs within a node by IPC, between nodes
  // staged, in one run; the header counts both; a receive from any source is refused at its line.
  for (const char* args :
       {"ring_allreduce --set size=1MiB", "pairwise_alltoall --set size=48KiB", "hierarchical_allreduce --set mp=2 --set size=48KiB",
        "recursive_doubling_allreduce --set size=96KiB --dtype bf16"}) {
    Ran two = sh("STEPGRAPH_NODE_SIZE=2 " + kMpi + " -n 4 '" + kBin + "' exec " + args +
                     " --device host-staged --transport ipc --check --compare native --iters 2 --warmup 1",
                 true);
    INFO(args << ":\n" << two.out);
    CHECK(two.rc == 0);
    CHECK(two.out.find("transport: ipc (4 ordered pairs within each of 2 nodes copy from each other's stand-in device memory, mapped "
                       "shared (CUDA IPC's protocol); 8 pairs between nodes staged") != std::string::npos);
    CHECK(two.out.find("MPI's own collective on the same inputs gives the same elements") != std::string::npos);
  }
  Ran any = sh("STEPGRAPH_NODE_SIZE=2 " + kMpi + " -n 4 '" + kBin + "' exec " + kSrc +
                   "/tests/verify_cases/wildcard_sum.sched:fixed --device host-staged --transport ipc --iters 1",
               true);
  CHECK(any.rc == 2);
  CHECK(any.out.find("wildcard_sum.sched:10:28: error: --transport ipc: this receive from any source cannot tell") != std::string::npos);
  CHECK(exec(4, kSrc + "/tests/verify_cases/wildcard_sum.sched:fixed --device host-staged --transport ipc --check --iters 2").rc == 0);
  // A rank's message to itself reads its own buffers (a review found it refused).
  const std::string self = temp_path("exec_ipc_self.sched");
  {
    std::ofstream f(self);
    f << "schedule selfsend(size = 1KiB) {\n  buffer a[N] bytes size / N;\n  buffer b[N] bytes size / N;\n  init a contrib;\n"
         "  on r in 0 .. N {\n    isend a[r] to r as h;\n    recv b[r] from r;\n    wait h;\n  }\n}\n";
  }
  CHECK(exec(2, self + " --device host-staged --transport ipc --iters 2").rc == 0);
  Ran no_dev = exec(2, "ring_allreduce --transport ipc --iters 1", true);
  CHECK(no_dev.rc == 2);
  CHECK(no_dev.out.find("--transport ipc needs --device cuda (or host-staged)") != std::string::npos);
}

TEST_CASE("MSCCL XML runs with real data: msccl-tools' files give the collective's numbers and MPI's, the broken one is caught",
          "[exec][mpi][msccl]") {
  if (!have_mpiexec()) return;
  const std::string dir = kSrc + "/tests/msccl/";
  struct Case {
    int n;
    std::string file, extra;
  };
  // In place (allreduce, allgather) and out of place (allgather_pair, alltoall); LL and Simple;
  // 4 channels × 2 instances; the host-staged device path (copies and reductions through the
  // device interface, MPI from host mirrors).
  for (const Case& c : {Case{4, "generated/allreduce_a100_ring_4gpu_4ch_2inst_LL.xml", ""},
                        Case{4, "generated/allreduce_a100_ring_4gpu_4ch_2inst_LL.xml", " --device host-staged"},
                        Case{8, "generated/allgather_ring_8gpu_1ch_1inst_Simple.xml", ""},
                        Case{8, "generated/alltoall_allpairs_8gpu_1inst_Simple.xml", ""}, Case{2, "allgather_pair.xml", ""}}) {
    INFO(c.file << c.extra);
    Ran r = exec(c.n, "'" + dir + c.file + "' --set size=64KiB --check --compare native --iters 1 --warmup 0 --json" + c.extra);
    INFO(r.out);
    REQUIRE(r.rc == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j[0]["wrong"] == 0);
    CHECK(j[0]["mpi_agrees"] == true);
    CHECK(j[0]["size_bytes"] == 65536);  // the collective's size as nccl-tests counts it
  }
  // The file MSCCLang's own Check() fails: refused by the check before the run; run anyway, wrong
  // elements, exit 1.
  const std::string hier =
      "'" + dir + "generated/allreduce_a100_pcie_hierarchical_4gpu_1inst_LL.xml' --set size=64KiB --check --iters 1 --warmup 0";
  Ran refused = exec(4, hier, true);
  CHECK(refused.rc == 1);
  CHECK(refused.out.find("refused: defect: wrong-result (bounded sends, verify at N = 4)") != std::string::npos);
  Ran w = exec(4, hier + " --allow-defects --json", true);
  INFO(w.out);
  CHECK(w.rc == 1);
  size_t a = w.out.find("[\n"), b = w.out.rfind("\n]");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  CHECK(nlohmann::json::parse(w.out.substr(a, b + 2 - a))[0]["wrong"].get<uint64_t>() > 0);
  // --transport nccl cannot run sends that complete before their receive: refused, exit 2.
  Ran t = exec(2, "'" + dir + "allgather_pair.xml' --device host-staged --transport nccl", true);
  CHECK(t.rc == 2);
  CHECK(t.out.find("--transport staged") != std::string::npos);  // (the stream order or the FIFO check says it)
}

TEST_CASE("rows are printed as they are measured: a job killed mid-sweep keeps the rows before", "[exec][mpi][fail]") {
  if (!have_mpiexec()) return;
  for (const char* fmt : {"", " --json"}) {
    INFO(fmt);
    Ran r = sh("STEPGRAPH_EXEC_DIE=1@8192 " + kMpi + " -n 2 '" + kBin + "' exec ring_allreduce --sweep size=1KiB..16KiB --iters 2" + fmt);
    INFO(r.out);
    CHECK(r.rc != 0);
    for (const char* kept : {"1024", "2048", "4096"}) CHECK(r.out.find(kept) != std::string::npos);
    CHECK(r.out.find("16384") == std::string::npos);
  }
}

TEST_CASE("--compare native runs MPI's collective on the schedule's groups, with the group's bus factor; no overlap without compute",
          "[exec][mpi]") {
  if (!have_mpiexec()) return;
  // tp_backward reduce-scatters within each mp group of 2 (4 ranks: two groups): MPI's own is one
  // call per group, not one over the world, and busbw uses N = 2.
  Ran r = exec(4, "tp_backward --set mp=2 --set size=1MiB --set flops=0 --compare native --check --iters 2 --warmup 1 --json");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  auto j = nlohmann::json::parse(r.out)[0];
  CHECK(j["group_ranks"] == 2);
  CHECK(j["wrong"] == 0);
  CHECK(j["mpi_agrees"].is_null());  // its gradients are computed: MPI would get other inputs
  CHECK(j["native_time_us"].is_number());
  double alg = j["algbw_GBps"], bus = j["busbw_GBps"];
  CHECK(bus == Approx(alg * 0.5));  // (N-1)/N with N = 2
  CHECK(!j.contains("overlap"));    // flops = 0: nothing to hide behind
  // With compute, the share hidden is at most what the compute could hide.
  Ran c = exec(4, "tp_backward --set mp=2 --set size=1MiB --set flops=100M --iters 2 --warmup 1 --json");
  REQUIRE(c.rc == 0);
  auto k = nlohmann::json::parse(c.out)[0];
  REQUIRE(k.contains("overlap"));
  double hidden = k["overlap"].get<double>() * k["comm_alone_us"].get<double>();
  CHECK(hidden <= std::min(k["compute_us"].get<double>(), k["comm_alone_us"].get<double>()) + 1e-9);
  // Postconditions on groups that overlap: no one call per group, said, not timed over the world.
  const std::string f = temp_path("overlapping_groups.sched");
  write_file(f,
             "schedule two() {\n  buffer a[2] bytes 64;\n  init a contrib;\n"
             "  expect allgather(a) over ranks(0, 2);\n  expect allgather(a) over ranks(1, 2);\n"
             "  on 0 { send a[0] to 1; recv a[1] from 1; }\n  on 1 { recv a[0] from 0; send a[1] to 0; }\n}\n");
  // (Rank 2 ends without its block: a wrong result the check before the run refuses; the native
  // collective's grouping is what this case is about.)
  Ran o = exec(3, f + " --compare native --iters 1 --warmup 0 --allow-defects", true);
  INFO(o.out);
  REQUIRE(o.rc == 0);
  CHECK(o.out.find("MPI's own collective is not timed: a rank is in the groups of two postconditions") != std::string::npos);
}

TEST_CASE("f16 and bf16 leave no MPI handle behind; a launcher of another MPI is refused by exec on every rank, read by env",
          "[exec][mpi][fail]") {
  if (!have_mpiexec()) return;
  Ran r = exec(2, "ring_allreduce --set size=4KiB --dtype bf16 --check --iters 1 --compare native", true);
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK(r.out.find("leaked") == std::string::npos);  // MPICH's yaksa reports types never freed
  // The other MPI's launcher, where this machine has both (Debian: mpiexec.openmpi, mpiexec.mpich).
  std::string mine = STEPGRAPH_MPIEXEC;
  bool built_mpich = mine.find("mpich") != std::string::npos;
  std::string other = built_mpich ? "/usr/bin/mpiexec.openmpi" : "/usr/bin/mpiexec.mpich";
  if (access(other.c_str(), X_OK) != 0) return;
  Ran m = sh("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 timeout 60 " + other +
                 " -n 2 '" + kBin + "' exec ring_allreduce --set size=1KiB --check",
             true);
  INFO(m.out);
  CHECK(m.rc == 2);
  CHECK(count(m.out, "started 2 processes, but this stepgraph is built with") == 1);  // rank 0: the whole message
  // Rank 1: one line that says why too, never an exit 2 in silence (issue 34).
  CHECK(count(m.out, "stepgraph: error: rank 1 of 2 exits with code 2: ") == 1);
  CHECK(count(m.out, "cannot join that job; rank 0 printed the whole message") == 1);
  CHECK(m.out.find("checked") == std::string::npos);  // never N one-rank runs
  // env needs no MPI: it reads the other launcher's variables and prints each rank's line (issue 34).
  Ran e = sh("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 60 " + other + " -n 2 '" + kBin + "' env", true);
  INFO(e.out);
  CHECK(e.rc == 0);
  CHECK(count(e.out, "rank        0 of 2") == 1);
  CHECK(count(e.out, "rank        1 of 2") == 1);
  CHECK(count(e.out, built_mpich ? "mpi         openmpi" : "mpi         mpich-hydra") == 2);
  CHECK(e.out.find("error") == std::string::npos);
}

TEST_CASE("a refused command says why on every rank: rank 0 the whole message, the others one line", "[exec][mpi][fail]") {
  // Issue 34: a process whose variables made it rank 3 of another MPI's job printed nothing and
  // exited 2. Run as a single process with those variables (the other family's, so the launcher
  // check refuses before MPI_Init), then under the real launcher.
  std::string mine = STEPGRAPH_MPIEXEC;
  bool built_mpich = mine.find("mpich") != std::string::npos;
  const std::string other_rank3 = built_mpich ? "OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=3 "
                                                "OMPI_COMM_WORLD_LOCAL_SIZE=4"
                                              : "PMI_RANK=3 PMI_SIZE=4 MPI_LOCALRANKID=3 MPI_LOCALNRANKS=4";
  for (const char* cmd : {"exec ring_allreduce --set size=1KiB", "calibrate --iters 1", "sim ring_allreduce,rabenseifner_allreduce -n 4"}) {
    INFO(cmd);
    Ran r = sh("env -i PATH=/usr/bin:/bin " + other_rank3 + " timeout 60 '" + kBin + "' " + cmd, true);
    INFO(r.out);
    CHECK(r.rc == 2);
    CHECK(count(r.out, "stepgraph: error: rank 3 of 4 exits with code 2: ") == 1);
    CHECK(r.out.find("cannot join that job; rank 0 printed the whole message") != std::string::npos);
    CHECK(count(r.out, "\n") == 1);  // one line
  }
  // A bad command line, rank 2 of 4 of this build's own launcher: no MPI_Init, one line.
  const std::string own_rank2 = built_mpich ? "PMI_RANK=2 PMI_SIZE=4 MPI_LOCALRANKID=2 MPI_LOCALNRANKS=4"
                                            : "OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=2 "
                                              "OMPI_COMM_WORLD_LOCAL_SIZE=4";
  Ran b = sh("env -i PATH=/usr/bin:/bin " + own_rank2 + " timeout 60 '" + kBin + "' exec ring_allreduce --iters 0", true);
  INFO(b.out);
  CHECK(b.rc == 2);
  CHECK(b.out == "stepgraph: error: rank 2 of 4 exits with code 2: a bad command line; rank 0 printed the whole message\n");
  if (!have_mpiexec()) return;
  // Under the launcher: -n that is not the job's size (after MPI_Init; rank 0 says it), and a bad
  // command line (before it).
  Ran n = exec(2, "ring_allreduce -n 3", true);
  INFO(n.out);
  CHECK(n.rc == 2);
  CHECK(count(n.out, "-n 3 but the job has 2 processes") == 1);
  CHECK(count(n.out, "stepgraph: error: rank 1 of 2 exits with code 2: rank 0 printed why") == 1);
  Ran o = exec(3, "ring_allreduce --iters 0", true);
  INFO(o.out);
  CHECK(o.rc == 2);
  CHECK(count(o.out, "exits with code 2: a bad command line; rank 0 printed the whole message") == 2);
}

TEST_CASE("buffers past a rank's share of memory are refused once with exit 2, never a crash or an OOM kill", "[exec][mpi][fail]") {
  if (!have_mpiexec()) return;
  // Issue 23: every rank crashed in fill_inputs (memset on a null allocation), and size=4GiB in a
  // 2 GiB cgroup was killed (exit 137) without a word. Each rank checks its buffers against its
  // share of what the host or its cgroup has left before allocating anything.
  Ran r = exec(2, "ring_allreduce --set size=1TiB", true);
  INFO(r.out);
  CHECK(r.rc == 2);
  CHECK(count(r.out, "more than its share of memory") == 1);
  CHECK(count(r.out, "for 2 ranks on this host") == 1);
}

TEST_CASE("option errors say what is wanted, once per job", "[exec][mpi][fail]") {
  if (!have_mpiexec()) return;
  // Issue 23: "Value 0 not in range 0.000000 to 1797693…" (309 digits), printed by every rank.
  Ran r = exec(3, "ring_allreduce --iters 0", true);
  INFO(r.out);
  CHECK(r.rc == 2);
  CHECK(count(r.out, "--iters: must be a number above 0, got '0'") == 1);
  Ran twice = exec(2, "ring_allreduce --set size=1MiB --set size=2MiB", true);
  CHECK(twice.rc == 2);
  CHECK(count(twice.out, "--set size given twice ('1MiB', then '2MiB'): give each parameter once") == 1);
  CHECK(r.out.find("179769") == std::string::npos);
  Ran t = sh("'" + kBin + "' verify ring_allreduce -n 4 --timeout inf", true);
  CHECK(t.rc == 2);
  CHECK(t.out.find("--timeout: must be a finite number, 0 or more, got 'inf'") != std::string::npos);
  // Accepted silently before: a trailing comma in -n.
  Ran n = sh("'" + kBin + "' check ring_allreduce -n 4,", true);
  CHECK(n.rc == 2);
  CHECK(n.out.find("bad -n '4,': an empty entry in the list") != std::string::npos);
}

TEST_CASE("a device failure is reported at the statement of the step that made it, on every path", "[exec][mpi][fail]") {
  // Issue 33: a device call fails with a Diagnostic, and the executor places it at its step's
  // statement with what was being done. STEPGRAPH_DEVICE_FAULT makes the stand-in device refuse
  // every call of one kind.
  for (const std::string transport : {"staged", "nccl"}) {
    Ran r = sh("STEPGRAPH_DEVICE_FAULT=reduce " + kMpi + " -n 2 '" + kBin +
                   "' exec ring_allreduce --set size=4KiB --device host-staged --iters 1 --transport " + transport,
               true);
    INFO(transport << ":\n" << r.out);
    CHECK(r.rc == 3);
    CHECK(r.out.find("ring_allreduce.sched:16:7: error: a reduction (data[") != std::string::npos);
    CHECK(r.out.find(") on host memory standing in for a device: an injected fault (STEPGRAPH_DEVICE_FAULT=reduce)") != std::string::npos);
    CHECK(r.out.find("\n        send data[(r - s) % N] from r to (r + 1) % N reduce;") != std::string::npos);
    CHECK(r.out.find("\n        ^\n") != std::string::npos);  // the source line and a caret
    CHECK(r.out.find("stepgraph exec: rank ") != std::string::npos);
  }
  // A copy that is no step's (filling the inputs): the failure without a statement.
  Ran fill = sh("STEPGRAPH_DEVICE_FAULT=to_device " + kMpi + " -n 2 '" + kBin +
                    "' exec ring_allreduce --set size=4KiB --device host-staged --iters 1",
                true);
  INFO(fill.out);
  CHECK(fill.rc == 3);
  CHECK(fill.out.find(": a copy to the device (data) on host memory standing in for a device: an injected fault "
                      "(STEPGRAPH_DEVICE_FAULT=to_device)\n") != std::string::npos);
  CHECK(fill.out.find("error:") == std::string::npos);
}
