#include "exec/mpi/mpi_collective.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "exec/mpi/mpi_types.hpp"
#include "exec/mpi/mpi_world.hpp"

namespace sg::exec {

namespace {

// Open MPI 4.1's coll_tuned algorithm numbers (ompi/mca/coll/tuned/coll_tuned_*_decision.c).
const std::map<std::string, std::map<std::string, int>>& tuned_algorithms() {
  static const std::map<std::string, std::map<std::string, int>> t = {
      {"allreduce",
       {{"basic_linear", 1}, {"nonoverlapping", 2}, {"recursive_doubling", 3}, {"ring", 4}, {"segmented_ring", 5}, {"rabenseifner", 6}}},
      {"allgather", {{"linear", 1}, {"bruck", 2}, {"recursive_doubling", 3}, {"ring", 4}, {"neighbor", 5}, {"two_proc", 6}}},
      {"bcast",
       {{"basic_linear", 1},
        {"chain", 2},
        {"pipeline", 3},
        {"split_binary_tree", 4},
        {"binary_tree", 5},
        {"binomial", 6},
        {"knomial", 7},
        {"scatter_allgather", 8},
        {"scatter_allgather_ring", 9}}},
      {"reduce",
       {{"linear", 1}, {"chain", 2}, {"pipeline", 3}, {"binary", 4}, {"binomial", 5}, {"in_order_binary", 6}, {"rabenseifner", 7}}},
      {"reduce_scatter_block", {{"basic_linear", 1}, {"recursive_doubling", 2}, {"recursive_halving", 3}, {"butterfly", 4}}},
      {"alltoall", {{"linear", 1}, {"pairwise", 2}, {"modified_bruck", 3}, {"linear_sync", 4}, {"two_proc", 5}}},
  };
  return t;
}

}  // namespace

bool set_native_algo(const std::string& spec, Diagnostics& diags) {
  // Open MPI reads these variables at MPI_Init; another MPI ignores them, and its collective
  // would be timed under a name it did not run.
  if (linked_mpi() != "openmpi")
    return diags.fail(
        "--native-algo picks an algorithm of Open MPI's tuned collectives (OMPI_MCA_coll_tuned_*), and this stepgraph is built with " +
        mpi_library() + ", which has no such control here" +
        (linked_mpi() == "mpich" ? " (MPICH chooses by its own variables, e.g. MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=ring, set in "
                                   "the environment before mpiexec)"
                                 : std::string()));
  const auto& t = tuned_algorithms();
  std::vector<std::pair<std::string, int>> set;
  auto eq = spec.find('=');
  if (eq != std::string::npos) {
    std::string coll = spec.substr(0, eq), name = spec.substr(eq + 1);
    auto c = t.find(coll);
    if (c == t.end()) return diags.fail("--native-algo: unknown collective '" + coll + "'");
    auto a = c->second.find(name);
    if (a != c->second.end()) set.emplace_back(coll, a->second);
    else if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) set.emplace_back(coll, std::atoi(name.c_str()));
    else return diags.fail("--native-algo: '" + name + "' is not one of Open MPI's " + coll + " algorithms");
  } else {
    for (const auto& [coll, names] : t) {
      auto a = names.find(spec);
      if (a != names.end()) set.emplace_back(coll, a->second);
    }
    if (set.empty())
      return diags.fail("--native-algo: no Open MPI collective has an algorithm named '" + spec + "' (use COLL=NAME or COLL=NUMBER)");
  }
  setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1", 1);
  for (const auto& [coll, num] : set) setenv(("OMPI_MCA_coll_tuned_" + coll + "_algorithm").c_str(), std::to_string(num).c_str(), 1);
  return true;
}

bool MpiCollective::available() const {
  switch (kind) {
    case ExpectKind::Allreduce:
    case ExpectKind::Reduce:
    case ExpectKind::ReduceScatter:
    case ExpectKind::Allgather:
    case ExpectKind::Broadcast:
    case ExpectKind::Alltoall: return true;
    default: return false;
  }
}

void MpiCollective::run(MPI_Comm c) {
  int me = 0;
  MPI_Comm_rank(c, &me);
  switch (kind) {
    case ExpectKind::Allreduce: MPI_Allreduce(MPI_IN_PLACE, a.data(), count, t, op, c); break;
    case ExpectKind::Reduce:
      if (me == root) MPI_Reduce(MPI_IN_PLACE, a.data(), count, t, op, root, c);
      else MPI_Reduce(a.data(), nullptr, count, t, op, root, c);
      break;
    case ExpectKind::ReduceScatter: MPI_Reduce_scatter_block(a.data(), b.data(), per, t, op, c); break;
    case ExpectKind::Allgather: MPI_Allgather(MPI_IN_PLACE, 0, t, a.data(), per, t, c); break;
    case ExpectKind::Broadcast: MPI_Bcast(a.data(), count, t, root, c); break;
    case ExpectKind::Alltoall: MPI_Alltoall(a.data(), per, t, b.data(), per, t, c); break;
    default: break;
  }
}

MpiCollectiveGroup::~MpiCollectiveGroup() {
  int done = 0;
  MPI_Finalized(&done);
  if (comm != MPI_COMM_NULL && !done) MPI_Comm_free(&comm);
}

void mpi_collective_group(const StepGraph& g, MPI_Comm world, MpiCollectiveGroup& ng) {
  int me = 0;
  MPI_Comm_rank(world, &me);
  const Expectation* first = nullptr;
  int problem = 0, mine = 0;  // problem: 1 kinds or sizes differ, 2 a rank in two groups, 3 none
  for (const Expectation& e : g.expects) {
    if (e.bufs.empty() || e.kind == ExpectKind::Nothing) continue;
    const GroupInfo& gr = g.groups[e.group];
    if (!first) first = &e;
    else if (e.kind != first->kind || gr.count != g.groups[first->group].count) problem = std::max(problem, 1);
    if (gr.index_of(static_cast<uint32_t>(me)) >= 0) {
      ++mine;
      ng.x = &e;
    }
  }
  if (!first) problem = 3;
  if (mine > 1) problem = std::max(problem, 2);
  int worst = 0;
  MPI_Allreduce(&problem, &worst, 1, MPI_INT, MPI_MAX, world);
  if (worst == 1) ng.why = "its postconditions differ in kind or in group size: no one MPI call does them all";
  if (worst == 2) ng.why = "a rank is in the groups of two postconditions: no one MPI call per group does that";
  if (worst == 3) ng.why = "it has no postcondition to run as MPI's collective";
  if (worst) {
    ng.x = nullptr;
    return;
  }
  // No rank is in two groups, so a group's first member names it.
  const GroupInfo* gr = ng.x ? &g.groups[ng.x->group] : nullptr;
  int color = gr ? static_cast<int>(gr->start) : MPI_UNDEFINED;
  MPI_Comm_split(world, color, me, &ng.comm);
  ng.size = static_cast<int>(g.groups[first->group].count);
  if (gr) ng.index = static_cast<int>(gr->index_of(static_cast<uint32_t>(me)));
  if (gr) ng.root = static_cast<int>(std::max<int64_t>(0, gr->index_of(ng.x->root)));
  if (ng.comm != MPI_COMM_NULL) MPI_Comm_set_errhandler(ng.comm, MPI_ERRORS_RETURN);
}

MpiCollective mpi_collective_for(ExpectKind kind, DType t, ReduceOp op, int root, uint64_t bytes, int size) {
  MpiCollective n;
  n.kind = kind;
  n.t = exec::mpi_type(t);
  n.op = exec::mpi_op(op, t);
  n.root = root;
  n.count = static_cast<int>(bytes / dtype_size(t));
  n.per = n.count / size;
  n.a.assign(bytes, 0);
  n.b.assign(bytes, 0);
  return n;
}

}  // namespace sg::exec
