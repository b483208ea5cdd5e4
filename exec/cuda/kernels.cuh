// Launchers of the CUDA path's kernels (kernels.cu), in plain types so that this header compiles
// under both g++ and nvcc. Every launcher enqueues on `stream` (a cudaStream_t) and returns the
// launch's cudaError_t as an int (0: cudaSuccess).
#pragma once
#include <cstddef>
#include <cstdint>

namespace sg::cuda {

// Element types and operators, numbered as core's DType and ReduceOp (checked in device.cpp).
enum class DevType : uint8_t { F16, BF16, F32, F64, I8, I32, I64, U8 };
enum class DevOp : uint8_t { Sum, Max, Min, Prod };

// dst[i] = dst[i] OP src[i] for n elements; f16 and bf16 computed in float and rounded to
// nearest even, as the CPU path (exec/executor/kernels.cpp) does, so both give the same bits.
int launch_reduce(DevType t, DevOp op, void* dst, const void* src, size_t n, void* stream);

// The deterministic inputs of core/interp/input_values.hpp, written on the device: n elements
// of d(rank, chunk) (item < 0) or of x(item) for buffer `buf`, stored as type t.
int launch_fill(DevType t, void* dst, size_t n, uint32_t buf, uint32_t rank, uint32_t chunk, int64_t item, void* stream);

}  // namespace sg::cuda
