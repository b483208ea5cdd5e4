// Where an executor's buffers live when they are not in host memory: the memory and arithmetic
// of a device, behind one interface. In core/ because two backends meet here and backends know
// only core/: the MPI executor (exec/) runs its step loop on a DeviceOps, the CUDA path
// (exec/cuda) implements it, and the command (cli/) hands one to the other.
//
// By default every call is synchronous (it returns when the device has done it). An executor
// that selects a lane (select_lane) gets asynchronous calls instead: they are enqueued on that
// lane's stream and return at once, and marks (events) order one lane after another. The MPI
// executor does so on both of its paths: the dataflow loop (staged and CUDA-aware transports)
// puts local work on lane 0 and the copies around MPI on lane 1, and polls marks before MPI
// touches memory; the stream-ordered transport (NCCL, core/device/stream_comm.hpp) issues
// everything on the lanes.
//
// Errors: a call that fails reports into `diags` with Diagnostics::fail (no location: the device
// does not know which statement it serves) and returns false or nullptr; the executor places the
// failure at the statement of the step it was running (Diagnostics::locate_from).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "core/base/kinds.hpp"
#include "core/dsl/diagnostics.hpp"
#include "core/graph/step_graph.hpp"

namespace sg {

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  // What it is, for messages: "NVIDIA H100 80GB HBM3 (device 0)".
  virtual std::string name() const = 0;
  // Device memory of `bytes` (zeroed); nullptr, with the failure in diags, when it cannot.
  virtual unsigned char* allocate(size_t bytes, Diagnostics& diags) = 0;
  virtual void release(unsigned char* p) = 0;
  // Host memory MPI reads and writes (pinned where the device has such a thing).
  virtual unsigned char* allocate_host(size_t bytes, Diagnostics& diags) = 0;
  virtual void release_host(unsigned char* p) = 0;
  virtual bool to_host(unsigned char* host, const unsigned char* dev, size_t bytes, Diagnostics& diags) = 0;
  virtual bool to_device(unsigned char* dev, const unsigned char* host, size_t bytes, Diagnostics& diags) = 0;
  virtual bool copy(unsigned char* dst, const unsigned char* src, size_t bytes, Diagnostics& diags) = 0;
  // `rows` rows of `width` bytes, row i from src + i·spitch to dst + i·dpitch (device memory, not
  // overlapping): how exec moves attention items between a declared layout and the kernels'
  // (cudaMemcpy2D's shape). Default: a copy a row.
  virtual bool copy_2d(unsigned char* dst, size_t dpitch, const unsigned char* src, size_t spitch, size_t width, size_t rows,
                       Diagnostics& diags) {
    for (size_t i = 0; i < rows; ++i)
      if (!copy(dst + i * dpitch, src + i * spitch, width, diags)) return false;
    return true;
  }
  // dst[i] = dst[i] op src[i] for n elements of type t, on the device.
  virtual bool reduce(DType t, ReduceOp op, unsigned char* dst, const unsigned char* src, size_t n, Diagnostics& diags) = 0;

  // One attention tile on device memory, in the chunk layouts of exec/attention/attention_exec.hpp:
  // forward, out0 = O|lse; backward, q is the bundle (with bf16: q, dO as bf16, lse, D as fp32),
  // out0 = dQ, out1 = dKV. planes = batch × heads of one item.
  struct AttentionTile {
    const unsigned char* q = nullptr;
    const unsigned char* kv = nullptr;
    unsigned char* out0 = nullptr;
    unsigned char* out1 = nullptr;
    uint32_t batch = 0, heads = 0, rows_q = 0, rows_k = 0, dim = 0;
    bool bf16 = false, backward = false, causal = false;
    float scale = 0;
  };
  virtual bool attention_tile(const AttentionTile& t, Diagnostics& diags) {
    (void)t;
    return diags.fail(name() + " has no attention kernels");
  }
  // ---- memory another process on the node maps (CUDA IPC): the IPC transport ----
  // An allocation of allocate() exported as a handle of kIpcHandleBytes bytes that another
  // process of this node opens (cudaIpcGetMemHandle / cudaIpcOpenMemHandle); copy() then reads
  // from the opened pointer. Default: the device has no such thing.
  static constexpr size_t kIpcHandleBytes = 64;
  virtual bool ipc_export(const unsigned char* base, unsigned char* handle, Diagnostics& diags) {
    (void)base, (void)handle;
    return diags.fail(name() + " cannot share its memory with other processes");
  }
  // `bytes`: the allocation's size, as its owner gave it.
  virtual unsigned char* ipc_open(const unsigned char* handle, size_t bytes, Diagnostics& diags) {
    (void)handle, (void)bytes;
    diags.fail(name() + " cannot open another process's memory");
    return nullptr;
  }
  virtual void ipc_close(unsigned char* p, size_t bytes) { (void)p, (void)bytes; }

  // ---- lanes: two in-order streams per process, 0 for local work and 1 for transfers ----
  // select_lane(k): later calls go to lane k's stream and return at once; select_lane(-1): back
  // to synchronous calls, after waiting for both lanes (at most timeout_s; false with a failure naming
  // the first mark not reached). A device whose calls are synchronous anyway (host memory) keeps
  // every order trivially and needs none of this: the defaults.
  virtual bool select_lane(int k, double timeout_s, Diagnostics& diags) {
    (void)k, (void)timeout_s, (void)diags;
    return true;
  }
  // The lane's native stream (a cudaStream_t), for a transport that enqueues on it; else null.
  virtual void* lane_stream(int k) const {
    (void)k;
    return nullptr;
  }
  // A mark after everything enqueued so far on the current lane; `id` names it. Ids grow in the
  // order marks are made (per run of lanes, from 0), so on one lane a larger id is a later mark:
  // the executor keeps only the newest mark per lane that a step needs.
  virtual bool mark(int& id, Diagnostics& diags) {
    (void)diags;
    id = 0;
    return true;
  }
  // The current lane waits (on the device, not the host) until mark `id` is reached.
  virtual bool wait_mark(int id, Diagnostics& diags) {
    (void)id, (void)diags;
    return true;
  }
  // Whether mark `id` has been reached (the dataflow loop polls it before MPI reads or writes
  // memory that lane work touches; stall reports).
  virtual bool mark_reached(int id) const {
    (void)id;
    return true;
  }
  // Called while the host polls marks: a device that defers its lanes (the stand-in) runs some
  // of their work; a GPU runs on its own and reports a failure of work already enqueued.
  virtual bool progress(Diagnostics& diags) {
    (void)diags;
    return true;
  }
  // Host code run in the current lane's order (cudaLaunchHostFunc's idea): the stand-in
  // transport's groups, when the device defers its work. Default: run now.
  virtual bool run_on_lane(std::function<bool(Diagnostics&)> fn, Diagnostics& diags) { return fn(diags); }

  // acc ⊕= part over `rows` O|lse rows of dim + 1 floats (the online-softmax merge).
  virtual bool attention_merge(unsigned char* acc, const unsigned char* part, size_t rows, uint32_t dim, Diagnostics& diags) {
    (void)acc, (void)part, (void)rows, (void)dim;
    return diags.fail(name() + " has no attention kernels");
  }
};

}  // namespace sg
