#include "core/interp/bus_bandwidth.hpp"

#include <algorithm>

namespace sg {

double bus_factor(ExpectKind k, uint32_t n, std::string& name) {
  double nn = n;
  const char* label = "1";  // assigned once below: GCC 12 warns (-Wrestrict, falsely) on short literals per case
  double f = 1;
  switch (k) {
    case ExpectKind::Allreduce: label = "2(N-1)/N", f = n > 1 ? 2 * (nn - 1) / nn : 0; break;
    case ExpectKind::ReduceScatter:
    case ExpectKind::Allgather:
    case ExpectKind::Alltoall:
    case ExpectKind::Gather:
    case ExpectKind::Scatter: label = "(N-1)/N", f = n > 1 ? (nn - 1) / nn : 0; break;
    default: break;
  }
  name.assign(label);
  return f;
}

namespace {

// A collective's size as nccl-tests counts it: the whole vector (an all-gather's gathered buffer,
// a reduce-scatter's input). With two ranges (MSCCL's out of place: input, output) that is the
// larger; attention's first range is Q.
uint64_t size_of(const StepGraph& g, const Expectation& e) {
  if (e.kind == ExpectKind::Attention || e.kind == ExpectKind::AttentionBackward) return g.range_bytes(e.bufs.front());
  uint64_t bytes = 0;
  for (const Range& r : e.bufs) bytes = std::max(bytes, g.range_bytes(r));
  return bytes;
}

}  // namespace

uint64_t expected_size(const StepGraph& g, ExpectKind& kind) {
  kind = ExpectKind::Nothing;
  for (const Expectation& e : g.expects) {
    if (e.bufs.empty()) continue;
    kind = e.kind;
    return size_of(g, e);
  }
  return 0;
}

bool world_collective(const StepGraph& g, ExpectKind& kind, uint64_t& bytes) {
  const Expectation* one = nullptr;
  for (const Expectation& e : g.expects) {
    if (e.kind == ExpectKind::Nothing) continue;
    if (one) return false;  // several postconditions: a composite schedule
    one = &e;
  }
  if (!one || one->bufs.empty()) return false;
  switch (one->kind) {
    case ExpectKind::Attention:
    case ExpectKind::AttentionBackward:
    case ExpectKind::Nothing: return false;
    default: break;
  }
  const GroupInfo& w = g.groups[one->group];
  if (w.start != 0 || w.stride != 1 || w.count != g.nranks) return false;
  for (StepId s = 0; s < g.size(); ++s)
    if (g.kind(s) == StepKind::Compute) return false;  // a training step: its time is not the collective's
  kind = one->kind;
  bytes = size_of(g, *one);
  return true;
}

bool attention_model_flops(const StepGraph& g, double& flops) {
  const Expectation* att = nullptr;
  for (const Expectation& e : g.expects)
    if (e.kind == ExpectKind::Attention || e.kind == ExpectKind::AttentionBackward) att = &e;
  if (!att) return false;
  double seq = 0, heads = 0, dim = 0, batch = 1;
  for (const auto& [name, v] : g.params) {
    if (name == "seq") seq = static_cast<double>(v);
    else if (name == "heads") heads = static_cast<double>(v);
    else if (name == "dim") dim = static_cast<double>(v);
    else if (name == "batch") batch = static_cast<double>(v);
  }
  if (seq <= 0 || heads <= 0 || dim <= 0 || batch <= 0) return false;
  flops = 4.0 * batch * heads * seq * seq * dim;
  if (att->mask == Mask::Causal) flops /= 2;
  if (att->kind == ExpectKind::AttentionBackward) flops *= 2.5;
  return true;
}

}  // namespace sg
