// One built graph (`stepgraph compile`), kept with the session its steps point into.
#include <sstream>

#include "api/api.hpp"
#include "core/io/writers.hpp"

namespace sg::api {

nlohmann::json Compiled::json() const {
  std::ostringstream os;
  write_json(os, *built.graph, opened->s.sources);
  return nlohmann::json::parse(os.str());
}

Compiled compile(const CompileRequest& r) {
  Compiled c;
  c.opened = open(r.target, false);
  Opened& o = *c.opened;
  if (r.rank >= 0 && r.expand) throw BadInput("--expand needs the whole graph: it cannot be combined with --rank");
  if (r.rank >= 0 && r.rank >= static_cast<int64_t>(o.ns[0]))
    throw BadInput("--rank " + std::to_string(r.rank) + " is out of range for -n " + std::to_string(o.ns[0]));
  o.opts.only_rank = r.rank;
  BuildOptions bo = build_options(o, o.ns[0]);
  bo.dump.after.clear();
  bo.expand = r.expand ? Expansion::Always : Expansion::None;
  bo.algo = r.algo;
  c.built = build(o.s, o.t, bo);
  if (!c.built.ok()) {
    std::string head = "compile " + o.t.name() + " N = " + std::to_string(o.ns[0]) + ": ";
    throw BadInput(head + (c.built.unsupported ? "unsupported (" + c.built.unsupported_reason + ")" : "bad input"),
                   o.s.diags.render(o.s.sources), diagnostics_json(o.s.diags, o.s.sources));
  }
  return c;
}

}  // namespace sg::api
