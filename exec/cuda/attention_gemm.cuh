// The attention forward tile through cuBLAS: S = scale·Q·Kᵀ and O = P·V as strided batched GEMMs
// (bf16 inputs on tensor cores, fp32 accumulation; fp32 inputs in plain fp32), the masked
// softmax and the online-softmax merge into O|lse in two small kernels. Same layouts and meaning
// as launch_attn_fwd (attention.cuh); for bf16 inputs P is rounded to bf16 for the second GEMM,
// as FlashAttention does. Query rows go in slabs so the scores fit a bounded workspace.
//
// Selected with STEPGRAPH_ATTN=gemm (CudaOps), forward and backward, until it has been measured
// and checked on a GPU; test_cuda compares it with the CPU tiles and bench_gpu times it next to
// the warp kernel.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/dsl/diagnostics.hpp"

namespace sg::cuda {

// Query rows per slab for these shapes, and the workspace bytes a launch with them needs.
uint32_t attn_gemm_slab(uint32_t planes, uint32_t rows_q, uint32_t rows_k, uint32_t dim, bool bf16);
size_t attn_gemm_workspace(uint32_t planes, uint32_t slab, uint32_t rows_k, uint32_t dim, bool bf16);

// A cuBLAS handle for the launches (cuBLAS is loaded at first use: dlopen), and its release.
bool attn_gemm_handle(void** handle, Diagnostics& diags);
void attn_gemm_handle_free(void* handle);

// o_lse ⊕= softmax(scale·q·kᵀ)·v (attention.cuh's launch_attn_fwd). cublas: a cublasHandle_t
// (its stream is set to `stream` here). Returns 0, a cudaError_t, or 10000 + a cublasStatus_t.
int launch_attn_fwd_gemm(void* cublas, void* workspace, uint32_t slab, const void* q, const void* kv, float* o_lse, bool bf16,
                         uint32_t planes, uint32_t rows_q, uint32_t rows_k, uint32_t dim, bool causal, float scale, int64_t offset,
                         void* stream);

// The backward tile through cuBLAS, per slab of query rows: S = scale·Q·Kᵀ and dP = dO·Vᵀ as
// GEMMs, a kernel for P = exp(S − lse) and dS = P ⊙ (dP − D) (masked), then dQ += scale·dS·K,
// dK += scale·dSᵀ·Q and dV += Pᵀ·dO as GEMMs accumulating in place (β = 1). Same meaning as
// launch_attn_bwd, but `bundle` is the tile's own bundle, not a widened one: per query row q and
// dO in the input type (bf16 or fp32), then lse and D as fp32 (exec/attention/attention_exec.hpp), which
// the GEMMs read with a row stride. For bf16 inputs P and dS are rounded to bf16 for the GEMMs
// that take them, as FlashAttention does.
uint32_t attn_gemm_bwd_slab(uint32_t planes, uint32_t rows_q, uint32_t rows_k, bool bf16);
size_t attn_gemm_bwd_workspace(uint32_t planes, uint32_t slab, uint32_t rows_k, bool bf16);
int launch_attn_bwd_gemm(void* cublas, void* workspace, uint32_t slab, const void* bundle, const void* kv, float* dq, float* dkv, bool bf16,
                         uint32_t planes, uint32_t rows_q, uint32_t rows_k, uint32_t dim, bool causal, float scale, int64_t offset,
                         void* stream);

}  // namespace sg::cuda
