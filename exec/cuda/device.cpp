#include "exec/cuda/device.hpp"

#include <cuda_runtime.h>

#include <cstdio>

#include "exec/cuda/kernels.cuh"

namespace sg::cuda {

// The launchers number types and operators as core does.
static_assert(
    static_cast<int>(DevType::F16) == static_cast<int>(DType::F16) && static_cast<int>(DevType::BF16) == static_cast<int>(DType::BF16) &&
    static_cast<int>(DevType::F32) == static_cast<int>(DType::F32) && static_cast<int>(DevType::F64) == static_cast<int>(DType::F64) &&
    static_cast<int>(DevType::I8) == static_cast<int>(DType::I8) && static_cast<int>(DevType::I32) == static_cast<int>(DType::I32) &&
    static_cast<int>(DevType::I64) == static_cast<int>(DType::I64) && static_cast<int>(DevType::U8) == static_cast<int>(DType::U8));
static_assert(static_cast<int>(DevOp::Sum) == static_cast<int>(ReduceOp::Sum) &&
              static_cast<int>(DevOp::Max) == static_cast<int>(ReduceOp::Max) &&
              static_cast<int>(DevOp::Min) == static_cast<int>(ReduceOp::Min) &&
              static_cast<int>(DevOp::Prod) == static_cast<int>(ReduceOp::Prod));

namespace {

std::string cuda_error(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

bool ok(cudaError_t e, const char* what, Diagnostics& diags) { return cuda_ok(static_cast<int>(e), what, diags); }

}  // namespace

bool cuda_ok(int e, const char* what, Diagnostics& diags) {
  if (e == cudaSuccess) return true;
  return diags.fail(cuda_error(what, static_cast<cudaError_t>(e)));
}

DeviceProbe probe_devices() {
  DeviceProbe p;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    p.reason = cuda_error("cudaGetDeviceCount", e);
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return p;
  }
  if (n <= 0) {
    p.reason = "cudaGetDeviceCount: 0 devices";
    return p;
  }
  p.count = n;
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
      p.names.push_back("device " + std::to_string(d));
      continue;
    }
    char mem[32];
    std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024 * 1024));
    p.names.push_back(std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " + mem + ")");
  }
  return p;
}

int device_for_local_rank(int64_t local_rank, int count) {
  if (count <= 0) return -1;
  return static_cast<int>((local_rank < 0 ? 0 : local_rank) % count);
}

DeviceMemory::~DeviceMemory() {
  if (p_) cudaFree(p_);
}

bool DeviceMemory::allocate(size_t bytes, Diagnostics& diags) {
  if (p_) cudaFree(p_), p_ = nullptr;
  n_ = 0;
  void* q = nullptr;
  if (!ok(cudaMalloc(&q, bytes ? bytes : 1), "cudaMalloc", diags)) return false;
  p_ = static_cast<unsigned char*>(q);
  n_ = bytes;
  return true;
}

Stream::~Stream() {
  if (s_) cudaStreamDestroy(static_cast<cudaStream_t>(s_));
}

bool Stream::create(Diagnostics& diags) {
  cudaStream_t s = nullptr;
  if (!ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate", diags)) return false;
  s_ = s;
  return true;
}

bool Stream::sync(Diagnostics& diags) const {
  return ok(cudaStreamSynchronize(static_cast<cudaStream_t>(s_)), "cudaStreamSynchronize", diags);
}

bool use_device(int d, Diagnostics& diags) { return ok(cudaSetDevice(d), "cudaSetDevice", diags); }

bool device_reduce(DType t, ReduceOp op, void* dst, const void* src, size_t n, const Stream& stream, Diagnostics& diags) {
  return ok(static_cast<cudaError_t>(launch_reduce(static_cast<DevType>(t), static_cast<DevOp>(op), dst, src, n, stream.handle())),
            "the reduction kernel", diags);
}

bool device_fill(DType t, void* dst, size_t n, uint32_t buf, uint32_t rank, uint32_t chunk, int64_t item, const Stream& stream,
                 Diagnostics& diags) {
  return ok(static_cast<cudaError_t>(launch_fill(static_cast<DevType>(t), dst, n, buf, rank, chunk, item, stream.handle())),
            "the fill kernel", diags);
}

bool copy_to_device(void* dst, const void* src, size_t bytes, const Stream& stream, Diagnostics& diags) {
  return ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream.handle())), "cudaMemcpyAsync H2D",
            diags);
}
bool copy_to_host(void* dst, const void* src, size_t bytes, const Stream& stream, Diagnostics& diags) {
  return ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(stream.handle())), "cudaMemcpyAsync D2H",
            diags);
}
bool copy_on_device(void* dst, const void* src, size_t bytes, const Stream& stream, Diagnostics& diags) {
  return ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream.handle())), "cudaMemcpyAsync D2D",
            diags);
}

bool copy_2d_on_device(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t rows, const Stream& stream,
                       Diagnostics& diags) {
  return ok(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream.handle())),
            "cudaMemcpy2DAsync D2D", diags);
}

}  // namespace sg::cuda
