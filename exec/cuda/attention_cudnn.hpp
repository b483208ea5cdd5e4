// cuDNN's fused flash attention as one tile (exec/cuda/attention_cudnn.cpp), forward and
// backward: a plan per shape and direction, cached; libcudnn loaded at first use. The forward
// writes its normalised output O_t in the input type and its row statistics (the lse) in fp32,
// which the caller merges into its O|lse accumulator; the backward writes the tile's dQ, dK, dV,
// which the caller adds into its fp32 accumulators. Host code: it only enqueues on the stream
// it is given.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/dsl/diagnostics.hpp"

namespace sg::cuda {

class CudnnAttention {
 public:
  struct Shape {
    uint32_t planes = 0, rows_q = 0, rows_k = 0, dim = 0;  // planes = batch × heads of one item
    bool fp16 = false;                                     // else bf16
    bool causal = false;                                   // the diagonal tile: key u visible to query t iff u <= t
    float scale = 0;
  };
  CudnnAttention();
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  // Why cuDNN cannot be used at all ("" when its library loaded).
  static const std::string& unavailable();
  // q [planes][rows_q][dim] and kv (K then V, each [planes][rows_k][dim]) in the input type;
  // writes o_t [planes][rows_q][dim] (input type) and stats [planes][rows_q] (fp32), on `stream`.
  bool forward(const Shape& s, const void* q, const void* kv, void* o_t, float* stats, void* stream, Diagnostics& diags);
  // The tile's gradients from the forward's statistics: q, o, dout [planes][rows_q][dim] and kv as
  // above in the input type, stats [planes][rows_q] fp32 (the lse); writes dq [planes][rows_q][dim]
  // and dk, dv [planes][rows_k][dim] in the input type (not accumulated), on `stream`.
  bool backward(const Shape& s, const void* q, const void* kv, const void* o, const void* dout, const float* stats, void* dq, void* dk,
                void* dv, void* stream, Diagnostics& diags);

 private:
  struct Plan;
  bool plan_for(const Shape& s, bool bwd, Plan*& out, Diagnostics& diags);
  bool run(Plan& p, std::vector<int64_t> uids, std::vector<void*> ptrs, void* stream, Diagnostics& diags);
  bool grow(void*& p, size_t& have, size_t need, const char* what, Diagnostics& diags);
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, bool, bool, bool>, std::unique_ptr<Plan>> plans_;
  void* handle_ = nullptr;  // cudnnHandle_t
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  void* dq_accum_ = nullptr;  // the backward's fp32 dQ accumulator, when its plan has one
  size_t dq_accum_bytes_ = 0;
};

}  // namespace sg::cuda
