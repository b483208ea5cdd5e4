// The IPC transport on the dataflow path (ExecOptions::ipc): ranks of one node move point-to-point
// messages device to device through each other's memory, what NCCL's P2P transport and a
// CUDA-aware MPI's IPC rendezvous do inside a node. Setup maps every other rank's buffers once
// (DeviceOps::ipc_export / ipc_open, handles exchanged over MPI). A message is then a descriptor
// sent where the data would have gone (same communicator, peer and tag, so MPI's matching,
// wildcards and the matched probes work unchanged): the sender's world rank, buffer, offset and
// bytes. The receiver copies the bytes from the sender's buffer into the destination (or its
// staging slot) on its transfer lane, and once that copy's mark is reached it sends an
// acknowledgement back, which completes the send: a send completes when its message has been
// received, as with NCCL or MPI's rendezvous (not when an eager copy left).
//
// Why a pull, not a push: the receiver knows where the bytes go (its destination, or staging when
// the message came early) only when it matches the descriptor; the sender's source is fixed when
// the send starts, and it stays untouched until the acknowledgement (the send's completion).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "exec/executor/executor_impl.hpp"

namespace sg::exec {

namespace {

constexpr int kAckTags = 32767;  // MPI promises tags up to at least this

}  // namespace

// Collective over the world: which transfers go by IPC (their peer on this node); every rank
// exports its buffers, gathers the others' handles and opens those of its node; every rank fails
// together.
bool Executor::Impl::setup_ipc(Diagnostics& diags) {
  ipc = o.ipc && dev;
  if (!ipc) return true;
  int n = 0;
  MPI_Comm_size(world, &n);
  auto same_node = [&](uint32_t p) {
    return o.node_of.empty() || (p < o.node_of.size() && me < o.node_of.size() && o.node_of[p] == o.node_of[me]);
  };
  bool one_node = true;
  for (int p = 0; p < n; ++p) one_node = one_node && same_node(static_cast<uint32_t>(p));
  ipc_step.assign(g.size(), 0);
  bool fine = true;
  for (StepId s = 0; s < g.size() && fine; ++s) {
    if (g.kind(s) != StepKind::Send && g.kind(s) != StepKind::Recv) continue;
    uint32_t peer = g.local(s) ? g.p2p_info(s).peer : g.peer(s);
    if (peer == kAnyRank) {
      // A receive from any source cannot tell a descriptor from data before it matches: only
      // where every rank is on this node.
      if (!one_node) {  // refused at its line
        diags.error(g.loc(s),
                    "--transport ipc: this receive from any source cannot tell a message that comes by IPC from one that comes by "
                    "MPI, and the ranks span several nodes (use --transport staged or cuda-aware)");
        fine = false;
      }
      ipc_step[s] = 1;
      continue;
    }
    ipc_step[s] = same_node(peer) ? 1 : 0;
  }
  const size_t nb = dbufs.size(), hb = DeviceOps::kIpcHandleBytes;
  std::vector<unsigned char> mine(nb * hb, 0), all(static_cast<size_t>(n) * nb * hb);
  std::vector<uint64_t> sizes(nb), all_sizes(static_cast<size_t>(n) * nb);
  bool ok = fine;
  for (size_t b = 0; b < nb && ok; ++b) {
    sizes[b] = uint64_t{g.buffers[b].chunks} * g.buffers[b].chunk_bytes;
    size_t from = diags.size();
    ok = dev->ipc_export(dbufs[b], mine.data() + b * hb, diags);
    if (!ok) diags.locate_from(from, g.buffers[b].loc, "--transport ipc: buffer " + g.buffers[b].name + " on " + dev->name() + ": ");
  }
  int rc = MPI_Allgather(mine.data(), static_cast<int>(nb * hb), MPI_BYTE, all.data(), static_cast<int>(nb * hb), MPI_BYTE, world);
  if (rc == MPI_SUCCESS)
    rc = MPI_Allgather(sizes.data(), static_cast<int>(nb), MPI_UINT64_T, all_sizes.data(), static_cast<int>(nb), MPI_UINT64_T, world);
  if (rc != MPI_SUCCESS) return diags.fail("MPI_Allgather: " + mpi_error_string(rc));
  ipc_base.assign(static_cast<size_t>(n), {});
  ipc_size.assign(static_cast<size_t>(n), {});
  for (size_t p = 0; p < static_cast<size_t>(n); ++p) {
    ipc_size[p].assign(all_sizes.begin() + static_cast<std::ptrdiff_t>(p * nb),
                       all_sizes.begin() + static_cast<std::ptrdiff_t>((p + 1) * nb));
    if (p == me) {  // a message to itself: read from its own buffers
      ipc_base[p] = dbufs;
      continue;
    }
    if (!ok || !same_node(static_cast<uint32_t>(p))) continue;
    ipc_base[p].assign(nb, nullptr);
    for (size_t b = 0; b < nb && ok; ++b) {
      size_t from = diags.size();
      ipc_base[p][b] = dev->ipc_open(all.data() + (p * nb + b) * hb, ipc_size[p][b], diags);
      ok = ipc_base[p][b] != nullptr;
      if (!ok)
        diags.locate_from(from, g.buffers[b].loc,
                          "--transport ipc: rank " + std::to_string(me) + " opening buffer " + g.buffers[b].name + " of rank " +
                              std::to_string(p) + ": ");
    }
  }
  int bad = ok ? 0 : 1, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, world);
  if (!any) {
    MPI_Comm_dup(world, &ipc_comm);
    MPI_Comm_set_errhandler(ipc_comm, MPI_ERRORS_RETURN);
    owned_comms.push_back(ipc_comm);
    // Acknowledgement tags cycle through every tag MPI allows: a tag comes back only after that
    // many more sends to one peer, far more than can be in flight at once.
    int* ub = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(ipc_comm, MPI_TAG_UB, &ub, &flag);
    ipc_tags = flag && ub && *ub > kAckTags ? *ub : kAckTags;
  }
  ipc_in.assign(g.size(), IpcDesc{});
  ipc_out.assign(g.size(), IpcDesc{});
  ipc_dst.assign(g.size(), nullptr);
  ipc_seq.assign(static_cast<size_t>(n), 0);
  return !any;
}

// Unmaps the others' buffers; then every rank waits for the rest before its own buffers go (a
// peer may still hold them open).
void Executor::Impl::close_ipc() {
  if (ipc_base.empty()) return;
  for (size_t p = 0; p < ipc_base.size(); ++p)
    for (size_t b = 0; b < ipc_base[p].size() && p != me; ++b)
      if (ipc_base[p][b]) dev->ipc_close(ipc_base[p][b], ipc_size[p][b]);
  ipc_base.clear();
  MPI_Barrier(world);
}

// A send: the acknowledgement's receive first (it completes the send), then the descriptor. The
// descriptor's request is freed: the acknowledgement comes after the descriptor was received, and
// ipc_out[s] outlives the run.
int Executor::Impl::ipc_isend(StepId s, const Range& r, uint32_t peer_world, int peer, int mpi_tag, MPI_Comm comm, MPI_Request* q) {
  IpcDesc& d = ipc_out[s];
  d.src = me;
  d.buf = r.buf;
  d.off = uint64_t{r.lo} * g.buffers[r.buf].chunk_bytes;
  d.bytes = bytes(r);
  d.ack = static_cast<int32_t>(ipc_seq[peer_world]++ % ipc_tags);
  int rc = MPI_Irecv(nullptr, 0, MPI_BYTE, static_cast<int>(peer_world), d.ack, ipc_comm, q);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Request dq;
  rc = MPI_Isend(&d, sizeof d, MPI_BYTE, peer, mpi_tag, comm, &dq);
  if (rc == MPI_SUCCESS) {
    MPI_Request_free(&dq);
  } else {  // no acknowledgement will come
    MPI_Cancel(q);
    MPI_Request_free(q);
  }
  return rc;
}

int Executor::Impl::ipc_irecv(StepId s, unsigned char* dst, int peer, int mpi_tag, MPI_Comm comm, MPI_Request* q) {
  ipc_dst[s] = dst;
  return MPI_Irecv(&ipc_in[s], sizeof(IpcDesc), MPI_BYTE, peer, mpi_tag, comm, q);
}

int Executor::Impl::ipc_imrecv(StepId s, unsigned char* dst, MPI_Message* msg, MPI_Request* q) {
  ipc_dst[s] = dst;
  return MPI_Imrecv(&ipc_in[s], sizeof(IpcDesc), MPI_BYTE, msg, q);
}

// A descriptor came for receive s: its bytes are copied from the sender's buffer on lane 1, and
// the acknowledgement waits for that copy's mark. The receive itself is done for the dataflow
// now: what reads the bytes waits for lane 1's marks (on the device, or at a gate).
bool Executor::Impl::ipc_pull(StepId s) {
  cur_step = s;
  const IpcDesc& d = ipc_in[s];
  const uint64_t room = bytes(g.range(s));
  std::string bad;
  if (d.src >= ipc_base.size() || d.buf >= ipc_base[d.src].size()) bad = "a descriptor from no peer this rank mapped";
  else if (d.off > ipc_size[d.src][d.buf] || d.bytes > ipc_size[d.src][d.buf] - d.off) bad = "a descriptor past the sender's buffer";
  else if (d.bytes > room)
    bad =
        "a message of " + std::to_string(d.bytes) + " bytes for a receive of " + std::to_string(room) + " (MPI would say MPI_ERR_TRUNCATE)";
  if (!bad.empty()) {
    fail(s, "--transport ipc: " + bad + " at " + describe(s));
    return false;
  }
  if (flow_lanes && !to_lane(1)) return false;
  Range r = g.range(s);
  if (d.bytes &&
      !dev_ok(dev->copy(ipc_dst[s], ipc_base[d.src][d.buf] + d.off, d.bytes, dev_diags), "a copy from a peer's device memory", &r, s))
    return false;
  ipc_acks.push_back(IpcAck{flow_lanes ? new_mark() : -1, d.src, d.ack});
  if (!flow_lanes) ipc_send_acks();  // (the copy is done: no lanes)
  return !failed();
}

// Sends the acknowledgements whose copies are done, in the order they were enqueued (lane 1 runs
// in order). True when it sent one.
bool Executor::Impl::ipc_send_acks() {
  if (flow_lanes && !dev->progress(dev_diags)) return dev_ok(false, "device work", nullptr, kNoStep);
  bool any = false;
  while (!ipc_acks.empty() && !failed()) {
    const IpcAck a = ipc_acks.front();
    if (a.mark >= 0 && !dev->mark_reached(a.mark)) break;
    ipc_acks.pop_front();
    MPI_Request q;
    if (!check_rc(MPI_Isend(nullptr, 0, MPI_BYTE, static_cast<int>(a.to), a.tag, ipc_comm, &q), "MPI_Isend (an acknowledgement)", kNoStep))
      return false;
    track(q, kNoStep, Req::IpcAck);
    ++ipc_acks_out;
    any = true;
  }
  return any;
}

}  // namespace sg::exec
