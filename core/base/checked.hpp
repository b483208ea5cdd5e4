// Checked and saturating 64-bit arithmetic for sizes and counts. A byte total or a step estimate
// that wraps at 2^64 is a silently wrong answer; these either say it overflowed or stop at the
// largest value, which every limit downstream then refuses.
#pragma once
#include <cstdint>
#include <limits>

namespace sg {

// Exact sums and products of 64-bit counts (GCC and Clang; `__extension__` keeps -Wpedantic quiet).
__extension__ typedef unsigned __int128 u128;

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
// The most bytes one rank's buffer, or all the data an instance moves, may come to (4 EiB):
// every byte count and total downstream (per rank, per link, per message, sums of them, times
// small factors) then fits in 64 bits. Elaboration and the totals pass refuse more.
constexpr uint64_t kMaxBytes = uint64_t{1} << 62;

inline uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? kU64Max : r;
}
inline uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kU64Max : r;
}
// False when a * b or a + b does not fit; out holds the result otherwise.
inline bool checked_mul(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_mul_overflow(a, b, &out); }
inline bool checked_add(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_add_overflow(a, b, &out); }

}  // namespace sg
