// What is printed from a LaunchInfo (`stepgraph env`: JSON, text, an export line) and the one-line
// pointer of a job-wide error with the waits around it. Apart from the detection, which decides
// the values (exec/launch/launcher.cpp): this only formats them.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "exec/launch/launcher.hpp"
#include "exec/launch/launcher_sources.hpp"

namespace sg::exec {

using launcher_detail::join;

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// A value is safe in `export K=V` unquoted when it has only these characters.
std::string shell_word(const std::string& s) {
  bool safe = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' || c == ':';
  });
  if (safe) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string num_or_unknown(int64_t v) { return v < 0 ? std::string("unknown") : std::to_string(v); }

}  // namespace

std::string launch_json(const LaunchInfo& L) {
  std::ostringstream o;
  o << "{\n"
    << "  \"launcher\": " << json_string(L.launcher) << ",\n"
    << "  \"mpi\": " << json_string(L.mpi) << ",\n"
    << "  \"rank\": " << L.rank << ",\n"
    << "  \"world_size\": " << L.world_size << ",\n"
    << "  \"local_rank\": " << L.local_rank << ",\n"
    << "  \"local_size\": " << L.local_size << ",\n"
    << "  \"node\": " << L.node << ",\n"
    << "  \"device\": " << L.device << ",\n"
    << "  \"backend\": " << json_string(L.backend) << ",\n"
    << "  \"master_addr\": " << json_string(L.master_addr) << ",\n"
    << "  \"master_port\": " << L.master_port << ",\n"
    << "  \"warnings\": [";
  for (size_t i = 0; i < L.warnings.size(); ++i) o << (i ? ",\n    " : "\n    ") << json_string(L.warnings[i]);
  o << (L.warnings.empty() ? "]" : "\n  ]") << "\n}\n";
  return o.str();
}

std::string launch_text(const LaunchInfo& L) {
  std::ostringstream o;
  auto line = [&](const char* key, const std::string& value) {
    o << key << std::string(12 - std::string(key).size(), ' ') << value << "\n";
  };
  line("launcher", L.launcher);
  line("mpi", L.mpi.empty() ? std::string("-") : L.mpi);
  line("rank", std::to_string(L.rank) + " of " + num_or_unknown(L.world_size));
  line("local rank", (L.local_rank_known ? std::to_string(L.local_rank) : std::string("unknown")) + " of " + num_or_unknown(L.local_size));
  line("node", num_or_unknown(L.node));
  line("device", (L.device < 0 ? std::string("none") : std::to_string(L.device)) + ", backend " + L.backend + ": " + L.backend_reason);
  line("master", (L.master_addr.empty() ? std::string("unknown") : L.master_addr) + ":" + std::to_string(L.master_port));
  line("warnings", L.warnings.empty() ? std::string("none") : std::to_string(L.warnings.size()));
  for (const std::string& w : L.warnings) o << "  warning: " << w << "\n";
  for (const std::string& n : L.notes) o << "  note: " << n << "\n";
  return o.str();
}

std::string launch_export(const LaunchInfo& L) {
  std::vector<std::string> parts;
  parts.push_back("RANK=" + std::to_string(L.rank));
  if (L.world_size >= 0) parts.push_back("WORLD_SIZE=" + std::to_string(L.world_size));
  if (L.local_rank_known) parts.push_back("LOCAL_RANK=" + std::to_string(L.local_rank));
  if (L.local_size >= 0) parts.push_back("LOCAL_WORLD_SIZE=" + std::to_string(L.local_size));
  if (!L.master_addr.empty()) parts.push_back("MASTER_ADDR=" + shell_word(L.master_addr));
  parts.push_back("MASTER_PORT=" + std::to_string(L.master_port));
  return "export " + join(parts, " ") + "\n";
}

std::string job_pointer(int64_t rank, int64_t world_size, int64_t speaker, int exit_code, const std::string& gist) {
  std::string who = "rank " + std::to_string(rank) + (world_size > 0 ? " of " + std::to_string(world_size) : std::string());
  std::string where = speaker >= 0 ? "rank " + std::to_string(speaker) : std::string("another rank");
  std::string out = "stepgraph: error: " + who + " exits with code " + std::to_string(exit_code) + ": ";
  out += gist.empty() ? where + " printed why" : gist + "; " + where + " printed the whole message";
  return out + "\n";
}

void let_others_speak(int64_t world_size) {
  if (world_size > 1) std::this_thread::sleep_for(std::chrono::milliseconds(250));
}

void wait_for_speaker(int64_t world_size) {
  if (world_size > 1) std::this_thread::sleep_for(std::chrono::seconds(3));
}

}  // namespace sg::exec
