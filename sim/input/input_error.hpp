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
    return line + ": " + what;
  }

  std::string file_;
  std::string json_path_;
  std::string message_;
};

} // namespace gcsim
