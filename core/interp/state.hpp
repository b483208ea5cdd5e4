// The values of every chunk of every rank, and the step that last wrote each.
#pragma once
#include <vector>

#include "core/graph/step_graph.hpp"
#include "core/interp/value.hpp"

namespace sg {

struct ChunkSlot {
  Value v;
  StepId writer = kNoStep;  // kNoStep: still the initial value (or never written)
};

class MachineState {
 public:
  MachineState() = default;
  explicit MachineState(const StepGraph& g);
  ChunkSlot& at(uint32_t rank, uint32_t buf, uint32_t chunk) { return bufs_[buf][uint64_t{rank} * chunks_[buf] + chunk]; }
  const ChunkSlot& at(uint32_t rank, uint32_t buf, uint32_t chunk) const { return bufs_[buf][uint64_t{rank} * chunks_[buf] + chunk]; }
  // Gives every chunk the value its init rules say (others stay undefined).
  void apply_inits(const StepGraph& g);
  // Folds every chunk's value (not its writer) into h with `fold` (a state fingerprint).
  template <class Fold>
  void fold_values(Fold&& fold) const {
    for (const auto& b : bufs_)
      for (const ChunkSlot& c : b) fold(c.v);
  }

 private:
  std::vector<std::vector<ChunkSlot>> bufs_;
  std::vector<uint32_t> chunks_;
};

}  // namespace sg
