// How much memory this process may still use: the least of the machine's available memory and
// the room left under its cgroup's limit (v2 memory.max, or v1 memory.limit_in_bytes). A job in a
// 2 GiB container on a 1 TiB host has 2 GiB, and the kernel's OOM killer says nothing before it
// ends the process: limits are checked against this before anything big is built or allocated.
#pragma once
#include <cstdint>
#include <string>

namespace sg {

struct MemoryRoom {
  uint64_t available = 0;   // the least of the two below (bytes)
  uint64_t host = 0;        // MemAvailable (/proc/meminfo), 8 GiB when unreadable
  uint64_t cgroup = 0;      // the cgroup's limit less its usage; 0 when there is no limit
  std::string cgroup_path;  // the limit file read, when there is a limit
};

// `root` prefixes every path read (a test's fake /proc and /sys/fs/cgroup).
MemoryRoom memory_room(const std::string& root = "");

}  // namespace sg
