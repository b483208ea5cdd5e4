// A message's protocol costs (StepGraph::CallCost: what NCCL's protocol adds to the messages of
// a call its tuning model picked) as both engines apply them. The platform's links stay what
// they are; on top of them a message
//   - waits the call's base latency first, if it is one of its rank's first messages of the call
//     (NCCL's baseLat: paid once per call, as its model does), before it starts (`before`);
//   - streams no faster than its channel's share of NCCL's modelled bus bandwidth (the
//     protocol's efficiency and NCCL's per-channel caps are in that figure);
//   - lands the protocol's hop latency after its last byte left (inside a node or across nodes:
//     NCCL's hwLat for the algorithm and protocol), which replaces the route's latency where it is
//     larger, since NCCL's figure is the whole hop's (`after`). The hop, the route's latency with
//     it, is in flight, not on the sender: the FIFO slot the message held (CallCost::window) is
//     free again once its bytes have left, as NCCL's sender goes on to the next slot while the
//     receiver is still polling for this one (NCCL_STEPS slots a connection, device.h). (SimGrid
//     puts a message's latency before its bytes; its engine frees the slot when the bytes would
//     have left at the message's rate, which is the same where nothing else shares the links;
//     where something does, when the put ends: later by at most the route's latency.)
#pragma once
#include <cstdint>

#include "core/graph/step_graph.hpp"
#include "sim/platform.hpp"

namespace sg::sim {

struct MessageCost {
  bool costed = false;  // the message pays a protocol's costs: its route's latency comes after its bytes too
  double before = 0;    // seconds the message waits before it starts (the call's launch and base latency)
  double after = 0;     // seconds it lands after its last byte has left, beyond the route's latency
  double cap = 0;       // bytes/s at most; 0: none
};

// Hosts of one node: a `nodes:` platform's (ranks gpus·k … gpus·k + gpus - 1); on any other
// platform every host is a node of its own.
bool same_node(const Platform& p, uint32_t a, uint32_t b);

// The costs of one message of call cost `c` (entry: one of its rank's first of the call), with
// the platform's calibration `k` (the launch on entry messages, the factors on latency and rate).
MessageCost message_cost(const CallCost& c, bool entry, bool same_node, double route_lat, const NcclCalibration& k);

// The costs of send `send` from host `src` to host `dst`, whose route's latency is `route_lat`
// seconds (as the engine models it); zero for a message without protocol costs. `held`: it
// waited for a slot of the call's window behind an earlier message of the same pair, which paid
// the call's base latency (Timer::transfer), so it pays none even if it is an entry send.
inline MessageCost message_cost(const StepGraph& g, const Platform& p, StepId send, uint32_t src, uint32_t dst, double route_lat,
                                bool held) {
  bool entry = false;
  const CallCost* c = g.call_cost(send, entry);
  if (!c) return {};
  return message_cost(*c, entry && !held, same_node(p, src, dst), route_lat, p.nodes.nccl);
}
}  // namespace sg::sim
