// bench/exec: library all-reduce and all-gather schedules executed for real against MPI's own
// collective on the same sizes, in the same run: for each schedule, one
// `mpiexec -n P stepgraph exec NAME --sweep size=1KiB..64MiB --compare native --check --json`,
// whose rows carry both our time and MPI_Allreduce's / MPI_Allgather's (same process count, same
// buffers' sizes, same iterations). Printed: the speed ratio (MPI's time / ours: 1.0 = as fast
// as MPI, above 1 faster) per schedule and size, the goal (ring all-reduce at 16 MiB at least
// 0.7x MPI_Allreduce) and every size where a library schedule beats MPI's own. Every row is also
// checked (--check): a wrong element fails the benchmark.
//
// --hand: exec against the hand-written C program of the same algorithm (bench/hand/, built
// -O3 -march=native) and MPI's own collective, for six schedules at 2 and 4 processes, 1 KiB to
// 64 MiB in steps of 4x. Each pass is, per size band, one `mpiexec … stepgraph exec` sweep and one
// `mpiexec … hand_NAME` sweep of the same sizes, iterations and warm-up (K x50 up to 16 KiB, x5
// from 64 KiB to 1 MiB, K above; each: warm-up, barrier,
// K timed iterations, the slowest rank's mean); each time is the fastest of the passes. Printed
// per algorithm and size: exec, hand and MPI in us, exec/hand, exec/MPI and the goal (exec/hand
// <= 1.1 at >= 64 KiB, <= 1.3 below) as PASS or MISS. A MISS does not fail the benchmark (the
// timing is noisy); a wrong result of exec or of a hand program does.
//
// --transports: ring all-reduce through each device transport on the stand-in device (staged,
// cuda-aware, ipc) and on host memory, against MPI_Allreduce in the same run (transport_table).
//
// Usage: bench_exec [--quick] [--hand | --transports] [--procs P] [--iters K] [--warmup W] [--passes R].
// Defaults: the library table at 4 processes; --hand at 2 and 4 (--procs P: only P); 20
// iterations, 5 warm-up (exec's defaults), 3 passes (--hand only). --quick: 2 processes, tiny
// sizes, one pass, as a smoke test that asserts nothing about time: the library table on two
// schedules, then every hand program next to exec at 1 and 4 KiB; with --hand, only the latter.
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
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

// The mpiexec prefix of every run: root allowed, oversubscription allowed (4 processes on a
// 2-core machine is part of the measurement), cut off after limit_s.
std::string mpiexec(int procs, int limit_s) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 timeout " +
         std::to_string(limit_s) + " mpiexec -n " + std::to_string(procs) + " ";
}

// Our time and MPI's per size, by column (a schedule, a transport).
using Table = std::map<uint64_t, std::map<std::string, Point>>;

// Runs one `exec … --sweep … --compare native --check --json` command and files its rows in
// `table` under `column`; a wrong element sets status. False when the command failed.
bool sweep_rows(const std::string& cmd, const std::string& column, Table& table, int& status) {
  std::string out;
  if (!run(cmd, out)) return false;
  for (const auto& row : nlohmann::json::parse(out)) {
    Point p;
    p.time_us = row["time_us"];
    if (!row["native_time_us"].is_null()) p.native_us = row["native_time_us"];
    p.wrong = row["wrong"].is_null() ? 0 : row["wrong"].get<long>();
    if (p.wrong) status = 1;
    table[row["size_bytes"].get<uint64_t>()][column] = p;
  }
  return true;
}

}  // namespace

namespace {

// The library schedules against MPI's own collective (the default table).
int library_table(bool quick, int procs, int iters) {
  const std::vector<std::string> allreduce =
      quick ? std::vector<std::string>{"ring_allreduce"}
            : std::vector<std::string>{"ring_allreduce", "rabenseifner_allreduce", "recursive_doubling_allreduce", "binomial_allreduce",
                                       "reduce_bcast_allreduce"};
  const std::vector<std::string> allgather =
      quick ? std::vector<std::string>{"ring_allgather"}
            : std::vector<std::string>{"ring_allgather", "bruck_allgather", "recursive_doubling_allgather"};
  const std::string sweep = quick ? "1KiB..16KiB" : "1KiB..64MiB";
  const std::string mpi = mpiexec(procs, 900) + STEPGRAPH_BIN;
  std::printf("bench/exec: library schedules against MPI's own collective, %d processes on this machine, %d iterations per size\n", procs,
              iters);
  std::printf("speed = MPI's time / ours (above 1: the schedule is faster than MPI's own); every point checked\n\n");
  int status = 0;
  std::vector<std::string> wins;
  double ring16 = -1;
  for (const auto* family : {&allreduce, &allgather}) {
    Table table;
    for (const std::string& name : *family) {
      std::string cmd = mpi + " exec " + name + " --sweep size=" + sweep + " --compare native --check --iters " + std::to_string(iters) +
                        " --warmup 3 --json 2>/dev/null";
      if (!sweep_rows(cmd, name, table, status)) {
        std::printf("  %s: failed (%s)\n", name.c_str(), cmd.c_str());
        status = 1;
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

// One algorithm at one size: the fastest pass of each (-1: not measured).
struct HandPoint {
  double exec_us = -1, hand_us = -1, mpi_us = -1;
};

void keep_fastest(double& best, double t) {
  if (t > 0 && (best < 0 || t < best)) best = t;
}

std::string ratio(double a, double b) {
  if (a <= 0 || b <= 0) return "-";
  char cell[32];
  std::snprintf(cell, sizeof cell, "%.2fx", a / b);
  return cell;
}

// exec, the hand-written program and MPI's own collective for each library schedule that has a
// hand-written twin in bench/hand/, per process count and size.
int hand_table(bool quick, const std::vector<int>& procs, int iters, int warmup, int passes) {
  const std::vector<std::string> algos = {
      "ring_allreduce", "recursive_doubling_allreduce", "rabenseifner_allreduce", "ring_allgather", "bruck_allgather", "pairwise_alltoall"};
  std::vector<uint64_t> sizes;
  for (uint64_t s = 1024; s <= (quick ? 4096u : 64u << 20); s *= 4) sizes.push_back(s);
  // Iterations by size band, the same for exec and the hand program: 20 iterations of a 1 KiB
  // all-reduce take 0.1 ms, less than one time slice of the scheduler that 4 processes on 2
  // cores share, so small sizes get 50x the iterations and middle ones 5x (as nccl-tests scales
  // its iterations by size); each band is its own launch.
  struct Band {
    std::string list;
    int iters, warmup;
  };
  std::vector<Band> bands;
  for (auto [lo, hi, times] : {std::tuple<uint64_t, uint64_t, int>{0, 16u << 10, 50}, {64u << 10, 1u << 20, 5}, {4u << 20, ~0ull, 1}}) {
    Band b{"", iters * (quick ? 1 : times), warmup * (quick ? 1 : times)};
    for (uint64_t s : sizes)
      if (s >= lo && s <= hi) b.list += (b.list.empty() ? "" : ",") + std::to_string(s);
    if (!b.list.empty()) bands.push_back(b);
  }
  std::printf("bench/exec --hand: stepgraph exec against the hand-written C program (bench/hand/, -O3 -march=native) and MPI's own\n");
  std::printf(
      "collective; %d iterations after %d warm-up per size (x50 up to 16 KiB, x5 from 64 KiB to 1 MiB), the slowest rank's mean, fastest "
      "of %d pass(es)\n",
      iters, warmup, passes);
  std::printf("goal: exec/hand <= 1.1 at >= 64 KiB, <= 1.3 below (MISS is reported, not failed); every point checked\n");
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  for (int p : procs) {
    std::map<std::string, std::map<uint64_t, HandPoint>> table;
    for (const std::string& name : algos) {
      for (int pass = 0; pass < passes; ++pass) {
        for (const Band& band : bands) {
          std::string out;
          std::string cmd = mpiexec(p, 600) + STEPGRAPH_BIN + " exec " + name + " --sweep size=" + band.list +
                            " --compare native --check --iters " + std::to_string(band.iters) + " --warmup " + std::to_string(band.warmup) +
                            " --json";
          nlohmann::json rows;
          if (!run(cmd, out) || (rows = nlohmann::json::parse(out, nullptr, false)).is_discarded()) {
            std::printf("  exec %s: failed (%s)\n", name.c_str(), cmd.c_str());
            status = 1;
          } else {
            for (const auto& row : rows) {
              HandPoint& h = table[name][row["size_bytes"].get<uint64_t>()];
              if (!row["wrong"].is_null() && row["wrong"].get<long>() != 0) {
                std::printf("  exec %s: %ld wrong elements at %s\n", name.c_str(), row["wrong"].get<long>(),
                            human(row["size_bytes"].get<uint64_t>()).c_str());
                status = 1;
              }
              keep_fastest(h.exec_us, row["time_us"].get<double>());
              if (!row["native_time_us"].is_null()) keep_fastest(h.mpi_us, row["native_time_us"].get<double>());
            }
          }
          out.clear();
          cmd = mpiexec(p, 600) + STEPGRAPH_HAND_DIR + "/hand_" + name + " " + band.list + " " + std::to_string(band.iters) + " " +
                std::to_string(band.warmup) + " 1";
          if (!run(cmd, out) || (rows = nlohmann::json::parse(out, nullptr, false)).is_discarded()) {
            std::printf("  hand %s: failed or wrong (%s)\n", name.c_str(), cmd.c_str());
            status = 1;
          } else {
            for (const auto& row : rows) keep_fastest(table[name][row["size_bytes"].get<uint64_t>()].hand_us, row["time_us"].get<double>());
          }
        }
      }
    }
    std::printf("\n%d processes\n%-30s %8s %11s %11s %11s %9s %9s %10s\n", p, "algorithm", "size", "exec (us)", "hand (us)", "MPI (us)",
                "exec/hand", "exec/MPI", "goal");
    int met = 0, points = 0;
    std::vector<std::string> misses;
    for (const std::string& name : algos) {
      for (uint64_t s : sizes) {
        const HandPoint& h = table[name][s];
        double limit = s >= (64u << 10) ? 1.1 : 1.3;
        bool measured = h.exec_us > 0 && h.hand_us > 0, pass = measured && h.exec_us <= limit * h.hand_us;
        char goal[32];
        std::snprintf(goal, sizeof goal, "<=%.1f %s", limit, measured ? (pass ? "PASS" : "MISS") : "-");
        std::printf("%-30s %8s %11.1f %11.1f %11.1f %9s %9s %10s\n", name.c_str(), human(s).c_str(), h.exec_us, h.hand_us, h.mpi_us,
                    ratio(h.exec_us, h.hand_us).c_str(), ratio(h.exec_us, h.mpi_us).c_str(), goal);
        points += measured;
        met += pass;
        if (measured && !pass) misses.push_back(name + " " + human(s) + " (" + ratio(h.exec_us, h.hand_us) + ")");
      }
    }
    std::printf("goal met at %d of %d points at %d processes%s\n", met, points, p, misses.empty() ? "" : "; missed at:");
    for (const std::string& m : misses) std::printf("  %s\n", m.c_str());
  }
  std::printf("\n%.0f s in all\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return status;
}

// The device transports on the stand-in device (--device host-staged: host memory playing the
// GPU, its two lanes deferred), ring all-reduce against MPI_Allreduce on the same sizes: staged
// through host mirrors, MPI on the device memory itself (what a CUDA-aware MPI does) and IPC
// (each rank copies from the sender's mapped memory: exec/executor/executor_ipc.cpp), next to exec on
// plain host memory (--device cpu). The CPU's view of issue 30's transports: on a GPU the same
// rows are bench/gpu_run.sh's, against a device-to-device copy.
int transport_table(bool quick, int procs, int iters) {
  const std::string sweep = quick ? "16KiB,64KiB" : "1MiB,4MiB,16MiB,64MiB";
  const std::string mpi = mpiexec(procs, 900) + STEPGRAPH_BIN;
  const std::vector<std::pair<std::string, std::string>> modes = {{"host (cpu)", "--device cpu"},
                                                                  {"staged", "--device host-staged --transport staged"},
                                                                  {"cuda-aware", "--device host-staged --transport cuda-aware"},
                                                                  {"ipc", "--device host-staged --transport ipc"}};
  std::printf("bench/exec --transports: ring_allreduce through each transport on the stand-in device, %d processes, %d iterations\n", procs,
              iters);
  std::printf("speed = MPI_Allreduce's time (same processes, same run) / ours; every point checked\n\n%10s", "size");
  Table table;
  int status = 0;
  for (const auto& [label, flags] : modes) {
    std::printf(" %18s", label.c_str());
    std::string cmd = mpi + " exec ring_allreduce " + flags + " --sweep size=" + sweep + " --compare native --check --iters " +
                      std::to_string(iters) + " --warmup 3 --json 2>/dev/null";
    if (!sweep_rows(cmd, label, table, status)) {
      std::printf("\n  %s: failed (%s)\n", label.c_str(), cmd.c_str());
      status = 1;
    }
  }
  std::printf("\n");
  for (const auto& [size, row] : table) {
    std::printf("%10s", human(size).c_str());
    for (const auto& [label, flags] : modes) {
      auto it = row.find(label);
      if (it == row.end() || it->second.native_us <= 0) {
        std::printf(" %18s", "-");
        continue;
      }
      char cell[64];
      std::snprintf(cell, sizeof cell, "%.2fx (%.0f)", it->second.native_us / it->second.time_us, it->second.time_us);
      std::printf(" %18s", cell);
    }
    std::printf("\n");
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, hand = false, transports = false;
  int procs = 0, iters = 20, warmup = 5, passes = 3;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    else if (std::strcmp(argv[i], "--hand") == 0) hand = true;
    else if (std::strcmp(argv[i], "--transports") == 0) transports = true;
    else if (std::strcmp(argv[i], "--procs") == 0 && i + 1 < argc) procs = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--iters") == 0 && i + 1 < argc) iters = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) warmup = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--passes") == 0 && i + 1 < argc) passes = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_exec [--quick] [--hand | --transports] [--procs P] [--iters K] [--warmup W] [--passes R]\n");
      return 2;
    }
  }
  if (procs < 0 || iters < 1 || warmup < 0 || passes < 1) {
    std::fprintf(stderr, "bench_exec: --procs, --iters and --passes must be positive, --warmup not negative\n");
    return 2;
  }
  if (quick) procs = 2, iters = 2, warmup = 1, passes = 1;
  if (std::system("command -v mpiexec >/dev/null 2>&1") != 0) {
    std::printf("bench/exec: mpiexec is not installed; nothing to measure\n");
    return 0;
  }
  std::vector<int> hand_procs = procs ? std::vector<int>{procs} : std::vector<int>{2, 4};
  if (hand) return hand_table(quick, hand_procs, iters, warmup, passes);
  if (transports) return transport_table(quick, procs ? procs : 4, iters);
  int status = library_table(quick, procs ? procs : 4, iters);
  if (quick) {
    std::printf("\n");
    status |= hand_table(quick, hand_procs, iters, warmup, passes);
    std::printf("\n");
    status |= transport_table(quick, procs ? procs : 2, iters);
  }
  return status;
}
