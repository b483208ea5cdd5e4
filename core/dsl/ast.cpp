#include "core/dsl/ast.hpp"

namespace sg {

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::Prod: return "prod";
  }
  return "sum";
}

const char* mask_name(Mask m) {
  switch (m) {
    case Mask::None: return "none";
    case Mask::Causal: return "causal";
    case Mask::Full: return "full";
  }
  return "none";
}

const char* coll_name(CollKind k) {
  switch (k) {
    case CollKind::Allreduce: return "allreduce";
    case CollKind::Bcast: return "bcast";
    case CollKind::Reduce: return "reduce";
    case CollKind::Allgather: return "allgather";
    case CollKind::ReduceScatter: return "reduce_scatter";
    case CollKind::Alltoall: return "alltoall";
    case CollKind::Barrier: return "barrier";
  }
  return "barrier";
}

const char* expect_name(ExpectKind k) {
  switch (k) {
    case ExpectKind::Nothing: return "nothing";
    case ExpectKind::Allreduce: return "allreduce";
    case ExpectKind::Reduce: return "reduce";
    case ExpectKind::ReduceScatter: return "reduce_scatter";
    case ExpectKind::Allgather: return "allgather";
    case ExpectKind::Broadcast: return "broadcast";
    case ExpectKind::Gather: return "gather";
    case ExpectKind::Scatter: return "scatter";
    case ExpectKind::Alltoall: return "alltoall";
    case ExpectKind::Attention: return "attention";
    case ExpectKind::AttentionBackward: return "attention_backward";
  }
  return "nothing";
}

}  // namespace sg
