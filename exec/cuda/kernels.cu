// Element-wise reductions and the device-side input fill. A reduction is bandwidth-bound: each
// thread handles 16 bytes per iteration (one uint4 load from each side and one store) in a
// grid-stride loop, when both pointers are 16-byte aligned; otherwise, and for the tail, one
// element per thread.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/interp/input_values.hpp"
#include "exec/cuda/kernels.cuh"

namespace sg::cuda {

namespace {

template <class T>
struct Arith {  // arithmetic types: computed in the type itself (integers wrap)
  __device__ static T op(DevOp o, T a, T b) {
    switch (o) {
      case DevOp::Sum: return static_cast<T>(a + b);
      case DevOp::Max: return a < b ? b : a;  // std::max(dst, src), as the CPU path (exec/executor/kernels.cpp)
      case DevOp::Min: return b < a ? b : a;  // std::min(dst, src)
      case DevOp::Prod: return static_cast<T>(a * b);
    }
    return a;
  }
  __device__ static T from_int(int v) { return static_cast<T>(v); }
};

__device__ inline float apply_f(DevOp o, float a, float b) {
  switch (o) {
    case DevOp::Sum: return a + b;
    case DevOp::Max: return a < b ? b : a;
    case DevOp::Min: return b < a ? b : a;
    case DevOp::Prod: return a * b;
  }
  return a;
}

template <>
struct Arith<__half> {
  __device__ static __half op(DevOp o, __half a, __half b) { return __float2half_rn(apply_f(o, __half2float(a), __half2float(b))); }
  __device__ static __half from_int(int v) { return __float2half_rn(static_cast<float>(v)); }
};
template <>
struct Arith<__nv_bfloat16> {
  __device__ static __nv_bfloat16 op(DevOp o, __nv_bfloat16 a, __nv_bfloat16 b) {
    return __float2bfloat16_rn(apply_f(o, __bfloat162float(a), __bfloat162float(b)));
  }
  __device__ static __nv_bfloat16 from_int(int v) { return __float2bfloat16_rn(static_cast<float>(v)); }
};

template <class T>
__global__ void reduce_vec16(T* __restrict__ dst, const T* __restrict__ src, size_t nvec, DevOp o) {
  constexpr int kPer = 16 / sizeof(T);
  auto* d = reinterpret_cast<uint4*>(dst);
  const auto* s = reinterpret_cast<const uint4*>(src);
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < nvec; i += size_t{gridDim.x} * blockDim.x) {
    uint4 a = d[i];
    const uint4 b = s[i];
    T* pa = reinterpret_cast<T*>(&a);
    const T* pb = reinterpret_cast<const T*>(&b);
#pragma unroll
    for (int k = 0; k < kPer; ++k) pa[k] = Arith<T>::op(o, pa[k], pb[k]);
    d[i] = a;
  }
}

template <class T>
__global__ void reduce_scalar(T* __restrict__ dst, const T* __restrict__ src, size_t n, DevOp o) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    dst[i] = Arith<T>::op(o, dst[i], src[i]);
}

template <class T>
__global__ void fill(T* __restrict__ dst, size_t n, uint32_t buf, uint32_t rank, uint32_t chunk, int64_t item) {
  for (size_t e = blockIdx.x * size_t{blockDim.x} + threadIdx.x; e < n; e += size_t{gridDim.x} * blockDim.x) {
    int v = item < 0 ? contrib_value(buf, rank, chunk, e) : item_value(buf, static_cast<uint32_t>(item), e);
    dst[e] = Arith<T>::from_int(v);
  }
}

// Enough blocks to fill the device several times over; the grid-stride loops do the rest.
unsigned blocks_for(size_t work, unsigned threads) {
  size_t b = (work + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 4096 ? 4096 : b));
}

template <class T>
int reduce_t(DevOp o, void* dst, const void* src, size_t n, cudaStream_t st) {
  constexpr unsigned kThreads = 256;
  auto* d = static_cast<T*>(dst);
  const auto* s = static_cast<const T*>(src);
  size_t done = 0;
  if (sizeof(T) <= 16 && reinterpret_cast<uintptr_t>(d) % 16 == 0 && reinterpret_cast<uintptr_t>(s) % 16 == 0) {
    constexpr size_t kPer = 16 / sizeof(T);
    size_t nvec = n / kPer;
    if (nvec) reduce_vec16<T><<<blocks_for(nvec, kThreads), kThreads, 0, st>>>(d, s, nvec, o);
    done = nvec * kPer;
  }
  if (done < n) reduce_scalar<T><<<blocks_for(n - done, kThreads), kThreads, 0, st>>>(d + done, s + done, n - done, o);
  return static_cast<int>(cudaGetLastError());
}

template <class T>
int fill_t(void* dst, size_t n, uint32_t buf, uint32_t rank, uint32_t chunk, int64_t item, cudaStream_t st) {
  constexpr unsigned kThreads = 256;
  if (n) fill<T><<<blocks_for(n, kThreads), kThreads, 0, st>>>(static_cast<T*>(dst), n, buf, rank, chunk, item);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int launch_reduce(DevType t, DevOp op, void* dst, const void* src, size_t n, void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  switch (t) {
    case DevType::F16: return reduce_t<__half>(op, dst, src, n, st);
    case DevType::BF16: return reduce_t<__nv_bfloat16>(op, dst, src, n, st);
    case DevType::F32: return reduce_t<float>(op, dst, src, n, st);
    case DevType::F64: return reduce_t<double>(op, dst, src, n, st);
    case DevType::I8: return reduce_t<int8_t>(op, dst, src, n, st);
    case DevType::I32: return reduce_t<int32_t>(op, dst, src, n, st);
    case DevType::I64: return reduce_t<int64_t>(op, dst, src, n, st);
    case DevType::U8: return reduce_t<uint8_t>(op, dst, src, n, st);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

int launch_fill(DevType t, void* dst, size_t n, uint32_t buf, uint32_t rank, uint32_t chunk, int64_t item, void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  switch (t) {
    case DevType::F16: return fill_t<__half>(dst, n, buf, rank, chunk, item, st);
    case DevType::BF16: return fill_t<__nv_bfloat16>(dst, n, buf, rank, chunk, item, st);
    case DevType::F32: return fill_t<float>(dst, n, buf, rank, chunk, item, st);
    case DevType::F64: return fill_t<double>(dst, n, buf, rank, chunk, item, st);
    case DevType::I8: return fill_t<int8_t>(dst, n, buf, rank, chunk, item, st);
    case DevType::I32: return fill_t<int32_t>(dst, n, buf, rank, chunk, item, st);
    case DevType::I64: return fill_t<int64_t>(dst, n, buf, rank, chunk, item, st);
    case DevType::U8: return fill_t<uint8_t>(dst, n, buf, rank, chunk, item, st);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace sg::cuda
