#include "sim/input/paths.hpp"

#include "compressors/params.hpp"
#include "sim/input/input_error.hpp"

#include <algorithm>
#include <optional>
#include <system_error>

#ifndef GCSIM_SOURCE_ROOT
#define GCSIM_SOURCE_ROOT "."
#endif

namespace gcsim {

std::filesystem::path source_root() {
  return GCSIM_SOURCE_ROOT;
}

bool is_folder_name(std::string_view name) {
  // 255 bytes: the longest name Linux file systems take (NAME_MAX); a longer
  // one failed only when the result was written, after the simulation.
  // Control characters (a newline, NUL) would break the summary's title
  // line, the logs and sweep.csv, and the system cuts a name at NUL.
  const bool control = std::any_of(name.begin(), name.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find('/') == std::string_view::npos && !control;
}

std::string folder_name_refusal(std::string_view names, bool from_file_name) {
  return std::string(from_file_name ? "(from the file's name) " : "") +
         "expected a non-empty name of at most 255 bytes without '/' or control characters, not "
         "\".\" or \"..\" (it names " +
         std::string(names) + ")" + (from_file_name ? ": give the file a \"name\"" : "");
}

namespace {

// The shipped folders that hold the files a field names, by the field's
// JSON path; none for another field.
std::vector<std::filesystem::path> shipped_folders(std::string_view json_path) {
  const auto field = [json_path](std::string_view name) {
    return json_path.size() >= name.size() &&
           json_path.substr(json_path.size() - name.size()) == name;
  };
  if (field("/scenario"))
    return {"workloads/scenarios"};
  if (field("/platform"))
    return {"platforms"};
  if (field("/device"))
    return {"platforms/devices"};
  if (field("/workload") || field("/compute_spec"))
    return {"workloads/models", "workloads/traces"};
  return {};
}

// `name` in one of the source tree's `folders` (or, without an extension,
// `name`.json: "device": "v100" for platforms/devices/v100.json), as a path from the tree's
// root (which input paths are also looked up in).
std::optional<std::filesystem::path>
shipped_file(const std::filesystem::path& name, const std::vector<std::filesystem::path>& folders) {
  if (!name.has_filename())
    return std::nullopt;
  for (const std::filesystem::path& folder : folders) {
    std::error_code error;
    if (std::filesystem::exists(source_root() / folder / name, error))
      return folder / name;
  }
  if (!name.has_extension())
    return shipped_file(std::filesystem::path(name) += ".json", folders);
  return std::nullopt;
}

// The places resolve_input_path tries, in its order: beside the referring
// file, in the working directory, in the source tree.
std::vector<std::filesystem::path> input_candidates(const std::filesystem::path& path,
                                                    const std::filesystem::path& referring_file) {
  if (path.is_absolute())
    return {path};
  return {referring_file.parent_path() / path, path, source_root() / path};
}

// A name in `folder` a slip away from `name` ("star-8x1g.json" for
// "star-8x10g.json"), or "" when there is none or the folder cannot be read.
// Only names of the same extension count, compared without it: the
// extension's letters would otherwise let "x1.json" pass for "v100.json".
std::string near_name_in(const std::filesystem::path& folder, const std::filesystem::path& name) {
  std::error_code error;
  std::vector<std::string> stems;
  const std::filesystem::path listed = folder.empty() ? "." : folder;
  for (std::filesystem::directory_iterator it(listed, error), end; !error && it != end;
       it.increment(error)) {
    // Not the name itself (a link to nowhere is listed but not found), and
    // no folder for a name with an extension (a file's).
    std::error_code type_error;
    if (it->path().extension() != name.extension() || it->path().filename() == name ||
        (name.has_extension() && it->is_directory(type_error)))
      continue;
    stems.push_back(it->path().stem().string());
  }
  // Directory order is the file system's: sorted, the guess is the same on
  // every machine.
  std::sort(stems.begin(), stems.end());
  const std::string near = compress::did_you_mean(name.stem().string(), stems);
  return near.empty() ? near : near + name.extension().string();
}

} // namespace

std::filesystem::path resolve_input_path(const std::string& value,
                                         const std::filesystem::path& referring_file) {
  std::filesystem::path path(value);
  if (path.is_absolute())
    return path;
  const std::vector<std::filesystem::path> candidates = input_candidates(path, referring_file);
  std::error_code error;
  for (const std::filesystem::path& candidate : candidates)
    if (std::filesystem::exists(candidate, error))
      return candidate.lexically_normal();
  return candidates.front().lexically_normal();
}

namespace {

// "; it is a symbolic link to \"TARGET\", which is not there" for a link to
// nowhere (it is listed, but not found), or "".
std::string dangling_link_note(const std::filesystem::path& file) {
  std::error_code error;
  if (!std::filesystem::is_symlink(file, error))
    return "";
  const std::filesystem::path target = std::filesystem::read_symlink(file, error);
  return error ? "" : "; it is a symbolic link to \"" + target.string() + "\", which is not there";
}

// "; did you mean \"shown/near\"?" for a near name of `name` in `folder`
// (near_name_in), or "".
std::string did_you_mean_hint(const std::filesystem::path& folder,
                              const std::filesystem::path& name,
                              const std::filesystem::path& shown_folder) {
  const std::string near = near_name_in(folder, name);
  return near.empty() ? "" : "; did you mean \"" + (shown_folder / near).string() + "\"?";
}

} // namespace

std::filesystem::path find_input_path(const std::string& value,
                                      const std::filesystem::path& referring_file,
                                      const std::string& source, const std::string& json_path) {
  // The system would read the name up to its NUL: another file than written.
  if (value.find('\0') != std::string::npos)
    throw InputError(source, json_path,
                     "\"" + value.substr(0, value.find('\0')) +
                         "...\" holds a NUL character (\\u0000), which no file name can");
  const std::filesystem::path path(value);
  const std::vector<std::filesystem::path> candidates = input_candidates(path, referring_file);
  for (const std::filesystem::path& candidate : candidates) {
    std::error_code error;
    // A place that cannot be looked up (a link loop, a folder that may not
    // be searched) is taken: its reader says so.
    if (std::filesystem::exists(candidate, error) ||
        (error && error != std::errc::no_such_file_or_directory &&
         error != std::errc::not_a_directory))
      return path.is_absolute() ? path : candidate.lexically_normal();
  }
  for (const std::filesystem::path& candidate : candidates)
    if (const std::string note = dangling_link_note(candidate); !note.empty())
      throw InputError(source, json_path,
                       "\"" + candidate.lexically_normal().string() + "\" not found" + note);
  std::string message = "\"" + value + "\" not found ";
  if (path.is_absolute()) {
    message += "(an absolute path)";
  } else {
    const std::filesystem::path beside = referring_file.parent_path();
    message += "beside " + referring_file.filename().string() + " (in " +
               (beside.empty() ? std::string(".") : beside.string()) +
               "), in the working directory or in gcsim's source tree (" + source_root().string() +
               ")";
  }
  // A file copied out of the tree names its neighbours there by their bare
  // names ("quickstart.json"): where the shipped one of that kind is, by the
  // path that finds it from anywhere (the source tree's root is searched).
  if (path.is_relative())
    if (const std::optional<std::filesystem::path> shipped =
            shipped_file(path.filename(), shipped_folders(json_path)))
      throw InputError(source, json_path,
                       "\"" + value + "\" not found (beside " + referring_file.filename().string() +
                           ", in the working directory, at gcsim's source root); did you mean \"" +
                           shipped->string() + "\"?");
  for (const std::filesystem::path& candidate : candidates)
    if (const std::string hint =
            did_you_mean_hint(candidate.parent_path(), path.filename(), path.parent_path());
        !hint.empty())
      throw InputError(source, json_path, message + hint);
  throw InputError(source, json_path, message);
}

std::string not_found_hint(const std::filesystem::path& file) {
  std::error_code error;
  if (const std::string note = dangling_link_note(file); !note.empty())
    return note;
  if (file == "-")
    return "; gcsim reads no standard input: name a file";
  if (file.is_relative()) {
    // `gcsim run quickstart.json` from another folder: the shipped file, by
    // its path or by its name among the shipped scenarios.
    for (const std::filesystem::path& shipped :
         {source_root() / file, source_root() / "workloads" / "scenarios" / file.filename()})
      if (std::filesystem::is_regular_file(shipped, error))
        return "; gcsim's source tree has " + shipped.lexically_normal().string() +
               " (a path on the command line is read from the working directory)";
  }
  return did_you_mean_hint(file.parent_path(), file.filename(), file.parent_path());
}

namespace {

// The path with its existing part's links and dots resolved: "a/../b.json"
// and a link to b.json name b.json.
std::filesystem::path resolved(const std::filesystem::path& path) {
  std::error_code error;
  // Absolute first: of a relative path whose first part does not exist yet,
  // weakly_canonical keeps it relative.
  const std::filesystem::path absolute = std::filesystem::absolute(path, error).lexically_normal();
  std::filesystem::path canonical = std::filesystem::weakly_canonical(absolute, error);
  return error ? absolute : canonical;
}

// Whether `inner` has every part of `outer` first, and more.
bool starts_with_folder(const std::filesystem::path& inner, const std::filesystem::path& outer) {
  auto at = inner.begin();
  for (const std::filesystem::path& part : outer) {
    if (part.empty()) // the empty last part of a path that ends in '/'
      continue;
    if (at == inner.end() || *at != part)
      return false;
    ++at;
  }
  return at != inner.end();
}

} // namespace

std::string recorded_path(const std::filesystem::path& path) {
  const std::filesystem::path full = resolved(path);
  const std::filesystem::path root = resolved(source_root());
  if (starts_with_folder(full, root))
    return full.lexically_relative(root).string();
  return full.string();
}

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  // Two existing files are compared by identity (a hard link under another
  // name too); a file still to be written by its resolved path.
  std::error_code error;
  const bool equivalent = std::filesystem::equivalent(a, b, error);
  return error ? resolved(a) == resolved(b) : equivalent;
}

bool inside_folder(const std::filesystem::path& path, const std::filesystem::path& folder) {
  // Both as written and with links resolved: a trace's iterations/ may be a
  // link to another trace's, and its files are still this trace's.
  std::error_code error;
  const auto lexical = [&error](const std::filesystem::path& p) {
    return std::filesystem::absolute(p, error).lexically_normal();
  };
  return starts_with_folder(resolved(path), resolved(folder)) ||
         starts_with_folder(lexical(path), lexical(folder));
}

void refuse_same_file(const NamedFile& output, const std::vector<NamedFile>& others) {
  if (output.path.empty())
    return;
  for (const NamedFile& other : others) {
    if (other.path.empty())
      continue;
    std::error_code error;
    if (std::filesystem::is_directory(other.path, error)) {
      // A new file beside a trace's destroys nothing; one of its own would.
      if (inside_folder(output.path, other.path) && std::filesystem::exists(output.path, error))
        throw InputError(output.argument, "",
                         output.path.string() + " is a file of " + other.argument + " (" +
                             other.path.string() +
                             "): writing it would destroy that file; choose another path");
      continue;
    }
    if (!same_file(output.path, other.path))
      continue;
    throw InputError(output.argument, "",
                     output.path.string() + " is also " + other.argument +
                         ": writing it would destroy that file; choose another path");
  }
}

} // namespace gcsim
