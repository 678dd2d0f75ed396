// A small strict JSON reader for tests that check what weft writes (Trace::json): the whole of RFC 8259's
// grammar (objects, arrays, strings with every escape including surrogate pairs, numbers, true/false/null),
// rejecting anything else with an exception that says where. Not fast, not for production: a test's checker.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace weft::test::json {

struct Value;
using Object = std::map<std::string, Value>;
using Array = std::vector<Value>;

struct Value {
  std::variant<std::nullptr_t, bool, double, std::string, std::shared_ptr<Array>, std::shared_ptr<Object>> data;

  [[nodiscard]] bool is_null() const { return std::holds_alternative<std::nullptr_t>(data); }
  [[nodiscard]] bool is_number() const { return std::holds_alternative<double>(data); }
  [[nodiscard]] bool is_string() const { return std::holds_alternative<std::string>(data); }
  [[nodiscard]] bool is_array() const { return std::holds_alternative<std::shared_ptr<Array>>(data); }
  [[nodiscard]] bool is_object() const { return std::holds_alternative<std::shared_ptr<Object>>(data); }
  [[nodiscard]] double number() const { return std::get<double>(data); }
  [[nodiscard]] const std::string& string() const { return std::get<std::string>(data); }
  [[nodiscard]] const Array& array() const { return *std::get<std::shared_ptr<Array>>(data); }
  [[nodiscard]] const Object& object() const { return *std::get<std::shared_ptr<Object>>(data); }
  // The member `key` of an object; throws if this is not an object or has no such member.
  [[nodiscard]] const Value& at(const std::string& key) const {
    const Object& members = object();
    const auto found = members.find(key);
    if (found == members.end()) throw std::runtime_error("json: no member \"" + key + "\"");
    return found->second;
  }
  [[nodiscard]] bool has(const std::string& key) const { return is_object() && object().count(key) != 0; }
};

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  [[nodiscard]] Value document() {
    Value value = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) fail("text after the value");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("json: " + what + " at offset " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\r' || text_[pos_] == '\t'))
      ++pos_;
  }
  [[nodiscard]] char peek() {
    skip_space();
    if (pos_ == text_.size()) fail("unexpected end");
    return text_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  void literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) fail("bad literal");
    pos_ += word.size();
  }

  Value parse_value(int depth) {
    if (depth > 256) fail("nesting too deep");
    const char c = peek();
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') return Value{parse_string()};
    if (c == 't') {
      literal("true");
      return Value{true};
    }
    if (c == 'f') {
      literal("false");
      return Value{false};
    }
    if (c == 'n') {
      literal("null");
      return Value{nullptr};
    }
    return Value{parse_number()};
  }

  Value parse_object(int depth) {
    expect('{');
    auto members = std::make_shared<Object>();
    if (peek() == '}') {
      ++pos_;
      return Value{members};
    }
    for (;;) {
      if (peek() != '"') fail("expected a member name");
      std::string key = parse_string();
      expect(':');
      if (members->count(key) != 0) fail("duplicate member \"" + key + "\"");
      (*members)[key] = parse_value(depth + 1);
      const char next = peek();
      ++pos_;
      if (next == '}') return Value{members};
      if (next != ',') fail("expected ',' or '}'");
    }
  }

  Value parse_array(int depth) {
    expect('[');
    auto items = std::make_shared<Array>();
    if (peek() == ']') {
      ++pos_;
      return Value{items};
    }
    for (;;) {
      items->push_back(parse_value(depth + 1));
      const char next = peek();
      ++pos_;
      if (next == ']') return Value{items};
      if (next != ',') fail("expected ',' or ']'");
    }
  }

  unsigned hex4() {
    if (pos_ + 4 > text_.size()) fail("short \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      code <<= 4;
      if (h >= '0' && h <= '9')
        code |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f')
        code |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        code |= static_cast<unsigned>(h - 'A' + 10);
      else
        fail("bad hex digit");
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    for (;;) {
      if (pos_ == text_.size()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("raw control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ == text_.size()) fail("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned code = hex4();
          if (code >= 0xD800 && code < 0xDC00) {
            if (text_.substr(pos_, 2) != "\\u") fail("lone high surrogate");
            pos_ += 2;
            const unsigned low = hex4();
            if (low < 0xDC00 || low >= 0xE000) fail("bad low surrogate");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code < 0xE000) {
            fail("lone low surrogate");
          }
          append_utf8(out, code);
          break;
        }
        default:
          fail("bad escape");
      }
    }
  }

  double parse_number() {
    const std::size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    const auto digits = [&] {
      const std::size_t from = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])) != 0) ++pos_;
      return pos_ - from;
    };
    const std::size_t whole = digits();
    if (whole == 0) fail("expected a value");
    if (whole > 1 && text_[start + (text_[start] == '-' ? 1 : 0)] == '0') fail("leading zero");
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      if (digits() == 0) fail("no digits after '.'");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (digits() == 0) fail("no digits in the exponent");
    }
    return std::strtod(std::string(text_.substr(start, pos_ - start)).c_str(), nullptr);
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

// Parses `text` as one JSON document; throws std::runtime_error saying where it is not JSON.
[[nodiscard]] inline Value parse(std::string_view text) { return Reader(text).document(); }

}  // namespace weft::test::json
