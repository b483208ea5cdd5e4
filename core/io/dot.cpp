// Graphviz form: one cluster per rank, dependencies as solid edges, messages as dashed edges
// from send to receive, collective members joined by dotted edges.
#include <ostream>

#include "core/io/writers.hpp"

namespace sg {

namespace {
std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}
}  // namespace

void write_dot(std::ostream& os, const StepGraph& g, const SourceManager& sm) {
  os << "digraph \"" << esc(g.schedule) << "\" {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n";
  auto ix = g.rank_index();
  for (uint32_t r = 0; r < g.nranks; ++r) {
    if (ix.off[r] == ix.off[r + 1]) continue;
    os << "  subgraph cluster_r" << r << " {\n    label=\"rank " << r << "\";\n";
    for (uint64_t i = ix.off[r]; i < ix.off[r + 1]; ++i) {
      StepId s = ix.steps[i];
      os << "    s" << s << " [label=\"#" << s << " " << esc(describe_step(g, s)) << "\\n" << esc(step_where(g, sm, s)) << "\"];\n";
    }
    os << "  }\n";
  }
  for (StepId s = 0; s < g.size(); ++s)
    for (StepId d : g.deps(s)) os << "  s" << d << " -> s" << s << ";\n";
  for (StepId s = 0; s < g.size(); ++s) {
    if (g.kind(s) != StepKind::Send) continue;
    StepId m = g.match(s);
    if (m != kNoStep) os << "  s" << s << " -> s" << m << " [style=dashed, color=blue];\n";
  }
  for (const auto& in : g.instances)
    for (uint32_t k = 1; k < in.steps_cnt; ++k)
      os << "  s" << g.instance_steps[in.steps_off + k - 1] << " -> s" << g.instance_steps[in.steps_off + k]
         << " [style=dotted, dir=none, color=darkgreen, constraint=false];\n";
  os << "}\n";
}

}  // namespace sg
