// The CUDA device behind core's DeviceOps: memory from cudaMalloc, copies with cudaMemcpy on this
// process's stream, reductions with kernels.cu, pinned host memory (cudaHostAlloc) for the
// executor's host mirrors and staging.
// Every call waits for the device, except on a lane (DeviceOps::select_lane): the executor's two
// streams, one for local work and one for transfers, ordered by events (marks).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/device/device_ops.hpp"
#include "exec/cuda/attention_cudnn.hpp"
#include "exec/cuda/device.hpp"

namespace sg::cuda {

class CudaOps final : public DeviceOps {
 public:
  CudaOps() = default;
  ~CudaOps() override;
  CudaOps(const CudaOps&) = delete;
  CudaOps& operator=(const CudaOps&) = delete;
  // Uses device d (cudaSetDevice) and creates its stream; false, reported into diags, when it cannot.
  bool open(int d, const std::string& name, Diagnostics& diags);
  std::string name() const override { return name_; }
  unsigned char* allocate(size_t bytes, Diagnostics& diags) override;
  void release(unsigned char* p) override;
  unsigned char* allocate_host(size_t bytes, Diagnostics& diags) override;
  void release_host(unsigned char* p) override;
  bool to_host(unsigned char* host, const unsigned char* dev, size_t bytes, Diagnostics& diags) override;
  bool to_device(unsigned char* dev, const unsigned char* host, size_t bytes, Diagnostics& diags) override;
  bool copy(unsigned char* dst, const unsigned char* src, size_t bytes, Diagnostics& diags) override;
  bool copy_2d(unsigned char* dst, size_t dpitch, const unsigned char* src, size_t spitch, size_t width, size_t rows,
               Diagnostics& diags) override;
  bool reduce(DType t, ReduceOp op, unsigned char* dst, const unsigned char* src, size_t n, Diagnostics& diags) override;
  // CUDA IPC: a cudaMalloc'd buffer's handle; a peer's opened with lazy peer access (ranks
  // sharing this device, or on another device of the node that it can reach).
  bool ipc_export(const unsigned char* base, unsigned char* handle, Diagnostics& diags) override;
  unsigned char* ipc_open(const unsigned char* handle, size_t bytes, Diagnostics& diags) override;
  void ipc_close(unsigned char* p, size_t bytes) override;
  bool attention_tile(const AttentionTile& t, Diagnostics& diags) override;  // exec/cuda/attention.cu
  bool attention_merge(unsigned char* acc, const unsigned char* part, size_t rows, uint32_t dim, Diagnostics& diags) override;
  bool select_lane(int k, double timeout_s, Diagnostics& diags) override;
  void* lane_stream(int k) const override { return k == 0 || k == 1 ? lanes_[k].handle() : nullptr; }
  bool mark(int& id, Diagnostics& diags) override;
  bool wait_mark(int id, Diagnostics& diags) override;
  bool mark_reached(int id) const override;
  bool progress(Diagnostics& diags) override;  // a failure of enqueued work, else nothing to do

 private:
  unsigned char* bundle_ = nullptr;  // the backward's bf16 bundle widened to fp32 (grown on demand)
  size_t bundle_bytes_ = 0;
  // The cuBLAS tiles (attention_gemm.cuh), chosen with STEPGRAPH_ATTN=gemm: their handle
  // (a cublasHandle_t, made at first use) and workspace (grown on demand).
  bool gemm_ = false;
  // cuDNN's fused forward tile (attention_cudnn.hpp), chosen with STEPGRAPH_ATTN=cudnn for bf16
  // inputs: its plans, and the tile's O_t and lse before they are merged (grown on demand).
  bool cudnn_ = false;
  std::unique_ptr<CudnnAttention> cudnn_attn_;
  unsigned char* cudnn_out_ = nullptr;
  size_t cudnn_out_bytes_ = 0;
  void* cublas_ = nullptr;
  unsigned char* gemm_ws_ = nullptr;
  size_t gemm_ws_bytes_ = 0;
  // Device scratch p of `have` bytes, reallocated to `need` when smaller.
  bool grow(unsigned char*& p, size_t& have, size_t need, Diagnostics& diags);
  // The stream calls go to, and after the call: wait for it (no lane selected) or not.
  const Stream& cur() const { return lane_ < 0 ? stream_ : lanes_[lane_]; }
  bool settle(Diagnostics& diags) const { return lane_ >= 0 || stream_.sync(diags); }
  Stream stream_;
  Stream lanes_[2];
  int lane_ = -1;
  std::vector<void*> events_;  // cudaEvent_t, reused run after run (marks count from 0 per run)
  size_t marks_ = 0;
  bool undrained_ = false;  // a drain timed out: the lanes may still hold work whose events are pending
  std::string name_;
};

}  // namespace sg::cuda
