#include "core/interp/send_policy.hpp"

namespace sg {

std::vector<SendMode> SendPolicy::default_modes() const {
  if (fifo()) return {SendMode::Bounded};
  return {SendMode::Rendezvous, SendMode::Eager};
}

SendPolicy send_policy(const StepGraph& g, uint32_t asked) {
  SendPolicy p;
  p.slots = asked > 0 ? asked : g.connection_slots;
  return p;
}

}  // namespace sg
