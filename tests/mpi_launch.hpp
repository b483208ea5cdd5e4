// How the tests start MPI jobs and name their files: the launcher of the MPI this build links
// (CMake's MPIEXEC_EXECUTABLE, so a build against MPICH runs under Hydra), no launcher-specific
// flags or messages, and temporary paths of this process's own, so two runs never collide.
#pragma once
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

namespace sgtest {

// The launcher command, ready for " -n K prog …". Open MPI's variables let it run as root and
// oversubscribed on a small machine; other MPIs ignore them.
inline std::string mpiexec(int timeout_s = 120) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 timeout " +
         std::to_string(timeout_s) + " '" + STEPGRAPH_MPIEXEC + "'";
}

inline bool have_mpiexec() {
  std::string launcher = STEPGRAPH_MPIEXEC;
  if (launcher.find('/') != std::string::npos) return access(launcher.c_str(), X_OK) == 0;
  return std::system(("command -v '" + launcher + "' >/dev/null 2>&1").c_str()) == 0;
}

// A path in the temporary folder for this process only: /tmp/stepgraph_test_<pid>_<k>_<name>.
inline std::string temp_path(const std::string& name) {
  static std::atomic<int> k{0};
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/stepgraph_test_" + std::to_string(getpid()) + "_" + std::to_string(k++) + "_" + name;
}

}  // namespace sgtest
