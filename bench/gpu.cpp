// bench_gpu: the CUDA path's kernels against the GPU's own baselines, measured in the same run
// (issue 10, item 6). Without a device it says so and exits 0 (the ctest smoke run).
//
//   part 1: the reduction kernel's bandwidth (reads dst and src, writes dst: 3 bytes moved per
//           byte reduced) against cudaMemcpy device-to-device's (2 per byte), f32 / bf16 sum;
//           goal >= 80 %.
//   part 2: the attention tile's throughput (forward, 4·planes·rows²·dim flops) against cuBLAS
//           doing the tile's two products (S = Q·Kᵀ, O = P·V, batched over planes) on the same
//           shapes: fp32 (SGEMM) and bf16 inputs with fp32 accumulation (GemmEx, tensor cores);
//           goal >= 50 %.
//   part 3: the same for the backward tile (10·planes·rows²·dim flops) against cuBLAS doing its
//           five products.
//   Ring attention on several ranks sharing the GPU is `mpiexec -n 4 stepgraph exec
//   zigzag_ring_attention --device cuda --check` (bench/README.md).
//
//   bench_gpu [--quick] [--part 1|2|3]
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "exec/cuda/attention.cuh"
#include "exec/cuda/attention_gemm.cuh"
#include "exec/cuda/device.hpp"

namespace {

using namespace sg;

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "bench_gpu: %s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(3);                                                            \
    }                                                                          \
  } while (0)

// The fastest of `reps` timings (CUDA events) of f, after one warm-up call.
template <class F>
double fastest_ms(int reps, F&& f) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  f();
  CK(cudaDeviceSynchronize());
  float best = 1e30f;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(a));
    f();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    best = std::min(best, ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return best;
}

void part_reduce(bool quick) {
  std::printf("\n## part 1: reduction kernel bandwidth against cudaMemcpy D2D (goal >= 80%%)\n\n");
  std::printf("| size | type | reduce GB/s | copy GB/s | ratio |\n|---|---|---|---|---|\n");
  std::vector<size_t> sizes =
      quick ? std::vector<size_t>{size_t{1} << 20} : std::vector<size_t>{size_t{64} << 20, size_t{256} << 20, size_t{1} << 30};
  Diagnostics diags;
  cuda::Stream st;
  if (!st.create(diags)) std::fprintf(stderr, "%s\n", diags.messages().c_str()), std::exit(3);
  for (size_t bytes : sizes)
    for (DType t : {DType::F32, DType::BF16}) {
      cuda::DeviceMemory a, b, c;
      if (!a.allocate(bytes, diags) || !b.allocate(bytes, diags) || !c.allocate(bytes, diags))
        std::fprintf(stderr, "%s\n", diags.messages().c_str()), std::exit(3);
      CK(cudaMemset(a.data(), 0, bytes));
      CK(cudaMemset(b.data(), 0, bytes));
      size_t n = bytes / dtype_size(t);
      double red = fastest_ms(quick ? 2 : 10, [&] {
        if (!cuda::device_reduce(t, ReduceOp::Sum, a.data(), b.data(), n, st, diags))
          std::fprintf(stderr, "%s\n", diags.messages().c_str()), std::exit(3);
        CK(cudaStreamSynchronize(static_cast<cudaStream_t>(st.handle())));
      });
      double cpy = fastest_ms(quick ? 2 : 10, [&] { CK(cudaMemcpy(c.data(), b.data(), bytes, cudaMemcpyDeviceToDevice)); });
      double red_bw = 3.0 * bytes / (red * 1e-3) / 1e9, cpy_bw = 2.0 * bytes / (cpy * 1e-3) / 1e9;
      std::printf("| %zu MiB | %s | %.0f | %.0f | %.0f%% |\n", bytes >> 20, dtype_name(t), red_bw, cpy_bw, 100 * red_bw / cpy_bw);
    }
}

// A stream and a cuBLAS handle on it, for parts 2 and 3 (exits 3 when either cannot be made).
struct Blas {
  cuda::Stream st;
  cublasHandle_t h = nullptr;
  Blas() {
    Diagnostics diags;
    if (!st.create(diags)) std::fprintf(stderr, "%s\n", diags.messages().c_str()), std::exit(3);
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) std::fprintf(stderr, "bench_gpu: cublasCreate failed\n"), std::exit(3);
    cublasSetStream(h, static_cast<cudaStream_t>(st.handle()));
  }
  ~Blas() { cublasDestroy(h); }
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
};

// A table row of parts 2 and 3: the two tiles' TFLOP/s, cuBLAS alone's, and the faster tile's share.
void tile_row(uint32_t planes, uint32_t rows, uint32_t dim, bool bf16, double warp, double cublas_tile, double gemms) {
  std::printf("| %u x %u x %u | %s | %.1f | %.1f | %.1f | %.0f%% |\n", planes, rows, dim, bf16 ? "bf16" : "fp32", warp, cublas_tile, gemms,
              100 * std::max(warp, cublas_tile) / gemms);
}

void part_attention(bool quick) {
  std::printf("\n## part 2: attention tile throughput against cuBLAS on the tile's two products (goal >= 50%%)\n\n");
  std::printf(
      "| planes x rows x dim | inputs | warp tile TFLOP/s | cuBLAS tile TFLOP/s | the two GEMMs alone TFLOP/s | ratio (faster tile / "
      "GEMMs) |\n"
      "|---|---|---|---|---|---|\n");
  const uint32_t planes = quick ? 2 : 32, rows = quick ? 256 : 4096, dim = quick ? 64 : 128;
  const double flops = 4.0 * planes * rows * double(rows) * dim;
  Diagnostics diags;
  Blas blas;
  cuda::Stream& st = blas.st;
  cublasHandle_t h = blas.h;
  for (bool bf16 : {false, true}) {
    size_t es = bf16 ? 2 : 4, qn = size_t{planes} * rows * dim;
    cuda::DeviceMemory q, kv, o, s;
    if (!q.allocate(qn * es, diags) || !kv.allocate(2 * qn * es, diags) || !o.allocate(size_t{planes} * rows * (dim + 1) * 4, diags) ||
        !s.allocate(size_t{planes} * rows * rows * (bf16 ? 2 : 4), diags))
      std::fprintf(stderr, "%s\n", diags.messages().c_str()), std::exit(3);
    CK(cudaMemset(q.data(), 0, qn * es));
    CK(cudaMemset(kv.data(), 0, 2 * qn * es));
    CK(cudaMemset(o.data(), 0, size_t{planes} * rows * (dim + 1) * 4));
    double tile = fastest_ms(quick ? 2 : 5, [&] {
      int rc = cuda::launch_attn_fwd(q.data(), kv.data(), reinterpret_cast<float*>(o.data()), bf16, planes, rows, rows, dim, false, 0.088f,
                                     0, st.handle());
      if (rc) std::fprintf(stderr, "bench_gpu: the attention kernel failed (%d)\n", rc), std::exit(3);
      CK(cudaStreamSynchronize(static_cast<cudaStream_t>(st.handle())));
    });
    // The cuBLAS tile (attention_gemm.cuh): its GEMMs plus the softmax and merge kernels.
    const uint32_t slab = cuda::attn_gemm_slab(planes, rows, rows, dim, bf16);
    cuda::DeviceMemory ws;
    if (!ws.allocate(cuda::attn_gemm_workspace(planes, slab, rows, dim, bf16), diags))
      std::fprintf(stderr, "%s\n", diags.messages().c_str()), std::exit(3);
    double gemm_tile = fastest_ms(quick ? 2 : 5, [&] {
      int rc = cuda::launch_attn_fwd_gemm(h, ws.data(), slab, q.data(), kv.data(), reinterpret_cast<float*>(o.data()), bf16, planes, rows,
                                          rows, dim, false, 0.088f, 0, st.handle());
      if (rc) std::fprintf(stderr, "bench_gpu: the cuBLAS attention tile failed (%d)\n", rc), std::exit(3);
      CK(cudaStreamSynchronize(static_cast<cudaStream_t>(st.handle())));
    });
    // cuBLAS, column-major: S (rows x rows) = Kᵀ-side product, then O (dim x rows) = V · P.
    const float one = 1, zero = 0;
    const long long sq = static_cast<long long>(rows) * dim, ss = static_cast<long long>(rows) * rows;
    auto* K = q.data();  // the values do not matter for the timing
    double gemm = fastest_ms(quick ? 2 : 5, [&] {
      cublasStatus_t r1, r2;
      if (!bf16) {
        r1 = cublasSgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, rows, rows, dim, &one, reinterpret_cast<float*>(K), dim, sq,
                                       reinterpret_cast<float*>(q.data()), dim, sq, &zero, reinterpret_cast<float*>(s.data()), rows, ss,
                                       planes);
        r2 = cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, dim, rows, rows, &one, reinterpret_cast<float*>(kv.data()), dim, sq,
                                       reinterpret_cast<float*>(s.data()), rows, ss, &zero, reinterpret_cast<float*>(o.data()), dim, sq,
                                       planes);
      } else {
        r1 = cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, rows, rows, dim, &one, K, CUDA_R_16BF, dim, sq, q.data(), CUDA_R_16BF,
                                        dim, sq, &zero, s.data(), CUDA_R_16BF, rows, ss, planes, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        r2 = cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, dim, rows, rows, &one, kv.data(), CUDA_R_16BF, dim, sq, s.data(),
                                        CUDA_R_16BF, rows, ss, &zero, o.data(), CUDA_R_32F, dim, sq, planes, CUBLAS_COMPUTE_32F,
                                        CUBLAS_GEMM_DEFAULT);
      }
      if (r1 != CUBLAS_STATUS_SUCCESS || r2 != CUBLAS_STATUS_SUCCESS) std::fprintf(stderr, "bench_gpu: cuBLAS failed\n"), std::exit(3);
      CK(cudaStreamSynchronize(static_cast<cudaStream_t>(st.handle())));
    });
    double tt = flops / (tile * 1e-3) / 1e12, ct = flops / (gemm_tile * 1e-3) / 1e12, gt = flops / (gemm * 1e-3) / 1e12;
    tile_row(planes, rows, dim, bf16, tt, ct, gt);
  }
}

// The backward tile (10·planes·rows²·dim flops: five products) against cuBLAS doing those five
// products alone on the same shapes: S = Q·Kᵀ, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q, dV = Pᵀ·dO.
void part_attention_bwd(bool quick) {
  std::printf("\n## part 3: attention backward tile throughput against cuBLAS on its five products (goal >= 50%%)\n\n");
  std::printf(
      "| planes x rows x dim | inputs | warp tile TFLOP/s | cuBLAS tile TFLOP/s | the five GEMMs alone TFLOP/s | ratio (faster tile / "
      "GEMMs) |\n"
      "|---|---|---|---|---|---|\n");
  const uint32_t planes = quick ? 2 : 32, rows = quick ? 256 : 4096, dim = quick ? 64 : 128;
  const double flops = 10.0 * planes * rows * double(rows) * dim;
  Diagnostics diags;
  Blas blas;
  cuda::Stream& st = blas.st;
  cublasHandle_t h = blas.h;
  auto sync = [&] { CK(cudaStreamSynchronize(static_cast<cudaStream_t>(st.handle()))); };
  for (bool bf16 : {false, true}) {
    const size_t es = bf16 ? 2 : 4, qn = size_t{planes} * rows * dim, rows_all = size_t{planes} * rows;
    const size_t scores = rows_all * rows;
    cuda::DeviceMemory wide, raw, kv, dq, dkv, sp, dps;
    if (!wide.allocate(rows_all * (2 * dim + 2) * 4, diags) || !raw.allocate(rows_all * (2 * dim * es + 8), diags) ||
        !kv.allocate(2 * qn * es, diags) || !dq.allocate(qn * 4, diags) || !dkv.allocate(2 * qn * 4, diags) ||
        !sp.allocate(scores * es, diags) || !dps.allocate(scores * es, diags))
      std::fprintf(stderr, "%s\n", diags.messages().c_str()), std::exit(3);
    // Zeros (lse 0): every score visible, exp(0) = 1; the values do not change the work.
    CK(cudaMemset(wide.data(), 0, rows_all * (2 * dim + 2) * 4));
    CK(cudaMemset(raw.data(), 0, rows_all * (2 * dim * es + 8)));
    CK(cudaMemset(kv.data(), 0, 2 * qn * es));
    CK(cudaMemset(dq.data(), 0, qn * 4));
    CK(cudaMemset(dkv.data(), 0, 2 * qn * 4));
    double tile = fastest_ms(quick ? 2 : 3, [&] {
      int rc = cuda::launch_attn_bwd(reinterpret_cast<const float*>(wide.data()), kv.data(), bf16, reinterpret_cast<float*>(dq.data()),
                                     reinterpret_cast<float*>(dkv.data()), planes, rows, rows, dim, false, 0.088f, 0, st.handle());
      if (rc) std::fprintf(stderr, "bench_gpu: the backward kernels failed (%d)\n", rc), std::exit(3);
      sync();
    });
    const uint32_t slab = cuda::attn_gemm_bwd_slab(planes, rows, rows, bf16);
    cuda::DeviceMemory ws;
    if (!ws.allocate(cuda::attn_gemm_bwd_workspace(planes, slab, rows, bf16), diags))
      std::fprintf(stderr, "%s\n", diags.messages().c_str()), std::exit(3);
    double gemm_tile = fastest_ms(quick ? 2 : 3, [&] {
      int rc =
          cuda::launch_attn_bwd_gemm(h, ws.data(), slab, raw.data(), kv.data(), reinterpret_cast<float*>(dq.data()),
                                     reinterpret_cast<float*>(dkv.data()), bf16, planes, rows, rows, dim, false, 0.088f, 0, st.handle());
      if (rc) std::fprintf(stderr, "bench_gpu: the cuBLAS backward failed (%d)\n", rc), std::exit(3);
      sync();
    });
    // The five products alone, column-major, contiguous operands (Q, dO, K, V all rows x dim).
    const float one = 1, zero = 0;
    const int R = static_cast<int>(rows), D = static_cast<int>(dim), P = static_cast<int>(planes);
    const long long sq = static_cast<long long>(rows) * dim, ss = static_cast<long long>(rows) * rows;
    const cudaDataType_t in = bf16 ? CUDA_R_16BF : CUDA_R_32F;
    void* K = kv.data();
    void* Q = kv.data();  // any rows x dim operands: the values do not matter for the timing
    auto g = [&](cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* A, int lda, long long sa, const void* B,
                 int ldb, long long sb, void* C, cudaDataType_t ct, int ldc, long long sc) {
      if (cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, &one, A, in, lda, sa, B, in, ldb, sb, &zero, C, ct, ldc, sc, P, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
        std::fprintf(stderr, "bench_gpu: cuBLAS failed\n"), std::exit(3);
    };
    double gemm = fastest_ms(quick ? 2 : 3, [&] {
      g(CUBLAS_OP_T, CUBLAS_OP_N, R, R, D, K, D, sq, Q, D, sq, sp.data(), in, R, ss);                    // S
      g(CUBLAS_OP_T, CUBLAS_OP_N, R, R, D, K, D, sq, Q, D, sq, dps.data(), in, R, ss);                   // dP
      g(CUBLAS_OP_N, CUBLAS_OP_N, D, R, R, K, D, sq, dps.data(), R, ss, dq.data(), CUDA_R_32F, D, sq);   // dQ
      g(CUBLAS_OP_N, CUBLAS_OP_T, D, R, R, Q, D, sq, dps.data(), R, ss, dkv.data(), CUDA_R_32F, D, sq);  // dK
      g(CUBLAS_OP_N, CUBLAS_OP_T, D, R, R, Q, D, sq, sp.data(), R, ss, static_cast<float*>(static_cast<void*>(dkv.data())) + qn, CUDA_R_32F,
        D,
        sq);  // dV
      sync();
    });
    double tt = flops / (tile * 1e-3) / 1e12, ct = flops / (gemm_tile * 1e-3) / 1e12, gt = flops / (gemm * 1e-3) / 1e12;
    tile_row(planes, rows, dim, bf16, tt, ct, gt);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int part = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    else if (std::strcmp(argv[i], "--part") == 0 && i + 1 < argc) part = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_gpu [--quick] [--part 1|2|3]\n");
      return 2;
    }
  }
  cuda::DeviceProbe p = cuda::probe_devices();
  if (p.count == 0) {
    std::printf("bench_gpu: no CUDA device (%s): nothing measured\n", p.reason.c_str());
    return 0;
  }
  Diagnostics diags;
  if (!cuda::use_device(0, diags)) std::fprintf(stderr, "%s\n", diags.messages().c_str()), std::exit(3);
  std::printf("# bench_gpu on %s\n", p.names[0].c_str());
  if (part == 0 || part == 1) part_reduce(quick);
  if (part == 0 || part == 2) part_attention(quick);
  if (part == 0 || part == 3) part_attention_bwd(quick);
  return 0;
}
