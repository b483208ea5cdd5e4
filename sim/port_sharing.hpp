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
//
// Flows with the same two ports and cap always run at the same rate: they are kept as a group,
// which streams w bytes a member (w grows at the group's rate), and a member joining when the
// group had streamed w0 ends when w = w0 + its bytes. Only the group's first end is scheduled, so
// a join or an end costs the groups on its ports, not the flows: an incast of K chunks from each
// of N senders updates N groups, not K·N flows, at each change.
#pragma once
#include <cstdint>
#include <utility>
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

  // When a group's first end moved: it is now at `t` (a new end supersedes the ones before, which
  // carry an older version).
  struct Update {
    uint32_t group;
    uint32_t version;
    double t;
  };
  // The flow starts sharing its ports at `now` (after its route's latency). Appends the new first
  // ends of every group whose rate or first member changed, its own included.
  void join(uint32_t flow, double now, std::vector<Update>& out);
  // The first end of `group` at `now` as scheduled with `version`: false when a later update
  // moved it. Otherwise that member leaves its ports (its message has arrived: `send`), the
  // groups there speed up (their new ends appended), and its id is free again.
  bool finish(uint32_t group, uint32_t version, double now, StepId& send, std::vector<Update>& out);
  // Whether an end scheduled with `version` is still the group's (finish() would take it).
  bool current(uint32_t group, uint32_t version) const { return groups_[group].version == version && !groups_[group].members.empty(); }

  size_t active() const { return active_; }

  // Collectives costed as wholes on a port (sim/analytic.cpp, "Collectives on shared ports"):
  // they count as `e` more flows there (e: the flows they kept on it, on average, in their run
  // alone); the groups on the port reshare.
  void add_load(uint32_t port, double e, double now, std::vector<Update>& out);
  double load(uint32_t port) const { return constrained(port) ? load_[port] : 0.0; }
  uint32_t flows_on(uint32_t port) const { return constrained(port) ? flows_on_[port] : 0; }
  double capacity(uint32_t port) const { return constrained(port) ? capacity_[port] : 0.0; }
  bool constrained(uint32_t port) const { return port < capacity_.size(); }
  // A flow's two ports (send, receive), from add() until it ends.
  std::pair<uint32_t, uint32_t> flow_ports(uint32_t flow) const { return {flows_[flow].port[0], flows_[flow].port[1]}; }
  // A group's two ports (also once it has emptied: until its id is reused by a join).
  std::pair<uint32_t, uint32_t> group_ports(uint32_t group) const { return {groups_[group].port[0], groups_[group].port[1]}; }

 private:
  struct Flow {
    StepId send = kNoStep;
    uint32_t port[2] = {0, 0};  // send, receive
    double bytes = 0, cap = 0;
  };
  struct Group {
    uint32_t port[2] = {0, 0};
    uint32_t slot[2] = {0, 0};  // its index in each port's group list
    double cap = 0;
    double w = 0, rate = 0, last = 0;  // bytes a member has streamed since `base`, at `last`
    double smallest = 0;               // the smallest member joined since w was last rebased
    uint32_t version = 0;
    std::vector<std::pair<double, uint32_t>> members;  // (w at which it ends, flow): a min-heap
  };
  double rate(const Group& g) const;
  // Brings the group to `now` at its old rate, gives it its new rate and schedules its first end
  // (where the rate or the first member changed, or `force`).
  void reschedule(uint32_t gid, double now, bool force, std::vector<Update>& out);
  // Every group on `port` but `skip`.
  void reshare(uint32_t port, double now, uint32_t skip, std::vector<Update>& out);
  void leave_ports(uint32_t gid);

  std::vector<double> capacity_;
  std::vector<uint32_t> flows_on_;              // per port: its flows
  std::vector<double> load_;                    // per port: collectives' flows (add_load)
  std::vector<std::vector<uint32_t>> members_;  // per port: its groups
  std::vector<Flow> flows_;
  std::vector<uint32_t> free_flows_;
  std::vector<Group> groups_;
  std::vector<uint32_t> free_groups_;
  size_t active_ = 0;
};

}  // namespace sg::sim
