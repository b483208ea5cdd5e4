// OutputFile and flush_standard_output (core/io/output_file.hpp). The file is written with
// write(2) through a small streambuf rather than std::ofstream, whose failures keep no errno: the
// error must say why ("No space left on device"), not only that something failed.
#include "core/io/output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <streambuf>
#include <vector>

namespace sg {

class OutputFile::Buffer final : public std::streambuf {
 public:
  explicit Buffer(int fd) : fd_(fd), data_(1 << 16) { setp(data_.data(), data_.data() + data_.size()); }
  ~Buffer() override {
    if (fd_ >= 0) ::close(fd_);
  }
  // The first failure's errno (0: none yet).
  int error() const { return error_; }
  // Writes out the buffer and closes the descriptor; false on any failure.
  bool finish() {
    bool ok = drain();
    if (fd_ >= 0) {
      if (::close(fd_) != 0 && error_ == 0) error_ = errno;
      fd_ = -1;
    }
    return ok && error_ == 0;
  }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  // Writes what is buffered. After a failure nothing more is written (the file is already short).
  bool drain() {
    const char* p = pbase();
    size_t left = static_cast<size_t>(pptr() - pbase());
    while (left > 0 && error_ == 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : EIO;
        break;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    setp(data_.data(), data_.data() + data_.size());
    return error_ == 0;
  }

  int fd_;
  int error_ = 0;
  std::vector<char> data_;
};

OutputFile::OutputFile() = default;
OutputFile::~OutputFile() = default;

bool OutputFile::open(const std::string& path, Diagnostics& diags) {
  path_ = path;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return diags.fail("cannot write '" + path + "': " + std::strerror(errno));
  buf_ = std::make_unique<Buffer>(fd);
  os_ = std::make_unique<std::ostream>(buf_.get());
  return true;
}

std::ostream& OutputFile::stream() { return *os_; }

bool OutputFile::close(Diagnostics& diags) {
  if (!buf_) return diags.fail("cannot write '" + path_ + "': it was not opened");
  os_->flush();
  bool ok = buf_->finish();
  int e = buf_->error();
  os_.reset();
  buf_.reset();
  if (ok) return true;
  return diags.fail("cannot write '" + path_ + "': " + std::strerror(e != 0 ? e : EIO));
}

bool write_output_file(const std::string& path, const std::string& text, Diagnostics& diags) {
  OutputFile f;
  if (!f.open(path, diags)) return false;
  f.stream() << text;
  return f.close(diags);
}

bool flush_standard_output(Diagnostics& diags) {
  std::cout.flush();
  errno = 0;
  bool failed = std::fflush(stdout) != 0 || std::ferror(stdout) || std::cout.fail();
  if (!failed) return true;
  int e = errno;
  // The write that failed may be long past (stdio's buffer filled mid-run) and its errno gone:
  // one more byte says why, and standard output is broken anyway.
  if (e == 0) {
    std::clearerr(stdout);
    std::fputc('\n', stdout);
    errno = 0;
    if (std::fflush(stdout) != 0) e = errno;
  }
  std::string message = "cannot write to standard output";
  if (e != 0) {
    message += ": ";
    message += std::strerror(e);
  }
  return diags.fail(std::move(message));
}

}  // namespace sg
