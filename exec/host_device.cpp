#include "exec/host_device.hpp"

#include <cstdlib>
#include <cstring>

#include "exec/attention_exec.hpp"
#include "exec/kernels.hpp"

namespace sg::exec {

unsigned char* HostDeviceOps::allocate(size_t bytes, std::string& err) {
  // 64-byte aligned and zeroed, as cudaMalloc + cudaMemset would give.
  size_t n = (bytes + 63) / 64 * 64;
  auto* p = static_cast<unsigned char*>(std::aligned_alloc(64, n ? n : 64));
  if (!p) {
    err = "out of memory (" + std::to_string(bytes) + " bytes)";
    return nullptr;
  }
  std::memset(p, 0, n ? n : 64);
  return p;
}

void HostDeviceOps::release(unsigned char* p) { std::free(p); }

bool HostDeviceOps::to_host(unsigned char* host, const unsigned char* dev, size_t bytes, std::string&) {
  std::memcpy(host, dev, bytes);
  return true;
}

bool HostDeviceOps::to_device(unsigned char* dev, const unsigned char* host, size_t bytes, std::string&) {
  std::memcpy(dev, host, bytes);
  return true;
}

bool HostDeviceOps::copy(unsigned char* dst, const unsigned char* src, size_t bytes, std::string&) {
  std::memmove(dst, src, bytes);
  return true;
}

bool HostDeviceOps::reduce(DType t, ReduceOp op, unsigned char* dst, const unsigned char* src, size_t n, std::string&) {
  reduce_into(t, op, dst, src, n);
  return true;
}

bool HostDeviceOps::attention_tile(const AttentionTile& t, std::string&) {
  AttentionLayout a;
  a.bf16 = t.bf16;
  a.dim = t.dim;
  a.scale = t.scale;
  a.tile = TileShape{t.batch, t.heads, t.rows_q, t.rows_k, t.dim};
  run_attention_tile(a, t.backward, t.causal, t.q, t.kv, t.out0, t.out1);
  return true;
}

bool HostDeviceOps::attention_merge(unsigned char* acc, const unsigned char* part, size_t rows, uint32_t dim, std::string&) {
  attn_merge(reinterpret_cast<float*>(acc), reinterpret_cast<const float*>(part), TileShape{1, 1, static_cast<uint32_t>(rows), 0, dim});
  return true;
}

}  // namespace sg::exec
