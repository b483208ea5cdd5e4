// Attention under exec, the data side: each role's blocks between its chunks and the kernels'
// layout, the inputs' initial items, the O|lse rows cleared and merged, one tile run on the host,
// and MPI's row type and merge operator. Apart from the plan that lays them out
// (exec/attention/attention_plan.cpp, exec/attention/attention_plan_local.cpp).
#include "exec/attention/attention_exec.hpp"

#include <cstring>
#include <limits>
#include <map>
#include <vector>

#include "exec/half.hpp"
#include "exec/mpi/mpi_types.hpp"

namespace sg::exec {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
enum : uint32_t { kTagQ = 1, kTagKV = 2, kTagDO = 3 };

// Item rel's block and head group.
uint32_t block_of(const AttentionLayout& a, uint32_t rel) { return rel / a.groups; }
uint32_t group_of(const AttentionLayout& a, uint32_t rel) { return rel % a.groups; }

void store_bf16(uint16_t* dst, const float* src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
}

}  // namespace

std::vector<RowBlock> role_blocks(const AttentionLayout& a, int role, bool to_kernel) {
  uint32_t in = a.bf16 ? 2 : 4;
  switch (role) {
    case 0: return relayout_blocks(a.tile, a.lq, 1, in, a.dim, to_kernel);
    case 1: return relayout_blocks(a.tile, a.lkv, 2, in, a.dim, to_kernel);
    case 2: return relayout_blocks(a.tile, a.lo, 1, 4, a.dim + 1, to_kernel);
    case 3: return relayout_blocks(a.tile, a.ldq, 1, 4, a.dim, to_kernel);
    case 4: return relayout_blocks(a.tile, a.ldkv, 2, 4, a.dim, to_kernel);
    case 5: return relayout_blocks(a.tile, a.lk, 1, in, a.dim, to_kernel);
    case 6: return relayout_blocks(a.tile, a.lv, 1, in, a.dim, to_kernel);
    case 7: return relayout_blocks(a.tile, a.ldk, 1, 4, a.dim, to_kernel);
    default: return relayout_blocks(a.tile, a.ldv, 1, 4, a.dim, to_kernel);
  }
}

namespace {
void fill_kernel_item(const AttentionLayout& a, bool q_side, uint32_t rel, unsigned char* dst);
}  // namespace

void fill_attention_half(const AttentionLayout& a, bool v_half, uint32_t rel, unsigned char* dst) {
  std::vector<unsigned char> kv(a.kv_bytes);
  fill_kernel_item(a, false, rel, kv.data());
  relayout_host(role_blocks(a, v_half ? 6 : 5, false), dst, kv.data() + (v_half ? a.kv_bytes / 2 : 0));
}

void fill_attention_item(const AttentionLayout& a, bool q_side, uint32_t rel, unsigned char* dst) {
  if ((q_side ? a.lq : a.lkv).kernel) return fill_kernel_item(a, q_side, rel, dst);
  // Filled in the kernels' layout, then laid out as declared.
  std::vector<unsigned char> k(q_side ? a.q_bytes : a.kv_bytes);
  fill_kernel_item(a, q_side, rel, k.data());
  relayout_host(role_blocks(a, q_side ? 0 : 1, false), dst, k.data());
}

namespace {

// Item rel of Q (q_side) or KV in the kernels' layout, in the chunk's storage format.
void fill_kernel_item(const AttentionLayout& a, bool q_side, uint32_t rel, unsigned char* dst) {
  const TileShape& t = a.tile;
  if (!q_side) {
    size_t n = attn_kv_elems(t);
    std::vector<float> kv(n);
    fill_attention_input(kv.data(), n, kTagKV, rel, a.bf16);
    if (a.bf16) store_bf16(reinterpret_cast<uint16_t*>(dst), kv.data(), n);
    else std::memcpy(dst, kv.data(), n * 4);
    return;
  }
  size_t nq = attn_q_elems(t);
  std::vector<float> q(nq);
  fill_attention_input(q.data(), nq, kTagQ, rel, a.bf16);
  if (!a.backward) {
    if (a.bf16) store_bf16(reinterpret_cast<uint16_t*>(dst), q.data(), nq);
    else std::memcpy(dst, q.data(), nq * 4);
    return;
  }
  // The bundle: dO, and the forward's final O|lse of these rows over every kv block it sees.
  std::vector<float> dout(nq), o(attn_o_elems(t)), kv(attn_kv_elems(t)), bundle(attn_bundle_elems(t));
  fill_attention_input(dout.data(), nq, kTagDO, rel, a.bf16);
  clear_merge_rows(a, reinterpret_cast<unsigned char*>(o.data()), o.size() * 4);
  uint32_t b = block_of(a, rel), h = group_of(a, rel);
  for (uint32_t kb = 0; kb < a.blocks; ++kb) {
    if (a.causal && kb > b) break;
    fill_attention_input(kv.data(), kv.size(), kTagKV, kb * a.groups + h, a.bf16);
    attn_fwd_tile(q.data(), kv.data(), o.data(), t, a.causal && kb == b, a.scale);
  }
  attn_bwd_bundle(q.data(), dout.data(), o.data(), bundle.data(), t);
  if (!a.bf16) {
    std::memcpy(dst, bundle.data(), bundle.size() * 4);
    return;
  }
  // Per row: q and dO as bf16, then lse and D as fp32 (4·dim + 8 bytes).
  size_t rows = size_t{t.batch} * t.heads * t.rows_q, w = 2 * size_t{t.dim} + 2;
  for (size_t r = 0; r < rows; ++r) {
    unsigned char* row = dst + r * (4 * size_t{t.dim} + 8);
    store_bf16(reinterpret_cast<uint16_t*>(row), &bundle[r * w], 2 * size_t{t.dim});
    std::memcpy(row + 4 * size_t{t.dim}, &bundle[r * w + 2 * t.dim], 8);
  }
}

}  // namespace

double attention_model_flops(const AttentionLayout& a) {
  double f = 4.0 * a.batch * a.heads * static_cast<double>(a.seq) * a.seq * a.dim;
  if (a.causal) f /= 2;
  return a.backward ? 2.5 * f : f;
}

void clear_merge_rows(const AttentionLayout& a, unsigned char* p, uint64_t bytes) {
  size_t w = a.dim + size_t{1}, rows = bytes / (w * 4);
  auto* f = reinterpret_cast<float*>(p);
  for (size_t r = 0; r < rows; ++r) {
    std::memset(f + r * w, 0, a.dim * sizeof(float));
    f[r * w + a.dim] = kNegInf;
  }
}

void merge_rows(const AttentionLayout& a, unsigned char* acc, const unsigned char* part, uint64_t bytes) {
  auto rows = static_cast<uint32_t>(bytes / ((a.dim + uint64_t{1}) * 4));
  attn_merge(reinterpret_cast<float*>(acc), reinterpret_cast<const float*>(part), TileShape{1, 1, rows, 0, a.dim});
}

void run_attention_tile(const AttentionLayout& a, bool backward, bool causal, const unsigned char* q, const unsigned char* kv,
                        unsigned char* out0, unsigned char* out1) {
  const TileShape& t = a.tile;
  if (!backward) {
    auto* o = reinterpret_cast<float*>(out0);
    if (a.bf16) attn_fwd_tile(reinterpret_cast<const uint16_t*>(q), reinterpret_cast<const uint16_t*>(kv), o, t, causal, a.scale);
    else attn_fwd_tile(reinterpret_cast<const float*>(q), reinterpret_cast<const float*>(kv), o, t, causal, a.scale);
    return;
  }
  auto* dq = reinterpret_cast<float*>(out0);
  auto* dkv = reinterpret_cast<float*>(out1);
  if (!a.bf16) {
    attn_bwd_tile(reinterpret_cast<const float*>(q), reinterpret_cast<const float*>(kv), dq, dkv, t, causal, a.scale);
    return;
  }
  // The bf16 bundle widened to the kernel's fp32 bundle (O(rows·dim), next to the tile's rows²·dim).
  thread_local std::vector<float> bundle;
  size_t rows = size_t{t.batch} * t.heads * t.rows_q, w = 2 * size_t{t.dim} + 2;
  bundle.resize(rows * w);
  for (size_t r = 0; r < rows; ++r) {
    const unsigned char* row = q + r * (4 * size_t{t.dim} + 8);
    uint16_t h[1];
    for (size_t i = 0; i < 2 * size_t{t.dim}; ++i) {
      std::memcpy(h, row + 2 * i, 2);
      bundle[r * w + i] = bf16_to_float(h[0]);
    }
    std::memcpy(&bundle[r * w + 2 * t.dim], row + 4 * size_t{t.dim}, 8);
  }
  attn_bwd_tile(bundle.data(), reinterpret_cast<const uint16_t*>(kv), dq, dkv, t, causal, a.scale);
}

namespace {

void merge_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  int size = 0;
  MPI_Type_size(*type, &size);
  auto width = static_cast<uint32_t>(size / 4);  // dim + 1 floats per row
  if (width < 1 || *len <= 0) return;
  attn_merge(static_cast<float*>(inout), static_cast<const float*>(in), TileShape{1, 1, static_cast<uint32_t>(*len), 0, width - 1});
}

}  // namespace

MPI_Datatype attention_row_type(uint32_t dim) {
  static std::map<uint32_t, MPI_Datatype> types;
  auto it = types.find(dim);
  if (it != types.end()) return it->second;
  MPI_Datatype t;
  MPI_Type_contiguous(static_cast<int>(dim) + 1, MPI_FLOAT, &t);
  MPI_Type_commit(&t);
  types[dim] = made_type(t);
  return t;
}

MPI_Op attention_merge_op() {
  static MPI_Op op = [] {
    MPI_Op o;
    MPI_Op_create(&merge_op, 1, &o);  // the merge is exactly commutative
    return made_op(o);
  }();
  return op;
}

}  // namespace sg::exec
