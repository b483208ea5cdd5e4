// Attention tiles under exec: what a `compute attn` / `compute attn_bwd` step computes for real,
// with which shapes, from which inputs, and how partial outputs are reduced.
//
// The layout comes from the schedule itself: its `expect attention(Q, KV, O, mask[, heads H])`
// (or attention_backward(Q, KV, dQ, dKV, …)) names the buffers, and their declarations give the
// sizes and the input type: `shape […]` in the kernels' layout (q [batch, heads, rows, dim],
// kv [2, batch, heads, rows, dim], O [batch, heads, rows, dim + 1]; batch and heads may be left
// out) or in any layout a `layout` names (exec/attention/attention_layout.hpp: bshd, sbh2d, O without its
// lse, …), and `dtype bf16|f32` of Q and KV. Where they say nothing (`bytes E`, no dtype), the
// parameters seq, heads, dim, batch and elem do (the library's convention: elem 4 fp32, 2 bf16).
// Q has C items, C = blocks · H; item x is sequence block x / H and head group x % H, so every
// item is one tile operand of
//   batch × heads/H × rows × dim,  rows = seq / blocks.
// q, k, v (and dO) are stored as fp32 or bf16; outputs (O|lse, dQ, dKV) are fp32.
// Chunk layouts are those of exec/attention/attention_kernels.hpp; the backward's Q item is the bundle
// q, dO, lse, D per row (with elem 2: q and dO as bf16, lse and D as fp32, 4·dim + 8 bytes).
//
// Inputs are deterministic per item (fill_attention_input with tag 1 for q, 2 for kv, 3 for dO,
// on the item's index within the expect's range), so a forward and a backward schedule of the
// same layout see the same q, k and v, and the one-rank reference (exec/attention/attention_check.cpp)
// rebuilds exactly what the ranks were given.
//
// Partial outputs O|lse are reduced with the online-softmax merge, not a sum: every buffer a
// forward tile writes, the expect's O, and whatever copies or reductions connect to them are
// "merge buffers". Their rows start empty (o = 0, lse = -inf) and a reduction into them (a
// reducing receive, a `reduce` statement, MPI's reduce / allreduce / reduce_scatter) merges rows
// of dim + 1 floats. Gradient partials are plain fp32 sums.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "core/graph/step_graph.hpp"
#include "exec/attention/attention_kernels.hpp"
#include "exec/attention/attention_layout.hpp"

namespace sg::exec {

struct AttentionLayout {
  bool active = false;    // the schedule has an attention expect or attention tiles
  bool backward = false;  // attention_backward: Q items are bundles, outputs dQ and dKV
  bool bf16 = false;      // q, kv, dO stored as bf16 (declared dtype bf16, or elem 2)
  bool causal = false;
  uint32_t seq = 0, heads = 0, dim = 0, batch = 0;
  uint32_t groups = 1;         // H: head groups per block
  uint32_t blocks = 0;         // sequence blocks: Q items / H
  TileShape tile{};            // one item: batch, heads / H, rows, rows, dim
  float scale = 0;             // 1 / sqrt(dim)
  Range q, kv, out0, out1;     // the expect's ranges: Q, KV, then O (forward) or dQ, dKV (backward)
  std::vector<uint8_t> merge;  // per buffer: holds O|lse rows (reductions merge)
  // Bytes of one item in each role.
  uint64_t q_bytes = 0, kv_bytes = 0, o_bytes = 0, dq_bytes = 0, dkv_bytes = 0;
  // Each role's layout in its chunks (one per role: data moves between buffers as bytes, so a
  // kv item has the same layout in KV and in every buffer it is copied or sent to).
  ItemLayout lq, lkv, lo, ldq, ldkv;
  // K and V apart (`expect attention(Q, K, V, O, …)`): kv is K's range, v V's (dkv dK's, dv dV's);
  // their items are assembled into one kv item (K then V) around each tile.
  bool split_kv = false;
  Range v{}, dv{};
  ItemLayout lk, lv, ldk, ldv;
  // O declared with rows of dim (no lse column): exec keeps each tile output's O|lse rows in
  // kernel layout beside the buffer ("shadowed") and writes the O part through after each tile.
  // Such outputs are never merged or moved (plan_attention refuses a step that would).
  std::vector<uint8_t> shadowed;  // per buffer
  uint64_t o_kernel_bytes = 0;    // one O|lse item in the kernels' layout
};

// Role r's blocks (0 q, 1 kv, 2 O, 3 dQ, 4 dKV; with K and V apart 5 k, 6 v, 7 dK, 8 dV, each
// between its chunk and its half of the kernels' kv item) with its parts, element size and
// kernel width.
std::vector<RowBlock> role_blocks(const AttentionLayout& a, int role, bool to_kernel);

// The attention's work in the count the FlashAttention and ring-attention benchmarks report, so
// that throughputs compare across schedules and with those tools: 4·batch·heads·seq²·dim for
// the forward (the two GEMMs), halved with the causal mask, and 2.5 times that for the backward
// (five GEMMs, the FlashAttention-2 convention). A schedule that recomputes or idles does not
// change it: it is the work of attention itself, not of the tiles the schedule runs.
double attention_model_flops(const AttentionLayout& a);

// Reads the layout off g (one rank's graph) and checks that every attention tile's operands
// and outputs have the item sizes, and the declared shapes and types, the layout gives. Not active (and true) when g has no
// attention at all. False, with an error at the statement, buffer or declaration to blame, when
// the schedule cannot be executed for real. Collective over `world` (the merge buffers are agreed
// on by all ranks, so that every member of a collective reduces with the same operator); every
// rank returns false when one does, adding nothing to diags where it found nothing wrong itself.
bool plan_attention(const StepGraph& g, MPI_Comm world, AttentionLayout& a, Diagnostics& diags);

// The initial contents of item `rel` (its index within the expect's Q or KV range) of Q
// (q_side) or KV, in the chunk's storage format. A backward Q item is the bundle, whose lse and
// D come from the forward over the item's row block (computed here, in fp32).
void fill_attention_item(const AttentionLayout& a, bool q_side, uint32_t rel, unsigned char* dst);
// With K and V apart: the K (or V) half of kv item rel, laid out as K (V) declares.
void fill_attention_half(const AttentionLayout& a, bool v_half, uint32_t rel, unsigned char* dst);

// Sets `bytes` of O|lse rows to empty: o = 0, lse = -inf.
void clear_merge_rows(const AttentionLayout& a, unsigned char* p, uint64_t bytes);

// acc ← acc ⊕ part over `bytes` of O|lse rows.
void merge_rows(const AttentionLayout& a, unsigned char* acc, const unsigned char* part, uint64_t bytes);

// One tile: forward (out0 = O|lse) or backward (out0 = dQ, out1 = dKV), causal on the diagonal.
void run_attention_tile(const AttentionLayout& a, bool backward, bool causal, const unsigned char* q, const unsigned char* kv,
                        unsigned char* out0, unsigned char* out1);

// MPI's view of O|lse rows: a contiguous type of dim + 1 floats and the (commutative) merge
// operator on it, which reads the row width off the type.
MPI_Datatype attention_row_type(uint32_t dim);
MPI_Op attention_merge_op();

// What --check measures: each output element against full attention computed on one rank
// (rank 0, in double precision) from the same inputs. An element is wrong when
// |got − ref| > tolerance · (1 + |ref|): 1e-4 with fp32 inputs, 2.5e-2 (TransformerEngine's
// bf16 tolerance) with bf16 inputs.
struct AttentionCheck {
  uint64_t checked = 0, wrong = 0;
  double err_o = 0, err_dq = 0, err_dkv = 0;  // max |got − ref| over O|lse (forward) or dQ, dKV
  double tolerance = 0;
  bool backward = false, bf16 = false;
  std::string first;  // the first wrong element, described
  double max_abs_err() const { return err_o > err_dq ? (err_o > err_dkv ? err_o : err_dkv) : (err_dq > err_dkv ? err_dq : err_dkv); }
};

// One output chunk this rank holds for the postcondition: role 0 = O (forward) or dQ, role 1 =
// dKV; rel = the item's index within Q (roles 0) or KV (role 1).
struct AttentionOutput {
  uint32_t role = 0, rel = 0;
  const unsigned char* data = nullptr;
};

// Collective over world: gathers every rank's outputs on rank 0, which computes the reference
// and compares. The result is complete on rank 0 (other ranks get their own counts only).
AttentionCheck check_attention(const AttentionLayout& a, const std::vector<AttentionOutput>& mine, MPI_Comm world);

}  // namespace sg::exec
