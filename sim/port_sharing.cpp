#include "sim/port_sharing.hpp"

#include "sim/free_list.hpp"

#include <algorithm>
#include <limits>

namespace sg::sim {

namespace {
using Member = std::pair<double, uint32_t>;  // (w at which it ends, flow)
// A min-heap: the earliest end first, then the lower flow id (deterministic).
bool later(const Member& a, const Member& b) { return a.first > b.first || (a.first == b.first && a.second > b.second); }
}  // namespace

PortSharing::PortSharing(std::vector<double> capacity)
    : capacity_(std::move(capacity)), flows_on_(capacity_.size(), 0), load_(capacity_.size(), 0.0), members_(capacity_.size()) {}

uint32_t PortSharing::add(StepId send, uint32_t send_port, uint32_t recv_port, double bytes, double cap) {
  uint32_t id = take_id(flows_, free_flows_);
  Flow& f = flows_[id];
  f.send = send;
  f.port[0] = send_port;
  f.port[1] = recv_port;
  f.bytes = bytes;
  f.cap = cap;
  return id;
}

double PortSharing::rate(const Group& g) const {
  double r = g.cap;
  for (uint32_t p : g.port)
    if (constrained(p)) r = std::min(r, capacity_[p] / std::max(1.0, static_cast<double>(flows_on_[p]) + load_[p]));
  return r;
}

void PortSharing::add_load(uint32_t port, double e, double now, std::vector<Update>& out) {
  if (!constrained(port)) return;
  load_[port] += e;
  reshare(port, now, kNoStep, out);
}

void PortSharing::reschedule(uint32_t gid, double now, bool force, std::vector<Update>& out) {
  Group& g = groups_[gid];
  double r = rate(g);
  // A group whose rate did not change keeps its end (and its scheduled event): a flow held to its
  // cap (a protocol's channel share) is not slowed by one more flow on a port it does not fill,
  // and rescheduling every such flow at every join made a sweep of 32 channels quadratic.
  if (!force && r == g.rate && g.rate > 0) return;
  g.w += g.rate * (now - g.last);
  g.last = now;
  g.rate = r;
  if (g.members.empty()) return;
  double left = g.members.front().first - g.w;
  double t = left <= 0 ? now : r > 0 ? now + left / r : std::numeric_limits<double>::infinity();
  out.push_back(Update{gid, ++g.version, t});
}

void PortSharing::reshare(uint32_t port, double now, uint32_t skip, std::vector<Update>& out) {
  if (!constrained(port)) return;
  for (uint32_t gid : members_[port])
    if (gid != skip) reschedule(gid, now, false, out);
}

void PortSharing::join(uint32_t id, double now, std::vector<Update>& out) {
  const Flow& f = flows_[id];
  // Its group: found among the groups on one of its ports (a few, where it matters: a ring's
  // port has one or two; a hash of all groups cost a fifth of a ring's simulation). Flows on no
  // port share nothing and stay alone.
  uint32_t gid = kNoStep;
  const bool c0 = constrained(f.port[0]), c1 = constrained(f.port[1]);
  if (c0 || c1) {
    uint32_t look = c0 && (!c1 || members_[f.port[0]].size() <= members_[f.port[1]].size()) ? f.port[0] : f.port[1];
    for (uint32_t g : members_[look]) {
      const Group& x = groups_[g];
      if (x.port[0] == f.port[0] && x.port[1] == f.port[1] && x.cap == f.cap) {
        gid = g;
        break;
      }
    }
  }
  if (gid == kNoStep) {  // a new group, on its ports
    gid = take_id(groups_, free_groups_);
    Group& g = groups_[gid];  // (its version is kept across reuse: an old end of this id must not match)
    g.port[0] = f.port[0];
    g.port[1] = f.port[1];
    g.cap = f.cap;
    g.w = g.rate = 0;
    g.last = now;
    g.members.clear();
    for (int k = 0; k < 2; ++k)
      if (constrained(g.port[k]) && !(k == 1 && g.port[1] == g.port[0])) {  // (one link both ways: once)
        g.slot[k] = static_cast<uint32_t>(members_[g.port[k]].size());
        members_[g.port[k]].push_back(gid);
      }
  }
  Group& g = groups_[gid];
  g.w += g.rate * (now - g.last);  // (the group up to now at its old rate)
  g.last = now;
  if (g.members.empty()) {
    g.w = 0;
    g.smallest = f.bytes;
  } else {
    // w only grows while the group has members: rebased (every end moved by -w, which keeps their
    // order) before its rounding could reach a 2^-32 part of the smallest message.
    g.smallest = std::min(g.smallest, f.bytes);
    if (g.w > std::max(g.smallest, 1.0) * 1048576.0) {
      for (Member& m : g.members) m.first -= g.w;
      g.w = 0;
      g.smallest = f.bytes;
    }
  }
  g.members.push_back({g.w + f.bytes, id});
  std::push_heap(g.members.begin(), g.members.end(), later);
  for (int k = 0; k < 2; ++k)
    if (constrained(f.port[k]) && !(k == 1 && f.port[1] == f.port[0])) ++flows_on_[f.port[k]];
  ++active_;
  // The groups already on its ports slow down (theirs first, at their old rates up to now).
  reshare(f.port[0], now, gid, out);
  if (f.port[1] != f.port[0]) reshare(f.port[1], now, gid, out);
  reschedule(gid, now, true, out);
}

void PortSharing::leave_ports(uint32_t gid) {
  Group& g = groups_[gid];
  for (int k = 0; k < 2; ++k) {
    uint32_t p = g.port[k];
    if (!constrained(p) || (k == 1 && p == g.port[0])) continue;
    std::vector<uint32_t>& m = members_[p];
    uint32_t slot = g.slot[k], last = m.back();
    m[slot] = last;
    Group& moved = groups_[last];
    moved.slot[moved.port[0] == p ? 0 : 1] = slot;
    m.pop_back();
  }
  free_groups_.push_back(gid);
}

bool PortSharing::finish(uint32_t gid, uint32_t version, double now, StepId& send, std::vector<Update>& out) {
  Group& g = groups_[gid];
  if (g.version != version || g.members.empty()) return false;
  std::pop_heap(g.members.begin(), g.members.end(), later);
  const Member first = g.members.back();
  g.members.pop_back();
  g.w = first.first;  // (exactly where that member ends)
  g.last = now;
  Flow& f = flows_[first.second];
  send = f.send;
  for (int k = 0; k < 2; ++k)
    if (constrained(f.port[k]) && !(k == 1 && f.port[1] == f.port[0])) --flows_on_[f.port[k]];
  f.send = kNoStep;
  free_flows_.push_back(first.second);
  --active_;
  const uint32_t p0 = g.port[0], p1 = g.port[1];
  const bool empty = g.members.empty();
  if (empty) leave_ports(gid);
  reshare(p0, now, gid, out);
  if (p1 != p0) reshare(p1, now, gid, out);
  if (!empty) reschedule(gid, now, true, out);
  return true;
}

}  // namespace sg::sim
