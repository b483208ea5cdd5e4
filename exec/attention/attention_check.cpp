// --check for attention schedules: every rank's outputs against full attention on one rank.
// Rank 0 gathers the output items, rebuilds the whole sequence's inputs from the same per-item
// fills the ranks started from, runs the double-precision reference (exec/attention/attention_kernels)
// and compares element by element.
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>

#include "exec/attention/attention_exec.hpp"

namespace sg::exec {

namespace {

// Copies item rel's planes (batch × heads/H planes of rows × width, `parts` times: K then V)
// into or out of the whole-sequence layout (parts × batch × heads planes of seq × width).
template <class T>
void place(const AttentionLayout& a, uint32_t rel, uint32_t width, uint32_t parts, T* item, T* whole, bool into_whole) {
  const TileShape& t = a.tile;
  uint32_t block = rel / a.groups, group = rel % a.groups;
  size_t item_plane = size_t{t.rows_q} * width, whole_plane = size_t{a.seq} * width;
  for (uint32_t part = 0; part < parts; ++part)
    for (uint32_t b = 0; b < t.batch; ++b)
      for (uint32_t h = 0; h < t.heads; ++h) {
        size_t ip = (size_t{part} * t.batch + b) * t.heads + h;
        size_t wp = (size_t{part} * t.batch + b) * a.heads + size_t{group} * t.heads + h;
        for (uint32_t r = 0; r < t.rows_q; ++r) {
          const size_t io = ip * item_plane + size_t{r} * width;
          const size_t wo = wp * whole_plane + (size_t{block} * t.rows_q + r) * width;
          if (into_whole) std::memcpy(whole + wo, item + io, width * sizeof(T));
          else std::memcpy(item + io, whole + wo, width * sizeof(T));
        }
      }
}

struct Compare {
  double tol = 0;
  AttentionCheck* c = nullptr;
  double* err = nullptr;
  // got: the item as the rank holds it (rows × stride floats, the first `width` compared);
  // ref: the reference's rows for the same item, laid out the same way.
  void run(const float* got, const double* ref, size_t rows, size_t stride, size_t width, const std::string& what) {
    for (size_t r = 0; r < rows; ++r)
      for (size_t i = 0; i < width; ++i) {
        double x = got[r * stride + i], y = ref[r * stride + i];
        double e = std::fabs(x - y);
        if (std::isnan(e)) e = std::numeric_limits<double>::infinity();
        *err = std::max(*err, e);
        ++c->checked;
        if (e > tol * (1 + std::fabs(y))) {
          if (c->wrong == 0)
            c->first = what + " row " + std::to_string(r) + " element " + std::to_string(i) + ": expected " + std::to_string(y) + ", got " +
                       std::to_string(x);
          ++c->wrong;
        }
      }
  }
};

void compare_on_root(const AttentionLayout& a, const std::vector<unsigned char>& all, const std::vector<long long>& lens,
                     const std::vector<int>& displs, AttentionCheck& c);

// Bytes of one output item in role 0 (O|lse, or dQ) or 1 (dKV), in the kernels' layout (the
// executor relays the items declared otherwise).
uint64_t output_bytes(const AttentionLayout& a, uint32_t role) {
  return a.backward ? (role == 0 ? a.dq_bytes : a.dkv_bytes) : a.o_kernel_bytes;
}

}  // namespace

AttentionCheck check_attention(const AttentionLayout& a, const std::vector<AttentionOutput>& mine, MPI_Comm world) {
  AttentionCheck c;
  c.tolerance = a.bf16 ? 2.5e-2 : 1e-4;
  c.backward = a.backward;
  c.bf16 = a.bf16;
  // Records: role, rel, then the item's bytes.
  std::vector<unsigned char> out;
  for (const AttentionOutput& o : mine) {
    uint32_t head[2] = {o.role, o.rel};
    out.insert(out.end(), reinterpret_cast<unsigned char*>(head), reinterpret_cast<unsigned char*>(head) + 8);
    out.insert(out.end(), o.data, o.data + output_bytes(a, o.role));
  }
  int me = 0, n = 1;
  MPI_Comm_rank(world, &me);
  MPI_Comm_size(world, &n);
  long long mine_len = static_cast<long long>(out.size());
  std::vector<long long> lens(static_cast<size_t>(n));
  MPI_Gather(&mine_len, 1, MPI_LONG_LONG, lens.data(), 1, MPI_LONG_LONG, 0, world);
  std::vector<int> counts(static_cast<size_t>(n)), displs(static_cast<size_t>(n));
  long long total = 0;
  for (int k = 0; k < n && me == 0; ++k) {
    displs[static_cast<size_t>(k)] = static_cast<int>(total);
    counts[static_cast<size_t>(k)] = static_cast<int>(lens[static_cast<size_t>(k)]);
    total += lens[static_cast<size_t>(k)];
  }
  int too_big = total > INT_MAX ? 1 : 0;
  MPI_Bcast(&too_big, 1, MPI_INT, 0, world);
  if (too_big) {
    c.first = "the outputs are too large to gather on one rank for the check (over 2 GiB): choose a smaller seq";
    c.wrong = 1;
    return c;
  }
  std::vector<unsigned char> all(static_cast<size_t>(total));
  MPI_Gatherv(out.data(), static_cast<int>(out.size()), MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, 0, world);
  if (me == 0) compare_on_root(a, all, lens, displs, c);
  // The others wait for rank 0's reference (N times one rank's tiles, in double precision):
  // without this, their next runs would wait on rank 0 longer than --timeout and call it a stall.
  MPI_Barrier(world);
  return c;
}

namespace {

void compare_on_root(const AttentionLayout& a, const std::vector<unsigned char>& all, const std::vector<long long>& lens,
                     const std::vector<int>& displs, AttentionCheck& c) {
  const TileShape& t = a.tile;
  const int n = static_cast<int>(lens.size());

  // The whole sequence's inputs, from the items the ranks were given.
  size_t plane = size_t{a.seq} * a.dim, planes = size_t{a.batch} * a.heads;
  std::vector<float> q_all(planes * plane), kv_all(2 * planes * plane), item(attn_kv_elems(t));
  for (uint32_t rel = 0; rel < a.q.cnt; ++rel) {
    fill_attention_input(item.data(), attn_q_elems(t), 1, rel, a.bf16);
    place(a, rel, a.dim, 1, item.data(), q_all.data(), true);
    fill_attention_input(item.data(), attn_kv_elems(t), 2, rel, a.bf16);
    place(a, rel, a.dim, 2, item.data(), kv_all.data(), true);
  }
  TileShape whole{a.batch, a.heads, a.seq, a.seq, a.dim};
  std::vector<double> o_ref, dq_ref, dkv_ref;
  if (!a.backward) {
    o_ref.resize(planes * a.seq * (a.dim + size_t{1}));
    attention_reference_fwd(q_all.data(), kv_all.data(), o_ref.data(), a.seq, whole, a.causal, a.scale);
  } else {
    std::vector<float> do_all(planes * plane);
    for (uint32_t rel = 0; rel < a.q.cnt; ++rel) {
      fill_attention_input(item.data(), attn_q_elems(t), 3, rel, a.bf16);
      place(a, rel, a.dim, 1, item.data(), do_all.data(), true);
    }
    dq_ref.resize(planes * plane);
    dkv_ref.resize(2 * planes * plane);
    attention_reference_bwd(q_all.data(), kv_all.data(), do_all.data(), dq_ref.data(), dkv_ref.data(), a.seq, whole, a.causal, a.scale);
  }

  // Each gathered item against the reference rows of the same item; every item must come from
  // some rank (an output no rank holds is wrong in all its elements, not silently unchecked).
  std::vector<uint8_t> seen_q(a.q.cnt, 0), seen_kv(a.kv.cnt, 0);
  std::vector<double> want;
  size_t at = 0;
  int rank = 0;
  while (at + 8 <= all.size()) {
    while (rank + 1 < n && static_cast<long long>(at) >= displs[static_cast<size_t>(rank)] + lens[static_cast<size_t>(rank)]) ++rank;
    uint32_t head[2];
    std::memcpy(head, all.data() + at, 8);
    at += 8;
    uint32_t role = head[0], rel = head[1];
    uint64_t bytes = output_bytes(a, role);
    if (role > 1 || rel >= (role == 0 ? seen_q : seen_kv).size()) break;  // cannot happen: our own records
    (role == 0 ? seen_q : seen_kv)[rel] = 1;
    std::vector<float> got(bytes / 4);
    std::memcpy(got.data(), all.data() + at, bytes);
    at += bytes;
    Compare cmp{c.tolerance, &c, nullptr};
    std::string what = "rank " + std::to_string(rank) + " ";
    size_t rows = size_t{t.batch} * t.heads * t.rows_q;
    std::string item_name = "(block " + std::to_string(rel / a.groups) +
                            (a.groups > 1 ? ", head group " + std::to_string(rel % a.groups) : std::string()) + ")";
    if (!a.backward) {
      want.assign(got.size(), 0);
      place(a, rel, a.dim + 1, 1, want.data(), o_ref.data(), false);
      cmp.err = &c.err_o;
      cmp.run(got.data(), want.data(), rows, a.dim + size_t{1}, a.dim + size_t{1}, what + "O|lse " + item_name);
    } else if (role == 0) {
      want.assign(got.size(), 0);
      place(a, rel, a.dim, 1, want.data(), dq_ref.data(), false);
      cmp.err = &c.err_dq;
      cmp.run(got.data(), want.data(), rows, a.dim, a.dim, what + "dQ " + item_name);
    } else {
      want.assign(got.size(), 0);
      place(a, rel, a.dim, 2, want.data(), dkv_ref.data(), false);
      cmp.err = &c.err_dkv;
      cmp.run(got.data(), want.data(), 2 * rows, a.dim, a.dim, what + "dKV " + item_name);
    }
  }
  auto missing = [&](const std::vector<uint8_t>& seen, const char* what, uint64_t elems) {
    for (uint32_t rel = 0; rel < seen.size(); ++rel) {
      if (seen[rel]) continue;
      if (c.wrong == 0)
        c.first = std::string(what) + " of block " + std::to_string(rel / a.groups) +
                  (a.groups > 1 ? ", head group " + std::to_string(rel % a.groups) : std::string()) +
                  ": no rank started with its input item, so no rank holds it";
      c.wrong += elems;
      c.checked += elems;
      c.err_o = c.err_dq = c.err_dkv = std::numeric_limits<double>::infinity();
    }
  };
  missing(seen_q, a.backward ? "dQ" : "O", output_bytes(a, 0) / 4);
  if (a.backward) missing(seen_kv, "dKV", output_bytes(a, 1) / 4);
}

}  // namespace

}  // namespace sg::exec
