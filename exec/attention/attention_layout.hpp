// The layouts attention items are declared in: a buffer's `shape [...] layout LETTERS`
// (core/graph/layout.hpp) read in its role (q, kv, O, dQ, dKV, the backward's q bundle), and the
// pitched row blocks that move one item between that layout and the kernels' own
// (exec/attention/attention_kernels.hpp: [2][batch][heads][rows][width]). Plain C++ over a BufferInfo: no
// MPI, so tested on its own (tests/test_attention_layout.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "core/graph/step_graph.hpp"
#include "exec/attention/attention_kernels.hpp"

namespace sg::exec {

// What one item (chunk) of a buffer holds for a tile: K, V, dK, dV where the schedule keeps K and
// V apart (`attn(Q[i], K[j], V[j])`), each read like q.
enum class AttnRole { Q, Bundle, KV, O, DQ, DKV, K, V, DK, DV };
const char* attn_role_name(AttnRole r);

// One item's extents: batch × heads (of its head group) × rows × dim.
struct ItemDims {
  uint64_t batch = 1, heads = 1, rows = 0, dim = 0;
  bool operator==(const ItemDims&) const = default;
};

// How one item of a role lies in its chunk, in elements of the role's type: rows of `width`
// contiguous elements (d innermost), row (part, b, h, s) at part·s2 + b·sb + h·sh + s·ss (part:
// K or V). A stride is 0 along an axis of extent 1. Read off a buffer's `layout` letters
// (core/graph/layout.hpp); `kernel` when it is exactly the kernels' layout, so tiles read the
// chunk in place; else exec moves the item into the kernels' layout around each tile.
struct ItemLayout {
  bool kernel = true;
  uint64_t s2 = 0, sb = 0, sh = 0, ss = 0;
  uint32_t width = 0;
  bool lse = false;     // O: each row ends in its log-sum-exp (width dim + 1)
  std::string letters;  // as declared; "" when none was
  bool same_place(const ItemLayout& o) const { return s2 == o.s2 && sb == o.sb && sh == o.sh && ss == o.ss && width == o.width; }
};

// One pitched block of rows (bytes): `rows` rows of `width` bytes from src + i·spitch to
// dst + i·dpitch (a DeviceOps::copy_2d).
struct RowBlock {
  uint64_t src = 0, dst = 0, spitch = 0, dpitch = 0, width = 0, rows = 0;
};

// "[a, b, c]" and "batch 1 × 3 heads × 240 rows × dim 16", for messages.
std::string shape_list(const std::vector<uint64_t>& shape);
std::string dims_text(const ItemDims& d);
// How a chunk shape of role r is read: "layout bshd", or the kernels' order without one.
std::string role_layout_text(AttnRole r, const BufferInfo& b);

// The kernels' own layout of an item of dims d with rows of `width` elements (two: K and V).
ItemLayout kernel_layout(const ItemDims& d, bool two, uint32_t width);

// Reads one item's extents and layout off buffer b's declared chunk shape in role r. Without a
// `layout`, the kernels' order: the trailing extents are rows and the role's row width, leading
// batch and heads may be left out (1), kv starts with its 2. With one, its letters name the
// extents. O's rows with a layout are dim (exec keeps the lse) or dim + 1 (the lse last):
// known_dim (0: not known) tells which. Else false with an error at the buffer's layout (its
// shape where it declares none).
bool read_item_layout(const BufferInfo& b, AttnRole r, uint64_t known_dim, ItemDims& d, ItemLayout& L, Diagnostics& diags);

// The blocks that move one item of tile shape t between layout L (a chunk) and the kernels'
// layout of `parts` × batch × heads planes of rows × kernel_width elements of `elem` bytes:
// to_kernel from the chunk (src) into the kernels' (dst), else back. A row copies
// min(L.width, kernel_width) elements (an O without its lse: the output part).
std::vector<RowBlock> relayout_blocks(const TileShape& t, const ItemLayout& L, uint32_t parts, uint32_t elem, uint32_t kernel_width,
                                      bool to_kernel);
// The same blocks applied in host memory.
void relayout_host(const std::vector<RowBlock>& blocks, unsigned char* dst, const unsigned char* src);

}  // namespace sg::exec
