// CPU calibration: the method predicts this machine's kernel times. Fit on
// half the sizes, predict the other half; median absolute error at most 15%
// per kernel above 2^16 elements (issue 5), on the reduced `--quick` grid.

#include "sim/cost/calibration.hpp"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include <doctest/doctest.h>

TEST_CASE("the CPU is described by its family, model and stepping where /proc/cpuinfo has them") {
  // A virtual machine may call Zen 4 and Zen 5 alike "AMD EPYC".
  std::ifstream cpuinfo("/proc/cpuinfo");
  const std::string text((std::istreambuf_iterator<char>(cpuinfo)),
                         std::istreambuf_iterator<char>());
  const nlohmann::json details = gcsim::cost::describe_cpu();
  CHECK(details.at("model").get<std::string>() != "");
  if (text.find("cpu family") == std::string::npos)
    return; // not an x86 kernel's cpuinfo
  REQUIRE(details.contains("cpuid"));
  const std::string cpuid = details["cpuid"];
  // Three numbers and nothing else (std::regex trips GCC 12's
  // maybe-uninitialized warning in the sanitizer build).
  int family = -1, model = -1, stepping = -1, length = 0;
  CHECK(std::sscanf(cpuid.c_str(), "family %d model %d stepping %d%n", &family, &model, &stepping,
                    &length) == 3);
  CHECK(static_cast<std::size_t>(length) == cpuid.size());
  CHECK(family >= 0);
  CHECK(model >= 0);
  CHECK(stepping >= 0);
}

TEST_CASE("hold-out accuracy of the fitted CPU profile (reduced range)") {
  // Timings on a shared machine: another process can disturb a kernel's
  // rounds, and a kernel whose cache transition falls between the fitted sizes
  // (gather, from L3 to DRAM) lands near the bound in some measurements. So a
  // kernel that misses is measured again, the whole grid each time, up to
  // three measurements, and passes if one of them is within 15%; a model that
  // does not fit misses every time (top-k's did, at 14-18%, before its sample
  // got a floor of n / 32 and the fitter lifted pieces instead of dropping
  // cuts, and at 15-19% in most measurements while its filter switched from
  // blocks of 64 to the AVX2 packing at a candidate share of 4e-3, a step in
  // its time; compressors/README.md).
  constexpr int kMeasurements = 3;
  const gcsim::cost::CalibrationOptions options = gcsim::cost::quick_calibration_options();
  std::array<bool, gcsim::cost::kKernelCount> within{};
  gcsim::cost::CalibrationPoints points;
  for (int measurement = 1; measurement <= kMeasurements; ++measurement) {
    points = gcsim::cost::measure_cpu_kernels(options);
    bool all = true;
    for (const gcsim::cost::HoldoutResult& result : gcsim::cost::holdout_errors(points, 65536)) {
      const auto slot = static_cast<std::size_t>(result.kernel);
      CAPTURE(gcsim::cost::kernel_name(result.kernel));
      CHECK(result.points >= 2);
      MESSAGE("measurement ", measurement, ": ", gcsim::cost::kernel_name(result.kernel),
              " hold-out median ", 100 * result.median_abs_error, "%, max ",
              100 * result.max_abs_error, "%");
      within[slot] = within[slot] || result.median_abs_error <= 0.15;
      all = all && within[slot];
    }
    if (all)
      break;
  }
  for (gcsim::cost::Kernel kernel : gcsim::cost::all_kernels()) {
    CAPTURE(gcsim::cost::kernel_name(kernel));
    CHECK(within[static_cast<std::size_t>(kernel)]);
  }

  // The fitted profile is valid: it passes the loader's schema checks.
  const gcsim::cost::DeviceProfile profile =
      gcsim::cost::fit_cpu_profile(points, 1e10, "cost_tests", "2025-01-01");
  const gcsim::cost::DeviceProfile again =
      gcsim::cost::DeviceProfile::from_json(profile.to_json(), "cpu-profile");
  CHECK(again.provenance().kind == "measured");
  CHECK(again.kernel_seconds("topk_select", gcsim::cost::KernelShape{1 << 20, 1000, 0, 0}) > 0);
}

TEST_CASE("a kernel with no held-out point says so, not an error of 0") {
  // Calibrated below 2^16, every kernel printed "0.0% max 0.0% (0 points)":
  // a perfect hold-out, to a reader.
  gcsim::cost::HoldoutResult none{gcsim::cost::Kernel::topk_select, 0, 0, 0};
  CHECK(gcsim::cost::format_holdout(none).find("no point above 2^16 to predict") !=
        std::string::npos);
  gcsim::cost::HoldoutResult some{gcsim::cost::Kernel::topk_select, 0.083, 0.12, 6};
  CHECK(gcsim::cost::format_holdout(some) ==
        "  topk_select        median |error|   8.3%  max  12.0%  (6 points)\n");
}

TEST_CASE("hold-out errors: held-out sizes above min_n only, the median of an even count") {
  // dense_add on a line at 2^10..2^23; the held-out sizes (every other one,
  // from 2^11) above 2^16 are 2^17, 2^19, 2^21 and 2^23, measured 10%, 20%,
  // 30% and 40% under the line (|fit - measured| / measured).
  gcsim::cost::CalibrationPoints points;
  auto& samples = points.samples[static_cast<std::size_t>(gcsim::cost::Kernel::dense_add)];
  const double errors[] = {0.1, 0.2, 0.3, 0.4};
  int held_out = 0;
  for (int exponent = 10; exponent <= 23; ++exponent) {
    const double n = std::ldexp(1.0, exponent);
    const double line = 1e-6 + 1e-9 * n;
    const bool off = (exponent - 10) % 2 == 1 && n > 65536;
    samples.push_back(
        {gcsim::cost::KernelShape{n, 0, 0, 0}, off ? line / (1 + errors[held_out++]) : line});
  }
  REQUIRE(held_out == 4);
  const auto dense_add = [](const std::vector<gcsim::cost::HoldoutResult>& results) {
    for (const gcsim::cost::HoldoutResult& result : results)
      if (result.kernel == gcsim::cost::Kernel::dense_add)
        return result;
    FAIL("no dense_add result");
    return gcsim::cost::HoldoutResult{};
  };
  const gcsim::cost::HoldoutResult above = dense_add(gcsim::cost::holdout_errors(points, 65536));
  CHECK(above.points == 4);
  CHECK(above.median_abs_error == doctest::Approx(0.25).epsilon(1e-6).scale(0));
  CHECK(above.max_abs_error == doctest::Approx(0.4).epsilon(1e-6).scale(0));
  // From 2^17, a held-out size itself: only those above it.
  CHECK(dense_add(gcsim::cost::holdout_errors(points, std::ldexp(1.0, 17))).points == 3);
}
