// The analytic engine: event-driven LogGP / α-β over the step graph, no link contention.
//
// A message of k bytes from rank s to rank d, sent at time t: the sender's CPU is busy o + k·O
// (from when it is free), then the message leaves the NIC when the NIC is free, occupying it
// for max(g, k·G) (LogGP's gap: messages from one NIC are serialised), and arrives L + k·G after
// leaving, where L is the route's latency and G = 1 / the route's bottleneck bandwidth (both as
// the platform's network model corrects them: exactly the platform's in model=ideal). The
// receiver's CPU then spends o on it (the runtime's receive processing, with any reduction).
// Local work (compute flops / host speed, reductions, copies) runs on the rank's CPU one at a
// time. With o = g = O = 0 a lone message takes L + k·G: the platform's α-β.
//
// Built for scale: per-rank resource clocks in flat arrays and a binary heap of pending
// completions (as many as activities in flight); the runtime's per-step state is the memory.
#include <chrono>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "sim/sim.hpp"

namespace sg::sim {

namespace {

struct Event {
  double t;
  uint64_t seq;  // ties: first scheduled, first processed (deterministic)
  StepId id;
  bool transfer;
  bool operator>(const Event& o) const { return t > o.t || (t == o.t && seq > o.seq); }
};

class AnalyticTimer : public Timer {
 public:
  AnalyticTimer(const Platform& p, const SimOptions& o, uint32_t nranks)
      : p_(p), o_(o), cpu_free_(nranks, 0.0), nic_free_(nranks, 0.0) {}

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
    double cpu = std::max(now_, cpu_free_[src]) + o_.loggp.o + k * o_.loggp.O;
    cpu_free_[src] = cpu;
    double inject = std::max(cpu, nic_free_[src]);
    nic_free_[src] = inject + std::max(o_.loggp.g, k * per_byte);
    push(inject + lat + k * per_byte, send, true);
  }

  void local(StepId step, uint32_t rank, LocalKind, double flops, double seconds) override {
    double start = std::max(now_, cpu_free_[rank]);
    double end = start + flops / p_.speed + seconds;
    cpu_free_[rank] = end;
    push(end, step, false);
  }

  void run(Runtime& rt) {
    rt.start(0);
    while (!q_.empty()) {
      Event e = q_.top();
      q_.pop();
      now_ = e.t;
      ++events_;
      if (e.transfer) {
        rt.sent(e.id, e.t);
        rt.arrived(e.id, e.t);
      } else {
        rt.done(e.id, e.t);
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
    if (paths_.size() < (1u << 22)) paths_.emplace(key, lg);
    return lg;
  }
  void push(double t, StepId id, bool transfer) { q_.push(Event{t, seq_++, id, transfer}); }

  const Platform& p_;
  const SimOptions& o_;
  std::vector<double> cpu_free_, nic_free_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> q_;
  std::vector<uint32_t> ids_;
  std::unordered_map<StepId, std::tuple<uint32_t, uint32_t, uint64_t>> waiting_;  // rendezvous sends not yet posted
  std::unordered_set<StepId> posted_;  // rendezvous receives posted before their send
  std::unordered_map<uint64_t, std::pair<double, double>> paths_;
  double now_ = 0;
  uint64_t seq_ = 0, events_ = 0;
};

}  // namespace

SimResult simulate_analytic(const StepGraph& g, const Platform& p, const SimOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  SimResult r;
  r.model = model_name(Model::Analytic);
  r.platform = p.spec;
  SimOptions oo = o;
  oo.runtime.recv_overhead += o.loggp.o;
  oo.runtime.record_starts = o.trace;
  AnalyticTimer timer(p, oo, g.nranks);
  Runtime rt(g, oo.runtime, timer);
  timer.run(rt);
  r.events = timer.events();
  summarise(g, p, oo, rt, r);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace sg::sim
