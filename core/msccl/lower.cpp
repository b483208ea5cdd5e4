#include "core/msccl/lower.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "core/base/sizes.hpp"

namespace sg::msccl {

bool declares(const std::string& param) { return param == "size" || param == "inplace"; }

namespace {

class Lowering {
 public:
  Lowering(Session& s, const Program& p, const ElabOptions& o) : s_(s), p_(p), o_(o), g_(std::make_unique<StepGraph>()) {}

  std::unique_ptr<StepGraph> run() {
    if (!parameters() || !buffers()) return nullptr;
    world_ = g_->intern_group(GroupInfo{0, p_.ngpus, 1});
    // Statement 0 is the <algo> element: the postcondition and the initial values come from its
    // coll="…", so a wrong result's "required by" note points there.
    locs_.push_back(p_.loc);
    labels_.push_back("algo coll=\"" + p_.coll_text + "\"");
    postcondition();
    for (uint32_t r = 0; r < p_.ngpus; ++r)
      if (o_.only_rank < 0 || o_.only_rank == r)
        if (!gpu(p_.gpus[r])) return nullptr;
    unused_buffers();
    if (failed_) return nullptr;
    g_->stmt_locs = std::move(locs_);
    g_->stmt_labels = std::move(labels_);
    g_->unordered_hazards = true;
    // A connection's slots (docs/msccl.md, "Connections"): NCCL_STEPS = 8 per connection; a
    // Simple piece takes 4 of them (2 in flight), an LL or LL128 piece 1 (8 in flight).
    g_->connection_slots = p_.proto == "Simple" ? 2 : 8;
    // The protocol's bandwidth (docs/msccl.md, "Simulation"): NCCL's tuning model runs a ring
    // with LL at busBw / 2 and with LL128 at 0.92 busBw (src/graph/tuning.cc:327-337, the
    // factors core/graph/nccl_tuning.cpp uses), the cost of their flags: LL sends a 4-byte flag
    // beside every 4 data bytes, LL128 one flag word per line.
    // Its latency: LL's flags land with the data, so the platform's latency is LL's; Simple
    // (data, then a flag after a fence) and LL128 pay NCCL's difference per hop, hwLatencies
    // for a ring over NVLink (tuning.cc:159): LL 0.6 µs, LL128 1.9 µs, Simple 3.4 µs.
    if (p_.proto == "LL") g_->wire_factor = 2.0, g_->wire_why = "proto LL: 2 bytes on the wire per payload byte";
    if (p_.proto == "LL128")
      g_->wire_factor = 1 / 0.92, g_->message_latency = 1.3e-6,
      g_->wire_why = "proto LL128: 1/0.92 bytes on the wire per payload byte, 1.3 us more per message than LL";
    if (p_.proto == "Simple") g_->message_latency = 2.8e-6, g_->wire_why = "proto Simple: 2.8 us more per message than LL";
    if (p_.has_outofplace) g_->window_min = p_.min_bytes, g_->window_max = p_.max_bytes;
    g_->shrink_dep_offsets();
    return std::move(g_);
  }

 private:
  // A --set value as a source of its own, so that its error shows it with a caret.
  Loc set_value(const std::string& key, const std::string& value) { return Loc{s_.sources.add("--set " + key, value), 1, 1}; }
  void error(Loc at, const std::string& msg) {
    s_.diags.error(at, msg);
    failed_ = true;
  }

  // --set size=… and inplace=…; N must be the file's ngpus.
  bool parameters() {
    if (o_.nranks != p_.ngpus) {
      auto& d = s_.diags.error(
          p_.loc, "this MSCCL algorithm runs on ngpus=" + std::to_string(p_.ngpus) + " ranks, not N = " + std::to_string(o_.nranks));
      d.unsupported = true;  // the file does not apply to this N: say so, as a schedule's require does
      return false;
    }
    // By default the largest size the file is picked for, or 64 MiB, in whole chunks.
    size_ = p_.max_bytes > 0 ? static_cast<uint64_t>(p_.max_bytes) : uint64_t{64} << 20;
    size_ -= size_ % p_.nchunksperloop;
    if (size_ == 0) size_ = p_.nchunksperloop;
    inplace_ = p_.inplace;
    for (const auto& [k, v] : o_.sets) {
      if (k == "size") {
        if (!parse_size(v, size_) || size_ == 0) return error(set_value(k, v), "not a size in bytes (e.g. 1MiB, 65536)"), false;
      } else if (k == "inplace") {
        if (v != "0" && v != "1") return error(set_value(k, v), "inplace is 0 (out of place) or 1 (in place)"), false;
        inplace_ = v == "1";
      } else {
        auto& d = s_.diags.error(p_.loc, "unknown parameter '" + k + "' (--set " + k + "=" + v + ")");
        d.notes.push_back({Loc{}, "an MSCCL algorithm takes parameters: size, inplace"});
        return failed_ = true, false;
      }
    }
    if (inplace_ && !p_.inplace)
      s_.diags.warning(p_.loc, "inplace=1, but the file declares inplace=\"0\": RCCL would not pick it for an in-place call");
    if (!inplace_ && !p_.outofplace)
      s_.diags.warning(p_.loc, "inplace=0, but the file does not declare out-of-place use: RCCL would not pick it for such a call");
    if (size_ < p_.nchunksperloop)
      return error(p_.loc, "size " + std::to_string(size_) +
                               " B is less than one byte per chunk (nchunksperloop=" + std::to_string(p_.nchunksperloop) + ")"),
             false;
    if (p_.has_outofplace &&
        (static_cast<int64_t>(size_) < p_.min_bytes || (p_.max_bytes > 0 && static_cast<int64_t>(size_) > p_.max_bytes)))
      s_.diags.warning(p_.loc, "size " + std::to_string(size_) +
                                   " B is outside the file's window (minBytes=" + std::to_string(p_.min_bytes) +
                                   ", maxBytes=" + std::to_string(p_.max_bytes) + "): RCCL would not pick this algorithm for it");
    if (size_ % p_.nchunksperloop)
      s_.diags.warning(
          p_.loc, "size " + std::to_string(size_) + " B is not a multiple of nchunksperloop=" + std::to_string(p_.nchunksperloop) +
                      ": RCCL would not pick this algorithm for it; chunks of " + std::to_string(size_ / p_.nchunksperloop) + " B here");
    g_->params = {{"size", static_cast<int64_t>(size_)}, {"inplace", inplace_ ? 1 : 0}};
    g_->schedule = p_.name.empty() ? s_.sources.file(p_.file).name() : p_.name;
    g_->file = s_.sources.file(p_.file).name();
    g_->nranks = p_.ngpus;
    g_->only_rank = o_.only_rank;
    return true;
  }

  // The buffers, with RCCL's aliasing of i and o in place.
  bool buffers() {
    uint32_t ic = 0, oc = 0, sc = 0, ntb = 0;
    for (const Gpu& gp : p_.gpus) {
      ic = std::max(ic, gp.i_chunks), oc = std::max(oc, gp.o_chunks), sc = std::max(sc, gp.s_chunks);
      ntb = std::max(ntb, static_cast<uint32_t>(gp.tbs.size()));
      for (const Tb& t : gp.tbs)
        for (const Step& st : t.steps)
          if (st.type == StepType::RecvReduceSend) tmp_per_tb_ = std::max(tmp_per_tb_, static_cast<uint32_t>(st.cnt));
    }
    uint32_t tmp = tmp_per_tb_ * ntb;
    uint32_t n = p_.ngpus, c = p_.nchunksperloop;
    if ((p_.coll == Coll::Allgather || p_.coll == Coll::ReduceScatter || p_.coll == Coll::Alltoall) && c % n)
      return error(p_.loc, "nchunksperloop=" + std::to_string(c) + " does not split into ngpus=" + std::to_string(n) + " equal blocks"),
             false;
    cf_ = p_.coll == Coll::Allreduce || p_.coll == Coll::Custom ? c : c / n;
    // The collective's own extents in chunks: input and output.
    uint32_t in = p_.coll == Coll::Allgather ? cf_ : c, out = p_.coll == Coll::ReduceScatter ? cf_ : c;
    chunk_bytes_ = size_ / c;
    auto add = [&](const char* name, uint32_t chunks) {
      BufferInfo b;
      b.name = name;
      b.dims = {chunks};
      b.chunks = chunks;
      b.chunk_bytes = chunk_bytes_;
      b.chunk_elems = chunk_bytes_ / dtype_size(b.dtype);
      b.loc = p_.loc;
      g_->buffers.push_back(std::move(b));
      return static_cast<uint32_t>(g_->buffers.size() - 1);
    };
    if (inplace_ && p_.coll == Coll::Allgather) {
      io_o_ = io_i_ = add("o", std::max({oc, c}));  // i is rank r's window of o
      window_i_ = true;
    } else if (inplace_ && p_.coll == Coll::ReduceScatter) {
      io_i_ = io_o_ = add("i", std::max({ic, c}));  // o is rank r's window of i
      window_o_ = true;
    } else if (inplace_ && p_.coll != Coll::Custom) {
      // coll="custom" has no aliasing: MSCCLang's Collective.get_buffer_index keeps i and o
      // apart whatever its inplace flag says, and no runtime defines an in-place custom call.
      io_i_ = io_o_ = add("i", std::max({ic, oc, in, out}));
    } else {
      io_i_ = add("i", std::max(ic, in));
      io_o_ = add("o", std::max(oc, out));
    }
    if (sc) s_buf_ = add("s", sc);
    if (tmp) {
      tmp_buf_ = add("t", tmp);  // rrs's value on its way: recv ⊕ src, sent, never stored
    }
    return true;
  }

  void postcondition() {
    uint32_t n = p_.ngpus, c = p_.nchunksperloop;
    Range in{io_i_, 0, p_.coll == Coll::Allgather ? cf_ : c};
    auto contrib = [&](Range r) { g_->inits.push_back(InitRule{InitKind::Contrib, r, kAnyRank, world_, r.lo, 0}); };
    Expectation x;
    x.group = world_;
    switch (p_.coll) {
      case Coll::Allreduce:
        contrib(Range{io_i_, 0, c});
        x.kind = ExpectKind::Allreduce;
        x.bufs = {Range{io_i_, 0, c}};
        if (io_o_ != io_i_) x.bufs.push_back(Range{io_o_, 0, c});
        break;
      case Coll::Allgather:
        x.kind = ExpectKind::Allgather;
        if (window_i_) {  // in place: rank r holds its block of o
          g_->inits.push_back(InitRule{InitKind::Owned, Range{io_o_, 0, c}, kAnyRank, world_, 0, 0});
          x.bufs = {Range{io_o_, 0, c}};
        } else {
          contrib(in);
          x.bufs = {in, Range{io_o_, 0, c}};
        }
        break;
      case Coll::ReduceScatter:
        contrib(Range{io_i_, 0, c});
        x.kind = ExpectKind::ReduceScatter;
        x.bufs = {Range{io_i_, 0, c}};
        if (!window_o_) x.bufs.push_back(Range{io_o_, 0, cf_});
        break;
      case Coll::Alltoall:
        contrib(Range{io_i_, 0, c});
        x.kind = ExpectKind::Alltoall;
        x.bufs = {Range{io_i_, 0, c}, Range{io_o_, 0, c}};
        break;
      case Coll::Custom:
        contrib(Range{io_i_, 0, std::min(c, g_->buffers[io_i_].chunks)});
        x.kind = ExpectKind::Nothing;
        s_.diags.warning(p_.loc, "coll=\"custom\": no postcondition to check (only deadlocks, races and undefined data)");
        break;
    }
    (void)n;
    g_->expects.push_back(std::move(x));
  }

  // A step's chunks on gpu r, RCCL's aliasing applied; false after a located error.
  bool map(const Step& st, char buf, int64_t off, uint32_t r, Range& out) {
    uint32_t b = 0;
    int64_t lo = off;
    if (buf == 'i') {
      b = io_i_;
      if (window_i_) lo += int64_t{r} * cf_;
    } else if (buf == 'o') {
      b = io_o_;
      if (window_o_) lo += int64_t{r} * cf_;
    } else {
      if (s_buf_ == kNone) return error(st.loc, "the step uses the scratch buffer s, but every gpu has s_chunks=\"0\""), false;
      b = s_buf_;
    }
    const BufferInfo& bi = g_->buffers[b];
    if (lo < 0 || lo + st.cnt > bi.chunks) {
      error(st.loc, std::string("chunks ") + buf + "[" + std::to_string(off) + " .. " + std::to_string(off + st.cnt) + "] on gpu " +
                        std::to_string(r) + " are outside " + (b == io_i_ && b == io_o_ ? "the in-place buffer" : "the buffer") + " " +
                        bi.name + " of " + std::to_string(bi.chunks) + " chunks");
      return false;
    }
    out = Range{b, static_cast<uint32_t>(lo), static_cast<uint32_t>(st.cnt)};
    return true;
  }

  StepId add(StepKind k, uint8_t flags, uint32_t rank, uint32_t stmt, Range r, uint32_t ref, std::initializer_list<StepId> deps) {
    StepId id = g_->add_step(k, flags, rank, stmt, r, ref);
    std::vector<StepId> d;
    for (StepId x : deps)
      if (x != kNoStep) d.push_back(x);
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
    for (StepId x : d) g_->add_dep(x);
    g_->finish_step();
    return id;
  }
  uint32_t p2p(uint32_t peer, uint32_t chan) {
    P2PInfo info;
    info.peer = peer;
    info.tag = static_cast<int32_t>(chan);
    info.comm = world_;
    g_->p2p.push_back(info);
    return static_cast<uint32_t>(g_->p2p.size() - 1);
  }
  uint32_t source(Range r) {
    g_->ranges.push_back(r);
    return static_cast<uint32_t>(g_->ranges.size() - 1);
  }

  // One gpu's program: its thread blocks' steps, emitted in an order where every cross-tb
  // dependency points back (a tb's steps stay in their order, which is what matching needs).
  bool gpu(const Gpu& gp) {
    uint32_t r = gp.id;
    size_t ntb = gp.tbs.size();
    // Each thread block's flag posts (docs/msccl.md, "Progress flags").
    std::vector<std::vector<Post>> posts(ntb);
    for (size_t t = 0; t < ntb; ++t)
      if (!flag_posts(gp, gp.tbs[t], posts[t])) return false;
    std::vector<size_t> next(ntb, 0);
    std::vector<std::vector<StepId>> last(ntb);  // per tb, per XML step: its last step in the graph
    for (size_t t = 0; t < ntb; ++t) last[t].assign(gp.tbs[t].steps.size(), kNoStep);
    size_t left = 0;
    for (const Tb& t : gp.tbs) left += t.steps.size();
    while (left) {
      bool progress = false;
      for (size_t t = 0; t < ntb; ++t) {
        const Tb& tb = gp.tbs[t];
        while (next[t] < tb.steps.size()) {
          const Step& st = tb.steps[next[t]];
          StepId dep = kNoStep;
          const NeverReady* hang = nullptr;
          NeverReady never;
          if (st.depid >= 0) {
            // The step waits until thread block depid's flag reaches step deps: the first post of
            // that block with a count at least deps releases it (msccl_kernel_impl.h l.276-279).
            const size_t b = static_cast<size_t>(st.depid);
            const std::vector<Post>& pb = posts[b];
            auto rel = std::find_if(pb.begin(), pb.end(), [&](const Post& x) { return x.k >= st.deps; });
            if (rel == pb.end()) {
              never = never_posted(gp, st, pb);
              hang = &never;
            } else {
              dep = last[b][rel->step];
              if (dep == kNoStep) break;  // its thread block has not got there yet
              if (rel->step != static_cast<size_t>(st.deps) && warned_.insert(st.loc.line).second) late_post(gp, tb, st, *rel);
            }
          }
          StepId prev = next[t] ? last[t][next[t] - 1] : kNoStep;
          StepId first = static_cast<StepId>(g_->size());
          StepId end = step(gp, tb, st, prev, dep);
          if (end == kNoStep) return false;
          // Every step of a transmission that waits for a flag nothing raises never starts.
          if (hang)
            for (StepId x = first; x < static_cast<StepId>(g_->size()); ++x)
              g_->never_ready.push_back(NeverReady{x, hang->cause, hang->why});
          last[t][next[t]++] = end;
          --left;
          progress = true;
        }
      }
      if (!progress) {
        // Every remaining thread block waits on another one's later step: a cycle, which the
        // runtime would spin on for ever.
        for (size_t t = 0; t < ntb; ++t)
          if (next[t] < gp.tbs[t].steps.size()) {
            const Step& st = gp.tbs[t].steps[next[t]];
            error(st.loc, "deadlock: on gpu " + std::to_string(r) + ", thread block " + std::to_string(t) + " step " +
                              std::to_string(st.s) + " waits for thread block " + std::to_string(st.depid) + " step " +
                              std::to_string(st.deps) + ", which waits, through the thread blocks' orders and dependencies, for it");
            return false;
          }
      }
    }
    return true;
  }

  // A gpu that declares input or scratch chunks no step of it uses: a warning at the attribute.
  // The common case is an in-place all-gather that declares i_chunks: in place RCCL picks the
  // file only when sendbuff = recvbuff + rank·count (msccl_lifecycle.cc l.322), so the input is
  // the gpu's own block of o, and msccl-tools writes i_chunks="0" and refers to that block of o
  // (collectives.py l.71-78, 110-113; ir.py l.333).
  void unused_buffers() {
    // In place, allreduce's and alltoall's i is o chunk for chunk and reducescatter's o a window
    // of i: a file may name either. Only an all-gather's i is apart (or a window) from the o the
    // steps use.
    bool separate_i = !inplace_ || p_.coll == Coll::Allgather || p_.coll == Coll::Custom;
    std::vector<const Gpu*> no_i, no_s;
    for (const Gpu& gp : p_.gpus) {
      if (o_.only_rank >= 0 && o_.only_rank != gp.id) continue;
      bool uses_i = false, uses_s = false;
      for (const Tb& t : gp.tbs)
        for (const Step& st : t.steps) {
          if (st.reads_src()) uses_i |= st.srcbuf == 'i', uses_s |= st.srcbuf == 's';
          if (st.writes_dst()) uses_i |= st.dstbuf == 'i', uses_s |= st.dstbuf == 's';
        }
      if (gp.i_chunks > 0 && !uses_i && separate_i) no_i.push_back(&gp);
      if (gp.s_chunks > 0 && !uses_s) no_s.push_back(&gp);
    }
    // One warning for all the gpus that say so, at the first one's attribute.
    auto others = [](const std::vector<const Gpu*>& v) {
      return v.size() == 1 ? std::string() : " (and " + std::to_string(v.size() - 1) + " more gpu" + (v.size() == 2 ? "" : "s") + ")";
    };
    if (!no_i.empty()) {
      const Gpu& gp = *no_i.front();
      Diagnostic& d = s_.diags.warning(gp.i_loc.valid() ? gp.i_loc : gp.loc, "gpu " + std::to_string(gp.id) + " declares i_chunks=\"" +
                                                                                 std::to_string(gp.i_chunks) +
                                                                                 "\", but no step of it reads or writes i" + others(no_i));
      if (p_.coll == Coll::Allgather && inplace_)
        d.notes.push_back({Loc{}, "in place, an all-gather's input is the gpu's own block of o (gpu r: o[r·" + std::to_string(cf_) +
                                      " …]); msccl-tools writes i_chunks=\"0\" and refers to that block of o (docs/msccl.md, \"In-place "
                                      "and out-of-place all-gather\")"});
      else if (p_.coll != Coll::Custom)
        d.notes.push_back({Loc{}, "the collective's input is never read: the result cannot hold this gpu's contribution"});
    }
    if (!no_s.empty()) {
      const Gpu& gp = *no_s.front();
      s_.diags.warning(gp.s_loc.valid() ? gp.s_loc : gp.loc, "gpu " + std::to_string(gp.id) + " declares s_chunks=\"" +
                                                                 std::to_string(gp.s_chunks) +
                                                                 "\", but no step of it uses the scratch buffer s" + others(no_s));
    }
  }

  // A flag post: after XML step `step` (the last of its transmission) the thread block's flag
  // holds count k of the runtime's loop iteration.
  struct Post {
    int64_t k = 0;
    size_t step = 0;
  };

  // The posts of one thread block, as RCCL builds and runs them (docs/msccl.md, "Progress
  // flags"). Its parser (src/misc/msccl/msccl_parser.cc at 0cbce2a7, l.545-651) makes one
  // transmission of each step but a nop (which only adds its depid/deps to the next one's
  // dependencies) and a `re` with depid="-1" whose destination and source buffer continue the
  // reduction before it (fused, up to 16 reductions a block; a hasdep="1" step ends the group);
  // a transmission takes the group's last hasdep. The kernel (src/device/msccl_kernel_impl.h,
  // l.266-379) counts: k = 0 each iteration; per transmission k += dependencies - 1 (when it
  // has any), k += reductions - 1 for a fused reduce, then it posts k to the block's flag when
  // hasDependence is set, then k += 1. Nothing else ever posts: a nop never does, and there is
  // no post at the end of the block. False (with RCCL's own loader error) for a chain of nop
  // dependencies that ends at a step with no depid of its own, which RCCL refuses to load.
  bool flag_posts(const Gpu& gp, const Tb& tb, std::vector<Post>& out) {
    struct Tx {
      int64_t deps = 0, reductions = 1;
      bool reduce = false, hasdep = false;
      size_t last = 0;
    };
    std::vector<Tx> txs;
    int64_t ndeps = 0, old_ptr = 0, nred = 0;
    int old_dst = -1, old_off = -1, old_src = -1;  // the open reduction group: -1 when none
    auto code = [](char b) { return b == 'i' ? 0 : b == 'o' ? 1 : 2; };
    for (size_t j = 0; j < tb.steps.size(); ++j) {
      const Step& st = tb.steps[j];
      if (st.depid >= 0) ++ndeps;
      bool cont = false;
      if (st.type == StepType::Reduce) {
        if (old_dst == code(st.dstbuf) && old_off == st.dstoff && old_src == code(st.srcbuf) && st.depid == -1) cont = true;
        else old_dst = old_off = -1;
      }
      if (st.type == StepType::Nop) continue;
      if (cont) {
        txs.back().reductions++;
        txs.back().last = j;
        txs.back().hasdep = st.hasdep;
      } else {
        Tx x;
        x.deps = ndeps - old_ptr;
        if (x.deps > 0 && st.depid < 0) {
          error(st.loc, "gpu " + std::to_string(gp.id) + " tb " + std::to_string(tb.id) + " step " + std::to_string(st.s) +
                            " takes the dependencies of the nop steps before it but has no depid of its own: RCCL refuses the file "
                            "(\"when there is a chain of dependencies, the last reduction must be a part of the first immediate "
                            "instruction\", msccl_parser.cc l.616)");
          return false;
        }
        old_ptr = ndeps;
        x.reduce = st.type == StepType::Reduce;
        x.hasdep = st.hasdep;
        x.last = j;
        txs.push_back(x);
      }
      if (st.type != StepType::Reduce) {
        old_dst = old_off = old_src = -1;
      } else if (++nred, st.hasdep || nred == 16) {
        old_dst = old_off = -1;
      } else {
        old_dst = code(st.dstbuf), old_off = static_cast<int>(st.dstoff), old_src = code(st.srcbuf);
      }
    }
    int64_t k = 0;
    for (const Tx& x : txs) {
      if (x.deps > 0) k += x.deps - 1;
      if (x.reduce) k += x.reductions - 1;
      if (x.hasdep) out.push_back(Post{k, x.last});
      ++k;
    }
    return true;
  }

  std::string where(const Gpu& gp, const Tb& tb, const Step& st) const {
    return "gpu " + std::to_string(gp.id) + " tb " + std::to_string(tb.id) + " step " + std::to_string(st.s);
  }

  // Why thread block depid's step deps does not post: the target's own words.
  std::string no_post_reason(const Step& target) const {
    if (target.type == StepType::Nop) return "a nop, which posts no flag (RCCL's parser makes no transmission of it)";
    if (!target.hasdep) return "hasdep=\"0\": RCCL's kernel posts a thread block's flag only after a step with hasdep=\"1\"";
    return "counted lower by RCCL's kernel than its s: a nop with no depid before it adds no count (msccl_kernel_impl.h l.282)";
  }

  // A step whose flag no post of the block it waits on ever reaches: it spins for ever (in the
  // last iteration of the runtime's loop; before it, the next iteration's first post would let it
  // go, but the last one has none after it).
  NeverReady never_posted(const Gpu& gp, const Step& st, const std::vector<Post>& pb) {
    const Tb& other = gp.tbs[static_cast<size_t>(st.depid)];
    const Step& target = other.steps[static_cast<size_t>(st.deps)];
    NeverReady n;
    n.cause = target.loc;
    n.why = "waits for thread block " + std::to_string(other.id) + "'s flag to reach step " + std::to_string(st.deps) +
            ", which never happens: that step is " + no_post_reason(target) + ", and " +
            (pb.empty() ? std::string("no step of thread block ") + std::to_string(other.id) + " posts at all"
                        : "no later step of thread block " + std::to_string(other.id) + " posts (its last post is step " +
                              std::to_string(other.steps[pb.back().step].s) + ")");
    return n;
  }

  // A step released later than its deps says: the block's next post after the target does it.
  void late_post(const Gpu& gp, const Tb& tb, const Step& st, const Post& rel) {
    const Tb& other = gp.tbs[static_cast<size_t>(st.depid)];
    const Step& target = other.steps[static_cast<size_t>(st.deps)];
    const Step& poster = other.steps[rel.step];
    Diagnostic& d = s_.diags.warning(st.loc, where(gp, tb, st) + " waits for thread block " + std::to_string(other.id) + " step " +
                                                 std::to_string(st.deps) + ", but RCCL's kernel lets it go only at step " +
                                                 std::to_string(poster.s) + ", the first to post after it: later than the file says");
    d.notes.push_back({target.loc, "step " + std::to_string(st.deps) + " is " + no_post_reason(target)});
    d.notes.push_back({poster.loc, "the flag is raised here"});
  }

  // The steps of one XML step; returns the last (kNoStep after an error).
  StepId step(const Gpu& gp, const Tb& tb, const Step& st, StepId prev, StepId dep) {
    uint32_t r = gp.id;
    uint32_t stmt = static_cast<uint32_t>(locs_.size());
    locs_.push_back(st.loc);
    labels_.push_back("gpu " + std::to_string(r) + " tb " + std::to_string(tb.id) + " step " + std::to_string(st.s) + " (" +
                      step_word(st.type) + ")");
    Range src{}, dst{};
    if (st.reads_src() && !map(st, st.srcbuf, st.srcoff, r, src)) return kNoStep;
    if (st.writes_dst() && !map(st, st.dstbuf, st.dstoff, r, dst)) return kNoStep;
    const uint8_t local = kFlagLocal;
    const uint8_t reduce = kFlagLocal | kFlagReduce | op_flag(ReduceOp::Sum);
    auto send = [&](Range what, StepId after) {
      return add(StepKind::Send, local, r, stmt, what, p2p(static_cast<uint32_t>(tb.send), tb.chan), {after, dep, prev});
    };
    auto recv = [&](Range into, bool reducing, StepId after) {
      return add(StepKind::Recv, reducing ? reduce : local, r, stmt, into, p2p(static_cast<uint32_t>(tb.recv), tb.chan),
                 {after, dep, prev});
    };
    switch (st.type) {
      case StepType::Send: return send(src, kNoStep);
      case StepType::Recv: return recv(dst, false, kNoStep);
      case StepType::RecvCopySend: return send(dst, recv(dst, false, kNoStep));
      case StepType::RecvReduceSend: {
        Range t{tmp_buf_, tb.id * tmp_per_tb_, static_cast<uint32_t>(st.cnt)};  // the tb's own slots
        StepId x = recv(t, false, kNoStep);
        StepId y = add(StepKind::Reduce, 0, r, stmt, t, source(src), {x});
        return send(t, y);
      }
      case StepType::RecvReduceCopy:
      case StepType::RecvReduceCopySend: {
        StepId c = kNoStep;
        if (!(src == dst)) c = add(StepKind::Copy, 0, r, stmt, dst, source(src), {dep, prev});  // dst = src, then ⊕= recv
        StepId x = recv(dst, true, c);
        return st.type == StepType::RecvReduceCopy ? x : send(dst, x);
      }
      case StepType::Copy: return add(StepKind::Copy, 0, r, stmt, dst, source(src), {dep, prev});
      case StepType::Reduce: return add(StepKind::Reduce, 0, r, stmt, dst, source(src), {dep, prev});
      case StepType::Nop: {
        uint32_t off = static_cast<uint32_t>(g_->wait_handles.size());
        g_->wait_handles.push_back(0);
        return add(StepKind::Wait, 0, r, stmt, Range{}, off, {dep, prev});
      }
    }
    return kNoStep;
  }

  static constexpr uint32_t kNone = 0xffffffffu;
  Session& s_;
  const Program& p_;
  const ElabOptions& o_;
  std::unique_ptr<StepGraph> g_;
  uint64_t size_ = 0, chunk_bytes_ = 0;
  bool inplace_ = false, window_i_ = false, window_o_ = false, failed_ = false;
  uint32_t cf_ = 0, world_ = 0, io_i_ = 0, io_o_ = 0, s_buf_ = kNone, tmp_buf_ = kNone, tmp_per_tb_ = 0;
  std::vector<Loc> locs_;
  std::vector<std::string> labels_;
  std::set<uint32_t> warned_;  // lines already warned about (a warning per line, not per gpu)
};

}  // namespace

std::unique_ptr<StepGraph> lower(Session& s, const Program& p, const ElabOptions& opts) { return Lowering(s, p, opts).run(); }

}  // namespace sg::msccl
