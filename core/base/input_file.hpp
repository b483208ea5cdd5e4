// Reading a file the user names (a schedule, a platform, a --map file): whole, and only a regular
// file. A FIFO, /dev/zero or a terminal would be read for ever (or block in open), so they are
// refused before a byte is read; a file that cannot be opened says the OS's reason
// ("Permission denied", "Not a directory"), not a guess.
#pragma once
#include <string>

namespace sg {

// What read_input_file read: the whole file in `text` when `ok`, else why not in `error`,
// "cannot read 'PATH': REASON" (REASON is strerror's, or "it is not a regular file" for a FIFO,
// a device or a socket). A value, not an error out-parameter: core/base sits below the
// diagnostics (core/dsl), so each caller turns `error` into a diagnostic of its own.
struct InputFile {
  bool ok = false;
  std::string text;
  std::string error;
};
InputFile read_input_file(const std::string& path);

}  // namespace sg
