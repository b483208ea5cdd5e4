// bench/exec: library all-reduce and all-gather schedules executed for real against MPI's own
// collective on the same sizes, in the same run: for each schedule, one
// `mpiexec -n P stepgraph exec NAME --sweep size=1KiB..64MiB --compare native --check --json`,
// whose rows carry both our time and MPI_Allreduce's / MPI_Allgather's (same process count, same
// buffers' sizes, same iterations). Printed: the speed ratio (MPI's time / ours: 1.0 = as fast
// as MPI, above 1 faster) per schedule and size, the goal (ring all-reduce at 16 MiB at least
// 0.7x MPI_Allreduce) and every size where a library schedule beats MPI's own. Every row is also
// checked (--check): a wrong element fails the benchmark.
//
// Usage: bench_exec [--quick] [--procs P] [--iters K]. --quick: 2 processes, 1 KiB..16 KiB, two
// schedules, as a smoke test (asserts nothing about time).
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

struct Point {
  double time_us = 0, native_us = -1;
  long wrong = 0;
};

bool run(const std::string& cmd, std::string& out) {
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return false;
  char buf[4096];
  while (size_t k = fread(buf, 1, sizeof buf, p)) out.append(buf, k);
  int st = pclose(p);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

std::string human(uint64_t b) {
  if (b >= (1u << 20)) return std::to_string(b >> 20) + " MiB";
  if (b >= 1024) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int procs = 4, iters = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    else if (std::strcmp(argv[i], "--procs") == 0 && i + 1 < argc) procs = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--iters") == 0 && i + 1 < argc) iters = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_exec [--quick] [--procs P] [--iters K]\n");
      return 2;
    }
  }
  if (quick) procs = 2, iters = 2;
  if (std::system("command -v mpiexec >/dev/null 2>&1") != 0) {
    std::printf("bench/exec: mpiexec is not installed; nothing to measure\n");
    return 0;
  }
  const std::vector<std::string> allreduce =
      quick ? std::vector<std::string>{"ring_allreduce"}
            : std::vector<std::string>{"ring_allreduce", "rabenseifner_allreduce", "recursive_doubling_allreduce", "binomial_allreduce",
                                       "reduce_bcast_allreduce"};
  const std::vector<std::string> allgather =
      quick ? std::vector<std::string>{"ring_allgather"}
            : std::vector<std::string>{"ring_allgather", "bruck_allgather", "recursive_doubling_allgather"};
  const std::string sweep = quick ? "1KiB..16KiB" : "1KiB..64MiB";
  const std::string mpi =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 timeout 900 mpiexec -n " +
      std::to_string(procs) + " " + STEPGRAPH_BIN;
  std::printf("bench/exec: library schedules against MPI's own collective, %d processes on this machine, %d iterations per size\n", procs,
              iters);
  std::printf("speed = MPI's time / ours (above 1: the schedule is faster than MPI's own); every point checked\n\n");
  int status = 0;
  std::vector<std::string> wins;
  double ring16 = -1;
  for (const auto* family : {&allreduce, &allgather}) {
    std::map<uint64_t, std::map<std::string, Point>> table;
    for (const std::string& name : *family) {
      std::string out;
      std::string cmd = mpi + " exec " + name + " --sweep size=" + sweep + " --compare native --check --iters " + std::to_string(iters) +
                        " --warmup 3 --json 2>/dev/null";
      if (!run(cmd, out)) {
        std::printf("  %s: failed (%s)\n", name.c_str(), cmd.c_str());
        status = 1;
        continue;
      }
      for (const auto& row : nlohmann::json::parse(out)) {
        Point p;
        p.time_us = row["time_us"];
        if (!row["native_time_us"].is_null()) p.native_us = row["native_time_us"];
        p.wrong = row["wrong"].is_null() ? 0 : row["wrong"].get<long>();
        if (p.wrong) status = 1;
        table[row["size_bytes"].get<uint64_t>()][name] = p;
      }
    }
    std::printf("%s: speed against MPI_%s (our time in us in brackets)\n\n%10s", family == &allreduce ? "all-reduce" : "all-gather",
                family == &allreduce ? "Allreduce" : "Allgather", "size");
    for (const std::string& name : *family) std::printf(" %24s", name.c_str());
    std::printf(" %12s\n", "MPI (us)");
    for (const auto& [size, row] : table) {
      std::printf("%10s", human(size).c_str());
      double native = -1;
      for (const std::string& name : *family) {
        auto it = row.find(name);
        if (it == row.end()) {
          std::printf(" %24s", "-");
          continue;
        }
        const Point& p = it->second;
        native = p.native_us;
        double speed = p.native_us > 0 && p.time_us > 0 ? p.native_us / p.time_us : 0;
        char cell[64];
        std::snprintf(cell, sizeof cell, "%.2fx (%.0f)%s", speed, p.time_us, p.wrong ? " WRONG" : "");
        std::printf(" %24s", cell);
        if (speed > 1.0) wins.push_back(name + " at " + human(size) + " (" + std::to_string(speed).substr(0, 4) + "x)");
        if (name == "ring_allreduce" && size == (16u << 20)) ring16 = speed;
      }
      std::printf(" %12.0f\n", native);
    }
    std::printf("\n");
  }
  if (!quick) {
    std::printf("goal: ring all-reduce at 16 MiB at least 0.7x MPI_Allreduce's speed: %.2fx, %s\n", ring16,
                ring16 >= 0.7 ? "met" : "NOT met");
  }
  std::printf("sizes where a library schedule beats MPI's own: %s\n", wins.empty() ? "none" : "");
  for (const std::string& w : wins) std::printf("  %s\n", w.c_str());
  return status;
}
