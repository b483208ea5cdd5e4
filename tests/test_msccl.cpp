// The MSCCL XML front end (docs/msccl.md): files read with located errors, lowered to step graphs
// with RCCL's aliasing, and checked and verified with the right verdict at the right step; the
// fixed file passes. The msccl-tools outputs in tests/msccl/generated/ are held against
// MSCCLang's own Check() (and an independent chunk simulator): the same files pass and fail.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/io/writers.hpp"
#include "core/pipeline.hpp"
#include "run_command.hpp"

namespace {

using nlohmann::json;

const std::string kDir = STEPGRAPH_SOURCE_DIR "/tests/msccl/";

// Runs stepgraph with `args`; stdout only (stderr to /dev/null), or both with `with_stderr`.
sgtest::Ran run(const std::string& args, bool with_stderr = false) {
  return sgtest::run_command("'" STEPGRAPH_BIN "' " + args + (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

json run_json(const std::string& args, int rc) {
  sgtest::Ran r = run(args + " --json");
  INFO(args << "\n" << r.out);
  REQUIRE(r.rc == rc);
  return json::parse(r.out);
}

// The lowered graph of a test file (library level).
std::unique_ptr<sg::StepGraph> lower(const std::string& file, std::vector<std::pair<std::string, std::string>> sets = {}) {
  sg::Session s;
  sg::Target t = sg::open_target(s, kDir + file);
  REQUIRE(t.opened());
  REQUIRE(t.fixed_ranks > 0);
  sg::BuildOptions bo;
  bo.elab.nranks = t.fixed_ranks;
  bo.elab.sets = std::move(sets);
  sg::Built b = sg::build(s, t, bo);
  REQUIRE(b.ok());
  return std::move(b.graph);
}

}  // namespace

TEST_CASE("an MSCCL file lowers to one rank per gpu, steps in thread-block order, labelled", "[msccl]") {
  auto g = lower("allgather_pair.xml", {{"size", "1MiB"}});
  CHECK(g->nranks == 2);
  CHECK(g->size() == 6);            // 2 sends, 2 receives, 2 copies
  CHECK(g->connection_slots == 2);  // Simple: 2 pieces in flight on a connection (NCCL_STEPS = 8)
  CHECK(g->unordered_hazards);
  // Chunk = size / nchunksperloop; out of place: i has 1 chunk, o 2.
  REQUIRE(g->buffers.size() >= 2);
  CHECK(g->buffers[0].name == "i");
  CHECK(g->buffers[0].chunks == 1);
  CHECK(g->buffers[1].name == "o");
  CHECK(g->buffers[1].chunks == 2);
  CHECK(g->buffers[0].chunk_bytes == 512 * 1024);
  std::string d = sg::describe_step(*g, 1);
  CHECK(d.find("gpu 0 tb 0 step 1 (r)") != std::string::npos);
  auto ll = lower("send3_ll.xml");
  CHECK(ll->connection_slots == 8);  // LL: 8 slots
}

TEST_CASE("check and verify find the defect of each broken file, at its step, and pass the fixed one", "[msccl]") {
  SECTION("a race between two thread blocks with no depid between them") {
    json v = run_json("verify '" + kDir + "allgather_race.xml'", 1);
    CHECK(v["verdicts"][0]["verdict"] == "race");
    CHECK(v["verdicts"][0]["semantics"] == "bounded");
    auto steps = v["counterexample"]["steps"];
    REQUIRE(steps.size() == 2);
    CHECK(steps[0]["line"] == 6);   // gpu 0 tb 0 step 0: sends o[0]
    CHECK(steps[1]["line"] == 10);  // gpu 0 tb 1 step 0: copies into o[0]
    CHECK(v["counterexample"]["chunk"] == "o[0]");
    json f = run_json("verify '" + kDir + "allgather_race_fixed.xml'", 0);
    CHECK(f["verdicts"][0]["verdict"] == "ok");
    json c = run_json("check '" + kDir + "allgather_race_fixed.xml'", 0);
    CHECK(c[0]["result"] == "ok");
    CHECK(c[0]["chunks_checked"] == 4);
  }
  SECTION("a wrong result: a copy of the wrong block") {
    json c = run_json("check '" + kDir + "allgather_wrong.xml'", 1);
    CHECK(c[0]["result"] == "wrong-result");
    CHECK(c[0]["findings"][0]["line"] == 18);
    CHECK(c[0]["findings"][0]["message"].get<std::string>().find("rank 1, o[0]") != std::string::npos);
    json v = run_json("verify '" + kDir + "allgather_wrong.xml'", 1);
    CHECK(v["verdicts"][0]["verdict"] == "wrong-result");
  }
  SECTION("a send nobody receives") {
    json v = run_json("verify '" + kDir + "allgather_unmatched.xml'", 1);
    CHECK(v["verdicts"][0]["verdict"] == "unmatched");
    CHECK(v["counterexample"]["steps"][0]["line"] == 5);
  }
  SECTION("the correct file passes both") {
    CHECK(run_json("check '" + kDir + "allgather_pair.xml'", 0)[0]["result"] == "ok");
    CHECK(run_json("verify '" + kDir + "allgather_pair.xml'", 0)["verdicts"][0]["verdict"] == "ok");
  }
}

TEST_CASE("bounded connections: three sends each way deadlock with Simple's 2 slots, not with LL's 8", "[msccl][bounded]") {
  json v = run_json("verify '" + kDir + "send3_simple.xml'", 1);
  CHECK(v["verdicts"][0]["verdict"] == "deadlock");
  CHECK(v["verdicts"][0]["semantics"] == "bounded");
  auto steps = v["counterexample"]["steps"];
  REQUIRE(steps.size() == 2);
  CHECK(steps[0]["line"] == 9);  // each gpu's third send waits for a slot
  CHECK(steps[1]["line"] == 19);
  CHECK(run_json("verify '" + kDir + "send3_ll.xml'", 0)["verdicts"][0]["verdict"] == "ok");
  // One slot more, and the Simple file passes; unbounded (eager) too; rendezvous deadlocks.
  CHECK(run_json("verify '" + kDir + "send3_simple.xml' --slots 3", 0)["verdicts"][0]["verdict"] == "ok");
  CHECK(run_json("verify '" + kDir + "send3_simple.xml' --semantics eager", 0)["verdicts"][0]["verdict"] == "ok");
  // The deterministic check runs sends eagerly: it cannot see the slot limit.
  CHECK(run_json("check '" + kDir + "send3_simple.xml'", 0)[0]["result"] == "ok");
}

TEST_CASE("malformed MSCCL files get located errors and exit 2", "[msccl][errors]") {
  struct Case {
    std::string file, where, what;
  };
  // Each is the first error of a file made from allgather_pair.xml by one edit.
  std::vector<Case> cases = {
      {"bad/mismatched_tag.xml", ":7:10: error:", "</tbx> closes <tb>"},
      {"bad/step_type.xml", ":5:19: error:", "unknown step type 'q'"},
      {"bad/offset.xml", ":6:7: error:", "outside the buffer o of 2 chunks"},
      {"bad/peer.xml", ":4:16: error:", "send=7 is out of range"},
      {"bad/integer.xml", ":5:72: error:", "cnt=\"x\" is not an integer"},
      {"bad/ngpus.xml", ":2:1: error:", "ngpus=3 but 2 <gpu> elements"},
      {"bad/shared_connection.xml", ":8:5: error:", "thread blocks 0 and 1 of gpu 0 both send to gpu 1 on channel 0"},
      {"allgather_cycle.xml", ":5:7: error:", "deadlock: on gpu 0, thread block 0 step 0 waits for thread block 1 step 0"},
  };
  for (const Case& c : cases) {
    INFO(c.file);
    sgtest::Ran r = run("check '" + kDir + c.file + "'", true);
    INFO(r.out);
    CHECK(r.rc == 2);
    CHECK(r.out.find(c.file + c.where) != std::string::npos);
    CHECK(r.out.find(c.what) != std::string::npos);
    CHECK(r.out.find("^") != std::string::npos);  // the source line and a caret
  }
  // A rank count other than ngpus.
  sgtest::Ran r = run("verify '" + kDir + "allgather_pair.xml' -n 3", true);
  CHECK(r.rc == 2);
  CHECK(r.out.find("allgather_pair.xml:2:1: error: this MSCCL algorithm runs on ngpus=2 ranks, not N = 3") != std::string::npos);
  // A parameter an MSCCL file does not take.
  r = run("check '" + kDir + "allgather_pair.xml' --set chunks=4", true);
  CHECK(r.rc == 2);
  CHECK(r.out.find("unknown parameter 'chunks'") != std::string::npos);
}

TEST_CASE("msccl-tools' own outputs: the files MSCCLang's Check() passes pass, the one it fails fails", "[msccl][peer]") {
  // tests/msccl/generated/README.md: which msccl-tools example made each file, and how.
  for (const char* f : {"allgather_ring_8gpu_1ch_1inst_Simple.xml", "allreduce_a100_ring_4gpu_4ch_2inst_LL.xml",
                        "allreduce_a100_ring_8gpu_1ch_1inst_Simple.xml", "alltoall_allpairs_8gpu_1inst_Simple.xml",
                        "hierarchical_allreduce_4gpn_2node_1inst_Simple.xml"}) {
    INFO(f);
    CHECK(run_json(std::string("check '") + kDir + "generated/" + f + "'", 0)[0]["result"] == "ok");
    CHECK(run_json(std::string("verify '") + kDir + "generated/" + f + "'", 0)["verdicts"][0]["verdict"] == "ok");
  }
  // allreduce_a100_pcie_hierarchical.py: its own Check() fails too. Rank 0's first chunk ends up
  // with rank 1's contribution twice and none of ranks 2 and 3.
  json c = run_json("check '" + kDir + "generated/allreduce_a100_pcie_hierarchical_4gpu_1inst_LL.xml'", 1);
  CHECK(c[0]["result"] == "wrong-result");
  CHECK(c[0]["findings"][0]["message"].get<std::string>().find("d(1, 0) counted twice") != std::string::npos);
}

TEST_CASE("the same file simulates at the size asked; run out of place, an in-place file leaves o unwritten", "[msccl][sim]") {
  sgtest::Ran r = run("sim '" + kDir + "generated/allreduce_a100_ring_8gpu_1ch_1inst_Simple.xml' --set size=1MiB --json");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  json j = json::parse(r.out);
  CHECK(j["ranks"] == 8);  // -n left out: the file's ngpus
  CHECK(j["completed"] == true);
  CHECK(j["time_s"].get<double>() > 0);
  // Out of place, which this in-place file does not declare: a warning, and o is never written.
  sgtest::Ran w = run("check '" + kDir + "generated/allreduce_a100_ring_8gpu_1ch_1inst_Simple.xml' --set inplace=0", true);
  CHECK(w.rc == 1);
  CHECK(w.out.find("wrong result: rank 0, o[0]: never written") != std::string::npos);
  CHECK(w.out.find("warning: inplace=0, but the file does not declare out-of-place use") != std::string::npos);
}

TEST_CASE("the protocol sets bandwidth and latency: LL moves 2 bytes per byte, Simple waits 2.8 us more, in both engines", "[msccl][sim]") {
  // (send3_simple.xml deadlocks on a GPU: its Simple connections hold 2 messages and each side
  // sends 3 first. The check before the run refuses it; these are timings of the protocols.)
  auto sim = [](const std::string& file, const std::string& size, const std::string& model) {
    sgtest::Ran r = run("sim '" + kDir + file + "' --set size=" + size + " --model " + model + " --json --allow-defects");
    INFO(r.out);
    REQUIRE(r.rc == 0);
    return json::parse(r.out);
  };
  double small[2][2] = {};
  for (int m = 0; m < 2; ++m) {
    const char* model = m ? "simgrid" : "analytic";
    INFO(model);
    json simple = sim("send3_simple.xml", "48MiB", model), ll = sim("send3_ll.xml", "48MiB", model);
    CHECK(simple["wire"] == "proto Simple: 2.8 us more per message than LL");
    CHECK(ll["wire"] == "proto LL: 2 bytes on the wire per payload byte");
    // Large: the same steps, the bandwidth term doubles (the latency is µs of ms).
    CHECK(ll["time_s"].get<double>() / simple["time_s"].get<double>() == Approx(2.0).epsilon(0.01));
    // Small (three 1 KiB messages each way, sent at once): Simple's 2.8 µs handshake against
    // LL's doubled bytes (3 × 82 ns at 100 Gb/s).
    small[m][0] = sim("send3_simple.xml", "3KiB", model)["time_s"].get<double>();
    small[m][1] = sim("send3_ll.xml", "3KiB", model)["time_s"].get<double>();
    CHECK(small[m][0] - small[m][1] > 2.5e-6);
    CHECK(small[m][0] - small[m][1] < 2.8e-6);
  }
  CHECK(small[0][0] == Approx(small[1][0]).epsilon(1e-9));  // the engines agree
  CHECK(small[0][1] == Approx(small[1][1]).epsilon(1e-9));
}

TEST_CASE("sim ranks an MSCCL file against a library schedule across sizes, with the file's window", "[msccl][sim]") {
  // A hand-made window on allgather_pair: minBytes 1 KiB, maxBytes 64 KiB.
  sgtest::Ran r = run("sim '" + kDir + "allgather_window.xml',ring_allgather --sweep size=16KiB..256KiB --model analytic");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("the runtime picks it for 1.00 KiB to 64.00 KiB (minBytes, maxBytes)") != std::string::npos);
  CHECK(r.out.find("fastest:") != std::string::npos);
  CHECK(r.out.find("N = 2, size 16.00 KiB: ") != std::string::npos);
  CHECK(r.out.find("N = 2, size 256.00 KiB: ") != std::string::npos);
  // A size outside the window: a warning, as RCCL would not pick the file.
  sgtest::Ran w = run("check '" + kDir + "allgather_window.xml' --set size=1MiB", true);
  CHECK(w.rc == 0);
  CHECK(w.out.find("outside the file's window (minBytes=1024, maxBytes=65536)") != std::string::npos);
}

namespace {

// A number from the last "size is N bytes" of an exported file's comment.
uint64_t exported_size(const std::string& file) {
  sgtest::Ran r = sgtest::run_command("grep -o 'size is [0-9]*' '" + file + "' | grep -o '[0-9]*'");
  return std::stoull(r.out);
}

std::string verdicts(const json& v) {
  std::string out;
  for (const auto& m : v["verdicts"]) {
    if (!out.empty()) out += ",";
    out += m["verdict"].get<std::string>();
  }
  return out;
}

}  // namespace

TEST_CASE("export round trip: every library collective MSCCL can hold, at N = 8 and 16, same verdict and simulated time",
          "[msccl][export]") {
  sgtest::Ran list = run("list");
  REQUIRE(list.rc == 0);
  std::vector<std::string> names;
  for (size_t at = 0; at < list.out.size();) {
    size_t end = list.out.find('\n', at);
    std::string line = list.out.substr(at, end - at);
    if (!line.empty()) names.push_back(line.substr(0, line.find(' ')));
    at = end == std::string::npos ? list.out.size() : end + 1;
  }
  const std::string tmp = "/tmp/sg_test_msccl_export_" + std::to_string(::getpid()) + ".xml";
  int exported = 0;
  for (uint32_t n : {8u, 16u})
    for (const std::string& s : names) {
      sgtest::Ran c = run("compile " + s + " -n " + std::to_string(n) + " --set size=64KiB --format msccl -o " + tmp, true);
      if (c.rc != 0) {
        // Refused with the reason at the statement: not a collective MSCCL names, or a schedule
        // with compute or several postconditions, or one without a size (attention).
        INFO(s << "\n" << c.out);
        CHECK(c.rc == 2);
        CHECK((c.out.find("cannot export to MSCCL") != std::string::npos || c.out.find("unknown parameter 'size'") != std::string::npos));
        continue;
      }
      ++exported;
      INFO(s << " N = " << n);
      std::string size = std::to_string(exported_size(tmp));
      // The verdict: every semantics of the original, the bounded one of the file: all ok.
      json a = run_json("verify " + s + " -n " + std::to_string(n) + " --set size=64KiB", 0);
      json b = run_json("verify " + tmp + " --set size=" + size, 0);
      CHECK(verdicts(a).find_first_not_of("ok,") == std::string::npos);
      CHECK(verdicts(b) == "ok");
      // The time: the file's sends are buffered as in MSCCL, so the original runs with eager sends,
      // and with the Simple protocol's handshake on every message, which the file pays.
      json sa = run_json(
          "sim " + s + " -n " + std::to_string(n) + " --set size=64KiB --model analytic --protocol eager --message-latency 2.8us", 0);
      json sb = run_json("sim " + tmp + " --set size=" + size + " --model analytic", 0);
      CHECK(sb["time_s"].get<double>() == Approx(sa["time_s"].get<double>()).epsilon(1e-12));
    }
  std::remove(tmp.c_str());
  CHECK(exported >= 38);  // 19 collectives at each N (docs/msccl.md, "Export")
}

TEST_CASE("export refuses what MSCCL cannot hold, at the statement, and keeps a defect's verdict", "[msccl][export]") {
  sgtest::Ran b = run("compile binomial_bcast -n 8 --format msccl", true);
  CHECK(b.rc == 2);
  CHECK(b.out.find("binomial_bcast.sched:16:3: error: cannot export to MSCCL: this is broadcast") != std::string::npos);
  sgtest::Ran d = run("compile dp_bucketed_step -n 4 --format msccl", true);
  CHECK(d.rc == 2);
  CHECK(d.out.find("MSCCL has no compute step") != std::string::npos);
  sgtest::Ran r = run("compile ring_allreduce -n 4 --rank 1 --format msccl", true);
  CHECK(r.rc == 2);
  // A schedule with a wrong result: exported, imported, the same verdict at the file's line.
  const std::string tmp = "/tmp/sg_test_msccl_bad_" + std::to_string(::getpid()) + ".xml";
  REQUIRE(run("compile '" STEPGRAPH_SOURCE_DIR "/tests/verify_cases/doubled_reduce.sched:bad' -n 3 --format msccl -o " + tmp).rc == 0);
  json v = run_json("verify " + tmp + " --set size=" + std::to_string(exported_size(tmp)), 1);
  CHECK(verdicts(v) == "wrong-result");
  CHECK(v["counterexample"]["steps"][0]["file"] == tmp);
  std::remove(tmp.c_str());
}

TEST_CASE("progress flags as RCCL's kernel posts them: a waited-on step that never posts is a deadlock naming both lines",
          "[msccl][flags]") {
  // Issue 28: the send waits for tb 1 step 0 (line 11), whose hasdep="0" means RCCL's kernel
  // never raises tb 1's flag: the send (line 7) spins for ever. check and verify said ok.
  json v = run_json("verify '" + kDir + "allgather_hasdep0.xml'", 1);
  INFO(v.dump(2));
  CHECK(v["verdicts"][0]["verdict"] == "deadlock");
  auto steps = v["counterexample"]["steps"];
  REQUIRE(steps.size() >= 2);
  CHECK(steps[0]["line"] == 7);
  CHECK(steps[0]["role"] == "stuck");
  CHECK(steps[0]["note"].get<std::string>().find("waits for thread block 1's flag to reach step 0") != std::string::npos);
  CHECK(steps[0]["note"].get<std::string>().find("hasdep=\"0\"") != std::string::npos);
  CHECK(steps[1]["line"] == 11);
  CHECK(steps[1]["role"] == "never posts");
  json c = run_json("check '" + kDir + "allgather_hasdep0.xml'", 1);
  INFO(c.dump(2));
  CHECK(c[0]["result"] == "stuck");
  CHECK(c[0]["findings"][0]["line"] == 7);
  CHECK(c[0]["findings"][0]["message"].get<std::string>().rfind("deadlock: ", 0) == 0);
  sgtest::Ran text = run("check '" + kDir + "allgather_hasdep0.xml'", true);
  CHECK(text.out.find("allgather_hasdep0.xml:11:") != std::string::npos);  // the note names the step waited for
  // The simulators: the send never starts, so no time, a deadlock.
  for (const char* model : {"analytic", "simgrid"}) {
    sgtest::Ran s = run(std::string("sim '") + kDir + "allgather_hasdep0.xml' --model " + model + " --allow-defects", true);
    INFO(model << "\n" << s.out);
    CHECK(s.out.find("deadlock") != std::string::npos);
  }
  // The fixed file (hasdep="1" on the copy) passes: allgather_race_fixed.xml.
  CHECK(run_json("verify '" + kDir + "allgather_race_fixed.xml'", 0)["verdicts"][0]["verdict"] == "ok");
}

TEST_CASE("progress flags: a step released by a later post is warned about and timed late", "[msccl][flags]") {
  auto g = lower("allgather_late_post.xml");
  // gpu 0 tb 0's send depends on tb 1 step 1 (the first post), not on step 0.
  sg::StepId send = sg::kNoStep, post = sg::kNoStep;
  for (sg::StepId s = 0; s < g->size(); ++s) {
    if (g->rank(s) == 0 && g->kind(s) == sg::StepKind::Send) send = s;
    if (g->rank(s) == 0 && g->kind(s) == sg::StepKind::Copy && g->loc(s).line == 12) post = s;
  }
  REQUIRE(send != sg::kNoStep);
  REQUIRE(post != sg::kNoStep);
  auto deps = g->deps(send);
  CHECK(std::find(deps.begin(), deps.end(), post) != deps.end());
  CHECK(g->never_ready.empty());
  sgtest::Ran r = run("check '" + kDir + "allgather_late_post.xml'", true);
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK(r.out.find("allgather_late_post.xml:7:") != std::string::npos);
  CHECK(r.out.find("lets it go only at step 1, the first to post after it: later than the file says") != std::string::npos);
  CHECK(r.out.find("allgather_late_post.xml:11:") != std::string::npos);  // step 0: hasdep="0"
  CHECK(r.out.find("allgather_late_post.xml:12:") != std::string::npos);  // the flag is raised here
}

TEST_CASE("progress flags: RCCL's counter, not s: a nop posts nothing, a nop without depid counts nothing", "[msccl][flags]") {
  // Written fresh: gpu 0's tb 0 sends after tb 1 reaches the step named by DEPS; tb 1 holds STEPS.
  auto file = [](const std::string& tb1, int deps) {
    std::string d = std::to_string(deps);
    return "<algo name=\"flags\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"2\" ngpus=\"2\" coll=\"allgather\" inplace=\"0\" "
           "outofplace=\"1\" minBytes=\"0\" maxBytes=\"0\">\n"
           "  <gpu id=\"0\" i_chunks=\"1\" o_chunks=\"2\" s_chunks=\"0\">\n"
           "    <tb id=\"0\" send=\"1\" recv=\"1\" chan=\"0\">\n"
           "      <step s=\"0\" type=\"s\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"1\" deps=\"" +
           d +
           "\" hasdep=\"0\"/>\n"
           "      <step s=\"1\" type=\"r\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" depid=\"-1\" deps=\"-1\" "
           "hasdep=\"0\"/>\n"
           "    </tb>\n"
           "    <tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\">\n" +
           tb1 +
           "    </tb>\n"
           "  </gpu>\n"
           "  <gpu id=\"1\" i_chunks=\"1\" o_chunks=\"2\" s_chunks=\"0\">\n"
           "    <tb id=\"0\" send=\"0\" recv=\"0\" chan=\"0\">\n"
           "      <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" depid=\"-1\" deps=\"-1\" "
           "hasdep=\"0\"/>\n"
           "      <step s=\"1\" type=\"r\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\" "
           "hasdep=\"0\"/>\n"
           "    </tb>\n"
           "    <tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\">\n"
           "      <step s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" depid=\"-1\" deps=\"-1\" "
           "hasdep=\"0\"/>\n"
           "    </tb>\n"
           "  </gpu>\n"
           "</algo>\n";
  };
  const std::string cpy = "type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\"";
  const std::string nop = "type=\"nop\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"-1\" cnt=\"0\" depid=\"-1\" deps=\"-1\"";
  auto verdict = [&](const std::string& tb1, int deps) {
    std::string path = (std::filesystem::temp_directory_path() / ("sg_msccl_flags_" + std::to_string(getpid()) + ".xml")).string();
    FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f);
    std::string text = file(tb1, deps);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
    sgtest::Ran r = run("verify '" + path + "' --json");
    INFO(text << r.out);
    REQUIRE((r.rc == 0 || r.rc == 1));
    return json::parse(r.out)["verdicts"][0]["verdict"].get<std::string>();
  };
  // Waiting on a nop with hasdep="1": a nop makes no transmission and never posts.
  CHECK(verdict("      <step s=\"0\" " + cpy + " hasdep=\"1\"/>\n      <step s=\"1\" " + nop + " hasdep=\"1\"/>\n", 1) == "deadlock");
  // A nop without depid before the copy: the copy is counted 0, not 1, so its post (0) never
  // reaches the 1 the send waits for.
  CHECK(verdict("      <step s=\"0\" " + nop + " hasdep=\"0\"/>\n      <step s=\"1\" " + cpy + " hasdep=\"1\"/>\n", 1) == "deadlock");
  // The same copy waited for at its count (0): fine.
  CHECK(verdict("      <step s=\"0\" " + nop + " hasdep=\"0\"/>\n      <step s=\"1\" " + cpy + " hasdep=\"1\"/>\n", 0) == "ok");
  // A later step that posts lets the waiter go: ok (and a warning).
  CHECK(verdict("      <step s=\"0\" " + cpy + " hasdep=\"0\"/>\n      <step s=\"1\" " + cpy + " hasdep=\"1\"/>\n", 0) == "ok");
}

TEST_CASE("sim checks first: a racy file is refused with its verdict, timed only with --allow-defects", "[msccl][sim][precheck]") {
  // Issue 28: sim timed a racy file as if it were sound and ranked it ahead of the correct one.
  sgtest::Ran r = run("sim '" + kDir + "allgather_race.xml' --set size=1MiB --model analytic --platform nodes:count=1,gpus=2", true);
  INFO(r.out);
  CHECK(r.rc == 1);
  CHECK(r.out.find("refused: defect: race (bounded sends, verify at N = 2) at ") != std::string::npos);
  CHECK(r.out.find("allgather_race.xml:6") != std::string::npos);
  CHECK(r.out.find("time ") == std::string::npos);
  json j =
      run_json("sim '" + kDir + "allgather_race.xml' --set size=1MiB --model analytic --platform nodes:count=1,gpus=2 --allow-defects", 0);
  CHECK(j["check"]["state"] == "defect");
  CHECK(j["check"]["verdict"] == "race");
  CHECK(j["completed"] == true);
  sgtest::Ran t =
      run("sim '" + kDir + "allgather_race.xml' --set size=1MiB --model analytic --platform nodes:count=1,gpus=2 --allow-defects", true);
  CHECK(t.out.find("defect: race") != std::string::npos);
  CHECK(t.out.find("(simulated anyway: --allow-defects)") != std::string::npos);
  // The sound file: checked ok, said so; and the parameters used.
  json ok = run_json("sim '" + kDir + "allgather_race_fixed.xml' --set size=1MiB --model analytic --platform nodes:count=1,gpus=2", 0);
  CHECK(ok["check"]["state"] == "ok");
  CHECK(ok["params"]["size"] == 1048576);
  // Ranked side by side, the racy file is left out of "fastest", not ranked first.
  sgtest::Ran both = run("sim '" + kDir + "allgather_race.xml," + kDir +
                             "allgather_race_fixed.xml' --set size=1MiB --model analytic --platform nodes:count=1,gpus=2 --allow-defects",
                         true);
  INFO(both.out);
  CHECK(both.out.find("allgather_race: defect: race") != std::string::npos);
  CHECK(both.out.find(": allgather_race.xml, ") == std::string::npos);
}

TEST_CASE("in-place all-gather: the documented example passes, an unused i_chunks is warned about", "[msccl][inplace]") {
  CHECK(run_json("check '" + kDir + "allgather_inplace.xml'", 0)[0]["result"] == "ok");
  CHECK(run_json("verify '" + kDir + "allgather_inplace.xml'", 0)["verdicts"][0]["verdict"] == "ok");
  sgtest::Ran r = run("check '" + kDir + "allgather_inplace_unused_i.xml'", true);
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK(r.out.find("allgather_inplace_unused_i.xml:3:15: warning: gpu 0 declares i_chunks=\"1\", but no step of it reads or writes i (and "
                   "1 more gpu)") != std::string::npos);
  CHECK(r.out.find("msccl-tools writes i_chunks=\"0\"") != std::string::npos);
  // Out of place, an input no step reads: the warning, and the wrong result that follows.
  sgtest::Ran o = run("check '" + kDir + "allgather_inplace_unused_i.xml' --set inplace=0", true);
  CHECK(o.rc == 1);
  CHECK(o.out.find("the collective's input is never read") != std::string::npos);
}
