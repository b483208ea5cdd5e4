// Numbers for people: printf into a std::string, and durations with a unit that fits.
#pragma once
#include <string>

namespace sg {

// snprintf(format, x) as a string (one double argument).
std::string fmt(const char* format, double x);
// 0.0123 -> "12.300 ms"; below a microsecond in ns with one decimal.
std::string human_time(double seconds);

}  // namespace sg
