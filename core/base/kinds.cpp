#include "core/base/kinds.hpp"

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

const char* step_kind_name(StepKind k) {
  switch (k) {
    case StepKind::Send: return "send";
    case StepKind::Recv: return "recv";
    case StepKind::Copy: return "copy";
    case StepKind::Reduce: return "reduce";
    case StepKind::Compute: return "compute";
    case StepKind::Collective: return "collective";
    case StepKind::Wait: return "wait";
  }
  return "?";
}

namespace {
struct DTypeInfo {
  DType t;
  const char* name;
  uint32_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F16, "f16", 2}, {DType::BF16, "bf16", 2}, {DType::F32, "f32", 4}, {DType::F64, "f64", 8},
    {DType::I8, "i8", 1},   {DType::I32, "i32", 4},   {DType::I64, "i64", 8}, {DType::U8, "u8", 1},
};
}  // namespace

const char* dtype_name(DType t) {
  for (const auto& d : kDTypes)
    if (d.t == t) return d.name;
  return "?";
}
uint32_t dtype_size(DType t) {
  for (const auto& d : kDTypes)
    if (d.t == t) return d.size;
  return 1;
}
bool parse_dtype(const std::string& s, DType& out) {
  for (const auto& d : kDTypes)
    if (s == d.name) {
      out = d.t;
      return true;
    }
  return false;
}

}  // namespace sg
