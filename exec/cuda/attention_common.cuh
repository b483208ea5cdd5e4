// Device helpers both attention tiles share (attention.cu's warp kernels, attention_gemm.cu's
// cuBLAS tile): warp reductions and the online-softmax merge of a tile's row into an O|lse row,
// so that the two tiles merge exactly alike (and as the CPU's merge_row does).
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "exec/cuda/attention.cuh"

namespace sg::cuda {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kWarps = 4;               // warps per block
constexpr int kPer = kAttnMaxDim / 32;  // dims per lane at most

__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFull, v, o));
  return v;
}
__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

// The merge weights of two non-empty rows, as the CPU's merge_row computes them (by the larger
// and the smaller lse, so the result does not depend on which side is which, even with fused
// multiply-adds): merged = hi + log1p(exp(lo − hi)).
struct MergeW {
  float merged, wh, wl;
};
__device__ inline MergeW merge_weights(float la, float lb) {
  const float hi = fmaxf(la, lb), lo = fminf(la, lb);
  const float merged = hi + log1pf(expf(lo - hi));
  return {merged, expf(hi - merged), expf(lo - merged)};
}
// One element of the merge: x (lse la) with y (lse lb), both non-empty.
__device__ inline float merge_elem(float x, float y, float la, float lb, const MergeW& w) {
  if (la == lb) return (x + y) * w.wh;
  return la > lb ? x * w.wh + y * w.wl : y * w.wh + x * w.wl;
}

// out (an O|lse row of dim + 1 floats) ⊕= a tile's row with lse lse_t, whose element
// d = lane + 32k is val(k, d) (k a constant after unrolling, so a register array stays one):
// taken as is when out is empty (lse −∞, whatever its elements hold), else merged. A warp per row.
template <class F>
__device__ inline void merge_tile_row(float* out, int lane, uint32_t dim, float lse_t, F val) {
  const float lse = out[dim];
  if (lse == -INFINITY) {
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const uint32_t d = lane + 32u * k;
      if (d < dim) out[d] = val(k, d);
    }
    __syncwarp();
    if (lane == 0) out[dim] = lse_t;
    return;
  }
  const MergeW w = merge_weights(lse, lse_t);
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const uint32_t d = lane + 32u * k;
    if (d < dim) out[d] = merge_elem(out[d], val(k, d), lse, lse_t, w);
  }
  __syncwarp();
  if (lane == 0) out[dim] = w.merged;
}

}  // namespace sg::cuda
