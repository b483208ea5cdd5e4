// The numbers an executor fills its inputs with (nccl-tests' trick): every input element is a
// small integer, a function of (buffer, rank, chunk, element) for a contribution d(r, c) and of
// (buffer, item, element) for an item x(i), so that sums over any number of ranks are exact in
// every supported type and a wrong element is a wrong answer, not rounding. In core/ because
// both backends fill with them: the CPU executor (exec/executor/values.hpp) and the device-side fill of
// the CUDA path (exec/cuda/kernels.cu), which must produce the same numbers.
#pragma once
#include <cstdint>

#ifdef __CUDACC__
#define SG_HOST_DEVICE __host__ __device__
#else
#define SG_HOST_DEVICE
#endif

namespace sg {

// Element e of d(r, c) in buffer buf, and of x(i): integers in [-4, 4].
SG_HOST_DEVICE inline int contrib_value(uint32_t buf, uint32_t rank, uint32_t chunk, uint64_t e) {
  return static_cast<int>((uint64_t{rank} * 131 + uint64_t{chunk} * 31 + e * 7 + uint64_t{buf} * 17) % 9) - 4;
}
SG_HOST_DEVICE inline int item_value(uint32_t buf, uint32_t item, uint64_t e) {
  return static_cast<int>((uint64_t{item} * 37 + e * 11 + uint64_t{buf} * 5) % 9) - 4;
}

}  // namespace sg
