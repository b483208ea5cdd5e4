// Whether this process's MPI is the launcher's: a binary built against one MPI and started by
// another MPI's launcher (Open MPI's build under MPICH's Hydra, or the reverse) does not join the
// job. Each process starts a world of one of its own and runs it to the end, exit 0: N silent
// one-rank runs that look like one N-rank run. The launcher's side comes from the environment
// (exec/launch/launcher.hpp), this binary's from its mpi.h; a command refuses the mismatch before
// MPI_Init where the families already disagree, and after it where the launcher's world size is
// not MPI's (srun without an MPI plugin, say).
#pragma once
#include <string>

#include "exec/launch/launcher.hpp"

namespace sg::exec {

// The MPI this binary is built with, by the macros of its mpi.h: openmpi, intel-mpi, mvapich2,
// mpich, or "".
std::string linked_mpi();
// The library's own words for itself (MPI_Get_library_version's first line; callable before
// MPI_Init), e.g. "Open MPI v4.1.4, …" or "MPICH Version: 4.0.2".
std::string mpi_library();
// False with the reason when `flavour` (LaunchInfo::mpi) is a launcher `linked` cannot join.
bool can_join(const std::string& linked, const std::string& flavour, std::string& why);

// The check a command that joins an MPI job runs (exec, calibrate, the distributed sim sweep;
// never `env`, which only reads variables and works under any launcher): before MPI_Init
// (mpi_size < 0) on the launcher's family, after it on the world size too.
struct LauncherCheck {
  bool ok = true;
  std::string message;  // the whole reason, naming both MPIs (printed by the launcher's rank 0)
  std::string gist;     // the reason in a few words (every other rank's one-line pointer)
  int64_t rank = 0;     // this process in the launcher's job, from its variables
  int64_t world_size = 1;
  bool speaks() const { return rank <= 0; }
};
LauncherCheck check_launcher(int mpi_size);
// Prints a refused check on stderr, as `prefix` + message on the launcher's rank 0 and as a
// one-line pointer (job_pointer) on every other rank, so that no process exits 2 in silence.
// Returns 2.
int report_refusal(const LauncherCheck& check, const std::string& prefix = "stepgraph: error: ");

// Joins the launcher's MPI job (MPI_Init_thread, MPI_THREAD_SINGLE), for a command that already
// ran check_launcher(-1): the world's rank and size, the launcher checked again against the world
// size, and with `errors_return` MPI_ERRORS_RETURN on MPI_COMM_WORLD (every failure a return code
// the command reports, never MPI's abort; calibrate keeps MPI's default, fatal errors). Returns 0; or 2 after report_refusal, with MPI finalized again.
int join_mpi_job(int& rank, int& size, bool errors_return = true);

}  // namespace sg::exec
