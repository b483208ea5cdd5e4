// Runs a measurement in a child process, so its peak memory (from wait4) is its own and a run
// that takes too long can be cut off (SIGALRM after limit_s). The result comes back through a
// pipe as raw bytes, so it must be trivially copyable.
#pragma once
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <type_traits>

template <class Result, class Fn>
Result run_in_child(Fn fn, unsigned limit_s, bool& finished, long& peak_kb) {
  static_assert(std::is_trivially_copyable_v<Result>);
  finished = false;
  peak_kb = 0;
  int fd[2];
  if (pipe(fd) != 0) return Result{};
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    if (limit_s) alarm(limit_s);
    Result r = fn();
    ssize_t w = write(fd[1], &r, sizeof r);
    (void)w;
    _exit(0);
  }
  close(fd[1]);
  Result r{};
  ssize_t got = read(fd[0], &r, sizeof r);
  close(fd[0]);
  int status = 0;
  struct rusage ru;
  wait4(pid, &status, 0, &ru);
  finished = got == static_cast<ssize_t>(sizeof r);
  peak_kb = ru.ru_maxrss;
  return finished ? r : Result{};
}
