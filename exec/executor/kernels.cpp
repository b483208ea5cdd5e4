#include "exec/executor/kernels.hpp"

#include <algorithm>

#include "exec/half.hpp"

namespace sg::exec {

namespace {

template <class T>
void reduce_typed(ReduceOp op, T* __restrict d, const T* __restrict s, size_t n) {
  switch (op) {
    case ReduceOp::Sum:
      for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(d[i] + s[i]);
      break;
    case ReduceOp::Prod:
      for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(d[i] * s[i]);
      break;
    case ReduceOp::Max:
      for (size_t i = 0; i < n; ++i) d[i] = std::max(d[i], s[i]);
      break;
    case ReduceOp::Min:
      for (size_t i = 0; i < n; ++i) d[i] = std::min(d[i], s[i]);
      break;
  }
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void reduce_half(ReduceOp op, uint16_t* __restrict d, const uint16_t* __restrict s, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float a = Load(d[i]), b = Load(s[i]);
    float r = op == ReduceOp::Sum ? a + b : op == ReduceOp::Prod ? a * b : op == ReduceOp::Max ? std::max(a, b) : std::min(a, b);
    d[i] = Store(r);
  }
}

}  // namespace

void reduce_into(DType t, ReduceOp op, void* dst, const void* src, size_t n) {
  switch (t) {
    case DType::F32: reduce_typed(op, static_cast<float*>(dst), static_cast<const float*>(src), n); break;
    case DType::F64: reduce_typed(op, static_cast<double*>(dst), static_cast<const double*>(src), n); break;
    case DType::I32: reduce_typed(op, static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), n); break;
    case DType::I64: reduce_typed(op, static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), n); break;
    case DType::I8: reduce_typed(op, static_cast<int8_t*>(dst), static_cast<const int8_t*>(src), n); break;
    case DType::U8: reduce_typed(op, static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n); break;
    case DType::F16: reduce_half<f16_to_float, float_to_f16>(op, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n); break;
    case DType::BF16:
      reduce_half<bf16_to_float, float_to_bf16>(op, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n);
      break;
  }
}

double burn_flops(double flops) {
  // 8 independent accumulators of 16 lanes: 2 flops per lane per multiply-add.
  constexpr int kLanes = 128;
  float a[kLanes], b = 0.999f, c = 0.001f;
  for (int i = 0; i < kLanes; ++i) a[i] = static_cast<float>(i) * 0.5f;
  auto rounds = static_cast<uint64_t>(flops / (2.0 * kLanes));
  for (uint64_t r = 0; r < rounds; ++r)
    for (int i = 0; i < kLanes; ++i) a[i] = a[i] * b + c;
  double sum = 0;
  for (int i = 0; i < kLanes; ++i) sum += a[i];
  return sum;
}

}  // namespace sg::exec
