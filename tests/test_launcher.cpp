// Launcher and environment detection (exec/launch/launcher.hpp) on synthetic environments: every
// launcher, the traps (PMI_RANK under Hydra or Slurm's pmi2, mpiexec inside an sbatch job,
// torchrun under srun), disagreements, malformed values; then `stepgraph env` itself, alone and
// under mpiexec.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include "run_command.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include "exec/launch/launcher.hpp"

using sg::exec::LaunchInfo;
namespace fs = std::filesystem;

namespace {

using Vars = std::map<std::string, std::string>;

// Detects from `v`; with list_names the variable names are passed too (as the CLI does from
// environ), without it prefix markers are probed through getenv alone.
LaunchInfo detect(const Vars& v, int devices = -1, bool list_names = true) {
  std::vector<std::string> names;
  if (list_names)
    for (const auto& kv : v) names.push_back(kv.first);
  return sg::exec::detect_launch(
      [&](const char* n) -> const char* {
        auto it = v.find(n);
        return it == v.end() ? nullptr : it->second.c_str();
      },
      devices, names);
}

Vars merge(Vars a, const Vars& b) {
  for (const auto& kv : b) a[kv.first] = kv.second;
  return a;
}

// A line of `lines` that contains every one of `parts`.
bool any_has(const std::vector<std::string>& lines, std::initializer_list<std::string> parts) {
  for (const std::string& l : lines) {
    bool all = true;
    for (const std::string& p : parts) all = all && l.find(p) != std::string::npos;
    if (all) return true;
  }
  return false;
}

std::string dump(const LaunchInfo& L) { return sg::exec::launch_text(L); }

const Vars kOmpi4 = {
    {"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}};
// An srun step: 8 tasks, 2 per node on node[07-10]; this is task 5 (node 2, local rank 1).
const Vars kSrun8 = {{"SLURM_JOB_ID", "4242"},
                     {"SLURM_STEP_ID", "0"},
                     {"SLURM_PROCID", "5"},
                     {"SLURM_STEP_NUM_TASKS", "8"},
                     {"SLURM_NTASKS", "8"},
                     {"SLURM_LOCALID", "1"},
                     {"SLURM_NODEID", "2"},
                     {"SLURM_STEP_TASKS_PER_NODE", "2(x4)"},
                     {"SLURM_STEP_NODELIST", "node[07-10]"}};

}  // namespace

TEST_CASE("no launcher: a single process, rank 0 of 1", "[launcher]") {
  LaunchInfo L = detect({{"HOME", "/root"}, {"PATH", "/usr/bin"}});
  INFO(dump(L));
  CHECK(L.launcher == "single");
  CHECK(L.mpi.empty());
  CHECK(L.rank == 0);
  CHECK(L.world_size == 1);
  CHECK(L.local_rank == 0);
  CHECK(L.local_size == 1);
  CHECK(L.node == 0);
  CHECK(L.local_rank_known);
  CHECK(L.master_addr == "127.0.0.1");
  CHECK(L.master_port == 29500);
  CHECK(L.warnings.empty());
  CHECK_FALSE(sg::exec::wants_mpi(L));
  // MASTER_ADDR / MASTER_PORT given by hand are kept.
  LaunchInfo M = detect({{"MASTER_ADDR", "10.0.0.9"}, {"MASTER_PORT", "1234"}});
  CHECK(M.launcher == "single");
  CHECK(M.master_addr == "10.0.0.9");
  CHECK(M.master_port == 1234);
}

TEST_CASE("Open MPI: OMPI_COMM_WORLD_* give mpiexec, openmpi", "[launcher]") {
  LaunchInfo L = detect(kOmpi4);
  INFO(dump(L));
  CHECK(L.launcher == "mpiexec");
  CHECK(L.mpi == "openmpi");
  CHECK(L.rank == 1);
  CHECK(L.world_size == 4);
  CHECK(L.local_rank == 1);
  CHECK(L.local_size == 2);
  CHECK(L.local_rank_known);
  CHECK(L.node == -1);  // two nodes, and no variable says which
  // Several nodes and no variable naming rank 0's host: MASTER_ADDR is unknown, with a warning.
  CHECK(L.master_addr.empty());
  CHECK(any_has(L.warnings, {"MASTER_ADDR unknown", "export MASTER_ADDR"}));
  CHECK(sg::exec::wants_mpi(L));
  // All ranks on one node: 127.0.0.1, node 0.
  LaunchInfo one = detect(merge(kOmpi4, {{"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}));
  CHECK(one.master_addr == "127.0.0.1");
  CHECK(one.node == 0);
  CHECK(one.warnings.empty());
  CHECK_FALSE(sg::exec::wants_mpi(one));
  // MASTER_ADDR given: only the node is unknown, which is not worth an MPI_Init.
  LaunchInfo given = detect(merge(kOmpi4, {{"MASTER_ADDR", "node01"}}));
  CHECK(given.node == -1);
  CHECK(given.warnings.empty());
  CHECK_FALSE(sg::exec::wants_mpi(given));
}

TEST_CASE("MPICH's Hydra: PMI_RANK with MPI_LOCALRANKID gives mpiexec, mpich-hydra", "[launcher]") {
  Vars v = {{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}, {"PMI_FD", "6"}, {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "2"}};
  LaunchInfo L = detect(v);
  INFO(dump(L));
  CHECK(L.launcher == "mpiexec");
  CHECK(L.mpi == "mpich-hydra");
  CHECK(L.rank == 2);
  CHECK(L.world_size == 4);
  CHECK(L.local_rank == 0);
  CHECK(L.local_size == 2);
  CHECK(L.warnings.size() == 1);  // only MASTER_ADDR
  // PMI_RANK with neither a Hydra marker nor Slurm: Hydra assumed, and said so.
  LaunchInfo bare = detect({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}});
  CHECK(bare.launcher == "mpiexec");
  CHECK(bare.mpi == "mpich-hydra");
  CHECK(any_has(bare.notes, {"Hydra assumed"}));
  CHECK_FALSE(bare.local_rank_known);
  CHECK(any_has(bare.warnings, {"local rank unknown"}));
}

TEST_CASE("Intel MPI: Hydra's variables with I_MPI_* give intel-mpi", "[launcher]") {
  Vars v = {{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}, {"I_MPI_ROOT", "/opt/intel/mpi"}};
  LaunchInfo L = detect(v);
  INFO(dump(L));
  CHECK(L.launcher == "mpiexec");
  CHECK(L.mpi == "intel-mpi");
  CHECK(L.rank == 1);
  CHECK(L.master_addr == "127.0.0.1");
  // Without the list of names, I_MPI_ROOT is probed by name.
  CHECK(detect(v, -1, false).mpi == "intel-mpi");
  // With the list, any I_MPI_* is enough.
  Vars odd = {{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}, {"I_MPI_SOMETHING_NEW", "1"}};
  CHECK(detect(odd).mpi == "intel-mpi");
}

TEST_CASE("PMI_RANK under Slurm without a Hydra marker is Slurm's pmi2 under srun", "[launcher][trap]") {
  Vars v = merge(kSrun8, {{"PMI_RANK", "5"}, {"PMI_SIZE", "8"}, {"PMI_FD", "7"}, {"PMI_JOBID", "4242.0"}});
  LaunchInfo L = detect(v);
  INFO(dump(L));
  CHECK(L.launcher == "srun");
  CHECK(L.mpi == "slurm-pmi2");
  CHECK(L.rank == 5);
  CHECK(L.world_size == 8);
  CHECK(L.local_rank == 1);  // from SLURM_LOCALID (PMI-2 under Slurm has no MPI_LOCALRANKID)
  CHECK(L.local_size == 2);  // from SLURM_STEP_TASKS_PER_NODE
  CHECK(L.node == 2);
  CHECK(L.master_addr == "node07");  // the step's first node
  CHECK(L.warnings.empty());
  CHECK(any_has(L.notes, {"pmi2"}));
  // Intel MPI over Slurm's PMI-2 (I_MPI_PMI_LIBRARY), with I_MPI_HYDRA_BOOTSTRAP set by a module:
  // I_MPI_HYDRA_* is not a Hydra launch marker.
  LaunchInfo intel = detect(merge(v, {{"I_MPI_PMI_LIBRARY", "/usr/lib/libpmi2.so"}, {"I_MPI_HYDRA_BOOTSTRAP", "slurm"}}));
  CHECK(intel.launcher == "srun");
  CHECK(intel.mpi == "slurm-pmi2");
  // A real Hydra marker beside SLURM_* (mpiexec inside an sbatch job): Hydra wins, SLURM_* noted.
  LaunchInfo hydra = detect(merge(v, {{"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}, {"PMI_RANK", "3"}}));
  INFO(dump(hydra));
  CHECK(hydra.launcher == "mpiexec");
  CHECK(hydra.mpi == "mpich-hydra");
  CHECK(hydra.rank == 3);
  // HYDRA_* (found by prefix) and PMI_PORT are markers too.
  CHECK(detect(merge(v, {{"HYDRA_LAUNCHER", "slurm"}})).launcher == "mpiexec");
  CHECK(detect(merge(v, {{"PMI_PORT", "node07:4000"}})).launcher == "mpiexec");
  // Slurm's pmi2 where PMI_RANK and SLURM_PROCID disagree: a warning naming both.
  LaunchInfo bad = detect(merge(v, {{"PMI_RANK", "4"}}));
  CHECK(bad.rank == 4);
  CHECK(any_has(bad.warnings, {"PMI_RANK=4", "SLURM_PROCID=5", "disagree"}));
}

TEST_CASE("PMIx: PMIX_RANK gives pmix; its size comes from PMIX_SIZE or other sources", "[launcher]") {
  LaunchInfo alone = detect({{"PMIX_RANK", "2"}, {"PMIX_NAMESPACE", "prterun-x-1@1"}});
  INFO(dump(alone));
  CHECK(alone.launcher == "mpiexec");
  CHECK(alone.mpi == "pmix");
  CHECK(alone.rank == 2);
  CHECK(alone.world_size == -1);
  CHECK(any_has(alone.warnings, {"world size unknown"}));
  CHECK(any_has(alone.warnings, {"local rank unknown"}));
  CHECK(sg::exec::wants_mpi(alone));
  CHECK(detect({{"PMIX_RANK", "2"}, {"PMIX_SIZE", "4"}}).world_size == 4);
  // srun --mpi=pmix: Slurm's variables carry the sizes, the local rank and the node.
  LaunchInfo srun = detect(merge(kSrun8, {{"PMIX_RANK", "5"}, {"PMIX_NAMESPACE", "slurm.pmix.4242.0"}}));
  INFO(dump(srun));
  CHECK(srun.launcher == "srun");
  CHECK(srun.mpi == "pmix");
  CHECK(srun.rank == 5);
  CHECK(srun.world_size == 8);
  CHECK(srun.local_rank == 1);
  CHECK(srun.node == 2);
  CHECK(srun.warnings.empty());
  // Open MPI 5 (prterun sets both): openmpi, and PMIX_RANK must agree.
  LaunchInfo ompi5 = detect(merge(kOmpi4, {{"PMIX_RANK", "1"}}));
  CHECK(ompi5.mpi == "openmpi");
  CHECK(ompi5.warnings.size() == 1);  // MASTER_ADDR only
  LaunchInfo ompi5_bad = detect(merge(kOmpi4, {{"PMIX_RANK", "2"}}));
  CHECK(ompi5_bad.rank == 1);
  CHECK(any_has(ompi5_bad.warnings, {"OMPI_COMM_WORLD_RANK=1", "PMIX_RANK=2", "disagree"}));
}

TEST_CASE("MVAPICH2: MV2_COMM_WORLD_* give mpiexec, mvapich2", "[launcher]") {
  LaunchInfo L = detect(
      {{"MV2_COMM_WORLD_RANK", "3"}, {"MV2_COMM_WORLD_SIZE", "4"}, {"MV2_COMM_WORLD_LOCAL_RANK", "3"}, {"MV2_COMM_WORLD_LOCAL_SIZE", "4"}});
  INFO(dump(L));
  CHECK(L.launcher == "mpiexec");
  CHECK(L.mpi == "mvapich2");
  CHECK(L.rank == 3);
  CHECK(L.world_size == 4);
  CHECK(L.local_rank == 3);
  CHECK(L.local_size == 4);
  CHECK(L.node == 0);
  CHECK(L.master_addr == "127.0.0.1");
  CHECK(L.warnings.empty());
}

TEST_CASE("Slurm: an srun step gives srun, with the local size from the tasks-per-node list", "[launcher]") {
  LaunchInfo L = detect(kSrun8);
  INFO(dump(L));
  CHECK(L.launcher == "srun");
  CHECK(L.mpi.empty());
  CHECK(L.rank == 5);
  CHECK(L.world_size == 8);
  CHECK(L.local_rank == 1);
  CHECK(L.local_size == 2);
  CHECK(L.node == 2);
  CHECK(L.master_addr == "node07");
  CHECK(L.warnings.empty());
  // Uneven nodes: "3(x2),2" gives node 2 two tasks; node 0 three.
  Vars uneven = merge(kSrun8, {{"SLURM_STEP_TASKS_PER_NODE", "3(x2),2"},
                               {"SLURM_STEP_NUM_TASKS", "8"},
                               {"SLURM_NODEID", "2"},
                               {"SLURM_PROCID", "7"},
                               {"SLURM_LOCALID", "1"},
                               {"SLURM_STEP_NODELIST", "gpu[003-005,9],login1"}});
  LaunchInfo U = detect(uneven);
  CHECK(U.local_size == 2);
  CHECK(U.master_addr == "gpu003");
  CHECK(detect(merge(uneven, {{"SLURM_NODEID", "0"}, {"SLURM_PROCID", "1"}})).local_size == 3);
  // SLURM_NTASKS_PER_NODE when the step lists are absent.
  Vars per_node = kSrun8;
  per_node.erase("SLURM_STEP_TASKS_PER_NODE");
  per_node["SLURM_NTASKS_PER_NODE"] = "2";
  CHECK(detect(per_node).local_size == 2);
  // One node: 127.0.0.1.
  LaunchInfo one = detect(merge(kSrun8, {{"SLURM_STEP_TASKS_PER_NODE", "8"}, {"SLURM_NODEID", "0"}, {"SLURM_STEP_NODELIST", "node07"}}));
  CHECK(one.master_addr == "127.0.0.1");
  CHECK(one.node == 0);
  // The batch script of an sbatch job has SLURM_PROCID=0 but is no srun task: single.
  LaunchInfo batch = detect({{"SLURM_JOB_ID", "4242"},
                             {"SLURM_PROCID", "0"},
                             {"SLURM_NTASKS", "8"},
                             {"SLURM_LOCALID", "0"},
                             {"SLURM_NODEID", "0"},
                             {"SLURM_TASKS_PER_NODE", "2(x4)"}});
  INFO(dump(batch));
  CHECK(batch.launcher == "single");
  CHECK(batch.world_size == 1);
  CHECK(any_has(batch.notes, {"batch script"}));
  CHECK(batch.warnings.empty());
}

TEST_CASE("torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR/PORT", "[launcher]") {
  Vars t = {{"RANK", "3"},      {"WORLD_SIZE", "8"},         {"LOCAL_RANK", "1"},     {"LOCAL_WORLD_SIZE", "2"},      {"GROUP_RANK", "1"},
            {"ROLE_RANK", "3"}, {"MASTER_ADDR", "10.1.2.3"}, {"MASTER_PORT", "1234"}, {"TORCHELASTIC_RUN_ID", "none"}};
  LaunchInfo L = detect(t);
  INFO(dump(L));
  CHECK(L.launcher == "torchrun");
  CHECK(L.mpi.empty());
  CHECK(L.rank == 3);
  CHECK(L.world_size == 8);
  CHECK(L.local_rank == 1);
  CHECK(L.local_size == 2);
  CHECK(L.node == 1);
  CHECK(L.master_addr == "10.1.2.3");
  CHECK(L.master_port == 1234);
  CHECK(L.warnings.empty());
  // `srun torchrun …`: SLURM_* describe torchrun's agent (one task per node), not this worker.
  LaunchInfo under = detect(merge(t, {{"SLURM_JOB_ID", "7"},
                                      {"SLURM_STEP_ID", "0"},
                                      {"SLURM_PROCID", "1"},
                                      {"SLURM_STEP_NUM_TASKS", "4"},
                                      {"SLURM_NODEID", "1"},
                                      {"SLURM_LOCALID", "0"}}));
  INFO(dump(under));
  CHECK(under.launcher == "torchrun");
  CHECK(under.rank == 3);
  CHECK(under.warnings.empty());
  CHECK(any_has(under.notes, {"SLURM_PROCID=1", "torchrun's agent"}));
  // RANK / WORLD_SIZE without torchrun's markers still read as torchrun's when nothing else is set.
  LaunchInfo plain = detect({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"}});
  CHECK(plain.launcher == "torchrun");
  CHECK(plain.master_addr == "127.0.0.1");
}

TEST_CASE("AzureML: AZ_BATCH_MASTER_NODE gives the master address and port", "[launcher]") {
  LaunchInfo L = detect(merge(kOmpi4, {{"AZ_BATCH_MASTER_NODE", "10.0.0.4:6105"}}));
  INFO(dump(L));
  CHECK(L.master_addr == "10.0.0.4");
  CHECK(L.master_port == 6105);
  CHECK(L.warnings.empty());
  LaunchInfo ai = detect(merge(kOmpi4, {{"AZ_BATCHAI_MPI_MASTER_NODE", "10.0.0.5"}}));
  CHECK(ai.master_addr == "10.0.0.5");
  CHECK(ai.master_port == 29500);
  // Both, disagreeing: the first wins, a warning names both.
  LaunchInfo both = detect(merge(kOmpi4, {{"AZ_BATCH_MASTER_NODE", "10.0.0.4:6105"}, {"AZ_BATCHAI_MPI_MASTER_NODE", "10.0.0.5"}}));
  CHECK(both.master_addr == "10.0.0.4");
  CHECK(any_has(both.warnings, {"AZ_BATCH_MASTER_NODE=10.0.0.4", "AZ_BATCHAI_MPI_MASTER_NODE=10.0.0.5"}));
  // MASTER_ADDR / MASTER_PORT beat AzureML's, and a disagreement is named.
  LaunchInfo user =
      detect(merge(kOmpi4, {{"AZ_BATCH_MASTER_NODE", "10.0.0.4:6105"}, {"MASTER_ADDR", "10.0.0.9"}, {"MASTER_PORT", "7000"}}));
  CHECK(user.master_addr == "10.0.0.9");
  CHECK(user.master_port == 7000);
  CHECK(any_has(user.warnings, {"MASTER_ADDR=10.0.0.9", "AZ_BATCH_MASTER_NODE=10.0.0.4"}));
  CHECK(any_has(user.warnings, {"MASTER_PORT=7000", "6105"}));
  // Malformed: ignored with a warning.
  LaunchInfo bad = detect(merge(kOmpi4, {{"AZ_BATCH_MASTER_NODE", "10.0.0.4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}));
  CHECK(bad.master_addr == "127.0.0.1");
  CHECK(bad.master_port == 29500);
  CHECK(any_has(bad.warnings, {"AZ_BATCH_MASTER_NODE", "not ADDR:PORT"}));
}

TEST_CASE("mpiexec inside an sbatch job: the MPI launcher's variables win over SLURM_*, with a note", "[launcher][trap]") {
  // The batch script's SLURM_PROCID=0 / SLURM_NTASKS=4, inherited by every rank mpiexec starts.
  LaunchInfo L = detect(merge(kOmpi4, {{"SLURM_JOB_ID", "99"},
                                       {"SLURM_PROCID", "0"},
                                       {"SLURM_NTASKS", "4"},
                                       {"SLURM_LOCALID", "0"},
                                       {"SLURM_NODEID", "0"},
                                       {"SLURM_JOB_NODELIST", "n[1-2]"}}));
  INFO(dump(L));
  CHECK(L.launcher == "mpiexec");
  CHECK(L.mpi == "openmpi");
  CHECK(L.rank == 1);
  CHECK(L.local_rank == 1);
  CHECK(L.node == -1);  // SLURM_NODEID=0 is the batch script's, not this rank's
  CHECK(any_has(L.notes, {"mpiexec inside a Slurm job", "SLURM_PROCID=0", "win"}));
  CHECK(L.warnings.size() == 1);  // MASTER_ADDR only: not the disagreement
  // Ranks on a remote node inherit the step that started mpiexec's daemon (one task per node).
  LaunchInfo daemon = detect(
      merge(kOmpi4,
            {{"SLURM_JOB_ID", "99"}, {"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "1"}, {"SLURM_NODEID", "1"}}));
  CHECK(daemon.rank == 1);
  CHECK(any_has(daemon.notes, {"mpiexec inside a Slurm job"}));
  CHECK(daemon.warnings.size() == 1);
  // MVAPICH2 and Hydra follow the same rule.
  CHECK(detect(merge(kSrun8, {{"MV2_COMM_WORLD_RANK", "0"}, {"MV2_COMM_WORLD_SIZE", "2"}})).rank == 0);
}

TEST_CASE("variables that disagree give a warning naming both", "[launcher]") {
  // An srun step of the MPI world's own size that gives this process another rank is not the
  // mpiexec-in-sbatch trap.
  LaunchInfo L =
      detect(merge(kOmpi4, {{"SLURM_JOB_ID", "99"}, {"SLURM_STEP_ID", "3"}, {"SLURM_PROCID", "3"}, {"SLURM_STEP_NUM_TASKS", "4"}}));
  INFO(dump(L));
  CHECK(L.rank == 1);
  CHECK(any_has(L.warnings, {"SLURM_PROCID=3", "OMPI_COMM_WORLD_RANK=1", "disagree"}));
  // RANK left over in the environment against Open MPI's rank.
  LaunchInfo R = detect(merge(kOmpi4, {{"RANK", "3"}, {"WORLD_SIZE", "4"}}));
  CHECK(R.launcher == "mpiexec");
  CHECK(R.rank == 1);
  CHECK(any_has(R.warnings, {"OMPI_COMM_WORLD_RANK=1", "RANK=3"}));
  // Sizes too.
  LaunchInfo S = detect(merge(kOmpi4, {{"RANK", "1"}, {"WORLD_SIZE", "8"}}));
  CHECK(S.world_size == 4);
  CHECK(any_has(S.warnings, {"OMPI_COMM_WORLD_SIZE=4", "WORLD_SIZE=8"}));
  // Agreeing sources fill what the winner lacks, and say so.
  LaunchInfo F = detect({{"PMIX_RANK", "1"}, {"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"}});
  INFO(dump(F));
  CHECK(F.mpi == "pmix");
  CHECK(F.world_size == 4);
  CHECK(F.local_rank == 1);
  CHECK(F.local_size == 4);
  CHECK(F.warnings.empty());
  CHECK(any_has(F.notes, {"filled in from torchrun's"}));
}

TEST_CASE("malformed values: a warning and the source ignored, never a crash", "[launcher]") {
  struct Case {
    Vars v;
    std::string expect;  // in a warning
  };
  std::vector<Case> cases = {
      {{{"OMPI_COMM_WORLD_RANK", "abc"}, {"OMPI_COMM_WORLD_SIZE", "4"}}, "OMPI_COMM_WORLD_RANK='abc' is not a number"},
      {{{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}}, "OMPI_COMM_WORLD_RANK=4 is not below OMPI_COMM_WORLD_SIZE=4"},
      {{{"RANK", "-1"}, {"WORLD_SIZE", "4"}}, "RANK=-1 is negative"},
      {{{"RANK", ""}, {"WORLD_SIZE", "4"}}, "RANK='' is not a number"},
      {{{"RANK", "1"}, {"WORLD_SIZE", "0"}}, "WORLD_SIZE=0 is not a positive size"},
      {{{"RANK", "1"}, {"WORLD_SIZE", "99999999999999999999"}}, "is not a number"},
      {{{"RANK", " 1"}, {"WORLD_SIZE", "2"}}, "is not a number"},
      {{{"WORLD_SIZE", "4"}}, "WORLD_SIZE is set but RANK is not"},
      {{{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "2"}, {"MPI_LOCALNRANKS", "2"}}, "MPI_LOCALRANKID=2 is not below"},
      {{{"MV2_COMM_WORLD_RANK", "0"}, {"MV2_COMM_WORLD_SIZE", "2"}, {"MV2_COMM_WORLD_LOCAL_SIZE", "3"}}, "exceeds"},
      {{{"PMIX_RANK", "x1"}}, "PMIX_RANK='x1' is not a number"},
  };
  for (const Case& c : cases) {
    LaunchInfo L = detect(c.v);
    INFO(dump(L));
    CHECK(L.launcher == "single");
    CHECK(L.rank == 0);
    CHECK(L.world_size == 1);
    CHECK(any_has(L.warnings, {c.expect}));
  }
  // A malformed source beside a good one: the good one is used.
  LaunchInfo mixed = detect(merge(kOmpi4, {{"RANK", "one"}, {"WORLD_SIZE", "4"}}));
  CHECK(mixed.rank == 1);
  CHECK(any_has(mixed.warnings, {"RANK='one'", "torchrun's variables ignored"}));
  // A malformed tasks-per-node list: the local size is not taken from it.
  LaunchInfo tpn = detect(merge(kSrun8, {{"SLURM_STEP_TASKS_PER_NODE", "2(y4)"}}));
  CHECK(tpn.launcher == "srun");
  CHECK(tpn.local_size == -1);
  CHECK(any_has(tpn.warnings, {"SLURM_STEP_TASKS_PER_NODE='2(y4)'"}));
  // Bad ports.
  for (const char* p : {"0", "70000", "http", ""}) {
    LaunchInfo L = detect({{"MASTER_PORT", p}});
    CHECK(L.master_port == 29500);
    CHECK(any_has(L.warnings, {"MASTER_PORT="}));
  }
}

TEST_CASE("random environments never crash and keep the invariants", "[launcher][property]") {
  const std::vector<std::string> names = {"OMPI_COMM_WORLD_RANK",
                                          "OMPI_COMM_WORLD_SIZE",
                                          "OMPI_COMM_WORLD_LOCAL_RANK",
                                          "OMPI_COMM_WORLD_LOCAL_SIZE",
                                          "PMI_RANK",
                                          "PMI_SIZE",
                                          "MPI_LOCALRANKID",
                                          "MPI_LOCALNRANKS",
                                          "PMIX_RANK",
                                          "PMIX_SIZE",
                                          "MV2_COMM_WORLD_RANK",
                                          "MV2_COMM_WORLD_SIZE",
                                          "SLURM_PROCID",
                                          "SLURM_NTASKS",
                                          "SLURM_STEP_NUM_TASKS",
                                          "SLURM_LOCALID",
                                          "SLURM_NODEID",
                                          "SLURM_STEP_ID",
                                          "SLURM_STEP_TASKS_PER_NODE",
                                          "SLURM_TASKS_PER_NODE",
                                          "SLURM_STEP_NODELIST",
                                          "RANK",
                                          "WORLD_SIZE",
                                          "LOCAL_RANK",
                                          "LOCAL_WORLD_SIZE",
                                          "GROUP_RANK",
                                          "TORCHELASTIC_RUN_ID",
                                          "MASTER_ADDR",
                                          "MASTER_PORT",
                                          "AZ_BATCH_MASTER_NODE",
                                          "AZ_BATCHAI_MPI_MASTER_NODE",
                                          "I_MPI_ROOT",
                                          "HYDRA_LAUNCHER",
                                          "PMI_PORT"};
  const std::vector<std::string> values = {
      "0",   "1",    "2", "3", "7", "8", "-1", "", "x", "2(x4)", "3(x2),2", "n[1-4]", "[", "a:1", "a:", ":5", "99999999999999999999",
      "1(x", "0(x0)"};
  std::mt19937 rng(12345);
  for (int iter = 0; iter < 3000; ++iter) {
    Vars v;
    int k = static_cast<int>(rng() % 10);
    for (int i = 0; i < k; ++i) v[names[rng() % names.size()]] = values[rng() % values.size()];
    int devices = static_cast<int>(rng() % 4) - 1;
    LaunchInfo L = detect(v, devices);
    INFO(dump(L));
    CHECK(L.rank >= 0);
    if (L.world_size >= 0) CHECK(L.rank < L.world_size);
    if (L.local_size >= 0 && L.local_rank_known) CHECK(L.local_rank < L.local_size);
    CHECK((L.device < 0) == (devices <= 0));
    CHECK(L.master_port >= 1);
    CHECK(L.master_port <= 65535);
    CHECK(nlohmann::json::parse(sg::exec::launch_json(L)).is_object());
  }
}

TEST_CASE("device and backend: local rank mod device count, or the CPU and why", "[launcher]") {
  Vars v = {{"OMPI_COMM_WORLD_RANK", "5"},
            {"OMPI_COMM_WORLD_SIZE", "8"},
            {"OMPI_COMM_WORLD_LOCAL_RANK", "5"},
            {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"}};
  LaunchInfo cuda = detect(v, 8);
  CHECK(cuda.backend == "cuda");
  CHECK(cuda.device == 5);
  CHECK(cuda.warnings.empty());
  LaunchInfo shared = detect(v, 4);
  CHECK(shared.device == 1);
  CHECK(any_has(shared.warnings, {"more ranks on this node", "than CUDA devices (4)"}));
  LaunchInfo none = detect(v, 0);
  CHECK(none.backend == "cpu");
  CHECK(none.device == -1);
  CHECK(none.backend_reason.find("no CUDA device") != std::string::npos);
  LaunchInfo no_runtime = detect(v, -1);
  CHECK(no_runtime.backend == "cpu");
  CHECK(no_runtime.backend_reason.find("no CUDA runtime") != std::string::npos);
  CHECK(sg::exec::launch_text(no_runtime).find("backend cpu: no CUDA runtime") != std::string::npos);
  // Local rank unknown: device 0 assumed, with a warning.
  LaunchInfo unknown = detect({{"PMIX_RANK", "3"}, {"PMIX_SIZE", "4"}}, 2);
  CHECK(unknown.device == 0);
  CHECK(any_has(unknown.warnings, {"local rank unknown"}));
}

TEST_CASE("complete_from_mpi fills what the environment left unknown", "[launcher][mpi]") {
  LaunchInfo L = detect({{"PMIX_RANK", "3"}}, 2);
  REQUIRE(sg::exec::wants_mpi(L));
  REQUIRE(L.warnings.size() == 3);  // world size, local rank, MASTER_ADDR
  sg::exec::MpiFacts f;
  f.rank = 3;
  f.world_size = 8;
  f.local_rank = 1;
  f.local_size = 2;
  f.node = 1;
  f.rank0_host = "gpu001";
  sg::exec::complete_from_mpi(L, f, 2);
  INFO(dump(L));
  CHECK(L.world_size == 8);
  CHECK(L.local_rank == 1);
  CHECK(L.local_size == 2);
  CHECK(L.local_rank_known);
  CHECK(L.node == 1);
  CHECK(L.master_addr == "gpu001");
  CHECK(L.device == 1);
  CHECK(L.warnings.empty());
  CHECK(any_has(L.notes, {"MPI_Comm_split_type"}));
  CHECK_FALSE(sg::exec::wants_mpi(L));
  // One node after all: 127.0.0.1 rather than a host name.
  LaunchInfo one = detect({{"PMIX_RANK", "0"}, {"PMIX_SIZE", "2"}});
  sg::exec::complete_from_mpi(one, {0, 2, 0, 2, 0, "h"}, -1);
  CHECK(one.master_addr == "127.0.0.1");
  // An MPI world that is not the launcher's (a singleton MPI_Init): a warning, nothing used.
  LaunchInfo other = detect({{"PMIX_RANK", "3"}, {"PMIX_SIZE", "4"}});
  sg::exec::complete_from_mpi(other, {0, 1, 0, 1, 0, "h"}, -1);
  CHECK(other.local_rank_known == false);
  CHECK(any_has(other.warnings, {"MPI_Init gave rank 0 of 1", "rank 3 of 4"}));
}

TEST_CASE("MPI is asked only where a process manager can be reached", "[launcher][mpi]") {
  auto contact = [](const Vars& v, bool list_names = true) {
    std::vector<std::string> names;
    if (list_names)
      for (const auto& kv : v) names.push_back(kv.first);
    return sg::exec::process_manager_contact(
        [&](const char* n) -> const char* {
          auto it = v.find(n);
          return it == v.end() ? nullptr : it->second.c_str();
        },
        names);
  };
  CHECK(contact(kOmpi4).empty());  // copied by hand: MPI_Init would start a singleton
  CHECK(contact(merge(kOmpi4, {{"PMIX_SERVER_URI41", "x;tcp4://127.0.0.1:1"}})) == "PMIX_SERVER_URI41");
  CHECK(contact(merge(kOmpi4, {{"PMIX_SERVER_URI3", "x"}}), false) == "PMIX_SERVER_URI3");
  CHECK(contact(merge(kOmpi4, {{"OMPI_MCA_orte_hnp_uri", "1.0;tcp://h:1"}})) == "OMPI_MCA_orte_hnp_uri");
  CHECK(contact({{"PMI_RANK", "0"}, {"PMI_FD", "5"}}) == "PMI_FD");
  CHECK(contact(kSrun8) == "SLURM_STEP_ID");
  CHECK(contact({}).empty());
}

TEST_CASE("JSON, text and export forms", "[launcher]") {
  LaunchInfo L = detect(merge(kSrun8, {{"PMI_RANK", "5"}, {"PMI_SIZE", "8"}, {"MASTER_ADDR", "a b'c"}, {"RANK", "4"}}));
  nlohmann::json j = nlohmann::json::parse(sg::exec::launch_json(L));
  std::set<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.insert(it.key());
  CHECK(keys == std::set<std::string>{"launcher", "mpi", "rank", "world_size", "local_rank", "local_size", "node", "device", "backend",
                                      "master_addr", "master_port", "warnings"});
  CHECK(j["launcher"] == "srun");
  CHECK(j["mpi"] == "slurm-pmi2");
  CHECK(j["rank"] == 5);
  CHECK(j["world_size"] == 8);
  CHECK(j["master_addr"] == "a b'c");
  CHECK(j["warnings"].is_array());
  CHECK(j["warnings"].size() == L.warnings.size());
  CHECK(j["warnings"][0].get<std::string>() == L.warnings[0]);
  // Export: one line; an odd address is quoted for the shell.
  std::string e = sg::exec::launch_export(L);
  CHECK(e == "export RANK=5 WORLD_SIZE=8 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 MASTER_ADDR='a b'\\''c' MASTER_PORT=29500\n");
  // Unknown values are left out, never exported empty.
  CHECK(sg::exec::launch_export(detect({{"PMIX_RANK", "2"}})) == "export RANK=2 MASTER_PORT=29500\n");
  std::string t = sg::exec::launch_text(L);
  for (const char* key : {"launcher    srun", "mpi         slurm-pmi2", "rank        5 of 8", "local rank  1 of 2", "node        2",
                          "device      none, backend cpu", "master      a b'c:29500", "warnings    1", "  warning: ", "  note: "})
    CHECK(t.find(key) != std::string::npos);
}

// ---- the stepgraph binary ----

namespace {

using sgtest::Ran;

Ran sh(const std::string& cmd) { return sgtest::run_command(cmd); }

const std::string kBin = STEPGRAPH_BIN;

// `s` as one single-quoted shell word.
std::string squote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("stepgraph env in a clean environment says single", "[launcher][cli]") {
  Ran r = sh("env -i PATH=/usr/bin:/bin '" + kBin + "' env --json 2>/dev/null");
  REQUIRE(r.rc == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["launcher"] == "single");
  CHECK(j["rank"] == 0);
  CHECK(j["world_size"] == 1);
  CHECK(j["backend"] == "cpu");
  CHECK(j["warnings"].empty());
  Ran t = sh("env -i PATH=/usr/bin:/bin '" + kBin + "' env 2>&1");
  CHECK(t.rc == 0);
  // Built with CUDA the runtime is asked (here: no device, with its reason); without, it says so.
  CHECK((t.out.find("built without CUDA device probing") != std::string::npos || t.out.find("cudaGetDeviceCount") != std::string::npos ||
         t.out.find("CUDA device") != std::string::npos));
  Ran e =
      sh("env -i PATH=/usr/bin:/bin sh -c 'eval \"$(\"$0\" env --export)\" && echo $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE "
         "$MASTER_ADDR $MASTER_PORT' '" +
         kBin + "'");
  CHECK(e.rc == 0);
  CHECK(e.out == "0 1 0 1 127.0.0.1 29500\n");
  CHECK(sh("'" + kBin + "' env --json --export >/dev/null 2>&1").rc == 2);
  // The CLI restarts itself once with glibc's huge-page tunable (cli/huge_pages.cpp), where the
  // kernel and the C library allow it; STEPGRAPH_HUGE_PAGES=0 keeps it off.
  std::string thp;
  std::ifstream thp_file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::getline(thp_file, thp);
  if (!thp.empty() && thp.find("[never]") == std::string::npos) {
    CHECK(t.out.find("huge pages: on (glibc.malloc.hugetlb=1") != std::string::npos);
    Ran off = sh("env -i PATH=/usr/bin:/bin STEPGRAPH_HUGE_PAGES=0 '" + kBin + "' env 2>&1");
    CHECK(off.out.find("huge pages: off (STEPGRAPH_HUGE_PAGES=0)") != std::string::npos);
  }
  // Launcher variables copied by hand (several nodes, so much is unknown): no MPI_Init, exit 0.
  Ran copied =
      sh("env -i PATH=/usr/bin:/bin OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=1 "
         "OMPI_COMM_WORLD_LOCAL_SIZE=2 '" +
         kBin + "' env 2>&1");
  INFO(copied.out);
  CHECK(copied.rc == 0);
  CHECK(copied.out.find("rank        1 of 4") != std::string::npos);
  CHECK(copied.out.find("MASTER_ADDR unknown") != std::string::npos);
  // Built with MPI, it did not call MPI_Init because no process manager is there to reach.
  if (STEPGRAPH_HAVE_MPI) CHECK(copied.out.find("MPI not asked: no process manager") != std::string::npos);
}

TEST_CASE("stepgraph env under mpiexec -n 2: ranks 0 and 1 of 2, and --export evaluates", "[launcher][cli][mpi]") {
  if (std::system("command -v mpiexec >/dev/null 2>&1") != 0) {
    WARN("mpiexec is not installed: stepgraph env under mpiexec is not checked");
    return;
  }
  const std::string mpi =
      "env -u SLURM_JOB_ID -u SLURM_PROCID OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
      "OMPI_MCA_rmaps_base_oversubscribe=1 mpiexec -n 2 ";
  fs::path dir = fs::temp_directory_path() / ("sg_env_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // Each rank writes its own file (output of several ranks may interleave).
  std::string body =
      "\"$0\" env --json > '" + dir.string() +
      "'/json.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-x}}; "
      "eval \"$(\"$0\" env --export)\" && echo $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT > '" +
      dir.string() + "'/export.$RANK";
  Ran r = sh(mpi + "sh -c " + squote(body) + " '" + kBin + "' 2>&1");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  std::set<int64_t> ranks;
  for (int i = 0; i < 2; ++i) {
    fs::path p = dir / ("json." + std::to_string(i));
    REQUIRE(fs::exists(p));
    nlohmann::json j = nlohmann::json::parse(slurp(p));
    INFO(j.dump(2));
    CHECK(j["launcher"] == "mpiexec");
    CHECK(j["world_size"] == 2);
    CHECK(j["rank"] == i);
    CHECK(j["local_size"] == 2);
    CHECK(j["master_addr"] == "127.0.0.1");
    ranks.insert(j["rank"].get<int64_t>());
    CHECK(slurp(dir / ("export." + std::to_string(i))) == std::to_string(i) + " 2 " + std::to_string(i) + " 2 127.0.0.1 29500\n");
  }
  CHECK(ranks == std::set<int64_t>{0, 1});
  // With the launcher's local rank hidden, a build with MPI asks MPI (a shared-memory split).
  Ran hidden = sh(mpi + "env -u OMPI_COMM_WORLD_LOCAL_RANK -u OMPI_COMM_WORLD_LOCAL_SIZE '" + kBin + "' env 2>&1");
  INFO(hidden.out);
  CHECK(hidden.rc == 0);
  if (hidden.out.find("MPI_Comm_split_type") != std::string::npos) {
    CHECK(hidden.out.find("local rank  0 of 2") != std::string::npos);
    CHECK(hidden.out.find("local rank  1 of 2") != std::string::npos);
    CHECK(hidden.out.find("warning:") == std::string::npos);
  } else {
    WARN("stepgraph is built without MPI: the shared-memory split is not checked");
  }
  fs::remove_all(dir);
}

// Issue 34: an Open MPI build refused to print anything under MPICH's Hydra (and a non-zero rank
// of such a job exited 2 in silence). env reads variables and needs no MPI: every launcher
// family's set gives its rank, whatever MPI this stepgraph is built with, as a single process.
TEST_CASE("stepgraph env reads each launcher family's variables, whatever MPI it is built with", "[launcher][cli]") {
  struct Family {
    const char* name;
    const char* vars;
    const char* launcher;
    const char* mpi;
    int rank, world, local_rank, local_size;
    const char* master;  // "" when the variables cannot give it
    int port;
  };
  const Family families[] = {
      {"Open MPI", "OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2", "mpiexec",
       "openmpi", 1, 2, 1, 2, "127.0.0.1", 29500},
      // The issue's own sets: rank 3 of 4 under Hydra, rank 1 of 2 under MVAPICH2.
      {"MPICH's Hydra", "PMI_RANK=3 PMI_SIZE=4 MPI_LOCALRANKID=3 MPI_LOCALNRANKS=4", "mpiexec", "mpich-hydra", 3, 4, 3, 4, "127.0.0.1",
       29500},
      {"Intel MPI", "PMI_RANK=2 PMI_SIZE=8 MPI_LOCALRANKID=2 MPI_LOCALNRANKS=4 I_MPI_ROOT=/opt/intel/mpi MASTER_ADDR=n01", "mpiexec",
       "intel-mpi", 2, 8, 2, 4, "n01", 29500},
      {"MVAPICH2", "MV2_COMM_WORLD_RANK=1 MV2_COMM_WORLD_SIZE=2 MV2_COMM_WORLD_LOCAL_RANK=1", "mpiexec", "mvapich2", 1, 2, 1, -1, "",
       29500},
      {"Slurm",
       "SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURM_PROCID=5 SLURM_STEP_NUM_TASKS=8 SLURM_LOCALID=1 SLURM_NODEID=2 "
       "SLURM_STEP_TASKS_PER_NODE='2(x4)' SLURM_STEP_NODELIST='gpu[07-10]'",
       "srun", "", 5, 8, 1, 2, "gpu07", 29500},
      {"torchrun",
       "RANK=6 WORLD_SIZE=16 LOCAL_RANK=2 LOCAL_WORLD_SIZE=8 GROUP_RANK=0 TORCHELASTIC_RUN_ID=x MASTER_ADDR=10.0.0.1 "
       "MASTER_PORT=1234",
       "torchrun", "", 6, 16, 2, 8, "10.0.0.1", 1234},
      {"AzureML",
       "OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=8 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 "
       "AZ_BATCH_MASTER_NODE=10.1.2.3:6105",
       "mpiexec", "openmpi", 3, 8, 1, 2, "10.1.2.3", 6105},
  };
  for (const Family& f : families) {
    INFO(f.name << ": " << f.vars);
    const std::string env = "env -i PATH=/usr/bin:/bin " + std::string(f.vars) + " '" + kBin + "' env";
    Ran j = sh(env + " --json 2>&1");
    INFO(j.out);
    REQUIRE(j.rc == 0);
    nlohmann::json o = nlohmann::json::parse(j.out);
    CHECK(o["launcher"] == f.launcher);
    CHECK(o["mpi"] == f.mpi);
    CHECK(o["rank"] == f.rank);
    CHECK(o["world_size"] == f.world);
    CHECK(o["local_rank"] == f.local_rank);
    CHECK(o["local_size"] == f.local_size);
    CHECK(o["master_addr"] == f.master);
    CHECK(o["master_port"] == f.port);
    // The text form, and --export evaluated by a shell: torch.distributed's variables.
    Ran t = sh(env + " 2>&1");
    CHECK(t.rc == 0);
    CHECK(t.out.find("rank        " + std::to_string(f.rank) + " of " + std::to_string(f.world)) != std::string::npos);
    Ran e = sh("env -i PATH=/usr/bin:/bin " + std::string(f.vars) +
               " sh -c 'eval \"$(\"$0\" env --export 2>/dev/null)\" && echo $RANK $WORLD_SIZE $LOCAL_RANK' '" + kBin + "'");
    CHECK(e.rc == 0);
    CHECK(e.out == std::to_string(f.rank) + " " + std::to_string(f.world) + " " + std::to_string(f.local_rank) + "\n");
  }
}

// Under the real launchers of both MPIs Debian ships (whichever this build links): each rank's
// own line, from the launcher's real variables.
TEST_CASE("stepgraph env under Open MPI's and MPICH's mpiexec alike: each rank's line", "[launcher][cli][mpi]") {
  int tried = 0;
  for (const std::string launcher : {"/usr/bin/mpiexec.openmpi", "/usr/bin/mpiexec.mpich"}) {
    if (access(launcher.c_str(), X_OK) != 0) continue;
    ++tried;
    INFO(launcher);
    fs::path dir = fs::temp_directory_path() / ("sg_env_any_" + std::to_string(::getpid()) + "_" + std::to_string(tried));
    fs::create_directories(dir);
    std::string body = "\"$0\" env --json > '" + dir.string() + "'/json.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-x}} 2>&1";
    Ran r =
        sh("env -u SLURM_JOB_ID -u SLURM_PROCID OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
           "OMPI_MCA_rmaps_base_oversubscribe=1 timeout 60 " +
           launcher + " -n 2 sh -c " + squote(body) + " '" + kBin + "' 2>&1");
    INFO(r.out);
    CHECK(r.rc == 0);
    for (int i = 0; i < 2; ++i) {
      fs::path p = dir / ("json." + std::to_string(i));
      REQUIRE(fs::exists(p));
      std::string text = slurp(p);
      INFO(text);
      nlohmann::json j = nlohmann::json::parse(text);
      CHECK(j["launcher"] == "mpiexec");
      CHECK(j["mpi"] == (launcher.find("mpich") != std::string::npos ? "mpich-hydra" : "openmpi"));
      CHECK(j["rank"] == i);
      CHECK(j["world_size"] == 2);
      CHECK(j["local_rank"] == i);
      CHECK(j["local_size"] == 2);
      CHECK(j["master_addr"] == "127.0.0.1");
    }
    fs::remove_all(dir);
  }
  if (!tried) WARN("neither mpiexec.openmpi nor mpiexec.mpich is installed: not checked");
}
