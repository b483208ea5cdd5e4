#include "core/interp/bus_bandwidth.hpp"

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

uint64_t expected_size(const StepGraph& g, ExpectKind& kind) {
  kind = ExpectKind::Nothing;
  for (const Expectation& e : g.expects) {
    if (e.bufs.empty()) continue;
    kind = e.kind;
    return g.range_bytes(e.bufs.front());
  }
  return 0;
}

}  // namespace sg
