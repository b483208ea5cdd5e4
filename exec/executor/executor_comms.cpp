// The executor's MPI communicators: one per group of the schedule (built over the union of every
// rank's groups, in one order, with MPI_Comm_create_group), the same groups for a stream-ordered
// transport, and two duplicates of the world: the choreographic transfers' and the on-block
// transfers' over the whole world. Also where an on-block send or receive goes.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "exec/executor/executor_impl.hpp"

namespace sg::exec {

namespace {

struct GroupKey {
  uint32_t start, count, stride;
  bool operator<(const GroupKey& o) const { return std::tie(start, count, stride) < std::tie(o.start, o.count, o.stride); }
  bool operator==(const GroupKey& o) const = default;
};

}  // namespace

bool Executor::Impl::build_communicators(Diagnostics& diags) {
  // Every rank's groups, so that each member of each group creates its communicator, in one
  // order (sorted) on every rank: MPI_Comm_create_group is collective over the group.
  std::vector<uint32_t> mine;
  for (const GroupInfo& gr : g.groups) mine.insert(mine.end(), {gr.start, gr.count, gr.stride});
  int n = 0, rc = MPI_Comm_size(world, &n);
  if (rc != MPI_SUCCESS) return diags.fail(mpi_error_string(rc));
  int my_count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(n)), displs(static_cast<size_t>(n));
  rc = MPI_Allgather(&my_count, 1, MPI_INT, counts.data(), 1, MPI_INT, world);
  if (rc != MPI_SUCCESS) return diags.fail("MPI_Allgather: " + mpi_error_string(rc));
  int total = 0;
  for (int k = 0; k < n; ++k) displs[static_cast<size_t>(k)] = total, total += counts[static_cast<size_t>(k)];
  std::vector<uint32_t> all(static_cast<size_t>(total));
  rc = MPI_Allgatherv(mine.data(), my_count, MPI_UINT32_T, all.data(), counts.data(), displs.data(), MPI_UINT32_T, world);
  if (rc != MPI_SUCCESS) return diags.fail("MPI_Allgatherv: " + mpi_error_string(rc));
  std::vector<GroupKey> keys;
  for (size_t k = 0; k + 2 < all.size(); k += 3) keys.push_back({all[k], all[k + 1], all[k + 2]});
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  MPI_Group wg;
  MPI_Comm_group(world, &wg);
  std::map<GroupKey, MPI_Comm> made;
  for (const GroupKey& k : keys) {
    GroupInfo gi{k.start, k.count, k.stride};
    if (gi.index_of(me) < 0) continue;
    std::vector<int> members;
    for (uint32_t j = 0; j < k.count; ++j) members.push_back(static_cast<int>(gi.member(j)));
    MPI_Group sub;
    MPI_Group_incl(wg, static_cast<int>(members.size()), members.data(), &sub);
    MPI_Comm c = MPI_COMM_NULL;
    rc = MPI_Comm_create_group(world, sub, 0x5347, &c);
    MPI_Group_free(&sub);
    if (rc != MPI_SUCCESS) {
      MPI_Group_free(&wg);
      return diags.fail("MPI_Comm_create_group: " + mpi_error_string(rc));
    }
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    owned_comms.push_back(c);
    made[k] = c;
  }
  MPI_Group_free(&wg);
  if (o.stream) {  // the same groups, in the same order, for the stream-ordered transport
    stream_group.assign(g.groups.size(), -1);
    for (const GroupKey& k : keys) {
      GroupInfo gi{k.start, k.count, k.stride};
      int id = -1;
      size_t from = diags.size();
      if (!o.stream->add_group(k.start, k.count, k.stride, gi.index_of(me) >= 0, id, diags))
        return diags.locate_from(from, Loc{}, o.stream->name() + ": "), false;
      for (size_t i = 0; i < g.groups.size(); ++i)
        if (g.groups[i] == gi && gi.index_of(me) >= 0) stream_group[i] = id;
    }
  }
  group_comm.assign(g.groups.size(), MPI_COMM_NULL);
  for (size_t i = 0; i < g.groups.size(); ++i) {
    auto it = made.find(GroupKey{g.groups[i].start, g.groups[i].count, g.groups[i].stride});
    if (it != made.end()) group_comm[i] = it->second;
  }
  MPI_Comm_dup(world, &choreo);
  MPI_Comm_dup(world, &p2p_world);
  MPI_Comm_set_errhandler(choreo, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(p2p_world, MPI_ERRORS_RETURN);
  owned_comms.push_back(choreo);
  owned_comms.push_back(p2p_world);
  return true;
}

// The communicator of an on-block send or receive, and the peer's rank in it.
bool Executor::Impl::p2p_target(StepId s, MPI_Comm& comm, int& peer) const {
  const P2PInfo& p = g.p2p_info(s);
  const GroupInfo& gr = g.groups[p.comm];
  bool world_group = gr.start == 0 && gr.stride == 1 && gr.count == g.nranks;
  comm = world_group ? p2p_world : group_comm[p.comm];
  if (comm == MPI_COMM_NULL) return false;
  if (p.peer == kAnyRank) {
    peer = MPI_ANY_SOURCE;
    return true;
  }
  int64_t k = gr.index_of(p.peer);
  if (k < 0) return false;
  peer = static_cast<int>(k);
  return true;
}

}  // namespace sg::exec
