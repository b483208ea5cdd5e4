// Reading attention items' layouts off buffer declarations, and moving items between a declared
// layout and the kernels' (exec/attention/attention_layout.hpp).
#include "exec/attention/attention_layout.hpp"

#include <algorithm>
#include <cstring>

namespace sg::exec {

const char* attn_role_name(AttnRole r) {
  switch (r) {
    case AttnRole::Q: return "q";
    case AttnRole::Bundle: return "the q bundle (q, dO, lse, D)";
    case AttnRole::KV: return "kv";
    case AttnRole::O: return "O|lse";
    case AttnRole::DQ: return "dq";
    case AttnRole::DKV: return "dkv";
    case AttnRole::K: return "k";
    case AttnRole::V: return "v";
    case AttnRole::DK: return "dk";
    case AttnRole::DV: return "dv";
  }
  return "";
}

std::string shape_list(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string dims_text(const ItemDims& d) {
  return "batch " + std::to_string(d.batch) + " × " + std::to_string(d.heads) + " head" + (d.heads == 1 ? "" : "s") + " × " +
         std::to_string(d.rows) + " rows × dim " + std::to_string(d.dim);
}

// The layout a chunk shape of role r is read in without a `layout` (its last extent in the
// buffer's own dtype).
std::string role_layout_text(AttnRole r, const BufferInfo& b) {
  if (!b.layout.empty()) return "layout " + b.layout;
  switch (r) {
    case AttnRole::Q:
    case AttnRole::DQ:
    case AttnRole::K:
    case AttnRole::V:
    case AttnRole::DK:
    case AttnRole::DV: return "[batch, heads, rows, dim]";
    case AttnRole::KV:
    case AttnRole::DKV: return "[2, batch, heads, rows, dim] (K then V)";
    case AttnRole::O: return "[batch, heads, rows, dim + 1] (a row's output, then its log-sum-exp)";
    case AttnRole::Bundle:
      return b.dtype == DType::BF16 ? "[batch, heads, rows, 2·dim + 4] (per row q and dO in bf16, lse and D in f32)"
                                    : "[batch, heads, rows, 2·dim + 2] (per row q, dO, lse, D)";
  }
  return "";
}

// The kernels' own layout of an item of dims d with rows of `width` elements (parts 2 for kv).
ItemLayout kernel_layout(const ItemDims& d, bool two, uint32_t width) {
  ItemLayout L;
  L.width = width;
  L.ss = d.rows > 1 ? width : 0;
  L.sh = d.heads > 1 ? d.rows * width : 0;
  L.sb = d.batch > 1 ? d.heads * d.rows * width : 0;
  L.s2 = two ? d.batch * d.heads * d.rows * width : 0;
  return L;
}

// Reads one item's extents and layout off buffer b's declared chunk shape in role r. Without a
// `layout`, the kernels' order: the trailing extents are rows and the role's row width, leading
// batch and heads may be left out (1), kv starts with its 2. With one, its letters name the
// extents (core/graph/layout.hpp). O's rows with a layout are dim (exec keeps the lse) or
// dim + 1 (the lse last): known_dim (0: not known) tells which. Else false with a message (the
// caller points at the shape or layout).
bool read_item_layout(const BufferInfo& b, AttnRole r, uint64_t known_dim, ItemDims& d, ItemLayout& L, Diagnostics& diags) {
  const std::vector<uint64_t>& s = b.shape;
  const bool two = r == AttnRole::KV || r == AttnRole::DKV;
  auto bad = [&](const std::string& why) {
    diags.error(
        b.layout.empty() ? b.shape_loc : b.layout_loc,
        "buffer " + b.name + " holds " + attn_role_name(r) + " items, but its chunk shape " + shape_list(b.shape) +
            (b.layout.empty() ? std::string() : " layout " + b.layout) + " " + why +
            (b.layout.empty() ? "; exec reads it as " + role_layout_text(r, b) + ", batch and heads may be left out" : std::string()));
    return false;
  };
  for (uint64_t x : s)
    if (x < 1 || x > (uint64_t{1} << 30)) return bad("has an extent out of range");
  std::string letters = b.layout;
  if (letters.empty()) {
    size_t n = s.size();
    if (two) {
      if (s.empty() || s[0] != 2) return bad("does not start with 2");
      --n;
    }
    if (n < 2 || n > 4) return bad("has " + std::to_string(b.shape.size()) + " extents");
    letters = std::string(two ? "2" : "") + std::string("bhsd").substr(4 - n);
  } else {
    if (r == AttnRole::Bundle) {
      diags.error(
          b.layout.empty() ? b.shape_loc : b.layout_loc,
          "buffer " + b.name +
              " holds the backward's q bundle (q, dO, lse, D per row), exec's own row format [batch, heads, rows, 2·dim + 2]; it takes "
              "no layout");
      return false;
    }
    bool has2 = letters.find('2') != std::string::npos;
    if (two && !has2) return bad("has no 2 (K then V)");
    if (!two && has2) return bad("has a 2, which only kv and dkv items have");
  }
  // One extent a letter ("2d" fused into one of 2·dim where the shape is one short).
  std::vector<uint64_t> ext;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.size() + 1 == letters.size() && i + 1 == s.size()) {
      if (s[i] % 2) return bad("has a last extent of " + std::to_string(s[i]) + ", not 2·dim");
      ext.push_back(2), ext.push_back(s[i] / 2);
    } else {
      ext.push_back(s[i]);
    }
  }
  if (ext.size() != letters.size()) return bad("does not have one extent a letter");
  auto extent = [&](char c) {
    size_t at = letters.find(c);
    return at == std::string::npos ? uint64_t{1} : ext[at];
  };
  if (two && extent('2') != 2) return bad("has a 2-axis of " + std::to_string(extent('2')));
  d = ItemDims{extent('b'), extent('h'), extent('s'), 0};
  uint64_t w = extent('d');
  L = ItemLayout{};
  L.letters = b.layout;
  if (r == AttnRole::O) {
    if (b.layout.empty() || (known_dim && w == known_dim + 1)) {
      if (w < 2) return bad("has rows of " + std::to_string(w) + " element, not dim + 1");
      d.dim = w - 1, L.lse = true;
    } else if (!known_dim) {
      diags.error(b.layout.empty() ? b.shape_loc : b.layout_loc, "buffer " + b.name + " holds O items in layout " + b.layout +
                                                                     ", whose rows may be dim or dim + 1 (with the lse); nothing " +
                                                                     "else says dim: declare q's shape too, or the parameter dim");
      return false;
    } else if (w == known_dim) {
      d.dim = w;
    } else {
      return bad("has rows of " + std::to_string(w) + ", neither dim = " + std::to_string(known_dim) + " nor dim + 1 (with the lse)");
    }
  } else if (r == AttnRole::Bundle) {
    uint64_t extra = b.dtype == DType::BF16 ? 4 : 2;
    if (w <= extra || (w - extra) % 2) return bad("has rows of " + std::to_string(w) + " elements, not 2·dim + " + std::to_string(extra));
    d.dim = (w - extra) / 2;
  } else {
    d.dim = w;
  }
  // Row-major strides over the letters' extents (elements), 0 along an axis of extent 1.
  L.width = static_cast<uint32_t>(w);
  uint64_t stride = w;
  for (size_t i = letters.size() - 1; i-- > 0;) {
    uint64_t v = ext[i] > 1 ? stride : 0;
    switch (letters[i]) {
      case '2': L.s2 = v; break;
      case 'b': L.sb = v; break;
      case 'h': L.sh = v; break;
      case 's': L.ss = v; break;
      default: break;
    }
    stride *= ext[i];
  }
  L.kernel = L.same_place(kernel_layout(d, two, L.width)) && (r != AttnRole::O || L.lse);
  return true;
}

std::vector<RowBlock> relayout_blocks(const TileShape& t, const ItemLayout& L, uint32_t parts, uint32_t elem, uint32_t kernel_width,
                                      bool to_kernel) {
  std::vector<RowBlock> out;
  out.reserve(size_t{parts} * t.batch * t.heads);
  const uint64_t plane = uint64_t{t.rows_q} * kernel_width;
  for (uint32_t p = 0; p < parts; ++p)
    for (uint32_t b = 0; b < t.batch; ++b)
      for (uint32_t h = 0; h < t.heads; ++h) {
        uint64_t chunk = (p * L.s2 + b * L.sb + h * L.sh) * elem;
        uint64_t kernel = (((uint64_t{p} * t.batch + b) * t.heads + h) * plane) * elem;
        RowBlock r;
        r.src = to_kernel ? chunk : kernel;
        r.dst = to_kernel ? kernel : chunk;
        uint64_t cp = (t.rows_q > 1 ? L.ss : L.width) * elem, kp = uint64_t{kernel_width} * elem;
        r.spitch = to_kernel ? cp : kp;
        r.dpitch = to_kernel ? kp : cp;
        r.width = uint64_t{std::min(L.width, kernel_width)} * elem;
        r.rows = t.rows_q;
        out.push_back(r);
      }
  return out;
}

void relayout_host(const std::vector<RowBlock>& blocks, unsigned char* dst, const unsigned char* src) {
  for (const RowBlock& r : blocks)
    for (uint64_t i = 0; i < r.rows; ++i) std::memcpy(dst + r.dst + i * r.dpitch, src + r.src + i * r.spitch, r.width);
}

}  // namespace sg::exec
