// The fit recovers a known alpha and beta from synthetic ring benchmark
// points, and the simulated collectives on the calibrated platform equal the
// closed form (no contention, CM02): the fit and the simulation agree. The
// report's figures are checked on a run made by hand, the measured-run
// reader's defaults on a small file.

#include "sim/input/input_error.hpp"
#include "sim/validate/fit.hpp"
#include "sim/validate/report.hpp"
#include "sim/validate/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

#include <doctest/doctest.h>

using namespace gcsim::validate;

namespace {

std::vector<CollectivePoint> synthetic(double alpha, double beta, double noise) {
  std::vector<CollectivePoint> points;
  int sign = 1;
  for (int ranks : {4, 8})
    for (Collective collective : {Collective::allreduce, Collective::allgather})
      for (uint64_t bytes : {4096ull, 65536ull, 1ull << 20, 4ull << 20, 64ull << 20}) {
        CollectivePoint point;
        point.collective = collective;
        point.ranks = ranks;
        point.bytes = bytes;
        PathCost cost;
        REQUIRE(ring_path_cost(point, cost));
        point.seconds = (cost.messages * alpha + cost.bytes * beta) * (1 + sign * noise);
        sign = -sign;
        points.push_back(point);
      }
  return points;
}

} // namespace

TEST_CASE("the fit recovers alpha and beta from exact points") {
  const double alpha = 350e-6;
  const double beta = 1 / 11.9e6;
  FitResult fit = fit_alpha_beta(synthetic(alpha, beta, 0), "synthetic.json");
  CHECK(fit.points == 20);
  // 4 KiB and 64 KiB give the latency, 4 MiB and 64 MiB the bandwidth.
  CHECK(fit.latency_points == 8);
  CHECK(fit.bandwidth_points == 8);
  CHECK(fit.alpha_s == doctest::Approx(alpha).epsilon(1e-9).scale(0));
  CHECK(fit.beta_s_per_byte == doctest::Approx(beta).epsilon(1e-9).scale(0));
  CHECK(fit.rms_relative_error < 1e-9);
}

TEST_CASE("the fit stays close under 2% alternating noise") {
  const std::vector<CollectivePoint> points = synthetic(1e-3, 1 / 1.2e8, 0.02);
  FitResult fit = fit_alpha_beta(points, "synthetic.json");
  CHECK(std::fabs(fit.alpha_s / 1e-3 - 1) < 0.1);
  CHECK(std::fabs(fit.beta_s_per_byte * 1.2e8 - 1) < 0.03);
  // Its error is the root of the mean square relative error over the points.
  double squares = 0;
  for (const CollectivePoint& point : points) {
    PathCost cost;
    REQUIRE(ring_path_cost(point, cost));
    const double predicted = cost.messages * fit.alpha_s + cost.bytes * fit.beta_s_per_byte;
    squares += std::pow(predicted / point.seconds - 1, 2);
  }
  CHECK(fit.rms_relative_error ==
        doctest::Approx(std::sqrt(squares / static_cast<double>(points.size())))
            .epsilon(1e-9)
            .scale(0));
  CHECK(fit.rms_relative_error > 0.005);
}

TEST_CASE("a ring's pace is set by its largest chunk") {
  // 7 bytes on 4 ranks: chunks of 2, 2, 2 and 1 byte; every step waits for 2.
  CollectivePoint point;
  point.collective = Collective::allreduce;
  point.ranks = 4;
  point.bytes = 7;
  PathCost cost;
  REQUIRE(ring_path_cost(point, cost));
  CHECK(cost.messages == 6);
  CHECK(cost.bytes == 12);
  point.collective = Collective::allgather;
  REQUIRE(ring_path_cost(point, cost));
  CHECK(cost.messages == 3);
  CHECK(cost.bytes == 6);
}

TEST_CASE("the calibrated platform's description gives the fitted rate in Mbit/s") {
  const FitResult fit = fit_alpha_beta(synthetic(350e-6, 1 / 11.9e6, 0), "synthetic.json");
  gcsim::net::PlatformSpec measured;
  measured.topology = gcsim::net::Topology::star;
  measured.nodes = 8;
  const nlohmann::json json =
      platform_json(calibrated_platform(fit, measured, "fitted"), fit, "synthetic.json");
  // 11.9 MB/s is 95.2 Mbit/s; alpha 350 us.
  CHECK(json.dump().find("effective bandwidth 95.20 Mbit/s") != std::string::npos);
  CHECK(json.dump().find("alpha 350.0 us per message") != std::string::npos);
}

TEST_CASE("slow small points move the latency, not the bandwidth") {
  // Every 4 KiB point three times its closed form (a small collective's
  // scheduling noise): one line over every size pulls the bandwidth up too,
  // and every large collective with it; alpha from the small points alone
  // takes the noise, and the large points keep their rate.
  const double alpha = 1e-3;
  const double beta = 1 / 1.2e7;
  std::vector<CollectivePoint> points = synthetic(alpha, beta, 0);
  for (CollectivePoint& point : points)
    if (point.bytes == 4096)
      point.seconds *= 3;
  FitResult fit = fit_alpha_beta(points, "noisy.json");
  CHECK(fit.alpha_s > 1.5 * alpha);
  CHECK(std::fabs(fit.beta_s_per_byte / beta - 1) < 0.01);
  // The same points without a group of large ones: one line over all.
  std::vector<CollectivePoint> no_large;
  for (const CollectivePoint& point : points)
    if (point.bytes < (4u << 20))
      no_large.push_back(point);
  FitResult line = fit_alpha_beta(no_large, "no-large.json");
  CHECK(line.latency_points == 0);
  CHECK(line.bandwidth_points == 0);
  CHECK(line.points == 12);
  CHECK(std::fabs(line.beta_s_per_byte / beta - 1) > 0.05);
}

TEST_CASE("a latency fitted below zero is set to 0, and the report says so") {
  // Only sizes of 1 MiB and more, the smaller ones a fifth faster than the
  // closed form: the one line through them crosses zero below the origin.
  const double beta = 1 / 1.2e9;
  std::vector<CollectivePoint> points;
  for (const CollectivePoint& point : synthetic(2e-6, beta, 0))
    if (point.bytes >= (1u << 20)) {
      points.push_back(point);
      if (point.bytes == (1u << 20))
        points.back().seconds *= 0.8;
    }
  const FitResult fit = fit_alpha_beta(points, "large-only.json");
  CHECK(fit.alpha_clamped);
  CHECK(fit.alpha_s == 0);
  // The bandwidth refitted alone, without the latency: sum(b/t) / sum((b/t)^2).
  double b = 0;
  double bb = 0;
  for (const CollectivePoint& point : points) {
    PathCost cost;
    REQUIRE(ring_path_cost(point, cost));
    b += cost.bytes / point.seconds;
    bb += std::pow(cost.bytes / point.seconds, 2);
  }
  CHECK(fit.beta_s_per_byte == doctest::Approx(b / bb).epsilon(1e-12).scale(0));
  const FitResult exact = fit_alpha_beta(synthetic(2e-6, beta, 0), "exact.json");
  CHECK_FALSE(exact.alpha_clamped);
  MeasuredRun run;
  run.name = "large-only";
  run.collectives = points;
  ValidationInput input;
  input.run = &run;
  input.platform.nodes = 8;
  input.platform_source = "fit";
  input.fit = fit;
  input.collective_seconds.assign(points.size(), 1.0);
  const std::string text = format_report(make_report(input));
  CHECK(text.find("the latency came out negative and is set to 0") != std::string::npos);
}

TEST_CASE("a fitted rate above a star's described links is pointed out") {
  // Points timed at 1.2 GB/s on a star described with 1 Gbit/s links: logs
  // named after the wrong collective, or sizes per rank, give such fits.
  const std::vector<CollectivePoint> points = synthetic(2e-6, 1 / 1.2e9, 0);
  MeasuredRun run;
  run.name = "fast";
  run.collectives = points;
  run.cluster.topology = gcsim::net::Topology::star;
  ValidationInput input;
  input.run = &run;
  input.platform_source = "fit";
  input.fit = fit_alpha_beta(points, "fast.json");
  input.collective_seconds.assign(points.size(), 1.0);
  const std::string warning = "the bandwidth is above the described links' 1000.00 Mbit/s";
  run.cluster.link.bandwidth_Bps = 1.25e8;
  CHECK(format_report(make_report(input)).find(warning) != std::string::npos);
  // Slower than the links, as TCP/IP's headers leave it: nothing to say.
  run.cluster.link.bandwidth_Bps = 1.25e10;
  CHECK(format_report(make_report(input)).find("the bandwidth is above") == std::string::npos);
}

TEST_CASE("tree allreduce points are compared, not fitted") {
  std::vector<CollectivePoint> points = synthetic(1e-3, 1 / 1.2e8, 0);
  const FitResult rings = fit_alpha_beta(points, "rings.json");
  CollectivePoint tree = points.back();
  tree.algorithm = Algorithm::tree;
  PathCost cost;
  CHECK_FALSE(ring_path_cost(tree, cost));
  tree.seconds *= 5; // far off any ring line: fitted, it would move the fit
  points.push_back(tree);
  const FitResult with_tree = fit_alpha_beta(points, "with-tree.json");
  CHECK(with_tree.points == rings.points);
  CHECK(with_tree.alpha_s == rings.alpha_s);
  CHECK(with_tree.beta_s_per_byte == rings.beta_s_per_byte);
}

TEST_CASE("each point says what it was fitted to: in sample, or a prediction") {
  std::vector<CollectivePoint> points = synthetic(350e-6, 1 / 11.9e6, 0);
  const FitResult split = fit_alpha_beta(points, "split.json");
  std::map<uint64_t, std::string> roles;
  for (const CollectivePoint& point : points)
    roles[point.bytes] = fitted_to(point, split);
  CHECK(roles == std::map<uint64_t, std::string>{{4096, "alpha"},
                                                 {65536, "alpha"},
                                                 {1 << 20, ""},
                                                 {4 << 20, "bandwidth"},
                                                 {64 << 20, "bandwidth"}});
  CollectivePoint tree = points.back();
  tree.algorithm = Algorithm::tree;
  CollectivePoint float16 = points.back();
  float16.dtype = DataType::float16;
  CHECK(fitted_to(tree, split).empty());
  CHECK(fitted_to(float16, split).empty());
  // Without small points, one line over every ring point.
  std::vector<CollectivePoint> large;
  for (const CollectivePoint& point : points)
    if (point.bytes >= (1 << 20))
      large.push_back(point);
  const FitResult one_line = fit_alpha_beta(large, "large.json");
  for (const CollectivePoint& point : large)
    CHECK(fitted_to(point, one_line) == "alpha and bandwidth");
}

TEST_CASE("the fit refuses a single size") {
  std::vector<CollectivePoint> points = synthetic(1e-3, 1e-8, 0);
  points.resize(1);
  CHECK_THROWS_AS(fit_alpha_beta(points, "one.json"), gcsim::InputError);
}

TEST_CASE("simulated ring collectives on the calibrated platform equal the fitted closed form") {
  const double alpha = 500e-6;
  const double beta = 1 / 12e6;
  std::vector<CollectivePoint> points = synthetic(alpha, beta, 0);
  FitResult fit = fit_alpha_beta(points, "synthetic.json");
  gcsim::net::PlatformSpec measured;
  measured.nodes = 8;
  measured.link = {12.5e6, 1e-4};
  gcsim::net::PlatformSpec platform = calibrated_platform(fit, measured, "calibrated");
  // Simulated twice in one process: each simulation runs in its own child.
  for (int round = 0; round < 2; ++round) {
    std::vector<double> simulated = simulate_collectives(platform, points);
    REQUIRE(simulated.size() == points.size());
    for (size_t i = 0; i < points.size(); ++i) {
      INFO("point " << i);
      CHECK(simulated[i] == doctest::Approx(points[i].seconds).epsilon(1e-6).scale(0));
    }
  }
}

namespace {

// A broadcast point, and the star it runs on: links of 1e7 B/s and 100 us,
// so alpha = 2e-4 s per message (two links) and beta = 1e-7 s per byte.
CollectivePoint broadcast_point(Algorithm algorithm, int ranks, uint64_t bytes) {
  CollectivePoint point;
  point.collective = Collective::broadcast;
  point.algorithm = algorithm;
  point.ranks = ranks;
  point.bytes = bytes;
  return point;
}

gcsim::net::PlatformSpec broadcast_star(int nodes) {
  gcsim::net::PlatformSpec platform;
  platform.nodes = nodes;
  platform.link = {1e7, 1e-4};
  return platform;
}

} // namespace

TEST_CASE("gloo's broadcast shares the root's link between its concurrent sends") {
  // P=4: the root sends to ranks 1 and 2 at once (half rate each), then rank 1
  // forwards to rank 3: 3 n beta + 2 alpha.
  std::vector<double> simulated = simulate_collectives(
      broadcast_star(4), {broadcast_point(Algorithm::binomial_tree, 4, 1u << 20)});
  const double alpha = 2e-4;
  const double beta = 1e-7;
  CHECK(simulated.at(0) ==
        doctest::Approx(3 * (1u << 20) * beta + 2 * alpha).epsilon(1e-6).scale(0));
}

TEST_CASE("NCCL's ring broadcast is a pipeline along the chain of ranks") {
  // P=8, n = 16 chunks of c: the first chunk crosses the 7 hops one after
  // the other (alpha + c beta each); behind it each hop streams the 14
  // middle chunks as they come (alpha + 14 c beta), and the last chunk
  // follows the last hop's stream (alpha + c beta): (n + P - 2) c beta +
  // (P + 1) alpha. No latency per chunk, as NCCL keeps 8 in flight (one
  // message per chunk, each waiting on the one before, took 22 (alpha + c
  // beta)); gloo's tree takes 6 n beta.
  CollectivePoint point = broadcast_point(Algorithm::ring, 8, 8u << 20);
  point.chunk_bytes = 512u << 10;
  CollectivePoint small = point; // one piece: P - 1 hops of the whole buffer
  small.bytes = 100000;
  CollectivePoint tree = point;
  tree.algorithm = Algorithm::binomial_tree;
  std::vector<double> simulated = simulate_collectives(broadcast_star(8), {point, small, tree});
  const double alpha = 2e-4;
  const double beta = 1e-7;
  CHECK(simulated.at(0) ==
        doctest::Approx(22 * (512u << 10) * beta + 9 * alpha).epsilon(1e-6).scale(0));
  CHECK(simulated.at(1) == doctest::Approx(7 * (alpha + 100000 * beta)).epsilon(1e-6).scale(0));
  CHECK(simulated.at(2) > 4 * simulated.at(0));
}

TEST_CASE("NCCL's tree allreduce runs the double binary tree") {
  // Two ranks, one chunk per tree: each half of the buffer goes up and comes
  // back down, the two trees' halves crossing in opposite directions, 2
  // (alpha + n/2 beta), where the ring's 2 steps of n/2 take as long; on 16
  // ranks and 4 bytes, latency only: 2 x 4 levels of the deeper tree against
  // the ring's 2 x 15 steps.
  CollectivePoint pair;
  pair.ranks = 2;
  pair.bytes = 40000;
  pair.algorithm = Algorithm::tree;
  CollectivePoint tiny = pair;
  tiny.ranks = 16;
  tiny.bytes = 4;
  CollectivePoint tiny_ring = tiny;
  tiny_ring.algorithm = Algorithm::ring;
  const std::vector<double> simulated =
      simulate_collectives(broadcast_star(16), {pair, tiny, tiny_ring});
  const double alpha = 2e-4;
  const double beta = 1e-7;
  CHECK(simulated.at(0) == doctest::Approx(2 * (alpha + 20000 * beta)).epsilon(1e-6).scale(0));
  CHECK(simulated.at(1) == doctest::Approx(2 * 4 * alpha).epsilon(1e-2).scale(0));
  CHECK(simulated.at(2) == doctest::Approx(2 * 15 * alpha).epsilon(1e-2).scale(0));
}

TEST_CASE("a tree point over whole multi-GPU machines runs NCCL's machine trees") {
  // 2 machines of 2 GPUs: a GPU's own link of latency g, each NIC's of L. The
  // machine trees join the first GPUs and chain the second: 3 -> 2 -> 0 up
  // and back down (and the mirror), each hop 2 g plus 2 L between machines:
  // 8 g + 4 L. The flat tree over the four ranks, 0 -> 2 -> {1, 3}, crosses
  // between machines twice each way: 8 g + 8 L.
  const double g = 1e-6;
  const double latency = 1e-4;
  gcsim::net::PlatformSpec machines;
  machines.topology = gcsim::net::Topology::multi_gpu;
  machines.nodes = 2;
  machines.gpus_per_node = 2;
  machines.gpu_link = {1e12, g};
  machines.link = {1e12, latency};
  CollectivePoint point;
  point.algorithm = Algorithm::tree;
  point.ranks = 4;
  point.bytes = 4;
  const std::vector<double> simulated = simulate_collectives(machines, {point});
  CHECK(simulated.at(0) == doctest::Approx(8 * g + 4 * latency).epsilon(1e-6).scale(0));
}

TEST_CASE("geometric-mean error is symmetric and zero on equality") {
  CHECK(geometric_mean_error({1, 2}, {1, 2}) == doctest::Approx(0).scale(1));
  CHECK(geometric_mean_error({1}, {1.1}) == doctest::Approx(0.1).scale(0));
  CHECK(geometric_mean_error({1.1}, {1}) == doctest::Approx(0.1).scale(0));
}

TEST_CASE("the report prints a long run name and platform source whole") {
  // Both come from the user's files; a fixed line buffer cut them mid-name.
  const std::vector<CollectivePoint> points = synthetic(1e-3, 1 / 1.2e8, 0);
  MeasuredRun run;
  run.name = std::string(300, 'n') + "-end-of-name";
  run.collectives = points;
  ValidationInput input;
  input.run = &run;
  input.platform.nodes = 8;
  input.platform_source = std::string(300, 's') + "-end-of-source.json";
  input.collective_seconds.assign(points.size(), 1.0);
  const std::string text = format_report(make_report(input));
  CHECK(text.find(run.name + " on " + input.platform_source + ": 8 nodes") != std::string::npos);
}

TEST_CASE("a latency clamped to 0 leaves the bandwidth to the large points") {
  // Both groups, a latency of 10 ns and the small points in half their
  // closed form, faster than the large ones' rate allows: alpha comes out
  // below zero. The bandwidth is then refitted to the points of 4 MiB and
  // more alone, as it is fitted when alpha is not clamped: the small points'
  // noise must not move it either way.
  const double beta = 1 / 1.2e9;
  std::vector<CollectivePoint> points = synthetic(1e-8, beta, 0);
  for (CollectivePoint& point : points)
    if (point.bytes < kLatencyPointBytes)
      point.seconds *= 0.5;
  const FitResult fit = fit_alpha_beta(points, "fast-small.json");
  REQUIRE(fit.latency_points == 8);
  REQUIRE(fit.bandwidth_points == 8);
  CHECK(fit.alpha_clamped);
  CHECK(fit.alpha_s == 0);
  double b = 0;
  double bb = 0;
  double b_all = 0;
  double bb_all = 0;
  for (const CollectivePoint& point : points) {
    PathCost cost;
    REQUIRE(ring_path_cost(point, cost));
    const double rate = cost.bytes / point.seconds;
    b_all += rate;
    bb_all += rate * rate;
    if (point.bytes >= kBandwidthPointBytes) {
      b += rate;
      bb += rate * rate;
    }
  }
  CHECK(fit.beta_s_per_byte == doctest::Approx(b / bb).epsilon(1e-12).scale(0));
  // Over every ring point it would be far off: the test tells the two apart.
  CHECK(std::fabs((b_all / bb_all) / (b / bb) - 1) > 0.1);
}

TEST_CASE("the calibrated platform: half the fitted latency per link, the run's shared cores "
          "and float16 sum") {
  const FitResult fit = fit_alpha_beta(synthetic(350e-6, 1 / 11.9e6, 0), "synthetic.json");
  gcsim::net::PlatformSpec measured;
  measured.topology = gcsim::net::Topology::star;
  measured.nodes = 4;
  measured.shared_cores = 2;
  measured.float16_sum_s = 13e-9;
  const gcsim::net::PlatformSpec spec = calibrated_platform(fit, measured, "fitted");
  CHECK(spec.nodes == 4);
  CHECK(spec.shared_cores == 2);
  // Measured apart from the collectives, and kept as the cores are.
  CHECK(spec.float16_sum_s == 13e-9);
  CHECK(spec.link.latency_s == doctest::Approx(175e-6).epsilon(1e-9).scale(0));
  CHECK(spec.link.bandwidth_Bps == doctest::Approx(11.9e6).epsilon(1e-9).scale(0));
  // The platform file --out writes: what `gcsim run` reads back is the same.
  const nlohmann::json json = platform_json(spec, fit, "synthetic.json");
  CHECK(json["link"]["latency"] == "175us");
  CHECK(json["link"]["bandwidth"] == "1.19e+07Bps");
  CHECK(json["nodes"] == 4);
  CHECK(json["shared_cores"] == 2);
  CHECK(json["float16_sum"] == "13ns");
}

TEST_CASE("an allgather of a size the ranks do not divide is simulated as the fit prices it") {
  // 9 bytes on 8 ranks: blocks of 2 bytes (rounded up, as the fit's chunks
  // are), 7 steps of alpha + 2 beta on the broadcast star's links.
  CollectivePoint point;
  point.collective = Collective::allgather;
  point.ranks = 8;
  point.bytes = 9;
  PathCost cost;
  REQUIRE(ring_path_cost(point, cost));
  const double alpha = 2e-4;
  const double beta = 1e-7;
  const std::vector<double> simulated = simulate_collectives(broadcast_star(8), {point});
  CHECK(simulated.at(0) ==
        doctest::Approx(cost.messages * alpha + cost.bytes * beta).epsilon(1e-9).scale(0));
  CHECK(simulated.at(0) == doctest::Approx(7 * (alpha + 2 * beta)).epsilon(1e-9).scale(0));
}

TEST_CASE("the simulated compressors send what worker.py sends") {
  TrainingRun run;
  run.compressor = "deft";
  run.compressor_params = {{"name", "deft"}, {"density", 0.05}};
  CHECK(simulated_compressor_params(run) ==
        nlohmann::json{{"density", 0.05}, {"pad_indices", true}, {"index_bytes", 4}});
  run.compressor = "topk";
  run.compressor_params = {{"name", "topk"}, {"density", 0.01}};
  CHECK(simulated_compressor_params(run) ==
        nlohmann::json{{"density", 0.01}, {"variant", "allgather_pairs"}});
  run.compressor = "cltk";
  CHECK(simulated_compressor_params(run) == nlohmann::json{{"density", 0.01}});
  // DDP's hooks: the hook's settings as the run gives them, and no density.
  run.compressor = "powersgd";
  run.compressor_params = {{"name", "powersgd"}, {"rank", 2}, {"start_iteration", 2}};
  CHECK(simulated_compressor_params(run) == nlohmann::json{{"rank", 2}, {"start_iteration", 2}});
  run.compressor = "fp16";
  run.compressor_params = {{"name", "fp16"}};
  CHECK(simulated_compressor_params(run) == nlohmann::json::object());
}

namespace {

IterationTimes iteration(double iteration_s, double compute_s, double optimizer_s,
                         double compression_s) {
  IterationTimes times;
  times.iteration_s = iteration_s;
  times.compute_s = compute_s;
  times.backward_s = compute_s;
  times.optimizer_s = optimizer_s;
  times.compression_s = compression_s;
  return times;
}

// The report's line of `run`'s `phase` in the training table.
std::string table_line(const std::string& text, const std::string& run, const std::string& phase) {
  char start[64];
  std::snprintf(start, sizeof start, "  %-12s %-13s ", run.c_str(), phase.c_str());
  const size_t at = text.find(start);
  if (at == std::string::npos)
    return "";
  return text.substr(at, text.find('\n', at) - at);
}

} // namespace

TEST_CASE("the report's fields: every point, every run, each figure where it is named") {
  // Three points (one small), a dense run with a warm-up and a compression
  // time it does not count, a top-k run whose phases fill its iteration, on
  // a 100 Mbit/s star; times in powers of two, so that sums are exact.
  MeasuredRun run;
  run.name = "by-hand";
  run.cluster.topology = gcsim::net::Topology::star;
  run.cluster.nodes = 4;
  run.cluster.link = {0.95e8, 50e-6};
  CollectivePoint small;
  small.ranks = 4;
  small.bytes = 64 << 10;
  small.seconds = 1;
  CollectivePoint large = small;
  large.bytes = 4 << 20;
  large.seconds = 2;
  CollectivePoint broadcast = large;
  broadcast.collective = Collective::broadcast;
  broadcast.algorithm = Algorithm::binomial_tree;
  broadcast.bytes = 8 << 20;
  broadcast.seconds = 4;
  run.collectives = {small, large, broadcast};
  TrainingRun dense;
  dense.name = "dense";
  dense.compressor = "dense";
  dense.compressor_params = {{"name", "dense"}};
  dense.ranks = 4;
  dense.warmup_iterations = 1;
  dense.iterations = {iteration(9, 8, 0.5, 0), iteration(1, 0.375, 0.125, 0.0625)};
  TrainingRun topk = dense;
  topk.name = "topk";
  topk.compressor = "topk";
  topk.compressor_params = {{"name", "topk"}, {"density", 0.01}};
  topk.warmup_iterations = 0;
  topk.iterations = {iteration(1, 0.5, 0.25, 0.25)};
  run.training = {dense, topk};

  ValidationInput input;
  input.run = &run;
  input.platform = run.cluster;
  input.platform.link = {1.25e7, 50e-6};
  input.platform_source = "fit";
  input.collective_seconds = {1.5, 2.2, 4};
  SimulatedIteration dense_sim;
  dense_sim.iteration_s = 1.25;
  dense_sim.compute_s = 0.5;
  dense_sim.communication_s = 0.75;
  SimulatedIteration topk_sim = dense_sim;
  topk_sim.iteration_s = 0.8;
  topk_sim.compression_s = 0.125;
  topk_sim.communication_s = 0.175;
  input.training = {dense_sim, topk_sim};
  FitResult fit;
  fit.alpha_s = 1e-4;
  fit.beta_s_per_byte = 1e-8; // 100 MB/s, 5.3% above the described links
  fit.points = 10;
  fit.latency_points = 6;
  fit.bandwidth_points = 3;
  fit.rms_relative_error = 0.02;
  input.fit = fit;
  const nlohmann::json report = make_report(input);
  const std::string text = format_report(report);

  CHECK(report["platform"]["bandwidth_Bps"] == 1.25e7);
  CHECK(text.find("by-hand on fit: 4 nodes, 100.00 Mbit/s, 50.0 us per link") != std::string::npos);
  CHECK(report["fit"]["points"] == 10);
  CHECK(report["fit"]["latency_points"] == 6);
  CHECK(report["fit"]["bandwidth_points"] == 3);
  CHECK(report["fit"]["rms_relative_error"] == 0.02);
  CHECK(text.find("rms 2.0% over 10 ring points; alpha from the 6 ring points below 1 MiB, "
                  "bandwidth from the 3 of 4 MiB and more") != std::string::npos);
  CHECK(text.find("the bandwidth is above the described links' 760.00 Mbit/s") !=
        std::string::npos);

  // Every point, the small one too; the large ones apart.
  const nlohmann::json& summary = report["summary"];
  CHECK(summary["collectives_all"]["points"] == 3);
  CHECK(summary["collectives_all"]["geomean_error"].get<double>() ==
        doctest::Approx(std::exp((std::log(1.5) + std::log(1.1)) / 3) - 1).epsilon(1e-12).scale(0));
  CHECK(summary["collectives_4MiB_and_more"]["points"] == 2);
  CHECK(summary["collectives_4MiB_and_more"]["geomean_error"].get<double>() ==
        doctest::Approx(std::exp(std::log(1.1) / 2) - 1).epsilon(1e-12).scale(0));

  // Both runs in the training summary, each in its own kind.
  CHECK(summary["training_dense_iteration"]["points"] == 1);
  CHECK(summary["training_compressed_iteration"]["points"] == 1);
  CHECK(summary["training_iteration"]["points"] == 2);
  CHECK(
      summary["training_iteration"]["geomean_error"].get<double>() ==
      doctest::Approx(std::exp((std::log(1.25) - std::log(0.8)) / 2) - 1).epsilon(1e-12).scale(0));

  // The dense run: its warm-up left out, its compute holding the optimizer,
  // its recorded compression time not taken from its rest.
  const nlohmann::json& d = report["training"][0];
  CHECK(d["iterations_compared"] == 1);
  CHECK(d["measured"]["iteration_s"] == 1.0);
  CHECK(d["measured"]["rest_of_iteration_s"] == 0.5);
  CHECK(d["relative_error"]["compute_s"] == 0.0);
  CHECK(d["relative_error"]["communication_s"] == 0.5);
  CHECK_FALSE(d["relative_error"].contains("compression_s"));
  // The printed table adds the optimizer to the compute too.
  CHECK(table_line(text, "dense", "compute").find("0.500000     0.500000    +0.0%") !=
        std::string::npos);
  CHECK(table_line(text, "dense", "communication").find("0.500000     0.750000   +50.0%") !=
        std::string::npos);
  // Top-k's phases fill its iteration: no rest, so no communication error.
  const nlohmann::json& t = report["training"][1];
  CHECK(t["measured"]["rest_of_iteration_s"] == 0.0);
  CHECK_FALSE(t["relative_error"].contains("communication_s"));
  CHECK(t["relative_error"]["compression_s"] == -0.5);
  CHECK(t["simulated_compressor"] ==
        nlohmann::json{{"density", 0.01}, {"variant", "allgather_pairs"}});
}

TEST_CASE("a fitted rate within 1% of a star's described links is no warning") {
  MeasuredRun run;
  run.name = "close";
  run.cluster.topology = gcsim::net::Topology::star;
  run.cluster.nodes = 4;
  run.cluster.link = {0.995e8, 50e-6};
  ValidationInput input;
  input.run = &run;
  input.platform = run.cluster;
  input.platform_source = "fit";
  FitResult fit;
  fit.alpha_s = 1e-4;
  fit.beta_s_per_byte = 1e-8;
  input.fit = fit;
  CHECK(format_report(make_report(input)).find("the bandwidth is above") == std::string::npos);
  run.cluster.link.bandwidth_Bps = 0.97e8; // 3% below the fit's
  CHECK(format_report(make_report(input)).find("the bandwidth is above") != std::string::npos);
}

TEST_CASE(
    "a measured run's defaults: compute as forward + backward, a run named by its compressor") {
  // An iteration without compute_s computes forward + backward; one with
  // compute_s alone counts it as backward; the mean leaves the warm-up out.
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("gcsim-validation-tests-" + std::to_string(getpid()) + ".json");
  {
    std::ofstream out(file);
    out << R"({"format": "gcsim-measured-run/1",
               "cluster": {"topology": "star", "nodes": 2,
                           "link": {"bandwidth": "1Gbps", "latency": "10us"}},
               "training": [{"compressor": {"name": "topk", "density": 0.01}, "ranks": 2,
                             "workload": {"layers": [{"name": "w", "bytes": 4000}]},
                             "warmup_iterations": 1,
                             "iterations": [
                               {"iteration_s": 9, "forward_s": 1, "backward_s": 2},
                               {"iteration_s": 1, "forward_s": 0.25, "backward_s": 0.5},
                               {"iteration_s": 2, "compute_s": 0.5}]}]})";
  }
  const MeasuredRun run = read_measured_run(file);
  std::filesystem::remove(file);
  REQUIRE(run.training.size() == 1);
  const TrainingRun& t = run.training[0];
  CHECK(t.name == "topk");
  CHECK(t.iterations[1].compute_s == 0.75);
  CHECK(t.iterations[2].forward_s == 0);
  CHECK(t.iterations[2].backward_s == 0.5);
  const IterationTimes mean = t.steady_mean();
  CHECK(mean.iteration_s == 1.5);
  CHECK(mean.compute_s == 0.625);
  CHECK(mean.backward_s == 0.5);
}

TEST_CASE("a dense run's per-layer backward times and overlap reach the simulation") {
  // Two layers of 4 MiB on four ranks of the 1e7 B/s star, each reduced on
  // its own as the backward pass reaches it: with overlap the last layer's
  // allreduce runs during the first one's backward, and where the pass's
  // time falls (the measured shares) moves when it can start.
  TrainingRun run;
  run.name = "dense";
  run.compressor = "dense";
  run.compressor_params = {{"name", "dense"}};
  run.ranks = 4;
  run.layer_bytes = {4u << 20, 4u << 20};
  run.layer_backward_s = {0.5, 0.5};
  run.overlap = true;
  run.warmup_iterations = 1;
  IterationTimes times;
  times.iteration_s = 3;
  times.forward_s = 0.125;
  times.backward_s = 1;
  times.compute_s = 1.125;
  times.optimizer_s = 0.125;
  run.iterations.assign(3, times);
  TrainingRun apart = run;
  apart.overlap = false;
  TrainingRun early = run;
  early.layer_backward_s = {0.9, 0.1}; // the last layer's gradient ready sooner
  const std::vector<SimulatedIteration> simulated =
      simulate_training(broadcast_star(4), {run, apart, early}, TrainingInputs{});
  REQUIRE(simulated.size() == 3);
  for (const SimulatedIteration& s : simulated)
    CHECK(s.compute_s == doctest::Approx(1.25).epsilon(1e-9).scale(0));
  CHECK(simulated[0].iteration_s < simulated[1].iteration_s - 0.1);
  CHECK(simulated[2].iteration_s < simulated[0].iteration_s - 0.05);
}

namespace {

// What make_report gets for `run` on a platform fitted to it, each point
// simulated in 1 s (the tests read the report's fields, not its errors).
ValidationInput fitted_input(const MeasuredRun& run, const gcsim::net::PlatformSpec& platform,
                             const FitResult& fit) {
  ValidationInput input;
  input.run = &run;
  input.platform = platform;
  input.platform_source = "the fit";
  input.fit = fit;
  input.collective_seconds.assign(run.collectives.size(), 1.0);
  return input;
}

// A float16 ring allreduce as gloo runs it on `cores` shared cores: P-1
// reduce-scatter steps of the longer of the transfer and the chunk's sum
// (every rank summing at once), then P-1 allgather steps of the transfer.
CollectivePoint float16_point(int ranks, uint64_t bytes, double alpha, double beta,
                              double sum_per_element, int cores) {
  CollectivePoint point;
  point.dtype = DataType::float16;
  point.ranks = ranks;
  point.bytes = bytes;
  const double chunk = static_cast<double>((bytes + ranks - 1) / ranks);
  const double transfer = alpha + chunk * beta;
  const double sum = chunk / 2 * sum_per_element * std::max(1.0, ranks / double(cores));
  point.seconds = (ranks - 1) * (std::max(transfer, sum) + transfer);
  return point;
}

} // namespace

TEST_CASE("the float16 sum is fitted from the float16 allreduces, which the calibrated platform "
          "then simulates as measured") {
  const double alpha = 200e-6;
  const double beta = 1 / 1.1e8;
  const double sum_per_element = 15e-9;
  std::vector<CollectivePoint> points = synthetic(alpha, beta, 0);
  const FitResult float32_only = fit_alpha_beta(points, "synthetic.json");
  std::vector<CollectivePoint> float16;
  for (int ranks : {4, 8})
    for (uint64_t bytes : {4ull << 20, 16ull << 20, 64ull << 20})
      float16.push_back(float16_point(ranks, bytes, alpha, beta, sum_per_element, 2));
  // Ignored: below 4 MiB, however far off.
  CollectivePoint small = float16_point(4, 1 << 20, alpha, beta, sum_per_element, 2);
  small.seconds *= 3;
  // Counted, not shown: as fast as float32 (its sum hid under the transfers).
  CollectivePoint hidden = float16_point(4, 8 << 20, alpha, beta, 0, 2);
  points.insert(points.end(), float16.begin(), float16.end());
  points.push_back(small);
  points.push_back(hidden);

  FitResult fit = fit_alpha_beta(points, "synthetic.json");
  // The network's figures come from the float32 points alone.
  CHECK(fit.points == float32_only.points);
  CHECK(fit.alpha_s == float32_only.alpha_s);
  CHECK(fit.beta_s_per_byte == float32_only.beta_s_per_byte);
  gcsim::net::PlatformSpec measured;
  measured.topology = gcsim::net::Topology::star;
  measured.nodes = 8;
  measured.link = {1.25e8, 1e-4};
  measured.shared_cores = 2;
  measured.float16_sum_s = 40e-9; // the description's, which the points overrule
  fit.float16 = fit_float16_sum(points, fit, measured, "synthetic.json");
  CHECK(fit.float16.points == 7);
  CHECK(fit.float16.shown == 6);
  CHECK(fit.float16.seconds_per_element == doctest::Approx(sum_per_element).epsilon(1e-9).scale(0));
  CHECK(float16_basis(fit.float16) == "float16 sum 15 ns per element on a core of its own, the "
                                      "median of 6 of the 7 float16 allreduce points of 4 MiB "
                                      "and more (the others hide it)");

  const gcsim::net::PlatformSpec platform = calibrated_platform(fit, measured, "calibrated");
  CHECK(platform.float16_sum_s == fit.float16.seconds_per_element);
  CHECK(platform_json(platform, fit, "synthetic.json")["float16_sum"] == "15ns");
  // SimGrid's ring, its sums on the two shared cores, gives the points back;
  // the same bytes in float32 take the transfers alone.
  std::vector<CollectivePoint> simulated_points = float16;
  for (const CollectivePoint& point : float16) {
    CollectivePoint as_float32 = point;
    as_float32.dtype = DataType::float32;
    simulated_points.push_back(as_float32);
  }
  const std::vector<double> simulated = simulate_collectives(platform, simulated_points);
  for (size_t i = 0; i < float16.size(); ++i) {
    INFO("float16 point " << i);
    CHECK(simulated[i] == doctest::Approx(float16[i].seconds).epsilon(1e-6).scale(0));
    PathCost cost;
    REQUIRE(ring_path_cost(simulated_points[float16.size() + i], cost));
    CHECK(simulated[float16.size() + i] ==
          doctest::Approx(cost.messages * alpha + cost.bytes * beta).epsilon(1e-6).scale(0));
  }

  // The report names the fit, and keeps the float16 points out of issue 7's
  // collectives (the network's).
  MeasuredRun run;
  run.name = "float16";
  run.cluster = measured;
  run.collectives = points;
  const nlohmann::json report = make_report(fitted_input(run, platform, fit));
  CHECK(report["summary"]["float16_allreduce_4MiB_and_more"]["points"] == 7);
  CHECK(report["summary"]["collectives_4MiB_and_more"]["points"] == 8);
  CHECK(report["summary"]["collectives_all"]["points"] == points.size());
  CHECK(report["collectives"][20]["label"] == "allreduce/float16");
  const std::string text = format_report(report);
  CHECK(text.find("  fit: float16 sum 15 ns per element") != std::string::npos);

  Float16SumFit every_one_shown = fit.float16;
  every_one_shown.points = every_one_shown.shown;
  CHECK(float16_basis(every_one_shown) == "float16 sum 15 ns per element on a core of its own, "
                                          "the median of the 6 float16 allreduce points of 4 "
                                          "MiB and more");

  // Where no point shows the sum, the description's stays.
  std::vector<CollectivePoint> all_hidden = synthetic(alpha, beta, 0);
  all_hidden.push_back(hidden);
  FitResult hides = fit_alpha_beta(all_hidden, "hidden.json");
  hides.float16 = fit_float16_sum(all_hidden, hides, measured, "hidden.json");
  CHECK(hides.float16.points == 1);
  CHECK(hides.float16.shown == 0);
  CHECK(calibrated_platform(hides, measured, "calibrated").float16_sum_s == 40e-9);
  CHECK(float16_basis(hides.float16) == "the float16 sum hides under the transfers at the 1 "
                                        "float16 allreduce point of 4 MiB and more: not fitted");
}

TEST_CASE("without a fit or a float16 sum, float16 allreduces measured slower than float32 ones "
          "point to --fit") {
  CollectivePoint float32;
  float32.ranks = 4;
  float32.bytes = 4 << 20;
  float32.seconds = 0.06;
  CollectivePoint float16 = float32;
  float16.dtype = DataType::float16;
  MeasuredRun run;
  run.name = "float16";
  run.cluster.topology = gcsim::net::Topology::star;
  run.cluster.nodes = 4;
  ValidationInput input;
  input.run = &run;
  input.platform = run.cluster;
  input.platform_source = "the measured cluster description";
  input.collective_seconds = {0.06, 0.06};
  const std::string hint = "1 float16 allreduce is measured more than 5% slower than the float32 "
                           "one of the same bytes";
  // As fast as float32 (the sum hid under the link): nothing to say.
  float16.seconds = 0.062;
  run.collectives = {float32, float16};
  CHECK(format_report(make_report(input)).find(hint) == std::string::npos);
  float16.seconds = 0.09;
  run.collectives = {float32, float16};
  CHECK(format_report(make_report(input)).find(hint) != std::string::npos);
  // Below 4 MiB, --fit would not fit them: not counted.
  CollectivePoint small32 = float32;
  small32.bytes = 1 << 20;
  CollectivePoint small16 = float16;
  small16.bytes = 1 << 20;
  run.collectives = {float32, float16, small32, small16};
  input.collective_seconds = {0.06, 0.06, 0.06, 0.06};
  CHECK(format_report(make_report(input)).find(hint) != std::string::npos);
  // A platform that prices the sum already, or a fit: the comparison says the rest.
  input.platform.float16_sum_s = 40e-9;
  CHECK(format_report(make_report(input)).find(hint) == std::string::npos);
}

TEST_CASE("the float16 fit says what it could not fit, and refuses a sum no platform file holds") {
  const double alpha = 200e-6;
  const double beta = 1 / 1.1e8;
  gcsim::net::PlatformSpec measured;
  measured.topology = gcsim::net::Topology::star;
  measured.nodes = 8;
  measured.shared_cores = 2;
  std::vector<CollectivePoint> points = synthetic(alpha, beta, 0);
  const FitResult fit = fit_alpha_beta(points, "synthetic.json");

  // Below 4 MiB only: nothing fitted, and the report says so (no figure).
  std::vector<CollectivePoint> small = points;
  small.push_back(float16_point(4, 1 << 20, alpha, beta, 15e-9, 2));
  FitResult small_fit = fit;
  small_fit.float16 = fit_float16_sum(small, fit, measured, "small.json");
  CHECK(small_fit.float16.points == 0);
  CHECK(small_fit.float16.smaller == 1);
  CHECK(float16_basis(small_fit.float16) ==
        "no float16 allreduce of 4 MiB and more (1 smaller): the float16 sum not fitted");
  MeasuredRun run;
  run.name = "small";
  run.cluster = measured;
  run.collectives = small;
  const nlohmann::json report = make_report(
      fitted_input(run, calibrated_platform(small_fit, measured, "calibrated"), small_fit));
  CHECK(report["fit"]["float16_points_smaller"] == 1);
  CHECK_FALSE(report["fit"].contains("float16_sum_s"));
  CHECK(format_report(report).find("  fit: no float16 allreduce of 4 MiB and more") !=
        std::string::npos);

  // One point: said as one.
  std::vector<CollectivePoint> one = points;
  one.push_back(float16_point(8, 16 << 20, alpha, beta, 15e-9, 2));
  const Float16SumFit from_one = fit_float16_sum(one, fit, measured, "one.json");
  CHECK(float16_basis(from_one) == "float16 sum 15 ns per element on a core of its own, from the "
                                   "one float16 allreduce point of 4 MiB and more");

  // Links so fast that a float16 point 10% slower gives a sum below 1 ps:
  // the platform written would not be read back.
  std::vector<CollectivePoint> fast = synthetic(1e-6, 1e-14, 0);
  const FitResult fast_fit = fit_alpha_beta(fast, "fast.json");
  CollectivePoint slower = float16_point(8, 64ull << 20, 1e-6, 1e-14, 0, 2);
  slower.seconds *= 1.1;
  fast.push_back(slower);
  CHECK_THROWS_WITH_AS(fit_float16_sum(fast, fast_fit, measured, "fast.json"),
                       doctest::Contains("outside [1 ps, 1e9 s]"), gcsim::InputError);
}
