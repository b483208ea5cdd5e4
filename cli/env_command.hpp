// `stepgraph env`: which launcher, MPI, rank, local rank, node, device and backend this process
// sees, and the rendezvous address for PyTorch (cli/env_command.cpp, over exec/launch/launcher.hpp).
#pragma once

namespace sg::cli {

struct EnvOpts {
  bool json = false;     // --json: one JSON object
  bool export_ = false;  // --export: one `export RANK=… …` line for eval
  bool no_mpi = false;   // --no-mpi: never call MPI_Init
};

int cmd_env(const EnvOpts& o);

}  // namespace sg::cli
