// Attention schedules under mpiexec: real tiles on real q, k, v, checked against full attention
// computed on one rank from the same inputs (exec/attention/attention_exec.hpp, exec/attention/attention_check.cpp).
// Every variant of the library, forward and backward, both masks; a schedule that computes the
// wrong tiles is caught by the numbers; bad layouts are refused with a located diagnostic.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>
#include "mpi_launch.hpp"
#include "run_command.hpp"

namespace {

using sgtest::Ran;

const std::string kBin = STEPGRAPH_BIN;
const std::string kSrc = STEPGRAPH_SOURCE_DIR;
const std::string kMpi = sgtest::mpiexec();
using sgtest::have_mpiexec;

Ran exec(int n, const std::string& args) {
  return sgtest::run_command(kMpi + " -n " + std::to_string(n) + " '" + kBin + "' exec " + args + " 2>&1");
}

// The JSON row of an exec --json run (stderr mixed in before it).
nlohmann::json row_of(const Ran& r) {
  size_t a = r.out.find("[\n"), b = r.out.rfind("\n]");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  auto j = nlohmann::json::parse(r.out.substr(a, b + 2 - a));
  REQUIRE(j.size() == 1);
  return j[0];
}

using sgtest::write_file;

// Small shapes: seq splits into 2N·4 blocks for N = 3 and 4, heads into N groups; fp32 inputs
// (the schedules' default elem = 2 is bf16).
const std::string kShape = "--set seq=480 --set heads=12 --set dim=16";  // each --set once: a repeat is refused
const std::string kSmall = kShape + " --set elem=4";

}  // namespace

TEST_CASE("every attention variant computes real tiles under mpiexec and matches full attention on one rank", "[exec][mpi][attention]") {
  if (!have_mpiexec()) {
    WARN("mpiexec is not installed: attention exec is not tested");
    return;
  }
  Ran list = sgtest::run_command("'" + kBin + "' list");
  REQUIRE(list.rc == 0);
  std::vector<std::string> names;
  std::istringstream ls(list.out);
  for (std::string line; std::getline(ls, line);)
    if (line.find("attention") != std::string::npos) names.push_back(line.substr(0, line.find(' ')));
  REQUIRE(names.size() == 22);
  for (const std::string& name : names) {
    bool bwd = name.find("_bwd") != std::string::npos;
    for (int causal : {1, 0}) {
      int n = causal ? 4 : 3;
      if (name.rfind("ulysses_ring", 0) == 0) n = 4;  // USP needs an even N
      Ran r =
          exec(n, name + " " + kSmall + " --set causal=" + std::to_string(causal) + " --check --iters 1 --warmup 0 --timeout 30 --json");
      INFO(name << " causal = " << causal << " at N = " << n << ":\n" << r.out);
      REQUIRE(r.rc == 0);
      nlohmann::json j = row_of(r);
      CHECK(j["wrong"] == 0);
      CHECK(j["attention_inputs"] == "fp32");
      CHECK(j["elements_checked"].get<uint64_t>() == (bwd ? 3u * 16u : 17u) * 480u * 12u);  // O|lse, or dQ + dK + dV
      CHECK(j["max_abs_err"].get<double>() < 1e-5);
      CHECK(j["max_abs_err"].get<double>() > 0);  // a real computation, not a copy of the reference
      if (bwd) {
        CHECK(j.contains("max_abs_err_dq"));
        CHECK(j.contains("max_abs_err_dkv"));
      }
    }
  }
}

TEST_CASE("bf16 inputs: the ring's outputs and gradients stay far inside TransformerEngine's 2.5e-2", "[exec][mpi][attention]") {
  if (!have_mpiexec()) return;
  for (const char* name : {"ring_attention", "zigzag_ring_attention_bwd", "ulysses_attention_bwd"}) {
    Ran r = exec(4, std::string(name) + " " + kShape + " --set elem=2 --check --iters 1 --warmup 0 --json");
    INFO(name << ":\n" << r.out);
    REQUIRE(r.rc == 0);
    nlohmann::json j = row_of(r);
    CHECK(j["wrong"] == 0);
    CHECK(j["attention_inputs"] == "bf16");
    CHECK(j["dtype"] == "bf16");  // the inputs' type, not the buffers' default f32 (elem = 2 says bf16)
    CHECK(j["attention_outputs"] == "fp32");
    CHECK(j["tolerance"].get<double>() == Approx(2.5e-2));
    CHECK(j["max_abs_err"].get<double>() < 1e-4);
  }
  // The text table says what was compared.
  Ran t = exec(2, "ring_attention_bwd " + kSmall + " --check --iters 1 --warmup 0");
  REQUIRE(t.rc == 0);
  CHECK(t.out.find("attention backward against full attention on one rank (fp32 inputs): max |dQ - ref| = ") != std::string::npos);
}

TEST_CASE("attention rows give the shape and TFLOP/s in the model count, and --sweep seq gives a row per length",
          "[exec][mpi][attention]") {
  if (!have_mpiexec()) return;
  Ran r = exec(
      2, "ring_attention --set heads=12 --set dim=16 --set elem=4 --set causal=1 --sweep seq=240,480 --check --iters 1 --warmup 0 --json");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  size_t a = r.out.find("[\n"), b = r.out.rfind("\n]");
  REQUIRE(a != std::string::npos);
  auto rows = nlohmann::json::parse(r.out.substr(a, b + 2 - a));
  REQUIRE(rows.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    const nlohmann::json& j = rows[i];
    double seq = i ? 480 : 240;
    CHECK(j["seq"] == static_cast<int>(seq));
    CHECK(j["heads"] == 12);
    CHECK(j["dim"] == 16);
    CHECK(j["batch"] == 1);
    CHECK(j["mask"] == "causal");
    CHECK(j["direction"] == "forward");
    CHECK(j["wrong"] == 0);
    // 4·batch·heads·seq²·dim, halved for the causal mask.
    CHECK(j["model_flops"].get<double>() == Approx(4.0 * 12 * seq * seq * 16 / 2));
    double t = j["time_us"].get<double>() * 1e-6;
    REQUIRE(t > 0);
    CHECK(j["tflops"].get<double>() == Approx(j["model_flops"].get<double>() / t / 1e12));
    CHECK(j["tflops_per_rank"].get<double>() == Approx(j["tflops"].get<double>() / 2));
  }
  // The backward counts 2.5 times the forward's work; a full mask twice the causal one.
  Ran bwd = exec(2, "ring_attention_bwd " + kSmall + " --set causal=0 --iters 1 --warmup 0 --json");
  REQUIRE(bwd.rc == 0);
  nlohmann::json jb = row_of(bwd);
  CHECK(jb["direction"] == "backward");
  CHECK(jb["mask"] == "full");
  CHECK(jb["model_flops"].get<double>() == Approx(2.5 * 4.0 * 12 * 480.0 * 480 * 16));
  // The text table: the shape columns, no bus factor, the notes named by length.
  Ran t =
      exec(2, "ring_attention --set heads=12 --set dim=16 --set elem=4 --set causal=1 --sweep seq=240,480 --check --iters 1 --warmup 0");
  INFO(t.out);
  REQUIRE(t.rc == 0);
  CHECK(t.out.find("bus factor") == std::string::npos);
  CHECK(t.out.find("# attention forward, causal mask, fp32 inputs") != std::string::npos);
  CHECK(t.out.find("TFLOP/s") != std::string::npos);
  CHECK(t.out.find("\n       240     12    16      1 ") != std::string::npos);
  CHECK(t.out.find("# seq 480: attention against full attention on one rank") != std::string::npos);
  // A swept parameter the shape columns do not show gets a column, and the header says it varies.
  Ran m = exec(2, "ring_attention --set seq=240 --set heads=12 --set dim=16 --set elem=4 --sweep causal=0,1 --iters 1 --warmup 0");
  INFO(m.out);
  REQUIRE(m.rc == 0);
  // Rows are printed as they are measured: the header says the first row's mask, and a line
  // says where it changes.
  CHECK(m.out.find("# attention forward, full mask, fp32 inputs") != std::string::npos);
  CHECK(m.out.find("# from here: attention forward, causal mask, fp32 inputs\n           1      240") != std::string::npos);
  CHECK(m.out.find("#     causal      seq  heads") != std::string::npos);
  CHECK(m.out.find("\n           0      240     12    16      1 ") != std::string::npos);
  CHECK(m.out.find("\n           1      240     12    16      1 ") != std::string::npos);
  Ran mj = exec(2, "ring_attention --set seq=240 --set heads=12 --set dim=16 --set elem=4 --sweep causal=0,1 --iters 1 --warmup 0 --json");
  REQUIRE(mj.rc == 0);
  size_t ma = mj.out.find("[\n"), mb = mj.out.rfind("\n]");
  REQUIRE(ma != std::string::npos);
  auto mrows = nlohmann::json::parse(mj.out.substr(ma, mb + 2 - ma));
  REQUIRE(mrows.size() == 2);
  CHECK(mrows[0]["mask"] == "full");
  CHECK(mrows[1]["mask"] == "causal");
  CHECK(mrows[1]["sweep"]["param"] == "causal");
  CHECK(mrows[1]["sweep"]["value"] == 1);
  CHECK(mrows[0]["model_flops"].get<double>() == Approx(2 * mrows[1]["model_flops"].get<double>()));
  // A parameter the schedule does not declare is refused with its location.
  Ran bad = exec(2, "ring_allreduce --sweep seq=1,2 --iters 1");
  CHECK(bad.rc != 0);
  CHECK(bad.out.find("error: unknown parameter 'seq'") != std::string::npos);
}

TEST_CASE("a causal ring that also computes the upper tiles runs, and --check finds its outputs wrong", "[exec][mpi][attention][fail]") {
  if (!have_mpiexec()) return;
  // ring_attention with the mask test dropped: every rank computes every tile, the upper ones too.
  const std::string path = sgtest::temp_path("exec_attn_upper.sched");
  write_file(path, R"(schedule upper(seq = 480, heads = 2, dim = 16, batch = 1, causal = 1, elem = 4) {
  let blk = seq / N;
  buffer Q[N] bytes batch * heads * blk * dim * elem;
  buffer KV[N] bytes 2 * batch * heads * blk * dim * elem;
  buffer O[N] bytes batch * heads * blk * (dim + 1) * 4;
  buffer cur[2] bytes 2 * batch * heads * blk * dim * elem;
  init Q owned;
  init KV owned;
  expect attention(Q, KV, O, causal);
  for r in 0 .. N { copy KV[r] into cur[0] at r; }
  for s in 0 .. N {
    for r in 0 .. N {
      let j = (r - s) % N;
      if s < N - 1 { send cur[s % 2] from r to (r + 1) % N into cur[(s + 1) % 2]; }
      if j != r { compute attn(Q[r], cur[s % 2]) into O[r] mask full at r; }
      if j == r { compute attn(Q[r], cur[s % 2]) into O[r] mask causal at r; }
    }
  }
}
)");
  // The check before the run already finds the wrong tiles (issue 28) and refuses; run anyway,
  // exec's own --check against full attention finds them in the numbers.
  Ran refused = exec(3, path + " --check --iters 1 --warmup 0");
  CHECK(refused.rc == 1);
  CHECK(refused.out.find("refused: defect: wrong-result") != std::string::npos);
  Ran r = exec(3, path + " --check --iters 1 --warmup 0 --json --allow-defects");
  INFO(r.out);
  CHECK(r.rc == 1);
  nlohmann::json j = row_of(r);
  CHECK(j["wrong"].get<uint64_t>() > 0);
  CHECK(j["max_abs_err"].get<double>() > 1e-2);
  // Every block but the last sees later ones: rank 0's block 0 is the first wrong output.
  CHECK(r.out.find("stepgraph exec: rank 0 O|lse (block 0) row 0 element 0: expected ") != std::string::npos);
  CHECK(r.out.find("attention elements outside the tolerance") != std::string::npos);
}

TEST_CASE("attention layouts exec cannot fill are refused at their source line, exit 2", "[exec][mpi][attention][fail]") {
  if (!have_mpiexec()) return;
  // The verifier's defect cases have no seq / heads / dim: exec cannot give their tiles shapes.
  Ran a = exec(3, kSrc + "/tests/verify_cases/attn_upper_tile.sched:fixed --check --iters 1");
  CHECK(a.rc == 2);
  CHECK(a.out.find("attn_upper_tile.sched:23:3: error: exec computes attention tiles from the schedule's parameters seq, heads, dim") !=
        std::string::npos);
  CHECK(a.out.find("expect attention(Q, KV, O, causal);") != std::string::npos);
  CHECK(a.out.find("^") != std::string::npos);
  // elem 3 is neither fp32 nor bf16.
  Ran b = exec(2, "ring_attention " + kShape + " --set elem=3 --check --iters 1");
  CHECK(b.rc == 2);
  CHECK(b.out.find("error: exec stores attention inputs as bf16 (elem = 2) or fp32 (elem = 4), not elem = 3") != std::string::npos);
  // --dtype would retype the fp32 outputs: refused.
  Ran d = exec(2, "ring_attention " + kSmall + " --dtype f64 --check --iters 1");
  CHECK(d.rc == 2);
  CHECK(d.out.find("--dtype does not apply to attention schedules") != std::string::npos);
  // Exactly one rank reports it.
  size_t first = b.out.find("not elem = 3");
  CHECK(b.out.find("not elem = 3", first + 1) == std::string::npos);
}

TEST_CASE("attention in device mode: tiles and merges through the DeviceOps, every dataflow transport, the same accuracy",
          "[exec][mpi][attention]") {
  if (!have_mpiexec()) return;
  // --device host-staged: the GPU path's attention (device tiles, device merges of reducing
  // receives, MPI's merge operator on staged collectives) with host memory as the device.
  for (const char* name :
       {"ring_attention", "ringx1_attention", "zigzag_ring_attention_bwd", "ulysses_ring_attention_bwd", "ringx3_attention_bwd"})
    for (const char* transport : {"staged", "cuda-aware", "ipc"})
      for (const char* elem : {"4", "2"}) {
        Ran r = exec(4, std::string(name) + " --set seq=480 --set heads=12 --set dim=16 --set elem=" + elem +
                            " --device host-staged --transport " + transport + " --check --iters 1 --warmup 0 --json");
        INFO(name << " " << transport << " elem " << elem << ":\n" << r.out);
        REQUIRE(r.rc == 0);
        nlohmann::json j = row_of(r);
        CHECK(j["wrong"] == 0);
        CHECK(j["transport"] == transport);
        CHECK(j["max_abs_err"].get<double>() < 1e-5);
      }
}

TEST_CASE("device calls on two streams: every interleaving drawn, and synchronous calls, give the same accuracy",
          "[exec][mpi][attention]") {
  if (!have_mpiexec()) return;
  // The stand-in device defers its two lanes like a GPU and runs them in an order drawn from
  // STEPGRAPH_LANE_SEED: a missing wait between the lanes (a tile before the kv block it reads
  // has come up) or MPI sending a range before its copy down ran shows as wrong numbers here.
  for (const char* name : {"zigzag_ring_attention", "ring_attention_bwd"})
    for (const char* transport : {"staged", "cuda-aware", "ipc"})
      for (const char* seed : {"2", "3", "sync"}) {
        bool sync = std::string(seed) == "sync";
        Ran r = sgtest::run_command("STEPGRAPH_LANE_SEED=" + std::string(sync ? "1" : seed) + " " + kMpi + " -n 4 '" + kBin + "' exec " +
                                    name + " " + kSmall + " --device host-staged --transport " + transport +
                                    (sync ? " --device-sync" : "") + " --check --iters 2 --warmup 0 --json 2>&1");
        INFO(name << " " << transport << " seed " << seed << ":\n" << r.out);
        REQUIRE(r.rc == 0);
        nlohmann::json j = row_of(r);
        CHECK(j["wrong"] == 0);
        CHECK(j["device_calls"] == (sync ? "sync" : "streams"));
        CHECK(j["max_abs_err"].get<double>() < 1e-5);
      }
  // IPC within two nodes of two ranks, staged between them (STEPGRAPH_NODE_SIZE=2).
  for (const char* name : {"zigzag_ring_attention", "zigzag_ring_attention_bwd"}) {
    Ran r = sgtest::run_command("STEPGRAPH_NODE_SIZE=2 " + kMpi + " -n 4 '" + kBin + "' exec " + name + " " + kSmall +
                                " --device host-staged --transport ipc --check --iters 2 --warmup 0 --json 2>&1");
    INFO(name << " ipc, two nodes:\n" << r.out);
    REQUIRE(r.rc == 0);
    nlohmann::json j = row_of(r);
    CHECK(j["wrong"] == 0);
    CHECK(j["transport"] == "ipc");
    CHECK(j["max_abs_err"].get<double>() < 1e-5);
  }
  // Synchronous calls are a choice for the staged and CUDA-aware transports only.
  CHECK(exec(2, "ring_allreduce --device-sync --iters 1").rc == 2);
  Ran r = exec(2, "ring_allreduce --device host-staged --transport nccl --device-sync --iters 1");
  CHECK(r.rc == 2);
  CHECK(r.out.find("--device-sync does not apply to --transport nccl") != std::string::npos);
}

TEST_CASE("attention over the stream-ordered transport (NCCL's rules kept by MPI): the same accuracy; merging collectives refused",
          "[exec][mpi][attention]") {
  if (!have_mpiexec()) return;
  for (const char* name : {"ring_attention", "zigzag_ring_attention_bwd", "ulysses_ring_attention_bwd", "ringx3_attention_bwd"})
    for (const char* elem : {"4", "2"}) {
      Ran r = exec(4, std::string(name) + " --set seq=480 --set heads=12 --set dim=16 --set elem=" + elem +
                          " --device host-staged --transport nccl --check --iters 1 --warmup 0 --json");
      INFO(name << " elem " << elem << ":\n" << r.out);
      REQUIRE(r.rc == 0);
      nlohmann::json j = row_of(r);
      CHECK(j["wrong"] == 0);
      CHECK(j["transport"] == "nccl");
      CHECK(j["max_abs_err"].get<double>() < 1e-5);
    }
  // RingX-1 reduces partial outputs with a collective: NCCL's reductions cannot merge them.
  Ran r = exec(4, "ringx1_attention --set seq=480 --set heads=12 --set dim=16 --device host-staged --transport nccl --iters 1 --warmup 0");
  CHECK(r.rc == 2);
  CHECK(r.out.find("ringx1_attention.sched:55:5: error: this collective reduces partial attention outputs") != std::string::npos);
}

TEST_CASE("partial outputs reduced along a tree of choreographic sends are merged, not summed", "[exec][mpi][attention]") {
  if (!have_mpiexec()) return;
  // For each root i: rank h collects the partials of ranks a and b in `mid` (send … reduce), then
  // sends its own partial and `mid` to the root. `mid` is tied to the outputs only through send
  // statements: exec joins a statement's two sides across ranks (summing there gave errors of 3.6).
  const std::string path = sgtest::temp_path("exec_attn_tree.sched");
  write_file(path, R"(schedule tree(seq = 480, heads = 2, dim = 16, batch = 1, causal = 0, elem = 4) {
  require N == 4, "four ranks";
  let blk = seq / N;
  buffer Q[N] bytes batch * heads * blk * dim * elem;
  buffer KV[N] bytes 2 * batch * heads * blk * dim * elem;
  buffer O[N] bytes batch * heads * blk * (dim + 1) * 4;
  buffer qb[1] bytes batch * heads * blk * dim * elem;
  buffer part[2] bytes batch * heads * blk * (dim + 1) * 4;
  buffer mid[2] bytes batch * heads * blk * (dim + 1) * 4;
  init Q owned;
  init KV owned;
  expect attention(Q, KV, O, full);
  for i in 0 .. N {
    let h = (i + 1) % N;
    let a = (i + 2) % N;
    let b = (i + 3) % N;
    copy Q[i] into qb[0] at i;
    bcast qb[0] root i;
    copy part[1] into part[0];
    copy mid[1] into mid[0] at h;
    compute attn(qb[0], KV[i]) into O[i] mask full at i;
    compute attn(qb[0], KV[h]) into part[0] mask full at h;
    compute attn(qb[0], KV[a]) into part[0] mask full at a;
    compute attn(qb[0], KV[b]) into part[0] mask full at b;
    send part[0] from a to h into mid[0] reduce;
    send part[0] from b to h into mid[0] reduce;
    send part[0] from h to i into O[i] reduce;
    send mid[0] from h to i into O[i] reduce;
  }
}
)");
  // (`copy mid[1] into mid[0]` clears mid[0] with a chunk never written: verify calls that
  // undefined data, a defect exec's zeroed buffers hide; run anyway.)
  for (const char* device : {"cpu", "host-staged"}) {
    Ran r = exec(4, path + " --device " + device + " --check --iters 1 --warmup 0 --json --allow-defects");
    INFO(device << ":\n" << r.out);
    REQUIRE(r.rc == 0);
    nlohmann::json j = row_of(r);
    CHECK(j["wrong"] == 0);
    CHECK(j["max_abs_err"].get<double>() < 1e-5);
  }
}

namespace {

// A hand-written bf16 ring attention that says its layout only in its declarations: shape and
// dtype of every buffer, no elem (and no batch). %Q% and %O% are the declarations of Q and O.
std::string declared_ring(const std::string& params, const std::string& q_decl, const std::string& o_decl,
                          const std::string& cur_type = "bf16") {
  return "schedule ring(" + params + R"() {
  let blk = seq / N;
  )" + q_decl +
         R"(
  buffer KV[N] shape [2, heads, blk, dim] dtype bf16;   # K then V
  )" + o_decl +
         R"(
  buffer cur[2] shape [2, heads, blk, dim] dtype )" +
         cur_type + R"(;
  init Q owned;
  init KV owned;
  expect attention(Q, KV, O, causal);
  for r in 0 .. N { copy KV[r] into cur[0] at r; }
  for s in 0 .. N {
    for r in 0 .. N {
      let j = (r - s) % N;
      if s < N - 1 { send cur[s % 2] from r to (r + 1) % N into cur[(s + 1) % 2]; }
      if j < r { compute attn(Q[r], cur[s % 2]) into O[r] mask full at r; }
      if j == r { compute attn(Q[r], cur[s % 2]) into O[r] mask causal at r; }
    }
  }
}
)";
}

const std::string kDeclQ = "buffer Q[N] shape [heads, blk, dim] dtype bf16;";
const std::string kDeclO = "buffer O[N] shape [heads, blk, dim + 1] dtype f32;   # a row's output, then its lse";

}  // namespace

TEST_CASE("attention laid out from its declarations: shape and dtype of the buffers, no elem", "[exec][mpi][attention]") {
  if (!have_mpiexec()) return;
  const std::string path = sgtest::temp_path("exec_attn_declared.sched");
  write_file(path, declared_ring("seq = 480, heads = 3, dim = 16", kDeclQ, kDeclO));
  Ran r = exec(4, path + " --check --iters 1 --warmup 0 --json");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  nlohmann::json j = row_of(r);
  CHECK(j["wrong"] == 0);
  CHECK(j["dtype"] == "bf16");
  CHECK(j["attention_inputs"] == "bf16");
  CHECK(j["attention_outputs"] == "fp32");
  CHECK(j["seq"] == 480);
  CHECK(j["heads"] == 3);
  CHECK(j["dim"] == 16);
  CHECK(j["batch"] == 1);
  CHECK(j["mask"] == "causal");
  CHECK(j["tolerance"].get<double>() == Approx(2.5e-2));
  CHECK(j["elements_checked"].get<uint64_t>() == 17u * 480u * 3u);  // O|lse of every row
  CHECK(j["max_abs_err"].get<double>() < 1e-4);
  CHECK(j["max_abs_err"].get<double>() > 0);
  // The parameters are only names for the extents: --set seq resizes the shapes.
  Ran s = exec(4, path + " --set seq=240 --check --iters 1 --warmup 0 --json");
  INFO(s.out);
  REQUIRE(s.rc == 0);
  CHECK(row_of(s)["seq"] == 240);
  CHECK(row_of(s)["wrong"] == 0);
  // No parameters at all: the shapes say everything (batch 2 as a leading extent).
  const std::string lit = sgtest::temp_path("exec_attn_literal.sched");
  write_file(lit, R"(schedule literal() {
  require N == 4, "four ranks";
  buffer Q[N] shape [2, 2, 24, 8] dtype bf16;
  buffer KV[N] shape [2, 2, 2, 24, 8] dtype bf16;
  buffer O[N] shape [2, 2, 24, 9];
  init Q owned;
  init KV owned;
  expect attention(Q, KV, O, full);
  for s in 0 .. N {
    for r in 0 .. N { compute attn(Q[r], KV[(r + s) % N]) into O[r] mask full at r; }
    for r in 0 .. N { if s < N - 1 { send KV[(r + s) % N] from r to (r + N - 1) % N; } }
  }
}
)");
  // The backward from its declarations: the q bundle per row is q and dO in bf16, then lse and D
  // in f32 (2·dim + 4 bf16 slots); gradients in f32.
  const std::string bwd = sgtest::temp_path("exec_attn_declared_bwd.sched");
  write_file(bwd, R"(schedule ring_bwd(seq = 480, heads = 3, dim = 16) {
  let blk = seq / N;
  buffer Q[N] shape [heads, blk, 2 * dim + 4] dtype bf16;
  buffer KV[N] shape [2, heads, blk, dim] dtype bf16;
  buffer dQ[N] shape [heads, blk, dim] dtype f32;
  buffer dKV[N] shape [2, heads, blk, dim] dtype f32;
  buffer cur[2] shape [2, heads, blk, dim] dtype bf16;
  buffer dcur[3] shape [2, heads, blk, dim] dtype f32;
  init Q owned;
  init KV owned;
  expect attention_backward(Q, KV, dQ, dKV, causal);
  for r in 0 .. N { copy KV[r] into cur[0] at r; }
  for s in 0 .. N {
    for r in 0 .. N {
      let j = (r - s) % N;
      if s < N - 1 { send cur[s % 2] from r to (r + 1) % N into cur[(s + 1) % 2]; }
      if s >= 2 { copy dcur[2] into dcur[s % 2] at r; }
      if j < r { compute attn_bwd(Q[r], cur[s % 2]) into dQ[r], dcur[s % 2] mask full at r; }
      if j == r { compute attn_bwd(Q[r], cur[s % 2]) into dQ[r], dcur[s % 2] mask causal at r; }
      if s >= 1 { send dcur[(s - 1) % 2] from (r - 1) % N to r into dcur[s % 2] reduce; }
    }
  }
  for r in 0 .. N { send dcur[(N - 1) % 2] from r to (r + 1) % N into dKV[(r + 1) % N]; }
}
)");
  Ran b = exec(4, bwd + " --check --iters 1 --warmup 0 --json");
  INFO(b.out);
  REQUIRE(b.rc == 0);
  nlohmann::json jb = row_of(b);
  CHECK(jb["wrong"] == 0);
  CHECK(jb["direction"] == "backward");
  CHECK(jb["dtype"] == "bf16");
  CHECK(jb["seq"] == 480);
  CHECK(jb["heads"] == 3);
  CHECK(jb["dim"] == 16);
  CHECK(jb["elements_checked"].get<uint64_t>() == 3u * 16u * 480u * 3u);  // dQ, dK, dV
  CHECK(jb["max_abs_err"].get<double>() < 1e-4);
  Ran l = exec(4, lit + " --check --iters 1 --warmup 0 --json");
  INFO(l.out);
  REQUIRE(l.rc == 0);
  nlohmann::json jl = row_of(l);
  CHECK(jl["wrong"] == 0);
  CHECK(jl["seq"] == 96);
  CHECK(jl["heads"] == 2);
  CHECK(jl["dim"] == 8);
  CHECK(jl["batch"] == 2);
  CHECK(jl["dtype"] == "bf16");
}

TEST_CASE("attention declarations that disagree with the tiles are refused at their line, exit 2", "[exec][mpi][attention][fail]") {
  if (!have_mpiexec()) return;
  const std::string path = sgtest::temp_path("exec_attn_decl_bad.sched");
  auto refused = [&](const std::string& text, const std::string& where, const std::string& what) {
    write_file(path, text);
    Ran r = exec(2, path + " --check --iters 1 --warmup 0");
    INFO(text << "\n" << r.out);
    CHECK(r.rc == 2);
    CHECK(r.out.find("exec_attn_decl_bad.sched:" + where + ": error: " + what) != std::string::npos);
    CHECK(r.out.find("^") != std::string::npos);
  };
  const std::string p = "seq = 480, heads = 3, dim = 16";
  // Sequence-major shapes ([blk, heads, dim]) are read as [heads, rows, dim]: the parameter seq
  // disagrees with what they give.
  std::string seq_major =
      declared_ring(p, "buffer Q[N] shape [blk, heads, dim] dtype bf16;", "buffer O[N] shape [blk, heads, dim + 1] dtype f32;");
  for (size_t at; (at = seq_major.find("[2, heads, blk, dim]")) != std::string::npos;) seq_major.replace(at, 20, "[2, blk, heads, dim]");
  refused(seq_major, "3:22",
          "buffer Q's chunk shape [240, 3, 16], read as [batch, heads, rows, dim], gives seq = 6, but the parameter seq = 480");
  // The kv double buffer holds the same bytes as a kv item, transposed: the tile reading it is refused.
  std::string transposed = declared_ring(p, kDeclQ, kDeclO);
  transposed.replace(transposed.find("buffer cur[2] shape [2, heads, blk, dim]"), 40, "buffer cur[2] shape [2, heads, dim, blk]");
  refused(transposed, "6:24",
          "buffer cur's chunk shape [2, 3, 16, 240] is kv of batch 1 × 3 heads × 16 rows × dim 240, but the tile at line 16 uses it as "
          "an item of batch 1 × 3 heads × 240 rows × dim 16");
  // The kv double buffer in f32 while the inputs are bf16: the copy into it is refused.
  refused(declared_ring(p, kDeclQ, kDeclO, "f32"), "10:37", "a copy between");
  // Outputs are f32.
  refused(declared_ring(p, kDeclQ, "buffer O[N] shape [heads, blk, dim + 1] dtype bf16;"), "5:49",
          "buffer O holds attention outputs (O|lse), declared bf16; exec computes them in f32");
  // O's rows need the lse: dim + 1 wide.
  refused(declared_ring(p, kDeclQ, "buffer O[N] shape [heads, blk, dim] dtype f32;"), "5:22",
          "buffer O's chunk shape [3, 240, 16] is O|lse of batch 1 × 3 heads × 240 rows × dim 15, but Q's [3, 240, 16] is of batch 1 × 3 "
          "heads × 240 rows × dim 16");
  // A leftover elem that says fp32.
  refused(declared_ring(p + ", elem = 4", kDeclQ, kDeclO), "3:45",
          "buffer Q is declared bf16, but the parameter elem = 4 says fp32 inputs");
  // --dtype would retype the declared buffers: refused as such, not at a declaration it rewrote.
  write_file(path, declared_ring(p, kDeclQ, kDeclO));
  Ran d = exec(2, path + " --dtype bf16 --check --iters 1");
  INFO(d.out);
  CHECK(d.rc == 2);
  CHECK(d.out.find("--dtype does not apply to attention schedules: their inputs' type is Q's and KV's declared dtype") !=
        std::string::npos);
  CHECK(d.out.find("sched:") == std::string::npos);
}

namespace {

// A causal bf16 ring whose buffers say their layouts (`layout` letters, core/graph/layout.hpp).
std::string laid_out_ring(const std::string& q, const std::string& kv, const std::string& o) {
  return R"(schedule ring(seq = 480, heads = 3, dim = 16, batch = 2) {
  let blk = seq / N;
  buffer Q[N] )" +
         q + R"( dtype bf16;
  buffer KV[N] )" +
         kv + R"( dtype bf16;
  buffer O[N] )" +
         o + R"(;
  buffer cur[2] )" +
         kv + R"( dtype bf16;
  init Q owned;
  init KV owned;
  expect attention(Q, KV, O, causal);
  for r in 0 .. N { copy KV[r] into cur[0] at r; }
  for s in 0 .. N {
    for r in 0 .. N {
      let j = (r - s) % N;
      if s < N - 1 { send cur[s % 2] from r to (r + 1) % N into cur[(s + 1) % 2]; }
      if j < r { compute attn(Q[r], cur[s % 2]) into O[r] mask full at r; }
      if j == r { compute attn(Q[r], cur[s % 2]) into O[r] mask causal at r; }
    }
  }
}
)";
}

}  // namespace

TEST_CASE("attention in the layouts people declare: bshd and sbhd q, packed and fused kv, O with or without its lse",
          "[exec][mpi][attention][layout]") {
  if (!have_mpiexec()) return;
  const std::string path = sgtest::temp_path("exec_attn_layouts.sched");
  struct Layouts {
    const char *q, *kv, *o;
  };
  const Layouts cases[] = {
      // Megatron: sequence-major q, kv fused as [s, b, h, 2·d]; O without the lse (exec keeps it).
      {"shape [blk, batch, heads, dim] layout sbhd", "shape [blk, batch, heads, 2 * dim] layout sbh2d",
       "shape [blk, batch, heads, dim] layout sbhd"},
      // flash-attn: bshd q and O, kv packed as [b, s, 2, h, d]; O with the lse as its last element.
      {"shape [batch, blk, heads, dim] layout bshd", "shape [batch, blk, 2, heads, dim] layout bs2hd",
       "shape [batch, blk, heads, dim + 1] layout bshd"},
      // TransformerEngine's bsh2d kv beside the kernels' own order for q.
      {"shape [batch, heads, blk, dim]", "shape [batch, blk, heads, 2, dim] layout bsh2d", "shape [batch, blk, heads, dim] layout bshd"},
  };
  for (const Layouts& c : cases) {
    write_file(path, laid_out_ring(c.q, c.kv, c.o));
    for (const char* device : {"cpu", "host-staged"}) {
      Ran r = exec(4, path + " --device " + device + " --check --iters 1 --warmup 0 --json");
      INFO(c.q << " / " << c.kv << " / " << c.o << " on " << device << ":\n" << r.out);
      REQUIRE(r.rc == 0);
      nlohmann::json j = row_of(r);
      CHECK(j["wrong"] == 0);
      CHECK(j["seq"] == 480);
      CHECK(j["heads"] == 3);
      CHECK(j["dim"] == 16);
      CHECK(j["batch"] == 2);
      CHECK(j["elements_checked"].get<uint64_t>() == 17u * 480u * 3u * 2u);  // O|lse of every row
      CHECK(j["max_abs_err"].get<double>() < 1e-4);
      CHECK(j["max_abs_err"].get<double>() > 0);
    }
  }
  // Over the stream-ordered transport too (NCCL's rules, kept by MPI on the stand-in device).
  write_file(path, laid_out_ring(cases[0].q, cases[0].kv, cases[0].o));
  Ran n = exec(4, path + " --device host-staged --transport nccl --check --iters 1 --warmup 0 --json");
  INFO(n.out);
  REQUIRE(n.rc == 0);
  CHECK(row_of(n)["wrong"] == 0);

  // The backward: kv fused, dQ bshd, dKV packed bs2hd; the gradient partials (bytes) take dkv's layout.
  const std::string bwd = sgtest::temp_path("exec_attn_layouts_bwd.sched");
  write_file(bwd, R"(schedule ring_bwd(seq = 480, heads = 3, dim = 16, batch = 2) {
  let blk = seq / N;
  buffer Q[N] shape [batch, heads, blk, 2 * dim + 4] dtype bf16;
  buffer KV[N] shape [blk, batch, heads, 2 * dim] layout sbh2d dtype bf16;
  buffer dQ[N] shape [batch, blk, heads, dim] layout bshd dtype f32;
  buffer dKV[N] shape [batch, blk, 2, heads, dim] layout bs2hd dtype f32;
  buffer cur[2] shape [blk, batch, heads, 2 * dim] layout sbh2d dtype bf16;
  buffer dcur[3] bytes 2 * batch * heads * blk * dim * 4 dtype f32;
  init Q owned;
  init KV owned;
  expect attention_backward(Q, KV, dQ, dKV, causal);
  for r in 0 .. N { copy KV[r] into cur[0] at r; }
  for s in 0 .. N {
    for r in 0 .. N {
      let j = (r - s) % N;
      if s < N - 1 { send cur[s % 2] from r to (r + 1) % N into cur[(s + 1) % 2]; }
      if s >= 2 { copy dcur[2] into dcur[s % 2] at r; }
      if j < r { compute attn_bwd(Q[r], cur[s % 2]) into dQ[r], dcur[s % 2] mask full at r; }
      if j == r { compute attn_bwd(Q[r], cur[s % 2]) into dQ[r], dcur[s % 2] mask causal at r; }
      if s >= 1 { send dcur[(s - 1) % 2] from (r - 1) % N to r into dcur[s % 2] reduce; }
    }
  }
  for r in 0 .. N { send dcur[(N - 1) % 2] from r to (r + 1) % N into dKV[(r + 1) % N]; }
}
)");
  for (const char* device : {"cpu", "host-staged"}) {
    Ran b = exec(4, bwd + " --device " + device + " --check --iters 1 --warmup 0 --json");
    INFO(device << ":\n" << b.out);
    REQUIRE(b.rc == 0);
    nlohmann::json jb = row_of(b);
    CHECK(jb["wrong"] == 0);
    CHECK(jb["direction"] == "backward");
    CHECK(jb["batch"] == 2);
    CHECK(jb["elements_checked"].get<uint64_t>() == 3u * 16u * 480u * 3u * 2u);  // dQ, dK, dV
    CHECK(jb["max_abs_err"].get<double>() < 1e-4);
  }
}

TEST_CASE("partial outputs in a declared layout merge across ranks with their lse; without it they are refused",
          "[exec][mpi][attention][layout][fail]") {
  if (!have_mpiexec()) return;
  // The tree of the merging test above, bshd throughout, batch 2.
  auto tree = [](const std::string& o_row) {
    return R"(schedule tree(seq = 480, heads = 2, dim = 16, batch = 2) {
  require N == 4, "four ranks";
  let blk = seq / N;
  buffer Q[N] shape [batch, blk, heads, dim] layout bshd;
  buffer KV[N] shape [batch, blk, 2, heads, dim] layout bs2hd;
  buffer O[N] shape [batch, blk, heads, )" +
           o_row + R"(] layout bshd;
  buffer qb[1] shape [batch, blk, heads, dim] layout bshd;
  buffer part[2] shape [batch, blk, heads, )" +
           o_row + R"(] layout bshd;
  buffer mid[2] shape [batch, blk, heads, )" +
           o_row + R"(] layout bshd;
  init Q owned;
  init KV owned;
  expect attention(Q, KV, O, full);
  for i in 0 .. N {
    let h = (i + 1) % N;
    let a = (i + 2) % N;
    let b = (i + 3) % N;
    copy Q[i] into qb[0] at i;
    bcast qb[0] root i;
    copy part[1] into part[0];
    copy mid[1] into mid[0] at h;
    compute attn(qb[0], KV[i]) into O[i] mask full at i;
    compute attn(qb[0], KV[h]) into part[0] mask full at h;
    compute attn(qb[0], KV[a]) into part[0] mask full at a;
    compute attn(qb[0], KV[b]) into part[0] mask full at b;
    send part[0] from a to h into mid[0] reduce;
    send part[0] from b to h into mid[0] reduce;
    send part[0] from h to i into O[i] reduce;
    send mid[0] from h to i into O[i] reduce;
  }
}
)";
  };
  const std::string path = sgtest::temp_path("exec_attn_layout_tree.sched");
  write_file(path, tree("dim + 1"));
  for (const char* device : {"cpu", "host-staged"}) {
    Ran r = exec(4, path + " --device " + device + " --check --iters 1 --warmup 0 --json --allow-defects");
    INFO(device << ":\n" << r.out);
    REQUIRE(r.rc == 0);
    nlohmann::json j = row_of(r);
    CHECK(j["wrong"] == 0);
    CHECK(j["batch"] == 2);
    CHECK(j["max_abs_err"].get<double>() < 1e-5);
  }
  // Rows of dim: a partial output has no lse to merge with. Refused at the first step that moves one.
  write_file(path, tree("dim"));
  Ran bad = exec(4, path + " --check --iters 1 --warmup 0 --allow-defects");
  INFO(bad.out);
  CHECK(bad.rc == 2);
  CHECK(bad.out.find("exec_attn_layout_tree.sched:19:5: error: this step moves or merges part, which holds partial attention outputs O "
                     "declared without their lse") != std::string::npos);
  CHECK(bad.out.find("^") != std::string::npos);
}

TEST_CASE("layouts exec cannot read for their role are refused at the layout, exit 2", "[exec][mpi][attention][layout][fail]") {
  if (!have_mpiexec()) return;
  const std::string path = sgtest::temp_path("exec_attn_layout_bad.sched");
  auto refused = [&](const std::string& text, const std::string& where, const std::string& what) {
    write_file(path, text);
    Ran r = exec(2, path + " --check --iters 1 --warmup 0");
    INFO(text << "\n" << r.out);
    CHECK(r.rc == 2);
    CHECK(r.out.find("exec_attn_layout_bad.sched:" + where + ": error: " + what) != std::string::npos);
    CHECK(r.out.find("^") != std::string::npos);
  };
  const std::string q = "shape [batch, blk, heads, dim] layout bshd", kv = "shape [batch, blk, 2, heads, dim] layout bs2hd",
                    o = "shape [batch, blk, heads, dim] layout bshd";
  // kv without its 2.
  refused(laid_out_ring(q, "shape [batch, blk, heads, 2 * dim] layout bshd", o), "4:58",
          "buffer KV holds kv items, but its chunk shape [2, 240, 3, 32] layout bshd has no 2 (K then V)");
  // The double buffer in another layout than KV: bytes move as they are, so it is refused.
  std::string other = laid_out_ring(q, kv, o);
  other.replace(other.find("buffer cur[2] shape [batch, blk, 2, heads, dim] layout bs2hd"), 60,
                "buffer cur[2] shape [batch, 2, blk, heads, dim] layout b2shd");
  refused(other, "6:58", "buffer cur lays out its kv items as layout b2shd, but the expect's kv buffer as layout bs2hd");
  // A letter the language does not know: elaborate's, at the layout.
  write_file(path, laid_out_ring("shape [batch, blk, heads, dim] layout bsxd", kv, o));
  Ran x = sgtest::run_command("'" + kBin + "' check " + path + " -n 2 2>&1");
  INFO(x.out);
  CHECK(x.rc == 2);
  CHECK(x.out.find("exec_attn_layout_bad.sched:3:53: error: layout letter 'x' is none of b (batch)") != std::string::npos);
}

namespace {

// Ring attention with K and V as two buffers, rotated in two double buffers: the forward with
// q, K, V and O in bshd (O without its lse), the backward with K, V, dK, dV in sbhd and the
// gradient partials in bytes buffers.
const std::string kRingKv = R"(schedule ring_kv(seq = 480, heads = 3, dim = 16, batch = 2) {
  let blk = seq / N;
  buffer Q[N] shape [batch, blk, heads, dim] layout bshd dtype bf16;
  buffer K[N] shape [batch, blk, heads, dim] layout bshd dtype bf16;
  buffer V[N] shape [batch, blk, heads, dim] layout bshd dtype bf16;
  buffer O[N] shape [batch, blk, heads, dim] layout bshd;
  buffer ck[2] shape [batch, blk, heads, dim] layout bshd dtype bf16;
  buffer cv[2] shape [batch, blk, heads, dim] layout bshd dtype bf16;
  init Q owned;
  init K owned;
  init V owned;
  expect attention(Q, K, V, O, causal);
  for r in 0 .. N { copy K[r] into ck[0] at r; copy V[r] into cv[0] at r; }
  for s in 0 .. N {
    for r in 0 .. N {
      let j = (r - s) % N;
      if s < N - 1 {
        send ck[s % 2] from r to (r + 1) % N into ck[(s + 1) % 2];
        send cv[s % 2] from r to (r + 1) % N into cv[(s + 1) % 2];
      }
      if j < r { compute attn(Q[r], ck[s % 2], cv[s % 2]) into O[r] mask full at r; }
      if j == r { compute attn(Q[r], ck[s % 2], cv[s % 2]) into O[r] mask causal at r; }
    }
  }
}
)";
const std::string kRingKvBwd = R"(schedule ring_kv_bwd(seq = 480, heads = 3, dim = 16, batch = 2) {
  let blk = seq / N;
  buffer Q[N] shape [batch, heads, blk, 2 * dim + 4] dtype bf16;
  buffer K[N] shape [blk, batch, heads, dim] layout sbhd dtype bf16;
  buffer V[N] shape [blk, batch, heads, dim] layout sbhd dtype bf16;
  buffer dQ[N] shape [batch, blk, heads, dim] layout bshd dtype f32;
  buffer dK[N] shape [blk, batch, heads, dim] layout sbhd dtype f32;
  buffer dV[N] shape [blk, batch, heads, dim] layout sbhd dtype f32;
  buffer ck[2] bytes batch * heads * blk * dim * 2 dtype bf16;
  buffer cv[2] bytes batch * heads * blk * dim * 2 dtype bf16;
  buffer gk[3] bytes batch * heads * blk * dim * 4 dtype f32;
  buffer gv[3] bytes batch * heads * blk * dim * 4 dtype f32;
  init Q owned;
  init K owned;
  init V owned;
  expect attention_backward(Q, K, V, dQ, dK, dV, causal);
  for r in 0 .. N { copy K[r] into ck[0] at r; copy V[r] into cv[0] at r; }
  for s in 0 .. N {
    for r in 0 .. N {
      let j = (r - s) % N;
      if s < N - 1 {
        send ck[s % 2] from r to (r + 1) % N into ck[(s + 1) % 2];
        send cv[s % 2] from r to (r + 1) % N into cv[(s + 1) % 2];
      }
      if s >= 2 { copy gk[2] into gk[s % 2] at r; copy gv[2] into gv[s % 2] at r; }
      if j < r { compute attn_bwd(Q[r], ck[s % 2], cv[s % 2]) into dQ[r], gk[s % 2], gv[s % 2] mask full at r; }
      if j == r { compute attn_bwd(Q[r], ck[s % 2], cv[s % 2]) into dQ[r], gk[s % 2], gv[s % 2] mask causal at r; }
      if s >= 1 {
        send gk[(s - 1) % 2] from (r - 1) % N to r into gk[s % 2] reduce;
        send gv[(s - 1) % 2] from (r - 1) % N to r into gv[s % 2] reduce;
      }
    }
  }
  for r in 0 .. N {
    send gk[(N - 1) % 2] from r to (r + 1) % N into dK[(r + 1) % N];
    send gv[(N - 1) % 2] from r to (r + 1) % N into dV[(r + 1) % N];
  }
}
)";

}  // namespace

TEST_CASE("K and V as two buffers: attn(Q[i], K[j], V[j]), forward and backward, the numbers of one packed kv buffer",
          "[exec][mpi][attention][layout]") {
  if (!have_mpiexec()) return;
  // Forward: q, K, V and O in bshd (O without its lse), K and V rotated in two double buffers.
  const std::string fwd = sgtest::temp_path("exec_attn_kv_apart.sched");
  write_file(fwd, kRingKv);
  // The same ring with one packed kv (bs2hd): the same inputs (K is the first half of a kv
  // item, V the second), so the same outputs to the last bit.
  const std::string packed = sgtest::temp_path("exec_attn_kv_packed.sched");
  write_file(packed, laid_out_ring("shape [batch, blk, heads, dim] layout bshd", "shape [batch, blk, 2, heads, dim] layout bs2hd",
                                   "shape [batch, blk, heads, dim] layout bshd"));
  Ran p = exec(4, packed + " --check --iters 1 --warmup 0 --json");
  INFO(p.out);
  REQUIRE(p.rc == 0);
  const double packed_err = row_of(p)["max_abs_err"].get<double>();
  for (const char* device : {"cpu", "host-staged"}) {
    Ran r = exec(4, fwd + " --device " + device + " --check --iters 1 --warmup 0 --json");
    INFO(device << ":\n" << r.out);
    REQUIRE(r.rc == 0);
    nlohmann::json j = row_of(r);
    CHECK(j["wrong"] == 0);
    CHECK(j["batch"] == 2);
    CHECK(j["elements_checked"].get<uint64_t>() == 17u * 480u * 3u * 2u);
    CHECK(j["max_abs_err"].get<double>() == packed_err);
    CHECK(j["max_abs_err"].get<double>() > 0);
  }
  Ran n = exec(4, fwd + " --device host-staged --transport nccl --check --iters 1 --warmup 0 --json");
  INFO(n.out);
  REQUIRE(n.rc == 0);
  CHECK(row_of(n)["wrong"] == 0);

  // Backward: K, V, dK and dV apart (sbhd), their gradient partials in bytes buffers.
  const std::string bwd = sgtest::temp_path("exec_attn_kv_apart_bwd.sched");
  write_file(bwd, kRingKvBwd);
  for (const char* device : {"cpu", "host-staged"}) {
    Ran b = exec(4, bwd + " --device " + device + " --check --iters 1 --warmup 0 --json");
    INFO(device << ":\n" << b.out);
    REQUIRE(b.rc == 0);
    nlohmann::json jb = row_of(b);
    CHECK(jb["wrong"] == 0);
    CHECK(jb["direction"] == "backward");
    CHECK(jb["elements_checked"].get<uint64_t>() == 3u * 16u * 480u * 3u * 2u);  // dQ, dK, dV
    CHECK(jb["max_abs_err"].get<double>() < 1e-4);
  }
  // dV given dK's partials: the check finds every dV element wrong.
  std::string swapped = kRingKvBwd;
  const std::string to_dv = "send gv[(N - 1) % 2] from r";
  swapped.replace(swapped.find(to_dv), to_dv.size(), "send gk[(N - 1) % 2] from r");
  write_file(bwd, swapped);
  Ran w = exec(4, bwd + " --check --iters 1 --warmup 0 --json --allow-defects");
  INFO(w.out);
  CHECK(w.rc == 1);
  CHECK(w.out.find("dKV") != std::string::npos);
  // A tile with one KV operand beside an expect with K and V apart: refused at the tile.
  std::string mixed = kRingKv;
  const std::string tile = "compute attn(Q[r], ck[s % 2], cv[s % 2]) into O[r] mask full";
  mixed.replace(mixed.find(tile), tile.size(), "compute attn(Q[r], ck[s % 2]) into O[r] mask full");
  write_file(fwd, mixed);
  Ran m = exec(4, fwd + " --check --iters 1 --warmup 0");
  INFO(m.out);
  CHECK(m.rc == 2);
  CHECK(m.out.find("error: this tile takes one KV operand, but the expect K and V apart") != std::string::npos);
}
