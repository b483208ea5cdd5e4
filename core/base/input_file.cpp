// read_input_file (core/base/input_file.hpp): open without blocking, fstat, then read.
#include "core/base/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sg {

InputFile read_input_file(const std::string& path) {
  InputFile in;
  std::string& text = in.text;
  auto fail = [&](const std::string& why) {
    in.error = "cannot read '" + path + "': " + why;
    in.text.clear();
    return in;
  };
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, before fstat can
  // tell that it is one. It changes nothing for a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return fail(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return fail(std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(S_ISDIR(st.st_mode) ? std::strerror(EISDIR) : "it is not a regular file (a FIFO, a device or a socket)");
  }
  if (st.st_size > 0) text.reserve(static_cast<size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      return fail(std::strerror(e));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  in.ok = true;
  return in;
}

}  // namespace sg
