#include "core/msccl/xml.hpp"

#include <cctype>

namespace sg::msccl {

const std::string* XmlElement::attribute(const std::string& key) const {
  for (const auto& [k, v] : attributes)
    if (k == key) return &v;
  return nullptr;
}

Loc XmlElement::attribute_loc(const std::string& key) const {
  for (size_t i = 0; i < attributes.size(); ++i)
    if (attributes[i].first == key) return attribute_locs[i];
  return loc;
}

namespace {

class Reader {
 public:
  Reader(const SourceManager& sm, uint32_t file, Diagnostics& d) : text_(sm.file(file).text()), file_(file), diags_(d) {}

  std::unique_ptr<XmlElement> run() {
    auto root = std::make_unique<XmlElement>();
    skip_misc();
    if (at_end()) return fail("no element in the file"), nullptr;
    if (!element(*root)) return nullptr;
    skip_misc();
    if (!at_end()) return fail("text after the root element"), nullptr;
    return root;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t k = 0) const { return pos_ + k < text_.size() ? text_[pos_ + k] : '\0'; }
  bool starts(const char* s) const { return text_.compare(pos_, std::char_traits<char>::length(s), s) == 0; }
  void advance(size_t n = 1) {
    for (size_t i = 0; i < n && pos_ < text_.size(); ++i) {
      if (text_[pos_] == '\n') ++line_, col_ = 1;
      else ++col_;
      ++pos_;
    }
  }
  Loc here() const { return Loc{file_, line_, col_}; }
  void fail(const std::string& msg) {
    if (!failed_) diags_.error(here(), msg);
    failed_ = true;
  }
  void skip_space() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(peek()))) advance();
  }
  // Whitespace, comments, the XML declaration and processing instructions.
  void skip_misc() {
    while (true) {
      skip_space();
      if (starts("<!--")) {
        size_t end = text_.find("-->", pos_ + 4);
        if (end == std::string::npos) return fail("a comment that never ends ('-->')");
        advance(end + 3 - pos_);
      } else if (starts("<?")) {
        size_t end = text_.find("?>", pos_ + 2);
        if (end == std::string::npos) return fail("a declaration that never ends ('?>')");
        advance(end + 2 - pos_);
      } else {
        return;
      }
    }
  }
  std::string name() {
    std::string n;
    while (!at_end() &&
           (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_' || peek() == '-' || peek() == ':' || peek() == '.'))
      n += peek(), advance();
    return n;
  }
  // The five predefined entities and numeric references.
  bool unescape(std::string& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] != '&') {
        out += v[i];
        continue;
      }
      size_t semi = v.find(';', i);
      if (semi == std::string::npos) return false;
      std::string e = v.substr(i + 1, semi - i - 1);
      if (e == "lt") out += '<';
      else if (e == "gt") out += '>';
      else if (e == "amp") out += '&';
      else if (e == "quot") out += '"';
      else if (e == "apos") out += '\'';
      else if (e.size() > 1 && e[0] == '#') {
        long c = e[1] == 'x' ? std::strtol(e.c_str() + 2, nullptr, 16) : std::strtol(e.c_str() + 1, nullptr, 10);
        if (c <= 0 || c > 127) return false;
        out += static_cast<char>(c);
      } else {
        return false;
      }
      i = semi;
    }
    v = out;
    return true;
  }

  bool element(XmlElement& e, int depth = 0) {
    if (peek() != '<') return fail("expected an element ('<')"), false;
    if (depth > 64) return fail("elements nested more than 64 deep"), false;  // a bound on the recursion
    e.loc = here();
    advance();
    e.name = name();
    if (e.name.empty()) return fail("expected an element name after '<'"), false;
    while (true) {
      skip_space();
      if (at_end()) return fail("the element <" + e.name + "> never ends"), false;
      if (starts("/>")) {
        advance(2);
        return true;
      }
      if (peek() == '>') {
        advance();
        break;
      }
      Loc at = here();
      std::string key = name();
      if (key.empty()) return fail("expected an attribute name or '>' in <" + e.name + ">"), false;
      skip_space();
      if (peek() != '=') return fail("expected '=' after the attribute " + key), false;
      advance();
      skip_space();
      char q = peek();
      if (q != '"' && q != '\'') return fail("the value of " + key + " must be in quotes"), false;
      advance();
      size_t end = text_.find(q, pos_);
      if (end == std::string::npos) return fail("the value of " + key + " never ends"), false;
      std::string v = text_.substr(pos_, end - pos_);
      advance(end + 1 - pos_);
      if (!unescape(v)) return fail("an unknown entity in the value of " + key), false;
      if (e.attribute(key)) return diags_.error(at, "the attribute " + key + " is given twice"), failed_ = true, false;
      e.attributes.emplace_back(std::move(key), std::move(v));
      e.attribute_locs.push_back(at);
    }
    // Content: children, comments and text (text is ignored: MSCCL files carry none).
    while (true) {
      skip_misc();
      if (failed_) return false;
      if (at_end()) return fail("the element <" + e.name + "> is never closed"), false;
      if (starts("</")) {
        advance(2);
        std::string closing = name();
        skip_space();
        if (closing != e.name) return fail("</" + closing + "> closes <" + e.name + ">"), false;
        if (peek() != '>') return fail("expected '>' after </" + closing), false;
        advance();
        return true;
      }
      if (peek() == '<') {
        e.children.emplace_back();
        if (!element(e.children.back(), depth + 1)) return false;
        continue;
      }
      while (!at_end() && peek() != '<') advance();  // character data
    }
  }

  const std::string& text_;
  uint32_t file_;
  Diagnostics& diags_;
  size_t pos_ = 0;
  uint32_t line_ = 1, col_ = 1;
  bool failed_ = false;
};

}  // namespace

std::unique_ptr<XmlElement> parse_xml(const SourceManager& sm, uint32_t file, Diagnostics& diags) { return Reader(sm, file, diags).run(); }

}  // namespace sg::msccl
