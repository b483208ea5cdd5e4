#include "exec/mpi/mpi_world.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

namespace sg::exec {

std::string linked_mpi() {
#if defined(OPEN_MPI)
  return "openmpi";
#elif defined(I_MPI_VERSION)
  return "intel-mpi";
#elif defined(MVAPICH2_VERSION)
  return "mvapich2";
#elif defined(MPICH_VERSION)
  return "mpich";
#else
  return "";
#endif
}

std::string mpi_library() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (MPI_Get_library_version(v, &len) != MPI_SUCCESS) return linked_mpi();
  std::string s(v, static_cast<size_t>(len));
  s = s.substr(0, s.find_first_of("\n\r"));
  // MPICH says "MPICH Version:<tab>4.0.2": "MPICH 4.0.2".
  if (size_t at = s.find(" Version:"); at != std::string::npos) s.erase(at, 9);
  for (char& c : s)
    if (c == '\t') c = ' ';
  for (size_t at = s.find("  "); at != std::string::npos; at = s.find("  ")) s.erase(at, 1);
  if (s.size() > 80) s = s.substr(0, s.find(',') < 80 ? s.find(',') : 80);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == ',')) s.pop_back();
  return s.empty() ? linked_mpi() : s;
}

// Hydra-family launchers speak PMI-1 (PMI_FD / PMI_PORT), Open MPI's its own runtime's
// (OMPI_MCA_orte_hnp_uri, PMIx): neither joins the other's job.
bool can_join(const std::string& linked, const std::string& flavour, std::string& why) {
  bool mpich_family = flavour == "mpich-hydra" || flavour == "intel-mpi" || flavour == "mvapich2";
  if (linked == "openmpi" && mpich_family) {
    why = "started by " + flavour + "'s launcher but built with Open MPI";
    return false;
  }
  if (linked != "openmpi" && !linked.empty() && flavour == "openmpi") {
    why = "started by Open MPI's mpiexec but built with " + linked;
    return false;
  }
  return true;
}

namespace {

std::string launcher_words(const LaunchInfo& info) {
  std::string who = info.launcher == "srun" ? "srun" : info.launcher;
  if (info.mpi == "mpich-hydra") who = "MPICH's Hydra (" + info.launcher + ")";
  else if (info.mpi == "intel-mpi") who = "Intel MPI's Hydra (" + info.launcher + ")";
  else if (info.mpi == "mvapich2") who = "MVAPICH2's " + info.launcher;
  else if (info.mpi == "openmpi") who = "Open MPI's " + info.launcher;
  else if (!info.mpi.empty()) who = info.launcher + " (" + info.mpi + ")";
  return who;
}

}  // namespace

LauncherCheck check_launcher(int mpi_size) {
  LaunchInfo info = detect_launch([](const char* n) -> const char* { return std::getenv(n); }, -1);
  LauncherCheck c;
  c.rank = info.rank;
  c.world_size = info.world_size;
  if (info.launcher == "single") return c;
  std::string why;
  std::string count = info.world_size > 0 ? std::to_string(info.world_size) + " processes" : "its processes";
  if (!can_join(linked_mpi(), info.mpi, why)) {
    c.ok = false;
    c.message = launcher_words(info) + " started " + count + ", but this stepgraph is built with " + mpi_library() +
                ", which cannot join that launcher's job: each process would run alone, as a world of 1. Start it with its own MPI's "
                "mpiexec (" +
                linked_mpi() + "), or build stepgraph against the launcher's MPI (cmake -DMPI_CXX_COMPILER=…)";
    c.gist = launcher_words(info) + " started it, but this stepgraph is built with " + mpi_library() + " and cannot join that job";
    return c;
  }
  if (mpi_size >= 0 && info.world_size > 0 && info.world_size != mpi_size) {
    c.ok = false;
    c.message = launcher_words(info) + " started " + count + ", but " + mpi_library() + " sees a world of " + std::to_string(mpi_size) +
                ": this binary's MPI is not the launcher's (or the launcher has no MPI plugin, e.g. srun without --mpi=pmix). Start it "
                "with its own MPI's mpiexec (" +
                linked_mpi() + "), or build stepgraph against the launcher's MPI";
    c.gist = launcher_words(info) + " started " + count + ", but " + mpi_library() + " sees a world of " + std::to_string(mpi_size);
  }
  return c;
}

int report_refusal(const LauncherCheck& c, const std::string& prefix) {
  std::string text = c.speaks() ? prefix + c.message + "\n" : job_pointer(c.rank, c.world_size, 0, 2, c.gist);
  // One write: the ranks print at the same moment.
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
  if (c.speaks()) let_others_speak(c.world_size);
  else wait_for_speaker(c.world_size);
  return 2;
}

int join_mpi_job(int& rank, int& size, bool errors_return) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (LauncherCheck after = check_launcher(size); !after.ok) {  // the launcher's world must be MPI's
    report_refusal(after);
    MPI_Finalize();
    return 2;
  }
  if (errors_return) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return 0;
}

}  // namespace sg::exec
