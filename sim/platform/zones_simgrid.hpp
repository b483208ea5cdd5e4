// What the kinds' SimGrid zone builders (sim/platform/<kind>_simgrid.cpp) share: a host's loopback,
// a split-duplex link, the callbacks of SimGrid's cluster zones, the hosts found by name. SimGrid
// builds only (STEPGRAPH_HAVE_SIMGRID).
#pragma once
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <string>
#include <vector>

#include "sim/platform/kind.hpp"

namespace sg::sim::detail {

namespace s4u = simgrid::s4u;

// Host h's FATPIPE loopback, named as the generated routes name it (<host>_loopback).
s4u::Link* make_loopback(s4u::NetZone* zone, const Platform& p, uint32_t h);
// A split-duplex link (name_UP, name_DOWN), sealed.
s4u::SplitDuplexLink* make_duplex(s4u::NetZone* zone, const std::string& name, double bw, double lat);
// The callbacks of SimGrid's cluster zones: host i named as Platform::host_name, its loopback.
s4u::ClusterCallbacks cluster_callbacks(const Platform& p);
// hosts[h] = the engine's host named p.host_name(h), for every host of p (a generated kind's zone
// builder ends with it); throws std::runtime_error for a host SimGrid does not have.
void hosts_by_name(const Platform& p, s4u::Engine& e, std::vector<s4u::Host*>& hosts);

}  // namespace sg::sim::detail
