// Attention tile numerics (exec/attention/attention_kernels) against the double-precision oracle: a sequence
// split into 1–8 blocks and its tiles merged in any order gives whole-sequence attention, forward
// and backward, for fp32 and bf16 inputs; empty and fully masked rows never make NaN; and the
// oracle's gradients agree with finite differences of its own forward.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "exec/attention/attention_kernels.hpp"
#include "exec/half.hpp"

namespace {

using namespace sg::exec;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr uint32_t kTagQ = 1, kTagKV = 2, kTagDO = 3;

// Norm-wise relative error, max |got − ref| / max |ref|, accumulated over several comparisons:
// element-wise relative errors are meaningless for outputs that average to near zero.
struct Err {
  double diff = 0, mag = 0;
  void add(double got, double ref) {
    diff = std::max(diff, std::abs(got - ref));
    mag = std::max(mag, std::abs(ref));
  }
  double rel() const { return mag > 0 ? diff / mag : diff; }
};

// A sequence split into blocks of rows[i] rows; block i of Q, KV and dO is item i of its buffer.
struct Problem {
  uint32_t batch, heads, dim, seq = 0;
  std::vector<uint32_t> rows, start;
  float scale;
  std::vector<std::vector<float>> q, kv, dout;
  std::vector<float> q_all, kv_all, dout_all;

  uint32_t nb() const { return static_cast<uint32_t>(rows.size()); }
  size_t planes() const { return size_t{batch} * heads; }
  TileShape tile(uint32_t i, uint32_t j) const { return {batch, heads, rows[i], rows[j], dim}; }
};

Problem make_problem(const std::vector<uint32_t>& rows, uint32_t batch = 2, uint32_t heads = 3, uint32_t dim = 16) {
  Problem p{batch, heads, dim, 0, rows, {}, 1.0f / std::sqrt(static_cast<float>(dim)), {}, {}, {}, {}, {}, {}};
  for (uint32_t r : rows) {
    p.start.push_back(p.seq);
    p.seq += r;
  }
  const size_t planes = p.planes();
  p.q_all.resize(planes * p.seq * dim);
  p.dout_all.resize(p.q_all.size());
  p.kv_all.resize(2 * planes * p.seq * dim);
  for (uint32_t i = 0; i < p.nb(); ++i) {
    const TileShape s = p.tile(i, i);
    p.q.emplace_back(attn_q_elems(s));
    p.dout.emplace_back(attn_q_elems(s));
    p.kv.emplace_back(attn_kv_elems(s));
    fill_attention_input(p.q[i].data(), p.q[i].size(), kTagQ, i, false);
    fill_attention_input(p.dout[i].data(), p.dout[i].size(), kTagDO, i, false);
    fill_attention_input(p.kv[i].data(), p.kv[i].size(), kTagKV, i, false);
    copy_row_block(p.q[i].data(), rows[i], 0, p.q_all.data(), p.seq, p.start[i], rows[i], planes, dim);
    copy_row_block(p.dout[i].data(), rows[i], 0, p.dout_all.data(), p.seq, p.start[i], rows[i], planes, dim);
    copy_row_block(p.kv[i].data(), rows[i], 0, p.kv_all.data(), p.seq, p.start[i], rows[i], 2 * planes, dim);
  }
  return p;
}

// The required cases: batch 2, heads 3, dim 16, 8 rows per block, in 1, 2, 4 and 8 blocks; and a
// ragged one (blocks of 5, 11 and 3 rows, dim 13) that reaches every edge path of the kernels.
std::vector<Problem> problems() {
  std::vector<Problem> ps;
  for (uint32_t nb : {1u, 2u, 4u, 8u}) ps.push_back(make_problem(std::vector<uint32_t>(nb, 8)));
  ps.push_back(make_problem({5, 11, 3}, 1, 2, 13));
  return ps;
}

std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = float_to_bf16(v[i]);
  return r;
}
std::vector<float> from_bf16(const std::vector<uint16_t>& v) {
  std::vector<float> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = bf16_to_float(v[i]);
  return r;
}

std::vector<float> empty_o(const TileShape& s) {
  std::vector<float> o(attn_o_elems(s), 0.0f);
  for (size_t r = 0; r < o.size(); r += s.dim + size_t{1}) o[r + s.dim] = kNegInf;
  return o;
}

bool all_finite(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

// The kv blocks query block i attends to, in ascending order, and whether a tile is diagonal.
std::vector<uint32_t> allowed(uint32_t i, uint32_t nb, bool causal) {
  std::vector<uint32_t> js;
  for (uint32_t j = 0; j < (causal ? i + 1 : nb); ++j) js.push_back(j);
  return js;
}

enum class Order { Forward, Reverse, Shuffled, Tree };

// O|lse of query block i, its tiles applied in `order` (Tree: each tile into its own empty
// accumulator, then attn_merge pairwise, as a reduction between ranks would).
template <class T>
std::vector<float> forward_block(const Problem& p, const std::vector<std::vector<T>>& q, const std::vector<std::vector<T>>& kv, uint32_t i,
                                 bool causal, Order order) {
  std::vector<uint32_t> js = allowed(i, p.nb(), causal);
  if (order == Order::Reverse) std::reverse(js.begin(), js.end());
  if (order == Order::Shuffled) std::rotate(js.begin(), js.begin() + static_cast<long>(js.size() / 2), js.end());
  if (order != Order::Tree) {
    std::vector<float> acc = empty_o(p.tile(i, i));
    for (uint32_t j : js) attn_fwd_tile(q[i].data(), kv[j].data(), acc.data(), p.tile(i, j), causal && j == i, p.scale);
    return acc;
  }
  std::vector<std::vector<float>> parts;
  for (uint32_t j : js) {
    parts.push_back(empty_o(p.tile(i, i)));
    attn_fwd_tile(q[i].data(), kv[j].data(), parts.back().data(), p.tile(i, j), causal && j == i, p.scale);
  }
  while (parts.size() > 1) {
    std::vector<std::vector<float>> next;
    for (size_t k = 0; k + 1 < parts.size(); k += 2) {
      attn_merge(parts[k].data(), parts[k + 1].data(), p.tile(i, i));
      next.push_back(std::move(parts[k]));
    }
    if (parts.size() % 2) next.push_back(std::move(parts.back()));
    parts = std::move(next);
  }
  return parts[0];
}

// Adds block i's O|lse (rows of width dim + 1) to the o and lse errors against the oracle.
void compare_o(const Problem& p, const std::vector<float>& got, const std::vector<double>& ref, uint32_t i, Err& eo, Err& el) {
  const size_t w = p.dim + size_t{1}, rows = p.rows[i];
  for (size_t pl = 0; pl < p.planes(); ++pl)
    for (size_t t = 0; t < rows; ++t)
      for (size_t c = 0; c < w; ++c) (c < p.dim ? eo : el).add(got[(pl * rows + t) * w + c], ref[(pl * p.seq + p.start[i] + t) * w + c]);
}

// Adds block i of a [planes][rows][dim] block layout to err against the whole-sequence oracle.
void compare_rows(const Problem& p, const float* got, const double* ref, uint32_t i, size_t planes, Err& err) {
  const size_t d = p.dim, rows = p.rows[i];
  for (size_t pl = 0; pl < planes; ++pl)
    for (size_t t = 0; t < rows; ++t)
      for (size_t c = 0; c < d; ++c) err.add(got[(pl * rows + t) * d + c], ref[(pl * p.seq + p.start[i] + t) * d + c]);
}

std::vector<double> reference_o(const Problem& p, bool causal) {
  std::vector<double> ref(p.planes() * p.seq * (p.dim + size_t{1}));
  attention_reference_fwd(p.q_all.data(), p.kv_all.data(), ref.data(), p.seq, p.tile(0, 0), causal, p.scale);
  return ref;
}

// Forward over every split and merge order; returns the worst (o, lse) errors.
template <class T>
std::pair<double, double> forward_errors(bool bf16) {
  Err eo, el;
  for (const Problem& p : problems()) {
    std::vector<std::vector<T>> q, kv;
    for (uint32_t i = 0; i < p.nb(); ++i) {
      if constexpr (std::is_same_v<T, float>) {
        q.push_back(p.q[i]);
        kv.push_back(p.kv[i]);
      } else {
        q.push_back(to_bf16(p.q[i]));
        kv.push_back(to_bf16(p.kv[i]));
      }
    }
    for (bool causal : {true, false}) {
      const std::vector<double> ref = reference_o(p, causal);
      for (Order order : {Order::Forward, Order::Reverse, Order::Shuffled, Order::Tree})
        for (uint32_t i = 0; i < p.nb(); ++i) {
          const std::vector<float> got = forward_block(p, q, kv, i, causal, order);
          REQUIRE(all_finite(got));
          compare_o(p, got, ref, i, eo, el);
        }
    }
  }
  std::printf("attention forward %s inputs: max rel error o %.3g, lse %.3g\n", bf16 ? "bf16" : "fp32", eo.rel(), el.rel());
  return {eo.rel(), el.rel()};
}

// Backward of every allowed tile summed, against the oracle; returns the worst of dQ, dK, dV.
double backward_error(const Problem& p, bool bf16, bool causal) {
  const uint32_t nb = p.nb();
  const size_t planes = p.planes();
  std::vector<std::vector<uint16_t>> q16, kv16;
  for (uint32_t i = 0; bf16 && i < nb; ++i) {
    q16.push_back(to_bf16(p.q[i]));
    kv16.push_back(to_bf16(p.kv[i]));
  }
  // The tiled forward gives each block's final O|lse, which the bundle carries.
  std::vector<std::vector<float>> bundle, dq, dkv;
  for (uint32_t i = 0; i < nb; ++i) {
    const TileShape s = p.tile(i, i);
    const std::vector<float> o =
        bf16 ? forward_block(p, q16, kv16, i, causal, Order::Forward) : forward_block(p, p.q, p.kv, i, causal, Order::Forward);
    const std::vector<float> qi = bf16 ? from_bf16(q16[i]) : p.q[i];
    bundle.emplace_back(attn_bundle_elems(s));
    attn_bwd_bundle(qi.data(), p.dout[i].data(), o.data(), bundle.back().data(), s);
    dq.emplace_back(attn_q_elems(s), 0.0f);
    dkv.emplace_back(attn_kv_elems(s), 0.0f);
  }
  // Ring order: kv block j visits every query block that may see it.
  for (uint32_t j = 0; j < nb; ++j)
    for (uint32_t i = causal ? j : 0; i < nb; ++i) {
      const TileShape s = p.tile(i, j);
      if (bf16) attn_bwd_tile(bundle[i].data(), kv16[j].data(), dq[i].data(), dkv[j].data(), s, causal && i == j, p.scale);
      else attn_bwd_tile(bundle[i].data(), p.kv[j].data(), dq[i].data(), dkv[j].data(), s, causal && i == j, p.scale);
    }
  std::vector<double> rdq(p.q_all.size()), rdkv(p.kv_all.size());
  attention_reference_bwd(p.q_all.data(), p.kv_all.data(), p.dout_all.data(), rdq.data(), rdkv.data(), p.seq, p.tile(0, 0), causal,
                          p.scale);
  Err eq, ek, ev;
  const size_t half = planes * p.seq * p.dim;
  for (uint32_t i = 0; i < nb; ++i) {
    REQUIRE(all_finite(dq[i]));
    REQUIRE(all_finite(dkv[i]));
    compare_rows(p, dq[i].data(), rdq.data(), i, planes, eq);
    compare_rows(p, dkv[i].data(), rdkv.data(), i, planes, ek);
    compare_rows(p, dkv[i].data() + planes * p.rows[i] * p.dim, rdkv.data() + half, i, planes, ev);
  }
  return std::max({eq.rel(), ek.rel(), ev.rel()});
}

}  // namespace

TEST_CASE("attention: inputs are deterministic, in [-1, 1], and bf16-exact when asked", "[attention_kernels]") {
  std::vector<float> a(1000), b(1000), c(1000), h(1000);
  fill_attention_input(a.data(), a.size(), 7, 3, false);
  fill_attention_input(b.data(), b.size(), 7, 3, false);
  fill_attention_input(c.data(), c.size(), 7, 4, false);
  fill_attention_input(h.data(), h.size(), 7, 3, true);
  CHECK(a == b);
  CHECK(a != c);
  double mean = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i] >= -1.0f);
    REQUIRE(a[i] <= 1.0f);
    REQUIRE(bf16_to_float(float_to_bf16(h[i])) == h[i]);
    REQUIRE(std::abs(h[i] - a[i]) <= std::abs(a[i]) * 0x1p-8f);
    mean += a[i];
  }
  CHECK(std::abs(mean / 1000) < 0.1);
  const TileShape s{2, 3, 8, 16, 64};
  CHECK(attn_fwd_flops(s, false) == 4.0 * 2 * 3 * 8 * 16 * 64);
  CHECK(attn_fwd_flops(s, true) == 2.0 * 2 * 3 * 8 * 16 * 64);
  CHECK(attn_bwd_flops(s, false) == 2.5 * attn_fwd_flops(s, false));
}

TEST_CASE("attention forward: split keys merged in any order equal the reference (fp32)", "[attention_kernels]") {
  const auto [eo, el] = forward_errors<float>(false);
  CHECK(eo < 1e-5);
  CHECK(el < 1e-5);
}

TEST_CASE("attention forward: bf16 inputs stay near the fp32-input reference", "[attention_kernels]") {
  const auto [eo, el] = forward_errors<uint16_t>(true);
  CHECK(eo < 2.5e-2);
  CHECK(el < 2.5e-2);
}

TEST_CASE("attention merge: empty operands are identities and never make NaN", "[attention_kernels]") {
  const Problem p = make_problem({8, 8});
  const TileShape s = p.tile(0, 0);
  SECTION("empty ⊕ empty stays empty") {
    std::vector<float> a = empty_o(s);
    const std::vector<float> b = empty_o(s);
    attn_merge(a.data(), b.data(), s);
    CHECK(a == b);
    // A tile from an empty accumulator against an all-empty partner block.
    std::vector<float> t = empty_o(s);
    attn_fwd_tile(p.q[0].data(), p.kv[0].data(), t.data(), s, true, p.scale);
    attn_merge(t.data(), b.data(), s);
    CHECK(all_finite(std::vector<float>(t.begin(), t.begin() + s.dim)));
  }
  SECTION("empty ⊕ x = x ⊕ empty = x, bit for bit; merge is commutative bit for bit") {
    std::vector<float> x = empty_o(s), y = empty_o(s);
    attn_fwd_tile(p.q[1].data(), p.kv[0].data(), x.data(), s, false, p.scale);
    attn_fwd_tile(p.q[1].data(), p.kv[1].data(), y.data(), s, true, p.scale);
    std::vector<float> e = empty_o(s), xe = x;
    attn_merge(e.data(), x.data(), s);
    attn_merge(xe.data(), empty_o(s).data(), s);
    CHECK(e == x);
    CHECK(xe == x);
    std::vector<float> xy = x, yx = y;
    attn_merge(xy.data(), y.data(), s);
    attn_merge(yx.data(), x.data(), s);
    CHECK(xy == yx);
  }
  SECTION("a row that sees no key leaves its accumulator untouched") {
    // causal_offset -3: query t sees keys u <= t - 3, so rows 0..2 see none.
    std::vector<float> o = empty_o(s);
    attn_fwd_tile(p.q[0].data(), p.kv[0].data(), o.data(), s, true, p.scale, -3);
    REQUIRE(all_finite(std::vector<float>(o.begin(), o.begin() + s.dim)));
    const size_t w = s.dim + size_t{1};
    for (size_t r = 0; r < size_t{s.batch} * s.heads * s.rows_q; ++r) {
      const bool masked = r % s.rows_q < 3;
      for (size_t c = 0; c < s.dim; ++c) REQUIRE(std::isfinite(o[r * w + c]));
      CHECK((o[r * w + s.dim] == kNegInf) == masked);
      if (masked)
        CHECK(std::all_of(o.begin() + static_cast<long>(r * w), o.begin() + static_cast<long>(r * w + s.dim),
                          [](float v) { return v == 0.0f; }));
    }
    // Into a non-empty accumulator: the masked rows keep their exact values.
    std::vector<float> acc = empty_o(s);
    attn_fwd_tile(p.q[0].data(), p.kv[1].data(), acc.data(), s, false, p.scale);
    std::vector<float> before = acc;
    attn_fwd_tile(p.q[0].data(), p.kv[0].data(), acc.data(), s, true, p.scale, -3);
    for (size_t r = 0; r < size_t{s.batch} * s.heads * s.rows_q; ++r)
      if (r % s.rows_q < 3)
        for (size_t c = 0; c < w; ++c) REQUIRE(acc[r * w + c] == before[r * w + c]);
    // The backward of such rows (lse = -inf in the bundle, and masked) adds nothing and no NaN.
    std::vector<float> bundle(attn_bundle_elems(s)), dq(attn_q_elems(s), 0.0f), dkv(attn_kv_elems(s), 0.0f);
    attn_bwd_bundle(p.q[0].data(), p.dout[0].data(), o.data(), bundle.data(), s);
    attn_bwd_tile(bundle.data(), p.kv[0].data(), dq.data(), dkv.data(), s, true, p.scale, -3);
    CHECK(all_finite(dq));
    CHECK(all_finite(dkv));
    for (size_t r = 0; r < size_t{s.batch} * s.heads * s.rows_q; ++r)
      if (r % s.rows_q < 3)
        for (size_t c = 0; c < s.dim; ++c) REQUIRE(dq[r * s.dim + c] == 0.0f);
  }
  SECTION("a shifted diagonal is the causal tile of shifted queries; a far one is the full tile") {
    // Row t under offset -3 sees keys 0..t-3: what row t-3 of queries q[3..] sees under offset 0.
    std::vector<float> shifted = empty_o(s);
    attn_fwd_tile(p.q[0].data(), p.kv[0].data(), shifted.data(), s, true, p.scale, -3);
    TileShape s5 = s;
    s5.rows_q = s.rows_q - 3;
    std::vector<float> q5(attn_q_elems(s5));
    copy_row_block(p.q[0].data(), s.rows_q, 3, q5.data(), s5.rows_q, 0, s5.rows_q, size_t{s.batch} * s.heads, s.dim);
    std::vector<float> o5 = empty_o(s5);
    attn_fwd_tile(q5.data(), p.kv[0].data(), o5.data(), s5, true, p.scale);
    Err e;
    const size_t w = s.dim + size_t{1};
    for (size_t pl = 0; pl < size_t{s.batch} * s.heads; ++pl)
      for (size_t t = 3; t < s.rows_q; ++t)
        for (size_t c = 0; c < w; ++c) e.add(shifted[(pl * s.rows_q + t) * w + c], o5[(pl * s5.rows_q + t - 3) * w + c]);
    CHECK(e.rel() < 1e-6);
    std::vector<float> far = empty_o(s), full = empty_o(s);
    attn_fwd_tile(p.q[0].data(), p.kv[1].data(), far.data(), s, true, p.scale, s.rows_k);
    attn_fwd_tile(p.q[0].data(), p.kv[1].data(), full.data(), s, false, p.scale);
    CHECK(far == full);
    std::vector<float> bundle(attn_bundle_elems(s));
    attn_bwd_bundle(p.q[0].data(), p.dout[0].data(), full.data(), bundle.data(), s);
    std::vector<float> dq_far(attn_q_elems(s), 0.0f), dkv_far(attn_kv_elems(s), 0.0f), dq_full = dq_far, dkv_full = dkv_far;
    attn_bwd_tile(bundle.data(), p.kv[1].data(), dq_far.data(), dkv_far.data(), s, true, p.scale, s.rows_k);
    attn_bwd_tile(bundle.data(), p.kv[1].data(), dq_full.data(), dkv_full.data(), s, false, p.scale);
    CHECK(dq_far == dq_full);
    CHECK(dkv_far == dkv_full);
  }
  SECTION("merge is associative up to rounding") {
    std::vector<float> a = empty_o(s), b = empty_o(s), c = empty_o(s);
    attn_fwd_tile(p.q[1].data(), p.kv[0].data(), a.data(), s, false, p.scale);
    attn_fwd_tile(p.q[1].data(), p.kv[1].data(), b.data(), s, true, p.scale);
    attn_fwd_tile(p.q[0].data(), p.kv[0].data(), c.data(), s, false, 0.5f * p.scale);
    std::vector<float> ab_c = a, bc = b;
    attn_merge(ab_c.data(), b.data(), s);
    attn_merge(ab_c.data(), c.data(), s);
    attn_merge(bc.data(), c.data(), s);
    std::vector<float> a_bc = a;
    attn_merge(a_bc.data(), bc.data(), s);
    Err e;
    for (size_t i = 0; i < a.size(); ++i) e.add(ab_c[i], a_bc[i]);
    CHECK(e.rel() < 1e-6);
  }
}

TEST_CASE("attention backward: tiles summed over allowed pairs equal the reference", "[attention_kernels]") {
  double worst32 = 0, worst16 = 0;
  for (const Problem& p : problems())
    for (bool causal : {true, false}) {
      const double e32 = backward_error(p, false, causal), e16 = backward_error(p, true, causal);
      CHECK(e32 < 1e-4);
      CHECK(e16 < 2.5e-2);
      worst32 = std::max(worst32, e32);
      worst16 = std::max(worst16, e16);
    }
  std::printf("attention backward: max rel error fp32 %.3g, bf16 %.3g\n", worst32, worst16);
}

TEST_CASE("attention reference backward matches finite differences of its forward", "[attention_kernels]") {
  // Loss L = Σ dO ∘ O, so dL/dx is what attention_reference_bwd returns for upstream gradient dO.
  const TileShape s{1, 2, 0, 0, 4};
  const uint32_t seq = 6;
  const size_t n = size_t{s.batch} * s.heads * seq * s.dim;
  const float scale = 0.7f;
  std::vector<float> q(n), kv(2 * n), dout(n);
  fill_attention_input(q.data(), n, 11, 0, false);
  fill_attention_input(kv.data(), 2 * n, 12, 0, false);
  fill_attention_input(dout.data(), n, 13, 0, false);
  std::vector<double> o(size_t{s.batch} * s.heads * seq * (s.dim + size_t{1}));
  auto loss = [&](bool causal) {
    attention_reference_fwd(q.data(), kv.data(), o.data(), seq, s, causal, scale);
    double l = 0;
    for (size_t r = 0; r < n / s.dim; ++r)
      for (size_t c = 0; c < s.dim; ++c) l += double{dout[r * s.dim + c]} * o[r * (s.dim + 1) + c];
    return l;
  };
  for (bool causal : {true, false}) {
    std::vector<double> dq(n), dkv(2 * n);
    attention_reference_bwd(q.data(), kv.data(), dout.data(), dq.data(), dkv.data(), seq, s, causal, scale);
    Err e;
    auto check = [&](std::vector<float>& x, const std::vector<double>& g) {
      for (size_t i = 0; i < x.size(); ++i) {
        const float x0 = x[i];
        x[i] = x0 + 1e-3f;
        const double hi = double{x[i]}, lp = loss(causal);
        x[i] = x0 - 1e-3f;
        const double lo = double{x[i]}, lm = loss(causal);
        x[i] = x0;
        e.add((lp - lm) / (hi - lo), g[i]);
      }
    };
    check(q, dq);
    check(kv, dkv);
    std::printf("attention reference backward vs finite differences (%s): max rel error %.3g\n", causal ? "causal" : "full", e.rel());
    CHECK(e.rel() < 1e-5);
    CHECK(e.mag > 0.01);  // the gradients are not trivially zero
  }
}
