// Ids of a pool of reusable records (the analytic engine's flows, their groups, collectives'
// gangs): a freed id is taken again before the pool grows, so the pool is as large as the most
// records alive at once, not as the run's count.
#pragma once
#include <cstdint>
#include <vector>

namespace sg::sim {

// An id from `free` (its record as it was left: callers reset what they use), or a new record
// at the end of `items`.
template <class T>
uint32_t take_id(std::vector<T>& items, std::vector<uint32_t>& free) {
  if (!free.empty()) {
    uint32_t id = free.back();
    free.pop_back();
    return id;
  }
  items.emplace_back();
  return static_cast<uint32_t>(items.size() - 1);
}

}  // namespace sg::sim
