// A buffer's `layout LETTERS` (after `shape [...]`): what each extent of its chunk shape is, in
// TransformerEngine's qkv_format letters, so that exec reads attention items in the layouts
// people use (bshd, sbhd, bhsd, kv packed as bs2hd / sbh2d / 2bhsd) instead of one fixed order.
//   b  batch           s  the item's sequence rows       h  heads (of the item's head group)
//   d  the head dim    2  K then V (kv and dkv only)
// d comes last (a row of d contiguous elements: what the kernels and cuDNN read), each letter
// at most once, s and d always. A shape has one extent per letter, or one fewer when the
// layout ends in "2d" and the last extent is 2·dim (Megatron's fused kv, [s, b, h, 2·d]).
// Letters a shape leaves out are extents of 1. Whether a letter fits the buffer's role (a 2 on
// q, say) is exec's to say: this file checks only the letters.
#pragma once
#include <cstddef>
#include <string>

namespace sg {

// "" when `letters` is a well-formed layout for a shape of `extents` extents; else why not.
std::string layout_problem(const std::string& letters, size_t extents);

// Whether the shape's last extent holds "2d" fused (one extent fewer than letters).
inline bool layout_fuses_2d(const std::string& letters, size_t extents) { return extents + 1 == letters.size(); }

}  // namespace sg
