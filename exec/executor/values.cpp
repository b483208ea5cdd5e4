#include "exec/executor/values.hpp"

#include <algorithm>
#include <cmath>

namespace sg::exec {

namespace {

// Over ranks lo..hi-1 of d(r, c)[e]: the sum, the maximum and the minimum. r·131 mod 9 runs
// through every residue in any 9 consecutive ranks (gcd(131, 9) = 1), so 9 consecutive terms
// sum to 0 and reach both 4 and -4: only a remainder of at most 8 terms is summed.
struct RankFold {
  double sum = 0, max = -1e300, min = 1e300;
};
RankFold fold_ranks(uint32_t buf, uint32_t lo, uint32_t hi, uint32_t chunk, uint64_t e) {
  RankFold f;
  uint32_t n = hi - lo;
  if (n >= 9) f.max = 4, f.min = -4;
  for (uint32_t r = lo + (n / 9) * 9; r < hi; ++r) {
    double x = contrib_value(buf, r, chunk, e);
    f.sum += x;
    f.max = std::max(f.max, x);
    f.min = std::min(f.min, x);
  }
  return f;
}

}  // namespace

bool evaluate(const Value& v, ReduceOp op, uint64_t e, double& out) {
  if (!v.defined) return false;
  bool any = false;
  double acc = op == ReduceOp::Prod ? 1 : op == ReduceOp::Max ? -1e300 : op == ReduceOp::Min ? 1e300 : 0;
  for (const Run& r : v.runs) {
    if (r.kind == AtomKind::Contrib) {
      if (op == ReduceOp::Prod) {
        for (uint32_t k = r.lo; k < r.hi; ++k) acc *= std::pow(static_cast<double>(contrib_value(r.buf, k, r.fixed, e)), r.count);
      } else {
        RankFold f = fold_ranks(r.buf, r.lo, r.hi, r.fixed, e);
        if (op == ReduceOp::Sum) acc += f.sum * r.count;
        else if (op == ReduceOp::Max) acc = std::max(acc, f.max);
        else acc = std::min(acc, f.min);
      }
    } else if (r.kind == AtomKind::Item) {
      for (uint32_t i = r.lo; i < r.hi; ++i) {
        double x = item_value(r.buf, i, e);
        if (op == ReduceOp::Sum) acc += x * r.count;
        else if (op == ReduceOp::Prod) acc *= std::pow(x, r.count);
        else if (op == ReduceOp::Max) acc = std::max(acc, x);
        else acc = std::min(acc, x);
      }
    } else {
      return false;
    }
    any = true;
  }
  out = any ? acc : 0;  // an empty value is the empty sum
  return true;
}

}  // namespace sg::exec
