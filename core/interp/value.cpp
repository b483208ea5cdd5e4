#include "core/interp/value.hpp"

#include <algorithm>
#include <map>

#include "core/graph/step_graph.hpp"

namespace sg {

Value Value::contrib(uint32_t buf, uint32_t rank, uint32_t chunk) {
  Value v;
  v.defined = true;
  v.runs.push_back(Run{AtomKind::Contrib, Mask::None, buf, chunk, rank, rank + 1, 1});
  return v;
}

Value Value::item(uint32_t buf, uint32_t i) {
  Value v;
  v.defined = true;
  v.runs.push_back(Run{AtomKind::Item, Mask::None, buf, 0, i, i + 1, 1});
  return v;
}

Value Value::empty() {
  Value v;
  v.defined = true;
  return v;
}

int64_t Value::single_item(uint32_t buf) const {
  if (runs.size() != 1) return -1;
  const Run& r = runs[0];
  if (r.kind != AtomKind::Item || r.buf != buf || r.count != 1 || r.hi != r.lo + 1) return -1;
  return r.lo;
}

int64_t Value::single_item_any(uint32_t& buf) const {
  if (runs.size() != 1) return -1;
  const Run& r = runs[0];
  if (r.kind != AtomKind::Item || r.count != 1 || r.hi != r.lo + 1) return -1;
  buf = r.buf;
  return r.lo;
}

uint64_t Value::atoms() const {
  uint64_t n = 0;
  for (const auto& r : runs) n += uint64_t{r.hi - r.lo} * r.count;
  return n;
}

namespace {

bool family_less(const Run& a, const Run& b) {
  if (a.kind != b.kind) return a.kind < b.kind;
  if (a.buf != b.buf) return a.buf < b.buf;
  if (a.fixed != b.fixed) return a.fixed < b.fixed;
  if (a.mask != b.mask) return a.mask < b.mask;
  return a.lo < b.lo;
}

// Sweeps the signed counts of one family's runs and appends the runs with count > 0.
void sweep(const std::vector<std::pair<const Run*, int64_t>>& fam, std::vector<Run>& out) {
  std::vector<std::pair<uint32_t, int64_t>> ev;
  ev.reserve(fam.size() * 2);
  for (const auto& [r, sign] : fam) {
    ev.emplace_back(r->lo, sign * r->count);
    ev.emplace_back(r->hi, -sign * static_cast<int64_t>(r->count));
  }
  std::sort(ev.begin(), ev.end());
  int64_t cur = 0;
  const Run& proto = *fam[0].first;
  for (size_t i = 0; i < ev.size();) {
    uint32_t x = ev[i].first;
    while (i < ev.size() && ev[i].first == x) cur += ev[i++].second;
    if (i < ev.size() && cur > 0 && ev[i].first > x) {
      Run r = proto;
      r.lo = x;
      r.hi = ev[i].first;
      r.count = static_cast<uint32_t>(cur);
      if (!out.empty() && out.back().same_family(r) && out.back().hi == r.lo && out.back().count == r.count) {
        out.back().hi = r.hi;
      } else {
        out.push_back(r);
      }
    }
  }
}

// Combines two run lists with signs (+1 / −1), keeping positive counts, normalised.
std::vector<Run> combine(const std::vector<Run>& a, int64_t sa, const std::vector<Run>& b, int64_t sb) {
  std::vector<std::pair<const Run*, int64_t>> all;
  all.reserve(a.size() + b.size());
  for (const auto& r : a) all.emplace_back(&r, sa);
  for (const auto& r : b) all.emplace_back(&r, sb);
  std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return family_less(*x.first, *y.first); });
  std::vector<Run> out;
  for (size_t i = 0; i < all.size();) {
    size_t j = i + 1;
    while (j < all.size() && all[j].first->same_family(*all[i].first)) ++j;
    std::vector<std::pair<const Run*, int64_t>> fam(all.begin() + static_cast<std::ptrdiff_t>(i),
                                                    all.begin() + static_cast<std::ptrdiff_t>(j));
    sweep(fam, out);
    i = j;
  }
  return out;
}

}  // namespace

std::vector<Run> normalise(std::vector<Run> runs) { return combine(runs, 1, {}, 1); }

Value add(const Value& a, const Value& b) {
  Value v;
  v.defined = a.defined && b.defined;
  if (a.runs.empty()) v.runs = b.runs;
  else if (b.runs.empty()) v.runs = a.runs;
  else v.runs = combine(a.runs, 1, b.runs, 1);
  return v;
}

void add_into(Value& a, const Value& b) {
  // Fast path: one run each, same family, adjacent ranges with equal counts (ring partial sums).
  if (a.runs.size() == 1 && b.runs.size() == 1) {
    Run& x = a.runs[0];
    const Run& y = b.runs[0];
    if (x.same_family(y) && x.count == y.count) {
      if (x.hi == y.lo) {
        x.hi = y.hi;
        a.defined = a.defined && b.defined;
        return;
      }
      if (y.hi == x.lo) {
        x.lo = y.lo;
        a.defined = a.defined && b.defined;
        return;
      }
    }
  }
  a = add(a, b);
}

std::vector<Run> minus(const Value& a, const Value& b) { return combine(a.runs, 1, b.runs, -1); }

std::string describe_run(const Run& r, const StepGraph& g, int64_t home_buf) {
  auto range = [](uint32_t lo, uint32_t hi) {
    return hi == lo + 1 ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi - 1);
  };
  std::string s;
  if (r.count > 1) s += std::to_string(r.count) + "×";
  std::string bufname = r.buf < g.buffers.size() ? g.buffers[r.buf].name : "?";
  switch (r.kind) {
    case AtomKind::Contrib: s += "d(" + range(r.lo, r.hi) + ", " + std::to_string(r.fixed) + ")"; break;
    case AtomKind::Item: s += "x(" + range(r.lo, r.hi) + ")"; break;
    case AtomKind::Attn: s += "A(" + std::to_string(r.fixed) + ", " + range(r.lo, r.hi) + ", " + mask_name(r.mask) + ")"; break;
    case AtomKind::GradQ: s += "Gq(" + std::to_string(r.fixed) + ", " + range(r.lo, r.hi) + ")"; break;
    case AtomKind::GradKV: s += "Gkv(" + std::to_string(r.fixed) + ", " + range(r.lo, r.hi) + ")"; break;
    case AtomKind::GradV: s += "Gv(" + std::to_string(r.fixed) + ", " + range(r.lo, r.hi) + ")"; break;
  }
  if (home_buf >= 0 && r.buf != home_buf && r.kind != AtomKind::Attn && r.kind != AtomKind::GradQ && r.kind != AtomKind::GradKV &&
      r.kind != AtomKind::GradV)
    s += " of " + bufname;
  return s;
}

std::string describe_runs(const std::vector<Run>& runs, const StepGraph& g, int64_t home_buf, size_t max) {
  if (runs.empty()) return "{}";
  std::string s;
  for (size_t i = 0; i < runs.size() && i < max; ++i) s += (i ? " + " : "") + describe_run(runs[i], g, home_buf);
  if (runs.size() > max) s += " + … (" + std::to_string(runs.size() - max) + " more runs)";
  return s;
}

std::string describe_value(const Value& v, const StepGraph& g, int64_t home_buf) {
  if (!v.defined && v.runs.empty()) return "undefined";
  std::string s = describe_runs(v.runs, g, home_buf);
  if (!v.defined) s += " (with undefined data)";
  return s;
}

}  // namespace sg
