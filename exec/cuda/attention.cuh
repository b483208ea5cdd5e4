// Launchers of the attention tile kernels (attention.cu): the GPU counterparts of
// exec/attention/attention_kernels.hpp's attn_fwd_tile, attn_merge and attn_bwd_tile, with the same layouts
// and semantics (fp32 accumulation, online softmax; a query row that sees no key leaves its
// accumulator untouched; causal: key u visible to query t iff u <= t + offset). `planes` is
// batch × heads. Plain types, so that the header compiles under g++ and nvcc; every launcher
// enqueues on `stream` (a cudaStream_t) and returns the cudaError_t as an int. dim <= 256.
//
// A first, correctness-first version: one warp per query row (forward, dQ) or key row (dK, dV),
// the scores of 32 partners at a time in the lanes, the row's output spread over the lanes by
// dimension. Tensor-core GEMMs (cuBLAS) are the next step (issue 10).
#pragma once
#include <cstddef>
#include <cstdint>

namespace sg::cuda {

constexpr uint32_t kAttnMaxDim = 256;

// o_lse (planes × rows_q × (dim + 1) floats) ⊕= softmax(scale·q·kᵀ)·v. q, kv are fp32, or bf16
// (uint16 storage) when bf16.
int launch_attn_fwd(const void* q, const void* kv, float* o_lse, bool bf16, uint32_t planes, uint32_t rows_q, uint32_t rows_k, uint32_t dim,
                    bool causal, float scale, int64_t offset, void* stream);

// acc ⊕= part over `rows` O|lse rows of dim + 1 floats.
int launch_attn_merge(float* acc, const float* part, size_t rows, uint32_t dim, void* stream);
// acc ⊕= a tile's rows as cuDNN writes them: o_t [rows][dim] in bf16 (fp16), lse_t [rows] fp32.
int launch_attn_merge_lowp(float* acc, const void* o_t, bool fp16, const float* lse_t, size_t rows, uint32_t dim, void* stream);

// FlashAttention-2 backward of one tile, adding into dq (planes × rows_q × dim) and dkv (dK then
// dV, planes × rows_k × dim each). bundle is fp32: per query row q, dO, lse, D (2·dim + 2).
int launch_attn_bwd(const float* bundle, const void* kv, bool kv_bf16, float* dq, float* dkv, uint32_t planes, uint32_t rows_q,
                    uint32_t rows_k, uint32_t dim, bool causal, float scale, int64_t offset, void* stream);

// For cuDNN's backward: the bf16 bundle's rows unpacked into q, dO and O' ([rows][dim] bf16, O'
// chosen so that dO·O' = the bundle's D) and the lse ([rows] fp32).
int launch_unpack_bundle_lowp(const void* bundle, void* q, void* dout, void* o, float* lse, size_t rows, uint32_t dim, void* stream);
// acc[i] += part[i] over n elements, part in bf16 (fp16 when fp16).
int launch_add_lowp(float* acc, const void* part, bool fp16, size_t n, void* stream);

// The backward's bf16 bundle (per row: q, dO as bf16, then lse, D as fp32: 4·dim + 8 bytes)
// widened to the fp32 bundle (2·dim + 2 floats per row).
int launch_widen_bundle(const void* in, float* out, size_t rows, uint32_t dim, void* stream);

}  // namespace sg::cuda
