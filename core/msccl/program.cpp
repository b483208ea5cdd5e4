#include "core/msccl/program.hpp"

#include <cstdlib>
#include <map>

#include "core/msccl/xml.hpp"

namespace sg::msccl {

const char* coll_word(Coll c) {
  switch (c) {
    case Coll::Allreduce: return "allreduce";
    case Coll::Allgather: return "allgather";
    case Coll::ReduceScatter: return "reducescatter";
    case Coll::Alltoall: return "alltoall";
    case Coll::Custom: return "custom";
  }
  return "custom";
}

const char* step_word(StepType t) {
  switch (t) {
    case StepType::Send: return "s";
    case StepType::Recv: return "r";
    case StepType::RecvCopySend: return "rcs";
    case StepType::RecvReduceSend: return "rrs";
    case StepType::RecvReduceCopy: return "rrc";
    case StepType::RecvReduceCopySend: return "rrcs";
    case StepType::Copy: return "cpy";
    case StepType::Reduce: return "re";
    case StepType::Nop: return "nop";
  }
  return "nop";
}

bool Step::sends() const {
  return type == StepType::Send || type == StepType::RecvCopySend || type == StepType::RecvReduceSend ||
         type == StepType::RecvReduceCopySend;
}
bool Step::receives() const {
  return type == StepType::Recv || type == StepType::RecvCopySend || type == StepType::RecvReduceSend || type == StepType::RecvReduceCopy ||
         type == StepType::RecvReduceCopySend;
}
// Which local chunks each type uses (RCCL's kernel, msccl_kernel_impl.h: docs/msccl.md, "Steps").
bool Step::reads_src() const {
  return type == StepType::Send || type == StepType::RecvReduceSend || type == StepType::RecvReduceCopy ||
         type == StepType::RecvReduceCopySend || type == StepType::Copy || type == StepType::Reduce;
}
bool Step::writes_dst() const {
  return type == StepType::Recv || type == StepType::RecvCopySend || type == StepType::RecvReduceCopy ||
         type == StepType::RecvReduceCopySend || type == StepType::Copy || type == StepType::Reduce;
}

namespace {

class Loader {
 public:
  Loader(Diagnostics& d) : diags_(d) {}

  std::unique_ptr<Program> run(const XmlElement& root, uint32_t file) {
    auto p = std::make_unique<Program>();
    p->file = file;
    p->loc = root.loc;
    if (root.name != "algo") return error(root.loc, "an MSCCL algorithm file has <algo> at its root, not <" + root.name + ">"), nullptr;
    if (const std::string* n = root.attribute("name")) p->name = *n;
    p->proto = text(root, "proto");
    if (!p->proto.empty() && p->proto != "Simple" && p->proto != "LL" && p->proto != "LL128")
      error(root.attribute_loc("proto"), "proto is Simple, LL or LL128, not '" + p->proto + "'");
    p->nchannels = u32(root, "nchannels", 1, 1u << 16);
    p->nchunksperloop = u32(root, "nchunksperloop", 1, 1u << 24);
    p->ngpus = u32(root, "ngpus", 1, 1u << 16);
    p->coll_text = text(root, "coll");
    const std::string& c = p->coll_text;
    if (c == "allreduce") p->coll = Coll::Allreduce;
    else if (c == "allgather") p->coll = Coll::Allgather;
    else if (c == "reducescatter" || c == "reduce_scatter") p->coll = Coll::ReduceScatter;  // RCCL's and msccl-tools' spellings
    else if (c == "alltoall") p->coll = Coll::Alltoall;
    else if (c == "custom") p->coll = Coll::Custom;
    else if (!c.empty())
      error(root.attribute_loc("coll"), "coll '" + c + "' is not supported here (allreduce, allgather, reducescatter, alltoall, custom)");
    p->inplace = u32(root, "inplace", 0, 1) == 1;
    if (root.attribute("outofplace")) {
      p->has_outofplace = true;
      p->outofplace = u32(root, "outofplace", 0, 1) == 1;
    } else {
      p->outofplace = !p->inplace;  // msccl-tools writes no outofplace: the mode it was checked in
    }
    if (root.attribute("minBytes")) p->min_bytes = i64(root, "minBytes", 0, INT64_MAX);
    if (root.attribute("maxBytes")) p->max_bytes = i64(root, "maxBytes", 0, INT64_MAX);
    if (failed_) return nullptr;
    std::map<uint32_t, const XmlElement*> gpus;
    for (const XmlElement& g : root.children) {
      if (g.name != "gpu") continue;  // RCCL skips unknown elements
      uint32_t id = u32(g, "id", 0, p->ngpus - 1);
      if (failed_) return nullptr;
      if (!gpus.emplace(id, &g).second) return error(g.attribute_loc("id"), "a second <gpu id=\"" + std::to_string(id) + "\">"), nullptr;
    }
    if (gpus.size() != p->ngpus)
      return error(root.loc, "ngpus=" + std::to_string(p->ngpus) + " but " + std::to_string(gpus.size()) + " <gpu> elements"), nullptr;
    for (auto& [id, ge] : gpus) {
      p->gpus.push_back(gpu(*ge, *p));
      if (failed_) return nullptr;
    }
    return p;
  }

 private:
  void error(Loc at, const std::string& msg) {
    diags_.error(at, msg);
    failed_ = true;
  }
  std::string text(const XmlElement& e, const char* key) {
    const std::string* v = e.attribute(key);
    if (!v) {
      error(e.loc, std::string("<") + e.name + "> needs the attribute " + key);
      return "";
    }
    return *v;
  }
  int64_t i64(const XmlElement& e, const char* key, int64_t lo, int64_t hi) {
    const std::string* v = e.attribute(key);
    if (!v) {
      error(e.loc, std::string("<") + e.name + "> needs the attribute " + key);
      return lo;
    }
    char* end = nullptr;
    errno = 0;
    long long x = std::strtoll(v->c_str(), &end, 0);  // base 0, as RCCL reads them
    if (v->empty() || *end || errno) {
      error(e.attribute_loc(key), std::string(key) + "=\"" + *v + "\" is not an integer");
      return lo;
    }
    if (x < lo || x > hi) {
      error(e.attribute_loc(key),
            std::string(key) + "=" + *v + " is out of range (" + std::to_string(lo) + " to " + std::to_string(hi) + ")");
      return lo;
    }
    return x;
  }
  uint32_t u32(const XmlElement& e, const char* key, int64_t lo, int64_t hi) { return static_cast<uint32_t>(i64(e, key, lo, hi)); }

  Gpu gpu(const XmlElement& ge, const Program& p) {
    Gpu g;
    g.loc = ge.loc;
    g.id = u32(ge, "id", 0, p.ngpus - 1);
    g.i_chunks = u32(ge, "i_chunks", 0, 1 << 24);
    g.i_loc = ge.attribute_loc("i_chunks");
    g.s_loc = ge.attribute_loc("s_chunks");
    g.o_chunks = u32(ge, "o_chunks", 0, 1 << 24);
    g.s_chunks = u32(ge, "s_chunks", 0, 1 << 24);
    std::map<uint32_t, const XmlElement*> tbs;
    for (const XmlElement& te : ge.children) {
      if (te.name != "tb") continue;
      uint32_t id = u32(te, "id", 0, 4095);
      if (failed_) return g;
      if (!tbs.emplace(id, &te).second)
        error(te.attribute_loc("id"), "a second <tb id=\"" + std::to_string(id) + "\"> on gpu " + std::to_string(g.id));
    }
    uint32_t expect = 0;
    for (auto& [id, te] : tbs) {
      if (id != expect++) {
        error(te->attribute_loc("id"), "thread block ids must run 0, 1, 2, … on a gpu; " + std::to_string(expect - 1) + " is missing");
        return g;
      }
      g.tbs.push_back(tb(*te, g, p));
      if (failed_) return g;
    }
    // A connection (this gpu, peer, channel) has one sending and one receiving thread block:
    // RCCL connects each channel's peers once (msccl_setup.cc l.96-111) and two blocks on one
    // FIFO would interleave their messages. RCCL's parser does not check it; no file in the
    // corpus does it.
    std::map<std::pair<int64_t, uint32_t>, uint32_t> senders, receivers;
    for (const Tb& t : g.tbs) {
      bool sends = false, receives = false;
      for (const Step& s : t.steps) sends |= s.sends(), receives |= s.receives();
      if (sends && !senders.emplace(std::make_pair(t.send, t.chan), t.id).second)
        error(t.loc, "thread blocks " + std::to_string(senders[{t.send, t.chan}]) + " and " + std::to_string(t.id) + " of gpu " +
                         std::to_string(g.id) + " both send to gpu " + std::to_string(t.send) + " on channel " + std::to_string(t.chan) +
                         ": a connection has one sender");
      if (receives && !receivers.emplace(std::make_pair(t.recv, t.chan), t.id).second)
        error(t.loc, "thread blocks " + std::to_string(receivers[{t.recv, t.chan}]) + " and " + std::to_string(t.id) + " of gpu " +
                         std::to_string(g.id) + " both receive from gpu " + std::to_string(t.recv) + " on channel " +
                         std::to_string(t.chan) + ": a connection has one receiver");
    }
    // Cross-tb dependencies name a tb of this gpu and one of its steps.
    for (const Tb& t : g.tbs)
      for (const Step& s : t.steps) {
        if (s.depid < 0) continue;
        if (s.depid >= static_cast<int64_t>(g.tbs.size()) || s.depid == t.id)
          error(s.loc, "depid=" + std::to_string(s.depid) + " names no other thread block of gpu " + std::to_string(g.id));
        else if (s.deps < 0 || s.deps >= static_cast<int64_t>(g.tbs[static_cast<size_t>(s.depid)].steps.size()))
          error(s.loc, "deps=" + std::to_string(s.deps) + " names no step of thread block " + std::to_string(s.depid));
      }
    return g;
  }

  Tb tb(const XmlElement& te, const Gpu& g, const Program& p) {
    Tb t;
    t.loc = te.loc;
    t.id = u32(te, "id", 0, 4095);
    t.send = i64(te, "send", -1, p.ngpus - 1);
    t.recv = i64(te, "recv", -1, p.ngpus - 1);
    t.chan = u32(te, "chan", 0, 1 << 16);
    if (t.send == g.id) error(te.attribute_loc("send"), "a thread block cannot send to its own gpu");
    if (t.recv == g.id) error(te.attribute_loc("recv"), "a thread block cannot receive from its own gpu");
    for (const XmlElement& se : te.children) {
      if (se.name != "step") continue;
      Step s;
      s.loc = se.loc;
      s.s = u32(se, "s", 0, 1 << 20);
      if (!failed_ && s.s != t.steps.size())
        error(se.attribute_loc("s"), "s=" + std::to_string(s.s) + " at position " + std::to_string(t.steps.size()) +
                                         ": RCCL counts steps in document order, so s must run 0, 1, 2, … (deps refer to it)");
      std::string ty = text(se, "type");
      static const std::map<std::string, StepType> types = {{"s", StepType::Send},
                                                            {"r", StepType::Recv},
                                                            {"rcs", StepType::RecvCopySend},
                                                            {"rrs", StepType::RecvReduceSend},
                                                            {"rrc", StepType::RecvReduceCopy},
                                                            {"rrcs", StepType::RecvReduceCopySend},
                                                            {"cpy", StepType::Copy},
                                                            {"re", StepType::Reduce},
                                                            {"nop", StepType::Nop}};
      auto it = types.find(ty);
      if (it == types.end() && !ty.empty())
        error(se.attribute_loc("type"), "unknown step type '" + ty + "' (s r rcs rrs rrc rrcs cpy re nop)");
      else if (it != types.end()) s.type = it->second;
      auto buf = [&](const char* key) {
        std::string b = text(se, key);
        if (b != "i" && b != "o" && b != "s" && !b.empty())
          error(se.attribute_loc(key), std::string(key) + " is i, o or s, not '" + b + "'");
        return b.empty() ? 'i' : b[0];
      };
      s.srcbuf = buf("srcbuf");
      s.dstbuf = buf("dstbuf");
      s.srcoff = i64(se, "srcoff", -1, 1 << 24);
      s.dstoff = i64(se, "dstoff", -1, 1 << 24);
      s.cnt = i64(se, "cnt", 0, 1 << 24);
      s.depid = i64(se, "depid", -1, 4095);
      s.deps = i64(se, "deps", -1, 1 << 20);
      s.hasdep = u32(se, "hasdep", 0, 1) == 1;
      if (failed_) return t;
      if (s.sends() && t.send < 0)
        error(se.loc, std::string("a '") + ty + "' step in a thread block with send=\"-1\" (no peer to send to)");
      if (s.receives() && t.recv < 0)
        error(se.loc, std::string("a '") + ty + "' step in a thread block with recv=\"-1\" (no peer to receive from)");
      if (s.type != StepType::Nop && s.cnt == 0) error(se.attribute_loc("cnt"), "cnt=0: a step moves at least one chunk");
      if (s.reads_src() && s.srcoff < 0)
        error(se.attribute_loc("srcoff"), std::string("a '") + ty + "' step reads its source: srcoff must be >= 0");
      if (s.writes_dst() && s.dstoff < 0)
        error(se.attribute_loc("dstoff"), std::string("a '") + ty + "' step writes its destination: dstoff must be >= 0");
      t.steps.push_back(s);
    }
    return t;
  }

  Diagnostics& diags_;
  bool failed_ = false;
};

}  // namespace

std::unique_ptr<Program> read_program(const SourceManager& sm, uint32_t file, Diagnostics& diags) {
  auto root = parse_xml(sm, file, diags);
  if (!root) return nullptr;
  return Loader(diags).run(*root, file);
}

}  // namespace sg::msccl
