// Diagnostics are collected as data (severity, location, message, notes) and rendered at the
// end, clang style: "file:line:col: error: message", the source line, and a caret.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/dsl/source.hpp"

namespace sg {

enum class Severity : uint8_t { Note, Warning, Error };

struct DiagNote {
  Loc loc;  // may be invalid: then the note has no source line
  std::string message;
};

struct Diagnostic {
  Severity severity = Severity::Error;
  Loc loc;
  uint32_t length = 1;  // width of the underline under the caret
  std::string message;
  std::vector<DiagNote> notes;
  uint64_t repeats = 0;  // the same statement failed this many more times (in loops)
  // A `require` failed: the schedule does not apply to this N or these parameters. Still an error
  // (exit 2), but not a mistake in the input: commands report the instance as "unsupported".
  bool unsupported = false;
};

class Diagnostics {
 public:
  // Reports an error; an error at a location already reported with the same message prefix
  // (up to the first '(') is counted as a repeat instead of printed again. Past kMaxKept
  // diagnostics (with folding on) new ones are only counted: a file of 100,000 stray tokens
  // gives the first hundred errors and "N more", in linear time, not a wall of text.
  static constexpr size_t kMaxKept = 100;
  Diagnostic& error(Loc loc, std::string message, uint32_t length = 1);
  Diagnostic& warning(Loc loc, std::string message, uint32_t length = 1);
  // Information that changes nothing about the result (e.g. an algorithm substituted for one
  // that refuses the group size); printed with the warnings.
  Diagnostic& note(Loc loc, std::string message, uint32_t length = 1);
  // A backend's failure (a device call, a transport, a file it writes): an error without a
  // location yet, since the code that failed does not know which statement it served. Returns
  // false, so that a bool function ends with `return diags.fail(msg);`; the caller that knows
  // the statement places it (locate_from).
  bool fail(std::string message) {
    add(Severity::Error, Loc{}, std::move(message), 1);
    return false;
  }
  // Places every diagnostic from index `from` on that has no location yet at `loc` (a step's
  // statement), its message prefixed with `context` (what was being done: "a copy to the device
  // (x[0:4]) on GPU 0: "). An invalid loc only adds the context.
  void locate_from(size_t from, Loc loc, std::string_view context = {});
  // Appends other's diagnostics (each located one keeps its place; folding applies).
  void append(const Diagnostics& other);
  // The messages of the errors from index `from` on, joined by "; ", without locations: for a
  // caller that folds a failure into a message of its own (a refusal naming the rank).
  std::string messages(size_t from = 0) const;
  // The number of diagnostics kept: an index for locate_from and render.
  size_t size() const { return diags_.size(); }
  bool has_errors() const { return errors_ > 0; }
  uint64_t error_count() const { return errors_; }
  const std::vector<Diagnostic>& all() const { return diags_; }
  bool too_many() const { return errors_ >= max_errors_; }
  void set_max_errors(uint64_t n) { max_errors_ = n; }
  // Findings (one per rank or chunk) must not be folded into repeats like loop errors.
  void set_fold_repeats(bool on) {
    fold_ = on;
    reindex();
  }
  // Orders the diagnostics from index `from` on by source position (the lexer's and the
  // parser's errors interleave that way).
  void sort_from(size_t from);
  // The failed `require` that refuses an instance, when the errors from index `from` on are only
  // that (an instance with other errors is bad input); else null.
  const Diagnostic* unsupported_since(size_t from) const;
  void clear() {
    diags_.clear();
    folds_.clear();
    errors_ = 0;
    dropped_errors_ = dropped_others_ = 0;
  }
  // Diagnostics counted but not kept (past kMaxKept).
  uint64_t dropped() const { return dropped_errors_ + dropped_others_; }
  // Drops the warnings and notes from index n on, keeping errors (a second elaboration of the
  // same schedule repeats the first one's warnings).
  void drop_warnings_from(size_t n) {
    size_t k = n;
    for (size_t i = n; i < diags_.size(); ++i)
      if (diags_[i].severity == Severity::Error) {
        if (k != i) diags_[k] = std::move(diags_[i]);  // (a self-move would empty it)
        ++k;
      }
    if (k < diags_.size()) diags_.resize(k);
    reindex();
  }
  // Renders every diagnostic from index `from` on, then how many were not kept; returns the text.
  std::string render(const SourceManager& sm, size_t from = 0) const;
  void print(std::ostream& os, const SourceManager& sm) const;

 private:
  Diagnostic& add(Severity s, Loc loc, std::string message, uint32_t length);
  static std::string fold_key(const Loc& loc, const std::string& message);
  void reindex();  // rebuilds folds_ after diags_ moved
  std::vector<Diagnostic> diags_;
  std::unordered_map<std::string, size_t> folds_;  // fold key -> index of the error in diags_
  Diagnostic spare_;                               // what add returns for a diagnostic not kept
  uint64_t dropped_errors_ = 0, dropped_others_ = 0;
  uint64_t errors_ = 0;
  uint64_t max_errors_ = 10000;
  bool fold_ = true;
};

// Renders one diagnostic (with its notes) as text.
std::string render_diagnostic(const Diagnostic& d, const SourceManager& sm);

}  // namespace sg
