#include "exec/cuda/cuda_ops.hpp"

#include <cuda_runtime.h>

namespace sg::cuda {

namespace {

bool ok(cudaError_t e, const char* what, std::string& err) {
  if (e == cudaSuccess) return true;
  err = std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  return false;
}

}  // namespace

bool CudaOps::open(int d, const std::string& name, std::string& err) {
  name_ = name + " (device " + std::to_string(d) + ")";
  return use_device(d, err) && stream_.create(err);
}

unsigned char* CudaOps::allocate(size_t bytes, std::string& err) {
  void* p = nullptr;
  if (!ok(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc", err)) return nullptr;
  if (!ok(cudaMemset(p, 0, bytes), "cudaMemset", err)) {
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

}  // namespace sg::cuda
