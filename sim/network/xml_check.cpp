// Checking a SimGrid XML platform before the run relies on it.
//
// SimGrid reports some mistakes in a platform file by exceptions, but aborts
// the process on others (a link declared twice, an unknown routing model,
// the removed <include> tag), only fails once the simulation runs on more
// (a negative bandwidth, two hosts without a route between them: an abort in
// the sharing solver or the network model, a segmentation fault in a
// Dijkstra zone), and builds a <cluster> of any size, a hundred million
// hosts included, until memory runs out. None of that may end a run with a
// backtrace: the file is loaded first in a child process, which checks what
// the run would trip over, and the child's failure, whatever its kind,
// becomes gcsim's one-line error at the `xml` field.

#include "sim/input/input_error.hpp"
#include "sim/input/json_reader.hpp"
#include "sim/input/units.hpp"
#include "sim/network/collectives.hpp"
#include "sim/network/forked.hpp"
#include "sim/network/platform.hpp"
#include "sim/network/simgrid_setup.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>
#include <vector>
#include <xbt/log.h>

#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace gcsim::net {
namespace {

// SimGrid holds about 3 KB per host of a cluster (a million hosts: 3 GB and
// 24 s to build); four times the most workers a scenario may ask for.
constexpr unsigned long long kMaxClusterHosts = 1ULL << 18;

// What the child reports, in memory shared with the parent: the route it
// was looking up when it stopped (to name a crash), or the field and message
// of a problem it found itself.
struct ChildReport {
  char route[512]; // the route looked up, empty while loading
  char field[32];
  char message[1024];
};

// The child's exit status when it found a problem and filled the report.
constexpr int kFoundProblem = 3;

void copy_text(char* to, size_t size, const std::string& text) {
  std::snprintf(to, size, "%s", text.c_str());
}

[[noreturn]] void report_problem(ChildReport* report, const char* field,
                                 const std::string& message) {
  copy_text(report->field, sizeof report->field, field);
  copy_text(report->message, sizeof report->message, message);
  _exit(kFoundProblem);
}

// Pairs of workers whose route is looked up: all of them for a few workers,
// else those the whole group's collectives send between and every worker to
// and from the first. Measured with 1024 workers in a Full zone, the check
// takes 93 ms with the ring's pairs, 124 ms with these and 536 ms with all
// pairs (quadratic: minutes at 16384), and a lookup in a Dijkstra zone is a
// shortest-path search of its own.
std::vector<std::pair<int, int>> pairs_to_check(int workers) {
  constexpr int kAllPairsUpTo = 64;
  std::vector<std::pair<int, int>> pairs;
  if (workers <= kAllPairsUpTo) {
    for (int a = 0; a < workers; ++a)
      for (int b = 0; b < workers; ++b)
        if (a != b)
          pairs.emplace_back(a, b);
    return pairs;
  }
  pairs = whole_group_pairs(workers);
  for (int w = 1; w < workers; ++w) {
    pairs.emplace_back(0, w);
    pairs.emplace_back(w, 0);
  }
  return pairs;
}

// The child: loads the file as Simulation would and checks what the run
// needs, the routes of `pairs` (those of pairs_to_check when null). Exits 0
// when the run can go ahead, kFoundProblem with the report filled, or dies
// inside SimGrid with its message on stderr.
[[noreturn]] void check_in_child(const PlatformSpec& spec,
                                 const std::vector<std::pair<int, int>>* pairs,
                                 ChildReport* report) {
  static int argc = 1;
  static char name[] = "gcsim";
  static char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  xbt_log_control_set("root.thres:critical");
  detail::configure_network_model(spec.network);
  try {
    engine.load_platform(spec.xml_file);
  } catch (const std::exception& error) { // in this throwaway process, whatever its kind
    report_problem(report, "/xml",
                   "SimGrid cannot load " + spec.xml_file + ": " + detail::one_line(error.what()));
  }
  // SimGrid takes any figure here and aborts in its solver once a message
  // crosses the link (or never delivers it, at zero).
  for (const sg4::Link* link : engine.get_all_links()) {
    const double bandwidth = link->get_bandwidth();
    if (!(bandwidth > 0) || !std::isfinite(bandwidth))
      report_problem(report, "/xml",
                     spec.xml_file + ": link '" + link->get_name() + "' has a bandwidth of " +
                         units::format_number(bandwidth) + " B/s, expected a positive one");
    // A WIFI link needs each host's rate on it, which gcsim does not set:
    // SimGrid aborts on the first message across it.
    if (link->get_sharing_policy() == sg4::Link::SharingPolicy::WIFI)
      report_problem(report, "/xml",
                     spec.xml_file + ": link '" + link->get_name() +
                         "' is a WIFI link, which gcsim does not model (a cluster's links are "
                         "SHARED, SPLITDUPLEX or FATPIPE)");
    const double latency = link->get_latency();
    if (!(latency >= 0) || !std::isfinite(latency))
      report_problem(report, "/xml",
                     spec.xml_file + ": link '" + link->get_name() + "' has a latency of " +
                         std::to_string(latency) + " s, expected 0 or more");
  }
  const std::vector<sg4::Host*> hosts = detail::hosts_by_name(engine);
  if (hosts.empty())
    report_problem(report, "/xml", spec.xml_file + " declares no host");
  if (spec.nodes > 0 && static_cast<size_t>(spec.nodes) > hosts.size())
    report_problem(report, "/nodes", detail::too_few_hosts(spec, hosts.size()));
  const int workers = spec.nodes > 0 ? spec.nodes : static_cast<int>(hosts.size());
  // SimGrid loads a host of speed 0 or less and aborts in its solver once
  // anything executes on it (a worker's kernels with kernels_share_device):
  // a typo either way, refused whatever the scenario runs.
  for (int w = 0; w < workers; ++w) {
    const sg4::Host* host = hosts[static_cast<size_t>(w)];
    const double speed = host->get_speed();
    if (!(speed > 0) || !std::isfinite(speed))
      report_problem(report, "/xml",
                     spec.xml_file + ": host '" + host->get_name() + "' (worker " +
                         std::to_string(w) + ") has a speed of " + std::to_string(speed) +
                         " flop/s, expected a positive one");
  }
  for (const auto& [a, b] : pairs ? *pairs : pairs_to_check(workers)) {
    if (a >= workers || b >= workers)
      continue; // only the scenario's workers; a run's pairs are among them
    const sg4::Host* from = hosts[static_cast<size_t>(a)];
    const sg4::Host* to = hosts[static_cast<size_t>(b)];
    const std::string route = "from host '" + from->get_name() + "' to host '" + to->get_name() +
                              "' (workers " + std::to_string(a) + " and " + std::to_string(b) + ")";
    copy_text(report->route, sizeof report->route, route);
    std::vector<sg4::Link*> links;
    double latency = 0;
    try {
      from->route_to(to, links, &latency);
    } catch (const std::invalid_argument& error) {
      report_problem(report, "/xml",
                     spec.xml_file + ": no route " + route + ": " + detail::one_line(error.what()));
    } catch (const std::out_of_range&) {
      // A Cluster (star) or Vivaldi zone of plain <host>s: it routes through
      // each host's own links, which a <cluster> or a <peer> declares.
      report_problem(report, "/xml",
                     spec.xml_file + ": no route " + route +
                         ": the zone has no link of its own for one of these hosts (a "
                         "Cluster or Vivaldi zone routes through the links a <cluster> or a "
                         "<peer> declares for each host)");
    }
    // What SimGrid's network model asserts when a message is sent.
    if (links.empty() && !(latency > 0))
      report_problem(report, "/xml", spec.xml_file + ": no route " + route);
  }
  _exit(0);
}

// The message of a child that died inside SimGrid: its CRITICAL log line
// (and any lines it continues on), without the time and source prefix and
// the backtrace; else its first line.
std::string simgrid_message(const std::string& output) {
  std::istringstream lines(output);
  std::string line;
  std::string message;
  std::string first;
  bool in_message = false;
  while (std::getline(lines, line)) {
    if (in_message) {
      if (line.rfind("Backtrace", 0) == 0 || line.rfind("  ->", 0) == 0 || line.rfind("[", 0) == 0)
        break;
      message += "\n" + line;
      continue;
    }
    const size_t critical = line.find("/CRITICAL] ");
    if (critical != std::string::npos) {
      message = line.substr(critical + std::strlen("/CRITICAL] "));
      in_message = true;
      continue;
    }
    if (first.empty() && line.find_first_not_of(" \t") != std::string::npos)
      first = line;
  }
  return detail::one_line(in_message ? message : first);
}

// The hosts a <cluster> or <cabinet> declares: its radical is a list of
// numbers and ranges "a-b". Saturates rather than overflows.
unsigned long long radical_hosts(const std::string& radical) {
  constexpr unsigned long long kAll = ~0ULL;
  unsigned long long hosts = 0;
  std::istringstream items(radical);
  std::string item;
  while (std::getline(items, item, ',')) {
    const size_t dash = item.find('-', 1);
    unsigned long long count = 1;
    if (dash != std::string::npos) {
      const unsigned long long first = std::strtoull(item.substr(0, dash).c_str(), nullptr, 10);
      const unsigned long long last = std::strtoull(item.substr(dash + 1).c_str(), nullptr, 10);
      count = last < first ? 0 : last - first == kAll ? kAll : last - first + 1;
    }
    hosts = kAll - hosts < count ? kAll : hosts + count;
  }
  return hosts;
}

std::string attribute(const std::string& tag, const std::string& name) {
  for (const char quote : {'"', '\''}) {
    const std::string key = " " + name + "=" + quote;
    size_t at = tag.find(key);
    if (at == std::string::npos) {
      // Attributes may follow a line break or a tab as well as a space.
      for (const char space : {'\n', '\t', '\r'}) {
        at = tag.find(std::string(1, space) + name + "=" + quote);
        if (at != std::string::npos)
          break;
      }
    }
    if (at == std::string::npos)
      continue;
    const size_t start = tag.find(quote, at) + 1;
    const size_t end = tag.find(quote, start);
    if (end != std::string::npos)
      return tag.substr(start, end - start);
  }
  return "";
}

// What a profile sets: a host's speed (a factor on its peak), a link's
// bandwidth (bytes per second) or its latency (seconds).
enum class Profiled { speed, bandwidth, latency };

// A profile repeats no more often than this: each repetition is an event of
// the simulation, and one that repeats every 0 s never lets its clock move.
constexpr double kShortestProfilePeriod = 1e-6;
// A host slowed further than this is one that stops: its work would take
// the simulation a profile event per period, for ever.
constexpr double kSlowestSpeedFactor = 1e-3;

// The words of a profile line, split at spaces and tabs.
std::vector<std::string_view> words_of(std::string_view line) {
  std::vector<std::string_view> words;
  size_t at = line.find_first_not_of(" \t");
  while (at != std::string_view::npos) {
    const size_t end = std::min(line.find_first_of(" \t", at), line.size());
    words.push_back(line.substr(at, end - at));
    at = line.find_first_not_of(" \t", end);
  }
  return words;
}

// `word` as a number if it is one whole: SimGrid reads "1GBps" as 1.
std::optional<double> whole_number(std::string_view word) {
  const std::string text(word);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value))
    return std::nullopt;
  return value;
}

// What is wrong with a SimGrid profile, as SimGrid 3.32 reads one
// (ProfileBuilder: lines split at \n and \r; "#" and "%" comments;
// PERIODICITY and LOOPAFTER, either of which makes it repeat; "DATE VALUE",
// each number possibly after DET, words after them ignored), as the end of
// a sentence about it ("... that is wrong at line 2: ..."); empty when
// nothing is. `inline_periodicity` is an inline <trace>'s attribute, none
// for a file (SimGrid reads a file without it). SimGrid aborts on dates
// that are negative or go back, on a period shorter than the dates, on a
// period beside a LOOPAFTER other than 0 and on an inline trace that sets
// nothing; it ran for ever on a repetition every 0 s and on a value that
// stops a host or a link.
std::string profile_problem(const std::string& profile, Profiled what,
                            std::optional<double> inline_periodicity) {
  // Laws SimGrid draws dates and values from, with its own random numbers,
  // not the scenario's seed.
  static const std::set<std::string_view> kStochastic = {
      "STOCHASTIC", "NORM", "NORMAL", "GAUSS", "GAUSSIAN", "EXP", "EXPONENTIAL", "UNIF", "UNIFORM"};
  double periodicity = inline_periodicity.value_or(-1);
  bool repeats = periodicity > 0;
  double loop_delay = 0;
  int events = 0;
  double last_date = 0;
  int number = 0;
  for (size_t start = 0; start < profile.size();) {
    size_t end = profile.find_first_of("\r\n", start);
    if (end == std::string::npos)
      end = profile.size();
    const std::string_view line(profile.data() + start, end - start);
    start = end + (profile.compare(end, 2, "\r\n") == 0 ? 2 : 1);
    ++number;
    const std::vector<std::string_view> words = words_of(line);
    if (words.empty() || words[0][0] == '#' || words[0][0] == '%')
      continue;
    const std::string where = "is wrong at line " + std::to_string(number) + ": ";
    if (words[0] == "PERIODICITY" || words[0] == "LOOPAFTER") {
      const std::optional<double> given =
          words.size() > 1 ? whole_number(words[1]) : std::optional<double>();
      // A PERIODICITY of 0 or less repeats after the last date, as LOOPAFTER 0.
      if (!given || (words[0] == "LOOPAFTER" && *given < 0))
        return where + std::string(words[0]) +
               (words[0] == "LOOPAFTER" ? " takes a duration in seconds, 0 or more"
                                        : " takes a duration in seconds");
      (words[0] == "PERIODICITY" ? periodicity : loop_delay) = *given;
      repeats = true;
      continue;
    }
    if (std::any_of(words.begin(), words.end(),
                    [](std::string_view word) { return kStochastic.count(word) > 0; }))
      return where + "\"" + detail::one_line(std::string(line)) +
             "\" is stochastic: stochastic profiles are not simulated (they draw from SimGrid's "
             "random numbers, not the scenario's seed)";
    size_t next = 0;
    const auto take = [&words, &next]() -> std::optional<double> {
      if (next < words.size() && words[next] == "DET")
        ++next;
      return next < words.size() ? whole_number(words[next++]) : std::nullopt;
    };
    const std::optional<double> date = take();
    const std::optional<double> value = take();
    if (!date || !value)
      return where + "expected \"DATE VALUE\" (seconds and a number), PERIODICITY or LOOPAFTER, " +
             "got \"" + detail::one_line(std::string(line)) + "\"";
    if (*date < 0)
      return where + "date " + units::format_number(*date) + " is negative";
    if (*date < last_date)
      return where + "date " + units::format_number(*date) + " comes before the line above's (" +
             units::format_number(last_date) + ")";
    const std::string at = " at " + units::format_number(*date) + " s";
    if (what != Profiled::latency && !(*value > 0))
      return "reaches 0" + at + ": hosts and links that stop are not simulated";
    if (what == Profiled::speed && *value < kSlowestSpeedFactor)
      return "sets a speed factor of " + units::format_number(*value) + at +
             ": a profile's factor is 0.001 or more (slower, a host stops)";
    if (what == Profiled::bandwidth &&
        !(*value >= kSlowestBandwidth && *value <= kFastestBandwidth))
      return "sets a bandwidth of " + units::format_number(*value) + " B/s" + at +
             ", outside [1kbps, 1000Tbps] as a link's";
    if (what == Profiled::latency && !(*value >= 0 && *value <= kLongestSeconds))
      return "sets a latency of " + units::format_number(*value) + " s" + at +
             ", outside [0s, 1e9s]";
    last_date = *date;
    ++events;
  }
  if (events == 0)
    return inline_periodicity ? "sets nothing: it has no \"DATE VALUE\" line" : "";
  if (periodicity > 0 && loop_delay != 0)
    return "has both a period (PERIODICITY or the <trace>'s periodicity) and a LOOPAFTER of " +
           units::format_number(loop_delay) + " s: give one";
  if (periodicity > 0 && periodicity < last_date)
    return "repeats every " + units::format_number(periodicity) + " s, before its last date (" +
           units::format_number(last_date) + " s)";
  const double period = periodicity > 0 ? periodicity : last_date + loop_delay;
  if (repeats && period < kShortestProfilePeriod)
    return "repeats every " + units::format_number(period) +
           " s: a profile repeats every 1us or less often (each repetition is an event)";
  return "";
}

// A profile file as SimGrid finds it: from the platform file's folder, else
// from the working directory. None when neither has it as a file it can
// read (SimGrid's load then says so).
std::optional<std::string> profile_text(const PlatformSpec& spec, const std::string& name) {
  const std::filesystem::path path(name);
  for (const std::filesystem::path& candidate :
       {std::filesystem::path(spec.xml_file).parent_path() / path, path}) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(candidate, error))
      continue;
    try {
      return read_input_text(candidate);
    } catch (const InputError&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// The tag that starts at text[at] ('<'), up to its '>' excluded; nullopt
// where another '<' or the end of the text comes first: the text is no XML
// there. (Taking every '<' up to the next '>' copied the rest of a file of
// '<' for each of them.)
std::optional<std::string> tag_at(const std::string& text, size_t at) {
  const size_t end = text.find_first_of("<>", at + 1);
  if (end == std::string::npos || text[end] == '<')
    return std::nullopt;
  return text.substr(at, end - at);
}

// A name or value from the file, cut to a length a message can quote.
std::string shortened(const std::string& text) {
  return text.size() <= 60 ? text : text.substr(0, 57) + "...";
}

// Refuses what a file may not declare, read from its text before SimGrid
// loads it: SimGrid's own configuration, which gcsim sets (a <config> tag
// with maxmin/precision -1 or a tiny contexts/stack-size crashed the run the
// child's load had passed); hosts and links that turn off, by a state trace
// (the run aborted with a deadlock or an uncaught network failure); a
// speed, bandwidth or latency profile, in a file or a <trace> a
// <trace_connect> uses, that SimGrid would abort or run for ever on
// (profile_problem); and clusters of more hosts than SimGrid could build in
// reasonable time and memory.
void check_xml_text(const PlatformSpec& spec) {
  std::string text;
  try {
    text = read_input_text(spec.xml_file);
  } catch (const InputError& error) {
    throw InputError(spec.source_file, spec.source_path + "/xml", error.what());
  }
  const auto refuse = [&spec](const std::string& what) {
    throw InputError(spec.source_file, spec.source_path + "/xml", spec.xml_file + ": " + what);
  };
  // SimGrid's parser took a NUL for the end of an attribute (prefix="n\0ode-"
  // made hosts n0, n1...) and calls a byte-order mark a syntax error.
  if (const size_t nul = text.find('\0'); nul != std::string::npos)
    refuse("not a text file (a NUL byte at offset " + std::to_string(nul) + "), expected XML");
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0)
    refuse("starts with a UTF-8 byte-order mark, which SimGrid's XML parser cannot read: save "
           "the file without one");
  // Comments out, in one pass (erasing each in place took time quadratic in
  // their number).
  std::string uncommented;
  uncommented.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const size_t comment = text.find("<!--", at);
    uncommented.append(text, at, comment == std::string::npos ? std::string::npos : comment - at);
    if (comment == std::string::npos)
      break;
    const size_t end = text.find("-->", comment + 4);
    at = end == std::string::npos ? text.size() : end + 3;
  }
  text = std::move(uncommented);
  // The element starting at `at`, if its name is `name` exactly.
  const auto element_at = [&text](size_t at, const std::string& name) {
    const size_t after = at + 1 + name.size();
    return text.compare(at + 1, name.size(), name) == 0 && after < text.size() &&
           std::string(" \t\r\n/>").find(text[after]) != std::string::npos;
  };
  // Each <trace>'s profile and, inline, its periodicity, by id, for the
  // <trace_connect>s after it.
  std::map<std::string, std::pair<std::string, std::optional<double>>> traces;
  // SimGrid 3.32's XML parser corrupts its heap (a malloc abort) past 500
  // elements nested in one another, <platform> included.
  constexpr int kMaxNesting = 500;
  int nesting = 0;
  for (size_t at = text.find('<'); at != std::string::npos; at = text.find('<', at + 1)) {
    const std::optional<std::string> whole_tag = tag_at(text, at);
    if (!whole_tag)
      break; // no XML from here on, which SimGrid's parser says, with where
    const std::string& tag = *whole_tag;
    // How a refusal names the element: <host id="a">.
    const auto named = [&tag] {
      return shortened(tag.substr(0, tag.find_first_of(" \t\r\n"))) + " id=\"" +
             shortened(attribute(tag, "id")) + "\">";
    };
    if (tag.size() > 1 && tag[1] == '/') {
      --nesting;
    } else if (tag.size() > 1 && tag[1] != '?' && tag[1] != '!') {
      if (nesting + 1 > kMaxNesting) // an empty element (<host/>) counts too
        refuse(named() + " is nested " + std::to_string(nesting + 1) +
               " elements deep, more than the " + std::to_string(kMaxNesting) +
               " SimGrid's XML parser can read");
      if (tag.back() != '/')
        ++nesting;
    }
    if (element_at(at, "config"))
      refuse("a <config> tag sets SimGrid's options, which gcsim sets itself; remove it (the "
             "network model and its factors are the platform's \"network\" field)");
    if (!attribute(tag, "state_file").empty())
      refuse(named() + " has a state_file: hosts and links that turn off are not simulated");
    for (const auto& [field, what] : {std::pair{"speed_file", Profiled::speed},
                                      std::pair{"bandwidth_file", Profiled::bandwidth},
                                      std::pair{"latency_file", Profiled::latency}}) {
      const std::string file = attribute(tag, field);
      const std::optional<std::string> profile =
          file.empty() ? std::nullopt : profile_text(spec, file);
      const std::string problem = profile ? profile_problem(*profile, what, std::nullopt) : "";
      if (!problem.empty())
        refuse(named() + " has a " + field + " (" + shortened(file) + ") that " + problem);
    }
    if (element_at(at, "trace") && !attribute(tag, "id").empty()) {
      // Inline (<trace ...>DATE VALUE lines</trace>) or from a file.
      const size_t body = at + tag.size() + 1;
      const std::string file = attribute(tag, "file");
      const std::optional<std::string> profile =
          !file.empty()       ? profile_text(spec, file)
          : tag.back() == '/' ? std::string()
                              // Up to the next tag, its </trace> (a trace is text).
                              : text.substr(body, text.find('<', body) - body);
      // SimGrid reads the periodicity of an inline trace only.
      if (profile)
        traces[attribute(tag, "id")] = {
            *profile,
            file.empty()
                ? std::optional<double>(std::strtod(attribute(tag, "periodicity").c_str(), nullptr))
                : std::nullopt};
    }
    if (element_at(at, "trace_connect")) {
      const std::string kind = attribute(tag, "kind");
      const std::string connect = "<trace_connect kind=\"" + shortened(kind) + "\" element=\"" +
                                  shortened(attribute(tag, "element")) + "\">";
      if (kind == "HOST_AVAIL" || kind == "LINK_AVAIL")
        refuse(connect + ": hosts and links that turn off are not simulated");
      if (kind == "BANDWIDTH" || kind == "LATENCY")
        refuse(connect +
               ": SimGrid 3.32 cannot give a declared link a profile (it is sealed); "
               "give the <link> a " +
               (kind == "BANDWIDTH" ? "bandwidth_file" : "latency_file") + " instead");
      const auto trace = traces.find(attribute(tag, "trace"));
      if (kind != "SPEED" || trace == traces.end())
        continue; // SimGrid names a kind or a trace it does not know
      const std::string problem =
          profile_problem(trace->second.first, Profiled::speed, trace->second.second);
      if (!problem.empty())
        refuse(connect + ": its trace \"" + trace->first + "\" " + problem);
    }
  }
  unsigned long long total = 0;
  for (const char* element : {"<cluster", "<cabinet"}) {
    for (size_t at = text.find(element); at != std::string::npos; at = text.find(element, at + 1)) {
      const std::optional<std::string> whole_tag = tag_at(text, at);
      if (!whole_tag)
        break;
      const std::string& tag = *whole_tag;
      const std::string radical = attribute(tag, "radical");
      const unsigned long long hosts = radical_hosts(radical);
      total = ~0ULL - total < hosts ? ~0ULL : total + hosts;
      if (total <= kMaxClusterHosts)
        continue;
      std::string declared = std::to_string(hosts) + " hosts";
      if (total != hosts)
        declared += ", " + std::to_string(total) + " with the clusters before it";
      throw InputError(spec.source_file, spec.source_path + "/xml",
                       spec.xml_file + ": " + element + " id=\"" + shortened(attribute(tag, "id")) +
                           "\"> (radical \"" + shortened(radical) + "\") declares " + declared +
                           ", more than the " + std::to_string(kMaxClusterHosts) +
                           " a platform may have (SimGrid builds every host, about 3 KB each)");
    }
  }
}

// A shared anonymous page for the child's report, unmapped on every path.
class SharedReport {
public:
  SharedReport()
      : memory_(mmap(nullptr, sizeof(ChildReport), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0)) {
    if (memory_ == MAP_FAILED)
      throw std::runtime_error(std::string("cannot map memory for the platform check: ") +
                               std::strerror(errno));
    std::memset(memory_, 0, sizeof(ChildReport));
  }
  ~SharedReport() { munmap(memory_, sizeof(ChildReport)); }
  SharedReport(const SharedReport&) = delete;
  SharedReport& operator=(const SharedReport&) = delete;
  ChildReport* get() { return static_cast<ChildReport*>(memory_); }

private:
  void* memory_;
};

// What a check's outcome depends on. A sweep reads every point's scenario,
// most often with the same platform file: one that passed is not loaded again.
std::string check_key(const PlatformSpec& spec) {
  std::ostringstream key;
  key << std::hexfloat << spec.xml_file << '\n'
      << spec.nodes << ' ' << spec.network.model << ' ' << spec.network.crosstraffic << ' '
      << spec.network.latency_factor.value_or(-1) << ' '
      << spec.network.bandwidth_factor.value_or(-1) << ' '
      << spec.network.tcp_window_bytes.value_or(-1);
  return key.str();
}

} // namespace

void check_xml_platform(const PlatformSpec& spec,
                        const std::vector<std::pair<int, int>>& run_pairs) {
  if (spec.topology != Topology::simgrid_xml)
    return;
  static std::set<std::string> passed;
  const std::string file_key = check_key(spec);
  // The file's own pairs, and the run's pairs besides them, named in the key.
  std::vector<std::pair<int, int>> pairs;
  std::vector<std::pair<int, int>> beyond;
  std::string key = file_key;
  if (!run_pairs.empty()) {
    pairs = pairs_to_check(spec.nodes);
    std::sort(pairs.begin(), pairs.end());
    for (const std::pair<int, int>& pair : run_pairs)
      if (!std::binary_search(pairs.begin(), pairs.end(), pair)) {
        beyond.push_back(pair);
        key += ' ' + std::to_string(pair.first) + '>' + std::to_string(pair.second);
      }
  }
  if (passed.count(key) > 0)
    return;
  const bool file_passed = passed.count(file_key) > 0;
  if (!file_passed)
    check_xml_text(spec);
  // One engine per process: a process that already has one cannot build
  // another, here or in a child that inherits it.
  if (sg4::Engine::is_initialized())
    return;
  SharedReport shared;
  ChildReport* report = shared.get();
  // A file that passed needs only the run's other pairs looked up; one that
  // did not, its own and those (null: its own alone, which the child finds).
  pairs.insert(pairs.end(), beyond.begin(), beyond.end());
  const std::vector<std::pair<int, int>>* which = file_passed      ? &beyond
                                                  : beyond.empty() ? nullptr
                                                                   : &pairs;
  // SimGrid's output (its message and a backtrace) until the child exits;
  // only the start of it is kept.
  const ForkedResult child = run_forked([&](int) -> int { check_in_child(spec, which, report); },
                                        ChildPipe::stderr_stream, 65536);
  if (child.exited(0)) {
    passed.insert(file_key);
    passed.insert(key);
    return;
  }
  if (child.exited(kFoundProblem))
    throw InputError(spec.source_file, spec.source_path + report->field, report->message);
  std::string how = simgrid_message(child.output);
  if (how.empty())
    how = child.signal != 0 ? std::string("killed by signal ") + strsignal(child.signal)
                            : "exit status " + std::to_string(child.exit_code);
  if (report->route[0] != '\0')
    throw InputError(
        spec.source_file, spec.source_path + "/xml",
        spec.xml_file + ": SimGrid fails looking up the route " + report->route + ": " + how +
            // A Full zone without a single <route> crashes so.
            (child.signal == SIGSEGV ? " (does the file route between these hosts?)" : ""));
  throw InputError(spec.source_file, spec.source_path + "/xml",
                   "SimGrid cannot load " + spec.xml_file + ": " + how);
}

} // namespace gcsim::net
