// The executor's setup (Executor::setup): this rank's buffers (host, pinned, device), the
// reduction operator, the tags of choreographic transfers, the staging layout, the sources
// messages come from, the successors, the order of collectives per communicator; then the
// communicators (executor_comms.cpp), the attention plan and the stream-ordered plan
// (executor_streamed.cpp). The agreement steps make every rank fail together.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/base/checked.hpp"
#include "core/base/memory.hpp"
#include "core/base/sizes.hpp"
#include "exec/executor/executor_impl.hpp"

namespace sg::exec {

// Setup is collective (communicators, the attention plan): a rank that refuses in its local
// part still takes part in the agreement that follows, so no rank waits in a collective the
// others never enter. Every rank returns false when one does (diags empty where it found nothing).
bool Executor::Impl::setup(Diagnostics& diags) {
  bool local = setup_local(diags) && setup_device(diags);
  int bad = local ? 0 : 1, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, world);
  if (any) return false;
  if (!build_communicators(diags) || !setup_ipc(diags)) return false;
  coll_prev.assign(g.size(), kNoStep);
  coll_next.assign(g.size(), kNoStep);
  std::map<MPI_Comm, StepId> last;
  for (StepId s = 0; s < g.size(); ++s) {
    if (g.kind(s) != StepKind::Collective) continue;
    MPI_Comm c = group_comm[g.coll(s).group];
    auto it = last.find(c);
    if (it != last.end()) coll_prev[s] = it->second, coll_next[it->second] = s;
    last[c] = s;
  }
  probe_count.clear();
  for (const auto& v : from_src) probe_count.push_back(static_cast<uint32_t>(v.size()));
  prepost.clear();
  if (probe && !dev && !o.stream) {
    prepost.assign(g.size(), 0);
    for (size_t i = 0; i < from_src.size(); ++i)
      for (StepId s : from_src[i])
        if (g.start_count(s) == 0) prepost[s] = 1, --probe_count[i];
  }
  // A held message's slot is read only while its step has kHeld, so it is sized once, not reset
  // per run.
  if (probe) held.assign(g.size(), MPI_MESSAGE_NULL);
  pending0.assign(g.size(), 0);
  ready0.clear();
  post0.clear();
  for (StepId s = 0; s < g.size(); ++s) {
    pending0[s] = g.start_count(s);
    if (pending0[s] == 0) ready0.push_back(s);
    bool choreo_recv = g.kind(s) == StepKind::Recv && !g.local(s);
    if ((!prepost.empty() && prepost[s]) || (!probe && choreo_recv)) post0.push_back(s);
  }
  persistent.clear();
  if (!dev && !o.stream && !g.connection_slots) {
    persistent.assign(g.size(), MPI_REQUEST_NULL);
    for (StepId s = 0; s < g.size(); ++s) {
      bool send = g.kind(s) == StepKind::Send && !g.local(s), recv = !prepost.empty() && prepost[s];
      if (!send && !recv) continue;
      Range r = g.range(s);
      if (!fits_count(bytes(r))) continue;  // (refused when the step starts)
      int count = static_cast<int>(bytes(r));
      int rc = send ? MPI_Send_init(mpi_ptr(s, r), count, MPI_BYTE, static_cast<int>(g.peer(s)), tag[s], choreo, &persistent[s])
                    : MPI_Recv_init((g.flags(s) & kFlagReduce) ? mpi_stage(s) : mpi_ptr(s, r), count, MPI_BYTE, static_cast<int>(g.peer(s)),
                                    tag[s], choreo, &persistent[s]);
      if (rc != MPI_SUCCESS) persistent[s] = MPI_REQUEST_NULL;  // the plain call then, which reports the error
    }
  }
  if (!plan_attention(g, world, att, diags)) return false;
  bool ok = setup_attention_memory(diags) && (!o.stream || plan_streams(diags));
  int bad_plan = ok ? 0 : 1, any_plan = 0;
  MPI_Allreduce(&bad_plan, &any_plan, 1, MPI_INT, MPI_MAX, world);
  return !any_plan;
}

// Device mode: one device allocation per buffer and a device staging area.
// A failed allocation is placed at the buffer's declaration.
bool Executor::Impl::setup_device(Diagnostics& diags) {
  dev = o.device;
  dev_direct = dev && o.device_direct;
  if (!dev) return true;
  size_t from = diags.size();
  for (const BufferInfo& b : g.buffers) {
    unsigned char* p = dev->allocate(uint64_t{b.chunks} * b.chunk_bytes, diags);
    if (!p) return diags.locate_from(from, b.loc, "device memory for buffer " + b.name + " on " + dev->name() + ": "), false;
    dbufs.push_back(p);
  }
  dstage = dev->allocate(staging.size, diags);
  if (!dstage) return diags.locate_from(from, Loc{}, "device memory for the staging area on " + dev->name() + ": "), false;
  for (size_t i = 0; i < bufs.size(); ++i)
    if (!bufs[i]->pin(dev, diags)) return diags.locate_from(from, g.buffers[i].loc, "pinned host memory on " + dev->name() + ": "), false;
  if (!staging.pin(dev, diags)) return diags.locate_from(from, Loc{}, "pinned host memory on " + dev->name() + ": "), false;
  return true;
}

// This rank's share of the memory it may use: what the host (or the cgroup, when that is
// tighter) has available, split among the ranks on this host, less a tenth for MPI and the rest.
// A run past it would be killed by the kernel without a word (issue 23); refusing says why.
static uint64_t rank_memory_share(MPI_Comm world, uint32_t& local_ranks, MemoryRoom& room) {
  MPI_Comm node = MPI_COMM_NULL;
  int local = 1;
  if (MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS && node != MPI_COMM_NULL) {
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
  }
  local_ranks = static_cast<uint32_t>(std::max(local, 1));
  room = memory_room();
  return room.available / 10 * 9 / local_ranks;
}

// A refusal that one buffer or step causes is placed at its statement.
bool Executor::Impl::setup_local(Diagnostics& diags) {
  me = static_cast<uint32_t>(g.only_rank);
  uint32_t local_ranks = 1;
  MemoryRoom room;
  const uint64_t share = rank_memory_share(world, local_ranks, room);
  uint64_t need = 0;  // buffers, then staging: checked against the share before allocating
  auto too_much = [&](const std::string& what, Loc where) {
    diags.error(where, "rank " + std::to_string(g.only_rank) + ": " + what + " would take this rank to " +
                           human_bytes(static_cast<double>(need)) + ", more than its share of memory, " +
                           human_bytes(static_cast<double>(share)) + " (" + human_bytes(static_cast<double>(room.available)) +
                           " available" + (room.cgroup_path.empty() ? "" : " under " + room.cgroup_path) + ", for " +
                           std::to_string(local_ranks) + " rank" + (local_ranks == 1 ? "" : "s") +
                           " on this host); choose a smaller --set size");
    return false;
  };
  for (const BufferInfo& b : g.buffers) {
    need = sat_add(need, sat_mul(b.chunks, b.chunk_bytes));
    if (need > share)
      return too_much("buffer " + b.name + " (" + std::to_string(b.chunks) + " x " + std::to_string(b.chunk_bytes) + " bytes)", b.loc);
  }
  for (const BufferInfo& b : g.buffers) {
    if (!dtype_supported(b.dtype))
      return diags.error(b.loc, std::string("buffer ") + b.name + ": dtype " + dtype_name(b.dtype) + " is not executed"), false;
    auto blk = std::make_unique<Block>();
    uint64_t n = 0;
    if (__builtin_mul_overflow(uint64_t{b.chunks}, b.chunk_bytes, &n) || !blk->allocate(n))
      return diags.error(b.loc, "rank " + std::to_string(g.only_rank) + ": buffer " + b.name + " needs " + std::to_string(b.chunks) +
                                    " x " + std::to_string(b.chunk_bytes) +
                                    " bytes, which this process cannot allocate (choose a smaller --set size)"),
             false;
    bufs.push_back(std::move(blk));
  }
  // The reduction operator the postcondition's numbers are computed with.
  bool op_found = false;
  for (StepId s = 0; s < g.size() && !op_found; ++s) {
    StepKind k = g.kind(s);
    if (k == StepKind::Reduce || (k == StepKind::Recv && (g.flags(s) & kFlagReduce))) op = flag_op(g.flags(s)), op_found = true;
    else if (k == StepKind::Collective) {
      CollKind ck = g.coll(s).kind;
      if (ck == CollKind::Allreduce || ck == CollKind::Reduce || ck == CollKind::ReduceScatter) op = g.coll(s).op, op_found = true;
    }
  }
  // Tags of choreographic transfers, staging offsets, successors.
  std::vector<uint32_t> sent(g.nranks, 0), recvd(g.nranks, 0);
  tag.assign(g.size(), 0);
  stage_off.assign(g.size(), UINT64_MAX);
  uint64_t stage = 0;
  int flag = 0;
  void* ub_ptr = nullptr;
  MPI_Comm_get_attr(world, MPI_TAG_UB, &ub_ptr, &flag);
  uint32_t tag_ub = flag && ub_ptr ? static_cast<uint32_t>(*static_cast<int*>(ub_ptr)) : 32767u;
  auto stage_for = [&](StepId s, uint64_t n) {
    stage_off[s] = stage;
    stage += (n + 63) / 64 * 64;
  };
  for (StepId s = 0; s < g.size(); ++s) {
    StepKind k = g.kind(s);
    if ((k == StepKind::Send || k == StepKind::Recv) && !g.local(s)) {
      uint32_t peer = g.peer(s);
      uint32_t seq = k == StepKind::Send ? sent[peer]++ : recvd[peer]++;
      tag[s] = static_cast<int>(seq % (tag_ub + 1));
      if (k == StepKind::Recv) stage_for(s, bytes(g.range(s)));
    } else if (k == StepKind::Recv && (g.flags(s) & kFlagReduce)) {
      stage_for(s, bytes(g.range(s)));
    } else if (k == StepKind::Collective) {
      const CollInfo& c = g.coll(s);
      const BufferInfo& bi = g.buffers[g.range(s).buf];
      if (bi.chunk_bytes % dtype_size(bi.dtype) != 0)
        return diags.error(g.loc(s), "buffer " + bi.name + ": a chunk of " + std::to_string(bi.chunk_bytes) +
                                         " bytes is not a whole number of " + dtype_name(bi.dtype) + " elements, and " + describe(s) +
                                         " hands MPI a count of elements: choose a size that divides evenly"),
               false;
      if (c.kind == CollKind::ReduceScatter || (c.kind == CollKind::Alltoall && c.into.cnt == 0)) stage_for(s, bytes(g.range(s)));
    }
  }
  need = sat_add(need, stage);
  if (need > share) return too_much("the staging area for received messages (" + std::to_string(stage) + " bytes)", Loc{});
  if (!staging.allocate(stage))
    return diags.fail("rank " + std::to_string(g.only_rank) + ": the staging area for received messages needs " + std::to_string(stage) +
                      " bytes, which this process cannot allocate (choose a smaller --set size)");
  {
    std::vector<int64_t> index(g.nranks, -1);
    for (StepId s = 0; s < g.size(); ++s) {
      if (g.kind(s) != StepKind::Recv || g.local(s)) continue;
      uint32_t src = g.peer(s);
      if (index[src] < 0) {
        index[src] = static_cast<int64_t>(srcs.size());
        srcs.push_back(src);
        from_src.emplace_back();
      }
      from_src[static_cast<size_t>(index[src])].push_back(s);
    }
    // A probe per source per poll: worth it for the few sources of rings, trees and
    // recursive doubling; an all-to-all from thousands of sources keeps pre-posted receives.
    // Tags must not wrap, since a tag names the step.
    probe = srcs.size() <= 64;
    for (const auto& v : from_src)
      if (v.size() > uint64_t{tag_ub} + 1) probe = false;
  }
  succ = &g.successor_view();  // the graph's shared view, built once (before any thread could ask)
  return true;
}

// The run's message plan in words, for exec's header: what setup made once (posted receives,
// persistent requests) and, where a path is not taken, why.
std::string Executor::Impl::plan() const {
  uint64_t posted = 0, probed = 0, staged = 0, persist = 0, on_block = 0;
  for (StepId s = 0; s < g.size(); ++s) {
    if (!persistent.empty() && persistent[s] != MPI_REQUEST_NULL) ++persist;
    if (g.kind(s) != StepKind::Recv && g.kind(s) != StepKind::Send) continue;
    if (g.local(s)) {
      ++on_block;
      continue;
    }
    if (g.kind(s) != StepKind::Recv) continue;
    if (!prepost.empty() && prepost[s]) ++posted;
    else if (probe) ++probed;
    else ++staged;
  }
  std::string out = std::to_string(g.size()) + " steps";
  if (posted + probed + staged) {
    out += "; choreographic receives: ";
    std::string parts;
    auto add = [&](uint64_t k, const char* what) {
      if (k) parts += (parts.empty() ? "" : ", ") + std::to_string(k) + " " + what;
    };
    add(posted, "posted at the start");
    add(probed, "matched by probe as they come");
    add(staged, "posted into staging (more than 64 sources)");
    out += parts;
  }
  if (on_block) out += "; " + std::to_string(on_block) + " on-block sends and receives posted when reached";
  if (persist) out += "; " + std::to_string(persist) + (persist == 1 ? " persistent request" : " persistent requests");
  else if (dev)
    out += std::string("; no persistent requests (device memory: ") +
           (ipc          ? "messages within a node go as IPC descriptors"
            : dev_direct ? "MPI works on the device buffers"
                         : "buffers move through staging") +
           ")";
  else if (o.stream) out += "; no persistent requests (the stream-ordered transport)";
  else if (g.connection_slots) out += "; no persistent requests (buffered sends copy each message)";
  return out;
}

}  // namespace sg::exec
