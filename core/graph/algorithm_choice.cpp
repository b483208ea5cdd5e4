// The library's algorithms per collective kind (algorithms_for, find_algorithm, parse_coll_kind)
// and default_pick, which hands a collective to Open MPI's choice (openmpi_tuning.cpp) or NCCL's
// (nccl_choice.cpp). The --algo parser is algo_spec.cpp.
#include "core/graph/algorithm_choice.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace sg {

const std::vector<AlgoName>& algorithms_for(CollKind k) {
  static const std::vector<AlgoName> allreduce = {
      {"ring", "ring_allreduce", nullptr},
      {"recursive_doubling", "recursive_doubling_allreduce", nullptr},
      {"rabenseifner", "rabenseifner_allreduce", nullptr},
      {"reduce_bcast", "reduce_bcast_allreduce", nullptr},
      {"binomial", "binomial_allreduce", nullptr},
      {"nccl_ring", "nccl_ring_allreduce", nullptr},
      {"nccl_tree", "nccl_tree_allreduce", nullptr},
      {"nccl_nvls", "nccl_nvls_allreduce", nullptr},
  };
  static const std::vector<AlgoName> allgather = {
      {"ring", "ring_allgather", nullptr},
      {"recursive_doubling", "recursive_doubling_allgather", "bruck_allgather"},
      {"bruck", "bruck_allgather", nullptr},
      {"nccl_ring", "nccl_ring_allgather", nullptr},
  };
  static const std::vector<AlgoName> reduce_scatter = {
      {"ring", "ring_reduce_scatter", nullptr},
      {"recursive_halving", "recursive_halving_reduce_scatter", nullptr},
      {"nccl_ring", "nccl_ring_reduce_scatter", nullptr},
  };
  static const std::vector<AlgoName> alltoall = {
      {"pairwise", "pairwise_alltoall", nullptr},
      {"bruck", "bruck_alltoall", nullptr},
      {"linear", "linear_alltoall", nullptr},
  };
  static const std::vector<AlgoName> bcast = {
      {"binomial", "binomial_bcast", nullptr},
      {"pipeline", "pipeline_bcast", nullptr},
      {"scatter_allgather", "scatter_allgather_bcast", nullptr},
      {"nccl_ring", "nccl_ring_bcast", nullptr},
  };
  static const std::vector<AlgoName> reduce = {{"binomial", "binomial_reduce", nullptr}};
  static const std::vector<AlgoName> barrier = {{"dissemination", "dissemination_barrier", nullptr}};
  switch (k) {
    case CollKind::Allreduce: return allreduce;
    case CollKind::Allgather: return allgather;
    case CollKind::ReduceScatter: return reduce_scatter;
    case CollKind::Alltoall: return alltoall;
    case CollKind::Bcast: return bcast;
    case CollKind::Reduce: return reduce;
    case CollKind::Barrier: return barrier;
  }
  return barrier;
}

const AlgoName* find_algorithm(CollKind k, const std::string& schedule) {
  for (const AlgoName& a : algorithms_for(k))
    if (schedule == a.schedule) return &a;
  return nullptr;
}

bool parse_coll_kind(const std::string& s, CollKind& out) {
  for (size_t i = 0; i < kCollKindCount; ++i) {
    CollKind k = static_cast<CollKind>(i);
    if (s == coll_name(k)) {
      out = k;
      return true;
    }
  }
  return false;
}

AlgoPick default_pick(const AlgoChoice& c, CollKind k, uint64_t bytes, uint32_t n) {
  if (c.defaults == AlgoDefault::Nccl) {
    NcclHardware hw = c.nccl_hw;
    hw.gpus_per_node = c.gpus_per_node;
    return nccl_default(k, bytes, n, hw, c.nccl_enables);
  }
  return openmpi_default(k, bytes, n);
}

}  // namespace sg
