#include "exec/cuda/nccl_comm.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <utility>

namespace sg::cuda {

namespace {

bool nccl_ok(ncclResult_t r, const char* what, Diagnostics& diags, ncclComm_t comm = nullptr) {
  if (r == ncclSuccess) return true;
  std::string msg = std::string(what) + ": " + ncclGetErrorString(r);
  if (comm) {
    const char* last = ncclGetLastError(comm);
    if (last && *last) msg += " (" + std::string(last) + ")";
  }
  return diags.fail(std::move(msg));
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F16: return ncclFloat16;
    case DType::BF16: return ncclBfloat16;
    case DType::F32: return ncclFloat32;
    case DType::F64: return ncclFloat64;
    case DType::I8: return ncclInt8;
    case DType::I32: return ncclInt32;
    case DType::I64: return ncclInt64;
    case DType::U8: return ncclUint8;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Min: return ncclMin;
    case ReduceOp::Prod: return ncclProd;
  }
  return ncclSum;
}

ncclComm_t as_comm(void* c) { return static_cast<ncclComm_t>(c); }
cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

NcclComm::~NcclComm() {
  for (void* c : comms_)
    if (c) ncclCommDestroy(as_comm(c));
  if (world_) ncclCommDestroy(as_comm(world_));
  if (scratch_) cudaFree(scratch_);
}

void NcclComm::abort() {
  for (void*& c : comms_)
    if (c) ncclCommAbort(as_comm(c)), c = nullptr;
  if (world_) ncclCommAbort(as_comm(world_)), world_ = nullptr;
}

bool NcclComm::unique_id(std::string& id, Diagnostics& diags) {
  ncclUniqueId u;
  if (!nccl_ok(ncclGetUniqueId(&u), "ncclGetUniqueId", diags)) return false;
  id.assign(u.internal, sizeof u.internal);
  return true;
}

bool NcclComm::init(const std::string& id, int nranks, int rank, void* stream, Diagnostics& diags) {
  ncclUniqueId u;
  if (id.size() != sizeof u.internal) return diags.fail("a bootstrap id of the wrong size");
  std::memcpy(u.internal, id.data(), sizeof u.internal);
  ncclComm_t c = nullptr;
  if (!nccl_ok(ncclCommInitRank(&c, nranks, u, rank), "ncclCommInitRank", diags)) return false;
  world_ = c;
  stream_ = stream;
  name_ = "NCCL " + nccl_version();
  cudaError_t e = cudaMalloc(&scratch_, sizeof(float));
  if (e == cudaSuccess) e = cudaMemset(scratch_, 0, sizeof(float));
  if (e != cudaSuccess) return diags.fail(std::string("cudaMalloc: ") + cudaGetErrorString(e));
  return true;
}

bool NcclComm::add_group(uint32_t start, uint32_t count, uint32_t stride, bool member, int& id, Diagnostics& diags) {
  if (auto it = made_.find({start, count, stride}); it != made_.end()) return id = it->second, true;
  int me = 0;
  if (!nccl_ok(ncclCommUserRank(as_comm(world_), &me), "ncclCommUserRank", diags)) return false;
  ncclComm_t c = nullptr;
  // Collective over the world; members keep their world order (key = world rank).
  if (!nccl_ok(ncclCommSplit(as_comm(world_), member ? 1 : NCCL_SPLIT_NOCOLOR, me, &c, nullptr), "ncclCommSplit", diags, as_comm(world_)))
    return false;
  id = static_cast<int>(comms_.size());
  made_[{start, count, stride}] = id;
  comms_.push_back(member ? c : nullptr);
  return true;
}

bool NcclComm::group_start(Diagnostics& diags) { return nccl_ok(ncclGroupStart(), "ncclGroupStart", diags); }

bool NcclComm::group_end(double timeout_s, Diagnostics& diags) {
  (void)timeout_s;  // enqueued only: the executor's drain (DeviceOps::select_lane) times the run
  return nccl_ok(ncclGroupEnd(), "ncclGroupEnd", diags, as_comm(world_));
}

bool NcclComm::send(const unsigned char* p, size_t bytes, uint32_t peer, Diagnostics& diags) {
  return nccl_ok(ncclSend(p, bytes, ncclUint8, static_cast<int>(peer), as_comm(world_), as_stream(stream_)), "ncclSend", diags,
                 as_comm(world_));
}

bool NcclComm::recv(unsigned char* p, size_t bytes, uint32_t peer, Diagnostics& diags) {
  return nccl_ok(ncclRecv(p, bytes, ncclUint8, static_cast<int>(peer), as_comm(world_), as_stream(stream_)), "ncclRecv", diags,
                 as_comm(world_));
}

bool NcclComm::collective(const Coll& c, Diagnostics& diags) {
  if (c.comm < 0 || static_cast<size_t>(c.comm) >= comms_.size() || !comms_[static_cast<size_t>(c.comm)])
    return diags.fail("a collective on a group this rank is not in");
  ncclComm_t comm = as_comm(comms_[static_cast<size_t>(c.comm)]);
  cudaStream_t st = as_stream(stream_);
  ncclDataType_t t = nccl_type(c.type);
  ncclRedOp_t op = nccl_op(c.op);
  size_t block = c.count * dtype_size(c.type);
  unsigned char* mine = c.p + block * static_cast<size_t>(c.index);
  ncclResult_t r = ncclSuccess;
  switch (c.kind) {
    case CollKind::Barrier: r = ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm, st); break;
    case CollKind::Allreduce: r = ncclAllReduce(c.p, c.p, c.count, t, op, comm, st); break;
    case CollKind::Bcast: r = ncclBroadcast(c.p, c.p, c.count, t, c.root, comm, st); break;
    case CollKind::Reduce: r = ncclReduce(c.p, c.p, c.count, t, op, c.root, comm, st); break;
    case CollKind::Allgather: r = ncclAllGather(mine, c.p, c.count, t, comm, st); break;
    case CollKind::ReduceScatter: r = ncclReduceScatter(c.p, mine, c.count, t, op, comm, st); break;
    case CollKind::Alltoall:
      // NCCL's own all-to-all is point-to-point in a group (nested in the executor's group).
      r = ncclGroupStart();
      for (int j = 0; j < c.members && r == ncclSuccess; ++j) {
        r = ncclSend(c.in + block * static_cast<size_t>(j), c.count, t, j, comm, st);
        if (r == ncclSuccess) r = ncclRecv(c.p + block * static_cast<size_t>(j), c.count, t, j, comm, st);
      }
      if (ncclResult_t e = ncclGroupEnd(); r == ncclSuccess) r = e;
      break;
  }
  return nccl_ok(r, "an NCCL collective", diags, comm);
}

}  // namespace sg::cuda
