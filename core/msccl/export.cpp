#include "core/msccl/export.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>
#include <vector>

namespace sg::msccl {

namespace {

const char* coll_name(ExpectKind k) {
  switch (k) {
    case ExpectKind::Allreduce: return "allreduce";
    case ExpectKind::Allgather: return "allgather";
    case ExpectKind::ReduceScatter: return "reducescatter";  // RCCL's spelling (msccl-tools: reduce_scatter)
    case ExpectKind::Alltoall: return "alltoall";
    default: return nullptr;
  }
}

// Where a thread block's steps come from: sends to a peer, receives from one, or local work,
// on one chain (lane) of each.
struct TbKey {
  int kind = 0;  // 0 send, 1 recv, 2 local
  uint32_t peer = 0, lane = 0;
  auto operator<=>(const TbKey&) const = default;
};

struct XStep {
  StepId s = kNoStep;  // kNoStep: a nop carrying one dependency
  int64_t depid = -1, deps = -1;
  bool hasdep = false;
};

class Exporter {
 public:
  Exporter(const StepGraph& g, const ExportOptions& o, Diagnostics& d) : g_(g), o_(o), d_(d) {}

  bool run(std::ostream& out) {
    if (!postcondition() || !steps_ok() || !chunks()) return false;
    idx_ = g_.rank_index();
    lane_.assign(g_.size(), 0);
    tb_of_.assign(g_.size(), kNone);
    pos_.assign(g_.size(), 0);
    eff_.resize(g_.size());
    eff_done_.assign(g_.size(), 0);
    std::vector<std::vector<std::vector<XStep>>> tbs(g_.nranks);
    std::vector<std::vector<TbKey>> keys(g_.nranks);
    // Lanes first for every rank's sends: a receive takes its send's lane.
    for (uint32_t r = 0; r < g_.nranks; ++r) assign_lanes(r);
    for (uint32_t r = 0; r < g_.nranks; ++r) place(r, tbs[r], keys[r]);
    limits(tbs);
    write(out, tbs, keys);
    return true;
  }

 private:
  static constexpr uint32_t kNone = 0xffffffffu;

  Loc where() const { return x_ && x_->stmt < g_.stmt_locs.size() ? g_.stmt_locs[x_->stmt] : Loc{}; }
  bool refuse(Loc at, const std::string& why) {
    d_.error(at, "cannot export to MSCCL: " + why);
    return false;
  }

  // One collective of a kind MSCCL names, over every rank, on one whole buffer.
  bool postcondition() {
    for (const Expectation& e : g_.expects) {
      if (e.kind == ExpectKind::Nothing) continue;
      if (x_)
        return refuse(g_.stmt_locs.size() > e.stmt ? g_.stmt_locs[e.stmt] : Loc{},
                      "MSCCL's coll is one collective; this schedule has several postconditions");
      x_ = &e;
    }
    if (!x_) return refuse(Loc{}, "the schedule has no postcondition, and MSCCL's coll names one");
    if (!coll_name(x_->kind))
      return refuse(where(),
                    std::string("this is ") + expect_name(x_->kind) +
                        ", and stepgraph exports (and checks on import) MSCCL's allreduce, allgather, reducescatter and alltoall; a "
                        "broadcast or reduce, which RCCL also loads, has a root that the file cannot name");
    const GroupInfo& gr = g_.groups[x_->group];
    if (gr.start != 0 || gr.stride != 1 || gr.count != g_.nranks)
      return refuse(where(), "MSCCL's collective is over every rank; this postcondition is over a part of them");
    // One range: in place, on that buffer. Two (an all-to-all's send and receive buffers): out of
    // place, the first is i and the second o.
    if (x_->bufs.size() > 2 || (x_->bufs.size() == 2 && x_->bufs[0].buf == x_->bufs[1].buf))
      return refuse(where(), "the postcondition's ranges are not one buffer, or an input and an output buffer");
    for (const Range& b : x_->bufs)
      if (b.lo != 0 || b.cnt != g_.buffers[b.buf].chunks)
        return refuse(where(), "the postcondition covers part of " + g_.buffers[b.buf].name + ", and MSCCL's is a whole buffer");
    e_ = x_->bufs[0].buf;
    out_ = x_->bufs.back().buf;
    in_place_ = x_->bufs.size() == 1;
    e_letter_ = in_place_ && x_->kind == ExpectKind::Allgather ? 'o' : 'i';
    return true;
  }

  bool steps_ok() {
    for (StepId s = 0; s < g_.size(); ++s) {
      switch (g_.kind(s)) {
        case StepKind::Collective:
          return refuse(
              g_.loc(s),
              "MSCCL has no collective step; export with --expand, which replaces each by the point-to-point steps of a library algorithm");
        case StepKind::Compute: return refuse(g_.loc(s), "MSCCL has no compute step");
        case StepKind::Send:
        case StepKind::Recv:
          if (g_.flags(s) & (kFlagAnySource | kFlagAnyTag)) return refuse(g_.loc(s), "MSCCL's connections have no wildcard receive");
          if (g_.match(s) == kNoStep) return refuse(g_.loc(s), "this transfer has no partner (" + g_.range_name(g_.range(s)) + ")");
          break;
        default: break;
      }
    }
    return true;
  }

  // The MSCCL chunk: the greatest common divisor of the buffers' chunk sizes.
  bool chunks() {
    uint64_t base = 0;
    for (const BufferInfo& b : g_.buffers)
      if (b.chunks && b.chunk_bytes) base = std::gcd(base, b.chunk_bytes);
    if (base == 0) return refuse(where(), "the buffers have no bytes");
    k_.resize(g_.buffers.size());
    off_.resize(g_.buffers.size());
    for (uint32_t b = 0; b < g_.buffers.size(); ++b) {
      k_[b] = g_.buffers[b].chunk_bytes / base;
      if (b == e_ || b == out_) continue;
      off_[b] = scratch_;
      scratch_ += uint64_t{g_.buffers[b].chunks} * k_[b];
    }
    in_chunks_ = uint64_t{g_.buffers[e_].chunks} * k_[e_];
    out_chunks_ = uint64_t{g_.buffers[out_].chunks} * k_[out_];
    nchunks_ = std::max(in_chunks_, out_chunks_);
    if (x_->kind != ExpectKind::Allreduce && nchunks_ % g_.nranks)
      return refuse(
          where(), "the buffer's " + std::to_string(nchunks_) + " MSCCL chunks do not split into " + std::to_string(g_.nranks) + " blocks");
    return true;
  }

  // A range as MSCCL's (buffer letter, offset, count).
  struct XRange {
    char buf = 'i';
    int64_t off = -1, cnt = 0;
  };
  XRange xr(const Range& r) const {
    if (r.buf == e_) return {e_letter_, int64_t(r.lo * k_[r.buf]), int64_t(r.cnt * k_[r.buf])};
    if (r.buf == out_) return {'o', int64_t(r.lo * k_[r.buf]), int64_t(r.cnt * k_[r.buf])};
    return {'s', int64_t(off_[r.buf] + r.lo * k_[r.buf]), int64_t(r.cnt * k_[r.buf])};
  }

  // The steps s must wait for, as MSCCL sees them: through a wait, the operations it completes
  // and what the wait itself follows; a dependency on a nonblocking receive's start becomes one
  // on what that receive follows (an MSCCL receive is posted from the start too).
  const std::vector<StepId>& eff(StepId s) {
    if (eff_done_[s]) return eff_[s];
    std::vector<StepId> out;
    std::vector<StepId> todo(g_.deps(s).begin(), g_.deps(s).end());
    std::vector<StepId> seen;
    while (!todo.empty()) {
      StepId d = todo.back();
      todo.pop_back();
      if (std::find(seen.begin(), seen.end(), d) != seen.end()) continue;
      seen.push_back(d);
      if (g_.kind(d) == StepKind::Wait) {
        for (const StepId* h = g_.handles_begin(d); h != g_.handles_end(d); ++h) out.push_back(*h);
        todo.insert(todo.end(), g_.deps(d).begin(), g_.deps(d).end());
      } else if (g_.kind(d) == StepKind::Recv && g_.nonblocking(d) && g_.kind(s) != StepKind::Wait) {
        todo.insert(todo.end(), g_.deps(d).begin(), g_.deps(d).end());
      } else {
        out.push_back(d);
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    eff_[s] = std::move(out);
    eff_done_[s] = 1;
    return eff_[s];
  }

  // Whether a (earlier) is an ancestor of b on their rank.
  bool ancestor(StepId a, StepId b) {
    if (a == b) return true;
    ++stamp_;
    if (mark_.size() < g_.size()) mark_.assign(g_.size(), 0);
    std::vector<StepId> todo{b};
    while (!todo.empty()) {
      StepId x = todo.back();
      todo.pop_back();
      for (StepId d : eff(x)) {
        if (d == a) return true;
        if (d < a || mark_[d] == stamp_) continue;
        mark_[d] = stamp_;
        todo.push_back(d);
      }
    }
    return false;
  }

  // Chains: a step joins the first lane of its kind whose last step it follows (and, for a
  // send, whose last message its receiver takes before this one), else a new lane.
  void assign_lanes(uint32_t r) {
    std::map<std::pair<int, uint32_t>, std::vector<StepId>> last;  // (kind, peer) -> each lane's last step
    for (uint64_t i = idx_.off[r]; i < idx_.off[r + 1]; ++i) {
      StepId s = idx_.steps[i];
      StepKind k = g_.kind(s);
      if (k != StepKind::Send && k != StepKind::Copy && k != StepKind::Reduce) continue;
      int kind = k == StepKind::Send ? 0 : 2;
      uint32_t peer = kind == 0 ? g_.peer(s) : 0;
      auto& lanes = last[{kind, peer}];
      uint32_t lane = 0;
      while (lane < lanes.size() && !(ancestor(lanes[lane], s) && (kind != 0 || g_.match(lanes[lane]) < g_.match(s)))) ++lane;
      if (lane == lanes.size()) lanes.push_back(s);
      lanes[lane] = s;
      lane_[s] = lane;
      if (kind == 0) lane_[g_.match(s)] = lane;  // the receive is on the same connection
    }
  }

  TbKey key(StepId s) const {
    switch (g_.kind(s)) {
      case StepKind::Send: return {0, g_.peer(s), lane_[s]};
      case StepKind::Recv: return {1, g_.peer(s), lane_[s]};
      default: return {2, 0, lane_[s]};
    }
  }

  // Rank r's thread blocks: each its steps in program order, the cross-block dependencies as
  // depid/deps (nops before the step for all but one).
  void place(uint32_t r, std::vector<std::vector<XStep>>& tbs, std::vector<TbKey>& keys) {
    std::map<TbKey, uint32_t> id;
    for (uint64_t i = idx_.off[r]; i < idx_.off[r + 1]; ++i) {
      StepId s = idx_.steps[i];
      if (g_.kind(s) != StepKind::Wait) id.emplace(key(s), 0);
    }
    keys.clear();
    for (auto& [k, v] : id) v = static_cast<uint32_t>(keys.size()), keys.push_back(k);
    tbs.assign(keys.size(), {});
    for (uint64_t i = idx_.off[r]; i < idx_.off[r + 1]; ++i) {
      StepId s = idx_.steps[i];
      if (g_.kind(s) == StepKind::Wait) continue;
      uint32_t t = id[key(s)];
      tb_of_[s] = t;
      // The latest step of each other thread block it waits for.
      std::map<uint32_t, uint32_t> need;
      for (StepId d : eff(s)) {
        if (g_.kind(d) == StepKind::Wait || tb_of_[d] == kNone || tb_of_[d] == t) continue;
        auto [it, fresh] = need.emplace(tb_of_[d], pos_[d]);
        if (!fresh) it->second = std::max(it->second, pos_[d]);
      }
      auto& list = tbs[t];
      size_t k = 0;
      for (auto [tb, p] : need) {
        tbs[tb][p].hasdep = true;
        if (++k < need.size()) list.push_back({kNoStep, int64_t(tb), int64_t(p), false});
        else list.push_back({s, int64_t(tb), int64_t(p), false});
      }
      if (need.empty()) list.push_back({s, -1, -1, false});
      pos_[s] = static_cast<uint32_t>(list.size() - 1);
    }
  }

  // RCCL's hard limits (src/include/msccl/msccl_struct.h): a file over them loads in stepgraph
  // and MSCCL's own runtime, but RCCL refuses it; warned, not refused.
  void limits(const std::vector<std::vector<std::vector<XStep>>>& tbs) {
    size_t most_tbs = 0, most_steps = 0;
    for (const auto& gpu : tbs) {
      most_tbs = std::max(most_tbs, gpu.size());
      for (const auto& tb : gpu) {
        most_steps = std::max(most_steps, tb.size());
        for (const XStep& x : tb)
          if (x.s != kNoStep) max_cnt_ = std::max<uint64_t>(max_cnt_, uint64_t{g_.range(x.s).cnt} * k_[g_.range(x.s).buf]);
      }
    }
    if (most_tbs > 64)
      d_.warning(where(), "a gpu has " + std::to_string(most_tbs) + " thread blocks; RCCL takes at most 64 (MSCCL_MAX_NUM_THREAD_BLOCKS)");
    if (most_steps >= 64)
      d_.warning(where(), "a thread block has " + std::to_string(most_steps) + " steps; RCCL takes at most 63 (MSCCL_MAX_NUM_STEPS = 64)");
    if (max_cnt_ >= 72)
      d_.warning(where(), "a step moves " + std::to_string(max_cnt_) + " chunks; RCCL takes at most 71 (MSCCL_MAX_COUNT = 72)");
  }

  void write(std::ostream& out, const std::vector<std::vector<std::vector<XStep>>>& tbs, const std::vector<std::vector<TbKey>>& keys) {
    uint32_t channels = 1;
    for (const auto& ks : keys)
      for (const TbKey& k : ks)
        if (k.kind != 2) channels = std::max(channels, k.lane + 1);
    // In place: the collective's buffer only (i, or o for an all-gather: msccl-tools' layout).
    uint64_t ic = e_letter_ == 'i' ? in_chunks_ : 0, oc = in_place_ ? (e_letter_ == 'o' ? in_chunks_ : 0) : out_chunks_;
    if (!o_.comment.empty()) {  // XML forbids "--" inside a comment
      std::string c = o_.comment;
      for (size_t at; (at = c.find("--")) != std::string::npos;) c.replace(at, 2, "- -");
      out << "<!-- " << c << " -->\n";
    }
    out << "<algo name=\"" << g_.schedule << "\" proto=\"" << o_.proto << "\" nchannels=\"" << channels << "\" nchunksperloop=\""
        << nchunks_ << "\" ngpus=\"" << g_.nranks << "\" coll=\"" << coll_name(x_->kind) << "\" inplace=\"" << (in_place_ ? 1 : 0)
        << "\" outofplace=\"" << (in_place_ ? 0 : 1) << "\" minBytes=\"0\" maxBytes=\"0\">\n";
    for (uint32_t r = 0; r < g_.nranks; ++r) {
      out << "  <gpu id=\"" << r << "\" i_chunks=\"" << ic << "\" o_chunks=\"" << oc << "\" s_chunks=\"" << scratch_ << "\">\n";
      for (uint32_t t = 0; t < tbs[r].size(); ++t) {
        const TbKey& k = keys[r][t];
        out << "    <tb id=\"" << t << "\" send=\"" << (k.kind == 0 ? int64_t(k.peer) : -1) << "\" recv=\""
            << (k.kind == 1 ? int64_t(k.peer) : -1) << "\" chan=\"" << (k.kind == 2 ? 0 : k.lane) << "\">\n";
        for (size_t i = 0; i < tbs[r][t].size(); ++i) write_step(out, tbs[r][t][i], i);
        out << "    </tb>\n";
      }
      out << "  </gpu>\n";
    }
    out << "</algo>\n";
  }

  void write_step(std::ostream& out, const XStep& x, size_t i) {
    const char* type = "nop";
    XRange src, dst;
    if (x.s != kNoStep) {
      StepId s = x.s;
      switch (g_.kind(s)) {
        case StepKind::Send:
          type = "s";
          src = xr(g_.range(s));
          dst = xr(g_.range(g_.match(s)));  // the receiver's slot, as msccl-tools writes it
          break;
        case StepKind::Recv:
          dst = xr(g_.range(s));
          if (g_.flags(s) & kFlagReduce) type = "rrc", src = dst;  // dst = received ⊕ dst
          else type = "r", src = xr(g_.range(g_.match(s)));
          break;
        case StepKind::Copy:
          type = "cpy";
          src = xr(g_.copy_source(s)), dst = xr(g_.range(s));
          break;
        case StepKind::Reduce:
          type = "re";
          src = xr(g_.copy_source(s)), dst = xr(g_.range(s));
          break;
        default: break;
      }
    }
    out << "      <step s=\"" << i << "\" type=\"" << type << "\" srcbuf=\"" << src.buf << "\" srcoff=\"" << src.off << "\" dstbuf=\""
        << (x.s == kNoStep ? 'o' : dst.buf) << "\" dstoff=\"" << dst.off << "\" cnt=\"" << (x.s == kNoStep ? 0 : std::max(src.cnt, dst.cnt))
        << "\" depid=\"" << x.depid << "\" deps=\"" << x.deps << "\" hasdep=\"" << (x.hasdep ? 1 : 0) << "\"/>\n";
  }

  const StepGraph& g_;
  const ExportOptions& o_;
  Diagnostics& d_;
  const Expectation* x_ = nullptr;
  uint32_t e_ = 0, out_ = 0;  // the postcondition's input and output buffers (the same in place)
  bool in_place_ = true;
  char e_letter_ = 'i';
  uint64_t in_chunks_ = 0, out_chunks_ = 0;
  std::vector<uint64_t> k_, off_;
  uint64_t scratch_ = 0, nchunks_ = 0, max_cnt_ = 0;
  StepGraph::RankIndex idx_;
  std::vector<uint32_t> lane_, tb_of_, pos_;
  std::vector<std::vector<StepId>> eff_;
  std::vector<uint8_t> eff_done_;
  std::vector<uint32_t> mark_;
  uint32_t stamp_ = 0;
};

}  // namespace

bool write_msccl(std::ostream& out, const StepGraph& g, const ExportOptions& o, Diagnostics& diags) {
  std::ostringstream text;
  if (!Exporter(g, o, diags).run(text)) return false;
  out << text.str();
  return true;
}

}  // namespace sg::msccl
