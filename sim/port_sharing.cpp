#include "sim/port_sharing.hpp"

#include <algorithm>
#include <limits>

namespace sg::sim {

PortSharing::PortSharing(std::vector<double> capacity) : capacity_(std::move(capacity)), members_(capacity_.size()) {}

uint32_t PortSharing::add(StepId send, uint32_t send_port, uint32_t recv_port, double bytes, double cap) {
  uint32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[id];
  uint32_t version = f.version;  // kept across reuse: an old end of this id must not match
  f = Flow{};
  f.version = version + 1;
  f.send = send;
  f.port[0] = send_port;
  f.port[1] = recv_port;
  f.remaining = bytes;
  f.cap = cap;
  return id;
}

double PortSharing::rate(const Flow& f) const {
  double r = f.cap;
  for (uint32_t p : f.port)
    if (constrained(p)) r = std::min(r, capacity_[p] / static_cast<double>(std::max<size_t>(1, members_[p].size())));
  return r;
}

void PortSharing::reschedule(uint32_t id, double now, std::vector<Update>& out) {
  Flow& f = flows_[id];
  double r = rate(f);
  // A flow whose rate did not change keeps its end (and its scheduled event): a flow held to its
  // cap (a protocol's channel share) is not slowed by one more flow on a port it does not fill,
  // and rescheduling every such flow at every join made a sweep of 32 channels quadratic.
  if (r == f.rate && f.rate > 0) return;
  f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.last));
  f.last = now;
  f.rate = r;
  double t = f.remaining <= 0 ? now : f.rate > 0 ? now + f.remaining / f.rate : std::numeric_limits<double>::infinity();
  out.push_back(Update{id, ++f.version, t});
}

void PortSharing::reshare(uint32_t port, double now, uint32_t skip, std::vector<Update>& out) {
  if (!constrained(port)) return;
  for (uint32_t id : members_[port])
    if (id != skip) reschedule(id, now, out);
}

void PortSharing::join(uint32_t id, double now, std::vector<Update>& out) {
  Flow& f = flows_[id];
  f.last = now;
  for (int k = 0; k < 2; ++k)
    if (constrained(f.port[k]) && !(k == 1 && f.port[1] == f.port[0])) {  // (one link both ways: once)
      f.slot[k] = static_cast<uint32_t>(members_[f.port[k]].size());
      members_[f.port[k]].push_back(id);
    }
  ++active_;
  // The flows already on its ports slow down (theirs first, at their old rates up to now).
  reshare(f.port[0], now, id, out);
  if (f.port[1] != f.port[0]) reshare(f.port[1], now, id, out);
  f.rate = 0;  // nothing moved before now
  reschedule(id, now, out);
}

bool PortSharing::finish(uint32_t id, uint32_t version, double now, StepId& send, std::vector<Update>& out) {
  Flow& f = flows_[id];
  if (f.version != version || f.send == kNoStep) return false;
  send = f.send;
  for (int k = 0; k < 2; ++k) {
    uint32_t p = f.port[k];
    if (!constrained(p) || (k == 1 && p == f.port[0])) continue;
    std::vector<uint32_t>& m = members_[p];
    uint32_t slot = f.slot[k], last = m.back();
    m[slot] = last;
    Flow& moved = flows_[last];
    moved.slot[moved.port[0] == p ? 0 : 1] = slot;
    m.pop_back();
  }
  f.send = kNoStep;
  --active_;
  reshare(f.port[0], now, id, out);
  if (f.port[1] != f.port[0]) reshare(f.port[1], now, id, out);
  free_.push_back(id);
  return true;
}

}  // namespace sg::sim
