// The platform built into a SimGrid engine (SimGrid builds only: STEPGRAPH_HAVE_SIMGRID).
#pragma once
#include <simgrid/forward.h>

#include <string>
#include <vector>

#include "sim/platform.hpp"

namespace sg::sim {

// Sets SimGrid's configuration for p.model (build_simgrid calls it first; it must come before
// the first zone exists): Ideal → network/model:CM02, network/crosstraffic:0, network/TCP-gamma:1e300 (no bound);
// Cm02 → network/model:CM02; Lv08 → network/model:LV08 (SimGrid's default).
void configure_simgrid(const Platform& p);

// Builds the platform into the engine (before actors are created, and before any zone exists);
// hosts[i] = host i, in the order route() numbers them. Generated kinds: SimGrid's zone for the
// kind (StarZone, TorusZone, FatTreeZone, DragonflyZone; `nodes` is a StarZone over the NICs
// with bypass routes over NVLink inside each node), each host with its own FATPIPE loopback;
// each kind's builder is sim/platform/<kind>_simgrid.cpp, found in the table of kinds.
// Xml: loads the file, takes its hosts in file order and fills p.hosts, p.links, the routes,
// host_names, host_speeds and speed by asking SimGrid (Host::route_to for every host pair, so
// O(hosts²)). Throws std::runtime_error when the file cannot be loaded, when it has fewer hosts
// than p.ranks, or when a link SimGrid made does not match p.links (name, bandwidth, latency).
void build_simgrid(Platform& p, simgrid::s4u::Engine& e, std::vector<simgrid::s4u::Host*>& hosts);
// The same, and links[i] = SimGrid's link for p.links[i].
void build_simgrid(Platform& p, simgrid::s4u::Engine& e, std::vector<simgrid::s4u::Host*>& hosts, std::vector<simgrid::s4u::Link*>& links);

// Fills an Xml platform's hosts, host names and speeds, links and routes, as build_simgrid does,
// without creating a SimGrid engine in this process: a child process (fork) loads the file and
// sends them back. For what needs them before or without a SimGrid run in this process (the
// analytic backend, a check of the host count against the ranks). Does nothing for the
// generated kinds. Returns false with the error reported into `diags`, without a location (the
// file does not load, too few hosts).
bool load_xml_platform(Platform& p, Diagnostics& diags);

}  // namespace sg::sim
