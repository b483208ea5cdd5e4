#include "exec/host_device.hpp"

#include <cstdlib>
#include <cstring>

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

}  // namespace sg::exec
