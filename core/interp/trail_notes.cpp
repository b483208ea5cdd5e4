// Notes from a followed term's trail (see trail_notes.hpp).
#include "core/interp/trail_notes.hpp"

#include "core/io/writers.hpp"

namespace sg {

std::vector<std::pair<size_t, Run>> trail_atoms(const PostconditionReport& p, size_t max) {
  std::vector<std::pair<size_t, Run>> out;
  for (size_t i = 0; i < p.issues.size() && out.size() < max; ++i) {
    const Issue& is = p.issues[i];
    const std::vector<Run>& from = !is.missing.empty() ? is.missing : is.extra;
    if (from.empty()) continue;
    Run a = from.front();
    a.hi = a.lo + 1;
    a.count = 1;
    out.emplace_back(i, a);
  }
  return out;
}

ExpectedIndex::ExpectedIndex(const StepGraph& g, const MachineState& initial) {
  for_each_expected(g, initial, [&](const Expectation&, uint32_t rank, uint32_t buf, uint32_t chunk, const Value& v) {
    expected_[(uint64_t{rank} << 40) | (uint64_t{buf} << 28) | chunk] = v;
  });
}

bool ExpectedIndex::covered_without(uint32_t rank, uint32_t buf, uint32_t chunk, const Run& a) const {
  auto it = expected_.find((uint64_t{rank} << 40) | (uint64_t{buf} << 28) | chunk);
  if (it == expected_.end()) return false;
  for (const Run& x : it->second.runs)
    if (x.same_family(a) && x.lo <= a.lo && a.lo < x.hi) return false;
  return true;
}

namespace {

std::string place(const StepGraph& g, uint32_t rank, uint32_t buf, uint32_t chunk) {
  return "rank " + std::to_string(rank) + ", " + g.chunk_name(buf, chunk);
}

// Appended piece by piece: "#" + std::to_string(…) draws GCC 12's false -Wrestrict.
std::string step_words(const StepGraph& g, StepId s) {
  std::string out = "#";
  out.append(std::to_string(s)).append(" ").append(describe_step(g, s));
  return out;
}

// The step that sent what a receive took, when it has its own line (a `send … from … to` statement
// is one line for both ends; an MSCCL or `on` program's send is another).
void note_sender(const StepGraph& g, const InterpResult& r, StepId s, Diagnostic& d) {
  if (s == kNoStep || g.kind(s) != StepKind::Recv || s >= r.partner.size()) return;
  StepId send = r.partner[s];
  if (send == kNoStep || (g.loc(send).file == g.loc(s).file && g.loc(send).line == g.loc(s).line)) return;
  d.notes.push_back({g.loc(send), "sent by rank " + std::to_string(g.rank(send)) + " here (" + step_words(g, send) + ")"});
}

}  // namespace

void add_trail_notes(const StepGraph& g, const InterpResult& r, const Issue& is, const Trail& t, const ExpectedIndex& where,
                     Diagnostic& d) {
  auto covered_without = [&](uint32_t rank, uint32_t buf, uint32_t chunk) { return where.covered_without(rank, buf, chunk, t.atom); };
  const std::string term = describe_run(t.atom, g, is.buf);
  bool missing = !is.missing.empty();
  if (missing) {
    // Sent or copied where it does not belong (a chunk whose expected value lacks it): that step
    // took it off its way, whatever happened to it after.
    for (const TrailEvent& e : t.events)
      if (e.kind == TrailEvent::Arrive && covered_without(e.rank, e.buf, e.chunk)) {
        d.notes.push_back({g.loc(e.step), "the missing term " + term + " went where it does not belong here (" + step_words(g, e.step) +
                                              "), into " + place(g, e.rank, e.buf, e.chunk)});
        note_sender(g, r, e.step, d);
        return;
      }
    const TrailEvent* lost = nullptr;
    const TrailEvent* last = nullptr;
    // A received term overwritten unread (the first: what follows is its consequence) names the
    // transfer that took it astray; else the last loss; else the last move.
    for (const TrailEvent& e : t.events) {
      if (e.kind != TrailEvent::Lost) {
        last = &e;
        continue;
      }
      bool received = e.brought != kNoStep && g.kind(e.brought) == StepKind::Recv;
      if (!lost || (received && !(lost->brought != kNoStep && g.kind(lost->brought) == StepKind::Recv))) lost = &e;
      else if (!received && !(lost->brought != kNoStep && g.kind(lost->brought) == StepKind::Recv)) lost = &e;
    }
    if (lost) {
      // Brought somewhere and overwritten before anything read it: the data is lost there.
      std::string at = place(g, lost->rank, lost->buf, lost->chunk);
      if (lost->brought != kNoStep) {
        d.notes.push_back(
            {g.loc(lost->brought), "the missing term " + term + " reached " + at + " here (" + step_words(g, lost->brought) + ")"});
        note_sender(g, r, lost->brought, d);
        d.notes.push_back(
            {g.loc(lost->step), "and was overwritten there before anything read it (" + step_words(g, lost->step) + "): lost"});
      } else {
        d.notes.push_back({g.loc(lost->step), "the missing term " + term + " started at " + at +
                                                  " and was overwritten there before anything read it (" + step_words(g, lost->step) +
                                                  "): lost"});
      }
      return;
    }
    if (!last) {
      if (t.ends.empty())
        d.notes.push_back({Loc{}, "the missing term " + term + " is nowhere: no initial value holds it and no step made it"});
      else
        d.notes.push_back({Loc{}, "the missing term " + term + " never moved: no step took it from where it started, " +
                                      place(g, std::get<0>(t.ends[0]), std::get<1>(t.ends[0]), std::get<2>(t.ends[0]))});
      return;
    }
    std::string ends;
    for (size_t i = 0; i < t.ends.size() && i < 3; ++i)
      ends += (i ? ", " : "") + place(g, std::get<0>(t.ends[i]), std::get<1>(t.ends[i]), std::get<2>(t.ends[i]));
    if (t.ends.size() > 3) ends += " and " + std::to_string(t.ends.size() - 3) + " more";
    d.notes.push_back(
        {g.loc(last->step), "the missing term " + term + " last moved here (" + step_words(g, last->step) + "), into " +
                                place(g, last->rank, last->buf, last->chunk) + ", and no step took it on from there" +
                                (ends.empty() ? std::string("; it is nowhere at the end") : "; at the end it is in " + ends)});
    note_sender(g, r, last->step, d);
    return;
  }
  // An extra term: the first step that put it where it does not belong, or that counted it twice.
  for (const TrailEvent& e : t.events) {
    if (e.kind != TrailEvent::Arrive) continue;
    if (e.again) {
      d.notes.push_back({g.loc(e.step), "the extra term " + term + " was first counted twice here (" + step_words(g, e.step) + "), in " +
                                            place(g, e.rank, e.buf, e.chunk)});
      note_sender(g, r, e.step, d);
      return;
    }
    if (covered_without(e.rank, e.buf, e.chunk)) {
      d.notes.push_back({g.loc(e.step), "the extra term " + term + " first went where it does not belong here (" + step_words(g, e.step) +
                                            "), into " + place(g, e.rank, e.buf, e.chunk)});
      note_sender(g, r, e.step, d);
      return;
    }
  }
  for (auto it = t.events.rbegin(); it != t.events.rend(); ++it)
    if (it->kind == TrailEvent::Arrive && it->rank == is.rank && it->buf == is.buf && it->chunk == is.chunk) {
      d.notes.push_back({g.loc(it->step), "the extra term " + term + " came with this step (" + step_words(g, it->step) + ")"});
      note_sender(g, r, it->step, d);
      return;
    }
}

std::vector<DiagNote> trail_notes(const StepGraph& g, InterpOptions opts, const PostconditionReport& p, size_t issue) {
  if (issue >= p.issues.size()) return {};
  for (const auto& [i, a] : trail_atoms(p, issue + 1)) {
    if (i != issue) continue;
    opts.follow = {a};
    InterpResult r = interpret(g, opts);
    if (r.trails.empty()) return {};
    ExpectedIndex where(g, r.initial);
    Diagnostic d;
    add_trail_notes(g, r, p.issues[issue], r.trails[0], where, d);
    return d.notes;
  }
  return {};
}

}  // namespace sg
