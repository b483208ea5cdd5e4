// MPI's names for the schedule's types and operators, and MPI's words for its errors: what the
// executor (exec/executor_*.cpp), the MPI stand-in for NCCL (exec/mpi/mpi_stream_comm.cpp) and the
// exec command's comparison with MPI's own collective hand to MPI. f16 and bf16, which MPI lacks,
// get a type and operators of our own.
#pragma once
#include <mpi.h>

#include <string>

#include "core/dsl/ast.hpp"
#include "core/graph/step_graph.hpp"

namespace sg::exec {

bool dtype_supported(DType t);
// MPI's datatype for t; f16 and bf16, which MPI lacks, are a 2-byte contiguous type of our own
// (created at first use, after MPI_Init).
MPI_Datatype mpi_type(DType t);
// MPI's operator for op on t; on f16 and bf16 a user-defined operator that computes in float.
MPI_Op mpi_op(ReduceOp op, DType t);
// Records a datatype or operator this process created, to be freed inside MPI_Finalize (before
// MPI checks for leaked handles); returns it.
MPI_Datatype made_type(MPI_Datatype t);
MPI_Op made_op(MPI_Op o);  // (two names: in MPICH both handles are int)
// MPI's words for an error code.
std::string mpi_error_string(int rc);

// Whether this MPI can take device pointers (Open MPI's MPIX_CUDA_AWARE_SUPPORT at build time and
// MPIX_Query_cuda_support() at run time); false with the reason otherwise.
bool mpi_cuda_aware(std::string& why);

}  // namespace sg::exec
