// Launcher and environment detection (see launcher.hpp). The rules, in the order they are tried:
//
//  1. torchrun, when a variable only torchrun's agent sets is present (TORCHELASTIC_RUN_ID,
//     TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS, GROUP_RANK, ROLE_RANK): torchrun's
//     workers are its children, so it is the innermost launcher; MPI or Slurm variables beside it
//     describe whoever started the agent (`srun torchrun …`, `mpiexec torchrun …`): a note.
//  2. Open MPI: OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK / _LOCAL_SIZE (mpiexec, openmpi).
//  3. MVAPICH2: MV2_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK / _LOCAL_SIZE (mpiexec, mvapich2).
//  4. PMI_RANK / PMI_SIZE (with MPI_LOCALRANKID / MPI_LOCALNRANKS for the local rank) is set by
//     MPICH's and Intel MPI's Hydra and by Slurm's pmi2 plugin alike. Hydra is recognised by the
//     variables only it sets: MPI_LOCALRANKID, MPI_LOCALNRANKS, PMI_PORT, HYDRA_*, HYDI_*. PMI_FD
//     is not a marker (Slurm's pmi2 sets it too), nor I_MPI_HYDRA_* (sites set those in modules,
//     so they are present under srun as well). So: a Hydra marker → mpiexec (intel-mpi when any
//     I_MPI_* is set, else mpich-hydra); no Hydra marker and SLURM_* present → srun, slurm-pmi2;
//     neither → mpiexec (Hydra assumed, with a note).
//  5. PMIX_RANK (PMIX_SIZE when set): under an srun step → srun, pmix; otherwise mpiexec, pmix
//     (prterun and the like). Missing sizes come from agreeing sources, else stay unknown.
//  6. Slurm: SLURM_PROCID, SLURM_STEP_NUM_TASKS (else SLURM_NTASKS, SLURM_NPROCS), SLURM_LOCALID,
//     SLURM_NODEID, the local size from SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE,
//     SLURM_NTASKS_PER_NODE; "2(x3),1" indexed by SLURM_NODEID) → srun. Only an srun step counts
//     (SLURM_STEP_ID, SLURM_STEPID or SLURM_STEP_NUM_TASKS set): the batch script of an sbatch job
//     also has SLURM_PROCID=0, and it is one process, not rank 0 of the job's tasks.
//  7. RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE / GROUP_RANK without torchrun's own
//     markers (set by hand, by `eval "$(stepgraph env --export)"` or another launcher) → torchrun.
//  8. None of them → single: rank 0 of 1.
//
// mpiexec inside an sbatch job inherits SLURM_*: the MPI launcher's own variables win and a note
// says what SLURM_* said. Only an srun step of exactly the MPI world's size that gives this
// process another rank is not explained that way (mpiexec's daemons run one per node, never one
// per rank): a warning. Every other source that describes this same process (PMIX_RANK beside
// OMPI_*, PMI_RANK beside SLURM_PROCID, RANK beside either) must agree: a disagreement is a
// warning naming both, and the winner is the rule above; an agreeing source fills what the winner
// lacks (a local rank, a node). Malformed values (not a number, negative, rank >= size, local
// rank >= local size) are a warning and their whole source is ignored.
//
// MASTER_ADDR: MASTER_ADDR, else AzureML's AZ_BATCH_MASTER_NODE (addr:port), else
// AZ_BATCHAI_MPI_MASTER_NODE; else 127.0.0.1 when every rank is on this node (local size = world
// size); else under srun the first host of SLURM_STEP_NODELIST (srun puts rank 0 on the step's
// first node, except with --distribution=arbitrary); else unknown, with a warning. Never this
// host's HOSTNAME or PMIX_HOSTNAME: every rank must compute the same value, and only rank 0's
// would be right. (`stepgraph env` built with MPI asks rank 0 instead.) MASTER_PORT: MASTER_PORT, else the
// port of AZ_BATCH_MASTER_NODE, else 29500 (torch's default).
#include "exec/launch/launcher.hpp"

#include <algorithm>
#include <optional>

#include "exec/launch/launcher_sources.hpp"

namespace sg::exec {

using launcher_detail::cross_check;
using launcher_detail::Env;
using launcher_detail::parse_int;
using launcher_detail::quote;
using launcher_detail::read_slurm;
using launcher_detail::read_source;
using launcher_detail::shown;
using launcher_detail::Source;
using launcher_detail::starts_with;

namespace {

// Warnings that MPI can resolve start with these; complete_from_mpi removes them.
constexpr const char* kLocalUnknown = "local rank unknown";
constexpr const char* kLocalSizeUnknown = "local size unknown";
constexpr const char* kWorldUnknown = "world size unknown";
constexpr const char* kMasterUnknown = "MASTER_ADDR unknown";
constexpr const char* kSharedDevices = "more ranks on this node";

// The first host of a Slurm host list: "gpu[003-005,9],login1" → "gpu003", "a1,a2" → "a1".
std::string first_host(const std::string& list) {
  std::string out;
  size_t i = 0;
  while (i < list.size() && list[i] != ',') {
    if (list[i] == '[') {
      size_t j = i + 1;
      while (j < list.size() && list[j] != ',' && list[j] != '-' && list[j] != ']') out += list[j++];
      size_t close = list.find(']', i);
      if (close == std::string::npos) return "";
      i = close + 1;
    } else {
      out += list[i++];
    }
  }
  return out;
}

void assign_device(LaunchInfo& L, int device_count) {
  L.warnings.erase(
      std::remove_if(L.warnings.begin(), L.warnings.end(), [](const std::string& w) { return starts_with(w, kSharedDevices); }),
      L.warnings.end());
  if (device_count > 0) {
    int64_t lr = L.local_rank_known ? L.local_rank : 0;
    L.backend = "cuda";
    L.device = lr % device_count;
    L.backend_reason = std::to_string(device_count) + " CUDA device" + (device_count == 1 ? "" : "s") + ": device = local rank " +
                       std::to_string(lr) + (L.local_rank_known ? "" : " (assumed)") + " mod " + std::to_string(device_count);
    if (L.local_size > device_count)
      L.warnings.push_back(std::string(kSharedDevices) + " (local size " + std::to_string(L.local_size) + ") than CUDA devices (" +
                           std::to_string(device_count) + "): ranks share devices");
  } else {
    L.backend = "cpu";
    L.device = -1;
    L.backend_reason = device_count == 0 ? "no CUDA device (the CUDA runtime reports 0 devices)" : "no CUDA runtime (device count unknown)";
  }
}

bool valid_port(const std::string& s, int& port) {
  std::optional<int64_t> p = parse_int(s);
  if (!p || *p < 1 || *p > 65535) return false;
  port = static_cast<int>(*p);
  return true;
}

// MASTER_ADDR / MASTER_PORT (the rules at the top of this file).
void assign_master(LaunchInfo& L, const Env& env, bool srun_step) {
  struct Addr {
    std::string var, value;
  };
  std::vector<Addr> addrs;
  std::optional<std::pair<std::string, int>> az_port;
  if (env.has("MASTER_ADDR") && !env.str("MASTER_ADDR").empty()) addrs.push_back({"MASTER_ADDR", env.str("MASTER_ADDR")});
  else if (env.has("MASTER_ADDR")) L.warnings.push_back("MASTER_ADDR is set but empty: ignored");
  if (env.has("AZ_BATCH_MASTER_NODE")) {
    std::string v = env.str("AZ_BATCH_MASTER_NODE");
    size_t colon = v.rfind(':');
    int port = 0;
    if (colon == std::string::npos || colon == 0 || !valid_port(v.substr(colon + 1), port)) {
      L.warnings.push_back("AZ_BATCH_MASTER_NODE=" + quote(v) + " is not ADDR:PORT: ignored");
    } else {
      addrs.push_back({"AZ_BATCH_MASTER_NODE", v.substr(0, colon)});
      az_port = std::pair{"AZ_BATCH_MASTER_NODE", port};
    }
  }
  if (env.has("AZ_BATCHAI_MPI_MASTER_NODE") && !env.str("AZ_BATCHAI_MPI_MASTER_NODE").empty())
    addrs.push_back({"AZ_BATCHAI_MPI_MASTER_NODE", env.str("AZ_BATCHAI_MPI_MASTER_NODE")});
  if (!addrs.empty()) {
    L.master_addr = addrs[0].value;
    L.notes.push_back("master address from " + addrs[0].var);
    for (size_t i = 1; i < addrs.size(); ++i)
      if (addrs[i].value != addrs[0].value)
        L.warnings.push_back(addrs[0].var + "=" + addrs[0].value + " and " + addrs[i].var + "=" + addrs[i].value + " disagree: using " +
                             addrs[0].var);
  } else if (L.world_size == 1 || (L.world_size > 0 && L.local_size == L.world_size)) {
    L.master_addr = "127.0.0.1";
    L.notes.push_back(L.world_size == 1 ? "master address 127.0.0.1: a single process"
                                        : "master address 127.0.0.1: all " + std::to_string(L.world_size) + " ranks are on this node");
  } else {
    std::string list_var;
    for (const char* v : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"})
      if (env.has(v)) {
        list_var = v;
        break;
      }
    std::string host = srun_step && !list_var.empty() ? first_host(env.str(list_var.c_str())) : "";
    if (!host.empty()) {
      L.master_addr = host;
      L.notes.push_back("master address " + host + ": the first host of " + list_var + ", where srun places rank 0");
    } else {
      L.warnings.push_back(std::string(kMasterUnknown) + ": the ranks span " +
                           (L.world_size < 0 || L.local_size < 0 ? std::string("an unknown number of nodes") : "more than one node") +
                           " and no variable names rank 0's host; export MASTER_ADDR=<rank 0's host> before the launcher "
                           "(Open MPI: mpiexec -x MASTER_ADDR)");
    }
  }
  int port = 0;
  if (env.has("MASTER_PORT")) {
    if (valid_port(env.str("MASTER_PORT"), port)) {
      L.master_port = port;
      L.notes.push_back("master port from MASTER_PORT");
      if (az_port && az_port->second != port)
        L.warnings.push_back("MASTER_PORT=" + std::to_string(port) + " and the port of AZ_BATCH_MASTER_NODE (" +
                             std::to_string(az_port->second) + ") disagree: using MASTER_PORT");
      return;
    }
    L.warnings.push_back("MASTER_PORT=" + quote(env.str("MASTER_PORT")) + " is not a port (1 to 65535): ignored");
  }
  if (az_port) {
    L.master_port = az_port->second;
    L.notes.push_back("master port from AZ_BATCH_MASTER_NODE");
  } else {
    L.master_port = 29500;
    L.notes.push_back("master port 29500: torch's default");
  }
}

}  // namespace

LaunchInfo detect_launch(const std::function<const char*(const char*)>& getenv_fn, int device_count,
                         const std::vector<std::string>& env_names) {
  LaunchInfo L;
  Env env(getenv_fn, env_names);
  auto& W = L.warnings;
  auto& notes = L.notes;

  Source ompi = read_source(env, "Open MPI's", "OMPI_COMM_WORLD_RANK", {"OMPI_COMM_WORLD_SIZE"}, "OMPI_COMM_WORLD_LOCAL_RANK",
                            "OMPI_COMM_WORLD_LOCAL_SIZE", nullptr, W);
  Source mv2 = read_source(env, "MVAPICH2's", "MV2_COMM_WORLD_RANK", {"MV2_COMM_WORLD_SIZE"}, "MV2_COMM_WORLD_LOCAL_RANK",
                           "MV2_COMM_WORLD_LOCAL_SIZE", nullptr, W);
  Source pmi = read_source(env, "PMI", "PMI_RANK", {"PMI_SIZE"}, "MPI_LOCALRANKID", "MPI_LOCALNRANKS", nullptr, W);
  Source pmix = read_source(env, "PMIx", "PMIX_RANK", {"PMIX_SIZE"}, nullptr, nullptr, nullptr, W);
  Source slurm = read_slurm(env, W);
  Source torch = read_source(env, "torchrun's", "RANK", {"WORLD_SIZE"}, "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", W);

  const bool torch_marked =
      env.any({"TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "GROUP_RANK", "ROLE_RANK"});
  const bool hydra_marker =
      env.any({"MPI_LOCALRANKID", "MPI_LOCALNRANKS", "PMI_PORT"}) ||
      env.has_prefix("HYDRA_", {"HYDRA_HOST_FILE", "HYDRA_LAUNCHER", "HYDRA_BOOTSTRAP", "HYDRA_LAUNCHER_EXEC", "HYDRA_DEBUG"}) ||
      env.has_prefix("HYDI_", {"HYDI_CONTROL_FD"});
  const bool intel = env.has_prefix("I_MPI_", {"I_MPI_ROOT", "I_MPI_HYDRA_BOOTSTRAP", "I_MPI_HYDRA_HOST_FILE", "I_MPI_HYDRA_IFACE",
                                               "I_MPI_PMI_LIBRARY", "I_MPI_FABRICS", "I_MPI_PIN_DOMAIN", "I_MPI_DEBUG", "I_MPI_MPIRUN"});
  const bool slurm_any = slurm.present || env.any({"SLURM_JOB_ID", "SLURM_JOBID", "SLURM_STEP_ID", "SLURM_STEPID"});
  const bool slurm_step = slurm.present && env.any({"SLURM_STEP_ID", "SLURM_STEPID", "SLURM_STEP_NUM_TASKS"});

  // The winner, and which other sources describe this same process (they must agree).
  Source* win = nullptr;
  bool mpiexec_family = false;  // SLURM_* beside it are the trap (mpiexec inside an sbatch job)
  if (torch.ok && torch_marked) {
    win = &torch;
    L.launcher = "torchrun";
    notes.push_back("started by torchrun (TORCHELASTIC_* / GROUP_RANK set)");
  } else if (ompi.ok) {
    win = &ompi;
    L.launcher = "mpiexec";
    L.mpi = "openmpi";
    mpiexec_family = true;
  } else if (mv2.ok) {
    win = &mv2;
    L.launcher = "mpiexec";
    L.mpi = "mvapich2";
    mpiexec_family = true;
  } else if (pmi.ok && (hydra_marker || !slurm_any)) {
    win = &pmi;
    L.launcher = "mpiexec";
    L.mpi = intel ? "intel-mpi" : "mpich-hydra";
    mpiexec_family = true;
    pmi.label = intel ? "Intel MPI's Hydra" : "MPICH's Hydra";
    if (!hydra_marker)
      notes.push_back("PMI_RANK without a Hydra marker (MPI_LOCALRANKID, PMI_PORT, HYDRA_*) and without SLURM_*: Hydra assumed");
    if (intel) notes.push_back("Intel MPI: I_MPI_* variables are set");
  } else if (pmi.ok) {
    win = &pmi;
    L.launcher = "srun";
    L.mpi = "slurm-pmi2";
    pmi.label = "Slurm's PMI-2";
    notes.push_back("PMI_RANK with SLURM_* and no Hydra marker (MPI_LOCALRANKID, PMI_PORT, HYDRA_*): Slurm's pmi2 under srun" +
                    std::string(intel ? " (Intel MPI: I_MPI_* set)" : ""));
  } else if (pmix.ok && slurm_step) {
    // Slurm's own variables carry the local rank and node; PMIx's are checked against them.
    win = slurm.ok ? &slurm : &pmix;
    L.launcher = "srun";
    L.mpi = "pmix";
    notes.push_back("PMIX_RANK in an srun step: srun --mpi=pmix");
  } else if (pmix.ok) {
    win = &pmix;
    L.launcher = "mpiexec";
    L.mpi = "pmix";
    mpiexec_family = true;
  } else if (slurm_step && slurm.ok) {
    win = &slurm;
    L.launcher = "srun";
    notes.push_back("an srun step without PMI variables: the MPI flavour is not known from the environment");
  } else if (torch.ok) {
    win = &torch;
    L.launcher = "torchrun";
    notes.push_back("RANK / WORLD_SIZE set without torchrun's own markers (TORCHELASTIC_*, GROUP_RANK): read as torchrun's");
  }

  if (win) {
    L.notes.insert(L.notes.begin(), "rank and sizes from " + win->label + " variables: " + shown(*win));
    for (Source* other : {&ompi, &mv2, &pmi, &pmix, &slurm, &torch}) {
      if (other == win || !other->present) continue;
      if (!other->ok) continue;  // already a warning
      if (win == &torch && torch_marked) {
        notes.push_back(shown(*other) + " (" + other->label +
                        ") describe the launcher that started torchrun's agent, not this worker: ignored");
        continue;
      }
      if (other == &slurm && mpiexec_family) {
        bool same_world = slurm_step && slurm.size.known() && win->size.known() && slurm.size.value == win->size.value;
        if (same_world && slurm.rank.value != win->rank.value)
          W.push_back(slurm.rank.show() + " (an srun step of " + std::to_string(slurm.size.value) + " tasks) and " + win->rank.show() +
                      " disagree: using " + win->rank.var + " (the MPI launcher's own variable)");
        else
          notes.push_back("mpiexec inside a Slurm job: " + win->label + " variables win over " + shown(slurm) +
                          " (they describe the job's batch script or the launcher's daemons, not this rank)");
        continue;
      }
      cross_check(*win, *other, W, notes);
    }
    L.rank = win->rank.value;
    L.world_size = win->size.known() ? win->size.value : -1;
    L.local_rank_known = win->local_rank.known();
    L.local_rank = L.local_rank_known ? win->local_rank.value : 0;
    L.local_size = win->local_size.known() ? win->local_size.value : -1;
    L.node = win->node.known() ? win->node.value : -1;
    if (L.world_size == 1) {  // one process: its local rank, local size and node are certain
      L.local_rank_known = true;
      L.local_rank = 0;
      L.local_size = 1;
      L.node = 0;
    }
    if (L.world_size < 0) W.push_back(std::string(kWorldUnknown) + ": " + win->rank.show() + " comes with no size variable");
    if (L.node < 0 && L.world_size > 0 && L.local_size == L.world_size) {
      L.node = 0;
      notes.push_back("node 0: all ranks are on this node");
    } else if (L.node < 0) {
      notes.push_back("node unknown: no variable gives it");
    }
    if (!L.local_rank_known)
      W.push_back(std::string(kLocalUnknown) + ": no variable gives it (under MPI a shared-memory split does); 0 assumed");
    else if (L.local_size < 0) W.push_back(std::string(kLocalSizeUnknown) + ": no variable gives it");
  } else {
    L.launcher = "single";
    notes.push_back("no launcher variables: a single process");
    if (slurm_any)
      notes.push_back("inside a Slurm job but not in an srun step (SLURM_STEP_ID unset): the job's batch script or an salloc shell" +
                      (slurm.present ? " (" + shown(slurm) + " ignored)" : std::string()));
    for (const Source* s : {&ompi, &mv2, &pmi, &pmix, &torch})
      if (s->ok) notes.push_back(shown(*s) + " ignored");
  }

  assign_device(L, device_count);
  assign_master(L, env, L.launcher == "srun");
  return L;
}

std::string process_manager_contact(const std::function<const char*(const char*)>& getenv_fn, const std::vector<std::string>& env_names) {
  Env env(getenv_fn, env_names);
  if (!env_names.empty()) {
    for (const std::string& n : env_names)
      if (starts_with(n, "PMIX_SERVER_URI")) return n;
  } else {
    for (const char* n :
         {"PMIX_SERVER_URI41", "PMIX_SERVER_URI4", "PMIX_SERVER_URI3", "PMIX_SERVER_URI21", "PMIX_SERVER_URI2", "PMIX_SERVER_URI"})
      if (env.has(n)) return n;
  }
  for (const char* n : {"OMPI_MCA_orte_hnp_uri", "PMI_FD", "PMI_PORT", "MPIRUN_HOST", "SLURM_STEP_ID", "SLURM_STEPID"})
    if (env.has(n)) return n;
  return "";
}

bool wants_mpi(const LaunchInfo& L) {
  if (L.launcher != "mpiexec" && L.launcher != "srun") return false;
  // An unknown node alone is not worth an MPI_Init; it is filled in when MPI is asked anyway.
  return !L.local_rank_known || L.local_size < 0 || L.world_size < 0 || L.master_addr.empty();
}

void complete_from_mpi(LaunchInfo& L, const MpiFacts& m, int device_count) {
  if (m.rank != L.rank || (L.world_size >= 0 && m.world_size != L.world_size)) {
    L.warnings.push_back("MPI_Init gave rank " + std::to_string(m.rank) + " of " + std::to_string(m.world_size) +
                         " but the environment says rank " + std::to_string(L.rank) + " of " +
                         (L.world_size < 0 ? std::string("?") : std::to_string(L.world_size)) +
                         ": the MPI library does not match the launcher (e.g. srun needs --mpi=pmix or pmi2 for this MPI); "
                         "MPI's answers not used");
    return;
  }
  auto drop = [&](const char* prefix) {
    L.warnings.erase(std::remove_if(L.warnings.begin(), L.warnings.end(), [&](const std::string& w) { return starts_with(w, prefix); }),
                     L.warnings.end());
  };
  if (L.world_size < 0) {
    L.world_size = m.world_size;
    drop(kWorldUnknown);
    L.notes.push_back("world size " + std::to_string(m.world_size) + " from MPI_Comm_size");
  }
  if (!L.local_rank_known || L.local_size < 0) {
    L.local_rank = m.local_rank;
    L.local_size = m.local_size;
    L.local_rank_known = true;
    drop(kLocalUnknown);
    drop(kLocalSizeUnknown);
    L.notes.push_back("local rank and size from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
  } else if (L.local_rank != m.local_rank || L.local_size != m.local_size) {
    L.warnings.push_back("local rank " + std::to_string(L.local_rank) + " of " + std::to_string(L.local_size) +
                         " from the environment and " + std::to_string(m.local_rank) + " of " + std::to_string(m.local_size) +
                         " from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) disagree: using the environment's");
  }
  if (L.node < 0) {
    L.node = m.node;
    L.notes.erase(std::remove_if(L.notes.begin(), L.notes.end(), [](const std::string& n) { return starts_with(n, "node unknown"); }),
                  L.notes.end());
    L.notes.push_back("node " + std::to_string(m.node) + " from MPI: this node's place among the nodes, by lowest rank");
  }
  if (L.master_addr.empty()) {
    if (L.local_size == L.world_size) {
      L.master_addr = "127.0.0.1";
      L.notes.push_back("master address 127.0.0.1: MPI says all ranks are on this node");
    } else if (!m.rank0_host.empty()) {
      L.master_addr = m.rank0_host;
      L.notes.push_back("master address " + m.rank0_host + ": rank 0's host name, broadcast over MPI");
    }
    if (!L.master_addr.empty()) drop(kMasterUnknown);
  }
  assign_device(L, device_count);
}

}  // namespace sg::exec
