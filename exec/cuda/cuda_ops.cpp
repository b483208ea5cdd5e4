#include "exec/cuda/cuda_ops.hpp"

#include <cuda_runtime.h>

#include "exec/cuda/attention.cuh"

namespace sg::cuda {

namespace {

bool ok(cudaError_t e, const char* what, std::string& err) { return cuda_ok(static_cast<int>(e), what, err); }

}  // namespace

CudaOps::~CudaOps() {
  if (bundle_) cudaFree(bundle_);
}

bool CudaOps::open(int d, const std::string& name, std::string& err) {
  name_ = name + " (device " + std::to_string(d) + ")";
  return use_device(d, err) && stream_.create(err);
}

unsigned char* CudaOps::allocate(size_t bytes, std::string& err) {
  void* p = nullptr;
  if (!ok(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc", err)) return nullptr;
  // Zeroed on this process's stream (non-blocking: a plain cudaMemset would not be ordered
  // before the work that follows on it), and waited for.
  if (!ok(cudaMemsetAsync(p, 0, bytes, static_cast<cudaStream_t>(stream_.handle())), "cudaMemsetAsync", err) || !stream_.sync(err)) {
    cudaFree(p);
    return nullptr;
  }
  return static_cast<unsigned char*>(p);
}

void CudaOps::release(unsigned char* p) { cudaFree(p); }

unsigned char* CudaOps::allocate_host(size_t bytes, std::string& err) {
  void* p = nullptr;
  if (!ok(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault), "cudaHostAlloc", err)) return nullptr;
  return static_cast<unsigned char*>(p);
}

void CudaOps::release_host(unsigned char* p) { cudaFreeHost(p); }

bool CudaOps::to_host(unsigned char* host, const unsigned char* dev, size_t bytes, std::string& err) {
  return copy_to_host(host, dev, bytes, stream_, err) && stream_.sync(err);
}

bool CudaOps::to_device(unsigned char* dev, const unsigned char* host, size_t bytes, std::string& err) {
  return copy_to_device(dev, host, bytes, stream_, err) && stream_.sync(err);
}

bool CudaOps::copy(unsigned char* dst, const unsigned char* src, size_t bytes, std::string& err) {
  // A copy step may overlap its source (the CPU path uses memmove); cudaMemcpy does not promise
  // anything for overlapping ranges, so those go through a temporary.
  bool overlap = dst < src + bytes && src < dst + bytes && dst != src;
  if (!overlap) return copy_on_device(dst, src, bytes, stream_, err) && stream_.sync(err);
  unsigned char* tmp = allocate(bytes, err);
  if (!tmp) return false;
  bool ok = copy_on_device(tmp, src, bytes, stream_, err) && copy_on_device(dst, tmp, bytes, stream_, err) && stream_.sync(err);
  release(tmp);
  return ok;
}

bool CudaOps::reduce(DType t, ReduceOp op, unsigned char* dst, const unsigned char* src, size_t n, std::string& err) {
  return device_reduce(t, op, dst, src, n, stream_, err) && stream_.sync(err);
}

bool CudaOps::attention_tile(const AttentionTile& t, std::string& err) {
  const uint32_t planes = t.batch * t.heads;
  void* st = stream_.handle();
  int rc = 0;
  if (!t.backward) {
    rc = launch_attn_fwd(t.q, t.kv, reinterpret_cast<float*>(t.out0), t.bf16, planes, t.rows_q, t.rows_k, t.dim, t.causal, t.scale, 0, st);
  } else {
    const float* bundle = reinterpret_cast<const float*>(t.q);
    if (t.bf16) {  // q, dO as bf16 and lse, D as fp32 per row: widened to the kernel's fp32 bundle
      size_t need = size_t{planes} * t.rows_q * (2 * size_t{t.dim} + 2) * 4;
      if (need > bundle_bytes_) {
        if (bundle_) release(bundle_);
        bundle_ = allocate(need, err);
        bundle_bytes_ = bundle_ ? need : 0;
        if (!bundle_) return false;
      }
      rc = launch_widen_bundle(t.q, reinterpret_cast<float*>(bundle_), size_t{planes} * t.rows_q, t.dim, st);
      bundle = reinterpret_cast<const float*>(bundle_);
    }
    if (rc == 0)
      rc = launch_attn_bwd(bundle, t.kv, t.bf16, reinterpret_cast<float*>(t.out0), reinterpret_cast<float*>(t.out1), planes, t.rows_q,
                           t.rows_k, t.dim, t.causal, t.scale, 0, st);
  }
  return ok(static_cast<cudaError_t>(rc), "the attention kernel", err) && stream_.sync(err);
}

bool CudaOps::attention_merge(unsigned char* acc, const unsigned char* part, size_t rows, uint32_t dim, std::string& err) {
  return ok(static_cast<cudaError_t>(launch_attn_merge(reinterpret_cast<float*>(acc), reinterpret_cast<const float*>(part), rows, dim,
                                                       stream_.handle())),
            "the attention merge kernel", err) &&
         stream_.sync(err);
}

}  // namespace sg::cuda
