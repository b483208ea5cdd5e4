#include "exec/mpi/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "exec/executor/kernels.hpp"

namespace sg::exec {

namespace {

// Fastest round trip over iters, between ranks a and b, of n bytes; only a and b call it.
double ping_pong(MPI_Comm comm, int me, int a, int b, std::vector<unsigned char>& buf, uint64_t n, int iters) {
  double best = 1e30;
  int count = static_cast<int>(n);
  for (int k = 0; k < iters + 2; ++k) {  // two untimed round trips first
    double t0 = MPI_Wtime();
    if (me == a) {
      MPI_Send(buf.data(), count, MPI_BYTE, b, 7, comm);
      MPI_Recv(buf.data(), count, MPI_BYTE, b, 7, comm, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf.data(), count, MPI_BYTE, a, 7, comm, MPI_STATUS_IGNORE);
      MPI_Send(buf.data(), count, MPI_BYTE, a, 7, comm);
    }
    double t = MPI_Wtime() - t0;
    if (k >= 2) best = std::min(best, t);
  }
  return best;
}

void fit(PairClass& c) {
  // t = α + s·β by least squares on relative errors (weights 1/t²): every size counts alike,
  // where plain least squares would fit the largest messages only. β must come out positive
  // and α non-negative; otherwise α is the smallest message's time and β the slope to the largest.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const PingPoint& p : c.points) {
    double w = 1.0 / (p.one_way_s * p.one_way_s), x = static_cast<double>(p.bytes), y = p.one_way_s;
    sw += w, sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y;
  }
  double det = sw * sxx - sx * sx;
  double beta = det != 0 ? (sw * sxy - sx * sy) / det : 0;
  double alpha = det != 0 ? (sy - beta * sx) / sw : 0;
  if (beta <= 0 || alpha < 0) {
    alpha = c.points.empty() ? 0 : c.points.front().one_way_s;
    beta = c.points.empty()
               ? 1e-9
               : std::max(1e-15, (c.points.back().one_way_s - alpha) / static_cast<double>(std::max<uint64_t>(1, c.points.back().bytes)));
  }
  c.alpha_s = alpha;
  c.bw_Bps = 1.0 / beta;
  c.max_rel_err = 0;
  for (const PingPoint& p : c.points) {
    double model = c.alpha_s + static_cast<double>(p.bytes) / c.bw_Bps;
    c.max_rel_err = std::max(c.max_rel_err, std::fabs(model - p.one_way_s) / p.one_way_s);
  }
}

}  // namespace

bool calibrate(MPI_Comm comm, const std::vector<uint64_t>& sizes, int iters, Calibration& out, Diagnostics& diags) {
  int me = 0, n = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  if (n < 2) return diags.fail("calibrate needs at least 2 processes (mpiexec -n 2 or more)");
  // Node of every rank: the lowest world rank sharing memory with it.
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node);
  int leader = me;
  MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node);
  int local = 1;
  MPI_Comm_size(node, &local);
  MPI_Comm_free(&node);
  std::vector<int> leaders(static_cast<size_t>(n));
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm);
  std::vector<int> distinct(leaders);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  out.nodes = static_cast<int>(distinct.size());
  MPI_Allreduce(&local, &out.per_node, 1, MPI_INT, MPI_MAX, comm);
  out.classes.clear();
  int same = -1, other = -1;
  for (int r = 1; r < n; ++r) {
    if (leaders[static_cast<size_t>(r)] == leaders[0] && same < 0) same = r;
    if (leaders[static_cast<size_t>(r)] != leaders[0] && other < 0) other = r;
  }
  uint64_t largest = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
  std::vector<unsigned char> buf(std::max<uint64_t>(1, largest), 1);
  for (auto [name, peer] : {std::pair<const char*, int>{"same node", same}, {"other node", other}}) {
    if (peer < 0) continue;
    PairClass c;
    c.name = name;
    c.a = 0;
    c.b = peer;
    for (uint64_t s : sizes) {
      double rt = 0;
      if (me == 0 || me == peer) rt = ping_pong(comm, me, 0, peer, buf, s, iters);
      MPI_Barrier(comm);
      if (me == 0) c.points.push_back({s, rt / 2});
    }
    if (me == 0) fit(c);
    out.classes.push_back(c);
  }
  // The local reduction's speed (what a reducing receive or a reduce step costs per byte): the
  // fastest of a few float sums of 64 MiB into 64 MiB.
  if (me == 0) {
    const size_t elems = size_t{16} << 20;  // 64 MiB per vector: out of cache, as large messages are
    std::vector<float> x(elems, 1.0f), y(elems, 2.0f);
    double best = 1e30;
    for (int k = 0; k < 5; ++k) {
      double t0 = MPI_Wtime();
      reduce_into(DType::F32, ReduceOp::Sum, x.data(), y.data(), elems);
      best = std::min(best, MPI_Wtime() - t0);
    }
    out.gamma_s_per_byte = best / static_cast<double>(elems * sizeof(float));
  }
  return true;
}

std::string calibration_platform(const Calibration& c) {
  auto bw = [](double Bps) {
    char b[64];
    std::snprintf(b, sizeof b, "%.4gGBps", Bps / 1e9);
    return std::string(b);
  };
  auto lat = [](double s) {
    char b[64];
    std::snprintf(b, sizeof b, "%.4gus", s * 1e6);
    return std::string(b);
  };
  const PairClass* same = nullptr;
  const PairClass* other = nullptr;
  for (const PairClass& x : c.classes) (x.name == "same node" ? same : other) = &x;
  if (c.nodes <= 1 || !other) {
    const PairClass* x = same ? same : other;
    if (!x) return "";
    return "star:bw=" + bw(x->bw_Bps) + ",lat=" + lat(x->alpha_s) + ",model=ideal";
  }
  std::string s = "nodes:count=" + std::to_string(c.nodes) + ",gpus=" + std::to_string(c.per_node) + ",nic=" + bw(other->bw_Bps) +
                  ",nic_lat=" + lat(other->alpha_s);
  if (same) s += ",nvlink=" + bw(same->bw_Bps) + ",nvlink_lat=" + lat(same->alpha_s);
  return s + ",model=ideal";
}

}  // namespace sg::exec
