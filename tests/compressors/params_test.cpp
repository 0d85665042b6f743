#include "compressors/params.hpp"
#include "compressors/registry.hpp"

#include <set>

#include <doctest/doctest.h>

namespace gc = gcsim::compress;

TEST_CASE("registry knows the twelve compressors and builds each with defaults") {
  const auto infos = gc::list_compressors();
  std::set<std::string> names;
  for (const auto& info : infos) {
    names.insert(info.name);
    auto c = gc::make_compressor(info.name, nullptr);
    CHECK(c->name() == info.name);
    for (const auto& spec : info.params) {
      CHECK(c->params().at(spec.name) == spec.default_value);
      CHECK_FALSE(spec.description.empty());
    }
  }
  CHECK(names == std::set<std::string>{"bf16", "cltk", "deft", "dense", "dgc", "fp16", "gs_sgd",
                                       "gtopk", "iwp", "powersgd", "randomk", "sketched_sgd",
                                       "topk"});
}

TEST_CASE("registry rejects unknown names and bad parameters with a message naming them") {
  CHECK_THROWS_WITH_AS(gc::make_compressor("gtop"), doctest::Contains("did you mean 'gtopk'"),
                       gc::ParameterError);
  CHECK_THROWS_WITH_AS(gc::make_compressor("topk", {{"densty", 0.01}}),
                       doctest::Contains("unknown parameter 'densty'; did you mean 'density'"),
                       gc::ParameterError);
  CHECK_THROWS_WITH_AS(gc::make_compressor("topk", {{"density", 0.0}}),
                       doctest::Contains("'density'"), gc::ParameterError);
  CHECK_THROWS_WITH_AS(gc::make_compressor("topk", {{"density", 1.5}}),
                       doctest::Contains("'density'"), gc::ParameterError);
  CHECK_THROWS_WITH_AS(gc::make_compressor("topk", {{"variant", "gather"}}),
                       doctest::Contains("allgather_pairs"), gc::ParameterError);
  CHECK_THROWS_WITH_AS(gc::make_compressor("gs_sgd", {{"rows", 2.5}}),
                       doctest::Contains("expected an integer"), gc::ParameterError);
  CHECK_THROWS_WITH_AS(gc::make_compressor("dgc", {{"momentum", "high"}}),
                       doctest::Contains("'momentum': expected a number"), gc::ParameterError);
  CHECK_THROWS_WITH_AS(gc::make_compressor("deft", {{"leader_rotation", 1}}),
                       doctest::Contains("expected true or false"), gc::ParameterError);
  CHECK_THROWS_AS(gc::make_compressor("topk", nlohmann::json::array()), gc::ParameterError);
  CHECK_THROWS_WITH_AS(gc::make_compressor("deft", {{"index_bytes", 6}}),
                       doctest::Contains("'index_bytes': expected 4 or 8, got 6"),
                       gc::ParameterError);
  CHECK_THROWS_WITH_AS(gc::make_compressor("deft", {{"index_bytes", 12}}),
                       doctest::Contains("expected 4 or 8, got 12"), gc::ParameterError);
  CHECK(gc::make_compressor("deft", {{"index_bytes", 8}})->params().at("index_bytes") == 8);
  // A range's message prints its bounds as they were written.
  CHECK_THROWS_WITH_AS(gc::make_compressor("gs_sgd", {{"rows", 65}}),
                       doctest::Contains("'rows': expected an integer in [1, 64], got 65"),
                       gc::ParameterError);
  CHECK_THROWS_WITH_AS(gc::make_compressor("dgc", {{"min_layer_size", -1}}),
                       doctest::Contains("expected an integer in [0, 1099511627776], got -1"),
                       gc::ParameterError);
  CHECK_THROWS_WITH_AS(gc::make_compressor("topk", {{"density", 0}}),
                       doctest::Contains("expected a number in (0, 1], got 0"), gc::ParameterError);
  // A ParameterError is an std::invalid_argument, which the CLI maps to exit status 2.
  CHECK_THROWS_AS(gc::make_compressor("nope"), std::invalid_argument);
  // Values given are kept, others defaulted.
  const auto c = gc::make_compressor("topk", {{"density", 0.01}});
  CHECK(c->params().at("density").get<double>() == 0.01);
  CHECK(c->params().at("variant") == "allgather_pairs");
}

TEST_CASE("did_you_mean picks the closest name or nothing") {
  CHECK(gc::did_you_mean("second_rnd", {"rows", "second_round"}) == "second_round");
  CHECK(gc::did_you_mean("zzzzzzzz", {"rows", "columns"}).empty());
  // Up to max(2, |word| / 3) edits: three for a word of nine letters.
  CHECK(gc::did_you_mean("secnd_rnd", {"rows", "second_round"}) == "second_round");
  CHECK(gc::did_you_mean("scnd_rnd", {"rows", "second_round"}).empty());
  // A truncated name is suggested whole; two letters are too few to guess.
  CHECK(gc::did_you_mean("bucket", {"bucket_size", "overlap"}) == "bucket_size");
  CHECK(gc::did_you_mean("ov", {"bucket_size", "overlap"}).empty());
  // A name made longer: the longest one it starts with, of 3 letters or more.
  CHECK(gc::did_you_mean("synthesis_method", {"seed", "synthesis", "synth"}) == "synthesis");
  CHECK(gc::did_you_mean("overlapping_buckets", {"overlap", "over"}) == "overlap");
  CHECK(gc::did_you_mean("ovx_long_name", {"ov"}).empty());
}
