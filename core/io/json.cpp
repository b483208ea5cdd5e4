// JSON form of a step graph, streamed (a graph of 67 M steps is written without a DOM).
#include <nlohmann/json.hpp>
#include <ostream>

#include "core/io/writers.hpp"

namespace sg {

namespace {

std::string q(const std::string& s) { return nlohmann::json(s).dump(); }

std::string range_json(const StepGraph& g, const Range& r) {
  return "{\"buffer\":" + q(g.buffers[r.buf].name) + ",\"lo\":" + std::to_string(r.lo) + ",\"count\":" + std::to_string(r.cnt) + "}";
}

std::string group_json(const GroupInfo& gr) {
  return "{\"start\":" + std::to_string(gr.start) + ",\"count\":" + std::to_string(gr.count) + ",\"stride\":" + std::to_string(gr.stride) +
         "}";
}

}  // namespace

void write_json(std::ostream& os, const StepGraph& g, const SourceManager& sm) {
  os << "{\"schedule\":" << q(g.schedule) << ",\"file\":" << q(g.file) << ",\"ranks\":" << g.nranks;
  if (g.only_rank >= 0) os << ",\"only_rank\":" << g.only_rank;
  os << ",\"params\":{";
  for (size_t i = 0; i < g.params.size(); ++i) os << (i ? "," : "") << q(g.params[i].first) << ":" << g.params[i].second;
  os << "},\n\"buffers\":[";
  for (size_t i = 0; i < g.buffers.size(); ++i) {
    const auto& b = g.buffers[i];
    os << (i ? "," : "") << "{\"name\":" << q(b.name) << ",\"dims\":[";
    for (size_t d = 0; d < b.dims.size(); ++d) os << (d ? "," : "") << b.dims[d];
    os << "],\"chunk_bytes\":" << b.chunk_bytes << ",\"dtype\":\"" << dtype_name(b.dtype)
       << "\",\"accumulator\":" << (b.accumulator ? "true" : "false") << "}";
  }
  os << "],\n\"groups\":[";
  for (size_t i = 0; i < g.groups.size(); ++i) os << (i ? "," : "") << group_json(g.groups[i]);
  os << "],\n\"init\":[";
  for (size_t i = 0; i < g.inits.size(); ++i) {
    const auto& r = g.inits[i];
    const char* k = r.kind == InitKind::Contrib ? "contrib" : r.kind == InitKind::Owned ? "owned" : "on";
    os << (i ? "," : "") << "{\"kind\":\"" << k << "\",\"chunks\":" << range_json(g, r.range);
    if (r.kind == InitKind::OnRank) os << ",\"rank\":" << r.rank;
    else os << ",\"group\":" << r.group;
    os << "}";
  }
  os << "],\n\"expect\":[";
  for (size_t i = 0; i < g.expects.size(); ++i) {
    const auto& x = g.expects[i];
    os << (i ? "," : "") << "{\"kind\":\"" << expect_name(x.kind) << "\",\"buffers\":[";
    for (size_t b = 0; b < x.bufs.size(); ++b) os << (b ? "," : "") << range_json(g, x.bufs[b]);
    os << "],\"root\":" << x.root << ",\"group\":" << x.group << ",\"mask\":\"" << mask_name(x.mask) << "\"";
    if (x.heads != 1) os << ",\"heads\":" << x.heads;  // head-parallel items: block x / heads, head group x % heads
    if (x.split_kv) {                                  // K and V apart: buffers are Q, K, O (dQ, dK); V (dV) here
      os << ",\"split_kv\":true,\"v\":" << range_json(g, x.v);
      if (x.kind == ExpectKind::AttentionBackward) os << ",\"dv\":" << range_json(g, x.dv);
    }
    os << "}";
  }
  os << "],\n\"instances\":[";
  for (size_t i = 0; i < g.instances.size(); ++i) {
    const auto& in = g.instances[i];
    os << (i ? "," : "") << "{\"group\":" << in.group << ",\"seq\":" << in.seq << ",\"complete\":" << (in.complete ? "true" : "false")
       << ",\"consistent\":" << (in.consistent ? "true" : "false") << ",\"steps\":[";
    for (uint32_t k = 0; k < in.steps_cnt; ++k) os << (k ? "," : "") << g.instance_steps[in.steps_off + k];
    os << "]}";
  }
  os << "],\n\"steps\":[\n";
  for (StepId s = 0; s < g.size(); ++s) {
    os << (s ? ",\n" : "") << "{\"id\":" << s << ",\"rank\":" << g.rank(s) << ",\"kind\":\"" << step_kind_name(g.kind(s)) << "\"";
    uint8_t f = g.flags(s);
    if (f & kFlagLocal) os << ",\"local\":true";
    if (f & kFlagNonblocking) os << ",\"nonblocking\":true";
    Range r = g.range(s);
    if (r.cnt) os << ",\"chunks\":" << range_json(g, r);
    switch (g.kind(s)) {
      case StepKind::Send:
      case StepKind::Recv: {
        uint32_t p = g.peer(s);
        os << ",\"peer\":" << (p == kAnyRank ? std::string("\"any\"") : std::to_string(p));
        StepId m = g.match(s);
        if (m != kNoStep) os << ",\"match\":" << m;
        if (g.local(s)) {
          const P2PInfo& pi = g.p2p_info(s);
          os << ",\"tag\":" << (pi.tag == kAnyTag ? std::string("\"any\"") : std::to_string(pi.tag)) << ",\"comm\":" << pi.comm;
          if (pi.cand_cnt) {
            os << ",\"candidates\":[";
            for (uint32_t k = 0; k < pi.cand_cnt; ++k) os << (k ? "," : "") << g.candidates[pi.cand_off + k];
            os << "]";
          }
        }
        if (f & kFlagReduce) os << ",\"reduce\":\"" << op_name(flag_op(f)) << "\"";
        break;
      }
      case StepKind::Copy:
      case StepKind::Reduce:
        os << ",\"source\":" << range_json(g, g.copy_source(s));
        if (g.kind(s) == StepKind::Reduce) os << ",\"op\":\"" << op_name(flag_op(f)) << "\"";
        break;
      case StepKind::Compute: {
        const ComputeInfo& c = g.compute(s);
        os << ",\"kernel\":" << q(g.names[c.name]) << ",\"flops\":" << c.flops;
        if (c.mask != Mask::None) os << ",\"mask\":\"" << mask_name(c.mask) << "\"";
        if (c.split_kv) os << ",\"split_kv\":true";  // reads Q, K, accumulators, V (step_graph.hpp)
        os << ",\"reads\":[";
        for (uint32_t i = 0; i < c.reads_cnt; ++i) os << (i ? "," : "") << range_json(g, g.ranges[c.reads_off + i]);
        os << "],\"writes\":[";
        for (uint32_t i = 0; i < c.writes_cnt; ++i) os << (i ? "," : "") << range_json(g, g.ranges[c.writes_off + i]);
        os << "]";
        break;
      }
      case StepKind::Collective: {
        const CollInfo& c = g.coll(s);
        os << ",\"collective\":\"" << coll_name(c.kind) << "\",\"group\":" << c.group << ",\"seq\":" << c.seq
           << ",\"instance\":" << c.instance << ",\"root\":" << c.root << ",\"op\":\"" << op_name(c.op) << "\"";
        if (c.into.cnt) os << ",\"into\":" << range_json(g, c.into);
        break;
      }
      case StepKind::Wait: {
        os << ",\"handles\":[";
        for (const StepId* h = g.handles_begin(s); h != g.handles_end(s); ++h) os << (h == g.handles_begin(s) ? "" : ",") << *h;
        os << "]";
        break;
      }
    }
    os << ",\"deps\":[";
    bool first = true;
    for (StepId d : g.deps(s)) {
      os << (first ? "" : ",") << d;
      first = false;
    }
    Loc l = g.loc(s);
    os << "],\"file\":" << q(l.valid() ? sm.file(l.file).name() : "") << ",\"line\":" << l.line << ",\"col\":" << l.col << "}";
  }
  os << "\n]}\n";
}

}  // namespace sg
