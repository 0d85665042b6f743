#!/usr/bin/python3
"""End-to-end checks of `gcsim sweep`: points in grid order with readable ids,
sweep.csv (rows, columns, values equal to the results), rerun commands that
reproduce a point alone, byte-identical reruns, resuming without recomputing
finished points, and bad sweep files rejected with exit 2 and one line.

Usage: sweep_test.py PATH/TO/gcsim
"""
import csv
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks, refusal_problems  # noqa: E402

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
QUICKSTART = os.path.join(ROOT, "workloads", "scenarios", "quickstart.json")
IDS = ["p000_nodes-2_bandwidth-1Gbps", "p001_nodes-2_bandwidth-10Gbps",
       "p002_nodes-4_bandwidth-1Gbps", "p003_nodes-4_bandwidth-10Gbps"]

check = Checks()


def write_json(path, value):
    with open(path, "w") as handle:
        json.dump(value, handle, indent=1)


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


def sweep(work, *args):
    return subprocess.run([GCSIM, "sweep", *args], capture_output=True, text=True, timeout=300,
                          cwd=work)


def mtimes(out):
    return {p: os.stat(os.path.join(out, "points", p, "result.json")).st_mtime_ns for p in IDS}


def bad_input(work, name, document, expected_path, expected_words):
    path = os.path.join(work, name)
    if isinstance(document, str):
        with open(path, "w") as handle:
            handle.write(document)
    else:
        write_json(path, document)
    result = sweep(work, path, "--out", os.path.join(work, "bad-out"))
    lines = result.stderr.strip().splitlines()
    check(result.returncode == 2, f"{name}: exit status 2 (got {result.returncode})")
    line = lines[0] if lines else ""
    check(len(lines) == 1 and line.startswith(path) and expected_path in line
          and all(word in line for word in expected_words),
          f"{name}: one line naming the file and {expected_path or 'the point'}: {line!r}")
    return line


with tempfile.TemporaryDirectory() as work:
    spec = {"name": "tiny", "scenario": QUICKSTART,
            "grid": {"platform.nodes": [2, 4], "platform.link.bandwidth": ["1Gbps", "10Gbps"]},
            "set": {"training.iterations": 2}}
    sweep_file = os.path.join(work, "tiny.sweep.json")
    write_json(sweep_file, spec)

    dry = sweep(work, sweep_file, "--dry-run")
    check(dry.returncode == 0 and all(i in dry.stdout for i in IDS),
          "--dry-run lists every point")
    check(not os.path.exists(os.path.join(work, "results")), "--dry-run writes nothing")

    # A grid string that opens like JSON ("[draft] ...") is passed quoted:
    # raw, parse_override took it for broken JSON and the sweep refused
    # its own point.
    bracketed = os.path.join(work, "bracketed.sweep.json")
    write_json(bracketed, {"scenario": QUICKSTART, "grid": {"description": ["[draft] a", "{b}"]},
                           "set": {"training.iterations": 1}})
    dry = sweep(work, bracketed, "--dry-run")
    check(dry.returncode == 0 and """--set 'description="[draft] a"'""" in dry.stdout,
          f"grid strings that open like JSON are quoted: {dry.returncode} "
          f"{(dry.stderr or dry.stdout).strip()[:300]!r}")

    first = sweep(work, sweep_file, "--jobs", "2")
    check(first.returncode == 0, f"the sweep runs ({first.stderr.strip()[-400:]})")
    # It said "on 2 cores" whatever the machine had.
    check("4 to run, 2 at a time (--jobs)" in first.stdout,
          f"--jobs is reported as points at a time, not cores: {first.stdout.splitlines()[:1]}")
    out = os.path.join(work, "results", "tiny")
    csv_path = os.path.join(out, "sweep.csv")
    check(os.path.isfile(csv_path), "the default output folder is results/<name>/")
    original = read(csv_path)
    with open(csv_path, newline="") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames
        rows = list(reader)

    check([row["point"] for row in rows] == IDS,
          "one row per point, in grid order (last parameter fastest), readable ids")
    check(read(os.path.join(out, "points.txt")) == "".join(i + "\n" for i in IDS).encode(),
          "points.txt lists the grid's points, in grid order (plot.py's list before sweep.csv)")
    check(header[:7] == ["point", "platform.nodes", "platform.link.bandwidth", "command",
                         "compressor_name", "gradients", "gcsim_commit"],
          f"point, the grid parameters, command, compressor_name, gradients, gcsim_commit lead "
          f"the header: {header[:7]}")
    metrics = header[7:]
    check(metrics == sorted(metrics), "metric columns are sorted by name")
    for field in ["iteration_time_s", "throughput_samples_per_s", "compute_s", "compression_s",
                  "communication_s", "bytes_sent_per_worker", "workers"]:
        check(field in metrics, f"metric column {field}")
    check([row["platform.nodes"] for row in rows] == ["2", "2", "4", "4"]
          and [row["platform.link.bandwidth"] for row in rows] == ["1Gbps", "10Gbps"] * 2,
          "parameter cells hold the grid values")
    check([row["compressor_name"] for row in rows] == ["dense"] * 4, "compressor_name column")
    check([row["gradients"] for row in rows] == [""] * 4, "dense points name no gradients")
    # Each row names the build that made its point, as --version names it.
    built_from = subprocess.run([GCSIM, "--version"], capture_output=True,
                                text=True).stdout.split()[-1].rstrip(")")
    check([row["gcsim_commit"] for row in rows] == [built_from] * 4 and built_from != "",
          f"gcsim_commit column is the build's commit ({built_from!r}): "
          f"{[row['gcsim_commit'] for row in rows]}")

    matches = True
    for row in rows:
        point = os.path.join(out, "points", row["point"])
        with open(os.path.join(point, "result.json")) as handle:
            summary = json.load(handle)["summary"]
        for name in metrics:
            if name in summary and float(row[name]) != float(summary[name]):
                matches = False
        with open(os.path.join(point, "command.txt")) as handle:
            if handle.read().strip() != row["command"]:
                matches = False
        if row["command"] not in first.stdout:
            matches = False
    check(matches, "CSV values equal result.json exactly; command column = command.txt = printed")
    # Commands name paths inside the working directory relatively (committed
    # results carry no home folders), and a --scratch-dir only when given.
    check(all(f" --out results/tiny/points/{row['point']}" in row["command"]
              and "--scratch-dir" not in row["command"] for row in rows),
          f"a point's command: --out relative, no --scratch-dir unasked: {rows[0]['command']}")
    # A point's log opens with the command as run (with the sweep's
    # --memory-share), then the point's own output.
    with open(os.path.join(out, "points", IDS[0], "log.txt")) as handle:
        log = handle.read().splitlines()
    check(log[:1] == [f"# run as: {rows[0]['command']} --memory-share 0.5"]
          and any(line.startswith("  result: ") for line in log),
          f"log.txt opens with the command as run, then the point's output: {log[:2]}")
    check(float(rows[0]["communication_total_s"]) > 5 * float(rows[1]["communication_total_s"]),
          "the bandwidth override reaches each point (1 Gbps is much slower than 10 Gbps)")
    check([float(row["workers"]) for row in rows] == [2, 2, 4, 4],
          "the nodes override reaches each point")

    # A point rerun alone from its command gives the same result.
    command = shlex.split(rows[3]["command"])
    alone = os.path.join(work, "alone")
    command[command.index("--out") + 1] = alone
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=work)
    check(rerun.returncode == 0 and read(os.path.join(alone, "result.json"))
          == read(os.path.join(out, "points", IDS[3], "result.json")),
          "the printed command reruns a point alone, byte-identically")

    before = mtimes(out)
    again = sweep(work, sweep_file)
    check(again.returncode == 0 and mtimes(out) == before,
          "a finished sweep rerun recomputes nothing")
    cores = len(os.sched_getaffinity(0))
    check(f"4 done, 0 to run on {cores} core{'' if cores == 1 else 's'}\n" in again.stdout,
          f"without --jobs, as many points at a time as cores ({cores}): {again.stdout[-200:]!r}")
    check(read(csv_path) == original, "and rewrites a byte-identical sweep.csv")

    os.remove(os.path.join(out, "points", IDS[1], "result.json"))
    resumed = sweep(work, sweep_file)
    after = mtimes(out)
    check(resumed.returncode == 0 and "1 to run" in resumed.stdout,
          "an interrupted sweep resumes with only the missing point")
    check(all(after[p] == before[p] for p in IDS if p != IDS[1]),
          "finished points are not recomputed (their result.json untouched)")
    # One point to run has all the memory, whatever --jobs allows.
    with open(os.path.join(out, "points", IDS[1], "log.txt")) as handle:
        header = handle.readline()
    check("--memory-share" not in resumed.stdout and "--memory-share" not in header,
          f"a point running alone gets no --memory-share: {header.strip()}")
    check(read(csv_path) == original, "the resumed sweep gives a byte-identical sweep.csv")

    # A result.json that is not a result (an empty file, another JSON object)
    # was counted as done: a row of empty cells, or an internal error.
    for junk in ("", '{"x": 1}'):
        with open(os.path.join(out, "points", IDS[2], "result.json"), "w") as handle:
            handle.write(junk)
        redone = sweep(work, sweep_file)
        check(redone.returncode == 0 and "to run again" in redone.stdout
              and read(csv_path) == original,
              f"a result.json holding {junk!r} is run again, the table as before")

    # A result.json that cannot even be looked at (a link to itself) was an
    # internal error, exit 1, after half the listing had been printed.
    looped = os.path.join(out, "points", IDS[2], "result.json")
    os.remove(looped)
    os.symlink(looped, looped)
    for extra in (["--dry-run"], []):
        refused = sweep(work, sweep_file, *extra)
        check(refused.returncode == 2 and refused.stdout == ""
              and refused.stderr.count("\n") == 1
              and f"{IDS[2]}/result.json: cannot be read (" in refused.stderr
              and read(csv_path) == original,
              f"a looping result.json{' (dry run)' if extra else ''}: exit 2, one line, nothing "
              f"listed or written: {refused.returncode} {refused.stderr!r}")
    os.remove(looped)

    shutil.rmtree(os.path.join(out, "points"))
    fresh = sweep(work, sweep_file, "--jobs", "3")
    check(fresh.returncode == 0 and read(csv_path) == original,
          "recomputing every point gives a byte-identical sweep.csv")

    # A result of another scenario (the sweep file's `set` changed since) was
    # counted as done: sweep.csv showed the old numbers under the new setup.
    changed_file = os.path.join(work, "changed.sweep.json")
    write_json(changed_file, {**spec, "set": {"training.iterations": 3}})
    changed = sweep(work, changed_file, "--out", out, "--dry-run")
    check(changed.returncode == 0 and "0 done, 4 to run" in changed.stdout
          and changed.stdout.count("to run again (its result.json: its scenario differs at "
                                   "/training/iterations)") == 4,
          f"results of another scenario are run again, the field named: {changed.stdout[-300:]}")
    rerun = sweep(work, changed_file, "--out", out)
    with open(os.path.join(out, "points", IDS[0], "result.json")) as handle:
        iterations = json.load(handle)["scenario"]["training"]["iterations"]
    check(rerun.returncode == 0 and iterations == 3 and read(csv_path) != original,
          "and their results and sweep.csv are the new scenario's")
    shutil.rmtree(os.path.join(out, "points"))
    check(sweep(work, sweep_file).returncode == 0 and read(csv_path) == original,
          "the first sweep again gives its own sweep.csv")

    # A file the scenario names, edited since its points ran (a layer spec
    # given 10 times the FLOPs), is not in the scenario: the results it made
    # were counted as done.
    workload = os.path.join(work, "model.json")
    with open(os.path.join(ROOT, "workloads", "models", "resnet18-cifar10.json")) as handle:
        model = json.load(handle)
    write_json(workload, model)
    own_file = os.path.join(work, "own-model.sweep.json")
    own_out = os.path.join(work, "own-model")
    write_json(own_file, {**spec, "set": {"training.iterations": 2, "workload": workload}})
    first_own = sweep(work, own_file, "--out", own_out)
    for layer in model["layers"]:
        layer["forward_flops"] *= 10
    model.pop("flops_per_sample")  # the layers' sums, optional
    write_json(workload, model)
    edited = sweep(work, own_file, "--out", own_out, "--dry-run")
    check(first_own.returncode == 0 and edited.returncode == 0
          and "0 done, 4 to run" in edited.stdout
          and edited.stdout.count("to run again (its result.json: its workload file has changed "
                                  "since it ran (fnv1a64:") == 4,
          f"results of an edited workload file are run again: {edited.stdout[-400:]}")

    # Bad sweep files: exit 2, one line naming the file and the JSON path.
    bad_input(work, "no-scenario.json", {"grid": {"platform.nodes": [2]}}, "/scenario",
              ["missing"])
    bad_input(work, "missing-scenario.json",
              {"scenario": "nowhere.json", "grid": {"platform.nodes": [2]}}, "/scenario",
              ["nowhere.json", "not found"])
    bad_input(work, "empty-grid.json", {"scenario": QUICKSTART, "grid": {}}, "/grid", ["empty"])
    bad_input(work, "unknown-key.json",
              {"scenario": QUICKSTART, "grdi": {"platform.nodes": [2]}, "grid": {"a": [1]}},
              "/grdi", ["unknown field", "grid"])
    bad_input(work, "not-a-list.json", {"scenario": QUICKSTART, "grid": {"platform.nodes": 4}},
              "/grid/platform.nodes", ["array"])
    bad_input(work, "duplicate.json",
              {"scenario": QUICKSTART, "grid": {"platform.nodes": [2, 2]}},
              "/grid/platform.nodes/1", ["duplicate"])
    # One bandwidth written two ways made two points of one run.
    bad_input(work, "same-bandwidth.json",
              {"scenario": QUICKSTART,
               "grid": {"platform.link.bandwidth": ["10Gbps", "1Gbps", "1.25GBps"]}},
              "/grid/platform.link.bandwidth/2",
              ['"1.25GBps" is "10Gbps" (value 0) written another way'])
    # And a compressor's default written out in one value only: the same run.
    bad_input(work, "same-compressor.json",
              {"scenario": QUICKSTART,
               "grid": {"platform.nodes": [2, 4],
                        "compressor": [{"name": "topk", "density": 0.01},
                                       {"name": "randomk", "density": 0.01},
                                       {"name": "topk", "density": 0.01,
                                        "variant": "allgather_pairs"}]}},
              "/grid", ["points p000_nodes-2_compressor-topk-density0.01 and "
                        "p002_nodes-2_compressor-topk-density0.01-variantallgather_pairs run the "
                        "same scenario", "one run twice"])
    bad_input(work, "both.json",
              {"scenario": QUICKSTART, "grid": {"platform.nodes": [2]},
               "set": {"platform.nodes": 4}}, "/set/platform.nodes", ["grid"])
    bad_input(work, "syntax.json", '{"scenario": ', "", ["JSON"])
    line = bad_input(work, "bad-value.json",
                     {"scenario": QUICKSTART, "grid": {"platform.nodes": [2, 0]}}, "",
                     ["p001_nodes-0", "/platform/nodes", "rerun alone:"])
    line = bad_input(work, "bad-compressor.json",
                     {"scenario": QUICKSTART, "set": {"training.iterations": 1},
                      "grid": {"compressor": [{"name": "no_such_compressor"}]}}, "",
                     ["p000_compressor-no_such_compressor", "rerun alone:", "gcsim run"])
    # Compressor parameters were checked only when their point ran, after
    # the points before it.
    bad_input(work, "bad-density.json",
              {"scenario": QUICKSTART, "set": {"training.iterations": 1},
               "grid": {"compressor": [{"name": "topk", "density": 0.01},
                                       {"name": "deft", "density": 2}]}}, "/compressor/density",
              ["p001_compressor-deft", "rerun alone:"])
    check(not os.path.exists(os.path.join(work, "bad-out", "points", "p000_compressor-topk")),
          "a bad compressor parameter stops the sweep before its first point runs")
    # So were device profiles.
    bad_input(work, "bad-device.json",
              {"scenario": QUICKSTART, "set": {"training.iterations": 1},
               "grid": {"device": [os.path.join(ROOT, "platforms", "devices", "v100.json"),
                                   QUICKSTART]}}, "/format", ["p001_device", "not a device profile"])
    check(not os.path.exists(os.path.join(work, "bad-out", "points")),
          "a bad device profile stops the sweep before its first point runs")
    check(not os.path.exists(os.path.join(work, "bad-out", "sweep.csv")),
          "a failed sweep writes no sweep.csv")
    # Checked by gcsim run alone, so found after the points before it ran.
    bad_input(work, "bad-scope.json",
              {"scenario": QUICKSTART, "set": {"training.iterations": 1,
                                               "training.compression_scope": "bucket"},
               "grid": {"compressor": [{"name": "topk", "density": 0.01},
                                       {"name": "gtopk", "density": 0.01}]}},
              "/training/compression_scope", ["p001_compressor-gtopk", "not possible for gtopk"])
    check(not os.path.exists(os.path.join(work, "bad-out", "points")),
          "a scope a grid's compressor cannot run stops the sweep before its first point runs")
    bad_input(work, "bad-rank.json",
              {"scenario": QUICKSTART, "set": {"training.iterations": 1},
               "grid": {"compressor": [{"name": "sketched_sgd", "server_rank": 3}],
                        "platform.nodes": [8, 2]}},
              "/compressor/server_rank", ["p001_compressor-sketched_sgd_nodes-2", "ranks 0 to 1"])
    check(not os.path.exists(os.path.join(work, "bad-out", "points")),
          "a server rank past a grid's workers stops the sweep before its first point runs")
    # A sweep over P on a trace mixes captured and synthesized workers: the
    # table says which each row's gradients are.
    traced = os.path.join(work, "traced.sweep.json")
    write_json(traced, {"scenario": QUICKSTART,
                        "set": {"training.iterations": 1,
                                "workload": os.path.join(ROOT, "workloads", "traces",
                                                         "fmnist-cnn-16w"),
                                "compressor": {"name": "topk", "density": 0.01}},
                        "grid": {"platform.nodes": [8, 32]}})
    done = sweep(work, traced, "--out", os.path.join(work, "traced"), "--jobs", "1")
    with open(os.path.join(work, "traced", "sweep.csv"), newline="") as handle:
        sources = [row["gradients"] for row in csv.DictReader(handle)]
    check(done.returncode == 0 and sources == ["captured", "shrunk_mean_scaling"],
          f"the gradients column says captured or synthesized: {sources} {done.stderr[-300:]!r}")
    # A layer spec's synthesis is named too, and the fitted one's workers
    # overlap as a capture's do: top-k's union, and so its aggregated
    # density, is several times the old shared signal's (1.006 k at 8).
    # Parameters other than the fitted ones are said, and reach result.json;
    # a larger spread shares more of the workers' top elements.
    spec = os.path.join(work, "spec.sweep.json")
    write_json(spec, {"scenario": QUICKSTART,
                      "set": {"training.iterations": 1,
                              "compressor": {"name": "topk", "density": 0.01}},
                      "grid": {"gradients": [{"synthesis": "capture_fitted"},
                                             {"synthesis": "shared_heavy_signal"},
                                             {"spread": 0.5}]}})
    done = sweep(work, spec, "--out", os.path.join(work, "spec"), "--jobs", "1")
    with open(os.path.join(work, "spec", "sweep.csv"), newline="") as handle:
        table = list(csv.DictReader(handle))
    densities = [float(row["density_after_aggregation"]) for row in table]
    said = [row.get("result.gradients") for row in table]
    recorded = None
    if done.returncode == 0:
        last = sorted(os.listdir(os.path.join(work, "spec", "points")))[-1]
        with open(os.path.join(work, "spec", "points", last, "result.json")) as handle:
            recorded = json.load(handle)["model"]["gradients"]
    check(done.returncode == 0
          and said == ["synthetic capture_fitted", "synthetic shared_heavy_signal",
                       "synthetic capture_fitted (signal_share 0.1, spread 0.5)"]
          and densities[0] > 3 * densities[1] and 0.01 <= densities[1] < 0.0102
          and densities[1] < densities[2] < densities[0]
          and recorded["synthesis"] == "capture_fitted" and recorded["spread"] == 0.5
          and recorded["signal_share"] == 0.1,
          f"a layer spec's synthesis is its row's gradients, the fitted one's union the larger: "
          f"{said} {densities} {recorded} {done.stderr[-300:]!r}")
    # A grid over the whole "gradients" object: its column is the grid's,
    # and the result's own says "result.gradients" (two columns of one
    # name hid the grid's from a reader by name).
    synthesized = os.path.join(work, "synthesized.sweep.json")
    write_json(synthesized, {"scenario": QUICKSTART,
                             "set": {"training.iterations": 1, "platform.nodes": 32,
                                     "workload": os.path.join(ROOT, "workloads", "traces",
                                                              "fmnist-cnn-16w"),
                                     "compressor": {"name": "topk", "density": 0.01}},
                             "grid": {"gradients": [{"synthesis": "mean_scaling"},
                                                    {"synthesis": "gaussian_deviation"}]}})
    done = sweep(work, synthesized, "--out", os.path.join(work, "synthesized"), "--jobs", "1")
    with open(os.path.join(work, "synthesized", "sweep.csv"), newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        table = [dict(zip(header, row)) for row in reader]
    check(done.returncode == 0 and header.count("gradients") == 1
          and header[1:6] == ["gradients", "command", "compressor_name", "result.gradients",
                              "gcsim_commit"]
          and [row["gradients"] for row in table] == ['{"synthesis":"mean_scaling"}',
                                                      '{"synthesis":"gaussian_deviation"}']
          and [row["result.gradients"] for row in table] == ["mean_scaling",
                                                             "gaussian_deviation"],
          f"a grid of gradients keeps its column, the result's is result.gradients: {header[:6]} "
          f"{done.stderr[-300:]!r}")
    drawn = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "plot.py"),
                            os.path.join(work, "synthesized"), "--out",
                            os.path.join(work, "synthesized-figures")],
                           capture_output=True, text=True, timeout=300)
    check(drawn.returncode == 0 and os.path.isfile(os.path.join(work, "synthesized-figures",
                                                                "throughput.png")),
          f"plot.py draws it: {drawn.returncode} {drawn.stderr[-300:]!r}")
    # A sketch no machine holds and a model past a 32-bit index were found by
    # their point's own gcsim run, after the points before it.
    bad_input(work, "huge-sketch.json",
              {"scenario": QUICKSTART, "set": {"training.iterations": 1},
               "grid": {"compressor": [{"name": "gs_sgd", "density": 0.01},
                                       {"name": "gs_sgd", "rows": 64, "columns": 2 ** 31}]}},
              "/compressor", ["p001_compressor-gs_sgd", "this machine's memory allows",
                              "rerun alone:"])
    huge = os.path.join(work, "huge.json")
    write_json(huge, {"name": "huge", "sample_unit": "sample", "parameters": 5 * 10 ** 9,
                      "layers": [{"name": "t", "kind": "other", "parameters": 5 * 10 ** 9,
                                  "forward_flops": 0, "backward_flops": 0}]})
    bad_input(work, "huge-model.json",
              {"scenario": QUICKSTART, "set": {"training.iterations": 1,
                                               "compressor": {"name": "deft"}},
               "grid": {"workload": [os.path.join(ROOT, "workloads", "models",
                                                  "resnet18-cifar10.json"), huge]}},
              "/workload", ["p001_workload-", "huge.json", "5000000000", "32-bit index"])
    # PowerSGD on a layer spec written without its layers' tensor shapes.
    with open(os.path.join(ROOT, "workloads", "models", "resnet18-cifar10.json")) as handle:
        shapeless = json.load(handle)
    for layer in shapeless["layers"]:
        del layer["tensors"]
    shapeless_spec = os.path.join(work, "shapeless-resnet18.json")
    write_json(shapeless_spec, shapeless)
    bad_input(work, "shapeless.json",
              {"scenario": QUICKSTART, "set": {"training.iterations": 1,
                                               "workload": shapeless_spec},
               "grid": {"compressor": [{"name": "dense"}, {"name": "powersgd"}]}},
              "/compressor", ["p001_compressor-powersgd", "layer conv1 has no tensor shape, and",
                              "rerun alone:"])
    check(not os.path.exists(os.path.join(work, "bad-out", "points")),
          "a sketch, a model or layers a compressor cannot run stop the sweep before its first "
          "point")
    # The check is made with the memory each point runs with: two at a time
    # (--jobs 2), each has half of it (--memory-share 0.5), so a sketch of
    # 35% of the machine, which a point alone may hold, is refused then.
    # More rows keep the columns below their limit of 2^31 on a big machine
    # (up to 64 rows: 1.5 TB).
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    rows = next(r for r in range(5, 65) if 0.35 * physical / (4 * r) < 2 ** 31)
    columns = int(0.35 * physical / (4 * rows))
    halves = os.path.join(work, "halves.sweep.json")
    write_json(halves, {"scenario": QUICKSTART, "set": {"training.iterations": 1},
                        "grid": {"compressor": [{"name": "gs_sgd", "rows": rows,
                                                 "columns": columns}],
                                 "seed": [1, 2]}})
    both = sweep(work, halves, "--out", os.path.join(work, "halves-out"), "--jobs", "2",
                 "--dry-run")
    check(both.returncode == 2 and "its share (--memory-share 0.5) of" in both.stderr
          and len(both.stderr.strip().splitlines()) == 1,
          f"a sketch that fits a point alone but not half the machine is refused with "
          f"--jobs 2: {both.returncode} {both.stderr.strip()[:300]!r}")
    # One at a time, each point has all of it: the share decided. A
    # memory cgroup's limit, which gcsim also counts, may refuse it alone.
    limits = []
    for limit_file in ("/sys/fs/cgroup/memory.max",
                       "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        if os.path.exists(limit_file):
            text = open(limit_file).read().strip()
            limits += [int(text)] if text.isdigit() else []
    if all(limit > physical for limit in limits):
        alone = sweep(work, halves, "--out", os.path.join(work, "halves-out"), "--jobs",
                      "1", "--dry-run")
        check(alone.returncode == 0, f"and accepted with --jobs 1: {alone.stderr.strip()!r}")
    else:
        print(f"note: a memory cgroup below the machine's memory ({limits} < {physical} "
              f"bytes): a sketch of 35% of the machine alone is not checked")
    # A folder name past 255 bytes could not be made, found while other
    # points were running.
    long_value = "x" * 40
    bad_input(work, "long-ids.json",
              {"scenario": QUICKSTART, "set": {"training.iterations": 1},
               "grid": {"name": [long_value], "description": [long_value],
                        "platform.name": [long_value], "platform.description": [long_value],
                        "platform.link.latency": ["1us"], "platform.link.bandwidth": ["10Gbps"],
                        "seed": [1, 9223372036854775807]}},
              "/grid", ["folder name would be", "bytes, more than a file name may have (255)"])
    check(not os.path.exists(os.path.join(work, "bad-out", "points")),
          "point names too long for a folder stop the sweep before its first point runs")
    jobs = sweep(work, sweep_file, "--jobs", "0")
    check(jobs.returncode == 2, "--jobs 0 is bad input")
    # A scratch directory that cannot be used stopped the sweep only at its
    # first compressed point, after the points before it had run.
    missing_scratch = os.path.join(work, "no-such-folder")
    for spill in [[], ["--spill", "always"]]:
        bad_scratch = sweep(work, sweep_file, "--out", "scratch-out", *spill,
                            "--scratch-dir", missing_scratch)
        lines = bad_scratch.stderr.strip().splitlines()
        check(bad_scratch.returncode == 2 and len(lines) == 1
              and lines[0].startswith(f"--scratch-dir: {missing_scratch}")
              and not os.path.exists(os.path.join(work, "scratch-out")),
              f"a bad --scratch-dir {spill} is refused before any point runs: {lines}")

    # SIGTERM to the sweep alone (kill PID, a batch scheduler) left its
    # running points going on as orphans, writing results after it ended.
    slow_file = os.path.join(work, "slow.sweep.json")
    write_json(slow_file, {"name": "slow", "scenario": QUICKSTART,
                           "grid": {"platform.nodes": [24, 32, 40]},
                           "set": {"training.iterations": 400}})
    slow_out = os.path.join(work, "slow")
    stopped_log = open(os.path.join(work, "stopped.txt"), "w")
    stopped = subprocess.Popen([GCSIM, "sweep", slow_file, "--out", slow_out, "--jobs", "2"],
                               cwd=work, stdout=stopped_log, stderr=subprocess.DEVNULL)

    def points_running(folder=b"slow/points/"):
        """The gcsim run processes writing into `folder` (slow_out's by default)."""
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    words = handle.read().split(b"\0")
            except OSError:
                continue
            # Its --out is relative to the sweep's working directory.
            if b"run" in words and any(folder in word for word in words):
                found.append(int(pid))
        return found

    deadline = time.monotonic() + 60
    while len(points_running()) < 2 and stopped.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    started = len(points_running())
    # A second sweep into the same folder ran every point not yet done
    # again, beside the first one's, and removed the table it was to write.
    second = sweep(work, slow_file, "--out", slow_out, "--jobs", "2")
    check(second.returncode == 1 and second.stderr.count("\n") == 1
          and "another gcsim sweep is writing into it" in second.stderr
          and "started" not in second.stdout and len(points_running()) == started,
          f"a second sweep into a folder in use is refused and starts nothing: "
          f"{second.returncode} {second.stderr!r} {second.stdout[-200:]!r}")
    second_dry = sweep(work, slow_file, "--out", slow_out, "--dry-run")
    check(second_dry.returncode == 0 and "to run" in second_dry.stdout,
          f"--dry-run may look at a folder in use: {second_dry.returncode} {second_dry.stderr!r}")
    stopped.send_signal(signal.SIGTERM)
    status = stopped.wait(timeout=120)
    check(started == 2 and status == -signal.SIGTERM and not points_running(),
          f"SIGTERM to the sweep stops its {started} running points and ends it by the signal "
          f"(status {status}, still running: {points_running()})")
    check(not os.path.exists(os.path.join(slow_out, "sweep.csv")),
          "and writes no sweep.csv")
    stopped_log.close()
    said = open(os.path.join(work, "stopped.txt")).read()
    check(said.count("stopped by SIGTERM in") == 2 and "FAILED" not in said,
          f"the points it stopped are said to be stopped, not failed: {said!r}")
    # Every pending point's log was written before the first started.
    unstarted = os.path.join(slow_out, "points", "p002_nodes-40")
    check(not os.path.exists(os.path.join(unstarted, "log.txt"))
          and not os.path.exists(os.path.join(unstarted, "command.txt")),
          "a point the sweep never started has no log or command.txt")

    # A sweep started ignoring SIGHUP (nohup) installed its own handler, and
    # a hangup then stopped it and its points.
    hup_out = os.path.join(work, "hup")
    hup = subprocess.Popen([GCSIM, "sweep", slow_file, "--out", hup_out, "--jobs", "2"],
                           cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    deadline = time.monotonic() + 60
    while len(points_running(b"hup/points/")) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    hup.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    check(hup.poll() is None and len(points_running(b"hup/points/")) == 2,
          f"a sweep started under nohup goes on after a hangup, and so do its points "
          f"(status {hup.poll()}, running {points_running(b'hup/points/')})")
    hup.send_signal(signal.SIGTERM)
    hup.wait(timeout=120)

    # A reader that stopped reading (`| head -1`): the sweep died by SIGPIPE
    # at its next line, and its running points went on as orphans.
    quick_and_slow = os.path.join(work, "quick-and-slow.sweep.json")
    write_json(quick_and_slow, {"name": "pipe", "scenario": QUICKSTART,
                                "grid": {"platform.nodes": [2, 40]},
                                "set": {"training.iterations": 400}})
    piped = subprocess.Popen([GCSIM, "sweep", quick_and_slow, "--out", "pipe", "--jobs", "2"],
                             cwd=work, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    piped.stdout.readline()
    piped.stdout.close()
    status = piped.wait(timeout=120)
    check(status == -signal.SIGPIPE and not points_running(b"pipe/points/"),
          f"a sweep whose output is closed stops its points and ends by SIGPIPE (status "
          f"{status}, still running: {points_running(b'pipe/points/')})")

    # A point that cannot be prepared (its folder is a file) failed the
    # sweep while the points already started ran on as orphans; and a
    # sweep.csv of an earlier grid outlived the failed rerun.
    blocked_out = os.path.join(work, "blocked")
    write_json(quick_and_slow.replace("quick-and-slow", "quick-only"),
               {"name": "blocked", "scenario": QUICKSTART, "grid": {"platform.nodes": [2]},
                "set": {"training.iterations": 400}})
    first = sweep(work, quick_and_slow.replace("quick-and-slow", "quick-only"), "--out", blocked_out)
    check(first.returncode == 0 and os.path.exists(os.path.join(blocked_out, "sweep.csv")),
          f"a one-point sweep writes its table: {first.stderr.strip()}")
    write_json(os.path.join(work, "blocked.sweep.json"),
               {"name": "blocked", "scenario": QUICKSTART, "grid": {"platform.nodes": [2, 24, 32]},
                "set": {"training.iterations": 400}})
    with open(os.path.join(blocked_out, "points", "p002_nodes-32"), "w") as handle:
        handle.write("in the way\n")
    blocked = sweep(work, os.path.join(work, "blocked.sweep.json"), "--out", blocked_out,
                    "--jobs", "2")
    check(blocked.returncode == 1 and "p002_nodes-32" in blocked.stderr
          and not points_running(b"blocked/points/"),
          f"a point that cannot be prepared stops the running ones: {blocked.returncode} "
          f"{blocked.stderr.strip()!r}, still running: {points_running(b'blocked/points/')}")
    check(not os.path.exists(os.path.join(blocked_out, "sweep.csv")),
          "and the earlier grid's sweep.csv is gone")

    # A point killed before it printed anything was reported with the
    # sweep's own "# run as:" header as its error.
    killed_out = os.path.join(work, "killed")
    killed = subprocess.Popen([GCSIM, "sweep", slow_file, "--out", killed_out, "--jobs", "1"],
                              cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    deadline = time.monotonic() + 60
    while not points_running(b"killed/points/") and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in points_running(b"killed/points/"):
        os.kill(pid, signal.SIGKILL)
    stdout, stderr = killed.communicate(timeout=120)
    check(killed.returncode == 1 and "killed by signal 9" in stderr and "(no output)" in stderr
          and "# run as" not in stderr,
          f"a point killed before its first line is reported as such: {stderr.strip()!r}")
    # Killed by another hand than the sweep's: it failed, it was not stopped.
    check("p000_nodes-24  FAILED in " in stdout and "stopped by" not in stdout,
          f"a point killed from outside is FAILED: {stdout[-200:]!r}")

# A replay sweep (--replay): every point replays one schedule on its own
# link, timing only; its command says so, a second sweep finds its points
# done, a copy of the schedule elsewhere is another schedule, and a grid of
# what the schedule fixes (the compressor, the workers) stops the sweep.
with tempfile.TemporaryDirectory() as work:
    recorded = subprocess.run([GCSIM, "run", QUICKSTART, "--out", "recorded", "--quiet", "--set",
                               'compressor={"name": "topk", "density": 0.01}', "--set",
                               "training.iterations=2"], capture_output=True, text=True,
                              timeout=300, cwd=work)
    check(recorded.returncode == 0, f"a top-k run records its schedule: {recorded.stderr.strip()}")
    write_json(os.path.join(work, "rates.sweep.json"),
               {"name": "rates", "scenario": QUICKSTART,
                "grid": {"platform.link.bandwidth": ["1Gbps", "10Gbps"]}})
    done = sweep(work, "rates.sweep.json", "--out", "rates", "--replay", "recorded/schedule.json")
    results = [json.load(open(os.path.join(work, "rates", "points", point, "result.json")))
               if done.returncode == 0 else {} for point in
               ("p000_bandwidth-1Gbps", "p001_bandwidth-10Gbps")]
    with open(os.path.join(work, "recorded", "result.json")) as handle:
        original = json.load(handle)
    schedule = os.path.realpath(os.path.join(work, "recorded", "schedule.json"))
    check(done.returncode == 0
          and all(r["model"]["gradients"]["kind"] == "replay"
                  and r["model"]["gradients"]["schedule"] == schedule
                  and r["summary"]["bytes_sent_per_worker"]
                  == original["summary"]["bytes_sent_per_worker"] for r in results)
          and results[0]["summary"]["communication_total_s"]
          > 5 * results[1]["summary"]["communication_total_s"],
          f"each point replays the schedule on its own link: {done.stderr.strip()[-300:]}")
    with open(os.path.join(work, "rates", "points", "p000_bandwidth-1Gbps", "command.txt")) as handle:
        command = handle.read()
    check("--replay recorded/schedule.json" in command,
          f"a point's command replays the schedule: {command!r}")
    # The recorded run's gradients were synthetic, and its density and
    # fidelity, which the replay reports, are the synthesizer's: said.
    with open(os.path.join(work, "rates", "points", "p000_bandwidth-1Gbps", "log.txt")) as handle:
        log = handle.read()
    check("  gradients: synthetic (no trace) in the recorded run, not real gradients" in log,
          f"a replay of synthetic gradients says so: {log[:600]!r}")
    again = sweep(work, "rates.sweep.json", "--out", "rates", "--replay", "recorded/schedule.json")
    check(again.returncode == 0 and "2 done, 0 to run" in again.stdout,
          f"a replay sweep run again finds its points done: {again.stdout[-300:]!r}")
    os.makedirs(os.path.join(work, "copy"))
    shutil.copy(os.path.join(work, "recorded", "schedule.json"), os.path.join(work, "copy"))
    other = sweep(work, "rates.sweep.json", "--out", "rates", "--replay", "copy/schedule.json",
                  "--dry-run")
    check("to run again (its result.json: it replays another schedule than" in other.stdout,
          f"a replay of another schedule file runs again: {other.stdout[:400]!r}")
    # A full run's results: their points run again, and the line says why
    # (it named a compressor field the user never wrote).
    full = sweep(work, "rates.sweep.json", "--out", "full-rates")
    replaying = sweep(work, "rates.sweep.json", "--out", "full-rates", "--replay",
                      "recorded/schedule.json", "--dry-run")
    check(full.returncode == 0 and "to run again (its result.json: it is not a replay, and the "
          "sweep replays " in replaying.stdout,
          f"a full run's point is no replay's: {replaying.stdout[:300]!r}")
    # A schedule that is no file is the sweep's error, said once.
    missing = sweep(work, "rates.sweep.json", "--out", "missing", "--replay", "none/schedule.json")
    check(not refusal_problems(missing, ["none/schedule.json: file not found"])
          and "point" not in missing.stderr,
          f"a missing schedule is one line naming it: {missing.stderr.strip()!r}")
    for name, grid, words in (
            ("compressors", {"compressor.density": [0.01, 0.1]},
             ["/compressor/density: a replay runs the compressor its schedule recorded"]),
            ("workers", {"platform.nodes": [4, 8]},
             ["recorded/schedule.json: /workers: the schedule is for 8 workers but the platform "
              "has 4"])):
        write_json(os.path.join(work, name + ".sweep.json"),
                   {"name": name, "scenario": QUICKSTART, "grid": grid})
        refused = sweep(work, name + ".sweep.json", "--out", name, "--replay",
                        "recorded/schedule.json")
        check(refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
              and all(word in refused.stderr for word in words)
              and not os.path.exists(os.path.join(work, name, "points")),
              f"a replay sweep over {name} stops before any point: {refused.stderr.strip()!r}")
    # A seed axis: the replay draws only stragglers from it, so without
    # them its points are one point; said (with them, not).
    note = ("note: the grid's seed reaches a replay only through training.compute_variation "
            "(stragglers), which no point sets")
    for name, fixed, said in (("seeds", {}, True),
                              ("stragglers", {"training.compute_variation": 0.1}, False)):
        write_json(os.path.join(work, name + ".sweep.json"),
                   {"name": name, "scenario": QUICKSTART, "set": fixed, "grid": {"seed": [1, 2]}})
        seeds = sweep(work, name + ".sweep.json", "--out", name, "--replay",
                      "recorded/schedule.json", "--dry-run")
        check(seeds.returncode == 0 and (note in seeds.stdout) == said,
              f"a replay sweep over seeds {'says' if said else 'need not say'} that they repeat "
              f"one point ({name}): {seeds.stdout[:300]!r}")

check.finish()
