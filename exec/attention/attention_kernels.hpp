// CPU numerics of the attention tiles that `compute attn` / `compute attn_bwd` steps run, and the
// oracle the executor checks them against. Layouts (row-major, fp32 arithmetic):
//   q block   [batch][heads][rows_q][dim]
//   kv block  K then V, each [batch][heads][rows_k][dim]
//   O|lse     [batch][heads][rows_q][dim + 1]: a row's normalised output, then its log-sum-exp.
//             The empty accumulator (a chunk no tile has written yet) is o = 0, lse = -inf.
//   bundle    [batch][heads][rows_q][2·dim + 2]: per query row q (dim), dO (dim), lse, D, where lse
//             is the row's final forward log-sum-exp and D = rowsum(dO ∘ O) (FlashAttention-2).
//   dQ        [batch][heads][rows_q][dim];  dKV: dK then dV, each [batch][heads][rows_k][dim].
// Inputs come as float or as bf16 stored in uint16_t (exec/half.hpp); outputs are always float.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sg::exec {

struct TileShape {
  uint32_t batch, heads, rows_q, rows_k, dim;
};

// Element counts of the blocks above.
inline size_t attn_q_elems(const TileShape& s) { return size_t{s.batch} * s.heads * s.rows_q * s.dim; }
inline size_t attn_kv_elems(const TileShape& s) { return 2 * size_t{s.batch} * s.heads * s.rows_k * s.dim; }
inline size_t attn_o_elems(const TileShape& s) { return size_t{s.batch} * s.heads * s.rows_q * (s.dim + size_t{1}); }
inline size_t attn_bundle_elems(const TileShape& s) { return size_t{s.batch} * s.heads * s.rows_q * (2 * size_t{s.dim} + 2); }

// Masks. `causal` makes key u visible to query t iff u <= t + causal_offset; offset 0 is the
// diagonal tile of a causal ring. Other offsets express a shifted diagonal (e.g. rows_q != rows_k,
// or the general masks in which some query rows see no key at all); full tiles ignore it.

// Merges the tile's partial attention softmax(scale·q·kᵀ)·v into o_lse with the online-softmax
// rule lse' = logaddexp(lse, lse_t), o' = o·exp(lse − lse') + o_t·exp(lse_t − lse'). A query row
// that sees no key leaves its accumulator untouched, so empty stays o = 0, lse = -inf.
void attn_fwd_tile(const float* q, const float* kv, float* o_lse, const TileShape& s, bool causal, float scale, int64_t causal_offset = 0);
void attn_fwd_tile(const uint16_t* q_bf16, const uint16_t* kv_bf16, float* o_lse, const TileShape& s, bool causal, float scale,
                   int64_t causal_offset = 0);

// acc ← acc ⊕ part for two O|lse blocks of shape s (rows_q rows; rows_k unused): the reduction of
// partial outputs between ranks. Exactly commutative; associative up to rounding; empty ⊕ x = x
// and x ⊕ empty = x bit for bit.
void attn_merge(float* acc, const float* part, const TileShape& s);

// Packs the backward query-side bundle from q, dO and the final forward O|lse of the same rows.
void attn_bwd_bundle(const float* q, const float* dout, const float* o_lse, float* bundle, const TileShape& s);

// FlashAttention-2 backward of one tile, accumulating (+=) into dq and dkv:
// P = exp(S − lse), dV += Pᵀ·dO, dP = dO·Vᵀ, dS = P ∘ (dP − D), dQ += scale·dS·K, dK += scale·dSᵀ·Q.
void attn_bwd_tile(const float* bundle, const float* kv, float* dq, float* dkv, const TileShape& s, bool causal, float scale,
                   int64_t causal_offset = 0);
void attn_bwd_tile(const float* bundle, const uint16_t* kv_bf16, float* dq, float* dkv, const TileShape& s, bool causal, float scale,
                   int64_t causal_offset = 0);

// The oracle: plain (two-pass, max-subtracted) attention in double precision over a whole
// sequence of `seq` rows on one rank, blocks concatenated along rows: q_all [batch][heads][seq][dim],
// kv_all K then V each [batch][heads][seq][dim], out O|lse [batch][heads][seq][dim + 1]. Only
// batch, heads and dim of s are read; causal means key u visible to query t iff u <= t.
void attention_reference_fwd(const float* q_all, const float* kv_all, float* out, uint32_t seq, const TileShape& s, bool causal,
                             float scale);
void attention_reference_fwd(const float* q_all, const float* kv_all, double* out, uint32_t seq, const TileShape& s, bool causal,
                             float scale);
// Gradients of attention for upstream gradient dout_all (layout of q_all), overwriting dq_all
// (layout of q_all) and dkv_all (layout of kv_all).
void attention_reference_bwd(const float* q_all, const float* kv_all, const float* dout_all, float* dq_all, float* dkv_all, uint32_t seq,
                             const TileShape& s, bool causal, float scale);
void attention_reference_bwd(const float* q_all, const float* kv_all, const float* dout_all, double* dq_all, double* dkv_all, uint32_t seq,
                             const TileShape& s, bool causal, float scale);

// Copies rows [src_row0, src_row0 + nrows) of each of `planes` planes of src_rows × width floats
// to rows from dst_row0 of planes of dst_rows × width: moves a block in or out of the whole-
// sequence layout (planes = batch·heads, or 2·batch·heads for kv; width dim or dim + 1).
void copy_row_block(const float* src, uint32_t src_rows, uint32_t src_row0, float* dst, uint32_t dst_rows, uint32_t dst_row0,
                    uint32_t nrows, size_t planes, uint32_t width);

// Deterministic inputs in [-1, 1]: element e is a hash of (buffer_tag, item, e), so every rank
// holding item m of a buffer produces the same data. With bf16 the values are rounded to bf16
// precision (so converting them to bf16 storage is exact).
void fill_attention_input(float* out, size_t n, uint32_t buffer_tag, uint64_t item, bool bf16);

// Nominal flops (what the tile does as matrix products): 4·batch·heads·rows_q·rows_k·dim forward,
// half of it for a causal tile; the backward does 2.5× the forward (five products, not two).
double attn_fwd_flops(const TileShape& s, bool causal);
double attn_bwd_flops(const TileShape& s, bool causal);

}  // namespace sg::exec
