// The files a command writes (compile -o, sim --trace and --csv, calibrate -o, the plot's inputs)
// and standard output, with every write checked: a full disk, a read-only file or a path that
// cannot be created is an error that names the path and the OS's reason ("cannot write 'out.json':
// No space left on device"), never an exit 0 with a short or missing file. The commands turn such
// an error into exit code 2, like any other they cannot act on.
#pragma once
#include <memory>
#include <ostream>
#include <string>

#include "core/dsl/diagnostics.hpp"

namespace sg {

class OutputFile {
 public:
  OutputFile();
  ~OutputFile();  // closes without saying whether that worked: call close() to know
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Creates or truncates `path`. False with "cannot write 'PATH': REASON" in `diags`.
  bool open(const std::string& path, Diagnostics& diags);
  // Where to write; a failed write sets its badbit and is remembered for close().
  std::ostream& stream();
  // Writes out what is buffered and closes the file. False with the first failure, "cannot write
  // 'PATH': REASON", in `diags` (a failed write, flush or close).
  bool close(Diagnostics& diags);

 private:
  class Buffer;  // a streambuf over the file descriptor that keeps the first write's errno
  std::unique_ptr<Buffer> buf_;
  std::unique_ptr<std::ostream> os_;
  std::string path_;
};

// Writes `text` to `path`: open, write and close, each checked. False with the reason in `diags`.
bool write_output_file(const std::string& path, const std::string& text, Diagnostics& diags);

// Flushes std::cout and stdio's stdout and says whether everything written to standard output got
// there. False with "cannot write to standard output: REASON" in `diags`.
bool flush_standard_output(Diagnostics& diags);

}  // namespace sg
