#include "core/io/trace.hpp"

#include <cmath>
#include <cstdio>
#include <ostream>

#include "core/io/writers.hpp"

namespace sg {

namespace {

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}

std::string us(double seconds) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6f", seconds * 1e6);
  return buf;
}

}  // namespace

void write_chrome_trace(std::ostream& os, const StepGraph& g, const SourceManager& sm, const std::vector<double>& starts,
                        const std::vector<double>& ends, const std::vector<StepId>& partners) {
  os << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) os << ",\n";
    first = false;
  };
  for (uint32_t r = 0; r < g.nranks; ++r) {
    sep();
    os << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":" << r << ",\"args\":{\"name\":\"rank " << r << "\"}}";
    sep();
    os << "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":0,\"tid\":" << r << ",\"args\":{\"sort_index\":" << r << "}}";
  }
  auto partner = [&](StepId s) {
    if (!partners.empty()) return partners[s];
    return g.match(s);
  };
  for (StepId s = 0; s < g.size(); ++s) {
    if (s >= starts.size() || std::isnan(starts[s]) || std::isnan(ends[s])) continue;
    sep();
    os << "{\"ph\":\"X\",\"pid\":0,\"tid\":" << g.rank(s) << ",\"ts\":" << us(starts[s]) << ",\"dur\":" << us(ends[s] - starts[s])
       << ",\"cat\":\"" << step_kind_name(g.kind(s)) << "\",\"name\":\"" << json_escape(describe_step(g, s)) << "\"";
    // A message is an arrow from its send's slice to its receive's (Perfetto's bind_id flows).
    if (g.kind(s) == StepKind::Send) {
      StepId r = partner(s);
      if (r != kNoStep) os << ",\"bind_id\":" << s << ",\"flow_out\":true";
    } else if (g.kind(s) == StepKind::Recv) {
      StepId m = partner(s);
      if (m != kNoStep) os << ",\"bind_id\":" << m << ",\"flow_in\":true";
    }
    os << ",\"args\":{\"step\":" << s << ",\"source\":\"" << json_escape(step_where(g, sm, s)) << "\"}}";
  }
  os << "\n]}\n";
}

}  // namespace sg
