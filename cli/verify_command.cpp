// `stepgraph verify`: one line per N, printed and flushed as soon as that N is decided, then the
// counterexample; or JSON as the design specifies. `--timeout` bounds the whole run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "api/api.hpp"
#include "cli/commands.hpp"
#include "cli/shared.hpp"
#include "core/base/sizes.hpp"
#include "core/interp/run_check.hpp"
#include "core/io/writers.hpp"
#include "core/pipeline.hpp"
#include "verify/verify.hpp"

namespace sg::cli {

namespace {

using Clock = std::chrono::steady_clock;

std::string secs(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", s);
  return buf;
}

// "rendezvous and eager: ok" or "rendezvous: ok, eager: deadlock".
std::string verdicts_text(const verify::VerifyReport& rep) {
  bool same =
      std::all_of(rep.modes.begin(), rep.modes.end(), [&](const verify::ModeResult& m) { return m.verdict == rep.modes.front().verdict; });
  auto name = [](const verify::ModeResult& m) {
    return std::string(m.timed_out ? "undecided (time limit)" : verify::verdict_name(m.verdict));
  };
  if (same && rep.modes.size() > 1) return "rendezvous and eager: " + name(rep.modes.front());
  std::string per;
  for (const auto& m : rep.modes) per += (per.empty() ? "" : ", ") + std::string(verify::mode_name(m.mode)) + ": " + name(m);
  return per;
}

// Which engines decided: once when every semantics says the same, else per semantics.
std::string deciders_text(const verify::VerifyReport& rep) {
  bool same = std::all_of(rep.modes.begin(), rep.modes.end(),
                          [&](const verify::ModeResult& m) { return m.decided_by == rep.modes.front().decided_by; });
  if (same) return rep.modes.empty() || rep.modes.front().decided_by.empty() ? "" : rep.modes.front().decided_by + "; ";
  std::string per;
  for (const auto& m : rep.modes)
    if (!m.decided_by.empty()) per += std::string(verify::mode_name(m.mode)) + " by " + m.decided_by + "; ";
  return per;
}

// What a run has decided so far, for the line the watchdog prints if the limit comes first.
struct Progress {
  std::mutex mu;
  std::string schedule;
  uint32_t n = 0;
  const char* phase = "starting";
  std::string decided;  // "rendezvous: ok (explicit)"
  bool json = false;
  bool json_list = false;
  bool json_first = true;
};

// The backstop of --timeout. The engines stop at the deadline themselves, but elaboration and
// Z3's preprocessing of a large formula cannot be interrupted; if the run is still going a
// moment after the deadline, this prints what was decided and ends the process with exit 3.
class Watchdog {
 public:
  Watchdog(Clock::time_point deadline, double limit_s, Progress& p) : deadline_(deadline), limit_s_(limit_s), p_(p) {
    if (deadline_ != Clock::time_point::max()) th_ = std::thread([this] { watch(); });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> l(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (th_.joinable()) th_.join();
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> l(mu_);
    if (cv_.wait_until(l, deadline_ + std::chrono::milliseconds(600), [this] { return done_; })) return;
    std::lock_guard<std::mutex> out(p_.mu);
    std::string why = "time limit of " + secs(limit_s_) + " reached while " + p_.phase;
    if (p_.json) {
      nlohmann::json o = {
          {"schedule", p_.schedule}, {"ranks", p_.n}, {"verdicts", nlohmann::json::array()}, {"undecided", why}, {"decided", p_.decided}};
      std::cout << (p_.json_list ? (p_.json_first ? "[\n" : ",\n") : "") << o.dump(2) << (p_.json_list ? "\n]" : "") << "\n";
    } else {
      std::cout << "verify " << p_.schedule << (p_.n ? " N = " + std::to_string(p_.n) : std::string()) << ": undecided  (" << why
                << (p_.decided.empty() ? "" : "; decided: " + p_.decided) << ")\n";
    }
    std::cout.flush();
    std::cerr.flush();
    std::_Exit(3);
  }

  Clock::time_point deadline_;
  double limit_s_;
  Progress& p_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread th_;
};

}  // namespace

int cmd_verify(const VerifyOpts& o) {
  auto t_start = Clock::now();
  if (!(o.timeout_s >= 0)) return fail("--timeout needs a number of seconds >= 0");
  // The limit covers reading and parsing the schedule too: the watchdog starts first.
  auto deadline = Clock::time_point::max();
  if (o.timeout_s > 0) deadline = t_start + std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
  Progress prog;
  prog.schedule = o.c.target;
  prog.phase = "reading the schedule";
  prog.json = o.json;
  Watchdog dog(deadline, o.timeout_s, prog);
  Prepared p;
  if (int rc = prepare(o.c, p, true)) return rc;
  Session& s = p.s;
  const Target& t = p.t;
  const std::vector<uint32_t>& ns = p.ns;
  api::VerifyRequest req;
  req.semantics = api::semantics_named(o.semantics).value_or(api::Semantics::Auto);
  req.engine = api::engine_named(o.engine).value_or(verify::Engine::Auto);
  req.slots = o.slots;
  req.max_executions = o.max_executions;
  req.timing = o.timing;
  verify::VerifyOptions vo = api::verify_options(req);
  vo.deadline = deadline;
  {
    std::lock_guard<std::mutex> l(prog.mu);
    prog.schedule = t.name();
    prog.json_list = ns.size() > 1;
  }
  // Everything printed for one N goes out under the lock, then is flushed: a kill or the
  // watchdog loses nothing already decided, and never cuts a line in half.
  auto emit = [&](const std::string& out, const std::string& errs) {
    std::lock_guard<std::mutex> l(prog.mu);
    std::cerr << errs;
    std::cerr.flush();
    std::cout << out;
    std::cout.flush();
  };
  auto emit_json = [&](const nlohmann::json& obj) {
    std::lock_guard<std::mutex> l(prog.mu);
    std::cout << (prog.json_list ? (prog.json_first ? "[\n" : ",\n") : "") << obj.dump(2) << (prog.json_list ? "" : "\n");
    prog.json_first = false;
    std::cout.flush();
  };
  auto set_phase = [&](uint32_t n, const char* phase) {
    std::lock_guard<std::mutex> l(prog.mu);
    prog.n = n;
    prog.phase = phase;
  };

  int rc = 0;
  FoldedWarnings warnings;  // a chunk size that rounds down, once for all the N that say so
  size_t next = 0;          // the first N not verified (ns.size() when all were)
  for (; next < ns.size(); ++next) {
    uint32_t n = ns[next];
    if (Clock::now() >= vo.deadline) break;
    {
      std::lock_guard<std::mutex> l(prog.mu);
      prog.decided.clear();
    }
    set_phase(n, "elaborating");
    std::ostringstream dumped;
    api::VerifyPoint vp = api::verify_point(
        p, build_options(o.c, p, n, dumped, true), req, vo, [&] { set_phase(n, "verifying"); },
        [&](const verify::VerifyReport& r) {
          std::lock_guard<std::mutex> l(prog.mu);
          const verify::ModeResult& m = r.modes.back();
          prog.decided += (prog.decided.empty() ? "" : ", ") + std::string(verify::mode_name(m.mode)) + ": " +
                          (m.timed_out ? "undecided" : verify::verdict_name(m.verdict)) + " (" + m.decided_by + ")";
        });
    std::string dumps = dumped.str();
    std::string head = "verify " + t.name() + " N = " + std::to_string(n) + ": ";
    rc = std::max(rc, vp.status);
    if (!vp.built) {
      if (o.json) emit_json(vp.json);
      else if (!vp.unsupported.empty()) {
        if (!o.quiet) emit(dumps + head + "unsupported (" + vp.unsupported + ")\n", vp.diagnostics);
      } else {
        emit(dumps + head + "bad input\n", vp.diagnostics);
      }
      continue;
    }
    warnings.add(s.diags, n);
    if (!dumps.empty()) emit(dumps, "");
    const verify::VerifyReport& rep = vp.report;
    verify::Verdict worst = rep.worst();
    double total = vp.total_s;
    if (o.json) {
      emit_json(vp.json);
      if (rep.timed_out()) {
        ++next;
        break;
      }
      continue;
    }
    if (o.quiet && worst == verify::Verdict::Ok && !rep.disagreement()) continue;
    std::string label = rep.disagreement() ? "engines disagree" : rep.timed_out() ? "undecided (time limit)" : verify::verdict_name(worst);
    std::string line = head + label + "  (" + verdicts_text(rep) + "; " + deciders_text(rep) + with_commas(rep.steps) + " steps";
    if (!vp.params_text.empty()) line += "; " + vp.params_text;
    if (o.timing) {
      std::string engines;
      if (rep.explicit_seconds() > 0 || std::any_of(rep.modes.begin(), rep.modes.end(), [](auto& m) { return m.ran_explicit; }))
        engines += "explicit " + secs(rep.explicit_seconds());
      if (std::any_of(rep.modes.begin(), rep.modes.end(), [](auto& m) { return m.ran_z3; }))
        engines += (engines.empty() ? "" : ", ") + std::string("z3 ") + secs(rep.z3_seconds());
      line += "; " + engines + ", total " + secs(total);
    }
    line += ")\n";
    for (const auto& m : rep.modes) {
      if (m.shared) continue;
      if (m.disagree)
        line += "  " + std::string(verify::mode_name(m.mode)) + ": explicit says " + verify::verdict_name(m.explicit_result.verdict) +
                ", z3 says " + verify::verdict_name(m.z3_result.verdict) + " — please report this\n";
      else if (m.verdict == verify::Verdict::Unknown)
        for (const auto* e : {&m.explicit_result, &m.z3_result})
          if (e->verdict == verify::Verdict::Unknown && !e->note.empty() && (e == &m.explicit_result ? m.ran_explicit : m.ran_z3))
            line += "  " + std::string(verify::mode_name(m.mode)) + ", " + (e == &m.explicit_result ? "explicit" : "z3") + ": " + e->note +
                    "\n";
    }
    if (!rep.note.empty()) line += "  note: " + rep.note + "\n";
    line += vp.counterexample_text;
    emit(line, "");
    if (rep.timed_out()) {
      ++next;
      break;
    }
  }
  // N's never started because the limit came first.
  if (next < ns.size()) {
    rc = std::max(rc, 3);
    std::string list = rank_ranges(std::vector<uint32_t>(ns.begin() + static_cast<std::ptrdiff_t>(next), ns.end()));
    if (!o.json) emit("stopped at the time limit of " + secs(o.timeout_s) + ": N = " + list + " not verified\n", "");
  }
  if (!o.quiet) {
    std::ostringstream w;
    warnings.print(w, s.sources);
    emit("", w.str());
  }
  if (o.json && prog.json_list) emit(prog.json_first ? "[]\n" : "\n]\n", "");
  if (o.timing && ns.size() > 1 && !o.json) emit("total " + secs(std::chrono::duration<double>(Clock::now() - t_start).count()) + "\n", "");
  return rc;
}

}  // namespace sg::cli
