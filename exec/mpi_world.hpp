// Whether this process's MPI is the launcher's: a binary built against one MPI and started by
// another MPI's launcher (Open MPI's build under MPICH's Hydra, or the reverse) does not join the
// job. Each process starts a world of one of its own and runs it to the end, exit 0: N silent
// one-rank runs that look like one N-rank run. The launcher's side comes from the environment
// (exec/launcher.hpp), this binary's from its mpi.h; a command refuses the mismatch before
// MPI_Init where the families already disagree, and after it where the launcher's world size is
// not MPI's (srun without an MPI plugin, say).
#pragma once
#include <string>

#include "exec/launcher.hpp"

namespace sg::exec {

// The MPI this binary is built with, by the macros of its mpi.h: openmpi, intel-mpi, mvapich2,
// mpich, or "".
std::string linked_mpi();
// The library's own words for itself (MPI_Get_library_version's first line; callable before
// MPI_Init), e.g. "Open MPI v4.1.4, …" or "MPICH Version: 4.0.2".
std::string mpi_library();
// False with the reason when `flavour` (LaunchInfo::mpi) is a launcher `linked` cannot join.
bool can_join(const std::string& linked, const std::string& flavour, std::string& why);

// The check a command runs: before MPI_Init (mpi_size < 0) on the launcher's family, after it on
// the world size too. False with one message naming both MPIs; `speak` says whether this process
// should print it (the launcher's rank 0: every process gets the same answer).
bool launcher_agrees(int mpi_size, std::string& err, bool& speak);

}  // namespace sg::exec
