#include "verify/verify.hpp"

#include <algorithm>

#include "core/base/sizes.hpp"
#include "core/graph/elaborate.hpp"

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
  return std::any_of(modes.begin(), modes.end(), [](const ModeResult& m) { return m.disagree; });
}

bool VerifyReport::timed_out() const {
  return std::any_of(modes.begin(), modes.end(), [](const ModeResult& m) { return m.timed_out; });
}

double VerifyReport::explicit_seconds() const {
  double s = 0;
  for (const auto& m : modes)
    if (!m.shared && m.ran_explicit) s += m.explicit_result.seconds;
  return s;
}

double VerifyReport::z3_seconds() const {
  double s = 0;
  for (const auto& m : modes)
    if (!m.shared && m.ran_z3) s += m.z3_result.seconds;
  return s;
}

namespace {

bool decided(const EngineResult& r) { return r.verdict != Verdict::Unknown && r.complete; }

// The verdict of one semantics from what the engines said, and who decided it.
void conclude(ModeResult& m) {
  const EngineResult &e = m.explicit_result, &z = m.z3_result;
  // Z3 answers only when it decided. A defect the explicit engine found is real even when its
  // search was cut short: the true verdict comes no later than it.
  bool clash = m.ran_explicit && m.ran_z3 && e.verdict != Verdict::Unknown && z.verdict != Verdict::Unknown &&
               (e.complete ? e.verdict != z.verdict : priority(z.verdict) > priority(e.verdict));
  if (clash) {
    m.verdict = Verdict::Unknown;
    m.disagree = true;
    m.decided_by = "the engines disagree";
    return;
  }
  auto aside = [](const char* name, const EngineResult& r) {
    return std::string(name) + ": " + (r.note.empty() ? verdict_name(r.verdict) : r.note);
  };
  if (m.ran_explicit && decided(e)) {
    m.verdict = e.verdict;
    if (!m.ran_z3) m.decided_by = "explicit";
    else if (z.verdict == e.verdict) m.decided_by = "explicit, z3 agrees";
    else m.decided_by = "explicit (" + aside("z3", z) + ")";
  } else if (m.ran_z3 && z.verdict != Verdict::Unknown) {
    m.verdict = z.verdict;
    m.decided_by = m.ran_explicit ? "z3 (" + aside("explicit", e) + ")" : "z3";
  } else if (m.ran_explicit && e.verdict != Verdict::Unknown) {
    // A defect an unfinished search found is real; an earlier one may hide in what it skipped.
    m.verdict = e.verdict;
    m.decided_by = "explicit (" + e.note + ")";
  } else {
    m.verdict = Verdict::Unknown;
    m.timed_out = (m.ran_explicit && e.timed_out) || (m.ran_z3 && z.timed_out);
  }
}

}  // namespace

VerifyReport verify_graph(const StepGraph& g, const VerifyOptions& vo, const std::function<void(const VerifyReport&)>& on_mode) {
  VerifyReport rep;
  rep.built = true;
  rep.schedule = g.schedule;
  rep.ranks = g.nranks;
  rep.steps = g.size();
#ifdef STEPGRAPH_HAVE_Z3
  bool z3_built = true;
#else
  bool z3_built = false;  // z3 and both still run it, to say so
#endif
  bool use_explicit = vo.engine != Engine::Z3;
  bool force_z3 = vo.engine == Engine::Z3 || vo.engine == Engine::Both;
  bool crosscheck = vo.engine == Engine::Auto && z3_built && g.size() <= vo.crosscheck_max_steps;
  // Choreographic sends complete at once under both semantics; without MPI sends the two
  // semantics have the same executions, so the second is not run again.
  bool mpi_sends = false;
  for (StepId s = 0; s < g.size() && !mpi_sends; ++s) mpi_sends = g.local(s) && g.kind(s) == StepKind::Send;
  for (size_t i = 0; i < vo.modes.size(); ++i) {
    SendMode mode = vo.modes[i];
    if (i > 0 && !mpi_sends) {
      ModeResult copy = rep.modes.front();
      copy.mode = mode;
      copy.shared = true;
      copy.explicit_result.cx.mode = mode;
      copy.z3_result.cx.mode = mode;
      rep.modes.push_back(copy);
      if (on_mode) on_mode(rep);
      continue;
    }
    ModeResult m;
    m.mode = mode;
    if (std::chrono::steady_clock::now() >= vo.deadline) {  // not started: the limit came first
      m.timed_out = true;
      rep.modes.push_back(std::move(m));
      if (on_mode) on_mode(rep);
      continue;
    }
    if (use_explicit) {
      ExplicitOptions eo = vo.explicit_opts;
      eo.deadline = std::min(eo.deadline, vo.deadline);
      m.ran_explicit = true;
      m.explicit_result = run_explicit(g, mode, eo);
    }
    const EngineResult& e = m.explicit_result;
    bool timed_out = use_explicit && e.timed_out;
    // z3 decides what the explicit search left open (auto), or cross-checks a decided verdict
    // within its own time budget.
    bool needs_z3 = use_explicit && !decided(e) && !timed_out;
    if (mode == SendMode::Bounded) {
      // Z3's encoding knows buffered and zero-buffer sends only: bounded connections are the
      // explicit engine's (one maximal run decides them: matching is deterministic there).
      if (force_z3) m.z3_result.note = "no encoding of bounded connections";
    } else if (force_z3 || (vo.engine == Engine::Auto && z3_built && (needs_z3 || crosscheck) && !timed_out)) {
      Z3Options zo = vo.z3_opts;
      zo.deadline = std::min(zo.deadline, vo.deadline);
      if (vo.engine == Engine::Auto && !needs_z3)
        zo.deadline = std::min(
            zo.deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(vo.crosscheck_seconds * 1000)));
      m.ran_z3 = true;
      m.z3_result = run_z3(g, mode, zo);
      // A cross-check that ran out of its own budget says so; only the run's limit makes the
      // semantics undecided.
      if (m.z3_result.timed_out && std::chrono::steady_clock::now() < vo.deadline && vo.engine == Engine::Auto && !needs_z3) {
        m.z3_result.timed_out = false;
        m.z3_result.note = "cross-check stopped after its " + std::to_string(static_cast<int>(vo.crosscheck_seconds)) + " s";
      }
    }
    conclude(m);
    rep.modes.push_back(std::move(m));
    if (on_mode) on_mode(rep);
  }
  bool any_z3 = std::any_of(rep.modes.begin(), rep.modes.end(), [](const ModeResult& m) { return m.ran_z3; });
  bool bounded = std::any_of(rep.modes.begin(), rep.modes.end(), [](const ModeResult& m) { return m.mode == SendMode::Bounded; });
  if (bounded && force_z3) {
    rep.note = "z3 has no encoding of bounded connections yet: the explicit engine decides them (--engine explicit or auto)";
    return rep;
  }
  if (vo.engine == Engine::Auto && !z3_built) rep.note = "z3 skipped: this stepgraph was built without Z3 (STEPGRAPH_WITH_Z3=OFF)";
  else if (vo.engine == Engine::Auto && !any_z3 && !crosscheck)
    rep.note = "no z3 cross-check above " + with_commas(vo.crosscheck_max_steps) + " steps (--engine both forces it)";
  return rep;
}

}  // namespace sg::verify
