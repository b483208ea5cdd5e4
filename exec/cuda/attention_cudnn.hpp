// cuDNN's fused flash-attention forward as one tile (exec/cuda/attention_cudnn.cpp): a plan per
// shape, cached; libcudnn loaded at first use. The tile writes its normalised output O_t in the
// input type and its row statistics (the lse) in fp32; the caller merges them into its O|lse
// accumulator. Host code: it only enqueues on the stream it is given.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

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
  bool forward(const Shape& s, const void* q, const void* kv, void* o_t, float* stats, void* stream, std::string& err);

 private:
  struct Plan;
  bool plan_for(const Shape& s, Plan*& out, std::string& err);
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, bool, bool>, std::unique_ptr<Plan>> plans_;
  void* handle_ = nullptr;  // cudnnHandle_t
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
};

}  // namespace sg::cuda
