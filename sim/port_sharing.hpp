// Ports that share their bandwidth: the analytic engine's model of the links where a rank's
// messages leave and enter (sim/analytic.cpp). Each message is a flow over two ports, the first
// and the last link of its route; a port's bandwidth is split equally among the flows crossing
// it, and a flow runs at
//
//   rate = min(cap, C_send / n_send, C_recv / n_recv)
//
// (cap: the route's bottleneck bandwidth; C: a port's bandwidth; n: the flows on it now). A flow
// alone runs at its cap, so a lone message takes L + k·G as in SimGrid; an incast of m flows
// into one port gives each C / m, as SimGrid's sharing does. The split is local (a flow slowed
// elsewhere leaves its unused share unclaimed), which keeps an update to the flows of the two
// ports concerned; max-min fairness over the whole network is SimGrid's job.
#pragma once
#include <cstdint>
#include <vector>

#include "core/graph/step_graph.hpp"

namespace sg::sim {

class PortSharing {
 public:
  // capacity[p]: port p's bandwidth in bytes/s; a port id >= capacity.size() is no port (a flow
  // crossing it is not limited there).
  explicit PortSharing(std::vector<double> capacity);

  // A flow of `bytes` for message `send`, limited to `cap` bytes/s, not sharing yet. Returns its id.
  uint32_t add(StepId send, uint32_t send_port, uint32_t recv_port, double bytes, double cap);

  // When a flow's end moved: it now ends at `t` (a new end supersedes the ones before, which
  // carry an older version).
  struct Update {
    uint32_t flow;
    uint32_t version;
    double t;
  };
  // The flow starts sharing its ports at `now` (after its route's latency). Appends the new ends
  // of every flow whose rate changed, this one included.
  void join(uint32_t flow, double now, std::vector<Update>& out);
  // The end of `flow` at `now` as scheduled with `version`: false when a later update moved it.
  // Otherwise the flow leaves its ports (its message has arrived: `send`), the others there speed
  // up (their new ends appended), and its id is free again.
  bool finish(uint32_t flow, uint32_t version, double now, StepId& send, std::vector<Update>& out);

  size_t active() const { return active_; }
  // Whether an end scheduled with `version` is still the flow's (finish() would take it).
  bool current(uint32_t flow, uint32_t version) const { return flows_[flow].version == version && flows_[flow].send != kNoStep; }

 private:
  struct Flow {
    StepId send = kNoStep;
    uint32_t port[2] = {0, 0};  // send, receive
    uint32_t slot[2] = {0, 0};  // its index in each port's member list
    double remaining = 0, rate = 0, cap = 0, last = 0;
    uint32_t version = 0;
  };
  bool constrained(uint32_t port) const { return port < capacity_.size(); }
  double rate(const Flow& f) const;
  // Brings every flow on `port` to `now` at its old rate and gives it its new rate and end.
  void reshare(uint32_t port, double now, uint32_t skip, std::vector<Update>& out);
  void reschedule(uint32_t id, double now, std::vector<Update>& out);

  std::vector<double> capacity_;
  std::vector<std::vector<uint32_t>> members_;  // per port: its flows
  std::vector<Flow> flows_;
  std::vector<uint32_t> free_;
  size_t active_ = 0;
};

}  // namespace sg::sim
