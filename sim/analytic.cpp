// The analytic engine: event-driven α-β or LogGP(S) over the step graph, no link contention.
//
// α-β (the default): a message of k bytes leaves its source's NIC when the NIC is free, occupies
// it for k·G (one message after the other), and arrives L + k·G after leaving, where L is the
// route's latency and G = 1 / its bottleneck bandwidth, both as the platform's network model
// corrects them (exactly the platform's in model=ideal). A lone message takes L + k·G, as in
// SimGrid, so the two agree wherever links carry one message at a time; where several share a link
// (an incast into one receiver, an oversubscribed network) SimGrid is slower, as it should be.
//
// LogGP(S) (--loggp o=…,g=…,O=…[,L=…,G=…]): LogGOPSim's rules (LogGOPSim.cpp). A send starts
// when the source's CPU and NIC are both free; the CPU is then busy o + (k-1)·O and the NIC
// g + (k-1)·G, and the message reaches the destination o + L after the start. There it is
// taken when the destination's CPU and receiving NIC are free: the CPU is busy
// o + max((k-1)·O, (k-1)·G), the receiving NIC g + (k-1)·G, and the receive is done when the CPU
// is. One message alone: o + L + o + (k-1)·max(G, O).
//
// In both, local work (compute flops / host speed, reductions, copies) runs on the rank's CPU one
// at a time.
//
// Built for scale: per-rank resource clocks in flat arrays and a binary heap of pending
// completions (as many as activities in flight); the runtime's per-step state is the memory.
#include <algorithm>
#include <chrono>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "sim/sim.hpp"

namespace sg::sim {

namespace {

enum class Kind : uint8_t { Arrival, Landed, Local };  // Landed: LogGP, reached the destination's NIC

struct Event {
  double t;
  uint64_t seq;  // ties: first scheduled, first processed (deterministic)
  StepId id;
  Kind kind;
  bool operator>(const Event& o) const { return t > o.t || (t == o.t && seq > o.seq); }
};

class AnalyticTimer : public Timer {
 public:
  AnalyticTimer(const StepGraph& g, const Platform& p, const SimOptions& o, uint32_t nranks)
      : g_(g), p_(p), o_(o), cpu_free_(nranks, 0.0), nic_free_(nranks, 0.0), nicr_free_(nranks, 0.0) {}

  // A rendezvous message moves when both its send and its receive are there, in either order.
  void transfer(StepId send, uint32_t src, uint32_t dst, uint64_t bytes, bool rendezvous) override {
    if (rendezvous && !posted_.erase(send)) {
      waiting_[send] = {src, dst, bytes};
      return;
    }
    move(send, src, dst, bytes);
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

  void move(StepId send, uint32_t src, uint32_t dst, uint64_t bytes) {
    auto [lat, per_byte] = path(host(src), host(dst));
    double k = static_cast<double>(bytes);
    if (!o_.loggp.enabled) {
      // The sending NIC serialises what leaves it (LogGP's G at the sender). Nothing else is
      // shared: not the receiver's link (an incast is contention, SimGrid's business), not the
      // network's.
      double inject = std::max(now_, nic_free_[src]);
      nic_free_[src] = inject + k * per_byte;
      push(inject + lat + k * per_byte, send, Kind::Arrival);
      return;
    }
    const LogGP& l = o_.loggp;
    double k1 = k > 0 ? k - 1 : 0;
    double start = std::max({now_, cpu_free_[src], nic_free_[src]});
    cpu_free_[src] = start + l.o + k1 * l.O;
    nic_free_[src] = start + l.g + k1 * per_byte;
    push(start + l.o + lat, send, Kind::Landed);
  }

  // LogGP: the message is at the destination's NIC; the destination takes it when its CPU and
  // receiving NIC are free.
  void land(StepId send, double t) {
    const LogGP& l = o_.loggp;
    uint32_t dst = g_.peer(send);
    double k = static_cast<double>(g_.range_bytes(g_.range(send)));
    double k1 = k > 0 ? k - 1 : 0;
    double per_byte = path(host(g_.rank(send)), host(dst)).second;
    double start = std::max({t, cpu_free_[dst], nicr_free_[dst]});
    cpu_free_[dst] = start + l.o + std::max(k1 * l.O, k1 * per_byte);
    nicr_free_[dst] = start + l.g + k1 * per_byte;
    push(cpu_free_[dst], send, Kind::Arrival);
  }

  void local(StepId step, uint32_t rank, LocalKind, double flops, double seconds) override {
    double start = std::max(now_, cpu_free_[rank]);
    double end = start + flops / p_.speed + seconds;
    cpu_free_[rank] = end;
    push(end, step, Kind::Local);
  }

  void run(Runtime& rt, size_t steps) {
    n_ = steps;
    rt.start(0);
    while (!q_.empty()) {
      Event e = q_.top();
      q_.pop();
      now_ = e.t;
      if ((++events_ & 0xfffff) == 0 && o_.progress) o_.progress(static_cast<double>(rt.completed()) / std::max<size_t>(1, n_));
      switch (e.kind) {
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

  // L and G of a host pair as the platform's network model has them (the model's latency and
  // bandwidth factors and TCP window bound, as SimGrid applies them to a lone message), cached
  // per pair: routes on a torus or a fat tree are not free, and a schedule reuses few pairs.
  std::pair<double, double> path(uint32_t a, uint32_t b) {
    uint64_t key = (uint64_t{a} << 32) | b;
    auto it = paths_.find(key);
    if (it != paths_.end()) return it->second;
    double lat = 0;
    p_.route(a, b, ids_, lat);
    double bw = p_.route_bw(a, b);
    if (p_.tcp_gamma > 0 && lat > 0) bw = std::min(bw, p_.tcp_gamma / (2 * lat));
    std::pair<double, double> lg{p_.lat_factor * lat, 1.0 / (p_.bw_factor * bw)};
    if (o_.loggp.enabled && o_.loggp.L >= 0) lg.first = o_.loggp.L;
    if (o_.loggp.enabled && o_.loggp.G >= 0) lg.second = o_.loggp.G;
    if (paths_.size() < (1u << 22)) paths_.emplace(key, lg);
    return lg;
  }
  void push(double t, StepId id, Kind kind) { q_.push(Event{t, seq_++, id, kind}); }

  const StepGraph& g_;
  const Platform& p_;
  const SimOptions& o_;
  std::vector<double> cpu_free_, nic_free_, nicr_free_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> q_;
  std::vector<uint32_t> ids_;
  std::unordered_map<StepId, std::tuple<uint32_t, uint32_t, uint64_t>> waiting_;  // rendezvous sends not yet posted
  std::unordered_set<StepId> posted_;                                             // rendezvous receives posted before their send
  std::unordered_map<uint64_t, std::pair<double, double>> paths_;
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
  timer.run(rt, g.size());
  r.events = timer.events();
  summarise(g, p, oo, rt, r);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace sg::sim
