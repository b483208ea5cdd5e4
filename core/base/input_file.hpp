// Reading a file the user names (a schedule, a platform, a --map file): whole, and only a regular
// file. A FIFO, /dev/zero or a terminal would be read for ever (or block in open), so they are
// refused before a byte is read; a file that cannot be opened says the OS's reason
// ("Permission denied", "Not a directory"), not a guess.
#pragma once
#include <string>

namespace sg {

// The whole of `path` in `text`. False with "cannot read 'PATH': REASON" in `err` (REASON is
// strerror's, or "it is not a regular file" for a FIFO, a device or a socket).
bool read_input_file(const std::string& path, std::string& text, std::string& err);

}  // namespace sg
