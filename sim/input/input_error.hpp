#pragma once
// The one error type for bad user input. The CLI turns it into exit status 2
// and a single line "FILE: /json/path: what is wrong".

#include <stdexcept>
#include <string>

namespace gcsim {

class InputError : public std::runtime_error {
public:
  InputError(std::string file, std::string json_path, const std::string& what)
      : std::runtime_error(format_line(file, json_path, what)), file_(std::move(file)),
        json_path_(std::move(json_path)), message_(what) {}

  const std::string& file() const { return file_; }
  const std::string& json_path() const { return json_path_; }
  /// What is wrong, without the file and path.
  const std::string& message() const { return message_; }

private:
  static std::string format_line(const std::string& file, const std::string& json_path,
                                 const std::string& what) {
    std::string line = file.empty() ? std::string("<input>") : file;
    if (!json_path.empty())
      line += ": " + json_path;
    return with_controls_escaped(line + ": " + what);
  }

  // The line with its control characters written out ("\n"), so that a
  // line break given in a value (--set 'name=a<newline>b', a key of a
  // sweep's grid) does not split it.
  static std::string with_controls_escaped(const std::string& text) {
    static const char kHex[] = "0123456789abcdef";
    std::string line;
    line.reserve(text.size());
    for (const char c : text) {
      const auto byte = static_cast<unsigned char>(c);
      if (c == '\n')
        line += "\\n";
      else if (c == '\r')
        line += "\\r";
      else if ((byte < 0x20 && c != '\t') || byte == 0x7f)
        line += std::string("\\x") + kHex[byte >> 4] + kHex[byte & 15];
      else
        line += c;
    }
    return line;
  }

  std::string file_;
  std::string json_path_;
  std::string message_;
};

} // namespace gcsim
