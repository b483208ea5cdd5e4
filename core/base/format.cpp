#include "core/base/format.hpp"

#include <cstdio>

namespace sg {

std::string fmt(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

std::string human_time(double s) {
  if (s >= 1) return fmt("%.3f s", s);
  if (s >= 1e-3) return fmt("%.3f ms", s * 1e3);
  if (s >= 1e-6) return fmt("%.3f us", s * 1e6);
  return fmt("%.1f ns", s * 1e9);
}

}  // namespace sg
