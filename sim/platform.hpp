// The platform description both simulation backends read: which hosts there are, which links a
// message crosses and what they cost. Parsed from a spec string (`star:bw=100Gbps,lat=1us`,
// `fat-tree:…`, `torus:4x4x4,…`, `dragonfly:…`, `nodes:count=16,gpus=8,…`) or a SimGrid platform
// XML file; the grammar, every key, its unit and default are in docs/sim.md, "Platforms".
//
// For the generated kinds the routes are computed by stepgraph (sim/platform/<kind>.cpp, one file
// per kind; the table of kinds is sim/platform/kinds.cpp), without SimGrid, and they are the routes
// SimGrid's zones use (same links, same order, same names: tests/platform/test_kinds.cpp holds
// every host pair of small instances against Host::route_to). For an XML file the hosts and routes come
// from SimGrid: build_simgrid or load_xml_platform (sim/simgrid_platform.hpp) fills them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/nccl_tuning.hpp"

#include "core/base/units.hpp"
#include "core/dsl/diagnostics.hpp"

namespace sg::sim {

struct LinkInfo {
  std::string name;    // SimGrid's name of the link (a split-duplex link's halves end in _UP, _DOWN)
  double bw = 0;       // bytes/s
  double lat = 0;      // s
  bool shared = true;  // false: FATPIPE (every flow gets the whole bandwidth; the loopbacks)
};

// The kinds, in the order of their table (sim/platform/kinds.cpp), which is where their names and
// parts are.
enum class PlatformKind : uint8_t { Star, FatTree, Torus, Dragonfly, Nodes, Xml };
const char* kind_name(PlatformKind k);  // "star", "fat-tree", "torus", "dragonfly", "nodes", "xml"

// SimGrid's network model, spec key `model=`. Lv08 is SimGrid's default (its latency and
// bandwidth correction factors, cross traffic, the TCP window bound); Cm02 is the same without
// the factors; Ideal is Cm02 without cross traffic and without the TCP window bound: a message
// alone on its route takes exactly latency + bytes / bottleneck bandwidth.
enum class NetModel : uint8_t { Lv08, Cm02, Ideal };
const char* model_name(NetModel m);  // "lv08", "cm02", "ideal"

// The parameters of each generated kind, sizes resolved. Bandwidths in bytes/s, times in s.
struct StarParams {
  double bw = 0, lat = 0;  // lat: end to end (each host link carries lat / 2)
};
struct FatTreeParams {  // SimGrid's FatTreeParams, bottom level first; levels = down.size()
  std::vector<uint32_t> down, up, links;
  double bw = 0, lat = 0;  // every link; lat per link
};
struct TorusParams {
  std::vector<uint32_t> dims;  // first dimension varies fastest in the host number
  double bw = 0, lat = 0;      // lat per link (hop)
};
struct DragonflyParams {  // SimGrid's DragonflyParams: (groups, blue) (chassis, black) (routers, green) nodes
  uint32_t groups = 0, blue = 1, chassis = 0, black = 1, routers = 0, green = 1, nodes = 0;
  double bw = 0, lat = 0;  // lat per link; a blue/black/green link has bw times its link count
};
// What `stepgraph calibrate --nccl-tests` fits to a user's own measurements (docs/sim.md,
// "Calibration"): on every message of a call NCCL's model costed (sim/call_cost.hpp), the call's
// launch overhead added to its base latency, NCCL's latencies (base and per hop) scaled by `lat`,
// its bus bandwidth (the per-channel caps) scaled by `bw`. NCCL's own pick is not changed: it is
// made from NCCL's constants, whatever the machine really does. Defaults: NCCL's model as is (its
// baseLat already holds the launch it measured, tuning.cc).
//
// `host_s` (key nccl_host) is not a message cost: it is the host's time to issue one NCCL call,
// which bounds a run of calls issued back to back, as nccl-tests times them (a predicted row is
// the larger of it and the simulated call: cli/nccl_tests_predict). 36 µs, the median of the
// calls up to 4 KiB in the one table chosen for it (bench/nccl_accuracy/manifest.tsv, "constants").
struct NcclCalibration {
  double launch_s = 0, lat = 1, bw = 1, host_s = 36e-6;
  bool operator==(const NcclCalibration&) const = default;
};

struct NodesParams {
  uint32_t count = 0, gpus = 0, nics = 0;  // nics per node; GPU g uses NIC g / (gpus / nics)
  double nvlink = 0, nvlink_lat = 0;       // per GPU, per direction; lat end to end inside a node
  double nic = 0, nic_lat = 0;             // per NIC, per direction; lat end to end between nodes
  std::string preset;                      // "dgx-h100" (sim/platform/presets.hpp), or "" for plain nodes:
  std::string transport = "ib";            // the NICs' fabric: ib (InfiniBand) or roce (RDMA over Ethernet)
  NcclHardware hw;                         // what NCCL's model reads off this machine (core/graph/nccl_tuning.hpp)
  NcclCalibration nccl;                    // keys nccl_launch, nccl_lat, nccl_bw, nccl_host
};

namespace detail {
struct Routing;  // the route tables of one platform (sim/platform/kind.hpp)
}

struct Platform {
  PlatformKind kind = PlatformKind::Star;
  std::string spec;             // normalised: kind, resolved sizes, the keys given, the model
  bool ideal = false;           // model == NetModel::Ideal
  uint32_t hosts = 0;           // hosts available (>= ranks); Xml: 0 until build_simgrid / load_xml_platform
  double speed = 1e12;          // flops/s per host (spec key `speed=`); Xml: the first host's
  std::vector<LinkInfo> links;  // every link of the platform (Xml: those the routes use, once resolved)
  std::string xml;              // Xml: the file's path, as given

  uint32_t ranks = 0;  // the rank count parse_platform was given
  // One default for every platform, the built-in one and any named (docs/sim.md, "Network models"):
  // ideal, so naming a platform never changes the model behind the user's back.
  NetModel model = NetModel::Ideal;
  // The SimGrid network-model constants in force (docs/sim.md "Network models"). A message alone
  // on its route from a to b takes
  //   lat_factor * L + bytes / (bw_factor * min(B, tcp_gamma / (2 L)))
  // with L = route latency, B = route_bw (the tcp_gamma term only where tcp_gamma > 0 and L > 0);
  // lone_message_time() computes it. With crosstraffic, a flow also loads every link of the
  // reverse route with 5% of its rate; weight_s is LV08's RTT-unfairness weight in sharing.
  double lat_factor = 1, bw_factor = 1, weight_s = 0, tcp_gamma = 0;
  bool crosstraffic = false;
  double loopback_bw = 0, loopback_lat = 0;  // generated kinds: each host's own FATPIPE loopback

  // The parameters of this->kind (the others stay empty).
  StarParams star;
  FatTreeParams fat_tree;
  TorusParams torus;
  DragonflyParams dragonfly;
  NodesParams nodes;

  std::vector<std::string> host_names;  // Xml only (file order); generated: see host_name()
  std::vector<double> host_speeds;      // Xml only; generated: every host runs at `speed`

  // The links a message from host a to host b crosses, in order, and the route's total latency
  // (the sum of its links' latencies); `link_ids` is cleared first. a == b takes the host's
  // loopback (generated kinds). Throws std::out_of_range for a host >= hosts and
  // std::logic_error for an Xml platform not resolved yet.
  void route(uint32_t a, uint32_t b, std::vector<uint32_t>& link_ids, double& latency) const;
  // Bandwidth of the route's bottleneck (bytes/s): in the ideal model a message alone takes
  // latency + bytes / route_bw.
  double route_bw(uint32_t a, uint32_t b) const;
  // What SimGrid's model in force gives a message alone on its route (formula above).
  double lone_message_time(uint32_t a, uint32_t b, double bytes) const;
  bool has_routes() const { return routing != nullptr; }
  std::string host_name(uint32_t h) const;  // SimGrid's name of host h
  std::string describe() const;             // one line for people: kind, hosts, links, model

  std::shared_ptr<const detail::Routing> routing;  // filled by parse_platform / build_simgrid
};

namespace detail {
struct ReadSpec;  // a spec read, before it is sized (sim/platform.cpp)
}

// A platform as the user chose it, read once (read_platform): an @FILE read and its `# gamma=`
// line kept, the kind found, the items split (syntax errors located), an XML file read and its
// numbers checked. What a kind builds (sizes, links, routes) depends on the rank count, so
// size_platform makes a Platform of it for each N. Requests carry this (api::SimRequest,
// sim::PointSpec): the spec is parsed once, not once per point.
struct PlatformChoice {
  std::string given;                             // as given ("" = the default platform)
  std::string spec;                              // the spec read: given, or default_platform_spec()
  std::string gamma;                             // an @FILE's `# gamma=TIME` line as written (`stepgraph calibrate`), "" if none
  std::shared_ptr<const detail::ReadSpec> read;  // null until read_platform
  bool is_read() const { return read != nullptr; }
  bool defaulted() const { return given.empty(); }  // nothing was given: the result says the default was used
};

// A refused platform is reported into `diags` as one error, located where it points somewhere:
// into the spec string as given (the file "--platform", its text added to `sm`), into an @FILE or
// into an XML platform file (added to `sm` under the path given). An error about the platform as a
// whole (too few hosts, a file that cannot be read) has no location (Loc{}).

// Reads a spec string, "@FILE" or a path to a SimGrid .xml file into `out`. False with the error
// reported.
bool read_platform(const std::string& spec, PlatformChoice& out, SourceManager& sm, Diagnostics& diags);
// The built-in default, read (it cannot fail).
PlatformChoice default_platform();
// The platform `c` describes for a run of `nranks` (a generator sizes itself from it where the spec
// leaves a size out). False with the error reported (a number out of range, pointing at it; too
// few hosts for nranks).
bool size_platform(const PlatformChoice& c, uint32_t nranks, Platform& out, SourceManager& sm, Diagnostics& diags);

// read_platform then size_platform. Parses a spec string or a path to a SimGrid .xml platform file. `nranks` is how many hosts the
// run needs (a generator sizes itself from it where the spec leaves a size out: `star` gets
// nranks hosts; `nodes` without count= gets ceil(nranks / gpus) nodes). Returns false with the
// error reported (bad key, bad unit, a number out of range, too few hosts for nranks, a file that
// cannot be read).
bool parse_platform(const std::string& spec, uint32_t nranks, Platform& out, SourceManager& sm, Diagnostics& diags);

// The built-in default, used when --platform is not given (say which in output).
const char* default_platform_spec();

// Unit parsers the spec uses: bandwidth to bytes/s, time to seconds, flop rate to flops/s. They
// live in core/base/units.hpp (the units each takes are listed there) and are named here too,
// sg::sim::parse_bandwidth and so on, for the CLI and the tests.
using sg::parse_bandwidth;
using sg::parse_flops;
using sg::parse_time;

// Sets an Xml platform's links, hosts and route tables from SimGrid's answers, routes[a][b] for
// every ordered host pair (build_simgrid and load_xml_platform call it).
struct XmlRoute {
  std::vector<uint32_t> links;  // indices into the `links` given with it
  double latency = 0;
};
void set_table_routes(Platform& p, std::vector<LinkInfo> links, const std::vector<std::vector<XmlRoute>>& routes);

}  // namespace sg::sim
