// A SimResult as JSON and back: how the SimGrid engine's child process hands its result over.
#pragma once
#include <string>

#include "sim/sim.hpp"

namespace sg::sim {

std::string result_to_json(const SimResult& r);
bool result_from_json(const std::string& text, SimResult& r, std::string& err);

}  // namespace sg::sim
