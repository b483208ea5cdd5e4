#include "exec/attention/attention_kernels.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "exec/half.hpp"

namespace sg::exec {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Register tile of the matrix products: kMR rows × kNV vectors of C stay in registers while the
// shared dimension streams by (8 accumulators, 2 B vectors and a broadcast fit in 16 registers).
// The micro-kernel uses the GCC/Clang vector extension because, given plain loops, GCC vectorises
// across the rows of A (gathering them lane by lane) instead of along the rows of B.
#if defined(__AVX__)
constexpr size_t kVec = 8;
#else
constexpr size_t kVec = 4;  // the x86-64 baseline: SSE2
#endif
typedef float VecF __attribute__((vector_size(kVec * sizeof(float))));
constexpr size_t kMR = 4;
constexpr size_t kNV = 2;

inline VecF load(const float* p) {
  VecF v;
  std::memcpy(&v, p, sizeof v);  // unaligned load
  return v;
}
inline void store(float* p, VecF v) { std::memcpy(p, &v, sizeof v); }

typedef int32_t VecI __attribute__((vector_size(kVec * sizeof(int32_t))));

// The first w < kVec lanes of p, the others `fill` (row tails go through the same vector code as
// the rest of the row, so every element gets the same arithmetic).
inline VecF load_part(const float* p, size_t w, float fill) {
  VecF v = VecF{} + fill;
  for (size_t i = 0; i < w; ++i) v[i] = p[i];
  return v;
}
inline void store_part(float* p, size_t w, VecF v) {
  for (size_t i = 0; i < w; ++i) p[i] = v[i];
}

// e^x lane by lane (Cephes' expf: 2^n·e^r with |r| <= ln2/2 and a degree-7 polynomial, about 1
// ulp): libm's scalar exp made the n² exponentials a quarter of a forward tile. Below -87.3, where
// e^x leaves the normal range, it gives 0; above 88 it saturates at e^88 (softmax arguments are
// at most about 0, so neither matters for accuracy).
inline VecF exp_vec(VecF x) {
  const VecF zero = {}, lo = zero - 87.33654f, hi = zero + 88.0f;
  const VecF xc = x < lo ? lo : (x > hi ? hi : x);
  // Adding 1.5·2^23 rounds x·log2(e) to the integer n, which then sits in the low mantissa bits.
  const VecF shifter = zero + 12582912.0f;
  const VecF t = xc * 1.44269504088896341f + shifter;
  const VecF n = t - shifter;
  const VecI ni = std::bit_cast<VecI>(t) - 0x4B400000;
  // ln 2 in two parts (Cody–Waite), so r = x − n·ln 2 is exact to float precision.
  const VecF r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
  VecF y = r * 1.9875691500e-4f + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * (r * r) + r + 1.0f;
  const VecF pow2 = std::bit_cast<VecF>((ni + 127) << 23);
  return x < lo ? zero : y * pow2;
}

inline float hmax(VecF v) {
  float m = v[0];
  for (size_t i = 1; i < kVec; ++i) m = std::max(m, v[i]);
  return m;
}
inline float hsum(VecF v) {
  float a = 0;
  for (size_t i = 0; i < kVec; ++i) a += v[i];
  return a;
}

// row[0, n) ← exp(scale·row − m) with m = max(scale·row), n >= 1; returns m and the row's sum.
void softmax_row(float* row, size_t n, float scale, float& m, float& sum) {
  const size_t whole = n - n % kVec, w = n - whole;
  VecF vm = VecF{} + kNegInf;
  for (size_t u = 0; u < whole; u += kVec) {
    const VecF x = load(row + u) * scale;
    vm = x > vm ? x : vm;
  }
  if (w) {
    const VecF x = load_part(row + whole, w, kNegInf) * scale;
    vm = x > vm ? x : vm;
  }
  m = hmax(vm);
  VecF vs = {};
  for (size_t u = 0; u < whole; u += kVec) {
    const VecF e = exp_vec(load(row + u) * scale - m);
    store(row + u, e);
    vs += e;
  }
  if (w) {
    const VecF e = exp_vec(load_part(row + whole, w, kNegInf) * scale - m);  // the -inf lanes give 0
    store_part(row + whole, w, e);
    vs += e;
  }
  sum = hsum(vs);
}

// The backward's element-wise step on keys [0, n) of one query row: P = exp(scale·S − lse) in p
// (which holds S), dS = scale·P ∘ (dP − D) in ds (which holds dP).
void backward_row(float* p, float* ds, size_t n, float scale, float lse, float D) {
  const size_t whole = n - n % kVec, w = n - whole;
  for (size_t u = 0; u < whole; u += kVec) {
    const VecF e = exp_vec(load(p + u) * scale - lse);
    store(p + u, e);
    store(ds + u, e * (load(ds + u) - D) * scale);
  }
  if (w) {
    const VecF e = exp_vec(load_part(p + whole, w, 0.0f) * scale - lse);
    store_part(p + whole, w, e);
    store_part(ds + whole, w, e * (load_part(ds + whole, w, 0.0f) - D) * scale);
  }
}

// C[MR × NV·kVec] (+)= A[MR × k]·B[k × NV·kVec]. A's elements are broadcast one at a time, so A is
// read through two strides (a transposed A costs nothing); B's rows are contiguous.
template <size_t MR, size_t NV>
void gemm_tile(size_t k, const float* A, size_t ai, size_t ak, const float* B, size_t ldb, float* C, size_t ldc, bool accumulate) {
  // The unroll pragmas keep c in registers at -O2 too (GCC only unrolls these fully at -O3).
  VecF c[MR][NV] = {};
  for (size_t p = 0; p < k; ++p) {
    VecF b[NV];
#pragma GCC unroll 4
    for (size_t v = 0; v < NV; ++v) b[v] = load(B + p * ldb + v * kVec);
#pragma GCC unroll 4
    for (size_t i = 0; i < MR; ++i) {
      const float a = A[i * ai + p * ak];
#pragma GCC unroll 4
      for (size_t v = 0; v < NV; ++v) c[i][v] += b[v] * a;
    }
  }
#pragma GCC unroll 4
  for (size_t i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (size_t v = 0; v < NV; ++v) {
      float* out = C + i * ldc + v * kVec;
      store(out, accumulate ? load(out) + c[i][v] : c[i][v]);
    }
}

// C[MR × n] (+)= A[MR × k]·B[k × n]: whole register tiles, then single vectors, then a scalar edge.
template <size_t MR>
void gemm_rows(size_t n, size_t k, const float* A, size_t ai, size_t ak, const float* B, size_t ldb, float* C, size_t ldc,
               bool accumulate) {
  size_t j = 0;
  for (; j + kNV * kVec <= n; j += kNV * kVec) gemm_tile<MR, kNV>(k, A, ai, ak, B + j, ldb, C + j, ldc, accumulate);
  for (; j + kVec <= n; j += kVec) gemm_tile<MR, 1>(k, A, ai, ak, B + j, ldb, C + j, ldc, accumulate);
  for (; j < n; ++j)
    for (size_t i = 0; i < MR; ++i) {
      float c = 0;
      for (size_t p = 0; p < k; ++p) c += A[i * ai + p * ak] * B[p * ldb + j];
      C[i * ldc + j] = accumulate ? C[i * ldc + j] + c : c;
    }
}

// The same for m <= kMR rows (the last row block may be short).
void gemm_block(size_t m, size_t n, size_t k, const float* A, size_t ai, size_t ak, const float* B, size_t ldb, float* C, size_t ldc,
                bool accumulate) {
  switch (m) {
    case 4: gemm_rows<4>(n, k, A, ai, ak, B, ldb, C, ldc, accumulate); break;
    case 3: gemm_rows<3>(n, k, A, ai, ak, B, ldb, C, ldc, accumulate); break;
    case 2: gemm_rows<2>(n, k, A, ai, ak, B, ldb, C, ldc, accumulate); break;
    case 1: gemm_rows<1>(n, k, A, ai, ak, B, ldb, C, ldc, accumulate); break;
    default: break;
  }
}
static_assert(kMR == 4, "gemm_block dispatches on up to 4 rows");

// Keys [0, result) are visible to query row t.
size_t visible_keys(size_t t, size_t rows_k, bool causal, int64_t offset) {
  if (!causal) return rows_k;
  const int64_t v = static_cast<int64_t>(t) + 1 + offset;
  return v <= 0 ? 0 : std::min(rows_k, static_cast<size_t>(v));
}

// Query rows [result, rows_q) see key u (the first row at or after the shifted diagonal).
size_t first_query(size_t u, size_t rows_q, bool causal, int64_t offset) {
  if (!causal) return 0;
  const int64_t t = static_cast<int64_t>(u) - offset;
  return t <= 0 ? 0 : std::min(rows_q, static_cast<size_t>(t));
}

// An fp32 view of n input elements: float input is used in place, bf16 is widened into buf.
const float* as_float(const float* src, size_t, std::vector<float>&) { return src; }
const float* as_float(const uint16_t* src, size_t n, std::vector<float>& buf) {
  for (size_t i = 0; i < n; ++i) buf[i] = bf16_to_float(src[i]);
  return buf.data();
}

// dst[c × rows] = src[rows × c]ᵀ: the key-side operand of S = Q·Kᵀ (and dP = dO·Vᵀ) becomes a B
// with contiguous rows.
void transpose(const float* src, size_t rows, size_t cols, float* dst) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
}

// acc row ← acc ⊕ (o, lse) for one query row of width d. Both special cases return early so that
// empty operands never reach exp(-inf − -inf) = NaN. The general case names its operands by lse
// (larger, smaller), not by position, so it is exactly commutative even where the compiler fuses
// a·w + b·v into fma(a, w, b·v) (C++ allows that contraction; it is not symmetric in a and b).
void merge_row(float* acc, const float* o, float lse, size_t d) {
  const float lse_acc = acc[d];
  if (lse == kNegInf) return;
  if (lse_acc == kNegInf) {
    std::copy(o, o + d, acc);
    acc[d] = lse;
    return;
  }
  const float hi = std::max(lse_acc, lse), lo = std::min(lse_acc, lse);
  const float merged = hi + std::log1p(std::exp(lo - hi));
  const float wh = std::exp(hi - merged), wl = std::exp(lo - merged);
  if (lse_acc == lse) {
    for (size_t c = 0; c < d; ++c) acc[c] = (acc[c] + o[c]) * wh;
  } else {
    const float* h = lse_acc > lse ? acc : o;
    const float* l = lse_acc > lse ? o : acc;
    for (size_t c = 0; c < d; ++c) acc[c] = h[c] * wh + l[c] * wl;
  }
  acc[d] = merged;
}

template <class T>
void fwd_tile(const T* q_in, const T* kv_in, float* o_lse, const TileShape& s, bool causal, float scale, int64_t offset) {
  const size_t rq = s.rows_q, rk = s.rows_k, d = s.dim, planes = size_t{s.batch} * s.heads;
  if (rq == 0 || d == 0) return;
  // Per-call scratch: the bf16 widening of one plane, Kᵀ, and one row block of S / P and O.
  std::vector<float> qbuf(std::is_same_v<T, float> ? 0 : rq * d), kbuf(std::is_same_v<T, float> ? 0 : rk * d),
      vbuf(std::is_same_v<T, float> ? 0 : rk * d), kt(rk * d), p(kMR * rk), ot(kMR * d);
  float lse_t[kMR], inv_l[kMR];
  for (size_t pl = 0; pl < planes; ++pl) {
    const float* Q = as_float(q_in + pl * rq * d, rq * d, qbuf);
    const float* K = as_float(kv_in + pl * rk * d, rk * d, kbuf);
    const float* V = as_float(kv_in + (planes + pl) * rk * d, rk * d, vbuf);
    float* O = o_lse + pl * rq * (d + 1);
    transpose(K, rk, d, kt.data());
    for (size_t t0 = 0; t0 < rq; t0 += kMR) {
      const size_t m = std::min(kMR, rq - t0);
      // Only keys some row of the block sees are computed: a causal tile does about half the work.
      const size_t n = visible_keys(t0 + m - 1, rk, causal, offset);
      if (n == 0) continue;  // every row of the block sees no key: its accumulators stay as they are
      gemm_block(m, n, d, Q + t0 * d, d, 1, kt.data(), rk, p.data(), rk, false);
      for (size_t i = 0; i < m; ++i) {
        float* row = p.data() + i * rk;
        const size_t vis = visible_keys(t0 + i, rk, causal, offset);
        std::fill(row + vis, row + n, 0.0f);
        if (vis == 0) {
          lse_t[i] = kNegInf;
          continue;
        }
        float mx, l;
        softmax_row(row, vis, scale, mx, l);
        lse_t[i] = mx + std::log(l);  // l >= 1: the maximum contributes exp(0)
        inv_l[i] = 1.0f / l;
      }
      gemm_block(m, d, n, p.data(), rk, 1, V, d, ot.data(), d, false);
      for (size_t i = 0; i < m; ++i) {
        if (lse_t[i] == kNegInf) continue;
        float* orow = ot.data() + i * d;
        for (size_t c = 0; c < d; ++c) orow[c] *= inv_l[i];
        merge_row(O + (t0 + i) * (d + 1), orow, lse_t[i], d);
      }
    }
  }
}

template <class T>
void bwd_tile(const float* bundle, const T* kv_in, float* dq, float* dkv, const TileShape& s, bool causal, float scale, int64_t offset) {
  const size_t rq = s.rows_q, rk = s.rows_k, d = s.dim, planes = size_t{s.batch} * s.heads;
  const size_t lb = 2 * d + 2;  // bundle row: q, dO, lse, D
  if (rq == 0 || rk == 0 || d == 0) return;
  std::vector<float> kbuf(std::is_same_v<T, float> ? 0 : rk * d), vbuf(std::is_same_v<T, float> ? 0 : rk * d), kt(rk * d), vt(rk * d),
      P(rq * rk), dS(rq * rk);
  for (size_t pl = 0; pl < planes; ++pl) {
    const float* B = bundle + pl * rq * lb;
    const float* K = as_float(kv_in + pl * rk * d, rk * d, kbuf);
    const float* V = as_float(kv_in + (planes + pl) * rk * d, rk * d, vbuf);
    float* dQ = dq + pl * rq * d;
    float* dK = dkv + pl * rk * d;
    float* dV = dkv + (planes + pl) * rk * d;
    transpose(K, rk, d, kt.data());
    transpose(V, rk, d, vt.data());
    // Query side: S = Q·Kᵀ, dP = dO·Vᵀ, then P and dS (pre-scaled) for the whole plane.
    for (size_t t0 = 0; t0 < rq; t0 += kMR) {
      const size_t m = std::min(kMR, rq - t0);
      const size_t n = visible_keys(t0 + m - 1, rk, causal, offset);
      if (n > 0) {
        gemm_block(m, n, d, B + t0 * lb, lb, 1, kt.data(), rk, P.data() + t0 * rk, rk, false);
        gemm_block(m, n, d, B + t0 * lb + d, lb, 1, vt.data(), rk, dS.data() + t0 * rk, rk, false);
      }
      for (size_t i = 0; i < m; ++i) {
        const size_t t = t0 + i;
        const float lse = B[t * lb + 2 * d], D = B[t * lb + 2 * d + 1];
        // A row the forward never reached has lse = -inf: it carries no probability mass.
        const size_t vis = lse == kNegInf ? 0 : visible_keys(t, rk, causal, offset);
        float* prow = P.data() + t * rk;
        float* dsrow = dS.data() + t * rk;
        backward_row(prow, dsrow, vis, scale, lse, D);
        // Zero the rest of the row: the key-side products below read whole columns.
        std::fill(prow + vis, prow + rk, 0.0f);
        std::fill(dsrow + vis, dsrow + rk, 0.0f);
      }
      if (n > 0) gemm_block(m, d, n, dS.data() + t0 * rk, rk, 1, K, d, dQ + t0 * d, d, true);
    }
    // Key side: dV += Pᵀ·dO, dK += dSᵀ·Q, over the query rows that see the block's first key.
    for (size_t u0 = 0; u0 < rk; u0 += kMR) {
      const size_t m = std::min(kMR, rk - u0);
      const size_t t_first = first_query(u0, rq, causal, offset);
      const size_t k = rq - t_first;
      if (k == 0) continue;
      gemm_block(m, d, k, P.data() + t_first * rk + u0, 1, rk, B + t_first * lb + d, lb, dV + u0 * d, d, true);
      gemm_block(m, d, k, dS.data() + t_first * rk + u0, 1, rk, B + t_first * lb, lb, dK + u0 * d, d, true);
    }
  }
}

// One plane of the double-precision oracle: P (row-normalised), O and lse for seq rows.
struct PlaneRef {
  std::vector<double> P, O, lse;
};

PlaneRef reference_plane(const float* Q, const float* K, const float* V, size_t seq, size_t d, bool causal, double scale) {
  PlaneRef r{std::vector<double>(seq * seq, 0.0), std::vector<double>(seq * d, 0.0), std::vector<double>(seq)};
  for (size_t t = 0; t < seq; ++t) {
    const size_t vis = causal ? t + 1 : seq;
    double* prow = r.P.data() + t * seq;
    double mx = -std::numeric_limits<double>::infinity();
    for (size_t u = 0; u < vis; ++u) {
      double dot = 0;
      for (size_t c = 0; c < d; ++c) dot += double{Q[t * d + c]} * double{K[u * d + c]};
      prow[u] = scale * dot;
      mx = std::max(mx, prow[u]);
    }
    double l = 0;
    for (size_t u = 0; u < vis; ++u) l += (prow[u] = std::exp(prow[u] - mx));
    for (size_t u = 0; u < vis; ++u) {
      prow[u] /= l;
      for (size_t c = 0; c < d; ++c) r.O[t * d + c] += prow[u] * double{V[u * d + c]};
    }
    r.lse[t] = mx + std::log(l);
  }
  return r;
}

template <class Out>
void reference_fwd(const float* q_all, const float* kv_all, Out* out, uint32_t seq, const TileShape& s, bool causal, float scale) {
  const size_t n = seq, d = s.dim, planes = size_t{s.batch} * s.heads;
  for (size_t pl = 0; pl < planes; ++pl) {
    const PlaneRef r =
        reference_plane(q_all + pl * n * d, kv_all + pl * n * d, kv_all + (planes + pl) * n * d, n, d, causal, double{scale});
    Out* o = out + pl * n * (d + 1);
    for (size_t t = 0; t < n; ++t) {
      for (size_t c = 0; c < d; ++c) o[t * (d + 1) + c] = static_cast<Out>(r.O[t * d + c]);
      o[t * (d + 1) + d] = static_cast<Out>(r.lse[t]);
    }
  }
}

template <class Out>
void reference_bwd(const float* q_all, const float* kv_all, const float* dout_all, Out* dq_all, Out* dkv_all, uint32_t seq,
                   const TileShape& s, bool causal, float scale) {
  const size_t n = seq, d = s.dim, planes = size_t{s.batch} * s.heads;
  const double sc = double{scale};
  std::vector<double> dQ(n * d), dK(n * d), dV(n * d), dP(n);
  for (size_t pl = 0; pl < planes; ++pl) {
    const float* Q = q_all + pl * n * d;
    const float* K = kv_all + pl * n * d;
    const float* V = kv_all + (planes + pl) * n * d;
    const float* dO = dout_all + pl * n * d;
    const PlaneRef r = reference_plane(Q, K, V, n, d, causal, sc);
    std::fill(dQ.begin(), dQ.end(), 0.0);
    std::fill(dK.begin(), dK.end(), 0.0);
    std::fill(dV.begin(), dV.end(), 0.0);
    for (size_t t = 0; t < n; ++t) {
      const size_t vis = causal ? t + 1 : n;
      const double* prow = r.P.data() + t * n;
      double D = 0;  // rowsum(dO ∘ O) from the exact O, not the bundle's
      for (size_t c = 0; c < d; ++c) D += double{dO[t * d + c]} * r.O[t * d + c];
      for (size_t u = 0; u < vis; ++u) {
        double dp = 0;
        for (size_t c = 0; c < d; ++c) dp += double{dO[t * d + c]} * double{V[u * d + c]};
        const double ds = prow[u] * (dp - D) * sc;
        for (size_t c = 0; c < d; ++c) {
          dQ[t * d + c] += ds * double{K[u * d + c]};
          dK[u * d + c] += ds * double{Q[t * d + c]};
          dV[u * d + c] += prow[u] * double{dO[t * d + c]};
        }
      }
    }
    for (size_t i = 0; i < n * d; ++i) {
      dq_all[pl * n * d + i] = static_cast<Out>(dQ[i]);
      dkv_all[pl * n * d + i] = static_cast<Out>(dK[i]);
      dkv_all[(planes + pl) * n * d + i] = static_cast<Out>(dV[i]);
    }
  }
}

// SplitMix64's finaliser: a full-avalanche mix, so neighbouring (tag, item, e) look unrelated.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

void attn_fwd_tile(const float* q, const float* kv, float* o_lse, const TileShape& s, bool causal, float scale, int64_t causal_offset) {
  fwd_tile(q, kv, o_lse, s, causal, scale, causal_offset);
}
void attn_fwd_tile(const uint16_t* q_bf16, const uint16_t* kv_bf16, float* o_lse, const TileShape& s, bool causal, float scale,
                   int64_t causal_offset) {
  fwd_tile(q_bf16, kv_bf16, o_lse, s, causal, scale, causal_offset);
}

void attn_merge(float* acc, const float* part, const TileShape& s) {
  const size_t rows = size_t{s.batch} * s.heads * s.rows_q, w = size_t{s.dim} + 1;
  for (size_t r = 0; r < rows; ++r) merge_row(acc + r * w, part + r * w, part[r * w + s.dim], s.dim);
}

void attn_bwd_bundle(const float* q, const float* dout, const float* o_lse, float* bundle, const TileShape& s) {
  const size_t rows = size_t{s.batch} * s.heads * s.rows_q, d = s.dim;
  for (size_t r = 0; r < rows; ++r) {
    float* b = bundle + r * (2 * d + 2);
    const float* o = o_lse + r * (d + 1);
    std::copy(q + r * d, q + r * d + d, b);
    std::copy(dout + r * d, dout + r * d + d, b + d);
    float D = 0;
    for (size_t c = 0; c < d; ++c) D += dout[r * d + c] * o[c];
    b[2 * d] = o[d];
    b[2 * d + 1] = D;
  }
}

void attn_bwd_tile(const float* bundle, const float* kv, float* dq, float* dkv, const TileShape& s, bool causal, float scale,
                   int64_t causal_offset) {
  bwd_tile(bundle, kv, dq, dkv, s, causal, scale, causal_offset);
}
void attn_bwd_tile(const float* bundle, const uint16_t* kv_bf16, float* dq, float* dkv, const TileShape& s, bool causal, float scale,
                   int64_t causal_offset) {
  bwd_tile(bundle, kv_bf16, dq, dkv, s, causal, scale, causal_offset);
}

void attention_reference_fwd(const float* q_all, const float* kv_all, float* out, uint32_t seq, const TileShape& s, bool causal,
                             float scale) {
  reference_fwd(q_all, kv_all, out, seq, s, causal, scale);
}
void attention_reference_fwd(const float* q_all, const float* kv_all, double* out, uint32_t seq, const TileShape& s, bool causal,
                             float scale) {
  reference_fwd(q_all, kv_all, out, seq, s, causal, scale);
}
void attention_reference_bwd(const float* q_all, const float* kv_all, const float* dout_all, float* dq_all, float* dkv_all, uint32_t seq,
                             const TileShape& s, bool causal, float scale) {
  reference_bwd(q_all, kv_all, dout_all, dq_all, dkv_all, seq, s, causal, scale);
}
void attention_reference_bwd(const float* q_all, const float* kv_all, const float* dout_all, double* dq_all, double* dkv_all, uint32_t seq,
                             const TileShape& s, bool causal, float scale) {
  reference_bwd(q_all, kv_all, dout_all, dq_all, dkv_all, seq, s, causal, scale);
}

void copy_row_block(const float* src, uint32_t src_rows, uint32_t src_row0, float* dst, uint32_t dst_rows, uint32_t dst_row0,
                    uint32_t nrows, size_t planes, uint32_t width) {
  for (size_t pl = 0; pl < planes; ++pl)
    std::copy(src + (pl * src_rows + src_row0) * width, src + (pl * src_rows + src_row0 + nrows) * width,
              dst + (pl * dst_rows + dst_row0) * width);
}

void fill_attention_input(float* out, size_t n, uint32_t buffer_tag, uint64_t item, bool bf16) {
  const uint64_t seed = mix64(mix64(uint64_t{buffer_tag}) ^ item);
  for (size_t e = 0; e < n; ++e) {
    // 24 random bits → a multiple of 2^-23 in [-1, 1), exact in float.
    const auto bits = static_cast<int32_t>(mix64(seed ^ mix64(e)) >> 40);
    const float v = static_cast<float>(bits - (1 << 23)) * 0x1p-23f;
    out[e] = bf16 ? bf16_to_float(float_to_bf16(v)) : v;
  }
}

double attn_fwd_flops(const TileShape& s, bool causal) {
  const double f = 4.0 * s.batch * s.heads * s.rows_q * static_cast<double>(s.rows_k) * s.dim;
  return causal ? f / 2 : f;
}
double attn_bwd_flops(const TileShape& s, bool causal) { return 2.5 * attn_fwd_flops(s, causal); }

}  // namespace sg::exec
