#include "core/io/trace.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>

#include "core/io/writers.hpp"

namespace sg {

namespace {

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}

// Times are whole nanoseconds, written as microseconds with three decimals (Perfetto reads the
// digits exactly): slices nest or not on the values a viewer sees, not on doubles a rounding apart.
int64_t to_ns(double seconds) { return std::max<int64_t>(0, std::llround(seconds * 1e9)); }
std::string us(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
  return buf;
}

// The tracks of a rank. Steps are thread tracks (complete slices, packed into lanes that nest);
// what is in flight goes as async slices, one track of each name per rank in Perfetto.
enum Kind : uint8_t { kSteps, kSends, kRecvs };
const char* const kTrackName[] = {"steps", "sends in flight", "receives in flight"};

enum Flow : uint8_t { kNoFlow, kFlowOut, kFlowIn };

struct Slice {
  int64_t t0 = 0, t1 = 0;
  StepId step = 0;
  StepId bind = kNoStep;  // the flow's id: the send's step
  uint32_t rank = 0, lane = 0;
  Kind kind = kSteps;
  Flow flow = kNoFlow;
  bool unfinished = false;
};

// Puts a slice on the first lane where it nests: each lane keeps the ends of its open slices,
// innermost last. Slices come by start, the longer first at one start.
uint32_t place(std::vector<std::vector<int64_t>>& lanes, int64_t t0, int64_t t1) {
  for (uint32_t k = 0; k < lanes.size(); ++k) {
    std::vector<int64_t>& open = lanes[k];
    while (!open.empty() && open.back() <= t0) open.pop_back();
    if (open.empty() || t1 <= open.back()) {
      open.push_back(t1);
      return k;
    }
  }
  lanes.push_back({t1});
  return static_cast<uint32_t>(lanes.size() - 1);
}

class Writer {
 public:
  Writer(std::ostream& os, const StepGraph& g, const SourceManager& sm, const TraceRun& run) : os_(os), g_(g), sm_(sm), run_(run) {}

  void write() {
    collect();
    pack();
    os_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    metadata();
    events();
    links();
    os_ << "\n],\"otherData\":{\"generator\":\"stepgraph\",\"links\":\""
        << json_escape(run_.links_note.empty() ? "every message" : run_.links_note) << "\"}}\n";
  }

 private:
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  static double at(std::span<const double> v, StepId s) { return s < v.size() ? v[s] : kNaN; }
  double start(StepId s) const { return at(run_.starts, s); }
  double end(StepId s) const { return at(run_.ends, s); }
  double arrival(StepId s) const { return at(run_.arrivals, s); }
  StepId partner(StepId s) const {
    if (!run_.partners.empty()) return s < run_.partners.size() ? run_.partners[s] : kNoStep;
    return g_.local(s) ? g_.match(s) : g_.ref(s);
  }

  // Where step s's local work ran: its last `work` seconds before its end, not before t0.
  double ran_from(StepId s, double t0, double t1) const { return run_.work ? std::max(t0, t1 - run_.work(s)) : t0; }

  void add(StepId s, Kind kind, double t0, double t1, bool unfinished, Flow flow = kNoFlow, StepId bind = kNoStep) {
    Slice x;
    x.t0 = to_ns(t0);
    x.t1 = std::max(x.t0, to_ns(t1));
    x.step = s;
    x.rank = g_.rank(s);
    x.kind = kind;
    x.flow = flow;
    x.bind = bind;
    x.unfinished = unfinished;
    slices_.push_back(x);
  }

  void collect() {
    // What never finished is drawn to the run's end.
    for (std::span<const double> v : {run_.starts, run_.ends, run_.arrivals})
      for (double t : v)
        if (std::isfinite(t)) last_ = std::max(last_, t);
    // A flow per message whose send started and whose receive completed: the receive claims its
    // send (once, so every flow has one start and one end).
    std::vector<StepId> taker(g_.size(), kNoStep);
    for (StepId r = 0; r < g_.size(); ++r) {
      if (g_.kind(r) != StepKind::Recv || !std::isfinite(end(r))) continue;
      StepId m = partner(r);
      if (m < g_.size() && g_.kind(m) == StepKind::Send && std::isfinite(start(m)) && taker[m] == kNoStep) taker[m] = r;
    }
    for (StepId s = 0; s < g_.size(); ++s) {
      double t0 = start(s), t1 = end(s);
      if (!std::isfinite(t0)) continue;
      bool done = std::isfinite(t1);
      switch (g_.kind(s)) {
        case StepKind::Send: {
          // Until the data has arrived (a rendezvous send may complete a little before).
          double a = arrival(s);
          bool known = !run_.arrivals.empty();
          double until = known ? (std::isfinite(a) ? std::max(a, done ? t1 : a) : last_) : (done ? t1 : last_);
          add(s, kSends, t0, until, known ? !std::isfinite(a) : !done, taker[s] != kNoStep ? kFlowOut : kNoFlow, s);
          break;
        }
        case StepKind::Recv: {
          if (!done) {
            add(s, kRecvs, t0, last_, true);
            break;
          }
          StepId m = partner(s);
          double a = m < g_.size() ? arrival(m) : kNaN;
          bool flow = m < g_.size() && taker[m] == s;
          // Posted before its data came: pending from posting to completion.
          if (std::isfinite(a) && to_ns(a) > to_ns(t0)) add(s, kRecvs, t0, t1, false);
          add(s, kSteps, ran_from(s, std::isfinite(a) ? std::max(a, t0) : t0, t1), t1, false, flow ? kFlowIn : kNoFlow, m);
          break;
        }
        case StepKind::Compute:
        case StepKind::Copy:
        case StepKind::Reduce: add(s, kSteps, done ? ran_from(s, t0, t1) : t0, done ? t1 : last_, !done); break;
        default: add(s, kSteps, t0, done ? t1 : last_, !done); break;
      }
    }
  }

  // The steps of a rank on lanes that nest; each lane is a thread track. The first has the
  // process's id (a viewer's "main thread", listed first), the others ids above every process's.
  void pack() {
    std::vector<uint32_t> order;
    for (uint32_t i = 0; i < slices_.size(); ++i)
      if (slices_[i].kind == kSteps) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
      const Slice &a = slices_[x], &b = slices_[y];
      if (a.rank != b.rank) return a.rank < b.rank;
      if (a.t0 != b.t0) return a.t0 < b.t0;
      if (a.t1 != b.t1) return a.t1 > b.t1;
      return a.step < b.step;
    });
    lanes_.assign(g_.nranks, 1);
    std::vector<std::vector<int64_t>> open;
    for (size_t i = 0; i < order.size(); ++i) {
      Slice& s = slices_[order[i]];
      if (i == 0 || s.rank != slices_[order[i - 1]].rank) open.clear();
      s.lane = place(open, s.t0, s.t1);
      lanes_[s.rank] = std::max(lanes_[s.rank], s.lane + 1);
    }
    first_tid_.assign(g_.nranks, 0);
    uint32_t next = g_.nranks + 2;
    for (uint32_t r = 0; r < g_.nranks; ++r) {
      first_tid_[r] = next;
      next += lanes_[r] - 1;
    }
  }

  uint32_t pid(uint32_t rank) const { return rank + 1; }
  uint32_t tid(uint32_t rank, uint32_t lane) const { return lane == 0 ? pid(rank) : first_tid_[rank] + lane - 1; }
  uint32_t links_pid() const { return g_.nranks + 1; }

  void sep() {
    if (!first_) os_ << ",\n";
    first_ = false;
  }
  void meta(const char* what, uint32_t p, uint32_t t, const std::string& key, const std::string& value) {
    sep();
    os_ << "{\"ph\":\"M\",\"name\":\"" << what << "\",\"pid\":" << p << ",\"tid\":" << t << ",\"args\":{\"" << key << "\":" << value
        << "}}";
  }

  void metadata() {
    for (uint32_t r = 0; r < g_.nranks; ++r) {
      meta("process_name", pid(r), pid(r), "name", "\"rank " + std::to_string(r) + "\"");
      meta("process_sort_index", pid(r), pid(r), "sort_index", std::to_string(r));
      for (uint32_t lane = 0; lane < lanes_[r]; ++lane) {
        std::string name = kTrackName[kSteps];
        if (lane > 0) name += " (" + std::to_string(lane + 1) + ")";
        meta("thread_name", pid(r), tid(r, lane), "name", "\"" + name + "\"");
        meta("thread_sort_index", pid(r), tid(r, lane), "sort_index", std::to_string(lane));
      }
    }
    if (run_.links.empty() && run_.links_note.empty()) return;
    meta("process_name", links_pid(), links_pid(), "name", "\"links: bytes in flight\"");
    meta("process_sort_index", links_pid(), links_pid(), "sort_index", std::to_string(g_.nranks));
  }

  // Every slice's events in time order. At one instant: async begins (a send's, which starts a
  // flow), then complete slices (a receive's, which ends one), longest first (a parent before its
  // children), then async ends (after the begin of a slice that lasts no time).
  void events() {
    struct Event {
      int64_t ts;
      uint8_t cls;  // 0 begin, 1 complete, 2 end
      const Slice* s;
    };
    std::vector<Event> ev;
    ev.reserve(slices_.size() * 2);
    for (const Slice& s : slices_) {
      if (s.kind == kSteps) {
        ev.push_back({s.t0, 1, &s});
      } else {
        ev.push_back({s.t0, 0, &s});
        ev.push_back({s.t1, 2, &s});
      }
    }
    std::sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) {
      if (a.ts != b.ts) return a.ts < b.ts;
      if (a.cls != b.cls) return a.cls < b.cls;
      if (a.s->t1 != b.s->t1) return a.s->t1 > b.s->t1;
      return a.s->step < b.s->step;
    });
    for (const Event& e : ev) {
      const Slice& s = *e.s;
      sep();
      std::string name = describe_step(g_, s.step) + (s.unfinished ? " (never completed)" : "");
      os_ << "{\"pid\":" << pid(s.rank) << ",\"ts\":" << us(e.ts) << ",\"cat\":\"" << step_kind_name(g_.kind(s.step)) << "\",";
      if (e.cls == 1) {
        os_ << "\"ph\":\"X\",\"tid\":" << tid(s.rank, s.lane) << ",\"dur\":" << us(s.t1 - s.t0) << ",\"name\":\"" << json_escape(name)
            << "\"";
      } else {
        // One name per track: Perfetto shows async slices of one name in a process as one track.
        os_ << "\"ph\":\"" << (e.cls == 0 ? 'b' : 'e') << "\",\"tid\":" << pid(s.rank) << ",\"id\":" << s.step << ",\"name\":\""
            << kTrackName[s.kind] << "\"";
        if (e.cls == 2) {
          os_ << "}";
          continue;
        }
      }
      if (s.flow != kNoFlow) os_ << ",\"bind_id\":" << s.bind << (s.flow == kFlowOut ? ",\"flow_out\":true" : ",\"flow_in\":true");
      os_ << ",\"args\":{\"step\":" << s.step << ",\"source\":\"" << json_escape(step_where(g_, sm_, s.step)) << "\"";
      if (e.cls == 0) os_ << ",\"what\":\"" << json_escape(name) << "\"";
      if (g_.kind(s.step) == StepKind::Send || g_.kind(s.step) == StepKind::Recv) os_ << ",\"bytes\":" << g_.range_bytes(g_.range(s.step));
      os_ << "}}";
    }
  }

  // Per link, the bytes in flight: up by a message's bytes at its transfer's start, down at its
  // arrival; a sample where it changes.
  void links() {
    uint32_t p = links_pid();
    std::vector<std::pair<int64_t, int64_t>> steps;
    for (const TraceLink& l : run_.links) {
      steps.clear();
      for (const TraceLinkUse& u : l.uses) {
        int64_t t0 = to_ns(u.start), t1 = std::max(t0, to_ns(u.end));
        steps.push_back({t0, static_cast<int64_t>(u.bytes)});
        steps.push_back({t1, -static_cast<int64_t>(u.bytes)});
      }
      std::sort(steps.begin(), steps.end());
      int64_t v = 0, shown = -1;
      for (size_t i = 0; i < steps.size(); ++i) {
        v += steps[i].second;
        if ((i + 1 < steps.size() && steps[i + 1].first == steps[i].first) || v == shown) continue;
        shown = v;
        sep();
        os_ << "{\"ph\":\"C\",\"pid\":" << p << ",\"tid\":" << p << ",\"ts\":" << us(steps[i].first) << ",\"name\":\""
            << json_escape(l.name) << "\",\"args\":{\"bytes in flight\":" << v << "}}";
      }
    }
    if (run_.links_note.empty()) return;
    // Said where the viewer shows it too: an instant on the links' process.
    sep();
    os_ << "{\"ph\":\"i\",\"s\":\"p\",\"pid\":" << p << ",\"tid\":" << p << ",\"ts\":0.000,\"name\":\"" << json_escape(run_.links_note)
        << "\"}";
  }

  std::ostream& os_;
  const StepGraph& g_;
  const SourceManager& sm_;
  const TraceRun& run_;
  std::vector<Slice> slices_;
  std::vector<uint32_t> lanes_, first_tid_;  // per rank: steps tracks, and the second one's thread id
  double last_ = 0;
  bool first_ = true;
};

}  // namespace

void write_chrome_trace(std::ostream& os, const StepGraph& g, const SourceManager& sm, const TraceRun& run) {
  Writer(os, g, sm, run).write();
}

}  // namespace sg
