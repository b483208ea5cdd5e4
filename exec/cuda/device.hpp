// The CUDA path's device layer: which devices this process sees (and why none), device memory,
// a stream, and the element-wise kernels on core's types. Knows core/ only (never exec/), as
// every backend: the command (cli/) puts it together with the MPI executor.
//
// "No device" is any error from cudaGetDeviceCount (no driver, no device, a driver older than
// the runtime, a container without the device files), with the runtime's own words as reason.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/kinds.hpp"
#include "core/dsl/diagnostics.hpp"
#include "core/graph/step_graph.hpp"

namespace sg::cuda {

struct DeviceProbe {
  int count = 0;                   // 0 when there is no usable device
  std::string reason;              // why none: "cudaGetDeviceCount: cudaErrorNoDevice (no CUDA-capable device is detected)"
  std::vector<std::string> names;  // per device: "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)"
};
DeviceProbe probe_devices();

// The device a process uses: its local rank modulo the device count (launcher.cpp's rule).
int device_for_local_rank(int64_t local_rank, int count);

// Device memory (cudaMalloc), freed on destruction.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  bool allocate(size_t bytes, Diagnostics& diags);
  unsigned char* data() const { return p_; }
  size_t size() const { return n_; }

 private:
  unsigned char* p_ = nullptr;
  size_t n_ = 0;
};

// One CUDA stream (non-blocking with respect to the default stream).
class Stream {
 public:
  Stream() = default;
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  bool create(Diagnostics& diags);
  void* handle() const { return s_; }
  bool sync(Diagnostics& diags) const;

 private:
  void* s_ = nullptr;
};

// True when e (a cudaError_t) is cudaSuccess; else false, with "what: name (description)" reported
// into diags (Diagnostics::fail).
bool cuda_ok(int e, const char* what, Diagnostics& diags);

// Selects device d for this thread.
bool use_device(int d, Diagnostics& diags);

// dst op= src on the device, n elements of type t; and the deterministic inputs of
// core/interp/input_values.hpp (item < 0: d(rank, chunk); else x(item)). Enqueued on `stream`.
bool device_reduce(DType t, ReduceOp op, void* dst, const void* src, size_t n, const Stream& stream, Diagnostics& diags);
bool device_fill(DType t, void* dst, size_t n, uint32_t buf, uint32_t rank, uint32_t chunk, int64_t item, const Stream& stream,
                 Diagnostics& diags);

// Copies between host and device (or device and device), enqueued on `stream`.
bool copy_to_device(void* dst, const void* src, size_t bytes, const Stream& stream, Diagnostics& diags);
bool copy_to_host(void* dst, const void* src, size_t bytes, const Stream& stream, Diagnostics& diags);
bool copy_on_device(void* dst, const void* src, size_t bytes, const Stream& stream, Diagnostics& diags);
// rows × width bytes between pitched rows (cudaMemcpy2DAsync, device to device).
bool copy_2d_on_device(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t rows, const Stream& stream,
                       Diagnostics& diags);

}  // namespace sg::cuda
