#include "exec/executor/host_device.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "exec/attention/attention_exec.hpp"
#include "exec/executor/kernels.hpp"

namespace sg::exec {

namespace {

// What ipc_export writes: this process, the memfd's descriptor in it and the mapped length.
struct HostIpcHandle {
  uint64_t magic = 0x5347495043ull;  // "SGIPC": not a handle of another device
  int64_t pid = 0;
  int64_t fd = -1;
  uint64_t len = 0;
};
static_assert(sizeof(HostIpcHandle) <= DeviceOps::kIpcHandleBytes);

}  // namespace

HostDeviceOps::~HostDeviceOps() {
  for (auto& [p, m] : maps_) {
    munmap(const_cast<unsigned char*>(p), m.len);
    if (m.fd >= 0) close(m.fd);
  }
}

unsigned char* HostDeviceOps::allocate(size_t bytes, Diagnostics& diags) {
  if (!shared_) return allocate_private(bytes, diags);
  // A memfd mapped shared: page-aligned and zeroed, and another process can map the same pages.
  size_t n = bytes ? bytes : 1;
  int fd = memfd_create("stepgraph-device", MFD_CLOEXEC);
  if (fd < 0) return diags.fail(std::string("memfd_create: ") + std::strerror(errno)), nullptr;
  if (ftruncate(fd, static_cast<off_t>(n)) != 0) {
    diags.fail(std::string("ftruncate of shared memory (") + std::to_string(n) + " bytes): " + std::strerror(errno));
    close(fd);
    return nullptr;
  }
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    diags.fail(std::string("mmap of shared memory (") + std::to_string(n) + " bytes): " + std::strerror(errno));
    close(fd);
    return nullptr;
  }
  auto* q = static_cast<unsigned char*>(p);
  maps_[q] = Mapping{fd, n};
  return q;
}

bool HostDeviceOps::ipc_export(const unsigned char* base, unsigned char* handle, Diagnostics& diags) {
  auto it = maps_.find(base);
  if (it == maps_.end() || it->second.fd < 0) return diags.fail("memory not allocated shared by this stand-in device");
  HostIpcHandle h;
  h.pid = getpid();
  h.fd = it->second.fd;
  h.len = it->second.len;
  std::memset(handle, 0, kIpcHandleBytes);
  std::memcpy(handle, &h, sizeof h);
  return true;
}

unsigned char* HostDeviceOps::ipc_open(const unsigned char* handle, size_t bytes, Diagnostics& diags) {
  HostIpcHandle h;
  std::memcpy(&h, handle, sizeof h);
  if (h.magic != HostIpcHandle{}.magic) return diags.fail("not a handle of the stand-in device"), nullptr;
  if (h.len < bytes)
    return diags.fail("a shared allocation of " + std::to_string(h.len) + " bytes, " + std::to_string(bytes) + " expected"), nullptr;
  std::string path = "/proc/" + std::to_string(h.pid) + "/fd/" + std::to_string(h.fd);
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return diags.fail("open " + path + ": " + std::strerror(errno)), nullptr;
  void* p = mmap(nullptr, h.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) return diags.fail("mmap " + path + ": " + std::strerror(e)), nullptr;
  auto* q = static_cast<unsigned char*>(p);
  maps_[q] = Mapping{-1, h.len};
  return q;
}

void HostDeviceOps::ipc_close(unsigned char* p, size_t bytes) {
  (void)bytes;
  auto it = maps_.find(p);
  if (it == maps_.end() || it->second.fd >= 0) return;
  munmap(p, it->second.len);
  maps_.erase(it);
}

unsigned char* HostDeviceOps::allocate_private(size_t bytes, Diagnostics& diags) {
  // 64-byte aligned and zeroed, as cudaMalloc + cudaMemset would give.
  size_t n = (bytes + 63) / 64 * 64;
  auto* p = static_cast<unsigned char*>(std::aligned_alloc(64, n ? n : 64));
  if (!p) {
    diags.fail("out of memory (" + std::to_string(bytes) + " bytes)");
    return nullptr;
  }
  std::memset(p, 0, n ? n : 64);
  return p;
}

void HostDeviceOps::release(unsigned char* p) {
  auto it = maps_.find(p);
  if (it == maps_.end()) return std::free(p);
  munmap(p, it->second.len);
  if (it->second.fd >= 0) close(it->second.fd);
  maps_.erase(it);
}

bool HostDeviceOps::to_host(unsigned char* host, const unsigned char* dev, size_t bytes, Diagnostics& diags) {
  if (faulty("to_host", diags)) return false;
  return defer([=](Diagnostics&) { return std::memcpy(host, dev, bytes), true; }, diags);
}

bool HostDeviceOps::to_device(unsigned char* dev, const unsigned char* host, size_t bytes, Diagnostics& diags) {
  if (faulty("to_device", diags)) return false;
  return defer([=](Diagnostics&) { return std::memcpy(dev, host, bytes), true; }, diags);
}

bool HostDeviceOps::copy(unsigned char* dst, const unsigned char* src, size_t bytes, Diagnostics& diags) {
  if (faulty("copy", diags)) return false;
  return defer([=](Diagnostics&) { return std::memmove(dst, src, bytes), true; }, diags);
}

bool HostDeviceOps::reduce(DType t, ReduceOp op, unsigned char* dst, const unsigned char* src, size_t n, Diagnostics& diags) {
  if (faulty("reduce", diags)) return false;
  return defer([=](Diagnostics&) { return reduce_into(t, op, dst, src, n), true; }, diags);
}

bool HostDeviceOps::attention_tile(const AttentionTile& t, Diagnostics& diags) {
  return defer(
      [=](Diagnostics&) {
        AttentionLayout a;
        a.bf16 = t.bf16;
        a.dim = t.dim;
        a.scale = t.scale;
        a.tile = TileShape{t.batch, t.heads, t.rows_q, t.rows_k, t.dim};
        run_attention_tile(a, t.backward, t.causal, t.q, t.kv, t.out0, t.out1);
        return true;
      },
      diags);
}

bool HostDeviceOps::attention_merge(unsigned char* acc, const unsigned char* part, size_t rows, uint32_t dim, Diagnostics& diags) {
  return defer(
      [=](Diagnostics&) {
        attn_merge(reinterpret_cast<float*>(acc), reinterpret_cast<const float*>(part),
                   TileShape{1, 1, static_cast<uint32_t>(rows), 0, dim});
        return true;
      },
      diags);
}

bool HostDeviceOps::defer(std::function<bool(Diagnostics&)> fn, Diagnostics& diags) {
  if (!lazy_ || lane_ < 0) return fn(diags);
  q_[lane_].push_back(Item{Item::Work, 0, std::move(fn)});
  return true;
}

bool HostDeviceOps::select_lane(int k, double timeout_s, Diagnostics& diags) {
  (void)timeout_s;  // the stand-in transport's groups time themselves
  if (!lazy_) return true;
  if (k >= 0) {
    if (lane_ < 0) reached_.clear();  // a new run of lanes: marks count from 0
    lane_ = k > 0 ? 1 : 0;
    return true;
  }
  if (lane_ < 0) return true;
  lane_ = -1;
  return drain(diags);
}

bool HostDeviceOps::mark(int& id, Diagnostics& diags) {
  (void)diags;
  id = static_cast<int>(reached_.size());
  reached_.push_back(0);
  if (!lazy_ || lane_ < 0) reached_.back() = 1;
  else q_[lane_].push_back(Item{Item::Mark, id, nullptr});
  return true;
}

bool HostDeviceOps::wait_mark(int id, Diagnostics& diags) {
  if (id < 0 || static_cast<size_t>(id) >= reached_.size()) return diags.fail("a wait for a mark not made");
  if (lazy_ && lane_ >= 0) q_[lane_].push_back(Item{Item::Wait, id, nullptr});
  return true;
}

bool HostDeviceOps::mark_reached(int id) const {
  return id >= 0 && static_cast<size_t>(id) < reached_.size() && reached_[static_cast<size_t>(id)];
}

bool HostDeviceOps::progress(Diagnostics& diags) {
  if (!lazy_) return true;
  return run_items(1 + next_random() % 4, false, diags);  // a few items per poll: the device lags the host by a varying amount
}

// One item at a time from a lane drawn at random among those that may go, as two streams
// interleave on a GPU.
bool HostDeviceOps::run_items(uint64_t budget, bool all, Diagnostics& diags) {
  for (; budget > 0; --budget) {
    bool can[2];
    for (int k = 0; k < 2; ++k) {
      const std::deque<Item>& q = q_[k];
      can[k] = !q.empty() && (q.front().kind != Item::Wait || reached_[static_cast<size_t>(q.front().id)]);
    }
    if (!can[0] && !can[1]) {
      if (!all || (q_[0].empty() && q_[1].empty())) return true;
      diags.fail("both lanes wait for marks that are never reached");
      q_[0].clear(), q_[1].clear();
      return false;
    }
    int k = can[0] && can[1] ? static_cast<int>(next_random() & 1) : (can[0] ? 0 : 1);
    Item it = std::move(q_[k].front());
    q_[k].pop_front();
    if (it.kind == Item::Mark) reached_[static_cast<size_t>(it.id)] = 1;
    if (it.kind == Item::Work && !it.fn(diags)) {
      q_[0].clear(), q_[1].clear();
      return false;
    }
  }
  return true;
}

}  // namespace sg::exec
