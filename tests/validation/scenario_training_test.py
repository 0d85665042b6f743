#!/usr/bin/python3
"""`gcsim validate` on training runs that name a gcsim scenario.

Such a run is simulated as `gcsim run` simulates the scenario (its
workload, compute model, training loop and compressor), on the platform
validate uses, for the measured number of iterations and warm-up. Checked
against `gcsim run` itself with the same platform given by --set: the
measured cluster (not the scenario's own platform), the --fit calibrated
platform, a dense and a compressed scenario; and the refusals: a run that
names a scenario and a compressor, a scenario that is not there or not
valid, and one that only fails on the validated platform (exit 2, one line
naming the measured file's field).

Usage: scenario_training_test.py PATH/TO/gcsim
"""
import json
import os
import subprocess
import sys
import tempfile

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
QUICKSTART = os.path.join(ROOT, "workloads", "scenarios", "quickstart.json")
DEFT = os.path.join(ROOT, "workloads", "scenarios", "deft-fmnist-16.json")

sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from checks import Checks, refusal_problems  # noqa: E402

check = Checks()
CLUSTER = {"topology": "star", "nodes": 4, "link": {"bandwidth": "25Gbps", "latency": "5us"}}


def measured_run(tmp, training, collectives=None):
    run = {"format": "gcsim-measured-run/1", "name": "scenarios", "cluster": CLUSTER,
           "training": training}
    if collectives:
        run["collectives"] = collectives
    path = os.path.join(tmp, "measured.json")
    json.dump(run, open(path, "w"))
    return path


def entry(scenario, name, iterations=(0.1, 0.09, 0.095), warmup=1):
    return {"name": name, "scenario": scenario, "ranks": 4, "warmup_iterations": warmup,
            "iterations": [{"iteration_s": t, "forward_s": 0.01, "backward_s": 0.02}
                           for t in iterations]}


def gcsim(*args):
    return subprocess.run([GCSIM, *args], capture_output=True, text=True, timeout=600)


def direct_run(tmp, scenario, platform, iterations, warmup, name):
    """The scenario's summary as `gcsim run` gives it on `platform` (a file or a JSON object)."""
    out = os.path.join(tmp, "direct-" + name)
    value = json.dumps(platform) if isinstance(platform, dict) else platform
    done = gcsim("run", scenario, "--set", f"platform={value}", "--set",
                 f"training.iterations={iterations}", "--set",
                 f"training.warmup_iterations={warmup}", "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    return json.load(open(os.path.join(out, "result.json")))["summary"]


def same(a, b):
    return abs(a - b) <= 1e-12 * max(1.0, abs(b))


def compare(report, index, summary, label):
    t = report["training"][index]
    sim = t["simulated"]
    rest = summary["iteration_time_s"] - summary["compute_s"] - summary["compression_s"]
    check(same(sim["iteration_s"], summary["iteration_time_s"]) and
          same(sim["compute_s"], summary["compute_s"]) and
          same(sim["compression_s"], summary["compression_s"]) and
          same(sim["communication_s"], max(0.0, rest)) and
          sim["bytes_sent_per_worker"] == summary["bytes_sent_per_worker"],
          f"{label}: simulated {sim['iteration_s']:.6f} s, as gcsim run gives it "
          f"({summary['iteration_time_s']:.6f} s)")


def on_the_measured_cluster(tmp):
    measured = measured_run(tmp, [entry(QUICKSTART, "dense"),
                                  entry(DEFT, "deft", iterations=(0.2, 0.1, 0.1, 0.1), warmup=2)])
    report_file = os.path.join(tmp, "report.json")
    done = gcsim("validate", measured, "--json", report_file)
    if not check(done.returncode == 0, f"validate with two scenario runs: {done.stderr.strip()}"):
        return
    report = json.load(open(report_file))
    dense = direct_run(tmp, QUICKSTART, CLUSTER, 3, 1, "dense")
    deft = direct_run(tmp, DEFT, CLUSTER, 4, 2, "deft")
    compare(report, 0, dense, "quickstart on the measured 4-node 25 Gbit/s star")
    compare(report, 1, deft, "DEFT on the fmnist trace on the same star")
    own = direct_run(tmp, QUICKSTART, "platforms/star-8x10g.json", 3, 1, "own")
    check(not same(own["iteration_time_s"], dense["iteration_time_s"]),
          "the scenario's own platform would give another time: the measured cluster was used")
    t = report["training"][1]
    # Recorded relative to the source tree it lies in, as gcsim run records a trace.
    check(t["scenario"] == os.path.relpath(DEFT, ROOT) and t["compressor"]["name"] == "deft"
          and t["iterations_compared"] == 2 and "simulated_compressor" not in t,
          "the report names the scenario, its compressor and the iterations after the warm-up")
    check(same(t["measured"]["iteration_s"], 0.1), "the measured mean leaves the warm-up out")
    check("compute" in done.stdout and "dense" in done.stdout, "the table prints both runs")


def on_the_fitted_platform(tmp):
    # Ring allreduce points of an alpha-beta star: 40 us per message, 10 Gbit/s.
    points = []
    for size in (65536, 262144, 4 << 20, 16 << 20):
        chunk = size / 4
        points.append({"collective": "allreduce", "ranks": 4, "bytes": size,
                       "seconds": 6 * (40e-6 + chunk / 1.25e9), "repetitions": 3})
    measured = measured_run(tmp, [entry(QUICKSTART, "dense")], points)
    calibrated = os.path.join(tmp, "calibrated.json")
    report_file = os.path.join(tmp, "fit-report.json")
    done = gcsim("validate", measured, "--fit", "--out", calibrated, "--json", report_file,
                 "--quiet")
    if not check(done.returncode == 0, f"validate --fit: {done.stderr.strip()}"):
        return
    report = json.load(open(report_file))
    compare(report, 0, direct_run(tmp, QUICKSTART, calibrated, 3, 1, "fit"),
            "quickstart on the calibrated platform --fit wrote")


def refusals(tmp):
    bad_scenario = os.path.join(tmp, "bad-scenario.json")
    scenario = json.load(open(QUICKSTART))
    scenario["platform"] = os.path.join(ROOT, scenario["platform"])
    scenario["workload"] = os.path.join(ROOT, scenario["workload"])
    scenario["device"] = os.path.join(ROOT, scenario["device"])
    scenario["compressor"] = {"name": "topk", "density": 2}
    json.dump(scenario, open(bad_scenario, "w"))
    server = dict(scenario, compressor={"name": "sketched_sgd", "server_rank": 5})
    server_file = os.path.join(tmp, "server-rank.json")
    json.dump(server, open(server_file, "w"))
    iwp_file = os.path.join(tmp, "iwp.json")
    json.dump(dict(scenario, compressor={"name": "iwp"}), open(iwp_file, "w"))
    with_compressor = dict(entry(QUICKSTART, "x"), compressor={"name": "dense"})
    cases = [
        ("a scenario run that names a compressor too", [with_compressor],
         ["/training/0/compressor", "comes from the scenario"]),
        ("a scenario that is not there", [entry(os.path.join(tmp, "none.json"), "x")],
         ["/training/0/scenario", "none.json"]),
        ("an invalid scenario", [entry(bad_scenario, "x")],
         ["/training/0/scenario", "bad-scenario.json", "density"]),
        ("a scenario that fails on the validated 4-node platform", [entry(server_file, "x")],
         ["measured.json: /training/0/scenario", "server_rank"]),
        # The measured run's 3 iterations reach the scenario as validate's own
        # --set, which the message blamed as if the user had given it.
        ("a scenario whose warm-up outlasts the measured iterations", [entry(iwp_file, "x")],
         ["measured.json: /training/0/iterations: simulating ", "iwp.json for these "
          "iterations: 5 dense warm-up iterations (the default) and the run has 3"]),
    ]
    for what, training, needles in cases:
        measured = measured_run(tmp, training)
        report_file = os.path.join(tmp, "refused.json")
        done = gcsim("validate", measured, "--json", report_file)
        problems = refusal_problems(done, needles, result_file=report_file)
        if "--set" in done.stderr:
            problems.append(f"blames a --set the user did not give: {done.stderr.strip()!r}")
        check(not problems, f"{what}: exit 2, one line{'; ' + '; '.join(problems) if problems else ''}")


def outputs_over_inputs(tmp):
    """--out and --json may not be written over a training run's scenario or
    a file it reads: --fit --out replaced the scenario with the calibrated
    platform, and the next validate refused its own input."""
    scenario = json.load(open(QUICKSTART))
    platform = os.path.join(tmp, "platform.json")
    with open(os.path.join(ROOT, scenario["platform"])) as source:
        json.dump(json.load(source), open(platform, "w"))
    scenario.update(platform=platform, workload=os.path.join(ROOT, scenario["workload"]),
                    device=os.path.join(ROOT, scenario["device"]))
    own = os.path.join(tmp, "own-scenario.json")
    json.dump(scenario, open(own, "w"))
    points = [{"collective": "allreduce", "ranks": 4, "bytes": size,
               "seconds": 6 * (40e-6 + size / 4 / 1.25e9), "repetitions": 3}
              for size in (65536, 4 << 20)]
    measured = measured_run(tmp, [entry(QUICKSTART, "dense"), entry(own, "own")], points)
    for option, target, said in (("--out", own, "(the scenario file)"),
                                 ("--out", platform, "(the scenario's platform file)"),
                                 ("--json", own, "(the scenario file)")):
        before = open(target, "rb").read()
        done = gcsim("validate", measured, "--fit", option, target)
        problems = refusal_problems(done, [f"{option}: {target} is also the file {measured} names "
                                           f"at /training/1/scenario {said}"])
        if open(target, "rb").read() != before:
            problems.append(f"{os.path.basename(target)} was written over")
        check(not problems, f"{option} over a training run's {said[1:-1]}: exit 2, one line, "
              f"the file kept{'; ' + '; '.join(problems) if problems else ''}")


def main():
    for part in (on_the_measured_cluster, on_the_fitted_platform, refusals, outputs_over_inputs):
        with tempfile.TemporaryDirectory() as tmp:
            part(tmp)
    check.finish()


if __name__ == "__main__":
    main()
