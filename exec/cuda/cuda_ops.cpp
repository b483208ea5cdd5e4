#include "exec/cuda/cuda_ops.hpp"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "exec/cuda/attention.cuh"
#include "exec/cuda/attention_gemm.cuh"

namespace sg::cuda {

namespace {

bool ok(cudaError_t e, const char* what, Diagnostics& diags) { return cuda_ok(static_cast<int>(e), what, diags); }

}  // namespace

CudaOps::~CudaOps() {
  if (bundle_) cudaFree(bundle_);
  if (gemm_ws_) cudaFree(gemm_ws_);
  if (cudnn_out_) cudaFree(cudnn_out_);
  attn_gemm_handle_free(cublas_);
  for (void* e : events_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
}

bool CudaOps::open(int d, const std::string& name, Diagnostics& diags) {
  name_ = name + " (device " + std::to_string(d) + ")";
  const char* kernel = std::getenv("STEPGRAPH_ATTN");
  gemm_ = kernel && std::string(kernel) == "gemm";
  cudnn_ = kernel && std::string(kernel) == "cudnn";
  return use_device(d, diags) && stream_.create(diags) && lanes_[0].create(diags) && lanes_[1].create(diags);
}

unsigned char* CudaOps::allocate(size_t bytes, Diagnostics& diags) {
  void* p = nullptr;
  if (!ok(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc", diags)) return nullptr;
  // Zeroed on this process's stream (non-blocking: a plain cudaMemset would not be ordered
  // before the work that follows on it), and waited for.
  if (!ok(cudaMemsetAsync(p, 0, bytes, static_cast<cudaStream_t>(stream_.handle())), "cudaMemsetAsync", diags) || !stream_.sync(diags)) {
    cudaFree(p);
    return nullptr;
  }
  return static_cast<unsigned char*>(p);
}

void CudaOps::release(unsigned char* p) { cudaFree(p); }

bool CudaOps::ipc_export(const unsigned char* base, unsigned char* handle, Diagnostics& diags) {
  cudaIpcMemHandle_t h;
  static_assert(sizeof h <= kIpcHandleBytes);
  if (!ok(cudaIpcGetMemHandle(&h, const_cast<unsigned char*>(base)), "cudaIpcGetMemHandle", diags)) return false;
  std::memset(handle, 0, kIpcHandleBytes);
  std::memcpy(handle, &h, sizeof h);
  return true;
}

unsigned char* CudaOps::ipc_open(const unsigned char* handle, size_t bytes, Diagnostics& diags) {
  (void)bytes;  // (the handle names the whole allocation)
  cudaIpcMemHandle_t h;
  std::memcpy(&h, handle, sizeof h);
  void* p = nullptr;
  if (!ok(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle", diags)) return nullptr;
  return static_cast<unsigned char*>(p);
}

void CudaOps::ipc_close(unsigned char* p, size_t bytes) {
  (void)bytes;
  cudaIpcCloseMemHandle(p);
}

unsigned char* CudaOps::allocate_host(size_t bytes, Diagnostics& diags) {
  void* p = nullptr;
  if (!ok(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault), "cudaHostAlloc", diags)) return nullptr;
  return static_cast<unsigned char*>(p);
}

void CudaOps::release_host(unsigned char* p) { cudaFreeHost(p); }

bool CudaOps::to_host(unsigned char* host, const unsigned char* dev, size_t bytes, Diagnostics& diags) {
  return copy_to_host(host, dev, bytes, cur(), diags) && settle(diags);
}

bool CudaOps::to_device(unsigned char* dev, const unsigned char* host, size_t bytes, Diagnostics& diags) {
  return copy_to_device(dev, host, bytes, cur(), diags) && settle(diags);
}

bool CudaOps::copy(unsigned char* dst, const unsigned char* src, size_t bytes, Diagnostics& diags) {
  // A copy step may overlap its source (the CPU path uses memmove); cudaMemcpy does not promise
  // anything for overlapping ranges, so those go through a temporary.
  bool overlap = dst < src + bytes && src < dst + bytes && dst != src;
  if (!overlap) return copy_on_device(dst, src, bytes, cur(), diags) && settle(diags);
  unsigned char* tmp = allocate(bytes, diags);
  if (!tmp) return false;
  // (On a lane the temporary's cudaFree waits for the device: safe, since every rank issues its
  // transfers in one global order, and rare: copy steps seldom overlap their source.)
  bool ok = copy_on_device(tmp, src, bytes, cur(), diags) && copy_on_device(dst, tmp, bytes, cur(), diags) && cur().sync(diags);
  release(tmp);
  return ok;
}

bool CudaOps::copy_2d(unsigned char* dst, size_t dpitch, const unsigned char* src, size_t spitch, size_t width, size_t rows,
                      Diagnostics& diags) {
  return copy_2d_on_device(dst, dpitch, src, spitch, width, rows, cur(), diags) && settle(diags);
}

bool CudaOps::reduce(DType t, ReduceOp op, unsigned char* dst, const unsigned char* src, size_t n, Diagnostics& diags) {
  return device_reduce(t, op, dst, src, n, cur(), diags) && settle(diags);
}

bool CudaOps::grow(unsigned char*& p, size_t& have, size_t need, Diagnostics& diags) {
  if (need <= have) return true;
  if (p) release(p);
  p = allocate(need, diags);
  have = p ? need : 0;
  return p != nullptr;
}

bool CudaOps::attention_tile(const AttentionTile& t, Diagnostics& diags) {
  const uint32_t planes = t.batch * t.heads;
  void* st = cur().handle();
  int rc = 0;
  if (!t.backward && cudnn_ && t.bf16) {  // cuDNN's fused tile, then its (O_t, lse) merged into O|lse
    if (!cudnn_attn_) cudnn_attn_ = std::make_unique<CudnnAttention>();
    const size_t rows = size_t{planes} * t.rows_q, o_bytes = rows * t.dim * 2;
    if (!grow(cudnn_out_, cudnn_out_bytes_, o_bytes + rows * 4, diags)) return false;
    auto* lse = reinterpret_cast<float*>(cudnn_out_ + o_bytes);
    CudnnAttention::Shape s{planes, t.rows_q, t.rows_k, t.dim, false, t.causal, t.scale};
    if (!cudnn_attn_->forward(s, t.q, t.kv, cudnn_out_, lse, st, diags)) return false;
    rc = launch_attn_merge_lowp(reinterpret_cast<float*>(t.out0), cudnn_out_, false, lse, rows, t.dim, st);
    return ok(static_cast<cudaError_t>(rc), "the merge of cuDNN's attention tile", diags) && settle(diags);
  }
  if (t.backward && cudnn_ && t.bf16) {
    // The bundle unpacked (q, dO and an O' carrying D, the lse), cuDNN's backward into the tile's
    // own dQ, dK, dV (bf16), and those added into the fp32 accumulators.
    if (!cudnn_attn_) cudnn_attn_ = std::make_unique<CudnnAttention>();
    const size_t rows = size_t{planes} * t.rows_q, nq = rows * t.dim, nk = size_t{planes} * t.rows_k * t.dim;
    auto up = [](size_t n) { return (n + 255) / 256 * 256; };
    const size_t at_do = up(nq * 2), at_o = at_do + up(nq * 2), at_lse = at_o + up(nq * 2), at_dq = at_lse + up(rows * 4);
    const size_t at_dk = at_dq + up(nq * 2), at_dv = at_dk + nk * 2, total = at_dv + nk * 2;
    if (!grow(cudnn_out_, cudnn_out_bytes_, total, diags)) return false;
    unsigned char* w = cudnn_out_;
    auto* lse = reinterpret_cast<float*>(w + at_lse);
    rc = launch_unpack_bundle_lowp(t.q, w, w + at_do, w + at_o, lse, rows, t.dim, st);
    if (!ok(static_cast<cudaError_t>(rc), "unpacking the bundle for cuDNN's attention backward", diags)) return false;
    CudnnAttention::Shape s{planes, t.rows_q, t.rows_k, t.dim, false, t.causal, t.scale};
    if (!cudnn_attn_->backward(s, w, t.kv, w + at_o, w + at_do, lse, w + at_dq, w + at_dk, w + at_dv, st, diags)) return false;
    rc = launch_add_lowp(reinterpret_cast<float*>(t.out0), w + at_dq, false, nq, st);
    if (rc == 0) rc = launch_add_lowp(reinterpret_cast<float*>(t.out1), w + at_dk, false, 2 * nk, st);
    return ok(static_cast<cudaError_t>(rc), "adding cuDNN's attention gradients", diags) && settle(diags);
  }
  if (!t.backward && gemm_) {
    if (!cublas_ && !attn_gemm_handle(&cublas_, diags)) return false;
    const uint32_t slab = attn_gemm_slab(planes, t.rows_q, t.rows_k, t.dim, t.bf16);
    if (!grow(gemm_ws_, gemm_ws_bytes_, attn_gemm_workspace(planes, slab, t.rows_k, t.dim, t.bf16), diags)) return false;
    rc = launch_attn_fwd_gemm(cublas_, gemm_ws_, slab, t.q, t.kv, reinterpret_cast<float*>(t.out0), t.bf16, planes, t.rows_q, t.rows_k,
                              t.dim, t.causal, t.scale, 0, st);
    if (rc >= 10000) return diags.fail("the cuBLAS attention tile: cuBLAS status " + std::to_string(rc - 10000));
    return ok(static_cast<cudaError_t>(rc), "the cuBLAS attention tile", diags) && settle(diags);
  }
  if (t.backward && gemm_) {  // the tile's own bundle (q, dO in the input type): no widening
    if (!cublas_ && !attn_gemm_handle(&cublas_, diags)) return false;
    const uint32_t slab = attn_gemm_bwd_slab(planes, t.rows_q, t.rows_k, t.bf16);
    if (!grow(gemm_ws_, gemm_ws_bytes_, attn_gemm_bwd_workspace(planes, slab, t.rows_k, t.bf16), diags)) return false;
    rc = launch_attn_bwd_gemm(cublas_, gemm_ws_, slab, t.q, t.kv, reinterpret_cast<float*>(t.out0), reinterpret_cast<float*>(t.out1),
                              t.bf16, planes, t.rows_q, t.rows_k, t.dim, t.causal, t.scale, 0, st);
    if (rc >= 10000) return diags.fail("the cuBLAS attention backward: cuBLAS status " + std::to_string(rc - 10000));
    return ok(static_cast<cudaError_t>(rc), "the cuBLAS attention backward", diags) && settle(diags);
  }
  if (!t.backward) {
    rc = launch_attn_fwd(t.q, t.kv, reinterpret_cast<float*>(t.out0), t.bf16, planes, t.rows_q, t.rows_k, t.dim, t.causal, t.scale, 0, st);
  } else {
    const float* bundle = reinterpret_cast<const float*>(t.q);
    if (t.bf16) {  // q, dO as bf16 and lse, D as fp32 per row: widened to the kernel's fp32 bundle
      if (!grow(bundle_, bundle_bytes_, size_t{planes} * t.rows_q * (2 * size_t{t.dim} + 2) * 4, diags)) return false;
      rc = launch_widen_bundle(t.q, reinterpret_cast<float*>(bundle_), size_t{planes} * t.rows_q, t.dim, st);
      bundle = reinterpret_cast<const float*>(bundle_);
    }
    if (rc == 0)
      rc = launch_attn_bwd(bundle, t.kv, t.bf16, reinterpret_cast<float*>(t.out0), reinterpret_cast<float*>(t.out1), planes, t.rows_q,
                           t.rows_k, t.dim, t.causal, t.scale, 0, st);
  }
  return ok(static_cast<cudaError_t>(rc), "the attention kernel", diags) && settle(diags);
}

bool CudaOps::attention_merge(unsigned char* acc, const unsigned char* part, size_t rows, uint32_t dim, Diagnostics& diags) {
  return ok(static_cast<cudaError_t>(
                launch_attn_merge(reinterpret_cast<float*>(acc), reinterpret_cast<const float*>(part), rows, dim, cur().handle())),
            "the attention merge kernel", diags) &&
         settle(diags);
}

bool CudaOps::select_lane(int k, double timeout_s, Diagnostics& diags) {
  if (k >= 0) {
    if (lane_ < 0 && undrained_) {
      // The last drain timed out: reusing its events while their work is queued would let a
      // new run see an old mark as its own. Only once both lanes are idle.
      for (const Stream& l : lanes_) {
        cudaError_t e = cudaStreamQuery(static_cast<cudaStream_t>(l.handle()));
        if (e == cudaErrorNotReady) return diags.fail("the device's streams still hold the work of a run that did not finish");
        if (!ok(e, "a device stream", diags)) return false;
      }
      undrained_ = false;
    }
    if (lane_ < 0) marks_ = 0;  // a new run of lanes: the events are free again
    lane_ = k > 0 ? 1 : 0;
    return true;
  }
  if (lane_ < 0) return true;
  lane_ = -1;  // on every way out: later calls are synchronous again
  // Both lanes drained, polled so that a transfer that never completes (a peer that is gone)
  // becomes a report instead of a hang.
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    cudaError_t a = cudaStreamQuery(static_cast<cudaStream_t>(lanes_[0].handle()));
    cudaError_t b = cudaStreamQuery(static_cast<cudaStream_t>(lanes_[1].handle()));
    if (a != cudaSuccess && a != cudaErrorNotReady) return ok(a, "the local-work stream", diags);
    if (b != cudaSuccess && b != cudaErrorNotReady) return ok(b, "the transfer stream", diags);
    if (a == cudaSuccess && b == cudaSuccess) break;
    if (timeout_s > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
      undrained_ = true;
      return diags.fail("the device's streams did not finish in " + std::to_string(static_cast<int>(timeout_s)) + " s");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return true;
}

bool CudaOps::mark(int& id, Diagnostics& diags) {
  if (marks_ == events_.size()) {
    cudaEvent_t e = nullptr;
    if (!ok(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate", diags)) return false;
    events_.push_back(e);
  }
  id = static_cast<int>(marks_++);
  return ok(cudaEventRecord(static_cast<cudaEvent_t>(events_[static_cast<size_t>(id)]), static_cast<cudaStream_t>(cur().handle())),
            "cudaEventRecord", diags);
}

bool CudaOps::wait_mark(int id, Diagnostics& diags) {
  if (id < 0 || static_cast<size_t>(id) >= marks_) return diags.fail("a wait for a mark not made");
  return ok(cudaStreamWaitEvent(static_cast<cudaStream_t>(cur().handle()), static_cast<cudaEvent_t>(events_[static_cast<size_t>(id)]), 0),
            "cudaStreamWaitEvent", diags);
}

bool CudaOps::mark_reached(int id) const {
  if (id < 0 || static_cast<size_t>(id) >= marks_) return false;
  return cudaEventQuery(static_cast<cudaEvent_t>(events_[static_cast<size_t>(id)])) == cudaSuccess;
}

// A kernel or copy that failed on a lane shows in its stream's status (sticky errors show on
// every query): reported here, so that a poll for a mark that will never be reached ends.
bool CudaOps::progress(Diagnostics& diags) {
  for (int k = 0; k < 2; ++k) {
    cudaError_t e = cudaStreamQuery(static_cast<cudaStream_t>(lanes_[k].handle()));
    if (e != cudaSuccess && e != cudaErrorNotReady) return ok(e, k == 0 ? "the local-work stream" : "the transfer stream", diags);
  }
  return true;
}

}  // namespace sg::cuda
