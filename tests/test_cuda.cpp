// The CUDA path's device layer (exec/cuda): reductions and the input fill on the GPU give the
// same bits as the CPU's arithmetic. Where no device is present (this machine, CI) every GPU
// case says so and skips; `exec --device cuda` is refused with the runtime's reason, exit 2.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/interp/input_values.hpp"
#include "exec/cuda/device.hpp"
#include "exec/half.hpp"
#include "run_command.hpp"

namespace {

using namespace sg;

// Skips (visibly) without a device.
bool have_device() {
  static const cuda::DeviceProbe p = cuda::probe_devices();
  if (p.count == 0) WARN("no CUDA device (" << p.reason << "): GPU case skipped");
  return p.count > 0;
}

// The CPU's arithmetic on one element, as exec/kernels.cpp does it (f16 / bf16 in float,
// rounded to nearest even).
float op_f(ReduceOp op, float a, float b) {
  switch (op) {
    case ReduceOp::Sum: return a + b;
    case ReduceOp::Max: return std::fmax(a, b);
    case ReduceOp::Min: return std::fmin(a, b);
    case ReduceOp::Prod: return a * b;
  }
  return a;
}

uint16_t store16(DType t, float v) { return t == DType::F16 ? exec::float_to_f16(v) : exec::float_to_bf16(v); }
float load16(DType t, uint16_t v) { return t == DType::F16 ? exec::f16_to_float(v) : exec::bf16_to_float(v); }

}  // namespace

TEST_CASE("device reductions give the CPU's bits for f32, f16 and bf16 under sum, max, min and prod", "[cuda]") {
  if (!have_device()) return;
  std::string err;
  REQUIRE(cuda::use_device(0, err));
  cuda::Stream st;
  REQUIRE(st.create(err));
  // Odd sizes and an offset of one element: the vector path, the scalar path and the tail.
  for (size_t n : {size_t{1}, size_t{1000}, size_t{1} << 20, (size_t{1} << 20) + 7})
    for (DType t : {DType::F32, DType::F16, DType::BF16})
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod})
        for (size_t off : {size_t{0}, size_t{1}}) {
          size_t es = dtype_size(t), bytes = (n + off) * es;
          std::vector<unsigned char> a(bytes), b(bytes), want(bytes), got(bytes);
          for (size_t i = 0; i < n + off; ++i) {
            float x = static_cast<float>(contrib_value(1, 2, 3, i)), y = static_cast<float>(item_value(4, 5, i)) / 4;
            if (t == DType::F32) {
              std::memcpy(&a[i * 4], &x, 4);
              std::memcpy(&b[i * 4], &y, 4);
              float r = op_f(op, x, y);
              std::memcpy(&want[i * 4], &r, 4);
            } else {
              uint16_t hx = store16(t, x), hy = store16(t, y), hr = store16(t, op_f(op, load16(t, hx), load16(t, hy)));
              std::memcpy(&a[i * 2], &hx, 2);
              std::memcpy(&b[i * 2], &hy, 2);
              std::memcpy(&want[i * 2], &hr, 2);
            }
          }
          std::memcpy(want.data(), a.data(), off * es);  // the element before the range is untouched
          cuda::DeviceMemory da, db;
          REQUIRE(da.allocate(bytes, err));
          REQUIRE(db.allocate(bytes, err));
          REQUIRE(cuda::copy_to_device(da.data(), a.data(), bytes, st, err));
          REQUIRE(cuda::copy_to_device(db.data(), b.data(), bytes, st, err));
          REQUIRE(cuda::device_reduce(t, op, da.data() + off * es, db.data() + off * es, n, st, err));
          REQUIRE(cuda::copy_to_host(got.data(), da.data(), bytes, st, err));
          REQUIRE(st.sync(err));
          INFO("n = " << n << " type " << dtype_name(t) << " op " << static_cast<int>(op) << " offset " << off);
          CHECK(std::memcmp(got.data(), want.data(), bytes) == 0);
        }
}

TEST_CASE("the device-side input fill writes the CPU executor's numbers", "[cuda]") {
  if (!have_device()) return;
  std::string err;
  REQUIRE(cuda::use_device(0, err));
  cuda::Stream st;
  REQUIRE(st.create(err));
  const size_t n = 4097;
  cuda::DeviceMemory d;
  REQUIRE(d.allocate(n * 4, err));
  for (int64_t item : {int64_t{-1}, int64_t{7}}) {
    REQUIRE(cuda::device_fill(DType::I32, d.data(), n, 3, 5, 9, item, st, err));
    std::vector<int32_t> got(n);
    REQUIRE(cuda::copy_to_host(got.data(), d.data(), n * 4, st, err));
    REQUIRE(st.sync(err));
    for (size_t e = 0; e < n; ++e) {
      int want = item < 0 ? contrib_value(3, 5, 9, e) : item_value(3, 7, e);
      if (got[e] != want) FAIL("element " << e << ": " << got[e] << " != " << want);
    }
  }
}

TEST_CASE("exec --device cuda: refused with the runtime's reason without a device; with one, the CPU's exact results", "[cuda][exec]") {
  if (std::system("command -v mpiexec >/dev/null 2>&1") != 0) return;
  auto exec = [](int n, const std::string& args) {
    return sgtest::run_command(
        "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 timeout 120 mpiexec -n " +
        std::to_string(n) + " '" + std::string(STEPGRAPH_BIN) + "' exec " + args + " 2>&1");
  };
  if (cuda::probe_devices().count == 0) {
    sgtest::Ran r = exec(2, "ring_allreduce --device cuda --check");
    INFO(r.out);
    CHECK(r.rc == 2);
    CHECK(r.out.find("error: --device cuda: no CUDA device (cudaGetDeviceCount") != std::string::npos);
    size_t first = r.out.find("--device cuda:");
    CHECK(r.out.find("--device cuda:", first + 1) == std::string::npos);  // one message, from rank 0
    WARN("no CUDA device: exec --device cuda checked for its refusal only");
    return;
  }
  // Integer-valued inputs: every sum is exact, so the device's elements equal the postcondition's
  // numbers and MPI's own collective on the host, bit for bit, in every type.
  for (const char* args : {"ring_allreduce --set size=1MiB", "recursive_halving_reduce_scatter --set size=96KiB --dtype bf16",
                           "rabenseifner_allreduce --set size=64KiB --dtype f16", "binomial_bcast --set size=64KiB",
                           "pairwise_alltoall --set size=48KiB", "dp_bucketed_step --set size=1MiB --set flops=1M"}) {
    sgtest::Ran r = exec(4, std::string(args) + " --device cuda --check --iters 2 --warmup 1 --json");
    INFO(args << ":\n" << r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("\"wrong\": 0") != std::string::npos);
    CHECK(r.out.find("\"device\": \"cuda\"") != std::string::npos);
  }
}
