// Attention tiles on the GPU, warp per row (see attention.cuh). Scores are computed 32 partners
// at a time, one per lane; the row's accumulators are spread over the lanes by dimension
// (lane l owns dims l, l + 32, …), and each partner's weight is broadcast with a shuffle.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "exec/cuda/attention.cuh"
#include "exec/cuda/attention_common.cuh"

namespace sg::cuda {

namespace {

__device__ inline float load_in(const float* p, size_t i) { return p[i]; }
__device__ inline float load_in(const __nv_bfloat16* p, size_t i) { return __bfloat162float(p[i]); }

// acc[k] += w · row[d] over the dimensions this lane owns (d = lane + 32k < dim): a partner
// row's weighted contribution to the row this warp accumulates.
template <class T>
__device__ inline void add_scaled_row(float (&acc)[kPer], float w, const T* row, int lane, uint32_t dim) {
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const uint32_t d = lane + 32u * k;
    if (d < dim) acc[k] += w * load_in(row, d);
  }
}

// Whether key u is visible from query t.
__device__ inline bool visible(bool causal, int64_t t, int64_t u, int64_t offset) { return !causal || u <= t + offset; }

template <class T>
__global__ void attn_fwd(const T* __restrict__ q, const T* __restrict__ kv, float* __restrict__ o_lse, uint32_t planes, uint32_t rows_q,
                         uint32_t rows_k, uint32_t dim, bool causal, float scale, int64_t offset) {
  extern __shared__ float smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const size_t row = size_t{blockIdx.x} * kWarps + warp;  // over planes × rows_q
  if (row >= size_t{planes} * rows_q) return;             // whole warps leave together
  const size_t plane = row / rows_q;
  const int64_t t = static_cast<int64_t>(row % rows_q);
  float* qs = smem + warp * kAttnMaxDim;
  for (uint32_t d = lane; d < dim; d += 32) qs[d] = load_in(q, row * dim + d);
  __syncwarp();
  const T* K = kv + plane * rows_k * dim;
  const T* V = kv + (size_t{planes} + plane) * rows_k * dim;
  float m = -INFINITY, l = 0, acc[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) acc[k] = 0;
  for (uint32_t base = 0; base < rows_k; base += 32) {
    const uint32_t u = base + lane;
    float s = -INFINITY;
    if (u < rows_k && visible(causal, t, u, offset)) {
      float dot = 0;
      for (uint32_t d = 0; d < dim; ++d) dot += qs[d] * load_in(K, size_t{u} * dim + d);
      s = dot * scale;
    }
    const float cm = warp_max(s);
    if (cm == -INFINITY) continue;  // no visible key in this chunk
    const float mn = fmaxf(m, cm);
    const float corr = m == -INFINITY ? 0.f : expf(m - mn);
    const float p = s == -INFINITY ? 0.f : expf(s - mn);
    l = l * corr + warp_sum(p);
#pragma unroll
    for (int k = 0; k < kPer; ++k) acc[k] *= corr;
    const uint32_t n = min(32u, rows_k - base);
    for (uint32_t j = 0; j < n; ++j) {
      const float pj = __shfl_sync(kFull, p, static_cast<int>(j));
      if (pj != 0.f) add_scaled_row(acc, pj, V + size_t{base + j} * dim, lane, dim);
    }
    m = mn;
  }
  if (l == 0.f) return;  // the row saw no key: its accumulator stays as it was
  merge_tile_row(o_lse + row * (dim + 1), lane, dim, m + logf(l), [&](int k, uint32_t) { return acc[k] / l; });
}

__global__ void attn_merge(float* __restrict__ acc, const float* __restrict__ part, size_t rows, uint32_t dim) {
  const size_t r = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (r >= rows) return;
  float* x = acc + r * (dim + 1);
  const float* y = part + r * (dim + 1);
  const float la = x[dim], lb = y[dim];
  if (lb == -INFINITY) return;  // x ⊕ empty = x
  if (la == -INFINITY) {        // empty ⊕ y = y
    for (uint32_t d = 0; d <= dim; ++d) x[d] = y[d];
    return;
  }
  const MergeW w = merge_weights(la, lb);
  for (uint32_t d = 0; d < dim; ++d) x[d] = merge_elem(x[d], y[d], la, lb, w);
  x[dim] = w.merged;
}

// acc ⊕= one tile's (O_t, lse_t) rows as cuDNN gives them: O_t normalised, in bf16 (or fp16),
// lse_t in fp32 beside it. The merge rule of attn_merge.
template <class T>
__global__ void attn_merge_lowp(float* __restrict__ acc, const T* __restrict__ o_t, const float* __restrict__ lse_t, size_t rows,
                                uint32_t dim) {
  const size_t r = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (r >= rows) return;
  float* x = acc + r * (dim + 1);
  const T* y = o_t + r * dim;
  const float la = x[dim], lb = lse_t[r];
  if (lb == -INFINITY) return;
  if (la == -INFINITY) {
    for (uint32_t d = 0; d < dim; ++d) x[d] = static_cast<float>(y[d]);
    x[dim] = lb;
    return;
  }
  const MergeW w = merge_weights(la, lb);
  for (uint32_t d = 0; d < dim; ++d) x[d] = merge_elem(x[d], static_cast<float>(y[d]), la, lb, w);
  x[dim] = w.merged;
}

// dQ: a warp per query row, over the key rows 32 at a time.
template <class T>
__global__ void attn_bwd_dq(const float* __restrict__ bundle, const T* __restrict__ kv, float* __restrict__ dq, uint32_t planes,
                            uint32_t rows_q, uint32_t rows_k, uint32_t dim, bool causal, float scale, int64_t offset) {
  extern __shared__ float smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const size_t row = size_t{blockIdx.x} * kWarps + warp;
  if (row >= size_t{planes} * rows_q) return;
  const size_t plane = row / rows_q;
  const int64_t t = static_cast<int64_t>(row % rows_q);
  const float* br = bundle + row * (2 * size_t{dim} + 2);
  float* qs = smem + warp * 2 * kAttnMaxDim;
  float* dos = qs + kAttnMaxDim;
  for (uint32_t d = lane; d < dim; d += 32) qs[d] = br[d], dos[d] = br[dim + d];
  __syncwarp();
  const float lse = br[2 * dim], D = br[2 * dim + 1];
  const T* K = kv + plane * rows_k * dim;
  const T* V = kv + (size_t{planes} + plane) * rows_k * dim;
  float acc[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) acc[k] = 0;
  for (uint32_t base = 0; base < rows_k; base += 32) {
    const uint32_t u = base + lane;
    float ds = 0;
    if (u < rows_k && visible(causal, t, u, offset) && lse != -INFINITY) {
      float s = 0, dp = 0;
      for (uint32_t d = 0; d < dim; ++d) {
        s += qs[d] * load_in(K, size_t{u} * dim + d);
        dp += dos[d] * load_in(V, size_t{u} * dim + d);
      }
      const float p = expf(s * scale - lse);
      ds = p * (dp - D);
    }
    const uint32_t n = min(32u, rows_k - base);
    for (uint32_t j = 0; j < n; ++j) {
      const float dsj = __shfl_sync(kFull, ds, static_cast<int>(j));
      if (dsj != 0.f) add_scaled_row(acc, dsj, K + size_t{base + j} * dim, lane, dim);
    }
  }
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const uint32_t d = lane + 32u * k;
    if (d < dim) dq[row * dim + d] += scale * acc[k];
  }
}

// dK, dV: a warp per key row, over the query rows 32 at a time.
template <class T>
__global__ void attn_bwd_dkv(const float* __restrict__ bundle, const T* __restrict__ kv, float* __restrict__ dkv, uint32_t planes,
                             uint32_t rows_q, uint32_t rows_k, uint32_t dim, bool causal, float scale, int64_t offset) {
  extern __shared__ float smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const size_t krow = size_t{blockIdx.x} * kWarps + warp;
  if (krow >= size_t{planes} * rows_k) return;
  const size_t plane = krow / rows_k;
  const int64_t u = static_cast<int64_t>(krow % rows_k);
  float* ks = smem + warp * 2 * kAttnMaxDim;
  float* vs = ks + kAttnMaxDim;
  const T* K = kv + plane * rows_k * dim;
  const T* V = kv + (size_t{planes} + plane) * rows_k * dim;
  for (uint32_t d = lane; d < dim; d += 32) ks[d] = load_in(K, size_t(u) * dim + d), vs[d] = load_in(V, size_t(u) * dim + d);
  __syncwarp();
  const size_t w = 2 * size_t{dim} + 2;
  const float* B = bundle + plane * rows_q * w;
  float dk[kPer], dv[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) dk[k] = 0, dv[k] = 0;
  for (uint32_t base = 0; base < rows_q; base += 32) {
    const uint32_t t = base + lane;
    float p = 0, ds = 0;
    if (t < rows_q && visible(causal, t, u, offset)) {
      const float* br = B + size_t{t} * w;
      const float lse = br[2 * dim], D = br[2 * dim + 1];
      if (lse != -INFINITY) {
        float s = 0, dp = 0;
        for (uint32_t d = 0; d < dim; ++d) {
          s += br[d] * ks[d];
          dp += br[dim + d] * vs[d];
        }
        p = expf(s * scale - lse);
        ds = p * (dp - D);
      }
    }
    const uint32_t n = min(32u, rows_q - base);
    for (uint32_t i = 0; i < n; ++i) {
      const float pi = __shfl_sync(kFull, p, static_cast<int>(i));
      const float dsi = __shfl_sync(kFull, ds, static_cast<int>(i));
      if (pi == 0.f && dsi == 0.f) continue;
      const float* br = B + size_t{base + i} * w;
      add_scaled_row(dk, dsi, br, lane, dim);       // q
      add_scaled_row(dv, pi, br + dim, lane, dim);  // dO
    }
  }
  float* dK = dkv + krow * dim;
  float* dV = dkv + (size_t{planes} * rows_k + krow) * dim;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const uint32_t d = lane + 32u * k;
    if (d < dim) dK[d] += scale * dk[k], dV[d] += dv[k];
  }
}

unsigned blocks(size_t rows) { return static_cast<unsigned>((rows + kWarps - 1) / kWarps); }

__global__ void widen_bundle(const unsigned char* __restrict__ in, float* __restrict__ out, size_t rows, uint32_t dim) {
  const size_t w = 2 * size_t{dim} + 2, in_row = 4 * size_t{dim} + 8;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < rows * w; i += size_t{gridDim.x} * blockDim.x) {
    const size_t r = i / w, c = i % w;
    const unsigned char* row = in + r * in_row;
    if (c < 2 * dim) out[i] = __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(row)[c]);
    else out[i] = reinterpret_cast<const float*>(row + 4 * size_t{dim})[c - 2 * dim];
  }
}

// The backward's bf16 bundle unpacked for cuDNN's backward graph, one warp per row: q and dO as
// [rows][dim] bf16, the lse as [rows] fp32, and an O' with dO·O' = D (O' = D·dO/|dO|², zero
// where dO is): cuDNN's graph computes D = rowsum(dO ∘ O) itself and takes no D, and the bundle
// keeps D, not O. O' in bf16 puts D within 2⁻⁸·|D| of the bundle's D (each product's rounding
// is relative, and their magnitudes sum to |D|), what computing D from a bf16 O gives.
__global__ void unpack_bundle_lowp(const unsigned char* __restrict__ in, __nv_bfloat16* __restrict__ q, __nv_bfloat16* __restrict__ dout,
                                   __nv_bfloat16* __restrict__ o, float* __restrict__ lse, size_t rows, uint32_t dim) {
  const size_t row = (blockIdx.x * size_t{blockDim.x} + threadIdx.x) / 32;
  const unsigned lane = threadIdx.x % 32;
  if (row >= rows) return;  // (the whole warp: one row each)
  const unsigned char* r = in + row * (4 * size_t{dim} + 8);
  const auto* h = reinterpret_cast<const __nv_bfloat16*>(r);
  float ss = 0;
  for (uint32_t i = lane; i < dim; i += 32) {
    const float g = __bfloat162float(h[dim + i]);
    ss += g * g;
    q[row * dim + i] = h[i];
    dout[row * dim + i] = h[dim + i];
  }
  for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(kFull, ss, off);
  const float* f = reinterpret_cast<const float*>(r + 4 * size_t{dim});
  const float c = ss > 0.f ? f[1] / ss : 0.f;
  for (uint32_t i = lane; i < dim; i += 32) o[row * dim + i] = __float2bfloat16(c * __bfloat162float(h[dim + i]));
  if (lane == 0) lse[row] = f[0];
}

// acc[i] += part[i], the part in bf16 or fp16: a cuDNN tile's gradients into the fp32 accumulators.
template <class T>
__global__ void add_lowp(float* __restrict__ acc, const T* __restrict__ part, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    acc[i] += static_cast<float>(part[i]);
}

}  // namespace

int launch_unpack_bundle_lowp(const void* bundle, void* q, void* dout, void* o, float* lse, size_t rows, uint32_t dim, void* stream) {
  if (rows == 0) return 0;
  if (dim == 0 || dim > kAttnMaxDim) return static_cast<int>(cudaErrorInvalidValue);
  unpack_bundle_lowp<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const unsigned char*>(bundle), static_cast<__nv_bfloat16*>(q), static_cast<__nv_bfloat16*>(dout),
      static_cast<__nv_bfloat16*>(o), lse, rows, dim);
  return static_cast<int>(cudaGetLastError());
}

int launch_add_lowp(float* acc, const void* part, bool fp16, size_t n, void* stream) {
  if (n == 0) return 0;
  const auto grid = static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 65535));
  auto st = static_cast<cudaStream_t>(stream);
  if (fp16) add_lowp<__half><<<grid, 256, 0, st>>>(acc, static_cast<const __half*>(part), n);
  else add_lowp<__nv_bfloat16><<<grid, 256, 0, st>>>(acc, static_cast<const __nv_bfloat16*>(part), n);
  return static_cast<int>(cudaGetLastError());
}

int launch_attn_fwd(const void* q, const void* kv, float* o_lse, bool bf16, uint32_t planes, uint32_t rows_q, uint32_t rows_k, uint32_t dim,
                    bool causal, float scale, int64_t offset, void* stream) {
  if (dim == 0 || dim > kAttnMaxDim) return static_cast<int>(cudaErrorInvalidValue);
  const size_t rows = size_t{planes} * rows_q;
  if (rows == 0) return 0;
  const size_t sm = kWarps * kAttnMaxDim * sizeof(float);
  auto st = static_cast<cudaStream_t>(stream);
  if (bf16)
    attn_fwd<__nv_bfloat16><<<blocks(rows), 32 * kWarps, sm, st>>>(static_cast<const __nv_bfloat16*>(q),
                                                                   static_cast<const __nv_bfloat16*>(kv), o_lse, planes, rows_q, rows_k,
                                                                   dim, causal, scale, offset);
  else
    attn_fwd<float><<<blocks(rows), 32 * kWarps, sm, st>>>(static_cast<const float*>(q), static_cast<const float*>(kv), o_lse, planes,
                                                           rows_q, rows_k, dim, causal, scale, offset);
  return static_cast<int>(cudaGetLastError());
}

int launch_attn_merge(float* acc, const float* part, size_t rows, uint32_t dim, void* stream) {
  if (rows == 0) return 0;
  attn_merge<<<static_cast<unsigned>((rows + 255) / 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(acc, part, rows, dim);
  return static_cast<int>(cudaGetLastError());
}

int launch_attn_merge_lowp(float* acc, const void* o_t, bool fp16, const float* lse_t, size_t rows, uint32_t dim, void* stream) {
  if (rows == 0) return 0;
  const auto grid = static_cast<unsigned>((rows + 255) / 256);
  auto st = static_cast<cudaStream_t>(stream);
  if (fp16) attn_merge_lowp<__half><<<grid, 256, 0, st>>>(acc, static_cast<const __half*>(o_t), lse_t, rows, dim);
  else attn_merge_lowp<__nv_bfloat16><<<grid, 256, 0, st>>>(acc, static_cast<const __nv_bfloat16*>(o_t), lse_t, rows, dim);
  return static_cast<int>(cudaGetLastError());
}

int launch_attn_bwd(const float* bundle, const void* kv, bool kv_bf16, float* dq, float* dkv, uint32_t planes, uint32_t rows_q,
                    uint32_t rows_k, uint32_t dim, bool causal, float scale, int64_t offset, void* stream) {
  if (dim == 0 || dim > kAttnMaxDim) return static_cast<int>(cudaErrorInvalidValue);
  const size_t sm = kWarps * 2 * kAttnMaxDim * sizeof(float);
  auto st = static_cast<cudaStream_t>(stream);
  const size_t qrows = size_t{planes} * rows_q, krows = size_t{planes} * rows_k;
  if (kv_bf16) {
    const auto* k = static_cast<const __nv_bfloat16*>(kv);
    if (qrows)
      attn_bwd_dq<__nv_bfloat16><<<blocks(qrows), 32 * kWarps, sm, st>>>(bundle, k, dq, planes, rows_q, rows_k, dim, causal, scale, offset);
    if (krows)
      attn_bwd_dkv<__nv_bfloat16>
          <<<blocks(krows), 32 * kWarps, sm, st>>>(bundle, k, dkv, planes, rows_q, rows_k, dim, causal, scale, offset);
  } else {
    const auto* k = static_cast<const float*>(kv);
    if (qrows)
      attn_bwd_dq<float><<<blocks(qrows), 32 * kWarps, sm, st>>>(bundle, k, dq, planes, rows_q, rows_k, dim, causal, scale, offset);
    if (krows)
      attn_bwd_dkv<float><<<blocks(krows), 32 * kWarps, sm, st>>>(bundle, k, dkv, planes, rows_q, rows_k, dim, causal, scale, offset);
  }
  return static_cast<int>(cudaGetLastError());
}

int launch_widen_bundle(const void* in, float* out, size_t rows, uint32_t dim, void* stream) {
  const size_t n = rows * (2 * size_t{dim} + 2);
  if (n == 0) return 0;
  const unsigned b = static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 4096));
  widen_bundle<<<b, 256, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const unsigned char*>(in), out, rows, dim);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace sg::cuda
