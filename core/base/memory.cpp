#include "core/base/memory.hpp"

#include <fstream>

namespace sg {

namespace {

bool read_u64(const std::string& path, uint64_t& out) {
  std::ifstream in(path);
  std::string s;
  if (!(in >> s) || s == "max") return false;  // v2 writes "max" for no limit
  try {
    size_t used = 0;
    out = std::stoull(s, &used);
    return used == s.size();
  } catch (...) {
    return false;
  }
}

// The cgroup path of this process for a controller ("memory" for v1, "" for the v2 line "0::").
std::string cgroup_of(const std::string& root, bool v2) {
  std::ifstream in(root + "/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string ctrl = line.substr(a + 1, b - a - 1);
    if (v2 ? (line.compare(0, a, "0") == 0 && ctrl.empty()) : ctrl.find("memory") != std::string::npos) return line.substr(b + 1);
  }
  return {};
}

// The tightest (limit - usage) over the candidate directories; a container usually sees its own
// cgroup at the mount's root, a host process under its path.
bool cgroup_room(const std::string& root, uint64_t& room, std::string& where) {
  struct Layout {
    bool v2;
    const char* mount;
    const char* limit;
    const char* usage;
  };
  const Layout layouts[] = {{true, "/sys/fs/cgroup", "memory.max", "memory.current"},
                            {false, "/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes"}};
  bool found = false;
  for (const Layout& l : layouts) {
    std::string rel = cgroup_of(root, l.v2);
    for (const std::string& dir : {root + l.mount + rel, root + l.mount}) {
      uint64_t limit = 0, usage = 0;
      if (!read_u64(dir + "/" + l.limit, limit) || limit >= (uint64_t{1} << 60)) continue;  // v1 writes ~2^63 for none
      if (!read_u64(dir + "/" + l.usage, usage)) usage = 0;
      uint64_t r = limit > usage ? limit - usage : 0;
      if (!found || r < room) room = r, where = dir + "/" + l.limit;
      found = true;
    }
  }
  return found;
}

}  // namespace

MemoryRoom memory_room(const std::string& root) {
  MemoryRoom m;
  m.host = uint64_t{8} << 30;
  std::ifstream in(root + "/proc/meminfo");
  std::string key, unit;
  uint64_t kb = 0;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") {
      m.host = kb * 1024;
      break;
    }
  m.available = m.host;
  uint64_t room = 0;
  if (cgroup_room(root, room, m.cgroup_path)) {
    m.cgroup = room;
    if (room < m.available) m.available = room;
  }
  return m;
}

}  // namespace sg
