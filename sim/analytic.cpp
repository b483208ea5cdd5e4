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
#include <limits>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "sim/call_cost.hpp"
#include "sim/free_list.hpp"
#include "sim/port_sharing.hpp"
#include "sim/sim.hpp"

namespace sg::sim {

namespace {

// Landed: LogGP, reached the destination's NIC. Join, Stream: α-β, a flow starts sharing its ports;
// a flow's bytes have all streamed (id: the flow, valid if `version` is still the flow's). Hop: a
// message whose bytes have left lands after its protocol's hop latency (MessageCost::after).
enum class Kind : uint8_t { Arrival, Landed, Local, Join, Stream, Hop, Gang };

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

  // Collectives on shared ports (α-β): a collective costed as a whole runs as one "gang" at a
  // speed rho <= 1 of its run alone (its members end when the time it has run, at that speed,
  // reaches theirs). On each port its members' messages crossed alone it counts as E = the
  // flow-seconds there / its time alone more flows (calls on one pair's window: once, shared:
  // PortLoad), so the schedule's own messages there get C / (n + L) (n: theirs on the port now,
  // L: the collectives' load there); and it runs, there, at the share its flows get against the
  // rate they had alone:
  //   rho = min over its ports of min(1, C / (n + L) · f / (E · r)),  r = bytes / flow-seconds alone
  // (f: its part of L, E unless windowed). Alone, f = L = E and E·r = bytes / its time alone <= C:
  // rho = 1 and its times are the run alone's exactly.
  bool collective(uint32_t instance, const StepId* steps, const double* seconds, uint32_t n) override {
    const CollectiveTimes* ct = o_.runtime.collective_times;
    if (o_.loggp.enabled || !ct || !ct->has_uses(instance)) return false;
    const uint32_t tab = ct->table[instance], base = ct->uses_off[tab];
    const double span = ct->span[tab];
    const uint32_t id = take_id(gangs_, free_gangs_);
    Gang& G = gangs_[id];
    G.members.clear();
    G.ports.clear();
    G.next = 0;
    G.tau = 0;
    G.last = now_;
    G.rho = 1;
    for (uint32_t k = 0; k < n; ++k) G.members.push_back({seconds[k], steps[k]});
    std::sort(G.members.begin(), G.members.end());
    const GroupInfo* group = ct->peers_are_ranks ? nullptr : &g_.groups[g_.instances[instance].group];
    port_at_.clear();  // (port, windowed) -> its entry in G.ports, which keep the order they first appear in
    for (uint32_t k = 0; k < n && span > 0; ++k) {
      uint32_t self = full(g_.rank(steps[k]));
      for (uint32_t u = ct->member_uses[base + k]; u < ct->member_uses[base + k + 1]; ++u) {
        const CollectiveTimes::Use& x = ct->uses[u];
        uint32_t peer = group ? group->member(x.peer) : x.peer;
        uint32_t port = x.out ? path(host(self), host(peer)).send_port : path(host(peer), host(self)).recv_port;
        if (!ports_.constrained(port)) continue;
        auto [at, fresh] = port_at_.try_emplace(uint64_t{port} << 1 | uint64_t{x.windowed}, static_cast<uint32_t>(G.ports.size()));
        if (fresh) G.ports.push_back(GangPort{port, x.windowed, 0, 0});
        GangPort& gp = G.ports[at->second];
        gp.e += x.flow_s;  // (flow-seconds, divided by the span below)
        gp.r += x.bytes;   // (bytes, divided by the flow-seconds below)
      }
    }
    for (GangPort& gp : G.ports) {
      gp.r /= gp.e;
      gp.e /= span;
      if (gangs_on_.size() <= gp.port) gangs_on_.resize(gp.port + 1);
      gangs_on_[gp.port].push_back(OnPort{id, gp.windowed, gp.e});
      reload(gp.port);
    }
    ++live_gangs_;
    stream_updates();
    for (const GangPort& gp : gangs_[id].ports) touch(gp.port, id);
    refresh(id, true);
    return true;
  }

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
          if (live_gangs_) {
            auto [p0, p1] = ports_.flow_ports(e.id);
            touch(p0, kNoGang), touch(p1, kNoGang);
          }
          break;
        case Kind::Stream: {
          StepId send = kNoStep;
          auto [p0, p1] = ports_.group_ports(e.id);
          if (!ports_.finish(e.id, e.version, e.t, send, updates_)) break;  // superseded by a later end
          stream_updates();
          if (live_gangs_) touch(p0, kNoGang), touch(p1, kNoGang);
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
        case Kind::Gang: gang_end(rt, e.id, e.version); break;
      }
    }
  }
  uint64_t events() const { return events_; }

 private:
  uint32_t host(uint32_t rank) const { return o_.map.empty() ? rank : o_.map[rank]; }
  uint32_t full(uint32_t rank) const { return o_.quotient ? o_.quotient->full_rank(rank) : rank; }  // (a quotient's rank is a class)

  struct GangPort {
    uint32_t port;
    bool windowed;  // its messages there took slots of their pairs' windows
    double e, r;    // the flows it keeps on the port (on average, alone), and their rate alone (bytes/s)
  };
  struct Gang {
    std::vector<std::pair<double, StepId>> members;  // (its time alone, its step), earliest first
    std::vector<GangPort> ports;
    size_t next = 0;                    // the first member not ended
    double tau = 0, last = 0, rho = 1;  // its time alone run by `last`, at speed rho since
    uint32_t version = 0;
  };
  static constexpr uint32_t kNoGang = 0xffffffffu;

  // A port's collectives' load: their flows, where windowed ones count once (calls on one pair
  // share its window: two all-reduces over the same NCCL connections keep as many messages in
  // flight as one, each half of them), and each windowed gang's part of them.
  struct PortLoad {
    double sum_w = 0, max_w = 0, sum_u = 0;
    double total() const { return max_w + sum_u; }
    double part(const GangPort& gp) const { return gp.windowed ? (sum_w > 0 ? gp.e * max_w / sum_w : 0) : gp.e; }
  };
  PortLoad port_load(uint32_t port) const {
    PortLoad l;
    if (port >= gangs_on_.size()) return l;
    for (const OnPort& x : gangs_on_[port]) {
      if (x.windowed) l.sum_w += x.e, l.max_w = std::max(l.max_w, x.e);
      else l.sum_u += x.e;
    }
    return l;
  }
  // The port's load as the schedule's messages there see it (PortSharing::add_load).
  void reload(uint32_t port) {
    const double now = port_load(port).total();
    ports_.add_load(port, gangs_on_[port].empty() ? -ports_.load(port) : now - ports_.load(port), now_, updates_);
  }
  // rho = min over its ports of min(1, its flows' share there / their rate alone).
  double gang_speed(const Gang& G) const {
    double rho = 1;
    for (const GangPort& gp : G.ports) {
      PortLoad l = port_load(gp.port);
      double n = static_cast<double>(ports_.flows_on(gp.port)) + l.total();
      double need = gp.e * gp.r;  // bytes/s it moved there alone
      if (n > 0 && need > 0) rho = std::min(rho, ports_.capacity(gp.port) / n * l.part(gp) / need);
    }
    return rho;
  }
  // The gang at its speed now: its next end moves where the speed changed (or `force`).
  void refresh(uint32_t id, bool force) {
    Gang& G = gangs_[id];
    double rho = gang_speed(G);
    if (!force && rho == G.rho) return;
    G.tau += G.rho * (now_ - G.last);
    G.last = now_;
    G.rho = rho;
    double left = std::max(0.0, G.members[G.next].first - G.tau);
    push(rho > 0 ? now_ + left / rho : std::numeric_limits<double>::infinity(), id, Kind::Gang, ++G.version);
  }
  // The gangs on `port` (but `skip`) at their speed now.
  void touch(uint32_t port, uint32_t skip) {
    if (port >= gangs_on_.size()) return;
    for (const OnPort& x : gangs_on_[port])
      if (x.gang != skip) refresh(x.gang, false);  // (a gang there twice, windowed and not: the second finds its speed kept)
  }
  // A gang's next member(s) end; the gang leaves its ports after its last.
  void gang_end(Runtime& rt, uint32_t id, uint32_t version) {
    Gang& G = gangs_[id];
    if (G.version != version || G.next >= G.members.size()) return;  // superseded
    const double t = G.members[G.next].first;
    done_.clear();
    while (G.next < G.members.size() && G.members[G.next].first <= t) done_.push_back(G.members[G.next++].second);
    if (G.next < G.members.size()) {  // (from the last change of speed: alone, exactly its time alone after the last entry)
      push(G.last + (G.members[G.next].first - G.tau) / G.rho, id, Kind::Gang, ++G.version);
    } else {
      --live_gangs_;
      ++G.version;
      std::vector<GangPort> ports = std::move(G.ports);
      G.ports.clear();
      free_gangs_.push_back(id);
      for (const GangPort& gp : ports) {
        std::vector<OnPort>& on = gangs_on_[gp.port];
        on.erase(std::remove_if(on.begin(), on.end(), [&](const OnPort& x) { return x.gang == id; }), on.end());
        reload(gp.port);
      }
      stream_updates();
      for (const GangPort& gp : ports) touch(gp.port, kNoGang);
    }
    std::vector<StepId> ended = done_;  // (rt.done may start gangs of its own)
    for (StepId s : ended) rt.done(s, now_);
  }

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
  std::vector<Gang> gangs_;
  std::vector<uint32_t> free_gangs_;
  // Per port: the gangs on it, each part once (a gang may have a windowed part and another there).
  struct OnPort {
    uint32_t gang;
    bool windowed;
    double e;  // its flows there (GangPort::e)
  };
  std::vector<std::vector<OnPort>> gangs_on_;
  std::unordered_map<uint64_t, uint32_t> port_at_;  // (collective()'s scratch)
  std::vector<StepId> done_;
  uint32_t live_gangs_ = 0;
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
