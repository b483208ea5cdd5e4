// 16-bit floats as storage: IEEE binary16 (f16) and bfloat16 (bf16), converted to and from float
// with round-to-nearest-even. Arithmetic happens in float (as NCCL and MPI libraries do for them).
#pragma once
#include <cstdint>
#include <cstring>

namespace sg::exec {

inline float bf16_to_float(uint16_t h) {
  uint32_t u = uint32_t{h} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

inline float f16_to_float(uint16_t h) {
  _Float16 x;
  std::memcpy(&x, &h, 2);
  return static_cast<float>(x);
}
inline uint16_t float_to_f16(float f) {
  auto x = static_cast<_Float16>(f);
  uint16_t h;
  std::memcpy(&h, &x, 2);
  return h;
}

}  // namespace sg::exec
