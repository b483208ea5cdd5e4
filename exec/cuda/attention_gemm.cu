// The cuBLAS attention forward tile (attention_gemm.cuh).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "exec/cuda/attention_common.cuh"
#include "exec/cuda/attention_gemm.cuh"

namespace sg::cuda {

namespace {

constexpr size_t kBudget = size_t{256} << 20;  // workspace bytes a slab aims at

__device__ inline void store_p(float* p, size_t i, float v) { p[i] = v; }
__device__ inline void store_p(__nv_bfloat16* p, size_t i, float v) { p[i] = __float2bfloat16(v); }

// One warp per query row of the slab: the row's scores s (rows_k, contiguous), masked, become
// p = exp(s − m) in P; m and l = Σp go to ml.
template <class TP>
__global__ void softmax_rows(const float* s, TP* p, float* __restrict__ ml, uint32_t planes, uint32_t slab, uint32_t ns, uint32_t row0,
                             uint32_t rows_k, bool causal, int64_t offset) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const size_t row = size_t{blockIdx.x} * kWarps + warp;  // over planes × ns
  if (row >= size_t{planes} * ns) return;
  const size_t plane = row / ns, r = row % ns;
  const int64_t t = static_cast<int64_t>(row0 + r);
  const size_t base = (plane * slab + r) * rows_k;
  const int64_t all = int64_t{rows_k} - 1;
  const int64_t last = causal && t + offset < all ? t + offset : all;  // visible keys: u <= last
  float m = -INFINITY;
  for (int64_t u = lane; u <= last; u += 32) m = fmaxf(m, s[base + u]);
  m = warp_max(m);
  float l = 0;
  for (uint32_t u = lane; u < rows_k; u += 32) {
    const float e = (static_cast<int64_t>(u) <= last && m != -INFINITY) ? expf(s[base + u] - m) : 0.f;
    l += e;
    store_p(p, base + u, e);
  }
  l = warp_sum(l);
  if (lane == 0) {
    ml[2 * row] = m;
    ml[2 * row + 1] = l;
  }
}

// One warp per query row: the slab's unnormalised output o (dim per row) over l, with lse
// m + log l, merged into o_lse.
__global__ void merge_slab(float* __restrict__ o_lse, const float* __restrict__ o, const float* __restrict__ ml, uint32_t planes,
                           uint32_t slab, uint32_t ns, uint32_t row0, uint32_t rows_q, uint32_t dim) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const size_t row = size_t{blockIdx.x} * kWarps + warp;
  if (row >= size_t{planes} * ns) return;
  const size_t plane = row / ns, r = row % ns;
  const float m = ml[2 * row], l = ml[2 * row + 1];
  if (l == 0.f) return;  // the row saw no key: its accumulator stays as it was
  const float* src = o + (plane * slab + r) * dim;
  merge_tile_row(o_lse + (plane * rows_q + row0 + r) * (dim + 1), lane, dim, m + logf(l), [&](int, uint32_t d) { return src[d] / l; });
}

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

// The backward's element-wise step, a thread per score of the slab: from s = scale·q·k and
// dp = dO·v, p = exp(s − lse) and ds = p·(dp − D) where key u is visible from query t and the
// row saw any key (lse finite), else 0. lse and D come from the bundle row (after q and dO, at
// byte lse_at). With fp32 inputs P and dS overwrite S and dP (p_out = s, ds_out = dp).
template <class TP>
__global__ void bwd_probs(const float* s, const float* dp, TP* p_out, TP* ds_out, const unsigned char* __restrict__ bundle,
                          size_t row_bytes, size_t lse_at, uint32_t planes, uint32_t slab, uint32_t ns, uint32_t row0, uint32_t rows_q,
                          uint32_t rows_k, bool causal, int64_t offset) {
  const size_t n = size_t{planes} * ns * rows_k;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    const size_t u = i % rows_k, rr = i / rows_k, plane = rr / ns, r = rr % ns;
    const int64_t t = static_cast<int64_t>(row0 + r);
    const auto* ld = reinterpret_cast<const float*>(bundle + (plane * rows_q + static_cast<size_t>(t)) * row_bytes + lse_at);
    const float lse = ld[0], D = ld[1];
    const size_t at = (plane * slab + r) * rows_k + u;
    float p = 0, ds = 0;
    if ((!causal || static_cast<int64_t>(u) <= t + offset) && lse != -INFINITY) {
      p = expf(s[at] - lse);
      ds = p * (dp[at] - D);
    }
    store_p(p_out, at, p);
    store_p(ds_out, at, ds);
  }
}

// cuBLAS is opened at first use, not linked: its libraries (libcublas, libcublasLt) are large
// enough that loading them made every `stepgraph` start take 0.4 s instead of 0.07 s, also for
// the commands that never touch a GPU.
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  // (The C entry point; cublas_api.h adds C++ overloads, so decltype cannot name it.)
  cublasStatus_t (*gemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*, cudaDataType, int,
                         long long, const void*, cudaDataType, int, long long, const void*, void*, cudaDataType, int, long long, int,
                         cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  std::string why;  // empty when loaded
};

const CublasApi& cublas_api() {
  static const CublasApi api = [] {
    CublasApi a;
    void* lib = nullptr;
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_GLOBAL))) break;
    if (!lib) {
      const char* e = dlerror();
      a.why = std::string("cannot load cuBLAS (libcublas.so): ") + (e ? e : "not found");
      return a;
    }
    a.create = reinterpret_cast<decltype(a.create)>(dlsym(lib, "cublasCreate_v2"));
    a.destroy = reinterpret_cast<decltype(a.destroy)>(dlsym(lib, "cublasDestroy_v2"));
    a.set_stream = reinterpret_cast<decltype(a.set_stream)>(dlsym(lib, "cublasSetStream_v2"));
    a.gemm = reinterpret_cast<decltype(a.gemm)>(dlsym(lib, "cublasGemmStridedBatchedEx"));
    if (!a.create || !a.destroy || !a.set_stream || !a.gemm) a.why = "cuBLAS lacks cublasGemmStridedBatchedEx or its handle calls";
    return a;
  }();
  return api;
}

// The handle of a launch, bound to its stream: 0, or 10000 + a cublasStatus_t (the launches'
// return convention).
int bind(void* cublas, void* stream, cublasHandle_t& h) {
  const CublasApi& api = cublas_api();
  if (!api.why.empty()) return 10000 + static_cast<int>(CUBLAS_STATUS_NOT_INITIALIZED);
  h = static_cast<cublasHandle_t>(cublas);
  cublasStatus_t c = api.set_stream(h, static_cast<cudaStream_t>(stream));
  return c == CUBLAS_STATUS_SUCCESS ? 0 : 10000 + static_cast<int>(c);
}

// C = α·op(A)·op(B) + β·C, batched over `batch` planes by strides: A and B of type `in`, C fp32,
// fp32 accumulation (no TF32). Column-major, as cuBLAS sees every matrix.
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* alpha, const void* A,
                    int lda, long long sa, const void* B, int ldb, long long sb, const float* beta, float* C, int ldc, long long sc,
                    cudaDataType_t in, uint32_t batch) {
  return cublas_api().gemm(h, ta, tb, m, n, k, alpha, A, in, lda, sa, B, in, ldb, sb, beta, C, CUDA_R_32F, ldc, sc, static_cast<int>(batch),
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

}  // namespace

bool attn_gemm_handle(void** handle, Diagnostics& diags) {
  const CublasApi& a = cublas_api();
  if (!a.why.empty()) return diags.fail(a.why);
  cublasHandle_t h = nullptr;
  if (cublasStatus_t c = a.create(&h); c != CUBLAS_STATUS_SUCCESS)
    return diags.fail("cublasCreate: status " + std::to_string(static_cast<int>(c)));
  *handle = h;
  return true;
}

void attn_gemm_handle_free(void* handle) {
  if (handle && cublas_api().destroy) cublas_api().destroy(static_cast<cublasHandle_t>(handle));
}

uint32_t attn_gemm_slab(uint32_t planes, uint32_t rows_q, uint32_t rows_k, uint32_t dim, bool bf16) {
  const size_t per_row = size_t{planes} * (size_t{rows_k} * (bf16 ? 6 : 4) + size_t{dim} * 4 + 8);
  const size_t fit = std::max<size_t>(1, kBudget / std::max<size_t>(per_row, 1));
  return static_cast<uint32_t>(std::min<size_t>(rows_q, std::max<size_t>(std::min<size_t>(fit, rows_q), 1)));
}

size_t attn_gemm_workspace(uint32_t planes, uint32_t slab, uint32_t rows_k, uint32_t dim, bool bf16) {
  const size_t rows = size_t{planes} * slab;
  return align256(rows * rows_k * 4) + (bf16 ? align256(rows * rows_k * 2) : 0) + align256(rows * dim * 4) + align256(rows * 8);
}

int launch_attn_fwd_gemm(void* cublas, void* workspace, uint32_t slab, const void* q, const void* kv, float* o_lse, bool bf16,
                         uint32_t planes, uint32_t rows_q, uint32_t rows_k, uint32_t dim, bool causal, float scale, int64_t offset,
                         void* stream) {
  if (dim == 0 || dim > kAttnMaxDim) return static_cast<int>(cudaErrorInvalidValue);  // as launch_attn_fwd
  if (planes == 0 || rows_q == 0 || rows_k == 0 || slab == 0) return 0;
  cublasHandle_t h = nullptr;
  if (int rc = bind(cublas, stream, h)) return rc;
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  const size_t rows = size_t{planes} * slab, es = bf16 ? 2 : 4;
  auto* ws = static_cast<unsigned char*>(workspace);
  float* s = reinterpret_cast<float*>(ws);
  ws += align256(rows * rows_k * 4);
  __nv_bfloat16* pb = nullptr;
  if (bf16) pb = reinterpret_cast<__nv_bfloat16*>(ws), ws += align256(rows * rows_k * 2);
  float* o = reinterpret_cast<float*>(ws);
  ws += align256(rows * dim * 4);
  float* ml = reinterpret_cast<float*>(ws);
  const cudaDataType_t in = bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const auto* K = static_cast<const unsigned char*>(kv);
  const unsigned char* V = K + size_t{planes} * rows_k * dim * es;
  const float one = 1, zero = 0;
  const long long s_kv = static_cast<long long>(rows_k) * dim, s_q = static_cast<long long>(rows_q) * dim;
  const long long s_s = static_cast<long long>(slab) * rows_k, s_o = static_cast<long long>(slab) * dim;
  for (uint32_t row0 = 0; row0 < rows_q; row0 += slab) {
    const uint32_t ns = std::min(slab, rows_q - row0);
    // Column-major view of row-major data: Sᵀ (rows_k × ns) = K (rows_k × dim) · Qᵀ (dim × ns).
    cublasStatus_t c = gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows_k), static_cast<int>(ns), static_cast<int>(dim), &scale, K,
                            static_cast<int>(dim), s_kv, static_cast<const unsigned char*>(q) + size_t{row0} * dim * es,
                            static_cast<int>(dim), s_q, &zero, s, static_cast<int>(rows_k), s_s, in, planes);
    if (c != CUBLAS_STATUS_SUCCESS) return 10000 + static_cast<int>(c);
    const unsigned blocks = static_cast<unsigned>((size_t{planes} * ns + kWarps - 1) / kWarps);
    if (bf16) softmax_rows<<<blocks, kWarps * 32, 0, st>>>(s, pb, ml, planes, slab, ns, row0, rows_k, causal, offset);
    else softmax_rows<<<blocks, kWarps * 32, 0, st>>>(s, s, ml, planes, slab, ns, row0, rows_k, causal, offset);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return static_cast<int>(e);
    // Oᵀ (dim × ns) = Vᵀ (dim × rows_k) · Pᵀ (rows_k × ns).
    c = gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(dim), static_cast<int>(ns), static_cast<int>(rows_k), &one, V,
             static_cast<int>(dim), s_kv, bf16 ? static_cast<const void*>(pb) : static_cast<const void*>(s), static_cast<int>(rows_k), s_s,
             &zero, o, static_cast<int>(dim), s_o, in, planes);
    if (c != CUBLAS_STATUS_SUCCESS) return 10000 + static_cast<int>(c);
    merge_slab<<<blocks, kWarps * 32, 0, st>>>(o_lse, o, ml, planes, slab, ns, row0, rows_q, dim);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return static_cast<int>(e);
  }
  return 0;
}

uint32_t attn_gemm_bwd_slab(uint32_t planes, uint32_t rows_q, uint32_t rows_k, bool bf16) {
  const size_t per_row = size_t{planes} * size_t{rows_k} * (bf16 ? 12 : 8);
  const size_t fit = std::max<size_t>(1, kBudget / std::max<size_t>(per_row, 1));
  return static_cast<uint32_t>(std::max<size_t>(std::min<size_t>(fit, rows_q), 1));
}

size_t attn_gemm_bwd_workspace(uint32_t planes, uint32_t slab, uint32_t rows_k, bool bf16) {
  const size_t scores = size_t{planes} * slab * rows_k;
  return 2 * align256(scores * 4) + (bf16 ? 2 * align256(scores * 2) : 0);
}

int launch_attn_bwd_gemm(void* cublas, void* workspace, uint32_t slab, const void* bundle, const void* kv, float* dq, float* dkv, bool bf16,
                         uint32_t planes, uint32_t rows_q, uint32_t rows_k, uint32_t dim, bool causal, float scale, int64_t offset,
                         void* stream) {
  if (dim == 0 || dim > kAttnMaxDim) return static_cast<int>(cudaErrorInvalidValue);  // as launch_attn_bwd
  if (planes == 0 || rows_q == 0 || rows_k == 0 || slab == 0) return 0;
  cublasHandle_t h = nullptr;
  if (int rc = bind(cublas, stream, h)) return rc;
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  const size_t es = bf16 ? 2 : 4, scores = size_t{planes} * slab * rows_k;
  auto* ws = static_cast<unsigned char*>(workspace);
  float* s = reinterpret_cast<float*>(ws);
  float* dp = reinterpret_cast<float*>(ws + align256(scores * 4));
  void* p = s;
  void* ds = dp;
  if (bf16) {
    p = ws + 2 * align256(scores * 4);
    ds = ws + 2 * align256(scores * 4) + align256(scores * 2);
  }
  const cudaDataType_t in = bf16 ? CUDA_R_16BF : CUDA_R_32F;
  // The bundle as matrices: a row holds q (dim), dO (dim) in the input type, then lse and D as
  // fp32, so Q and dO are row-major with a row stride of ld elements.
  const size_t row_bytes = 2 * size_t{dim} * es + 8;
  const int ld = static_cast<int>(row_bytes / es);
  const auto* B = static_cast<const unsigned char*>(bundle);
  const auto* K = static_cast<const unsigned char*>(kv);
  const unsigned char* V = K + size_t{planes} * rows_k * dim * es;
  float* dK = dkv;
  float* dV = dkv + size_t{planes} * rows_k * dim;
  const float one = 1, zero = 0;
  const long long s_kv = static_cast<long long>(rows_k) * dim, s_b = static_cast<long long>(rows_q) * ld;
  const long long s_s = static_cast<long long>(slab) * rows_k, s_q = static_cast<long long>(rows_q) * dim;
  const int m_k = static_cast<int>(rows_k), m_d = static_cast<int>(dim);
  for (uint32_t row0 = 0; row0 < rows_q; row0 += slab) {
    const uint32_t ns = std::min(slab, rows_q - row0);
    const int n = static_cast<int>(ns);
    const unsigned char* Q = B + size_t{row0} * row_bytes;
    const unsigned char* dO = Q + size_t{dim} * es;
    // Column-major views of row-major data throughout. Sᵀ (rows_k × ns) = scale · K · Qᵀ.
    cublasStatus_t c = gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, m_k, n, m_d, &scale, K, m_d, s_kv, Q, ld, s_b, &zero, s, m_k, s_s, in, planes);
    // dPᵀ (rows_k × ns) = V · dOᵀ.
    if (c == CUBLAS_STATUS_SUCCESS)
      c = gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, m_k, n, m_d, &one, V, m_d, s_kv, dO, ld, s_b, &zero, dp, m_k, s_s, in, planes);
    if (c != CUBLAS_STATUS_SUCCESS) return 10000 + static_cast<int>(c);
    const size_t cells = size_t{planes} * ns * rows_k;
    const unsigned blocks = static_cast<unsigned>(std::min<size_t>((cells + 255) / 256, 8192));
    if (bf16)
      bwd_probs<<<blocks, 256, 0, st>>>(s, dp, static_cast<__nv_bfloat16*>(p), static_cast<__nv_bfloat16*>(ds), B, row_bytes,
                                        2 * size_t{dim} * es, planes, slab, ns, row0, rows_q, rows_k, causal, offset);
    else
      bwd_probs<<<blocks, 256, 0, st>>>(s, dp, s, dp, B, row_bytes, 2 * size_t{dim} * es, planes, slab, ns, row0, rows_q, rows_k, causal,
                                        offset);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return static_cast<int>(e);
    // dQᵀ (dim × ns) += scale · Kᵀ · dSᵀ, into the slab's rows of dq.
    c = gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m_d, n, m_k, &scale, K, m_d, s_kv, ds, m_k, s_s, &one, dq + size_t{row0} * dim, m_d, s_q, in,
             planes);
    // dKᵀ (dim × rows_k) += scale · Qᵀ · dS.
    if (c == CUBLAS_STATUS_SUCCESS)
      c = gemm(h, CUBLAS_OP_N, CUBLAS_OP_T, m_d, m_k, n, &scale, Q, ld, s_b, ds, m_k, s_s, &one, dK, m_d, s_kv, in, planes);
    // dVᵀ (dim × rows_k) += dOᵀ · P.
    if (c == CUBLAS_STATUS_SUCCESS)
      c = gemm(h, CUBLAS_OP_N, CUBLAS_OP_T, m_d, m_k, n, &one, dO, ld, s_b, p, m_k, s_s, &one, dV, m_d, s_kv, in, planes);
    if (c != CUBLAS_STATUS_SUCCESS) return 10000 + static_cast<int>(c);
  }
  return 0;
}

}  // namespace sg::cuda
