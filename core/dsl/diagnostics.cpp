#include "core/dsl/diagnostics.hpp"

#include <algorithm>
#include <ostream>

namespace sg {

namespace {

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::Note: return "note";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "error";
}

// The source line and a caret under loc (tabs kept so the caret lines up). A very long line is
// shown as a window around the caret.
void render_excerpt(std::string& out, Loc loc, uint32_t length, const SourceManager& sm) {
  if (!loc.valid()) return;
  const SourceFile& f = sm.file(loc.file);
  std::string_view line = f.line(loc.line);
  if (line.empty() && loc.line > f.line_count()) return;
  constexpr size_t kWidth = 100;
  size_t col = loc.col ? loc.col - 1 : 0;
  size_t from = 0;
  std::string prefix, suffix;
  if (line.size() > kWidth + 20) {
    from = col > kWidth / 2 ? col - kWidth / 2 : 0;
    if (from + kWidth > line.size()) from = line.size() > kWidth ? line.size() - kWidth : 0;
    if (from > 0) prefix = "...";
    if (from + kWidth < line.size()) suffix = "...";
    line = line.substr(from, kWidth);
    length = static_cast<uint32_t>(std::min<size_t>(length, kWidth));
  }
  out += "  " + prefix;
  out += line;
  out += suffix + "\n  " + std::string(prefix.size(), ' ');
  for (size_t i = from; i < col && i - from < line.size(); ++i) out += line[i - from] == '\t' ? '\t' : ' ';
  out += '^';
  for (uint32_t i = 1; i < length && col + i - from < line.size(); ++i) out += '~';
  out += '\n';
}

}  // namespace

std::string Diagnostics::fold_key(const Loc& loc, const std::string& message) {
  return std::to_string(loc.file) + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col) + ":" +
         message.substr(0, message.find(" ("));
}

void Diagnostics::reindex() {
  folds_.clear();
  if (!fold_) return;
  for (size_t i = 0; i < diags_.size(); ++i)
    if (diags_[i].severity == Severity::Error) folds_.emplace(fold_key(diags_[i].loc, diags_[i].message), i);
}

Diagnostic& Diagnostics::add(Severity s, Loc loc, std::string message, uint32_t length) {
  if (s == Severity::Error) ++errors_;
  if (s == Severity::Error && fold_) {
    // Loops repeat statements: report each failing statement once, with its first instance.
    std::string key = fold_key(loc, message);
    auto it = folds_.find(key);
    if (it != folds_.end()) {
      ++diags_[it->second].repeats;
      return diags_[it->second];
    }
    if (diags_.size() < kMaxKept) folds_.emplace(std::move(key), diags_.size());
  }
  if (fold_ && diags_.size() >= kMaxKept) {
    ++(s == Severity::Error ? dropped_errors_ : dropped_others_);
    spare_ = Diagnostic{s, loc, length ? length : 1, std::move(message), {}, 0, false};
    return spare_;
  }
  diags_.push_back(Diagnostic{s, loc, length ? length : 1, std::move(message), {}, 0, false});
  return diags_.back();
}

void Diagnostics::sort_from(size_t from) {
  if (from >= diags_.size()) return;
  std::stable_sort(diags_.begin() + static_cast<std::ptrdiff_t>(from), diags_.end(), [](const Diagnostic& a, const Diagnostic& b) {
    if (a.loc.file != b.loc.file) return a.loc.file < b.loc.file;
    if (a.loc.line != b.loc.line) return a.loc.line < b.loc.line;
    return a.loc.col < b.loc.col;
  });
  reindex();
}

const Diagnostic* Diagnostics::unsupported_since(size_t from) const {
  const Diagnostic* found = nullptr;
  for (size_t i = from; i < diags_.size(); ++i) {
    const Diagnostic& d = diags_[i];
    if (d.severity != Severity::Error) continue;
    if (!d.unsupported) return nullptr;
    if (!found) found = &d;
  }
  return found;
}

Diagnostic& Diagnostics::error(Loc loc, std::string message, uint32_t length) {
  return add(Severity::Error, loc, std::move(message), length);
}

Diagnostic& Diagnostics::warning(Loc loc, std::string message, uint32_t length) {
  return add(Severity::Warning, loc, std::move(message), length);
}

Diagnostic& Diagnostics::note(Loc loc, std::string message, uint32_t length) {
  return add(Severity::Note, loc, std::move(message), length);
}

void Diagnostics::locate_from(size_t from, Loc loc, std::string_view context) {
  for (size_t i = from; i < diags_.size(); ++i) {
    Diagnostic& d = diags_[i];
    if (d.loc.valid()) continue;
    d.loc = loc;
    if (!context.empty()) d.message.insert(0, context);
  }
  reindex();
}

std::string Diagnostics::messages(size_t from) const {
  std::string out;
  for (size_t i = from; i < diags_.size(); ++i)
    if (diags_[i].severity == Severity::Error) out += (out.empty() ? "" : "; ") + diags_[i].message;
  return out;
}

void Diagnostics::append(const Diagnostics& other) {
  for (const Diagnostic& d : other.diags_) {
    size_t before = diags_.size();
    Diagnostic& mine = add(d.severity, d.loc, d.message, d.length);
    if (d.severity == Severity::Error) errors_ += d.repeats;
    if (&mine == &spare_) continue;
    mine.repeats += d.repeats;
    if (diags_.size() == before) continue;  // folded into an earlier one: its notes stay
    mine.notes = d.notes;
    mine.unsupported = d.unsupported;
  }
  dropped_errors_ += other.dropped_errors_;
  dropped_others_ += other.dropped_others_;
  errors_ += other.dropped_errors_;
}

std::string render_diagnostic(const Diagnostic& d, const SourceManager& sm) {
  // A diagnostic without a file (a missing file, a bad flag) is the tool's own.
  std::string where = d.loc.file == 0 ? std::string("stepgraph") : sm.describe(d.loc);
  std::string out = where + ": " + severity_name(d.severity) + ": " + d.message + "\n";
  render_excerpt(out, d.loc, d.length, sm);
  if (d.repeats > 0)
    out +=
        "  note: the same error occurs " + std::to_string(d.repeats) + " more time" + (d.repeats == 1 ? "" : "s") + " at this statement\n";
  for (const auto& n : d.notes) {
    if (n.loc.valid()) {
      out += sm.describe(n.loc) + ": note: " + n.message + "\n";
      render_excerpt(out, n.loc, 1, sm);
    } else {
      out += "  note: " + n.message + "\n";
    }
  }
  return out;
}

std::string Diagnostics::render(const SourceManager& sm, size_t from) const {
  std::string out;
  for (size_t i = from; i < diags_.size(); ++i) out += render_diagnostic(diags_[i], sm);
  if (dropped() > 0) {
    auto count = [](uint64_t n, const char* what) { return std::to_string(n) + " more " + what + (n == 1 ? "" : "s"); };
    std::string more = dropped_errors_ ? count(dropped_errors_, "error") : std::string();
    if (dropped_others_) more += (more.empty() ? "" : " and ") + count(dropped_others_, "warning or note");
    out += "stepgraph: note: " + more + " not shown (the first " + std::to_string(kMaxKept) + " are above)\n";
  }
  return out;
}

void Diagnostics::print(std::ostream& os, const SourceManager& sm) const { os << render(sm); }

}  // namespace sg
