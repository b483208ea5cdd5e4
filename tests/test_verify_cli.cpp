// `stepgraph verify` as a process: the time limit ends the run within a second of it with exit
// 3, output for each N leaves the process as soon as that N is decided (a kill loses nothing
// already printed), and `--time` adds up to the wall clock.
#include <catch2/catch.hpp>

#include "run_command.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <string>

namespace {

using Clock = std::chrono::steady_clock;

using sgtest::Ran;

// Runs stepgraph with `args` (stdout captured, stderr discarded), timing it.
Ran run(const std::string& args) { return sgtest::run_command("'" STEPGRAPH_BIN "' " + args + " 2>/dev/null"); }

// A wildcard reduction (right in every arrival order): (N-1)! orders, 2^(N-1) states.
const std::string kWildSum = STEPGRAPH_SOURCE_DIR "/tests/verify_cases/wildcard_sum.sched:fixed";

}  // namespace

TEST_CASE("--timeout stops a search that would run for hours, within a second, with exit 3", "[cli][timeout]") {
  Ran r = run("verify '" + kWildSum + "' -n 3,16 --timeout 1 --max-executions 100000000");
  INFO(r.out);
  CHECK(r.rc == 3);
  CHECK(r.seconds < 2.0);
  CHECK(r.out.find("verify fixed N = 3: ok") != std::string::npos);  // decided before the limit
  CHECK(r.out.find("verify fixed N = 16: undecided (time limit)") != std::string::npos);
}

TEST_CASE("--timeout also ends a run that is still elaborating a large graph", "[cli][timeout]") {
  // Building 16 M steps takes seconds; the watchdog ends the run a moment after the limit and
  // says where it was. The N's decided before are printed.
  Ran r = run("verify ring_allreduce -n 2,3,2000 --timeout 1");
  INFO(r.out);
  CHECK(r.rc == 3);
  CHECK(r.seconds < 2.0);
  CHECK(r.out.find("verify ring_allreduce N = 2: ok") != std::string::npos);
  CHECK(r.out.find("verify ring_allreduce N = 3: ok") != std::string::npos);
  CHECK(r.out.find("N = 2000: undecided") != std::string::npos);
}

TEST_CASE("each N's line leaves the process when it is decided: a kill loses nothing printed", "[cli][flush]") {
  std::string cmd = "'" STEPGRAPH_BIN "' verify ring_allreduce -n 2,3,4,3000 2>/dev/null";
  int fd[2];
  REQUIRE(pipe(fd) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    close(fd[1]);
    execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fd[1]);
  // Read until the third line has arrived while the process is still at work on N = 3000.
  std::string got;
  char buf[1024];
  auto t0 = Clock::now();
  while (got.find("N = 4:") == std::string::npos && std::chrono::duration<double>(Clock::now() - t0).count() < 20) {
    ssize_t n = read(fd[0], buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  bool still_running = waitpid(pid, nullptr, WNOHANG) == 0;
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(fd[0]);
  INFO(got);
  CHECK(still_running);
  CHECK(got.find("verify ring_allreduce N = 2: ok") != std::string::npos);
  CHECK(got.find("verify ring_allreduce N = 4: ok") != std::string::npos);
}

TEST_CASE("--time shows each engine once and a total that matches the wall clock", "[cli][time]") {
  Ran r = run("verify ring_allreduce -n 600 --time");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  std::smatch m;
  std::regex re(R"(explicit ([0-9.]+) s, total ([0-9.]+) s)");
  REQUIRE(std::regex_search(r.out, m, re));
  double engine = std::stod(m[1]), total = std::stod(m[2]);
  CHECK(engine <= total + 0.001);
  // The total is this N's elaboration and verification: the process's wall clock less its
  // start-up (with the huge-page restart), parsing and exit, which under a loaded ctest -j2
  // took 0.34 s once: a bound that a missing elaboration (most of the run) would still break.
  CHECK(total <= r.seconds + 0.001);
  CHECK(total >= 0.6 * r.seconds - 0.3);
}

TEST_CASE("--timeout covers reading and parsing the schedule too", "[cli][timeout][bounds]") {
  // Issue 23: the watchdog started after parsing, so a huge file ran past the limit unchecked.
  std::string path = "/tmp/stepgraph_test_" + std::to_string(getpid()) + "_huge.sched";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f);
    std::fputs("schedule s() {\n", f);
    std::string line(1 << 20, ' ');
    for (size_t i = 0; i + 3 < line.size(); i += 3) line[i] = 'x', line[i + 1] = ';';
    for (int i = 0; i < 40; ++i) std::fputs(line.c_str(), f);  // 14 M stray statements, 40 MiB
    std::fputs("}\n", f);
    std::fclose(f);
  }
  Ran r = run("verify '" + path + "' -n 2 --timeout 0.2");
  std::remove(path.c_str());
  INFO(r.out);
  CHECK(r.rc == 3);
  CHECK(r.seconds < 1.5);
  CHECK(r.out.find("undecided  (time limit of 0.200 s reached while reading the schedule)") != std::string::npos);
}
