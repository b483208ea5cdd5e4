// The MPI type helpers (exec/mpi/mpi_types.hpp): MPI's datatype and operator for each of the
// schedule's types (with a 2-byte type and float-computing operators of our own for f16 and bf16),
// MPI's error strings, and whether this MPI takes device pointers.
#include "exec/mpi/mpi_types.hpp"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support
#endif

#include <cstddef>
#include <vector>

#include "exec/executor/kernels.hpp"

namespace sg::exec {

bool dtype_supported(DType) { return true; }

namespace {

std::vector<MPI_Datatype>& types_made() {
  static std::vector<MPI_Datatype> v;
  return v;
}
std::vector<MPI_Op>& ops_made() {
  static std::vector<MPI_Op> v;
  return v;
}

// MPI_Finalize deletes MPI_COMM_SELF's attributes first, while MPI still works (MPI 4.0,
// 11.2.4): their delete callback is the one place every exit path (a run, a refused setup, an
// error) goes through, so the types and operators are freed there.
int free_made(MPI_Comm, int, void*, void*) {
  for (MPI_Datatype& t : types_made()) MPI_Type_free(&t);
  for (MPI_Op& o : ops_made()) MPI_Op_free(&o);
  types_made().clear();
  ops_made().clear();
  return MPI_SUCCESS;
}

void free_at_finalize() {
  static bool armed = false;
  if (armed) return;
  armed = true;
  int key = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &free_made, &key, nullptr);
  MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
  MPI_Comm_free_keyval(&key);  // freed for real once the attribute is deleted
}

}  // namespace

MPI_Datatype made_type(MPI_Datatype t) {
  free_at_finalize();
  types_made().push_back(t);
  return t;
}

MPI_Op made_op(MPI_Op o) {
  free_at_finalize();
  ops_made().push_back(o);
  return o;
}

namespace {

MPI_Datatype half_type() {
  static MPI_Datatype t = [] {
    MPI_Datatype x;
    MPI_Type_contiguous(2, MPI_BYTE, &x);
    MPI_Type_commit(&x);
    return made_type(x);
  }();
  return t;
}

template <DType T, ReduceOp Op>
void half_op(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into(T, Op, inout, in, static_cast<size_t>(*len));
}

template <DType T>
MPI_Op half_mpi_op(ReduceOp op) {
  static MPI_Op ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  auto k = static_cast<size_t>(op);
  if (ops[k] == MPI_OP_NULL) {
    MPI_User_function* f = op == ReduceOp::Sum   ? &half_op<T, ReduceOp::Sum>
                           : op == ReduceOp::Max ? &half_op<T, ReduceOp::Max>
                           : op == ReduceOp::Min ? &half_op<T, ReduceOp::Min>
                                                 : &half_op<T, ReduceOp::Prod>;
    MPI_Op_create(f, 1, &ops[k]);  // every one of them commutes
    made_op(ops[k]);
  }
  return ops[k];
}

}  // namespace

bool mpi_cuda_aware(std::string& why) {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  if (MPIX_Query_cuda_support()) return true;
  why = "this Open MPI was built with CUDA support, but its run time reports none (MPIX_Query_cuda_support() = 0)";
  return false;
#elif defined(MPIX_CUDA_AWARE_SUPPORT)
  why = "this Open MPI was built without CUDA support (MPIX_CUDA_AWARE_SUPPORT = 0)";
  return false;
#else
  why = "this MPI does not say whether it takes device pointers (no MPIX_CUDA_AWARE_SUPPORT)";
  return false;
#endif
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    case DType::I32: return MPI_INT32_T;
    case DType::I64: return MPI_INT64_T;
    case DType::I8: return MPI_INT8_T;
    case DType::U8: return MPI_UINT8_T;
    case DType::F16:
    case DType::BF16: return half_type();
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op, DType t) {
  if (t == DType::F16) return half_mpi_op<DType::F16>(op);
  if (t == DType::BF16) return half_mpi_op<DType::BF16>(op);
  switch (op) {
    case ReduceOp::Sum: return MPI_SUM;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Min: return MPI_MIN;
    case ReduceOp::Prod: return MPI_PROD;
  }
  return MPI_SUM;
}

std::string mpi_error_string(int rc) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, s, &len);
  return std::string(s, static_cast<size_t>(len));
}

}  // namespace sg::exec
