// TEMPORARY stand-in until the platform layer lands.
#pragma once
#include <simgrid/s4u.hpp>
#include <vector>

#include "sim/platform.hpp"

namespace sg::sim {
void build_simgrid(Platform& p, simgrid::s4u::Engine& e, std::vector<simgrid::s4u::Host*>& hosts);
}
