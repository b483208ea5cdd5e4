// The pipeline (core/pipeline.hpp) every command builds through: open a target, build an
// instance (elaboration, passes, optional expansion, the --dump-after text), the shared successor
// view, and internal errors kept apart from the user's diagnostics (core/base/errors.hpp); the
// files a command reads (regular ones only) and writes (every failure said, with its reason).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/base/errors.hpp"
#include "core/base/input_file.hpp"
#include "core/base/memory.hpp"
#include "core/base/sizes.hpp"
#include "core/graph/passes.hpp"
#include "core/io/output_file.hpp"
#include "core/pipeline.hpp"
#include "run_command.hpp"

using namespace sg;

namespace {

Built build_library(Session& s, const std::string& name, uint32_t n, Expansion x = Expansion::None) {
  Target t = open_target(s, name);
  REQUIRE(t.schedule);
  BuildOptions bo;
  bo.elab.nranks = n;
  bo.expand = x;
  bo.keep_as_written = true;
  return build(s, t, bo);
}

}  // namespace

TEST_CASE("build: a library schedule through elaboration and every pass", "[pipeline]") {
  Session s;
  Built b = build_library(s, "ring_allreduce", 4);
  REQUIRE(b.ok());
  CHECK(b.graph->size() == 2u * 2 * 4 * 3);  // 2(N-1) rounds of N transfers, a send and a receive each
  CHECK(b.graph->p2p_matched);
  CHECK_FALSE(b.unsupported);
  CHECK(b.elaborate_s >= 0);
  CHECK_FALSE(s.diags.has_errors());
}

TEST_CASE("open_target: a misspelt name is the user's error, with a suggestion", "[pipeline]") {
  Session s;
  Target t = open_target(s, "ring_allreduc");
  CHECK_FALSE(t.schedule);
  REQUIRE(s.diags.has_errors());
  CHECK(s.diags.all()[0].message.find("did you mean 'ring_allreduce'") != std::string::npos);
}

TEST_CASE("build: a failed require is reported as unsupported, with its reason", "[pipeline]") {
  Session s;
  Built b = build_library(s, "recursive_doubling_allgather", 6);
  CHECK_FALSE(b.ok());
  CHECK(b.unsupported);
  CHECK_FALSE(b.unsupported_reason.empty());
}

TEST_CASE("build: the dump text at the points asked for, parse included", "[pipeline]") {
  Session s;
  std::vector<std::string> points;
  std::string text;
  DumpRequest d{{"parse", "prune"}, [&](const std::string& p, const std::string& t) {
                  points.push_back(p);
                  text += t;
                }};
  Target t = open_target(s, "ring_allreduce", &d);
  BuildOptions bo;
  bo.elab.nranks = 2;
  bo.dump = d;
  REQUIRE(build(s, t, bo).ok());
  CHECK(points == std::vector<std::string>{"parse", "prune"});
  CHECK(text.find("schedule ring_allreduce") != std::string::npos);  // the program, printed back
  CHECK(text.find("send") != std::string::npos);                     // the graph's steps
}

TEST_CASE("build: collectives expanded for cost keep the graph as written", "[pipeline]") {
  Session s;
  Built b = build_library(s, "ringx2_attention", 4, Expansion::ForCost);
  REQUIRE(b.ok());
  REQUIRE(b.as_written);
  CHECK_FALSE(b.expansion.instances.empty());
  auto collectives = [](const StepGraph& g) {
    uint64_t k = 0;
    for (StepId x = 0; x < g.size(); ++x) k += g.kind(x) == StepKind::Collective;
    return k;
  };
  CHECK(collectives(*b.as_written) > 0);
  CHECK(collectives(*b.graph) == 0);
  std::string line = expansion_line(b.expansion.instances[0]);
  CHECK(line.find(" over ") != std::string::npos);
  CHECK(line.find("(Open MPI 4.1 tuned picks") != std::string::npos);
}

TEST_CASE("the successor view is the reverse of the dependencies and follows their edits", "[pipeline][ir]") {
  Session s;
  Built b = build_library(s, "binomial_bcast", 8);
  REQUIRE(b.ok());
  StepGraph& g = *b.graph;
  uint64_t edges = 0;
  for (StepId x = 0; x < g.size(); ++x)
    for (StepId d : g.deps(x)) {
      auto su = g.successors(d);
      CHECK(std::find(su.begin(), su.end(), x) != su.end());
      ++edges;
    }
  uint64_t back = 0;
  for (StepId x = 0; x < g.size(); ++x) back += g.successors(x).size();
  CHECK(back == edges);
  // Dropping every dependency empties every successor list (the cache is rebuilt).
  g.edit_deps([](StepId, std::vector<StepId>& list) { list.clear(); });
  for (StepId x = 0; x < g.size(); ++x) CHECK(g.successors(x).empty());
}

TEST_CASE("a step's range and statement read back as stored, packed or not", "[pipeline][ir]") {
  // Ranges in 32 bits where they fit (buffer < 16, count < 1,024, first chunk < 2^18), else once
  // each in wide_ranges however many steps name them; statement ids in 16 bits until one does
  // not fit, then every step's in 32.
  StepGraph g;
  const std::vector<Range> ranges = {{0, 0, 1},    {15, (1u << 18) - 1, 1023}, {16, 0, 1},    {0, 1u << 18, 1},
                                     {0, 0, 1024}, {3, 4000000000u, 70000},    {15, 5, 1023}, {16, 0, 1}};
  for (uint32_t k = 0; k < ranges.size(); ++k) g.add_step(StepKind::Copy, 0, k % 3, 7 * k, ranges[k], 0);
  for (uint32_t k = 0; k < ranges.size(); ++k) {
    INFO("step " << k);
    CHECK(g.range(k) == ranges[k]);
    CHECK(g.stmt(k) == 7 * k);
    CHECK(g.rank(k) == k % 3);
  }
  CHECK(g.wide_ranges.size() == 4);  // {16,0,1} twice, stored once
  StepId big = g.add_step(StepKind::Copy, 0, 1, 70000, ranges[1], 0);
  CHECK(g.stmt(big) == 70000);
  for (uint32_t k = 0; k < ranges.size(); ++k) CHECK(g.stmt(k) == 7 * k);
  CHECK(g.add_step(StepKind::Copy, 0, 1, 65534, ranges[0], 0) == big + 1);
  CHECK(g.stmt(big + 1) == 65534);
}

TEST_CASE("a broken invariant is an internal error, never a user diagnostic", "[pipeline][errors]") {
  Session s;
  Built b = build_library(s, "ring_allreduce", 2);
  REQUIRE(b.ok());
  StepGraph& g = *b.graph;
  StepId last = static_cast<StepId>(g.size() - 1);
  g.add_step(StepKind::Copy, 0, 0, g.stmt(last), g.range(last), 0);
  g.add_dep(last + 7);  // a dependency on a step that does not exist yet
  g.finish_step();
  Diagnostics diags;
  try {
    validate(g, diags);
    FAIL("validate accepted a dependency on a later step");
  } catch (const InternalError& e) {
    CHECK(std::string(e.what()).find("a dependency on a later step") != std::string::npos);
    CHECK(e.origin().rfind("core/graph/validate.cpp:", 0) == 0);
  }
  CHECK(diags.all().empty());
}

TEST_CASE("the command line reports an internal error as a bug, with exit code 70", "[pipeline][errors][cli]") {
  auto r = sgtest::run_command("STEPGRAPH_FAULT=internal '" STEPGRAPH_BIN "' check ring_allreduce -n 4 2>&1");
  CHECK(r.rc == kInternalErrorExit);
  CHECK(r.out.find("stepgraph bug: fault injected") == 0);
  CHECK(r.out.find("please report it") != std::string::npos);
  CHECK(r.out.find("error:") == std::string::npos);  // not dressed as a user error
  auto ok = sgtest::run_command("'" STEPGRAPH_BIN "' check ring_allreduce -n 4 2>&1");
  CHECK(ok.rc == 0);
}

TEST_CASE("one size-suffix table for the language and the flags", "[base]") {
  uint64_t v = 0;
  CHECK((parse_size("3GiB", v) && v == (uint64_t{3} << 30)));
  CHECK((parse_size("2GB", v) && v == 2000000000u));
  CHECK((parse_size("5TB", v) && v == 5000000000000u));
  CHECK_FALSE(parse_size("3Q", v));
  CHECK_FALSE(parse_size("99999999999TiB", v));  // overflows 64 bits
  CHECK(size_suffix_factor("KiB") == 1024);
  CHECK(size_suffix_factor("") == 1);
  CHECK(size_suffix_factor("Q") == 0);
  Session s;
  const Program* p = s.load_text("sizes.sched", "schedule sizes(a = 2GB, b = 1MiB) { buffer x[1] bytes a / 1000 + b; expect nothing; }");
  CHECK(p);
  CHECK_FALSE(s.diags.has_errors());
  CHECK(human_bytes(1536) == "1.5 KiB");
  CHECK(human_bytes(1536, 2) == "1.50 KiB");
  CHECK(human_bytes(100) == "100 B");
  CHECK(with_commas(1234567) == "1,234,567");
}

TEST_CASE("a bare library name means the library, even beside a file of that name", "[pipeline][target]") {
  std::string dir = "/tmp/stepgraph_test_bare_" + std::to_string(::getpid());
  auto r = sgtest::run_command("mkdir -p " + dir + " && cd " + dir +
                               " && echo garbage > ring_allreduce && '" STEPGRAPH_BIN "' check ring_allreduce -n 4 2>&1; rc=$?; rm -rf " +
                               dir + "; exit $rc");
  CHECK(r.rc == 0);
  CHECK(r.out.find("check ring_allreduce N = 4: ok") != std::string::npos);
}

TEST_CASE("the memory limit reads the cgroup's room where it is tighter than the host's", "[base][memory]") {
  // Issue 23: exec --set size=4GiB in a 2 GiB cgroup was OOM-killed without a word: the default
  // limit read MemAvailable only. A fake /proc and /sys/fs/cgroup under a temporary root.
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("stepgraph_memroom_" + std::to_string(getpid()));
  auto write = [&](const std::string& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  };
  write("proc/meminfo", "MemTotal: 33554432 kB\nMemFree: 1000 kB\nMemAvailable: 16777216 kB\n");  // 16 GiB
  write("proc/self/cgroup", "0::/job/42\n");
  write("sys/fs/cgroup/job/42/memory.max", "2147483648\n");  // 2 GiB, 512 MiB used
  write("sys/fs/cgroup/job/42/memory.current", "536870912\n");
  MemoryRoom v2 = memory_room(root.string());
  CHECK(v2.host == uint64_t{16} << 30);
  CHECK(v2.cgroup == uint64_t{1536} << 20);
  CHECK(v2.available == uint64_t{1536} << 20);
  CHECK(v2.cgroup_path.find("job/42/memory.max") != std::string::npos);
  // "max": no limit; cgroup v1's huge number likewise.
  write("sys/fs/cgroup/job/42/memory.max", "max\n");
  CHECK(memory_room(root.string()).available == uint64_t{16} << 30);
  fs::remove_all(root / "sys");
  write("proc/self/cgroup", "4:memory:/slurm/7\n0::/\n");
  write("sys/fs/cgroup/memory/slurm/7/memory.limit_in_bytes", "1073741824\n");
  write("sys/fs/cgroup/memory/slurm/7/memory.usage_in_bytes", "0\n");
  CHECK(memory_room(root.string()).available == uint64_t{1} << 30);
  write("sys/fs/cgroup/memory/slurm/7/memory.limit_in_bytes", "9223372036854771712\n");
  CHECK(memory_room(root.string()).available == uint64_t{16} << 30);
  fs::remove_all(root);
}

TEST_CASE("a file given as input must be a regular file; one that cannot be read says the OS's reason", "[pipeline][files]") {
  std::string dir = "/tmp/stepgraph_test_input_" + std::to_string(::getpid());
  REQUIRE(std::system(("mkdir -p " + dir + " && mkfifo " + dir + "/fifo.sched && echo x > " + dir + "/plain").c_str()) == 0);
  InputFile in = read_input_file(dir + "/fifo.sched");
  CHECK_FALSE(in.ok);  // a FIFO without a writer: not waited on
  CHECK(in.error == "cannot read '" + dir + "/fifo.sched': it is not a regular file (a FIFO, a device or a socket)");
  in = read_input_file("/dev/zero");
  CHECK_FALSE(in.ok);  // it would never end
  CHECK(in.error.find("is not a regular file") != std::string::npos);
  in = read_input_file(dir);
  CHECK_FALSE(in.ok);
  CHECK(in.error.find("Is a directory") != std::string::npos);
  in = read_input_file(dir + "/plain/x.sched");
  CHECK_FALSE(in.ok);
  CHECK(in.error.find("Not a directory") != std::string::npos);
  in = read_input_file(dir + "/plain");
  REQUIRE(in.ok);
  CHECK(in.text == "x\n");
  CHECK(in.error.empty());
  // The command line: exit 2, at once, with the reason.
  for (const std::string& target : {dir + "/fifo.sched", std::string("/dev/zero"), dir + "/plain/x.sched"}) {
    auto r = sgtest::run_command("timeout 20 '" STEPGRAPH_BIN "' compile '" + target + "' -n 4 2>&1");
    INFO(target << ": " << r.out);
    CHECK(r.rc == 2);
    CHECK((r.out.find("is not a regular file") != std::string::npos || r.out.find("Not a directory") != std::string::npos));
    CHECK(r.out.find("no such file") == std::string::npos);
  }
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("a failed write is an error that names the file and the OS's reason", "[pipeline][files][output]") {
  // Each failure is one unlocated error in the diagnostics, with the whole message.
  auto fails = [](const std::string& path, const std::string& text) {
    Diagnostics diags;
    CHECK_FALSE(write_output_file(path, text, diags));
    CHECK(diags.size() == 1);
    CHECK_FALSE(diags.all().front().loc.valid());
    return diags.messages();
  };
  CHECK(fails("/dev/full", "some text") == "cannot write '/dev/full': No space left on device");
  CHECK(fails("/nonexistent/dir/out.txt", "x") == "cannot write '/nonexistent/dir/out.txt': No such file or directory");
  CHECK(fails("/tmp", "x") == "cannot write '/tmp': Is a directory");
  // More than the buffer holds, so that the failure comes mid-write, not only at the close.
  Diagnostics diags;
  OutputFile f;
  REQUIRE(f.open("/dev/full", diags));
  f.stream() << std::string(1 << 20, 'x');
  CHECK_FALSE(f.close(diags));
  CHECK(diags.messages() == "cannot write '/dev/full': No space left on device");
  diags.clear();
  std::string path = "/tmp/stepgraph_test_output_" + std::to_string(::getpid());
  REQUIRE(write_output_file(path, "written\n", diags));
  CHECK_FALSE(diags.has_errors());
  InputFile back = read_input_file(path);
  REQUIRE(back.ok);
  CHECK(back.text == "written\n");
  std::remove(path.c_str());
}

TEST_CASE("compile says when its output cannot be written, -o or standard output, exit 2", "[pipeline][cli][output]") {
  // Before: `compile … > /dev/full` exited 0 in silence.
  auto out = sgtest::run_command("'" STEPGRAPH_BIN "' compile ring_allreduce -n 4 2>&1 >/dev/full");
  CHECK(out.rc == 2);
  CHECK(out.out == "stepgraph: error: cannot write to standard output: No space left on device\n");
  auto o = sgtest::run_command("'" STEPGRAPH_BIN "' compile ring_allreduce -n 4 --format json -o /dev/full 2>&1");
  CHECK(o.rc == 2);
  CHECK(o.out == "stepgraph: error: cannot write '/dev/full': No space left on device\n");
  auto d = sgtest::run_command("'" STEPGRAPH_BIN "' compile ring_allreduce -n 4 -o /tmp 2>&1");
  CHECK(d.rc == 2);
  CHECK(d.out == "stepgraph: error: cannot write '/tmp': Is a directory\n");
  // Other commands, and --help, too.
  CHECK(sgtest::run_command("'" STEPGRAPH_BIN "' list >/dev/full 2>/dev/null").rc == 2);
  CHECK(sgtest::run_command("'" STEPGRAPH_BIN "' check ring_allreduce -n 4 >/dev/full 2>/dev/null").rc == 2);
  CHECK(sgtest::run_command("'" STEPGRAPH_BIN "' --help >/dev/full 2>/dev/null").rc == 2);
  CHECK(sgtest::run_command("'" STEPGRAPH_BIN "' compile ring_allreduce -n 4 >/dev/null").rc == 0);
}

TEST_CASE("a --set given twice and --rank -1 are refused, not read as 'last wins' or 'every rank'", "[pipeline][cli][bounds]") {
  // Issue 23: both were accepted silently.
  for (const char* cmd : {"check", "compile", "analyze", "verify", "sim"}) {
    auto r = sgtest::run_command("'" STEPGRAPH_BIN "' " + std::string(cmd) + " ring_allreduce -n 4 --set size=1MiB --set size=2MiB 2>&1");
    INFO(cmd << ": " << r.out);
    CHECK(r.rc == 2);
    CHECK(r.out.find("--set size given twice ('1MiB', then '2MiB'): give each parameter once") != std::string::npos);
  }
  auto r = sgtest::run_command("'" STEPGRAPH_BIN "' compile ring_allreduce -n 4 --rank -1 2>&1");
  INFO(r.out);
  CHECK(r.rc == 2);
  CHECK(r.out.find("--rank: must be a finite number, 0 or more, got '-1'") != std::string::npos);
  CHECK(sgtest::run_command("'" STEPGRAPH_BIN "' compile ring_allreduce -n 4 --rank 0 >/dev/null 2>&1").rc == 0);
}
