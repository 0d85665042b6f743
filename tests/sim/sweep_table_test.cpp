// sweep.csv's fields and columns: a field with a comma, a quote or a line
// break is quoted (a quote doubled), and a summary number named like one of
// the fixed columns keeps its own column, as summary.<name>.

#include "sim/sweep/table.hpp"

#include <string>
#include <vector>

#include <doctest/doctest.h>

using gcsim::sweep::csv_field;
using gcsim::sweep::make_csv;
using gcsim::sweep::Row;

TEST_CASE("a CSV field is quoted only when it must be, a quote doubled") {
  CHECK(csv_field("plain") == "plain");
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_field("two\nlines") == "\"two\nlines\"");
}

TEST_CASE("sweep.csv: fixed columns first, a summary number of the same name beside them") {
  Row row;
  row.point = "p000";
  row.values = {4};
  row.command = "gcsim run s.json --set 'compressor={\"name\":\"topk\"}'";
  row.result = {
      {"summary", {{"iteration_time_s", 0.5}, {"gradients", 2}, {"gcsim_commit", 3}, {"point", 7}}},
      {"gcsim_commit", "0123456789ab-dirty"}};
  const std::string csv = make_csv({"platform.nodes"}, {row});
  const std::string header = csv.substr(0, csv.find('\n'));
  CHECK(header == "point,platform.nodes,command,compressor_name,gradients,gcsim_commit,"
                  "iteration_time_s,summary.gcsim_commit,summary.gradients,summary.point");
  const std::string line = csv.substr(csv.find('\n') + 1);
  CHECK(line == "p000,4,\"gcsim run s.json --set 'compressor={\"\"name\"\":\"\"topk\"\"}'\",,,"
                "0123456789ab-dirty,0.5,3,2,7\n");
}

TEST_CASE("a CSV field with a carriage return is quoted too") {
  CHECK(csv_field("two\r\nlines") == "\"two\r\nlines\"");
  CHECK(csv_field("carriage\rreturn") == "\"carriage\rreturn\"");
}

TEST_CASE(
    "sweep.csv: nested summary numbers by their path, in natural order, a missing one empty") {
  // A summary object's numbers (fidelity.cosine) are columns of their own,
  // "stride 2" comes before "stride 16", and a number a point lacks leaves
  // its cell empty, not 0; text and true/false are no columns.
  Row first;
  first.point = "p000";
  first.command = "gcsim run s.json";
  first.result = {{"summary",
                   {{"fidelity", {{"cosine", 0.5}, {"rel_l2", 0.25}}},
                    {"stride 16", 16},
                    {"stride 2", 2},
                    {"label", "text"},
                    {"finished", true}}}};
  Row second = first;
  second.point = "p001";
  second.result = {{"summary", {{"stride 2", 3}}}};
  CHECK(make_csv({}, {first, second}) ==
        "point,command,compressor_name,gradients,gcsim_commit,fidelity.cosine,fidelity.rel_l2,"
        "stride 2,stride 16\n"
        "p000,gcsim run s.json,,,,0.5,0.25,2,16\n"
        "p001,gcsim run s.json,,,,,,3,\n");
}
