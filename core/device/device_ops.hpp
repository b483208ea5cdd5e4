// Where an executor's buffers live when they are not in host memory: the memory and arithmetic
// of a device, behind one interface. In core/ because two backends meet here and backends know
// only core/: the MPI executor (exec/) runs its step loop on a DeviceOps, the CUDA path
// (exec/cuda) implements it, and the command (cli/) hands one to the other.
//
// Every call is synchronous (it returns when the device has done it): the executor's staged
// transport copies a range to host memory before MPI reads it and back after MPI wrote it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dsl/ast.hpp"
#include "core/graph/step_graph.hpp"

namespace sg {

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  // What it is, for messages: "NVIDIA H100 80GB HBM3 (device 0)".
  virtual std::string name() const = 0;
  // Device memory of `bytes` (zeroed); nullptr with err set when it cannot.
  virtual unsigned char* allocate(size_t bytes, std::string& err) = 0;
  virtual void release(unsigned char* p) = 0;
  // Host memory MPI reads and writes (pinned where the device has such a thing).
  virtual unsigned char* allocate_host(size_t bytes, std::string& err) = 0;
  virtual void release_host(unsigned char* p) = 0;
  virtual bool to_host(unsigned char* host, const unsigned char* dev, size_t bytes, std::string& err) = 0;
  virtual bool to_device(unsigned char* dev, const unsigned char* host, size_t bytes, std::string& err) = 0;
  virtual bool copy(unsigned char* dst, const unsigned char* src, size_t bytes, std::string& err) = 0;
  // dst[i] = dst[i] op src[i] for n elements of type t, on the device.
  virtual bool reduce(DType t, ReduceOp op, unsigned char* dst, const unsigned char* src, size_t n, std::string& err) = 0;

  // One attention tile on device memory, in the chunk layouts of exec/attention_exec.hpp:
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
  virtual bool attention_tile(const AttentionTile& t, std::string& err) {
    (void)t;
    err = name() + " has no attention kernels";
    return false;
  }
  // acc ⊕= part over `rows` O|lse rows of dim + 1 floats (the online-softmax merge).
  virtual bool attention_merge(unsigned char* acc, const unsigned char* part, size_t rows, uint32_t dim, std::string& err) {
    (void)acc, (void)part, (void)rows, (void)dim;
    err = name() + " has no attention kernels";
    return false;
  }
};

}  // namespace sg
