// The analytic engine: event-driven α-β or LogGP(S) over the step graph, with ports and without
// contention inside the network (docs/sim.md, "The analytic engine", has the equations).
//
// Ports: a rank's messages leave through the first link of their route (its sending port: a
// star link's up half, a GPU's NVLink or its NIC, a torus direction) and enter through the last
// one (the receiving port). Independent links run in parallel (NVLink beside the NIC, two NICs of
// a node, the directions of a torus); one link is shared by what crosses it, on the sending and
// on the receiving side (an incast into one rank shares that rank's receiving port). Links that
// do not serialise (FATPIPE: loopbacks) are no port. What lies between the ports (a fat tree's
// core, a backbone) is not modelled: sharing there is contention, SimGrid's business, so SimGrid
// is slower only where links inside the network are shared.
//
// α-β (the default): a message of k bytes sent at s starts streaming at s + L and streams at
//   rate = min(1/G, C_send / n_send, C_recv / n_recv)
// (sim/port_sharing.hpp: C a port's bandwidth, n the messages on it now, re-evaluated whenever a
// message joins or leaves one of its ports); it arrives when its k bytes have streamed. L is the
// route's latency and G = 1 / its bottleneck bandwidth, both as the platform's network model
// corrects them (exactly the platform's in model=ideal). A lone message takes L + k·G, as in
// SimGrid, so the two agree wherever links carry one message at a time.
//
// LogGP(S) (--loggp o=…,g=…,O=…[,L=…,G=…]): LogGOPSim's rules (LogGOPSim.cpp), its NICs being
// the ports, each serving one message at a time. A send starts when the source's CPU and sending
// port are both free; the CPU is then busy o + (k-1)·O and the port g + (k-1)·G, and the message
// reaches the destination o + L after the start. There it is taken when the destination's CPU
// and receiving port are free: the CPU is busy o + max((k-1)·O, (k-1)·G), the port g + (k-1)·G,
// and the receive is done when the CPU is. One message alone: o + L + o + (k-1)·max(G, O). On a
// star each host has one port of each kind: LogGOPSim's one NIC per host.
//
// In both, local work (compute flops / host speed, reductions, copies) runs on the rank's CPU one
// at a time.
//
// Built for scale: per-rank resource clocks in flat arrays and a binary heap of pending
// completions (as many as activities in flight); the runtime's per-step state is the memory.
#include <algorithm>
#include <chrono>
#include <functional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "sim/call_cost.hpp"
#include "sim/port_sharing.hpp"
#include "sim/sim.hpp"

namespace sg::sim {

namespace {

// Landed: LogGP, reached the destination's NIC. Join, Stream: α-β, a flow starts sharing its ports;
// a flow's bytes have all streamed (id: the flow, valid if `version` is still the flow's). Hop: a
// message whose bytes have left lands after its protocol's hop latency (MessageCost::after).
enum class Kind : uint8_t { Arrival, Landed, Local, Join, Stream, Hop };

struct Event {
  double t;
  uint64_t seq;  // ties: first scheduled, first processed (deterministic)
  StepId id;
  Kind kind;
  uint32_t version = 0;
  bool operator>(const Event& o) const { return t > o.t || (t == o.t && seq > o.seq); }
};

class AnalyticTimer : public Timer {
 public:
  AnalyticTimer(const StepGraph& g, const Platform& p, const SimOptions& o, uint32_t nranks)
      : g_(g),
        p_(p),
        o_(o),
        cpu_free_(nranks, 0.0),
        send_free_(p.links.size() + 1, 0.0),
        recv_free_(p.links.size() + 1, 0.0),
        ports_(port_capacities(p)) {}

  // A rendezvous message moves when both its send and its receive are there, in either order.
  void transfer(StepId send, uint32_t src, uint32_t dst, uint64_t bytes, bool rendezvous, bool held) override {
    if (rendezvous && !posted_.erase(send)) {
      waiting_[send] = {src, dst, bytes};
      return;
    }
    move(send, src, dst, bytes, held);
  }

  void posted(StepId send) override {
    auto it = waiting_.find(send);
    if (it == waiting_.end()) {
      posted_.insert(send);
      return;
    }
    auto [src, dst, bytes] = it->second;
    waiting_.erase(it);
    move(send, src, dst, bytes);
  }

  void move(StepId send, uint32_t src, uint32_t dst, uint64_t bytes, bool held = false) {
    uint32_t from = o_.quotient ? o_.quotient->full_rank(src) : src;  // (a quotient's rank is a class)
    const Path& pa = path(host(from), host(dst));
    double k = static_cast<double>(bytes);
    MessageCost mc = message_cost(g_, p_, send, host(from), host(dst), pa.lat, held);  // NCCL's protocol, if it pays one
    if (!o_.loggp.enabled) {
      double cap = 1.0 / pa.per_byte;
      if (mc.cap > 0) cap = std::min(cap, mc.cap);
      uint32_t f = ports_.add(send, pa.send_port, pa.recv_port, k, cap);
      if (mc.costed) {  // bytes first, then the hop (call_cost.hpp): the slot frees when the bytes have left
        if (pa.lat + mc.after > 0) hop_[send] = pa.lat + mc.after;
        push(now_ + o_.runtime.message_latency + mc.before, f, Kind::Join);
        return;
      }
      push(now_ + pa.lat + o_.runtime.message_latency, f, Kind::Join);
      return;
    }
    const LogGP& l = o_.loggp;
    double k1 = k > 0 ? k - 1 : 0;
    double start = std::max({now_, cpu_free_[src], send_free_[pa.send_port]});
    cpu_free_[src] = start + l.o + k1 * l.O;
    if (pa.send_port != kNoPort) send_free_[pa.send_port] = start + l.g + k1 * pa.per_byte;
    push(start + l.o + pa.lat + o_.runtime.message_latency + mc.before + mc.after, send, Kind::Landed);
  }

  // α-β: the new ends of the flows whose rates changed.
  void stream_updates() {
    for (const PortSharing::Update& u : updates_) push(u.t, u.group, Kind::Stream, u.version);
    updates_.clear();
  }

  // LogGP: the message is at the destination's NIC; the destination takes it when its CPU and
  // receiving NIC are free.
  void land(StepId send, double t) {
    const LogGP& l = o_.loggp;
    uint32_t dst = g_.peer(send);
    double k = static_cast<double>(wire_bytes(o_.runtime, g_.range_bytes(g_.range(send))));
    double k1 = k > 0 ? k - 1 : 0;
    const Path& pa = path(host(g_.rank(send)), host(dst));
    double start = std::max({t, cpu_free_[dst], recv_free_[pa.recv_port]});
    cpu_free_[dst] = start + l.o + std::max(k1 * l.O, k1 * pa.per_byte);
    if (pa.recv_port != kNoPort) recv_free_[pa.recv_port] = start + l.g + k1 * pa.per_byte;
    push(cpu_free_[dst], send, Kind::Arrival);
  }

  void local(StepId step, uint32_t rank, LocalKind, double flops, double seconds) override {
    double start = std::max(now_, cpu_free_[rank]);
    double end = start + flops / p_.speed + seconds;
    cpu_free_[rank] = end;
    push(end, step, Kind::Local);
  }

  void hold(StepId step, uint32_t, double seconds) override { push(now_ + seconds, step, Kind::Local); }

  void run(Runtime& rt, size_t steps) {
    n_ = steps;
    rt.start(0);
    while (!q_.empty()) {
      std::pop_heap(q_.begin(), q_.end(), std::greater<Event>{});
      Event e = q_.back();
      q_.pop_back();
      now_ = e.t;
      if ((++events_ & 0xfffff) == 0 && o_.progress) o_.progress(static_cast<double>(rt.completed()) / std::max<size_t>(1, n_));
      switch (e.kind) {
        case Kind::Join:
          ports_.join(e.id, e.t, updates_);
          stream_updates();
          break;
        case Kind::Stream: {
          StepId send = kNoStep;
          if (!ports_.finish(e.id, e.version, e.t, send, updates_)) break;  // superseded by a later end
          stream_updates();
          rt.sent(send, e.t);
          auto hop = hop_.find(send);
          if (hop == hop_.end()) {
            rt.arrived(send, e.t);
          } else {
            push(e.t + hop->second, send, Kind::Hop);
            hop_.erase(hop);
          }
          break;
        }
        case Kind::Hop: rt.arrived(e.id, e.t); break;
        case Kind::Landed: land(e.id, e.t); break;
        case Kind::Arrival:
          rt.sent(e.id, e.t);
          rt.arrived(e.id, e.t);
          break;
        case Kind::Local: rt.done(e.id, e.t); break;
      }
    }
  }
  uint64_t events() const { return events_; }

 private:
  uint32_t host(uint32_t rank) const { return o_.map.empty() ? rank : o_.map[rank]; }

  // A host pair's L and G as the platform's network model has them (the model's latency and
  // bandwidth factors and TCP window bound, as SimGrid applies them to a lone message), and its
  // ports (the route's first and last link where they share; kNoPort otherwise). Cached per
  // pair: routes on a torus or a fat tree are not free, and a schedule reuses few pairs.
  struct Path {
    double lat = 0, per_byte = 0;
    uint32_t send_port = 0, recv_port = 0;
  };
  const Path& path(uint32_t a, uint32_t b) {
    uint64_t key = (uint64_t{a} << 32) | b;
    auto it = paths_.find(key);
    if (it != paths_.end()) return it->second;
    double lat = 0;
    p_.route(a, b, ids_, lat);
    double bw = p_.route_bw(a, b);
    if (p_.tcp_gamma > 0 && lat > 0) bw = std::min(bw, p_.tcp_gamma / (2 * lat));
    Path pa;
    pa.lat = p_.lat_factor * lat;
    pa.per_byte = 1.0 / (p_.bw_factor * bw);
    if (o_.loggp.enabled && o_.loggp.L >= 0) pa.lat = o_.loggp.L;
    if (o_.loggp.enabled && o_.loggp.G >= 0) pa.per_byte = o_.loggp.G;
    auto port = [&](uint32_t link) { return p_.links[link].shared ? link : kNoPort; };
    pa.send_port = ids_.empty() ? kNoPort : port(ids_.front());
    pa.recv_port = ids_.empty() ? kNoPort : port(ids_.back());
    if (o_.quotient) {  // a quotient graph: a link stands for its class (sim/symmetry.hpp)
      if (pa.send_port != kNoPort) pa.send_port = o_.quotient->port[pa.send_port];
      if (pa.recv_port != kNoPort) pa.recv_port = o_.quotient->port[pa.recv_port];
    }
    if (paths_.size() >= (1u << 22)) paths_.clear();  // bounded memory; recomputed on demand
    return paths_.emplace(key, pa).first->second;
  }
  // Each link's bandwidth as the network model corrects it: the ports' capacities.
  static std::vector<double> port_capacities(const Platform& p) {
    std::vector<double> c(p.links.size());
    for (size_t i = 0; i < c.size(); ++i) c[i] = p.bw_factor * p.links[i].bw;
    return c;
  }
  void push(double t, StepId id, Kind kind, uint32_t version = 0) {
    q_.push_back(Event{t, seq_++, id, kind, version});
    std::push_heap(q_.begin(), q_.end(), std::greater<Event>{});
    if (q_.size() > compact_at_) compact();
  }
  // Drops the ends a later update superseded. Every flow on a port rescheduled at each join and
  // leave there leaves one stale end each time: an incast of m flows into one port left m²/2 of
  // them (a gather of 1 M messages into one rank took 17 GB and ran out of memory). Their order
  // among the rest is kept (seq), so the run is the same.
  void compact() {
    q_.erase(
        std::remove_if(q_.begin(), q_.end(), [&](const Event& e) { return e.kind == Kind::Stream && !ports_.current(e.id, e.version); }),
        q_.end());
    std::make_heap(q_.begin(), q_.end(), std::greater<Event>{});
    compact_at_ = std::max<size_t>(size_t{1} << 20, 2 * q_.size());
  }

  const StepGraph& g_;
  const Platform& p_;
  const SimOptions& o_;
  // LogGP: per rank its CPU, per link its sending and receiving sides as a port (the last slot,
  // kNoPort, stays 0). α-β: the ports' sharing.
  std::vector<double> cpu_free_, send_free_, recv_free_;
  const uint32_t kNoPort = static_cast<uint32_t>(p_.links.size());
  PortSharing ports_;
  std::vector<PortSharing::Update> updates_;
  std::vector<Event> q_;  // a binary heap (std::push_heap) of pending events, earliest first
  size_t compact_at_ = size_t{1} << 20;
  std::vector<uint32_t> ids_;
  std::unordered_map<StepId, std::tuple<uint32_t, uint32_t, uint64_t>> waiting_;  // rendezvous sends not yet posted
  std::unordered_set<StepId> posted_;                                             // rendezvous receives posted before their send
  std::unordered_map<StepId, double> hop_;                                        // sends streaming whose hop latency follows
  std::unordered_map<uint64_t, Path> paths_;
  double now_ = 0;
  size_t n_ = 0;
  uint64_t seq_ = 0, events_ = 0;
};

}  // namespace

SimResult simulate_analytic(const StepGraph& g, const Platform& p, const SimOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  SimResult r;
  r.model = model_name(Model::Analytic);
  r.platform = p.spec;
  SimOptions oo = o;
  oo.runtime.record_starts = o.trace;
  AnalyticTimer timer(g, p, oo, g.nranks);
  Runtime rt(g, oo.runtime, timer);
  if (o.quotient) rt.set_destinations(&o.quotient->quotient->dst);
  timer.run(rt, g.size());
  r.events = timer.events();
  summarise(g, p, oo, rt, r);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace sg::sim
