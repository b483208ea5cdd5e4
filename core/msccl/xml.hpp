// A small XML reader for MSCCL algorithm files: elements, attributes in double (or single)
// quotes, comments, the XML declaration; no DTD, no namespaces, entities limited to the five
// predefined ones. Every element keeps where it starts, so a diagnostic can point at the
// `<step …>` it is about. Errors go to the session's diagnostics, located.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "core/dsl/source.hpp"

namespace sg::msccl {

struct XmlElement {
  std::string name;
  Loc loc;  // its '<'
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<Loc> attribute_locs;  // where each attribute's name starts
  std::vector<XmlElement> children;
  // The attribute's value, or null.
  const std::string* attribute(const std::string& key) const;
  Loc attribute_loc(const std::string& key) const;  // the element's location when absent
};

// Parses the whole file into its root element; null (with errors in diags) on malformed XML.
std::unique_ptr<XmlElement> parse_xml(const SourceManager& sm, uint32_t file, Diagnostics& diags);

}  // namespace sg::msccl
