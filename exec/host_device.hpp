// A DeviceOps whose "device" memory is ordinary host memory: the GPU path's staged transport
// (exec/executor.cpp in device mode: ranges copied to host mirrors before MPI reads them and back
// after MPI wrote them, copies and reductions on the device side) run and checked on a machine
// without a GPU. `exec --device host-staged` selects it; its results must equal `--device cpu`'s.
#pragma once
#include "core/device/device_ops.hpp"

namespace sg::exec {

class HostDeviceOps final : public DeviceOps {
 public:
  std::string name() const override { return "host memory standing in for a device"; }
  unsigned char* allocate(size_t bytes, std::string& err) override;
  void release(unsigned char* p) override;
  unsigned char* allocate_host(size_t bytes, std::string& err) override { return allocate(bytes, err); }
  void release_host(unsigned char* p) override { release(p); }
  bool to_host(unsigned char* host, const unsigned char* dev, size_t bytes, std::string& err) override;
  bool to_device(unsigned char* dev, const unsigned char* host, size_t bytes, std::string& err) override;
  bool copy(unsigned char* dst, const unsigned char* src, size_t bytes, std::string& err) override;
  bool reduce(DType t, ReduceOp op, unsigned char* dst, const unsigned char* src, size_t n, std::string& err) override;
  bool attention_tile(const AttentionTile& t, std::string& err) override;  // the CPU tiles (exec/attention_kernels)
  bool attention_merge(unsigned char* acc, const unsigned char* part, size_t rows, uint32_t dim, std::string& err) override;
};

}  // namespace sg::exec
