// Units of measure in the text people write (platform specs, flags): bandwidths, times and flop
// rates to numbers in SI base units. Shared vocabulary of core (core/base/), namespace sg.
#pragma once
#include <string>

namespace sg {

// Each returns false with the reason in `why` (the caller names the key). Bandwidth: bps Kbps
// Mbps Gbps Tbps (bits) and Bps KBps MBps GBps TBps (bytes), binary KiBps MiBps GiBps TiBps, to
// bytes/s. Time: ns us ms s to seconds. Flops: f Kf Mf Gf Tf Pf to flops/s.
bool parse_bandwidth(const std::string& text, double& bytes_per_s, std::string& why);
bool parse_time(const std::string& text, double& seconds, std::string& why);
bool parse_flops(const std::string& text, double& flops, std::string& why);
// A duration on the command line (--gamma, --loggp): a time with its unit as parse_time reads
// it, or a bare non-negative number of seconds ("2e-6").
bool parse_seconds(const std::string& text, double& seconds, std::string& why);

// The helpers the three use, for a grammar that reads numbers the same way (the platform spec):
// `text` without leading and trailing blanks (space, tab, newline, carriage return) ...
std::string trim(const std::string& text);
// ... and a non-negative finite decimal number followed by a unit: false with the reason in `why`
// when `text` does not start with one; `unit` is what follows the number (possibly empty).
bool split_number(const std::string& text, double& v, std::string& unit, std::string& why);

}  // namespace sg
