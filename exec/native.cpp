#include "exec/native.hpp"

#include <cstdlib>
#include <map>

#include "exec/mpi_types.hpp"

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

bool set_native_algo(const std::string& spec, std::string& err) {
  const auto& t = tuned_algorithms();
  std::vector<std::pair<std::string, int>> set;
  auto eq = spec.find('=');
  if (eq != std::string::npos) {
    std::string coll = spec.substr(0, eq), name = spec.substr(eq + 1);
    auto c = t.find(coll);
    if (c == t.end()) return err = "--native-algo: unknown collective '" + coll + "'", false;
    auto a = c->second.find(name);
    if (a != c->second.end()) set.emplace_back(coll, a->second);
    else if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) set.emplace_back(coll, std::atoi(name.c_str()));
    else return err = "--native-algo: '" + name + "' is not one of Open MPI's " + coll + " algorithms", false;
  } else {
    for (const auto& [coll, names] : t) {
      auto a = names.find(spec);
      if (a != names.end()) set.emplace_back(coll, a->second);
    }
    if (set.empty())
      return err = "--native-algo: no Open MPI collective has an algorithm named '" + spec + "' (use COLL=NAME or COLL=NUMBER)", false;
  }
  setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1", 1);
  for (const auto& [coll, num] : set) setenv(("OMPI_MCA_coll_tuned_" + coll + "_algorithm").c_str(), std::to_string(num).c_str(), 1);
  return true;
}

bool Native::available() const {
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

void Native::run(MPI_Comm c) {
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

Native native_for(ExpectKind kind, DType t, ReduceOp op, int root, uint64_t bytes, int size) {
  Native n;
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
