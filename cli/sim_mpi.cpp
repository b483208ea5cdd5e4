// Where `stepgraph sim` runs its points: in this process, or — started by mpiexec with several
// processes — split over them (point i on process i mod K), each result sent to rank 0 as JSON,
// so rank 0 reports exactly what a serial run would. MPI is the engine for work that outgrows
// one core; there is no thread pool of our own.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/sim_command.hpp"

#ifdef STEPGRAPH_HAVE_MPI
#include <mpi.h>

#include "exec/mpi/mpi_world.hpp"
#endif

namespace sg::cli {

namespace {

// A progress bar on stderr for runs that last: only on a terminal, from two seconds on.
class ProgressBar {
 public:
  explicit ProgressBar(size_t total) : total_(total), tty_(isatty(2) != 0), t0_(std::chrono::steady_clock::now()) {}
  // done points, and `within` of the point under way.
  void update(size_t done, double within = 0) {
    if (!tty_ || std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count() < 2) return;
    double f = total_ ? (static_cast<double>(done) + within) / static_cast<double>(total_) : 1;
    int width = 30, fill = std::min(width, static_cast<int>(width * f));
    std::string bar(static_cast<size_t>(fill), '#');
    bar.append(static_cast<size_t>(width - fill), '.');
    if (total_ > 1) std::fprintf(stderr, "\r[%s] %zu/%zu points", bar.c_str(), done, total_);
    else std::fprintf(stderr, "\r[%s] %3.0f%% simulated", bar.c_str(), 100 * f);
    std::fflush(stderr);
    shown_ = true;
  }
  ~ProgressBar() {
    if (shown_) std::fprintf(stderr, "\r%60s\r", "");
  }

 private:
  size_t total_;
  bool tty_, shown_ = false;
  std::chrono::steady_clock::time_point t0_;
};

// Started by a launcher with more than one process? (Open MPI, MPICH/Hydra, Slurm.)
int launcher_world_size() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* s = std::getenv(v)) return std::atoi(s);
  return 1;
}

}  // namespace

int run_points_distributed(const SimOpts& o, const PointPlan& plan, std::vector<PointResult>& results, bool& root) {
  root = true;
  size_t total = plan.points.size();
  int size = launcher_world_size();
#ifdef STEPGRAPH_HAVE_MPI
  if (size > 1) {
    // Refused: this process reports nothing more (the speaker has said why).
    if (exec::LauncherCheck job = exec::check_launcher(-1); !job.ok) {
      root = false;
      return exec::report_refusal(job);
    }
    MPI_Init(nullptr, nullptr);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (exec::LauncherCheck after = exec::check_launcher(size); !after.ok) {
      root = false;
      exec::report_refusal(after);
      MPI_Finalize();
      return 2;
    }
    root = rank == 0;
    ProgressBar bar(total);
    size_t done = 0;
    for (size_t i = 0; i < total; ++i) {
      int owner = static_cast<int>(i % static_cast<size_t>(size));
      if (owner == rank) results[i] = run_point(o, plan, i);
      // Rank 0 collects point i from its owner, in order (so the progress bar moves).
      if (owner != 0) {
        if (rank == owner) {
          std::string msg = sim::point_to_json(results[i]).dump();
          MPI_Send(msg.data(), static_cast<int>(msg.size()), MPI_CHAR, 0, static_cast<int>(i % 30000), MPI_COMM_WORLD);
        } else if (rank == 0) {
          MPI_Status st;
          MPI_Probe(owner, static_cast<int>(i % 30000), MPI_COMM_WORLD, &st);
          int len = 0;
          MPI_Get_count(&st, MPI_CHAR, &len);
          std::string msg(static_cast<size_t>(len), '\0');
          MPI_Recv(msg.data(), len, MPI_CHAR, owner, static_cast<int>(i % 30000), MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          results[i] = sim::point_from_json(nlohmann::json::parse(msg));
        }
      }
      if (root) bar.update(++done);
    }
    MPI_Finalize();
    return 0;
  }
#else
  if (size > 1 && std::getenv("OMPI_COMM_WORLD_RANK") && std::atoi(std::getenv("OMPI_COMM_WORLD_RANK")) != 0) {
    root = false;  // without MPI every process would print the same: only the first does
    std::fprintf(stderr, "stepgraph: built without MPI: process %s runs nothing\n", std::getenv("OMPI_COMM_WORLD_RANK"));
    return 0;
  }
#endif
  ProgressBar bar(total);
  PointPlan with_progress = plan;
  for (size_t i = 0; i < total; ++i) {
    with_progress.sim.progress = [&bar, i](double f) { bar.update(i, f); };
    results[i] = run_point(o, with_progress, i);
    bar.update(i + 1);
  }
  return 0;
}

}  // namespace sg::cli
