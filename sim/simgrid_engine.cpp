// The SimGrid engine: the runtime's transfers become S4U communications between the ranks'
// hosts and its local work executions on them, so SimGrid's network model decides every
// duration, contention included.
//
// Structure: one actor per rank, on the rank's host, as an MPI program would be; each waits with
// Activity::wait_any on its own few activities and handles the runtime's events for its rank
// (the runtime never makes one rank's event start another rank's work, see Timer). Messages go
// through mailboxes, as in a hand-written S4U program:
// - eager data (choreographic transfers, eager MPI sends) through one mailbox per (source,
//   destination, stream) whose permanent receiver is the destination's actor, so the data flows
//   the moment it is put, whether or not a get is posted; the destination keeps gets posted on
//   the mailboxes it expects data from, and learns of an arrival when its get completes. (A get
//   takes a mailbox's puts in the order they were made: were a later message to finish before an
//   earlier one of the same mailbox, its arrival would be seen when the earlier one's is. The
//   stream keeps that to messages of one kind: plain ones, or one protocol's: NCCL's channels are
//   connections of their own, so a collective's chunks never land behind a plain send.)
// - rendezvous MPI sends through one mailbox per (source, tag, communicator, destination) lane,
//   not permanent: SimGrid starts the transfer when the receive's get meets the send's put, which
//   is MPI's rendezvous, and the k-th put of a lane meets its k-th get, the match of the graph.
// Measured alternatives (bench/sim): Comm::sendto_async, host to host with no actors, costs a
// scan of every communication in flight at each completion in SimGrid 3.32 (the detached comms
// live in a list), 2-3x the hand-written program's time at N = 1024; a single driver actor
// waiting on everything in flight pays for all of it at every event (8x at N = 256).
//
// SimGrid allows one engine per process, so the simulation runs in a child process and returns
// its result as JSON through a pipe: one stepgraph process can simulate many points, and a
// SimGrid abort ends that point with an error instead of the program.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <simgrid/s4u.hpp>
#include <unordered_map>

#include "sim/call_cost.hpp"
#include "sim/result_io.hpp"
#include "sim/sim.hpp"
#include "sim/simgrid_platform.hpp"

namespace sg::sim {

namespace {

namespace sg4 = simgrid::s4u;

// Gets kept posted per incoming mailbox. (In SimGrid 3.32 a put past the posted gets does not
// flow until a get meets it, permanent receiver or not: K messages of a pair in flight at once
// arrive a latency a round late; bench/README.md, "Incasts in the analytic engine", has the
// measurements and the cost of a wider window.)
constexpr uint32_t kWindow = 1;

// Delay: a put waits out its message latency first; HopDelay: a message whose bytes have all
// come lands its protocol's hop latency later (MessageCost::after); SlotDelay: a put's bytes
// have left (Request::slot_s), its FIFO slot is free.
enum class What : uint8_t { EagerPut, RendezvousPut, PairGet, LaneGet, Exec, Delay, HopDelay, SlotDelay, Hold };

struct Pending {
  What what;
  StepId step;     // the send (puts, gets) or the step (exec)
  uint32_t pair;   // PairGet: index into the rank's incoming pairs
  void** payload;  // gets: where the put's payload lands (the send's step id + 1, as a pointer)
};

// An incoming pair mailbox of one rank: how many eager messages it will still bring.
struct Incoming {
  sg4::Mailbox* box;
  uint64_t expected = 0;
  uint32_t posted = 0;
};

struct Worker {
  std::vector<sg4::ActivityPtr> acts;
  std::vector<Pending> pending;
  std::vector<Incoming> incoming;
  std::unordered_map<uint64_t, sg4::Mailbox*> outgoing;  // (stream, destination) -> pair mailbox
  std::vector<void**> free_slots;                        // payload slots for gets, reused
};

// What the runtime asked for while handling an event: started afterwards, because starting a
// SimGrid activity is a simcall, at which SimGrid may run other actors (who call the runtime
// too): runtime calls must not interleave.
struct Request {
  What what;
  StepId step;
  uint32_t src, dst;     // ranks
  double amount;         // bytes, flops, or a Delay's seconds
  double cap = 0;        // puts: bytes/s at most (a protocol's channel share, sim/call_cost.hpp); 0 none
  double slot_s = 0;     // eager puts with a protocol's costs: their bytes have left after this long (SlotDelay)
  double slot_tail = 0;  // ... unless the links were shared: then more than these bytes are still to go then
};

class SimGridTimer : public Timer {
 public:
  SimGridTimer(const StepGraph& g, const Platform& p, const SimOptions& o, const RuntimeOptions& ro, std::vector<sg4::Host*>& hosts)
      : g_(g), p_(p), o_(o), ro_(ro), hosts_(hosts), workers_(g.nranks) {}

  // Counts the eager messages of every (source, destination, stream) triple: the destination
  // keeps gets posted on exactly those mailboxes, for exactly that many messages.
  void plan_mailboxes() {
    // Counted in hash maps keyed by the pair, one per stream, the last pair remembered (a rank's
    // sends mostly go to one peer): a std::map here cost 0.07 s of the 8 s at N = 1,024.
    std::vector<std::unordered_map<uint64_t, uint64_t>> counts(g_.call_costs.size() + 1);
    uint64_t last_key = ~uint64_t{0};
    uint32_t last_stream = 0;
    uint64_t* last = nullptr;
    for (StepId s = 0; s < g_.size(); ++s) {
      if (g_.kind(s) != StepKind::Send || rendezvous(s)) continue;
      uint64_t key = (uint64_t{g_.rank(s)} << 32) | g_.peer(s);
      uint32_t st = stream(s);
      if (key != last_key || st != last_stream) last = &counts[st][key], last_key = key, last_stream = st;
      ++*last;
    }
    for (uint32_t st = 0; st < counts.size(); ++st) {
      std::vector<std::pair<uint64_t, uint64_t>> sorted(counts[st].begin(), counts[st].end());
      std::sort(sorted.begin(), sorted.end());  // sources in order, as before
      for (const auto& [key, c] : sorted) {
        auto src = static_cast<uint32_t>(key >> 32), dst = static_cast<uint32_t>(key);
        workers_[dst].incoming.push_back({sg4::Mailbox::by_name(pair_name(src, dst, st)), c, 0});
      }
    }
  }

  void transfer(StepId send, uint32_t src, uint32_t dst, uint64_t bytes, bool rendezvous, bool held) override {
    What put = rendezvous ? What::RendezvousPut : What::EagerPut;
    Request q{put, send, src, dst, static_cast<double>(bytes)};
    double delay = ro_.message_latency;
    bool entry = false;
    if (const CallCost* c = g_.call_cost(send, entry)) {  // NCCL's protocol: its latency beyond the route's, its channel's rate
      const Route& ro = route(host(src), host(dst));
      MessageCost mc = message_cost(*c, entry && !held, same_node(p_, host(src), host(dst)), ro.lat, p_.nodes.nccl);
      delay += mc.before;
      q.cap = mc.cap;
      if (mc.after > 0) hop_[send] = mc.after;  // the receiver takes it that long after the put ends (HopDelay)
      // Its FIFO slot frees when its bytes have left (call_cost.hpp), not when SimGrid, which puts
      // the route's latency first, ends the put: a timer of the bytes at the message's rate.
      if (!rendezvous) {
        double rate = mc.cap > 0 ? std::min(mc.cap, ro.rate) : ro.rate;
        q.slot_s = static_cast<double>(bytes) / rate;
        q.slot_tail = rate * ro.lat;  // SimGrid's latency came first: a lone put has lat's bytes to go then
      }
    }
    if (delay > 0) {  // the put waits first (Delay), then goes as asked
      delayed_[send] = q;
      requests_.push_back({What::Delay, send, src, dst, delay});
      return;
    }
    requests_.push_back(q);
  }
  void posted(StepId send) override { requests_.push_back({What::LaneGet, send, g_.rank(send), g_.peer(send), 0}); }
  void local(StepId step, uint32_t rank, LocalKind, double flops, double seconds) override {
    requests_.push_back({What::Exec, step, rank, rank, flops + seconds * p_.speed});
  }

  // (Unreached today: the engine refuses a graph with collective steps, whose members would end in
  // the actor of the last one to enter, not each in its own.)
  void hold(StepId step, uint32_t rank, double seconds) override { requests_.push_back({What::Hold, step, rank, rank, seconds}); }

  // The actor of rank r.
  void actor(Runtime& rt, uint32_t r) {
    Worker& me = workers_[r];
    for (Incoming& in : me.incoming) in.box->set_receiver(sg4::Actor::self());
    for (uint32_t k = 0; k < me.incoming.size(); ++k) refill(me, k);
    rt.start(0, r);
    launch(me);
    while (!me.acts.empty()) {
      auto i = static_cast<size_t>(sg4::Activity::wait_any(me.acts));
      Pending p = me.pending[i];
      me.acts[i] = me.acts.back();
      me.acts.pop_back();
      me.pending[i] = me.pending.back();
      me.pending.pop_back();
      if ((++events_ & 0x3fff) == 0 && o_.progress) o_.progress(static_cast<double>(rt.completed()) / std::max<size_t>(1, g_.size()));
      double now = sg4::Engine::get_clock();
      switch (p.what) {
        case What::EagerPut:  // its data has left (the send itself completed when it was made)
          slot_puts_.erase(p.step);
          rt.sent(p.step, now);
          break;
        case What::RendezvousPut: rt.sent(p.step, now); break;
        case What::PairGet: {
          --me.incoming[p.pair].posted;
          refill(me, p.pair);
          StepId s = sent_step(*p.payload);
          auto hop = hop_.find(s);
          if (hop == hop_.end()) {
            rt.arrived(s, now);
          } else {  // its protocol's hop latency beyond the route's: it lands that much later
            requests_.push_back({What::HopDelay, s, r, r, hop->second});
            hop_.erase(hop);
          }
          break;
        }
        case What::HopDelay: rt.arrived(p.step, now); break;
        case What::SlotDelay: {
          // The bytes would have left by now at the message's own rate. Where they have (a lone
          // put has only its latency's worth to go, SimGrid putting latency first), the slot is
          // free now; where the links were shared, it frees when the put ends (later than the
          // analytic engine's bytes-first model by at most the route's latency).
          auto it = slot_puts_.find(p.step);
          if (it != slot_puts_.end()) {
            if (it->second.put->get_remaining() <= it->second.tail * (1 + 1e-6) + 1) rt.sent(p.step, now);
            slot_puts_.erase(it);
          }
          break;
        }
        case What::LaneGet: {
          auto hop = hop_.find(p.step);
          if (hop == hop_.end()) {
            rt.arrived(p.step, now);
          } else {
            requests_.push_back({What::HopDelay, p.step, r, r, hop->second});
            hop_.erase(hop);
          }
          break;
        }
        case What::Exec:
        case What::Hold: rt.done(p.step, now); break;
        case What::Delay: {
          auto it = delayed_.find(p.step);
          requests_.push_back(it->second);
          delayed_.erase(it);
          break;
        }
      }
      if (p.payload) me.free_slots.push_back(p.payload);
      launch(me);
    }
    for (Incoming& in : me.incoming) in.box->set_receiver(nullptr);
    for (void** slot : me.free_slots) delete slot;
    me.free_slots.clear();
  }

  uint64_t events() const { return events_; }

 private:
  bool rendezvous(StepId s) const {
    if (!g_.local(s) || g_.match(s) == kNoStep) return false;
    return by_rendezvous(ro_, g_.range_bytes(g_.range(s)));
  }
  static std::string pair_name(uint32_t src, uint32_t dst, uint32_t stream) {
    std::string n = "e";
    n += std::to_string(src);
    n += '>';
    n += std::to_string(dst);
    if (stream > 0) {
      n += '#';
      n += std::to_string(stream);
    }
    return n;
  }
  // The eager stream of a send: 0 for plain messages, 1 + its call cost's index for a protocol's
  // (NCCL's connections are not MPI's, so neither waits behind the other's messages).
  uint32_t stream(StepId s) const {
    bool entry = false;
    const CallCost* c = g_.call_cost(s, entry);
    return c ? static_cast<uint32_t>(c - g_.call_costs.data()) + 1 : 0;
  }
  sg4::Mailbox* lane_box(StepId send) const {
    const P2PInfo& p = g_.p2p_info(send);
    std::string n = "r";
    n += std::to_string(g_.rank(send));
    n += '>';
    n += std::to_string(p.peer);
    n += ':';
    n += std::to_string(p.tag);
    n += ':';
    n += std::to_string(p.comm);
    return sg4::Mailbox::by_name(n);
  }

  static void** take_slot(Worker& me) {
    if (me.free_slots.empty()) return new void*(nullptr);
    void** s = me.free_slots.back();
    me.free_slots.pop_back();
    return s;
  }

  void refill(Worker& me, uint32_t k) {
    Incoming& in = me.incoming[k];
    while (in.expected > 0 && in.posted < kWindow) {
      void** slot = take_slot(me);
      me.acts.push_back(in.box->get_async<void>(slot));
      me.pending.push_back({What::PairGet, kNoStep, k, slot});
      --in.expected;
      ++in.posted;
    }
  }
  // A put's payload is the send's step id (+1, never a null pointer): the receiver learns which
  // message came without any memory changing hands.
  static void* payload_of(StepId send) { return reinterpret_cast<void*>(static_cast<uintptr_t>(send) + 1); }
  static StepId sent_step(void* payload) { return static_cast<StepId>(reinterpret_cast<uintptr_t>(payload) - 1); }

  void launch(Worker& me) {
    // Starting an activity may run other actors, which may add requests of their own: take ours
    // first.
    launching_.swap(requests_);
    std::vector<Request> reqs;
    reqs.swap(launching_);
    for (const Request& q : reqs) {
      switch (q.what) {
        case What::EagerPut:
        case What::RendezvousPut: {
          sg4::Mailbox* box = nullptr;
          if (q.what == What::EagerPut) {
            uint32_t st = stream(q.step);
            sg4::Mailbox*& b = me.outgoing[(uint64_t{st} << 32) | q.dst];
            if (!b) b = sg4::Mailbox::by_name(pair_name(q.src, q.dst, st));
            box = b;
          } else {
            box = lane_box(q.step);
          }
          sg4::CommPtr put = q.cap > 0 ? box->put_init(payload_of(q.step), static_cast<uint64_t>(q.amount))->set_rate(q.cap)->start()
                                       : box->put_async(payload_of(q.step), static_cast<uint64_t>(q.amount));
          me.acts.push_back(put);
          me.pending.push_back({q.what, q.step, 0, nullptr});
          if (q.slot_s > 0) {
            slot_puts_[q.step] = SlotWatch{put, q.slot_tail};
            wait_on(me, hosts_[host(q.src)], q.slot_s, What::SlotDelay, q.step);
          }
          break;
        }
        case What::LaneGet: {
          void** slot = take_slot(me);
          me.acts.push_back(lane_box(q.step)->get_async<void>(slot));
          me.pending.push_back({What::LaneGet, q.step, 0, slot});
          break;
        }
        case What::Exec: {
          sg4::ExecPtr e = sg4::Exec::init();
          e->set_flops_amount(q.amount);
          e->set_host(hosts_[host(q.src)]);
          e->start();
          me.acts.push_back(e);
          me.pending.push_back({What::Exec, q.step, 0, nullptr});
          break;
        }
        case What::Delay:
        case What::Hold:
        case What::HopDelay: wait_on(me, hosts_[host(q.src)], q.amount, q.what, q.step); break;
        default: break;
      }
    }
  }

  // A wait of `seconds` (message_latency, a protocol's, a put's bytes leaving) that shares
  // nothing: an execution on host `h` bounded to a rate far below the host's, so that neither it
  // nor the host's other work slows the other (by a part in 1e9 at most).
  static void wait_on(Worker& me, sg4::Host* h, double seconds, What what, StepId step) {
    double rate = h->get_speed() * 1e-9;
    sg4::ExecPtr e = sg4::Exec::init();
    e->set_flops_amount(seconds * rate);
    e->set_bound(rate);
    e->set_host(h);
    e->start();
    me.acts.push_back(e);
    me.pending.push_back({what, step, 0, nullptr});
  }

  uint32_t host(uint32_t rank) const { return o_.map.empty() ? rank : o_.map[rank]; }

  // A host pair's route latency as the network model scales it (cached: few pairs pay protocol costs).
  // And its rate for a lone message (the analytic engine's Path: the model's bandwidth factor and
  // TCP window bound).
  struct Route {
    double lat = 0, rate = 0;
  };
  const Route& route(uint32_t a, uint32_t b) {
    uint64_t key = (uint64_t{a} << 32) | b;
    auto it = route_lat_.find(key);
    if (it != route_lat_.end()) return it->second;
    double lat = 0;
    std::vector<uint32_t> ids;
    p_.route(a, b, ids, lat);
    double bw = p_.route_bw(a, b);
    if (p_.tcp_gamma > 0 && lat > 0) bw = std::min(bw, p_.tcp_gamma / (2 * lat));
    return route_lat_[key] = Route{p_.lat_factor * lat, p_.bw_factor * bw};
  }

  const StepGraph& g_;
  const Platform& p_;
  const SimOptions& o_;
  const RuntimeOptions& ro_;
  std::vector<sg4::Host*>& hosts_;
  std::vector<Worker> workers_;
  std::vector<Request> requests_, launching_;
  std::unordered_map<StepId, Request> delayed_;  // puts waiting out their message latency
  std::unordered_map<StepId, double> hop_;       // puts whose protocol hop latency follows their bytes
  struct SlotWatch {
    sg4::CommPtr put;
    double tail;  // Request::slot_tail
  };
  std::unordered_map<StepId, SlotWatch> slot_puts_;  // eager puts holding a FIFO slot (SlotDelay pending)
  std::unordered_map<uint64_t, Route> route_lat_;
  uint64_t events_ = 0;
};

SimResult run_in_this_process(const StepGraph& g, const Platform& platform, const SimOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  SimResult r;
  r.model = model_name(Model::SimGrid);
  Platform p = platform;
  r.platform = p.spec;
  // SimGrid reads its options from argv. Its own messages stay off: a deadlock is reported from
  // the runtime's state, with source lines, and a crash by the parent.
  std::vector<std::string> args = {"stepgraph", "--log=root.thres:critical", "--log=root.app:file:/dev/null"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  sg4::Engine e(&argc, argv.data());
  std::vector<sg4::Host*> hosts;
  build_simgrid(p, e, hosts);
  uint32_t need = 0;
  for (uint32_t k = 0; k < g.nranks; ++k) need = std::max(need, (o.map.empty() ? k : o.map[k]) + 1);
  if (hosts.size() < need) {
    r.error = "the platform has " + std::to_string(hosts.size()) + " hosts; the run needs " + std::to_string(need);
    return r;
  }
  for (const Instance& in : g.instances)
    if (in.complete && in.consistent) {
      r.error = "collective steps must be expanded into point-to-point algorithms before a SimGrid simulation";
      return r;
    }
  SimOptions oo = o;
  oo.runtime.record_starts = o.trace;
  SimGridTimer timer(g, p, oo, oo.runtime, hosts);
  timer.plan_mailboxes();
  Runtime rt(g, oo.runtime, timer);
  for (uint32_t k = 0; k < g.nranks; ++k)
    sg4::Actor::create("rank" + std::to_string(k), hosts[oo.map.empty() ? k : oo.map[k]], [&timer, &rt, k] { timer.actor(rt, k); });
  e.run();
  r.events = timer.events();
  summarise(g, p, oo, rt, r);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace

SimResult simulate_simgrid(const StepGraph& g, const Platform& p, const SimOptions& o) {
  int fd[2];
  SimResult r;
  r.model = model_name(Model::SimGrid);
  r.platform = p.spec;
  if (pipe(fd) != 0) {
    r.error = std::string("cannot create a pipe: ") + std::strerror(errno);
    return r;
  }
  // Whatever the parent has buffered must not be written twice (by the child too).
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    r.error = std::string("cannot fork: ") + std::strerror(errno);
    return r;
  }
  if (pid == 0) {
    close(fd[0]);
    SimResult res = run_in_this_process(g, p, o);
    refuse_non_finite_times(res);  // inf has no JSON form (and no meaning)
    std::string out = result_to_json(res);
    size_t off = 0;
    while (off < out.size()) {
      ssize_t w = write(fd[1], out.data() + off, out.size() - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    close(fd[1]);
    _exit(0);
  }
  close(fd[1]);
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty()) {
    r.error = WIFSIGNALED(status) ? "the SimGrid simulation died (signal " + std::to_string(WTERMSIG(status)) + ")"
                                  : "the SimGrid simulation failed";
    return r;
  }
  SimResult out;
  if (Diagnostics diags; !result_from_json(text, out, diags)) {
    r.error = "cannot read the SimGrid simulation's result: " + diags.messages();
    return r;
  }
  return out;
}

}  // namespace sg::sim
