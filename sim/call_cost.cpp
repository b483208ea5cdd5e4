// A message's protocol costs as the engines apply them (see call_cost.hpp).
#include "sim/call_cost.hpp"

#include <algorithm>

namespace sg::sim {

bool same_node(const Platform& p, uint32_t a, uint32_t b) {
  if (p.kind != PlatformKind::Nodes || p.nodes.gpus == 0) return a == b;
  return a / p.nodes.gpus == b / p.nodes.gpus;
}

MessageCost message_cost(const CallCost& c, bool entry, bool same_node, double route_lat, const NcclCalibration& k) {
  MessageCost m;
  m.costed = true;
  double hop = k.lat * (same_node ? c.hop_intra_s : c.hop_inter_s);
  m.after = std::max(0.0, hop - route_lat);
  m.before = entry ? k.launch_s + k.lat * c.base_s : 0.0;
  m.cap = k.bw * c.channel_Bps;  // (wire bytes: the runtime scaled the message's bytes by c.wire)
  return m;
}

}  // namespace sg::sim
