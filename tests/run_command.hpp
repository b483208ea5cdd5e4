// Running a command from a test: its standard output, exit status and wall time.
#pragma once
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <string>

namespace sgtest {

struct Ran {
  int rc = -1;      // the exit status, or -1 when killed by a signal
  std::string out;  // standard output (standard error goes where `cmd` redirects it)
  double seconds = 0;
};

// Writes `text` to `path` (a schedule or a table for one test).
inline void write_file(const std::string& path, const std::string& text) {
  FILE* w = std::fopen(path.c_str(), "w");
  REQUIRE(w);
  std::fputs(text.c_str(), w);
  std::fclose(w);
}

inline Ran run_command(const std::string& cmd) {
  Ran r;
  auto t0 = std::chrono::steady_clock::now();
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  int status = pclose(p);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace sgtest
