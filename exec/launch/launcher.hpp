// Launcher and environment detection: which launcher started this process (mpiexec, srun,
// torchrun or none), which MPI flavour, this process's rank, world size, local rank and size,
// node, device and backend, and the rendezvous address a PyTorch job needs — from environment
// variables only. `detect_launch` is a pure function of the variables it is given (tests feed
// synthetic environments); it needs nothing but the standard library, never MPI or CUDA.
// `stepgraph env` (cli/env_command.cpp) prints it and, built with MPI, fills in what only MPI
// knows (a local rank from a shared-memory split, rank 0's host) through `complete_from_mpi`.
// The rules, and why each one, are in README.md ("Launchers and `stepgraph env`") and at the top
// of launcher.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sg::exec {

struct LaunchInfo {
  std::string launcher = "single";  // mpiexec, srun, torchrun or single
  std::string mpi;                  // openmpi, mpich-hydra, intel-mpi, mvapich2, pmix, slurm-pmi2, or "" when unknown / none
  int64_t rank = 0;
  int64_t world_size = 1;       // -1: unknown (a launcher gave a rank but no size)
  int64_t local_rank = 0;       // a placeholder 0 when !local_rank_known
  int64_t local_size = 1;       // -1: unknown
  int64_t node = 0;             // index of this process's node; -1: unknown
  int64_t device = -1;          // local_rank % device_count; -1: none (CPU)
  std::string backend = "cpu";  // cuda or cpu
  std::string backend_reason;   // why that backend, e.g. "no CUDA runtime (device count unknown)"
  std::string master_addr;      // "" when it cannot be known here (then a warning says so)
  int master_port = 29500;
  bool local_rank_known = true;  // false: no variable gave the local rank (MPI can: complete_from_mpi)
  std::vector<std::string> warnings;
  std::vector<std::string> notes;  // where each value came from, fallbacks and why
};

// getenv_fn returns a variable's value or nullptr when unset. device_count: CUDA devices visible
// (-1: no CUDA runtime to ask, 0: none). env_names, when the caller can list its environment
// (environ), lets prefix markers (I_MPI_*, HYDRA_*) be recognised; without it a fixed list of
// well-known names is probed through getenv_fn. Never throws on malformed values: they become
// warnings and the source that carried them is ignored.
LaunchInfo detect_launch(const std::function<const char*(const char*)>& getenv_fn, int device_count,
                         const std::vector<std::string>& env_names = {});

// What MPI said after MPI_Init (cli/env_command.cpp): world rank and size, the rank and size in
// MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED), the node index (rank of this node's
// leader among the leaders), rank 0's host name. Fills what the environment left unknown (local
// rank and size, node, world size, master_addr), recomputes the device, removes the warnings that
// no longer hold and notes what came from MPI. A world that disagrees with the environment is a
// warning and MPI's answers are not used.
struct MpiFacts {
  int64_t rank = 0, world_size = 1, local_rank = 0, local_size = 1, node = 0;
  std::string rank0_host;
};
void complete_from_mpi(LaunchInfo& info, const MpiFacts& mpi, int device_count);

// True when `stepgraph env` should ask MPI: a launcher was detected (never for `single`) and the
// local rank or size, the world size or master_addr is unknown (an unknown node alone is not
// worth an MPI_Init; it is filled in when MPI is asked anyway).
bool wants_mpi(const LaunchInfo& info);

// The variable by which an MPI_Init in this process would reach its launcher's process manager
// (PMIX_SERVER_URI*, OMPI_MCA_orte_hnp_uri, PMI_FD, PMI_PORT, MPIRUN_HOST, SLURM_STEP_ID), or ""
// when there is none: then MPI_Init would start a singleton (slow, noisy, or an abort when the
// launcher variables were copied by hand), so `stepgraph env` does not call it.
std::string process_manager_contact(const std::function<const char*(const char*)>& getenv_fn,
                                    const std::vector<std::string>& env_names = {});

// One JSON object with the keys launcher, mpi, rank, world_size, local_rank, local_size, node,
// device, backend, master_addr, master_port, warnings (a list of strings).
std::string launch_json(const LaunchInfo& info);
// A few aligned lines for people: launcher, mpi, rank / world, local rank / size, node, device and
// backend with the reason, master, warnings, then the notes.
std::string launch_text(const LaunchInfo& info);
// One line, `export RANK=… WORLD_SIZE=… LOCAL_RANK=… LOCAL_WORLD_SIZE=… MASTER_ADDR=… MASTER_PORT=…`,
// for `eval "$(stepgraph env --export)"` before torch.distributed.init_process_group. A value that
// is unknown is left out (the caller warns on stderr), never exported empty.
std::string launch_export(const LaunchInfo& info);

// The one line a process prints when it stops with `exit_code` because of a job-wide error that
// another process of the job prints (`speaker`, its rank; -1: "another rank", when the speaker
// is not known here): every process reaches the same verdict, only one prints the whole message
// (so a job of 64 ranks does not print it 64 times), and no process exits in silence (a user
// reading one rank's log, or a launcher that shows only the failing ranks' output, still learns
// why). `gist`, when given, is the reason in a few words. E.g.
//   stepgraph: error: rank 1 of 2 exits with code 2: <gist>; rank 0 printed the whole message
std::string job_pointer(int64_t rank, int64_t world_size, int64_t speaker, int exit_code, const std::string& gist = "");
// Before the speaker of a job-wide error exits without MPI (a bad command line, a refused
// launcher): a launcher that sees one process exit non-zero kills the others (Open MPI's
// mpiexec), which could cut off their one-line pointers. The speaker waits a moment (a quarter
// of a second, only when the job has several processes) so that they get out first.
void let_others_speak(int64_t world_size);
// The other side of it, for a rank that only points to the speaker: the launcher kills the job at
// the first non-zero exit, so a pointer that exits at once can take the speaker down before it has
// printed (rank 0 started seconds late on a loaded machine and its message was lost). It waits up
// to 3 s (only when the job has several processes); the speaker's own exit ends the job sooner.
void wait_for_speaker(int64_t world_size);

}  // namespace sg::exec
