// Attention tiles through cuDNN's fused flash attention (the kernels PyTorch's SDPA reaches on
// Hopper), built with the cuDNN 9 graph (backend) API directly: the header-only frontend is not
// packaged here, so this file writes the graphs the frontend's SDPA nodes build
// (cudnn-frontend v1.0-v1.1, node/scaled_dot_product_flash_attention.h and node/softmax.h).
// Forward:
//   S = Q·Kᵀ (fp32) → × scale → [causal: row ≥ col ? S : −inf] → M = max_row S → E = exp(S − M)
//   → Z = Σ_row E → Stats = M + log Z (fp32, the tile's lse) → P = E / Z (bf16/fp16) → O_t = P·V.
// Backward (SDPABackwardNode):
//   D = Σ_row dO ∘ O; S as above, masked; P = exp(S − Stats); dV = Pᵀ·dO; dP = dO·Vᵀ;
//   dS = P ∘ (dP − D) × scale; dK = dSᵀ·Q; dQ = dS·K (through an fp32 dQ accumulator in F16x16
//   order, zeroed before each run, when the dP workspace would pass 256 MiB, as the frontend does).
// One plan per shape (planes, rows, dim, type, mask, direction), cached; libcudnn is dlopen-ed at
// first use so that nothing without a GPU ever loads it. Opt-in with STEPGRAPH_ATTN=cudnn until
// a GPU has measured it (bench/gpu_run.sh); bf16 or fp16 inputs (cuDNN's fused attention takes
// nothing else): exec's fp32 inputs keep the reference tiles.
#include "exec/cuda/attention_cudnn.hpp"

#include <cudnn_graph.h>
#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace sg::cuda {

namespace {

struct CudnnApi {
  decltype(&cudnnCreate) create = nullptr;
  decltype(&cudnnDestroy) destroy = nullptr;
  decltype(&cudnnSetStream) set_stream = nullptr;
  decltype(&cudnnGetErrorString) error_string = nullptr;
  decltype(&cudnnGetLastErrorString) last_error = nullptr;
  decltype(&cudnnBackendCreateDescriptor) make = nullptr;
  decltype(&cudnnBackendDestroyDescriptor) drop = nullptr;
  decltype(&cudnnBackendSetAttribute) set = nullptr;
  decltype(&cudnnBackendGetAttribute) get = nullptr;
  decltype(&cudnnBackendFinalize) finalize = nullptr;
  decltype(&cudnnBackendExecute) execute = nullptr;
  std::string why;  // empty when loaded
};

const CudnnApi& api() {
  static const CudnnApi a = [] {
    CudnnApi x;
    void* lib = nullptr;
    for (const char* name : {"libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_GLOBAL))) break;
    if (!lib) {
      const char* e = dlerror();
      x.why = std::string("cannot load cuDNN (libcudnn.so.9): ") + (e ? e : "not found");
      return x;
    }
    auto sym = [&](auto& f, const char* n) { f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(lib, n)); };
    sym(x.create, "cudnnCreate");
    sym(x.destroy, "cudnnDestroy");
    sym(x.set_stream, "cudnnSetStream");
    sym(x.error_string, "cudnnGetErrorString");
    sym(x.last_error, "cudnnGetLastErrorString");
    sym(x.make, "cudnnBackendCreateDescriptor");
    sym(x.drop, "cudnnBackendDestroyDescriptor");
    sym(x.set, "cudnnBackendSetAttribute");
    sym(x.get, "cudnnBackendGetAttribute");
    sym(x.finalize, "cudnnBackendFinalize");
    sym(x.execute, "cudnnBackendExecute");
    if (!x.create || !x.destroy || !x.set_stream || !x.error_string || !x.make || !x.drop || !x.set || !x.get || !x.finalize || !x.execute)
      x.why = "the loaded cuDNN lacks the graph API (cudnnBackend*)";
    return x;
  }();
  return a;
}

// The attributes the frontend still sets, under the numbers cuDNN 9 marks deprecated (the
// handle now also comes with the execution): named here so that -Werror builds stay quiet.
constexpr auto kGraphHandle = static_cast<cudnnBackendAttributeName_t>(800);  // CUDNN_ATTR_OPERATIONGRAPH_HANDLE
constexpr auto kPlanHandle = static_cast<cudnnBackendAttributeName_t>(400);   // CUDNN_ATTR_EXECUTION_PLAN_HANDLE

// A graph under construction: every descriptor it makes, destroyed with it; the first failure
// kept (what, and cuDNN's own last message).
class Builder {
 public:
  ~Builder() {
    for (auto it = owned_.rbegin(); it != owned_.rend(); ++it) api().drop(*it);
  }
  std::string error;

  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t t) {
    cudnnBackendDescriptor_t d = nullptr;
    if (!error.empty()) return nullptr;
    if (!check(api().make(t, &d), "cudnnBackendCreateDescriptor")) return nullptr;
    owned_.push_back(d);
    return d;
  }
  template <class T>
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t, int64_t count, const T* v,
           const char* what) {
    if (error.empty() && d) check(api().set(d, n, t, count, v), what);
  }
  void finalize(cudnnBackendDescriptor_t d, const char* what) {
    if (error.empty() && d) check(api().finalize(d), what);
  }
  bool check(cudnnStatus_t s, const char* what) {
    if (s == CUDNN_STATUS_SUCCESS) return true;
    if (error.empty()) {
      char last[512] = {0};
      if (api().last_error) api().last_error(last, sizeof last);
      error = std::string(what) + ": " + api().error_string(s) + (last[0] ? std::string(" (") + last + ")" : std::string());
    }
    return false;
  }

  // A tensor: dims and strides (elements), type, uid; virtual ones live only inside the graph.
  cudnnBackendDescriptor_t tensor(int64_t uid, cudnnDataType_t type, std::vector<int64_t> dims, std::vector<int64_t> strides,
                                  bool is_virtual = false, bool by_value = false,
                                  cudnnBackendTensorReordering_t reorder = CUDNN_TENSOR_REORDERING_NONE) {
    cudnnBackendDescriptor_t d = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const int64_t align = 16;
    set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, "tensor type");
    set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, static_cast<int64_t>(dims.size()), dims.data(), "tensor dims");
    set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, static_cast<int64_t>(strides.size()), strides.data(), "tensor strides");
    set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor uid");
    set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor alignment");
    set(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual, "tensor virtual");
    if (by_value) set(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value, "tensor by value");
    if (reorder != CUDNN_TENSOR_REORDERING_NONE)
      set(d, CUDNN_ATTR_TENSOR_REORDERING_MODE, CUDNN_TYPE_TENSOR_REORDERING_MODE, 1, &reorder, "tensor reordering");
    finalize(d, "tensor finalize");
    return d;
  }
  // A virtual fp32 (or `type`) tensor shaped like the scores or like a row statistic.
  cudnnBackendDescriptor_t scratch(cudnnDataType_t type, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
    return tensor(next_uid_++, type, dims, strides, true);
  }

  cudnnBackendDescriptor_t pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                                     cudnnBackendDescriptor_t y, cudnnBackendDescriptor_t t = nullptr,
                                     cudnnDataType_t prec = CUDNN_DATA_FLOAT, int64_t axis = -1) {
    cudnnBackendDescriptor_t pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise mode");
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, "pointwise precision");
    if (axis >= 0) set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, "pointwise axis");
    finalize(pw, "pointwise finalize");
    cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw, "pointwise op");
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "pointwise x");
    if (b) set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, "pointwise b");
    if (t) set(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t, "pointwise t");
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "pointwise y");
    finalize(op, "pointwise op finalize");
    ops.push_back(op);
    return op;
  }
  void reduction(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t rd = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    set(rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode, "reduction mode");
    set(rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec, "reduction precision");
    finalize(rd, "reduction finalize");
    cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    set(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd, "reduction op");
    set(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "reduction x");
    set(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "reduction y");
    finalize(op, "reduction op finalize");
    ops.push_back(op);
  }
  void matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) {
    cudnnBackendDescriptor_t mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    double padding = 0;  // (the frontend's matmul node always sets it)
    set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec, "matmul precision");
    set(mm, CUDNN_ATTR_MATMUL_PADDING_VALUE, CUDNN_TYPE_DOUBLE, 1, &padding, "matmul padding");
    finalize(mm, "matmul finalize");
    cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    set(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a, "matmul a");
    set(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, "matmul b");
    set(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c, "matmul c");
    set(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mm, "matmul op");
    finalize(op, "matmul op finalize");
    ops.push_back(op);
  }

  // y: x's elements under y's dims and strides (a transposed view).
  void reshape(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    set(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "reshape x");
    set(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "reshape y");
    finalize(op, "reshape op finalize");
    ops.push_back(op);
  }

  std::vector<cudnnBackendDescriptor_t> ops;

 private:
  std::vector<cudnnBackendDescriptor_t> owned_;
  int64_t next_uid_ = 100;
};

enum Uid : int64_t {
  kQ = 1,
  kK = 2,
  kV = 3,
  kScale = 4,
  kNegInf = 5,
  kO = 6,
  kStats = 7,
  kDO = 8,
  kDQ = 9,
  kDK = 10,
  kDV = 11,
  kOne = 12,
  kDQAccum = 13
};

using Desc = cudnnBackendDescriptor_t;

// The causal mask of the diagonal tile: key col visible to query row iff row >= col, a boolean
// select of the lowest float, as the frontend writes it: its forward node generates the indices
// in fp32, its backward node in int32.
Desc causal_mask(Builder& g, Desc s, const std::vector<int64_t>& sdim, const std::vector<int64_t>& sstr, cudnnDataType_t index) {
  auto row = g.scratch(index, sdim, sstr), col = g.scratch(index, sdim, sstr);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, row, nullptr, index, 2);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, col, nullptr, index, 3);
  auto keep = g.scratch(CUDNN_DATA_BOOLEAN, sdim, sstr);
  g.pointwise(CUDNN_POINTWISE_CMP_GE, row, col, keep, nullptr, CUDNN_DATA_BOOLEAN);
  auto neg_inf = g.tensor(kNegInf, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  auto masked = g.scratch(CUDNN_DATA_FLOAT, sdim, sstr);
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, s, neg_inf, masked, keep);
  return masked;
}

// S = scale·Q·Kᵀ in fp32, masked on the diagonal tile: where both graphs start.
Desc scaled_scores(Builder& g, Desc q, Desc kt, Desc scale, bool causal, const std::vector<int64_t>& sdim, const std::vector<int64_t>& sstr,
                   cudnnDataType_t index) {
  auto s0 = g.scratch(CUDNN_DATA_FLOAT, sdim, sstr);
  g.matmul(q, kt, s0);
  auto s1 = g.scratch(CUDNN_DATA_FLOAT, sdim, sstr);
  g.pointwise(CUDNN_POINTWISE_MUL, s0, scale, s1);
  return causal ? causal_mask(g, s1, sdim, sstr, index) : s1;
}

// The forward graph over q [b, 1, s, d] (b = planes: every plane is its own batch entry), K read
// transposed out of the kv item, V after it.
void forward_graph(Builder& g, int64_t b, int64_t sq, int64_t sk, int64_t d, cudnnDataType_t io, bool causal) {
  auto q = g.tensor(kQ, io, {b, 1, sq, d}, {sq * d, sq * d, d, 1});
  auto kt = g.tensor(kK, io, {b, 1, d, sk}, {sk * d, sk * d, 1, d});  // K transposed: Q·Kᵀ
  auto v = g.tensor(kV, io, {b, 1, sk, d}, {sk * d, sk * d, d, 1});
  auto scale = g.tensor(kScale, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  auto o = g.tensor(kO, io, {b, 1, sq, d}, {sq * d, sq * d, d, 1});
  auto stats = g.tensor(kStats, CUDNN_DATA_FLOAT, {b, 1, sq, 1}, {sq, sq, 1, 1});
  const std::vector<int64_t> sdim{b, 1, sq, sk}, sstr{sq * sk, sq * sk, sk, 1}, rdim{b, 1, sq, 1}, rstr{sq, sq, 1, 1};
  auto last = scaled_scores(g, q, kt, scale, causal, sdim, sstr, CUDNN_DATA_FLOAT);
  auto m = g.scratch(CUDNN_DATA_FLOAT, rdim, rstr);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, last, m);
  auto centred = g.scratch(CUDNN_DATA_FLOAT, sdim, sstr);
  g.pointwise(CUDNN_POINTWISE_SUB, last, m, centred);
  auto e = g.scratch(CUDNN_DATA_FLOAT, sdim, sstr);
  g.pointwise(CUDNN_POINTWISE_EXP, centred, nullptr, e);
  auto z = g.scratch(CUDNN_DATA_FLOAT, rdim, rstr);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, z);
  auto logz = g.scratch(CUDNN_DATA_FLOAT, rdim, rstr);
  g.pointwise(CUDNN_POINTWISE_LOG, z, nullptr, logz);
  g.pointwise(CUDNN_POINTWISE_ADD, m, logz, stats);
  auto p = g.scratch(io, sdim, sstr);  // bmm2's A in the input type, as the backend requires
  g.pointwise(CUDNN_POINTWISE_DIV, e, z, p);
  g.matmul(p, v, o);
}

// Whether the backward's dP goes through cuDNN's workspace: the frontend's rule (cuDNN 9, the dP
// workspace of b·h·⌈sq⌉₆₄·⌈sk⌉₆₄·2 bytes within 256 MiB); otherwise dQ goes through an fp32
// accumulator the caller zeroes.
bool dp_in_workspace(int64_t b, int64_t sq, int64_t sk) {
  const int64_t need = b * ((sq + 63) / 64 * 64) * ((sk + 63) / 64 * 64) * 2;
  return need <= int64_t{256} << 20;
}

// The backward graph, as SDPABackwardNode expands it (MHA, no bias, dropout or padding).
void backward_graph(Builder& g, int64_t b, int64_t sq, int64_t sk, int64_t d, cudnnDataType_t io, bool causal) {
  const std::vector<int64_t> qdim{b, 1, sq, d}, qstr{sq * d, sq * d, d, 1}, kdim{b, 1, sk, d}, kstr{sk * d, sk * d, d, 1};
  const std::vector<int64_t> tdim{b, 1, d, sk}, tstr{sk * d, sk * d, 1, d};  // K and V transposed
  const std::vector<int64_t> sdim{b, 1, sq, sk}, sstr{sq * sk, sq * sk, sk, 1}, rdim{b, 1, sq, 1}, rstr{sq, sq, 1, 1};
  const std::vector<int64_t> ptdim{b, 1, sk, sq}, ptstr{sq * sk, sq * sk, 1, sk};  // the scores transposed
  auto q = g.tensor(kQ, io, qdim, qstr);
  auto kt = g.tensor(kK, io, tdim, tstr);
  auto vt = g.tensor(kV, io, tdim, tstr);
  auto o = g.tensor(kO, io, qdim, qstr);
  auto dout = g.tensor(kDO, io, qdim, qstr);
  auto stats = g.tensor(kStats, CUDNN_DATA_FLOAT, rdim, rstr);
  auto scale = g.tensor(kScale, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  auto one = g.tensor(kOne, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  auto dq = g.tensor(kDQ, io, qdim, qstr);
  auto dk = g.tensor(kDK, io, kdim, kstr);
  auto dv = g.tensor(kDV, io, kdim, kstr);
  // D = Σ_row dO ∘ O (× 1: the dropout scale's place)
  auto dod = g.scratch(CUDNN_DATA_FLOAT, qdim, qstr);
  g.pointwise(CUDNN_POINTWISE_MUL, dout, o, dod);
  auto dsum = g.scratch(CUDNN_DATA_FLOAT, rdim, rstr);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, dod, dsum);
  auto dd = g.scratch(CUDNN_DATA_FLOAT, rdim, rstr);
  g.pointwise(CUDNN_POINTWISE_MUL, dsum, one, dd);
  // P = exp(scale·Q·Kᵀ − Stats), masked
  auto last = scaled_scores(g, q, kt, scale, causal, sdim, sstr, CUDNN_DATA_INT32);
  auto centred = g.scratch(CUDNN_DATA_FLOAT, sdim, sstr);
  g.pointwise(CUDNN_POINTWISE_SUB, last, stats, centred);
  auto p = g.scratch(CUDNN_DATA_FLOAT, sdim, sstr);
  g.pointwise(CUDNN_POINTWISE_EXP, centred, nullptr, p);
  // dV = Pᵀ·dO
  auto pt = g.scratch(io, ptdim, ptstr);
  g.reshape(p, pt);
  g.matmul(pt, dout, dv);
  // dS = P ∘ (dO·Vᵀ − D) × scale
  auto dp = g.scratch(CUDNN_DATA_FLOAT, sdim, sstr);
  g.matmul(dout, vt, dp);
  auto dp1 = g.scratch(CUDNN_DATA_FLOAT, sdim, sstr);
  g.pointwise(CUDNN_POINTWISE_MUL, dp, one, dp1);
  auto dp2 = g.scratch(CUDNN_DATA_FLOAT, sdim, sstr);
  g.pointwise(CUDNN_POINTWISE_SUB, dp1, dd, dp2);
  auto dp3 = g.scratch(CUDNN_DATA_FLOAT, sdim, sstr);
  g.pointwise(CUDNN_POINTWISE_MUL, dp2, p, dp3);
  auto ds = g.scratch(CUDNN_DATA_FLOAT, sdim, sstr);
  g.pointwise(CUDNN_POINTWISE_MUL, dp3, scale, ds);
  // dK = dSᵀ·Q
  auto dst = g.scratch(io, ptdim, ptstr);
  g.reshape(ds, dst);
  g.matmul(dst, q, dk);
  // dQ = dS·K, K read back from its transposed view
  auto k = g.scratch(CUDNN_DATA_FLOAT, kdim, kstr);
  g.reshape(kt, k);
  if (dp_in_workspace(b, sq, sk)) {
    g.matmul(ds, k, dq);
  } else {
    auto acc = g.tensor(kDQAccum, CUDNN_DATA_FLOAT, qdim, qstr, false, false, CUDNN_TENSOR_REORDERING_F16x16);
    g.matmul(ds, k, acc);
    g.pointwise(CUDNN_POINTWISE_IDENTITY, acc, nullptr, dq);
  }
}

}  // namespace

struct CudnnAttention::Plan {
  cudnnBackendDescriptor_t plan = nullptr;
  int64_t workspace = 0;
  bool causal = false;
  bool dq_accum = false;  // the backward's dQ goes through the fp32 accumulator
  ~Plan() {
    if (plan) api().drop(plan);
  }
};

CudnnAttention::CudnnAttention() = default;

CudnnAttention::~CudnnAttention() {
  plans_.clear();
  if (workspace_) cudaFree(workspace_);
  if (dq_accum_) cudaFree(dq_accum_);
  if (handle_) api().destroy(static_cast<cudnnHandle_t>(handle_));
}

const std::string& CudnnAttention::unavailable() { return api().why; }

// The plan for one shape and direction: the graph above, then the first engine configuration of
// the heuristics (mode A) that finalises.
bool CudnnAttention::plan_for(const Shape& s, bool bwd, Plan*& out, Diagnostics& diags) {
  auto key = std::make_tuple(s.planes, s.rows_q, s.rows_k, s.dim, s.fp16, s.causal, bwd);
  auto it = plans_.find(key);
  if (it != plans_.end()) return out = it->second.get(), true;
  if (!handle_) {
    cudnnHandle_t h = nullptr;
    cudnnStatus_t st = api().create(&h);
    if (st != CUDNN_STATUS_SUCCESS) return diags.fail(std::string("cudnnCreate: ") + api().error_string(st));
    handle_ = h;
  }
  const int64_t b = s.planes, sq = s.rows_q, sk = s.rows_k, d = s.dim;
  const cudnnDataType_t io = s.fp16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
  Builder g;
  if (bwd) backward_graph(g, b, sq, sk, d, io, s.causal);
  else forward_graph(g, b, sq, sk, d, io, s.causal);

  cudnnBackendDescriptor_t graph = g.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  void* h = handle_;
  g.set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(g.ops.size()), g.ops.data(), "graph ops");
  g.set(graph, kGraphHandle, CUDNN_TYPE_HANDLE, 1, &h, "graph handle");
  g.finalize(graph, "the attention graph");
  cudnnBackendDescriptor_t heur = g.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  g.set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph, "heuristics graph");
  g.set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristics mode");
  g.finalize(heur, "heuristics finalize");
  if (!g.error.empty()) return diags.fail("cuDNN attention graph: " + g.error);
  // The engine configurations the heuristics rank, tried in order until one makes a plan.
  constexpr int kMaxConfigs = 16;
  std::vector<cudnnBackendDescriptor_t> cfgs;
  for (int i = 0; i < kMaxConfigs; ++i) cfgs.push_back(g.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
  int64_t n = 0;
  if (!g.error.empty() ||
      !g.check(api().get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, kMaxConfigs, &n, cfgs.data()),
               "heuristics results"))
    return diags.fail(std::string("cuDNN attention ") + (bwd ? "backward" : "forward") + " graph: " + g.error);
  std::string tried;
  for (int64_t i = 0; i < n; ++i) {
    cudnnBackendDescriptor_t plan = nullptr;
    if (api().make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) != CUDNN_STATUS_SUCCESS) continue;
    bool ok = api().set(plan, kPlanHandle, CUDNN_TYPE_HANDLE, 1, &h) == CUDNN_STATUS_SUCCESS &&
              api().set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[static_cast<size_t>(i)]) ==
                  CUDNN_STATUS_SUCCESS;
    cudnnStatus_t st = ok ? api().finalize(plan) : CUDNN_STATUS_BAD_PARAM;
    if (st != CUDNN_STATUS_SUCCESS) {
      tried += std::string(tried.empty() ? "" : "; ") + api().error_string(st);
      api().drop(plan);
      continue;
    }
    auto made = std::make_unique<Plan>();
    made->plan = plan;
    made->causal = s.causal;
    made->dq_accum = bwd && !dp_in_workspace(b, sq, sk);
    int64_t got = 0;
    api().get(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got, &made->workspace);
    out = made.get();
    plans_[key] = std::move(made);
    return true;
  }
  return diags.fail(std::string("cuDNN offers no engine for this attention ") + (bwd ? "backward" : "forward") + " tile (" +
                    std::to_string(n) + " configurations" + (tried.empty() ? std::string(")") : ": " + tried + ")"));
}

bool CudnnAttention::grow(void*& p, size_t& have, size_t need, const char* what, Diagnostics& diags) {
  if (need <= have) return true;
  if (p) cudaFree(p);
  p = nullptr;
  have = 0;
  if (cudaMalloc(&p, need) != cudaSuccess)
    return diags.fail(std::string("cudaMalloc of ") + what + " (" + std::to_string(need) + " bytes)");
  have = need;
  return true;
}

// Executes plan p with the tensors `uids` at `ptrs` (the scale, and the mask's −inf where the
// graph has a mask, added here) and the workspace.
bool CudnnAttention::run(Plan& p, std::vector<int64_t> uids, std::vector<void*> ptrs, void* stream, Diagnostics& diags) {
  cudnnStatus_t st = api().set_stream(static_cast<cudnnHandle_t>(handle_), static_cast<cudaStream_t>(stream));
  if (st != CUDNN_STATUS_SUCCESS) return diags.fail(std::string("cudnnSetStream: ") + api().error_string(st));
  if (!grow(workspace_, workspace_bytes_, static_cast<size_t>(p.workspace), "cuDNN's workspace", diags)) return false;
  // (The frontend's "−inf": the lowest float, so that a row never sees exp(−inf − −inf).)
  float neg_inf = std::numeric_limits<float>::lowest();
  if (p.causal) ptrs.push_back(&neg_inf), uids.push_back(kNegInf);  // only a masked graph has the mask's value
  const auto count = static_cast<int64_t>(uids.size());
  Builder g;
  cudnnBackendDescriptor_t pack = g.make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  g.set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, count, uids.data(), "variant pack uids");
  g.set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, count, ptrs.data(), "variant pack pointers");
  g.set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace_, "variant pack workspace");
  g.finalize(pack, "variant pack");
  if (g.error.empty()) g.check(api().execute(static_cast<cudnnHandle_t>(handle_), p.plan, pack), "cudnnBackendExecute");
  if (!g.error.empty()) return diags.fail("cuDNN attention tile: " + g.error);
  return true;
}

bool CudnnAttention::forward(const Shape& s, const void* q, const void* kv, void* o_t, float* stats, void* stream, Diagnostics& diags) {
  if (!api().why.empty()) return diags.fail(api().why);
  Plan* p = nullptr;
  if (!plan_for(s, false, p, diags)) return false;
  const size_t half = size_t{s.planes} * s.rows_k * s.dim * 2;
  float scale = s.scale;
  auto* k = const_cast<void*>(kv);
  return run(*p, {kQ, kK, kV, kScale, kO, kStats}, {const_cast<void*>(q), k, static_cast<unsigned char*>(k) + half, &scale, o_t, stats},
             stream, diags);
}

bool CudnnAttention::backward(const Shape& s, const void* q, const void* kv, const void* o, const void* dout, const float* stats, void* dq,
                              void* dk, void* dv, void* stream, Diagnostics& diags) {
  if (!api().why.empty()) return diags.fail(api().why);
  Plan* p = nullptr;
  if (!plan_for(s, true, p, diags)) return false;
  const size_t half = size_t{s.planes} * s.rows_k * s.dim * 2;
  float scale = s.scale, one = 1.f;
  auto* k = const_cast<void*>(kv);
  std::vector<int64_t> uids = {kQ, kK, kV, kO, kDO, kStats, kScale, kOne, kDQ, kDK, kDV};
  std::vector<void*> ptrs = {const_cast<void*>(q),
                             k,
                             static_cast<unsigned char*>(k) + half,
                             const_cast<void*>(o),
                             const_cast<void*>(dout),
                             const_cast<float*>(stats),
                             &scale,
                             &one,
                             dq,
                             dk,
                             dv};
  if (p->dq_accum) {  // zeroed before every run, as the frontend's workspace modification does
    const size_t bytes = size_t{s.planes} * s.rows_q * s.dim * 4;
    if (!grow(dq_accum_, dq_accum_bytes_, bytes, "cuDNN's dQ accumulator", diags)) return false;
    if (cudaMemsetAsync(dq_accum_, 0, bytes, static_cast<cudaStream_t>(stream)) != cudaSuccess)
      return diags.fail("cudaMemsetAsync of cuDNN's dQ accumulator");
    uids.push_back(kDQAccum), ptrs.push_back(dq_accum_);
  }
  return run(*p, std::move(uids), std::move(ptrs), stream, diags);
}

}  // namespace sg::cuda
