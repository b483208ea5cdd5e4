#include "exec/mpi/mpi_stream_comm.hpp"

#include <chrono>
#include <cstdint>

#include "exec/mpi/mpi_types.hpp"

namespace sg::exec {

MpiStreamComm::MpiStreamComm(MPI_Comm world, DeviceOps* dev) : dev_(dev) {
  MPI_Comm_dup(world, &p2p_);
  MPI_Comm_set_errhandler(p2p_, MPI_ERRORS_RETURN);
}

MpiStreamComm::~MpiStreamComm() {
  int done = 0;
  MPI_Finalized(&done);
  if (done) return;  // exec frees it before MPI_Finalize; a caller that did not lost its communicators with MPI
  for (MPI_Comm& c : comms_)
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  if (p2p_ != MPI_COMM_NULL) MPI_Comm_free(&p2p_);
}

bool MpiStreamComm::started(int rc, const char* what, Diagnostics& diags) {
  if (rc == MPI_SUCCESS) return true;
  diags.fail(std::string(what) + ": " + mpi_error_string(rc));
  return false;
}

bool MpiStreamComm::add_group(uint32_t start, uint32_t count, uint32_t stride, bool member, int& id, Diagnostics& diags) {
  if (auto it = made_.find({start, count, stride}); it != made_.end()) return id = it->second, true;
  int me = 0;
  MPI_Comm_rank(p2p_, &me);
  // Like ncclCommSplit: collective over the world; members keep their order (key = world rank).
  MPI_Comm c = MPI_COMM_NULL;
  if (!started(MPI_Comm_split(p2p_, member ? 1 : MPI_UNDEFINED, me, &c), "MPI_Comm_split", diags)) return false;
  if (c != MPI_COMM_NULL) MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  id = static_cast<int>(comms_.size());
  made_[{start, count, stride}] = id;
  comms_.push_back(c);
  return true;
}

bool MpiStreamComm::group_start(Diagnostics& diags) {
  (void)diags;
  pending_.clear();
  return true;
}

bool MpiStreamComm::send(const unsigned char* p, size_t bytes, uint32_t peer, Diagnostics& diags) {
  return p2p(false, const_cast<unsigned char*>(p), bytes, peer, diags);
}

bool MpiStreamComm::recv(unsigned char* p, size_t bytes, uint32_t peer, Diagnostics& diags) { return p2p(true, p, bytes, peer, diags); }

// A send (p only read) or a receive, started when its group runs.
bool MpiStreamComm::p2p(bool receive, unsigned char* p, size_t bytes, uint32_t peer, Diagnostics& diags) {
  if (bytes > static_cast<size_t>(INT32_MAX)) return diags.fail("a message over 2 GiB");
  pending_.push_back([this, receive, p, bytes, peer](Diagnostics& e) {
    MPI_Request q;
    // Tag 0 for every transfer: MPI then matches them between two ranks in issue order, as NCCL.
    int n = static_cast<int>(bytes), rc = receive ? MPI_Irecv(p, n, MPI_BYTE, static_cast<int>(peer), 0, p2p_, &q)
                                                  : MPI_Isend(p, n, MPI_BYTE, static_cast<int>(peer), 0, p2p_, &q);
    if (!started(rc, receive ? "MPI_Irecv" : "MPI_Isend", e)) return false;
    reqs_.push_back(q), want_.push_back(receive ? bytes : SIZE_MAX), peer_.push_back(peer);
    return true;
  });
  return true;
}

bool MpiStreamComm::collective(const Coll& c, Diagnostics& diags) {
  pending_.push_back([this, c](Diagnostics& e) { return start_collective(c, e); });
  (void)diags;
  return true;
}

bool MpiStreamComm::start_collective(const Coll& c, Diagnostics& diags) {
  if (c.comm < 0 || static_cast<size_t>(c.comm) >= comms_.size() || comms_[static_cast<size_t>(c.comm)] == MPI_COMM_NULL)
    return diags.fail("a collective on a group this rank is not in");
  MPI_Comm comm = comms_[static_cast<size_t>(c.comm)];
  if (c.count > static_cast<size_t>(INT32_MAX)) return diags.fail("a collective over 2^31 elements");
  int n = static_cast<int>(c.count);
  MPI_Datatype t = mpi_type(c.type);
  MPI_Op op = mpi_op(c.op, c.type);
  size_t block = c.count * dtype_size(c.type);
  unsigned char* mine = c.p + block * static_cast<size_t>(c.index);
  MPI_Request q = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  switch (c.kind) {
    case CollKind::Barrier: rc = MPI_Ibarrier(comm, &q); break;
    case CollKind::Allreduce: rc = MPI_Iallreduce(MPI_IN_PLACE, c.p, n, t, op, comm, &q); break;
    case CollKind::Bcast: rc = MPI_Ibcast(c.p, n, t, c.root, comm, &q); break;
    case CollKind::Reduce:
      rc = c.index == c.root ? MPI_Ireduce(MPI_IN_PLACE, c.p, n, t, op, c.root, comm, &q)
                             : MPI_Ireduce(c.p, nullptr, n, t, op, c.root, comm, &q);
      break;
    case CollKind::Allgather: rc = MPI_Iallgather(MPI_IN_PLACE, 0, t, c.p, n, t, comm, &q); break;
    // NCCL's in-place reduce-scatter: the result lands in this member's block of the input. MPI
    // forbids that overlap, so the input is read from a copy (kept until the group ends).
    case CollKind::ReduceScatter:
      scratch_.emplace_back(c.p, c.p + block * static_cast<size_t>(c.members));
      rc = MPI_Ireduce_scatter_block(scratch_.back().data(), mine, n, t, op, comm, &q);
      break;
    case CollKind::Alltoall: rc = MPI_Ialltoall(c.in, n, t, c.p, n, t, comm, &q); break;
  }
  if (!started(rc, "an MPI collective", diags)) return false;
  reqs_.push_back(q), want_.push_back(SIZE_MAX), peer_.push_back(UINT32_MAX);
  return true;
}

bool MpiStreamComm::group_end(double timeout_s, Diagnostics& diags) {
  auto job = [this, starts = std::move(pending_), timeout_s](Diagnostics& e) { return run_group(starts, timeout_s, e); };
  pending_.clear();
  return dev_ ? dev_->run_on_lane(std::move(job), diags) : job(diags);
}

bool MpiStreamComm::run_group(const std::vector<std::function<bool(Diagnostics&)>>& starts, double timeout_s, Diagnostics& diags) {
  reqs_.clear();
  scratch_.clear();
  want_.clear();
  peer_.clear();
  for (const auto& start : starts)
    if (!start(diags)) return false;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<MPI_Status> st(reqs_.size());
  for (;;) {
    int done = 0;
    int rc = MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &done, st.data());
    if (rc != MPI_SUCCESS) return diags.fail("a transfer of the group failed: " + mpi_error_string(rc));
    if (done) break;
    if (timeout_s > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
      diags.fail("the group did not complete in " + std::to_string(static_cast<int>(timeout_s)) + " s");
      return false;
    }
  }
  for (size_t i = 0; i < want_.size(); ++i) {
    if (want_[i] == SIZE_MAX) continue;
    int got = 0;
    MPI_Get_count(&st[i], MPI_BYTE, &got);
    if (static_cast<size_t>(got) != want_[i])
      return diags.fail("a receive from rank " + std::to_string(peer_[i]) + " of " + std::to_string(want_[i]) + " bytes got " +
                        std::to_string(got) + " (NCCL needs both sides to give the same count)");
  }
  return true;
}

}  // namespace sg::exec
