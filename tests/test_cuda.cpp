// The CUDA path's device layer (exec/cuda): reductions and the input fill on the GPU give the
// same bits as the CPU's arithmetic. Where no device is present (this machine, CI) every GPU
// case says so and skips; `exec --device cuda` is refused with the runtime's reason, exit 2.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "core/interp/input_values.hpp"
#include "exec/attention/attention_kernels.hpp"
#include "exec/cuda/attention.cuh"
#include "exec/cuda/attention_gemm.cuh"
#include "exec/cuda/device.hpp"
#include "exec/half.hpp"
#include "mpi_launch.hpp"
#include "run_command.hpp"

namespace {

using namespace sg;

// Skips (visibly) without a device.
bool have_device() {
  static const cuda::DeviceProbe p = cuda::probe_devices();
  if (p.count == 0) WARN("no CUDA device (" << p.reason << "): GPU case skipped");
  return p.count > 0;
}

// The CPU's arithmetic on one element, as exec/executor/kernels.cpp does it (f16 / bf16 in float,
// rounded to nearest even).
float op_f(ReduceOp op, float a, float b) {
  switch (op) {
    case ReduceOp::Sum: return a + b;
    case ReduceOp::Max: return std::max(a, b);
    case ReduceOp::Min: return std::min(a, b);
    case ReduceOp::Prod: return a * b;
  }
  return a;
}

uint16_t store16(DType t, float v) { return t == DType::F16 ? exec::float_to_f16(v) : exec::float_to_bf16(v); }
float load16(DType t, uint16_t v) { return t == DType::F16 ? exec::f16_to_float(v) : exec::bf16_to_float(v); }

}  // namespace

TEST_CASE("device reductions give the CPU's bits for f32, f16 and bf16 under sum, max, min and prod", "[cuda]") {
  if (!have_device()) return;
  Diagnostics diags;
  REQUIRE(cuda::use_device(0, diags));
  cuda::Stream st;
  REQUIRE(st.create(diags));
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
          REQUIRE(da.allocate(bytes, diags));
          REQUIRE(db.allocate(bytes, diags));
          REQUIRE(cuda::copy_to_device(da.data(), a.data(), bytes, st, diags));
          REQUIRE(cuda::copy_to_device(db.data(), b.data(), bytes, st, diags));
          REQUIRE(cuda::device_reduce(t, op, da.data() + off * es, db.data() + off * es, n, st, diags));
          REQUIRE(cuda::copy_to_host(got.data(), da.data(), bytes, st, diags));
          REQUIRE(st.sync(diags));
          INFO("n = " << n << " type " << dtype_name(t) << " op " << static_cast<int>(op) << " offset " << off);
          CHECK(std::memcmp(got.data(), want.data(), bytes) == 0);
        }
}

TEST_CASE("the device-side input fill writes the CPU executor's numbers", "[cuda]") {
  if (!have_device()) return;
  Diagnostics diags;
  REQUIRE(cuda::use_device(0, diags));
  cuda::Stream st;
  REQUIRE(st.create(diags));
  const size_t n = 4097;
  cuda::DeviceMemory d;
  REQUIRE(d.allocate(n * 4, diags));
  for (int64_t item : {int64_t{-1}, int64_t{7}}) {
    REQUIRE(cuda::device_fill(DType::I32, d.data(), n, 3, 5, 9, item, st, diags));
    std::vector<int32_t> got(n);
    REQUIRE(cuda::copy_to_host(got.data(), d.data(), n * 4, st, diags));
    REQUIRE(st.sync(diags));
    for (size_t e = 0; e < n; ++e) {
      int want = item < 0 ? contrib_value(3, 5, 9, e) : item_value(3, 7, e);
      if (got[e] != want) FAIL("element " << e << ": " << got[e] << " != " << want);
    }
  }
}

TEST_CASE("the GPU attention tiles (forward, merge, backward) agree with the CPU tiles", "[cuda][attention]") {
  if (!have_device()) return;
  Diagnostics diags;
  REQUIRE(cuda::use_device(0, diags));
  cuda::Stream st;
  REQUIRE(st.create(diags));
  // Rows not a multiple of 32 and dim not a multiple of 32: the tails of both loops.
  const exec::TileShape t{1, 3, 70, 70, 40};
  const size_t nq = exec::attn_q_elems(t), nkv = exec::attn_kv_elems(t), no = exec::attn_o_elems(t), nb = exec::attn_bundle_elems(t);
  auto dev_copy = [&](cuda::DeviceMemory& m, const void* host, size_t bytes) {
    REQUIRE(m.allocate(bytes, diags));
    REQUIRE(cuda::copy_to_device(m.data(), host, bytes, st, diags));
  };
  auto back = [&](std::vector<float>& host, const cuda::DeviceMemory& m) {
    REQUIRE(cuda::copy_to_host(host.data(), m.data(), host.size() * 4, st, diags));
    REQUIRE(st.sync(diags));
  };
  auto max_diff = [](const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i)
      m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]) / (1 + std::fabs(static_cast<double>(b[i]))));
    return m;
  };
  const float scale = 1.0f / std::sqrt(40.0f);
  for (bool bf16 : {false, true})
    for (bool causal : {false, true}) {
      INFO("bf16 " << bf16 << " causal " << causal);
      std::vector<float> q(nq), kv(nkv), kv2(nkv), dout(nq);
      exec::fill_attention_input(q.data(), nq, 1, 0, bf16);
      exec::fill_attention_input(kv.data(), nkv, 2, 0, bf16);
      exec::fill_attention_input(kv2.data(), nkv, 2, 1, bf16);
      exec::fill_attention_input(dout.data(), nq, 3, 0, bf16);
      std::vector<uint16_t> qh(nq), kvh(nkv), kv2h(nkv);
      for (size_t i = 0; i < nq; ++i) qh[i] = exec::float_to_bf16(q[i]);
      for (size_t i = 0; i < nkv; ++i) kvh[i] = exec::float_to_bf16(kv[i]), kv2h[i] = exec::float_to_bf16(kv2[i]);
      // Forward: two tiles merged into one accumulator (the second full, the first as masked).
      std::vector<float> o(no), o_gpu(no);
      for (size_t r = 0; r < no / 41; ++r) o[r * 41 + 40] = -INFINITY;
      std::vector<float> o0 = o;
      if (bf16) {
        exec::attn_fwd_tile(qh.data(), kvh.data(), o.data(), t, causal, scale);
        exec::attn_fwd_tile(qh.data(), kv2h.data(), o.data(), t, false, scale);
      } else {
        exec::attn_fwd_tile(q.data(), kv.data(), o.data(), t, causal, scale);
        exec::attn_fwd_tile(q.data(), kv2.data(), o.data(), t, false, scale);
      }
      cuda::DeviceMemory dq_in, dkv_in, dkv2_in, do_lse;
      dev_copy(dq_in, bf16 ? static_cast<const void*>(qh.data()) : q.data(), nq * (bf16 ? 2 : 4));
      dev_copy(dkv_in, bf16 ? static_cast<const void*>(kvh.data()) : kv.data(), nkv * (bf16 ? 2 : 4));
      dev_copy(dkv2_in, bf16 ? static_cast<const void*>(kv2h.data()) : kv2.data(), nkv * (bf16 ? 2 : 4));
      dev_copy(do_lse, o0.data(), no * 4);
      auto* ol = reinterpret_cast<float*>(do_lse.data());
      REQUIRE(cuda::launch_attn_fwd(dq_in.data(), dkv_in.data(), ol, bf16, 3, 70, 70, 40, causal, scale, 0, st.handle()) == 0);
      REQUIRE(cuda::launch_attn_fwd(dq_in.data(), dkv2_in.data(), ol, bf16, 3, 70, 70, 40, false, scale, 0, st.handle()) == 0);
      back(o_gpu, do_lse);
      CHECK(max_diff(o_gpu, o) < 2e-5);
      // The cuBLAS tile (attention_gemm.cuh), in slabs of 70 rows and of 16 (four slabs, the
      // last one short): the same two tiles. bf16 inputs round P to bf16 for P·V (FlashAttention's
      // choice), hence a bf16-sized tolerance there.
      for (uint32_t slab : {70u, 16u}) {
        INFO("cuBLAS slab " << slab);
        void* h = nullptr;
        REQUIRE(cuda::attn_gemm_handle(&h, diags));
        cuda::DeviceMemory ws, og;
        REQUIRE(ws.allocate(cuda::attn_gemm_workspace(3, slab, 70, 40, bf16), diags));
        dev_copy(og, o0.data(), no * 4);
        auto* g = reinterpret_cast<float*>(og.data());
        CHECK(cuda::launch_attn_fwd_gemm(h, ws.data(), slab, dq_in.data(), dkv_in.data(), g, bf16, 3, 70, 70, 40, causal, scale, 0,
                                         st.handle()) == 0);
        CHECK(cuda::launch_attn_fwd_gemm(h, ws.data(), slab, dq_in.data(), dkv2_in.data(), g, bf16, 3, 70, 70, 40, false, scale, 0,
                                         st.handle()) == 0);
        std::vector<float> o_gemm(no);
        back(o_gemm, og);
        CHECK(max_diff(o_gemm, o) < (bf16 ? 1e-2 : 2e-5));
        cuda::attn_gemm_handle_free(h);
      }
      // Merge: the GPU's O|lse into a copy of the CPU's, against the CPU's merge.
      std::vector<float> m_cpu = o, m_gpu(no);
      exec::attn_merge(m_cpu.data(), o_gpu.data(), exec::TileShape{1, 1, static_cast<uint32_t>(no / 41), 0, 40});
      cuda::DeviceMemory dacc;
      dev_copy(dacc, o.data(), no * 4);
      REQUIRE(cuda::launch_attn_merge(reinterpret_cast<float*>(dacc.data()), ol, no / 41, 40, st.handle()) == 0);
      back(m_gpu, dacc);
      CHECK(max_diff(m_gpu, m_cpu) < 1e-6);
      // Backward of the first tile from the final forward's bundle (fp32 bundle, kv as stored).
      std::vector<float> bundle(nb), dq(nq, 0.f), dkv(nkv, 0.f), dq_gpu(nq), dkv_gpu(nkv);
      exec::attn_bwd_bundle(q.data(), dout.data(), o.data(), bundle.data(), t);
      if (bf16) exec::attn_bwd_tile(bundle.data(), kvh.data(), dq.data(), dkv.data(), t, causal, scale);
      else exec::attn_bwd_tile(bundle.data(), kv.data(), dq.data(), dkv.data(), t, causal, scale);
      cuda::DeviceMemory db, ddq, ddkv;
      dev_copy(db, bundle.data(), nb * 4);
      std::vector<float> zq(nq, 0.f), zkv(nkv, 0.f);
      dev_copy(ddq, zq.data(), nq * 4);
      dev_copy(ddkv, zkv.data(), nkv * 4);
      REQUIRE(cuda::launch_attn_bwd(reinterpret_cast<const float*>(db.data()), dkv_in.data(), bf16, reinterpret_cast<float*>(ddq.data()),
                                    reinterpret_cast<float*>(ddkv.data()), 3, 70, 70, 40, causal, scale, 0, st.handle()) == 0);
      back(dq_gpu, ddq);
      back(dkv_gpu, ddkv);
      CHECK(max_diff(dq_gpu, dq) < 1e-4);
      CHECK(max_diff(dkv_gpu, dkv) < 1e-4);
      // The cuBLAS backward (attention_gemm.cuh) on the tile's own bundle: fp32, or q and dO as
      // bf16 (exact here: the inputs are bf16 values) with lse and D as fp32. Slabs of 70 and 16
      // rows. bf16 rounds P and dS for their GEMMs (FlashAttention's choice): a bf16 tolerance.
      std::vector<unsigned char> raw;
      if (bf16) {
        const size_t rows = nb / 82, in_row = 2 * 40 + 2, out_row = 4 * 40 + 8;
        raw.resize(rows * out_row);
        for (size_t r = 0; r < rows; ++r) {
          auto* h = reinterpret_cast<uint16_t*>(raw.data() + r * out_row);
          for (size_t d = 0; d < 80; ++d) h[d] = exec::float_to_bf16(bundle[r * in_row + d]);
          std::memcpy(raw.data() + r * out_row + 160, &bundle[r * in_row + 80], 8);
        }
      } else {
        raw.resize(nb * 4);
        std::memcpy(raw.data(), bundle.data(), nb * 4);
      }
      cuda::DeviceMemory draw;
      dev_copy(draw, raw.data(), raw.size());
      for (uint32_t slab : {70u, 16u}) {
        INFO("cuBLAS backward, slab " << slab);
        void* h = nullptr;
        REQUIRE(cuda::attn_gemm_handle(&h, diags));
        cuda::DeviceMemory ws, gq, gkv;
        REQUIRE(ws.allocate(cuda::attn_gemm_bwd_workspace(3, slab, 70, bf16), diags));
        dev_copy(gq, zq.data(), nq * 4);
        dev_copy(gkv, zkv.data(), nkv * 4);
        CHECK(cuda::launch_attn_bwd_gemm(h, ws.data(), slab, draw.data(), dkv_in.data(), reinterpret_cast<float*>(gq.data()),
                                         reinterpret_cast<float*>(gkv.data()), bf16, 3, 70, 70, 40, causal, scale, 0, st.handle()) == 0);
        std::vector<float> gq_h(nq), gkv_h(nkv);
        back(gq_h, gq);
        back(gkv_h, gkv);
        CHECK(max_diff(gq_h, dq) < (bf16 ? 2e-2 : 1e-4));
        CHECK(max_diff(gkv_h, dkv) < (bf16 ? 2e-2 : 1e-4));
        cuda::attn_gemm_handle_free(h);
      }
    }
}

TEST_CASE("exec --device cuda: refused with the runtime's reason without a device; with one, the CPU's exact results", "[cuda][exec]") {
  if (!sgtest::have_mpiexec()) return;
  auto exec = [](int n, const std::string& args) {
    return sgtest::run_command(sgtest::mpiexec(120) + " -n " + std::to_string(n) + " '" + std::string(STEPGRAPH_BIN) + "' exec " + args +
                               " 2>&1");
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
                           "pairwise_alltoall --set size=48KiB", "dp_bucketed_step --set size=1MiB --set flops=1M",
                           // attention: the GPU tiles and merges, against full attention on one rank
                           "ring_attention --set seq=4096 --set heads=8 --set dim=64",
                           "ringx1_attention --set seq=4096 --set heads=8 --set dim=64 --set elem=4",
                           "zigzag_ring_attention_bwd --set seq=4096 --set heads=8 --set dim=64"}) {
    sgtest::Ran r = exec(4, std::string(args) + " --device cuda --check --iters 2 --warmup 1 --json");
    INFO(args << ":\n" << r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("\"wrong\": 0") != std::string::npos);
    CHECK(r.out.find("\"device\": \"cuda\"") != std::string::npos);
  }
  // The cuBLAS tiles (STEPGRAPH_ATTN=gemm), forward and backward, under exec, checked against
  // full attention (and its gradients).
  for (const char* name : {"ring_attention", "zigzag_ring_attention_bwd"})
    for (const char* elem : {"4", "2"}) {
      sgtest::Ran r = sgtest::run_command("STEPGRAPH_ATTN=gemm " + sgtest::mpiexec(120) + " -n 4 '" + std::string(STEPGRAPH_BIN) +
                                          "' exec " + name + " --set seq=4096 --set heads=8 --set dim=64 --set elem=" + elem +
                                          " --device cuda --check --iters 2 --warmup 1 --json 2>&1");
      INFO("STEPGRAPH_ATTN=gemm " << name << " elem " << elem << ":\n" << r.out);
      REQUIRE(r.rc == 0);
      CHECK(r.out.find("\"wrong\": 0") != std::string::npos);
    }
  // cuDNN's fused tiles (STEPGRAPH_ATTN=cudnn, bf16 inputs), forward and backward, both masks,
  // and in Megatron's layouts (relaid around it), checked against full attention and its gradients.
  for (const std::string& args :
       {std::string("ring_attention --set causal=1"), std::string("ring_attention --set causal=0"), std::string("zigzag_ring_attention"),
        std::string(STEPGRAPH_SOURCE_DIR) + "/bench/megatron_layout_attention.sched", std::string("ring_attention_bwd --set causal=1"),
        std::string("ring_attention_bwd --set causal=0"), std::string("zigzag_ring_attention_bwd")}) {
    sgtest::Ran r =
        sgtest::run_command("STEPGRAPH_ATTN=cudnn " + sgtest::mpiexec(120) + " -n 4 '" + std::string(STEPGRAPH_BIN) + "' exec " + args +
                            " --set seq=4096 --set heads=8 --set dim=128 --device cuda --check --iters 2 --warmup 1 --json 2>&1");
    INFO("STEPGRAPH_ATTN=cudnn " << args << ":\n" << r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("\"wrong\": 0") != std::string::npos);
  }
}

TEST_CASE("exec --transport ipc: ranks sharing the GPU copy from each other's buffers (CUDA IPC), the staged transport's results",
          "[cuda][exec]") {
  if (!sgtest::have_mpiexec() || cuda::probe_devices().count == 0) {
    WARN("no CUDA device: --transport ipc is checked on the stand-in device only (test_exec)");
    return;
  }
  for (const char* args : {"ring_allreduce --set size=1MiB", "recursive_doubling_allreduce --set size=96KiB --dtype bf16",
                           "pairwise_alltoall --set size=48KiB", "zigzag_ring_attention_bwd --set seq=4096 --set heads=8 --set dim=64"})
    for (const char* sync : {"", " --device-sync"}) {
      sgtest::Ran r = sgtest::run_command(sgtest::mpiexec(120) + " -n 4 '" + std::string(STEPGRAPH_BIN) + "' exec " + args +
                                          " --device cuda --transport ipc --check --iters 2 --warmup 1 --json" + sync + " 2>&1");
      INFO(args << sync << ":\n" << r.out);
      REQUIRE(r.rc == 0);
      CHECK(r.out.find("\"wrong\": 0") != std::string::npos);
      CHECK(r.out.find("\"transport\": \"ipc\"") != std::string::npos);
    }
}

TEST_CASE("exec --transport nccl: NCCL on a GPU per rank gives the staged transport's results; ranks sharing a GPU are refused",
          "[cuda][exec][nccl]") {
  if (!sgtest::have_mpiexec()) return;
  if (!have_device()) return;
  auto exec = [](int n, const std::string& args) {
    return sgtest::run_command(sgtest::mpiexec(180) + " -n " + std::to_string(n) + " '" + std::string(STEPGRAPH_BIN) + "' exec " + args +
                               " 2>&1");
  };
  int gpus = cuda::probe_devices().count;
  // More ranks than GPUs on the node: NCCL cannot run two ranks on one device.
  sgtest::Ran crowded = exec(gpus + 1, "ring_allreduce --set size=64KiB --device cuda --transport nccl --iters 1");
  INFO(crowded.out);
  CHECK(crowded.rc == 2);
  CHECK(crowded.out.find("NCCL needs a GPU per rank") != std::string::npos);
  int n = std::min(gpus, 4);
  if (n < 2) {
    WARN("one GPU: --transport nccl checked at N = 1 and for its refusal only");
    sgtest::Ran one = exec(1, "ring_allreduce --set size=1MiB --device cuda --transport nccl --check --iters 2 --json");
    INFO(one.out);
    CHECK(one.rc == 0);
    return;
  }
  for (const char* args : {"ring_allreduce --set size=1MiB", "recursive_halving_reduce_scatter --set size=96KiB --dtype bf16",
                           "hierarchical_allreduce --set size=64KiB --set mp=2", "pairwise_alltoall --set size=48KiB",
                           "ring_attention --set seq=4096 --set heads=8 --set dim=64",
                           "zigzag_ring_attention_bwd --set seq=4096 --set heads=8 --set dim=64"}) {
    sgtest::Ran r = exec(n, std::string(args) + " --device cuda --transport nccl --check --iters 2 --warmup 1 --json");
    INFO(args << ":\n" << r.out);
    if (r.rc == 2 && r.out.find("unsupported") != std::string::npos) continue;
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("\"wrong\": 0") != std::string::npos);
    CHECK(r.out.find("\"transport\": \"nccl\"") != std::string::npos);
  }
}
