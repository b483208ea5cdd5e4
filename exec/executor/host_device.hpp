// A DeviceOps whose "device" memory is ordinary host memory: the GPU path's staged transport
// (exec/executor_*.cpp in device mode: ranges copied to host mirrors before MPI reads them and back
// after MPI wrote them, copies and reductions on the device side) run and checked on a machine
// without a GPU. `exec --device host-staged` selects it; its results must equal `--device cpu`'s.
//
// With lanes (set_lanes) it behaves like a GPU: calls on a lane are queued, not done, and run a
// few at a time while the host polls (progress) and all when the lanes drain (select_lane(-1)),
// in an order drawn at random among the lanes that may go (a lane stops at a wait for a mark not
// yet reached). A missing wait between the lanes, or MPI touching memory before a mark was
// polled, then shows as wrong numbers in --check, as it would on a GPU.
//
// Shared (set_shared), its memory is what CUDA IPC gives a GPU's: each allocation a memfd mapped
// MAP_SHARED, exported as (pid, fd, length) and opened by another process of the node through
// /proc/<pid>/fd/<fd>, so the IPC transport's protocol runs and is checked without a GPU.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/device/device_ops.hpp"

namespace sg::exec {

class HostDeviceOps final : public DeviceOps {
 public:
  // Lanes that defer their work, run in an order drawn from `seed`.
  void set_lanes(uint64_t seed) {
    lazy_ = true;
    rng_ = seed * 0x9E3779B97F4A7C15ull + 1;
  }
  // Device memory other processes of the node can open (ipc_export / ipc_open).
  void set_shared() { shared_ = true; }
  // Fault injection for the tests (STEPGRAPH_DEVICE_FAULT): every call of this kind ("reduce",
  // "copy", "to_host" or "to_device") fails when it is made, as a kernel launch that the device
  // refuses does, so that the failure is reported at the statement of the step that made it.
  void inject_fault(std::string kind) { fault_ = std::move(kind); }
  ~HostDeviceOps() override;
  std::string name() const override { return "host memory standing in for a device"; }
  unsigned char* allocate(size_t bytes, Diagnostics& diags) override;
  void release(unsigned char* p) override;
  unsigned char* allocate_host(size_t bytes, Diagnostics& diags) override { return allocate_private(bytes, diags); }
  void release_host(unsigned char* p) override { release(p); }
  bool ipc_export(const unsigned char* base, unsigned char* handle, Diagnostics& diags) override;
  unsigned char* ipc_open(const unsigned char* handle, size_t bytes, Diagnostics& diags) override;
  void ipc_close(unsigned char* p, size_t bytes) override;
  bool to_host(unsigned char* host, const unsigned char* dev, size_t bytes, Diagnostics& diags) override;
  bool to_device(unsigned char* dev, const unsigned char* host, size_t bytes, Diagnostics& diags) override;
  bool copy(unsigned char* dst, const unsigned char* src, size_t bytes, Diagnostics& diags) override;
  bool reduce(DType t, ReduceOp op, unsigned char* dst, const unsigned char* src, size_t n, Diagnostics& diags) override;
  bool attention_tile(const AttentionTile& t, Diagnostics& diags) override;  // the CPU tiles (exec/attention/attention_kernels)
  bool attention_merge(unsigned char* acc, const unsigned char* part, size_t rows, uint32_t dim, Diagnostics& diags) override;
  bool select_lane(int k, double timeout_s, Diagnostics& diags) override;
  bool mark(int& id, Diagnostics& diags) override;
  bool wait_mark(int id, Diagnostics& diags) override;
  bool mark_reached(int id) const override;
  bool run_on_lane(std::function<bool(Diagnostics&)> fn, Diagnostics& diags) override { return defer(std::move(fn), diags); }
  bool progress(Diagnostics& diags) override;

 private:
  struct Item {
    enum Kind : uint8_t { Work, Mark, Wait } kind = Work;
    int id = 0;
    std::function<bool(Diagnostics&)> fn;
  };
  // Runs fn now (no lane, or lanes not deferred) or queues it on the current lane.
  bool defer(std::function<bool(Diagnostics&)> fn, Diagnostics& diags);
  // Runs up to `budget` items (all: until both lanes are empty or stopped at waits), each from a
  // lane drawn at random among those that may go. False, with the failure in diags, when an item failed, or when
  // `all` and both lanes wait for marks that are never reached.
  bool run_items(uint64_t budget, bool all, Diagnostics& diags);
  bool drain(Diagnostics& diags) { return run_items(UINT64_MAX, true, diags); }
  uint64_t next_random() {
    rng_ ^= rng_ << 13, rng_ ^= rng_ >> 7, rng_ ^= rng_ << 17;  // xorshift64
    return rng_;
  }
  unsigned char* allocate_private(size_t bytes, Diagnostics& diags);
  bool faulty(const char* kind, Diagnostics& diags) const {
    if (fault_ != kind) return false;
    diags.fail(std::string("an injected fault (STEPGRAPH_DEVICE_FAULT=") + kind + ")");
    return true;
  }
  std::string fault_;
  struct Mapping {
    int fd = -1;     // the memfd (own allocations; kept open so that peers can open it), else -1
    size_t len = 0;  // the mapped length
  };
  bool shared_ = false;
  std::map<const unsigned char*, Mapping> maps_;  // own shared allocations and opened peer memory
  bool lazy_ = false;
  int lane_ = -1;
  std::deque<Item> q_[2];
  std::vector<uint8_t> reached_;
  uint64_t rng_ = 1;
};

}  // namespace sg::exec
