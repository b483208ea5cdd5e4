#include "verify/verify.hpp"

#include "core/graph/passes.hpp"

namespace sg::verify {

const Counterexample* VerifyReport::counterexample() const {
  for (const auto& m : modes) {
    if (m.verdict == Verdict::Ok || m.verdict == Verdict::Unknown) continue;
    if (m.ran_explicit && m.explicit_result.verdict == m.verdict) return &m.explicit_result.cx;
    if (m.ran_z3 && m.z3_result.verdict == m.verdict) return &m.z3_result.cx;
  }
  return nullptr;
}

Verdict VerifyReport::worst() const {
  Verdict w = Verdict::Ok;
  bool unknown = false;
  for (const auto& m : modes) {
    if (m.verdict == Verdict::Unknown) unknown = true;
    else if (priority(m.verdict) < priority(w)) w = m.verdict;
  }
  return w == Verdict::Ok && unknown ? Verdict::Unknown : w;
}

bool VerifyReport::disagreement() const {
  for (const auto& m : modes)
    if (m.disagree) return true;
  return false;
}

VerifyReport verify_graph(const StepGraph& g, const VerifyOptions& vo) {
  VerifyReport rep;
  rep.built = true;
  rep.schedule = g.schedule;
  rep.ranks = g.nranks;
  rep.steps = g.size();
  bool use_explicit = vo.engine != Engine::Z3;
#ifdef STEPGRAPH_HAVE_Z3
  bool z3_built = true;
#else
  bool z3_built = false;  // z3 and both still run it, to say so
#endif
  bool use_z3 = vo.engine == Engine::Z3 || vo.engine == Engine::Both ||
                (vo.engine == Engine::Auto && z3_built && g.size() <= vo.auto_z3_max_steps);
  if (vo.engine == Engine::Auto && !z3_built)
    rep.note = "z3 skipped: this stepgraph was built without Z3 (STEPGRAPH_WITH_Z3=OFF)";
  else if (vo.engine == Engine::Auto && !use_z3)
    rep.note = "z3 skipped: " + std::to_string(g.size()) + " steps (auto runs it up to " + std::to_string(vo.auto_z3_max_steps) +
               "; use --engine z3 or both to force it)";
  // Choreographic sends complete at once under both semantics; without MPI sends the two
  // semantics have the same executions, so the second is not run again.
  bool mpi_sends = false;
  for (StepId s = 0; s < g.size() && !mpi_sends; ++s) mpi_sends = g.local(s) && g.kind(s) == StepKind::Send;
  for (size_t i = 0; i < vo.modes.size(); ++i) {
    SendMode mode = vo.modes[i];
    if (i > 0 && !mpi_sends) {
      ModeResult copy = rep.modes.front();
      copy.mode = mode;
      copy.explicit_result.cx.mode = mode;
      copy.z3_result.cx.mode = mode;
      rep.modes.push_back(copy);
      continue;
    }
    ModeResult m;
    m.mode = mode;
    if (use_explicit) {
      m.ran_explicit = true;
      m.explicit_result = run_explicit(g, mode, vo.explicit_opts);
    }
    if (use_z3) {
      m.ran_z3 = true;
      m.z3_result = run_z3(g, mode, vo.z3_opts);
    }
    Verdict e = m.explicit_result.verdict, z = m.z3_result.verdict;
    if (m.ran_explicit && m.ran_z3) {
      if (e == Verdict::Unknown) m.verdict = z;
      else if (z == Verdict::Unknown) m.verdict = e;
      else if (e == z) m.verdict = e;
      else {
        m.verdict = Verdict::Unknown;
        m.disagree = true;
      }
    } else {
      m.verdict = m.ran_explicit ? e : z;
    }
    rep.modes.push_back(std::move(m));
  }
  return rep;
}

}  // namespace sg::verify
