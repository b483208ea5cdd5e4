// NCCL behind core's StreamComm (`exec --device cuda --transport nccl`): one communicator over
// the world, bootstrapped from a unique id that the command broadcasts over MPI, and one per
// group of the schedule (ncclCommSplit). Every call enqueues on the device's transfer lane
// (DeviceOps::lane_stream(1)); the executor issues them in the stream order's groups, so that
// NCCL's blocking groups cannot deadlock (core/graph/stream_order.hpp). Knows core/ only; MPI
// stays in the command.
#pragma once
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/device/stream_comm.hpp"

namespace sg::cuda {

class NcclComm final : public StreamComm {
 public:
  NcclComm() = default;
  ~NcclComm() override;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  // The bootstrap id (ncclGetUniqueId), made on one rank and handed to every rank's init.
  static bool unique_id(std::string& id, Diagnostics& diags);
  // Joins the world communicator as `rank` of `nranks`, on the current device, enqueuing on
  // `stream` (a cudaStream_t).
  bool init(const std::string& id, int nranks, int rank, void* stream, Diagnostics& diags);
  // A failed run: the communicators are aborted, not destroyed (a peer may be gone).
  void abort();
  std::string name() const override { return name_; }
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
  void* world_ = nullptr;     // ncclComm_t
  std::vector<void*> comms_;  // per add_group: ncclComm_t, or null where not a member
  void* stream_ = nullptr;
  void* scratch_ = nullptr;  // a float on the device for barriers
  std::string name_ = "NCCL";
};

// NCCL's version as text ("2.28.9"), or why it is not there.
std::string nccl_version();

}  // namespace sg::cuda
