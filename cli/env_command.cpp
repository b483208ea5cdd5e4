// `stepgraph env [--json] [--export]`: prints what exec/launch/launcher.cpp detects from the environment.
// Built with MPI (STEPGRAPH_HAVE_MPI), when a launcher was detected (never for a single process:
// a singleton MPI_Init is slow and noisy) and the environment leaves the local rank or size, the
// world size or the master address unknown, it asks MPI: MPI_Init, a shared-memory split
// for the local rank and size, the node leaders' communicator for the node index, rank 0's host
// name broadcast, MPI_Finalize. Only when the process manager can be reached (an MPI_Init from
// launcher variables copied by hand would abort) and the linked MPI can join the launcher's job.
// Under a launcher this binary's MPI cannot join (Open MPI's build under MPICH's Hydra, say) env
// still reads every variable and prints this process's line: it needs no MPI to do so, and a
// PyTorch job under that launcher needs its rank. Only the commands that join an MPI job (exec,
// calibrate, the distributed sim sweep) refuse such a launcher (exec/mpi/mpi_world.hpp).
// A program started after it in the same slot may not be able to call MPI_Init again (Hydra's
// PMI_FD is one connection per slot): there, `--no-mpi`.
#include "cli/env_command.hpp"
#include "cli/huge_pages.hpp"
#ifdef STEPGRAPH_HAVE_CUDA
#include "exec/cuda/device.hpp"
#endif

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "exec/launch/launcher.hpp"

#ifdef STEPGRAPH_HAVE_MPI
#include "exec/mpi/mpi_world.hpp"
#endif

#ifdef STEPGRAPH_HAVE_MPI
#include <mpi.h>
#endif

extern char** environ;

namespace sg::cli {

namespace {

std::vector<std::string> environment_names() {
  std::vector<std::string> names;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    names.push_back(kv.substr(0, kv.find('=')));
  }
  return names;
}

#ifdef STEPGRAPH_HAVE_MPI
exec::MpiFacts ask_mpi() {
  exec::MpiFacts f;
  MPI_Init(nullptr, nullptr);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm shm = MPI_COMM_NULL, leaders = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shm);
  int local_rank = 0, local_size = 1;
  MPI_Comm_rank(shm, &local_rank);
  MPI_Comm_size(shm, &local_size);
  // Each node's local rank 0 joins the leaders; its rank there is the node's index (nodes ordered
  // by their lowest world rank), sent to the node's other ranks.
  MPI_Comm_split(MPI_COMM_WORLD, local_rank == 0 ? 0 : MPI_UNDEFINED, rank, &leaders);
  int node = 0;
  if (leaders != MPI_COMM_NULL) MPI_Comm_rank(leaders, &node);
  MPI_Bcast(&node, 1, MPI_INT, 0, shm);
  char host[256] = {};
  if (rank == 0 && gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  MPI_Bcast(host, static_cast<int>(sizeof host), MPI_CHAR, 0, MPI_COMM_WORLD);
  if (leaders != MPI_COMM_NULL) MPI_Comm_free(&leaders);
  MPI_Comm_free(&shm);
  MPI_Finalize();
  f.rank = rank;
  f.world_size = size;
  f.local_rank = local_rank;
  f.local_size = local_size;
  f.node = node;
  f.rank0_host = host;
  return f;
}
#endif

}  // namespace

int cmd_env(const EnvOpts& o) {
  // Built with CUDA: the runtime's device count (any error: 0 devices, the error as the reason);
  // without: unknown (-1), so the backend is cpu.
#ifdef STEPGRAPH_HAVE_CUDA
  const cuda::DeviceProbe probe = cuda::probe_devices();
  const int device_count = probe.count;
  const std::string probing = probe.count ? std::string() : ": " + probe.reason;
#else
  const int device_count = -1;
  const std::string probing = ", built without CUDA device probing";
#endif
  auto get = [](const char* name) -> const char* { return std::getenv(name); };
  std::vector<std::string> names = environment_names();
  exec::LaunchInfo info = exec::detect_launch(get, device_count, names);
  info.backend_reason += probing;
  if (exec::wants_mpi(info) && o.no_mpi) {
    info.notes.push_back("MPI not asked: --no-mpi");
  } else if (exec::wants_mpi(info)) {
#ifdef STEPGRAPH_HAVE_MPI
    std::string why;
    if (exec::process_manager_contact(get, names).empty()) {
      info.notes.push_back(
          "MPI not asked: no process manager to reach (no PMIX_SERVER_URI*, OMPI_MCA_orte_hnp_uri, PMI_FD, PMI_PORT, "
          "MPIRUN_HOST or SLURM_STEP_ID), so MPI_Init would start a singleton");
    } else if (exec::can_join(exec::linked_mpi(), info.mpi, why)) {
      exec::complete_from_mpi(info, ask_mpi(), device_count);
      info.backend_reason += probing;
    } else {
      info.notes.push_back("MPI not asked: " + why);
    }
#else
    info.notes.push_back("built without MPI: what the environment leaves unknown stays unknown");
#endif
  }
  info.notes.push_back(huge_pages_state());
  if (o.json) {
    std::cout << exec::launch_json(info);
  } else if (o.export_) {
    for (const std::string& w : info.warnings) std::cerr << "stepgraph env: warning: " << w << "\n";
    if (info.world_size < 0) std::cerr << "stepgraph env: warning: WORLD_SIZE not exported: unknown\n";
    if (!info.local_rank_known) std::cerr << "stepgraph env: warning: LOCAL_RANK not exported: unknown\n";
    if (info.local_size < 0) std::cerr << "stepgraph env: warning: LOCAL_WORLD_SIZE not exported: unknown\n";
    if (info.master_addr.empty()) std::cerr << "stepgraph env: warning: MASTER_ADDR not exported: unknown\n";
    std::cout << exec::launch_export(info);
  } else {
    std::cout << exec::launch_text(info);
  }
  return 0;
}

}  // namespace sg::cli
