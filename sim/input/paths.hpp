#pragma once
// Where a path written in an input file points.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace gcsim {

/// The repository root compiled into the binary, so that scenarios that
/// name "platforms/..." or "workloads/..." work from any directory.
std::filesystem::path source_root();

/// Whether `name` can name one folder under results/: not empty, at most 255
/// bytes, not "." or ".." (results/../result.json), without '/' or control
/// characters (NUL, a newline).
bool is_folder_name(std::string_view name);

/// Why `name` is no folder name (is_folder_name), for a refusal of the
/// `name` field of a file whose name it `names`; `from_file_name` when the
/// file has no `name` and its own file name gave it.
std::string folder_name_refusal(std::string_view names, bool from_file_name);

/// Resolves `value` as written inside `referring_file`: absolute paths are
/// kept; a relative one is tried next to the referring file, then against
/// the working directory, then against source_root(). Returns the first that
/// exists, or the one next to the referring file when none does (so the
/// error names a sensible place).
std::filesystem::path resolve_input_path(const std::string& value,
                                         const std::filesystem::path& referring_file);

/// resolve_input_path for a file that must be there: throws
/// InputError(source, json_path) when `value` is found nowhere, naming every
/// place looked and a near name in one of them ("did you mean
/// \"platforms/star-8x10g.json\"?"), so that a slip in a name is found
/// without a listing; and when it holds a NUL, which would cut the name short.
std::filesystem::path find_input_path(const std::string& value,
                                      const std::filesystem::path& referring_file,
                                      const std::string& source, const std::string& json_path);

/// What may help when `file`, named on the command line (read from the
/// working directory, not looked up elsewhere), does not exist: "" or
/// "; gcsim's source tree has /src/workloads/scenarios/quickstart.json" or
/// "; did you mean \"scenario.json\"?", or what a link to nowhere points to.
std::string not_found_hint(const std::filesystem::path& file);

/// How a result records an input it read: relative to source_root() when it
/// lies inside it, else absolute, so that the record does not depend on the
/// working directory the command ran in.
std::string recorded_path(const std::filesystem::path& path);

/// A file a command reads or writes, and the argument that named it.
struct NamedFile {
  std::string argument; // "--timeline", "the scenario file", ...
  std::filesystem::path path;
};

/// Whether two paths name one file (hard and symbolic links, "..", relative
/// to the working directory), whether or not it exists yet.
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

/// Whether `path` lies inside `folder` (resolved as same_file resolves them).
bool inside_folder(const std::filesystem::path& path, const std::filesystem::path& folder);

/// Throws InputError at `output.argument` when it names the same file as one
/// of `others` (what the command reads, or its other outputs), or is a file
/// that exists inside one that is a folder (a trace's): writing it would
/// destroy that file. Entries with an empty path are skipped.
void refuse_same_file(const NamedFile& output, const std::vector<NamedFile>& others);

} // namespace gcsim
