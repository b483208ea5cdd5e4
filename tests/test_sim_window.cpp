// Pipelining in simulated time: a FIFO of K slots per rank pair (`sim --window K`) makes a
// dataflow schedule's pieces follow each other, so a chain broadcast pipelines as its closed form
// says, in both engines; without one every piece starts at once and the count changes nothing.
// A library NCCL schedule run by name on GPU nodes runs as NCCL runs that algorithm (its channels,
// chunks and costs), and a sweep of its chunks changes the time as the closed form of its FIFO
// says.
#include <catch2/catch.hpp>

#include <string>

#include "sim_point.hpp"

using namespace sg;
using namespace sg::sim;
using sgtest::sim_point;

namespace {

const std::string kChain = std::string(STEPGRAPH_SOURCE_DIR) + "/tests/sim_cases/chain_bcast_dataflow.sched";
const std::string kWrapper = std::string(STEPGRAPH_SOURCE_DIR) + "/tests/sim_cases/allreduce_wrapper.sched";

}  // namespace

TEST_CASE("a FIFO window makes a dataflow chain pipeline as its closed form says; without one the pieces change nothing", "[sim][window]") {
  // A star of 10 GB/s links and 10 us end to end; 16 MiB down a chain of 8.
  const double alpha = 10e-6, beta = 1 / 10e9, n = 16.0 * 1024 * 1024;
  const std::string star = "star:bw=10GBps,lat=10us";
  for (int pieces : {1, 4, 16}) {
    INFO("pieces = " << pieces);
    const std::vector<std::pair<std::string, std::string>> sets = {{"pieces", std::to_string(pieces)}};
    // No window: the root's pieces share its link and land together, at every hop.
    CHECK(sim_point(kChain, 8, sets, star).time_s == Approx(7 * (alpha + n * beta)).epsilon(1e-6));
    // One slot a pair: (N + S - 2)(α + n/S β).
    double closed = (8 + pieces - 2) * (alpha + n / pieces * beta);
    CHECK(sim_point(kChain, 8, sets, star, Model::Analytic, 1).time_s == Approx(closed).epsilon(1e-6));
  }
  // SimGrid keeps the same window.
  CHECK(sim_point(kChain, 8, {{"pieces", "4"}}, star, Model::SimGrid, 1).time_s == Approx(10 * (alpha + n / 4 * beta)).epsilon(1e-3));
}

TEST_CASE("a library NCCL schedule run by name on GPU nodes runs as NCCL runs it: channels, chunks, costs", "[sim][window][nccl]") {
  // Four nodes of 8 H100s, 1 GiB: the ring on NCCL's 16 channels at NCCL's costs, not the
  // schedule's default 2 channels (99 GB/s before).
  PointResult ring = sim_point("nccl_ring_allreduce", 32, {{"size", "1GiB"}}, "dgx-h100:nodes=4");
  CHECK(ring.wire.find("as NCCL runs it: NCCL 2.30 picks ring/Simple on 16 channels") != std::string::npos);
  CHECK(ring.busbw > 330);
  CHECK(ring.busbw <= 400);
  // The tree, forced the same way, on its own channels.
  PointResult tree = sim_point("nccl_tree_allreduce", 32, {{"size", "1GiB"}}, "dgx-h100:nodes=4");
  CHECK(tree.wire.find("picks tree/") != std::string::npos);
  // NVLS where NCCL cannot run it (across nodes): as written, and said so.
  PointResult nvls = sim_point("nccl_nvls_allreduce", 32, {{"size", "1MiB"}}, "dgx-h100:nodes=4");
  CHECK(nvls.wire.find("NCCL cannot run nvls allreduce here") != std::string::npos);
  // Off GPU nodes, nothing changes: the schedule as written.
  CHECK(sim_point("nccl_ring_allreduce", 8, {{"size", "1MiB"}}, "star:bw=10GBps,lat=1us").wire.empty());

  // The chunks of one channel on one H100 node, 64 MiB: one message a channel streaming on each
  // pair (the window), at the channel's share r = busBw / 24 of NCCL's bus bandwidth, landing
  // Simple's NVLink hop h = 3.4 us after its bytes have left (the slot is free by then). In one
  // chunk each of the 2(N-1) steps waits for the one before it to land:
  // T(1) = base + 2(N-1)(h + S/(c·N·r)). In k chunks the pair streams the next chunk while the
  // last one's hop is in flight, and never waits once (k-1)·S/(c·N·r·k) >= h:
  // T(k) = base + h + 2(N-1)·S/(c·N·r), 2N-3 hops less; the bandwidth term does not change.
  const double S = 64.0 * 1024 * 1024, h = 3.4e-6, base = 8.4e-6;
  PointResult one = sim_point("nccl_ring_allreduce", 8, {{"size", "64MiB"}, {"channels", "1"}, {"chunks", "1"}}, "dgx-h100:nodes=1");
  CHECK(one.wire.find("channels, chunks as --set gives") != std::string::npos);
  double bw_term = one.time_s - base - 14 * h;  // 2(N-1)·S/(c·N·r)
  double r = 14 * S / (8 * bw_term);
  CHECK(r == Approx(360e9 / 24).epsilon(0.01));  // NCCL's 12 graph channels of 30 GB/s, over 24
  for (int k : {4, 16}) {
    PointResult t =
        sim_point("nccl_ring_allreduce", 8, {{"size", "64MiB"}, {"channels", "1"}, {"chunks", std::to_string(k)}}, "dgx-h100:nodes=1");
    INFO("chunks = " << k);
    CHECK((k - 1) * S / (8 * r * k) >= h);
    CHECK(t.time_s == Approx(base + h + 14 * S / (8 * r)).epsilon(1e-6));
    // SimGrid frees the slot on a timer of the bytes at the message's rate: the same here.
    CHECK(sim_point("nccl_ring_allreduce", 8, {{"size", "64MiB"}, {"channels", "1"}, {"chunks", std::to_string(k)}}, "dgx-h100:nodes=1",
                    Model::SimGrid)
              .time_s == Approx(t.time_s).epsilon(1e-6));
  }
}

TEST_CASE("an NCCL all-reduce beside a plain send on one NIC: one chunk a channel in flight, neither waits behind the other",
          "[sim][window][nccl][agree]") {
  // NIC 0 of each node carries the all-reduce's 1 GiB and the send's 256 MiB each way: work-
  // conserving sharing ends both at 1.25 GiB / 50 GB/s. Both engines once parted by 42 %
  // (SimGrid 38.1 ms): its channels freed their FIFO slot on a timer of the bytes at the lone
  // rate, so under sharing they put more chunks at once and took the send's share; and its
  // eager messages of one rank pair shared one mailbox, so the chunks landed behind the send.
  const std::string beside = std::string(STEPGRAPH_SOURCE_DIR) + "/tests/sim_cases/nccl_beside_send.sched";
  const std::string spec = "dgx-h100:nodes=2,gpus=4";
  const double bound = 1.25 * 1073741824 / 50e9;
  PointResult a = sim_point(beside, 8, {}, spec);
  REQUIRE(a.expansions.size() == 1);
  CHECK(a.expansions[0].find("ring/Simple on 4 channels") != std::string::npos);
  CHECK(a.time_s > bound);
  CHECK(a.time_s < bound * 1.01);
  PointResult s = sim_point(beside, 8, {}, spec, Model::SimGrid);
  CHECK(s.time_s > bound);
  CHECK(s.time_s == Approx(a.time_s).epsilon(0.01));
}

TEST_CASE("train_step on GPU nodes: the engines agree with pipeline, TP and DP traffic sharing the NICs", "[sim][window][nccl][agree]") {
  // The tour's slice (4 stages of a node each, dp 2): the last backward's activation gradients
  // cross the NICs while the 3 GiB data-parallel all-reduce streams over them (SimGrid gave 626 ms
  // against the analytic 543 ms before its channels kept to one chunk in flight under sharing).
  const std::vector<std::pair<std::string, std::string>> sets = {{"tp", "4"},      {"pp", "4"},           {"layers", "8"},
                                                                 {"buckets", "2"}, {"microbatches", "4"}, {"seq", "4096"}};
  const std::string spec = "dgx-h100:nodes=8,gpus=4";
  double a = sim_point("train_step", 32, sets, spec).time_s;
  double s = sim_point("train_step", 32, sets, spec, Model::SimGrid).time_s;
  CHECK(s == Approx(a).epsilon(0.01));
}

TEST_CASE("the tree's LL chunks pipeline down the tree as NCCL's model prices them", "[sim][window][nccl]") {
  // Two A100 nodes, 128 KiB: NCCL picks the tree with LL on 16 channels of one chunk, and
  // estimates 48.5 us. Stored and forwarded whole, each channel's 8 KiB crossed the 16 hops of
  // the chain and the tree one after another at a channel's 0.6 GB/s (212 us); in LL's 256-byte
  // pieces they follow each other, as LL forwards line by line.
  PointResult t = sim_point(kWrapper, 16, {{"size", "128KiB"}}, "dgx-a100:nodes=2");
  REQUIRE(t.expansions.size() == 1);
  INFO(t.expansions[0]);
  CHECK(t.expansions[0].find("tree/LL on 16 channels of 32 chunks (48.5 us)") != std::string::npos);
  CHECK(t.time_s > 25.2e-6);  // NCCL's latency term alone
  CHECK(t.time_s < 48.5e-6);
  CHECK(sim_point(kWrapper, 16, {{"size", "128KiB"}}, "dgx-a100:nodes=2", Model::SimGrid).time_s == Approx(t.time_s).epsilon(1e-6));
}

TEST_CASE("all-to-all on GPU nodes: a GPU's NVLink at the bandwidth NCCL's topology gives it", "[sim][nccl]") {
  // One H100 node, 1 GiB: NCCL's grouped sends and receives share each GPU's NVLink at 18 links
  // × 20.6 GB/s = 370.8 GB/s (topo.h), not the datasheet's 450, after the group's 8 rounds (one
  // a peer, itself too) of a Simple step's 3.4 µs each: both engines.
  const std::string a2a = std::string(STEPGRAPH_SOURCE_DIR) + "/tests/sim_cases/alltoall_wrapper.sched";
  PointResult t = sim_point(a2a, 8, {{"size", "1GiB"}}, "dgx-h100:nodes=1");
  REQUIRE(t.expansions.size() == 1);
  INFO(t.expansions[0]);
  CHECK(t.expansions[0].find("a GPU's NVLink at NCCL's 370.8 GB/s") != std::string::npos);
  CHECK(t.expansions[0].find("8 rounds of a peer each, itself too, 3.4 us apiece") != std::string::npos);
  const double bytes_s = 7.0 / 8 * 1073741824 / 370.8e9;
  CHECK(t.time_s == Approx(8 * 3.4e-6 + bytes_s).margin(1e-6));  // and the NVLink's 0.6 µs hop at most
  CHECK(t.time_s > 8 * 3.4e-6 + bytes_s);
  CHECK(sim_point(a2a, 8, {{"size", "1GiB"}}, "dgx-h100:nodes=1", Model::SimGrid).time_s == Approx(t.time_s).epsilon(1e-6));
  // Off GPU nodes: Open MPI's choice, no NCCL costs.
  PointResult cpu = sim_point(a2a, 8, {{"size", "1MiB"}}, "star:bw=10GBps,lat=1us");
  REQUIRE(cpu.expansions.size() == 1);
  CHECK(cpu.expansions[0].find("NVLink") == std::string::npos);
}
