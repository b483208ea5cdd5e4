// A SimResult as JSON and back: how the SimGrid engine's child process hands its result over; and
// the check that every time in it is a number.
#pragma once
#include <string>

#include "core/dsl/diagnostics.hpp"
#include "sim/sim.hpp"

namespace sg::sim {

std::string result_to_json(const SimResult& r);
// False with the JSON reader's complaint in `diags` when `text` is not a whole result.
bool result_from_json(const std::string& text, SimResult& r, Diagnostics& diags);

// A time that overflowed to inf (or is NaN) means nothing and has no JSON form: such a result is
// replaced by an error that says which time and why, with none of its numbers kept. With a
// platform in range (docs/sim.md) no run comes near; what is left is the options' numbers (--gamma,
// --loggp) or a schedule's sizes taken to extremes. Both engines' results pass here (the SimGrid
// child's before it is written as JSON).
void refuse_non_finite_times(SimResult& r);

}  // namespace sg::sim
