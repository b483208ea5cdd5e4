// The shared vocabulary of stepgraph: the kinds the language names and the step graph stores
// (reduction operators, masks, collectives, postconditions, initialisations, compute kernels,
// step kinds, element types) and their names. The parser, the step graph and every backend use
// these; none of them needs the AST for it.
#pragma once
#include <cstdint>
#include <string>

namespace sg {

enum class ReduceOp : uint8_t { Sum, Max, Min, Prod };
enum class Mask : uint8_t { None, Causal, Full };
enum class CollKind : uint8_t { Allreduce, Bcast, Reduce, Allgather, ReduceScatter, Alltoall, Barrier };
enum class ExpectKind : uint8_t {
  Nothing,
  Allreduce,
  Reduce,
  ReduceScatter,
  Allgather,
  Broadcast,
  Gather,
  Scatter,
  Alltoall,
  Attention,
  AttentionBackward
};
enum class InitKind : uint8_t { Contrib, Owned, OnRank };
enum class ComputeKind : uint8_t { Attn, AttnBwd, Generic };
enum class StepKind : uint8_t { Send, Recv, Copy, Reduce, Compute, Collective, Wait };
enum class DType : uint8_t { F16, BF16, F32, F64, I8, I32, I64, U8 };

// The words the language (and every printout) uses for them.
const char* op_name(ReduceOp op);
const char* mask_name(Mask m);
const char* coll_name(CollKind k);
const char* expect_name(ExpectKind k);
const char* step_kind_name(StepKind k);
const char* dtype_name(DType t);
uint32_t dtype_size(DType t);
bool parse_dtype(const std::string& s, DType& out);

}  // namespace sg
