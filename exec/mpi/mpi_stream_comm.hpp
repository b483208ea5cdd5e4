// MPI standing in for NCCL (core/device/stream_comm.hpp) on host memory: `exec --device
// host-staged --transport nccl`. It keeps NCCL's rules, so that the executor's stream-ordered
// path is checked on machines without a GPU:
// - transfers between two ranks match by the order they are issued in (one tag for all), and a
//   receive must be given exactly the sender's byte count;
// - a group runs to completion before the next one starts (stricter than NCCL, whose groups only
//   may block: an order that cannot deadlock here cannot deadlock there);
// - with a device that defers its lanes (HostDeviceOps::set_lanes), a group runs in the transfer
//   lane's order, when the device gets to it, as NCCL's kernels do: a transfer reads and writes
//   device memory then, not when it was issued.
#pragma once
#include <mpi.h>

#include <functional>
#include <map>
#include <tuple>
#include <vector>

#include "core/device/device_ops.hpp"

#include "core/device/stream_comm.hpp"

namespace sg::exec {

class MpiStreamComm final : public StreamComm {
 public:
  // dev: where a group is run in lane order (DeviceOps::run_on_lane); null: at group_end.
  MpiStreamComm(MPI_Comm world, DeviceOps* dev);
  ~MpiStreamComm() override;
  MpiStreamComm(const MpiStreamComm&) = delete;
  MpiStreamComm& operator=(const MpiStreamComm&) = delete;
  std::string name() const override { return "MPI standing in for NCCL"; }
  bool add_group(uint32_t start, uint32_t count, uint32_t stride, bool member, int& id, Diagnostics& diags) override;
  bool group_start(Diagnostics& diags) override;
  bool group_end(double timeout_s, Diagnostics& diags) override;
  bool send(const unsigned char* p, size_t bytes, uint32_t peer, Diagnostics& diags) override;
  bool recv(unsigned char* p, size_t bytes, uint32_t peer, Diagnostics& diags) override;
  bool collective(const Coll& c, Diagnostics& diags) override;

 private:
  // Communicators by group (start, count, stride): one per group for the whole command, whatever
  // the number of executors (a --sweep makes one per size).
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, int> made_;
  bool started(int rc, const char* what, Diagnostics& diags);
  bool p2p(bool receive, unsigned char* p, size_t bytes, uint32_t peer, Diagnostics& diags);
  bool start_collective(const Coll& c, Diagnostics& diags);
  bool run_group(const std::vector<std::function<bool(Diagnostics&)>>& starts, double timeout_s, Diagnostics& diags);
  DeviceOps* dev_ = nullptr;
  std::vector<std::function<bool(Diagnostics&)>> pending_;  // the open group's transfers, to start when it runs
  MPI_Comm p2p_ = MPI_COMM_NULL;
  std::vector<MPI_Comm> comms_;
  std::vector<MPI_Request> reqs_;
  std::vector<size_t> want_;  // per request: a receive's byte count (SIZE_MAX: not a receive)
  std::vector<uint32_t> peer_;
  std::vector<std::vector<unsigned char>> scratch_;  // reduce-scatter inputs of the open group
};

}  // namespace sg::exec
