// The Z3 engine's Encoder (private to verify/): the class and the helpers its four files share.
// It is one object (the solver, its variables and the caches of values), so its definition
// lives here and its members in z3_engine.cpp (the driver: queries in order, solver calls, the
// time limit), z3_encode.cpp (the step graph as constraints), z3_queries.cpp (the verdict
// queries and their counterexamples) and z3_values.cpp (the symbolic values of chunks). The
// model itself is described at the top of z3_engine.cpp.
#pragma once
#include <z3++.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/interp/state.hpp"
#include "verify/verdict.hpp"
#include "verify/wait_for.hpp"
#include "verify/z3_engine.hpp"

namespace sg::verify::detail {

inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline uint64_t atom_hash(const Run& r, uint32_t coord) {
  uint64_t h = mix(static_cast<uint64_t>(r.kind) * 1000003 + static_cast<uint64_t>(r.mask));
  h = mix(h ^ r.buf);
  h = mix(h ^ r.fixed);
  return mix(h ^ coord);
}

inline uint64_t value_hash(const Value& v) {
  uint64_t s = 0;
  for (const Run& r : v.runs)
    for (uint32_t c = r.lo; c < r.hi; ++c) s += atom_hash(r, c) * r.count;
  return s;
}

struct Timeout {};
struct InlineCycle {};  // inline value terms met a cycle of candidate pairs (see value_variable)

class Encoder {
 public:
  Encoder(const StepGraph& g, SendMode mode, const Z3Options& o) : g_(g), mode_(mode), o_(o), n_(g.size()) {}

  EngineResult run();  // z3_engine.cpp

 private:
  // ------------------------------------------------------------------ variables (z3_encode.cpp)
  bool p2p(StepId s) const { return g_.local(s) && (g_.kind(s) == StepKind::Send || g_.kind(s) == StepKind::Recv); }
  bool blocking(StepId s) const { return !g_.nonblocking(s); }

  z3::expr conj(const std::vector<z3::expr>& v);
  z3::expr disj(const std::vector<z3::expr>& v);
  z3::expr matched(StepId s);
  z3::expr enabled(StepId s);
  void build();

  // ------------------------------------------------------------------ solving (z3_engine.cpp)
  void phase(const char* what);
  // Gives up at the deadline; cheap enough to call in every loop of the encoding.
  void tick() {
    if ((++ticks_ & 1023) == 0 && std::chrono::steady_clock::now() >= o_.deadline) throw Timeout{};
  }
  z3::check_result check(const std::vector<z3::expr>& extra);
  bool val(const z3::expr& e) { return model_->eval(e, true).is_true(); }
  int64_t ival(const z3::expr& e) { return model_->eval(e, true).get_numeral_int64(); }

  // ------------------------------------------------------------------ queries (z3_queries.cpp)
  ExecState state_from_model();
  std::vector<std::pair<StepId, StepId>> matching_from_model(bool only_wild);
  z3::expr unmatched(StepId o);
  std::optional<Counterexample> q_size_mismatch();
  std::optional<Counterexample> q_unmatched();
  std::optional<Counterexample> q_deadlock();
  z3::expr closed_before(StepId x, const z3::expr& time);
  // The chunks step s touches, each once, with whether it writes it.
  struct ChunkAccess {
    uint32_t buf, chunk;
    bool write;
  };
  std::vector<ChunkAccess> chunk_accesses(StepId s);
  std::optional<Counterexample> q_race();
  bool reaches(StepId from, StepId to);
  bool initially_defined(uint32_t rank, uint32_t buf, uint32_t c);
  std::optional<Counterexample> q_undefined();
  std::optional<Counterexample> q_wrong();

  // ------------------------------------------------------------------ values (z3_values.cpp)
  // Static reaching definitions: which step last wrote each chunk before each step, in the
  // rank's program order (race-free programs read exactly that; races are reported before).
  struct Version {
    StepId writer = kNoStep;  // kNoStep: the initial value
  };

  void reaching_defs();
  // Step, buffer and chunk in one key (buffers < 2^12 and chunks < 2^20 pack exactly, as in
  // the graph's packed ranges; larger ones are mixed).
  static uint64_t key(StepId s, uint32_t buf, uint32_t c) {
    if (buf < (1u << 12) && c < (1u << 20)) return (uint64_t{s} << 32) | (uint64_t{buf} << 20) | c;
    return mix((uint64_t{s} << 32) ^ mix((uint64_t{buf} << 32) | c)) | (uint64_t{1} << 63);
  }
  StepId prior(StepId s, uint32_t buf, uint32_t c);

  // The value of a chunk is a 64-bit sum of atom hashes (v) and whether it is defined (d). A
  // value known when encoding (everything that no wildcard match decides) is kept as a number
  // too, so attention tiles can name their operands and most formulas fold to constants.
  struct Term {
    z3::expr v;
    z3::expr d;
    bool known = false;  // v and d are the constants kv and kd
    uint64_t kv = 0;
    bool kd = false;
  };

  Term constant(uint64_t h, bool def);
  Term initial(uint32_t rank, uint32_t buf, uint32_t c);
  Term add(const Term& a, const Term& b);

  // A value node is "what step w writes into (buf, c)"; a read is "what step s sees in (buf, c)",
  // the node of its reaching definition or the initial value.
  struct Read {
    StepId s;
    uint32_t buf, c;
  };

  Term read(StepId s, uint32_t buf, uint32_t c);
  bool value_variable(StepId w) const;
  bool multi_inline(StepId w) const;
  void node_inputs(StepId w, uint32_t buf, uint32_t c, std::vector<Read>& in);
  Term combine(StepId w, uint32_t buf, uint32_t c, const std::vector<Term>& in);
  Term written(StepId w, uint32_t buf, uint32_t c);
  void define_values(std::vector<z3::expr>& out);
  Term compute_value(StepId w, uint32_t buf, uint32_t c, const std::vector<Term>& in);

  std::chrono::steady_clock::time_point phase_t_ = std::chrono::steady_clock::now();
  const StepGraph& g_;
  SendMode mode_;
  const Z3Options& o_;
  size_t n_;
  z3::context ctx_;
  z3::solver solver_{ctx_};
  z3::params params_{ctx_};
  std::unique_ptr<z3::model> model_;
  std::vector<z3::expr> I_, D_, t_, c_, M_, stuck_;
  std::vector<std::pair<StepId, StepId>> pr_;
  std::vector<std::vector<size_t>> pairs_of_;
  std::vector<StepId> wait_of_;
  std::vector<StepId> queue_;  // queue_partners(g_)
  std::vector<uint8_t> status_;
  std::vector<StepId> partner_;
  std::unordered_map<uint64_t, StepId> prior_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, StepId> final_;
  MachineState initial_;
  bool defs_done_ = false;
  bool inline_values_ = true;
  std::unordered_map<uint64_t, Term> memo_;
  struct DefJob {
    StepId w;
    uint32_t buf, c;
    Term t;
  };
  std::vector<DefJob> def_jobs_;
  int fresh_ = 0;
  uint32_t ticks_ = 0;
  int query_ = 0;
  std::string note_;
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> items_by_hash_;  // item hash -> (buffer, item), built when a tile needs it
};

}  // namespace sg::verify::detail
