// Two kinds of error, never mixed (Halide's user_error / internal_error):
// - a user error is something wrong in the input: a Diagnostic with its source location in the
//   session's list (core/dsl/diagnostics.hpp), exit code 2;
// - an internal error is a broken invariant of stepgraph itself: thrown as InternalError, never
//   put in the user's list, and reported by the command line as "stepgraph bug: …, please
//   report it" with exit code 70 (sysexits' EX_SOFTWARE), so that a script can tell "my schedule
//   is wrong" from "the tool is wrong".
#pragma once
#include <exception>
#include <source_location>
#include <string>

#include "core/base/loc.hpp"

namespace sg {

// The exit code of an internal error (sysexits.h EX_SOFTWARE).
constexpr int kInternalErrorExit = 70;

class InternalError : public std::exception {
 public:
  InternalError(std::string message, Loc input, std::source_location where);
  const char* what() const noexcept override { return text_.c_str(); }
  const std::string& message() const { return message_; }
  // The input's location the broken invariant was found at, when there is one.
  const Loc& input() const { return input_; }
  // Where in stepgraph's own sources it was detected ("core/graph/validate.cpp:42").
  const std::string& origin() const { return origin_; }

 private:
  std::string message_, origin_, text_;
  Loc input_;
};

// Throws InternalError. `input`: the statement being processed, when one is known.
[[noreturn]] void internal_error(const std::string& message, Loc input = {}, std::source_location where = std::source_location::current());

// Checks an invariant: internal_error(message) when `ok` is false.
inline void internal_check(bool ok, const char* message, Loc input = {}, std::source_location where = std::source_location::current()) {
  if (!ok) internal_error(message, input, where);
}

}  // namespace sg
