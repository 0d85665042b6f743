#!/usr/bin/python3
"""End-to-end: `gcsim inspect` on broken traces exits with status 2 and prints
one line that names the broken file and says what is wrong; a valid trace
exits 0. Usage: bad_traces_test.py GCSIM WORKDIR"""
import copy
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import tiny_trace  # noqa: E402
from checks import refusal_problems  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def edit_manifest(folder, change):
    path = os.path.join(folder, "manifest.json")
    with open(path) as stream:
        manifest = json.load(stream)
    change(manifest)
    with open(path, "w") as stream:
        json.dump(manifest, stream)


def worker_file(folder, it=1, w=1):
    return os.path.join(folder, "iterations", f"{it:06d}", f"worker_{w:03d}.npy")


def truncate(path, cut=5):
    with open(path, "rb") as stream:
        data = stream.read()
    with open(path, "wb") as stream:
        stream.write(data[:-cut])


def set_element(path, index, value):
    array = np.load(path)
    array[index] = value
    np.save(path, array)


# name -> (how to break the trace, file named in the message, text in the message)
CASES = {
    "truncated file": (lambda f: truncate(worker_file(f)), worker_file, "truncated"),
    "missing layer file": (lambda f: os.remove(worker_file(f)), worker_file, "file not found"),
    # It said "weights.npy: file not found", as if the folder were there.
    "missing iteration folder": (
        lambda f: shutil.rmtree(os.path.dirname(worker_file(f))), "manifest.json",
        "/iterations/1: lists iteration 1, but "),
    "missing layer in manifest": (
        lambda f: edit_manifest(f, lambda m: m["layers"].pop(1)), "manifest.json",
        "/layers/1/offset"),
    "shape mismatch": (
        lambda f: np.save(worker_file(f), np.zeros(42, dtype=np.float32)), worker_file,
        "has shape (42,)"),
    "2-d gradient": (
        lambda f: np.save(worker_file(f), np.zeros((43, 1), dtype=np.float32)), worker_file,
        "has shape (43, 1)"),
    "NaN gradient": (lambda f: set_element(worker_file(f), 30, np.nan), worker_file,
                     "element 30 (layer fc2.weight, element 2) is NaN"),
    "infinite gradient": (lambda f: set_element(worker_file(f), 0, np.inf), worker_file,
                          "is infinite"),
    # Finite, but the sums over workers overflowed: a null fidelity, exit 0.
    "gradient near float's limit": (lambda f: set_element(worker_file(f), 30, 3e38), worker_file,
                                    "element 30 (layer fc2.weight, element 2) is 3e+38, beyond 1e+24"),
    "wrong dtype": (
        lambda f: np.save(worker_file(f), np.zeros(43, dtype=np.float64)), worker_file,
        "'<f8' is not supported"),
    "float16 file, manifest says float32": (
        lambda f: np.save(worker_file(f), np.zeros(43, dtype=np.float16)), worker_file,
        "holds float16 but"),
    "Fortran order": (
        lambda f: np.save(worker_file(f), np.asfortranarray(np.zeros((43, 2), np.float32))),
        worker_file, "Fortran order"),
    "manifest lies about total size": (
        lambda f: edit_manifest(f, lambda m: m.update(total_params=50)), "manifest.json",
        "/total_params"),
    "manifest lies about a layer size": (
        lambda f: edit_manifest(f, lambda m: m["layers"][0].update(params=25)), "manifest.json",
        "/layers/0/params"),
    "manifest and files agree on a wrong size": (
        lambda f: edit_manifest(f, lambda m: (m.update(total_params=44),
                                              m["layers"][3].update(shape=[4], params=4),
                                              m["modules"][2].update(params=16))),
        lambda g: os.path.join(g, "iterations", "000000", "weights.npy"),
        "says total_params 44"),
    # Buckets are drawn between modules in this order over the tensors in
    # theirs: an internal error, or a bucket given another module's gradient.
    "modules out of their tensors' order": (
        lambda f: edit_manifest(f, lambda m: m.update(modules=m["modules"][::-1])),
        "manifest.json", "must be listed in the order of their tensors"),
    # A typo in a layer's module: the module it left short was blamed.
    "layer names a module not listed": (
        lambda f: edit_manifest(f, lambda m: m["layers"][1].update(module=m["layers"][1]["module"] + "x")),
        "manifest.json", "/layers/1/module: module 'fc1x' is not listed in /modules; did you mean 'fc1'?"),
    "unknown manifest field": (
        lambda f: edit_manifest(f, lambda m: m.update(wokers=3)), "manifest.json", "wokers"),
    "malformed manifest": (
        lambda f: open(os.path.join(f, "manifest.json"), "w").write("{\"format\": "),
        "manifest.json", "malformed JSON"),
    "no manifest": (lambda f: os.remove(os.path.join(f, "manifest.json")), lambda f: f,
                    "not a trace folder: it holds no manifest.json"),
    "uncaptured iteration asked": (lambda f: None, lambda f: "--iteration",
                                   "7 was not captured in"),
    # CLI11 read "" as iteration 0 and a number past 2^63 as the largest.
    "empty iteration asked": (lambda f: None, lambda f: "gcsim inspect: --iteration",
                              "got ''"),
    "iteration past 2^63 asked": (lambda f: None, lambda f: "gcsim inspect: --iteration",
                                  "got '99999999999999999999'"),
}

ITERATION_ASKED = {"uncaptured iteration asked": "7", "empty iteration asked": "",
                   "iteration past 2^63 asked": "99999999999999999999"}


def statistics_only(gcsim, workdir, valid):
    """A statistics-only trace made from `valid` shows, for each captured
    iteration, the figures inspect computes from the full trace: they were
    shown as "-", and --iteration was ignored whatever its number."""
    failures = []
    stats = os.path.join(workdir, "stats")
    made = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "trace_tools",
                                                            "make_stats_trace.py"),
                           gcsim, valid, stats], capture_output=True, text=True)
    if made.returncode != 0:
        return [f"make_stats_trace.py: exit {made.returncode}: {made.stderr}"]
    # Made again from the statistics-only trace, it "succeeded" with the
    # figures of the file it read, claiming itself as the source.
    again = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "trace_tools",
                                                             "make_stats_trace.py"),
                            gcsim, stats, os.path.join(workdir, "stats-of-stats")],
                           capture_output=True, text=True)
    if again.returncode != 2 or "statistics-only" not in again.stderr \
            or os.path.exists(os.path.join(workdir, "stats-of-stats")):
        failures.append(f"make_stats_trace.py of a statistics-only trace: exit "
                        f"{again.returncode}: {again.stderr.strip()}")
    # An OUT_DIR under a file was "File exists" after every iteration's inspect.
    under_file = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "trace_tools",
                                                                  "make_stats_trace.py"),
                                 gcsim, valid, os.path.join(stats, "manifest.json", "sub")],
                                capture_output=True, text=True)
    if under_file.returncode != 2 or "manifest.json is not a folder" not in under_file.stderr:
        failures.append(f"make_stats_trace.py into a folder under a file: exit "
                        f"{under_file.returncode}: {under_file.stderr.strip()}")
    # A manifest's iteration of -1 got gcsim inspect's --iteration refusal,
    # which named no manifest.
    negative = os.path.join(workdir, "negative-iteration")
    shutil.copytree(valid, negative)
    with open(os.path.join(negative, "manifest.json")) as stream:
        manifest = json.load(stream)
    manifest["iterations"][0] = -1
    with open(os.path.join(negative, "manifest.json"), "w") as stream:
        json.dump(manifest, stream)
    refused = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "trace_tools",
                                                               "make_stats_trace.py"),
                              gcsim, negative, os.path.join(workdir, "negative-stats")],
                             capture_output=True, text=True)
    if refused.returncode != 2 or "manifest.json: /iterations: expected the captured" \
            not in refused.stderr or os.path.exists(os.path.join(workdir, "negative-stats")):
        failures.append(f"make_stats_trace.py of a manifest with iteration -1: exit "
                        f"{refused.returncode}: {refused.stderr.strip()}")
    # Its comment named a preset after the folder ("--preset valid"): it
    # gives the full trace's recorded capture command, or says there is none.
    with open(os.path.join(stats, "manifest.json")) as stream:
        comment = json.load(stream).get("comment", "")
    if not comment.endswith("the full trace: valid (its capture command is not recorded)"):
        failures.append(f"a trace without a capture command: comment {comment!r}")
    captured = os.path.join(workdir, "captured")
    shutil.copytree(valid, captured)
    with open(os.path.join(captured, "manifest.json")) as stream:
        manifest = json.load(stream)
    manifest["capture"] = {"command": "/usr/bin/python3 scripts/capture_traces.py --out X"}
    with open(os.path.join(captured, "manifest.json"), "w") as stream:
        json.dump(manifest, stream)
    recorded = os.path.join(workdir, "captured-stats")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "trace_tools",
                                                     "make_stats_trace.py"),
                    gcsim, captured, recorded], capture_output=True, text=True)
    with open(os.path.join(recorded, "manifest.json")) as stream:
        comment = json.load(stream).get("comment", "")
    if not comment.endswith("the full trace: /usr/bin/python3 scripts/capture_traces.py --out X"):
        failures.append(f"a trace with a capture command: comment {comment!r}")

    def inspect(trace, *args):
        out = os.path.join(workdir, "inspect-stats.json")
        done = subprocess.run([gcsim, "inspect", trace, "--json", out, *args],
                              capture_output=True, text=True)
        if done.returncode != 0:
            return done, None
        with open(out) as stream:
            return done, json.load(stream)

    figures = ("name", "k", "norm", "top_mass", "overlap")
    for args in ([], ["--iteration", "0"], ["--iteration", "1"]):
        full, from_tensors = inspect(valid, *args)
        shown, from_file = inspect(stats, *args)
        if from_file is None or from_tensors is None:
            failures.append(f"inspect {args} of the full and the statistics-only trace: "
                            f"{full.stderr.strip()} {shown.stderr.strip()}")
            continue
        if from_file["iteration"] != from_tensors["iteration"] or \
                [[l[f] for f in figures] for l in from_file["layers"]] != \
                [[l[f] for f in figures] for l in from_tensors["layers"]]:
            failures.append(f"inspect {args}: the statistics-only trace shows other figures")
        if "from statistics.json" not in shown.stdout:
            failures.append(f"inspect {args}: the table does not say where its figures come from")
    # Refusals: an iteration it does not hold, a file not of this trace's
    # layers, and no statistics.json at all.
    with open(os.path.join(stats, "statistics.json")) as stream:
        good = json.load(stream)
    other = copy.deepcopy(good)
    other["iterations"][0]["layers"][0]["name"] = "fc9.weight"
    # Figures no gradient has were printed as they came (a 300-digit overlap).
    figures_out_of_range = []
    for key, value in (("norm", -1), ("top_mass", -3), ("top_mass", 1.5), ("overlap", 1e300)):
        bad = copy.deepcopy(good)
        bad["iterations"][0]["layers"][1][key] = value
        figures_out_of_range.append((f"{key} {value}", bad, [], os.path.join(
            stats, "statistics.json") + f": /iterations/0/layers/1/{key}: expected "))
    cases = [("an iteration not held", good, ["--iteration", "7"],
              "--iteration: 7 is not in " + os.path.join(stats, "statistics.json")),
             ("another trace's layers", other, [],
              os.path.join(stats, "statistics.json") + ": /iterations/0/layers/0/name: "),
             *figures_out_of_range,
             ("no statistics.json", None, ["--iteration", "1"], "--iteration: ")]
    for name, document, args, says in cases:
        if document is None:
            os.remove(os.path.join(stats, "statistics.json"))
        else:
            with open(os.path.join(stats, "statistics.json"), "w") as stream:
                json.dump(document, stream)
        done = subprocess.run([gcsim, "inspect", stats, *args], capture_output=True, text=True)
        if done.returncode != 2 or not done.stderr.startswith(says) or done.stdout \
                or len(done.stderr.strip().splitlines()) != 1:
            failures.append(f"statistics-only trace, {name}: exit {done.returncode}: "
                            f"{done.stderr.strip()}")
    # A one-worker trace's statistics, as inspect --json writes them: no
    # pair, so no overlap (null), which the reader refused as no number.
    single = os.path.join(workdir, "single-stats")
    shutil.copytree(stats, single)
    with open(os.path.join(single, "manifest.json")) as stream:
        manifest = json.load(stream)
    manifest["workers"] = 1
    with open(os.path.join(single, "manifest.json"), "w") as stream:
        json.dump(manifest, stream)
    alone = copy.deepcopy(good)
    for iteration in alone["iterations"]:
        for layer in iteration["layers"]:
            layer["overlap"] = None
    with open(os.path.join(single, "statistics.json"), "w") as stream:
        json.dump(alone, stream)
    done = subprocess.run([gcsim, "inspect", single], capture_output=True, text=True)
    if done.returncode != 0 or "from statistics.json" not in done.stdout:
        failures.append(f"a one-worker statistics-only trace: exit {done.returncode}: "
                        f"{done.stderr.strip()}")
    return failures


def main(gcsim, workdir):
    shutil.rmtree(workdir, ignore_errors=True)
    failures = []
    valid = os.path.join(workdir, "valid")
    tiny_trace.write(valid)
    report = os.path.join(workdir, "inspect.json")
    result = subprocess.run([gcsim, "inspect", valid, "--iteration", "1", "--json", report],
                            capture_output=True, text=True)
    if result.returncode != 0:
        failures.append(f"valid trace: exit {result.returncode}: {result.stderr}")
    else:
        with open(report) as stream:
            data = json.load(stream)
        layers = data["layers"]
        if data["iteration"] != 1 or [l["name"] for l in layers] != [l[0] for l in tiny_trace.LAYERS]:
            failures.append("inspect --json: wrong iteration or layers")
        g = [np.load(os.path.join(valid, "iterations", "000001", f"worker_{w:03d}.npy"))
             for w in range(2)]
        norm = np.mean([np.linalg.norm(x[:24]) for x in g])
        if abs(layers[0]["norm"] - norm) > 1e-5 * norm:
            failures.append(f"inspect --json: fc1.weight norm {layers[0]['norm']}, numpy {norm}")
        if [m["name"] for m in data["workload_layers"]] != ["fc1", "fc2"]:
            failures.append("inspect --json: workload layers are not fc1, fc2")
        if "fc1.weight" not in result.stdout:
            failures.append("inspect: the table lacks the layer names")
    # A leading zero is decimal: CLI11 read "01" as octal ("010" was 8).
    result = subprocess.run([gcsim, "inspect", valid, "--iteration", "01", "--json", report],
                            capture_output=True, text=True)
    with open(report) as stream:
        if result.returncode != 0 or json.load(stream)["iteration"] != 1:
            failures.append(f"--iteration 01: exit {result.returncode}: {result.stderr}")
    result = subprocess.run([gcsim, "inspect", valid, "--iteration", "010"],
                            capture_output=True, text=True)
    if result.returncode != 2 or "--iteration: 10 was not captured" not in result.stderr:
        failures.append(f"--iteration 010 is iteration 10: {result.stderr!r}")
    # Outputs onto a trace's tensors were written over them (only the
    # manifest was guarded), and the trace was broken ("not an .npy file").
    tensor = os.path.join(valid, "iterations", "000001", "worker_001.npy")
    tensor_before = open(tensor, "rb").read()
    scenario = os.path.join(workdir, "on-trace.json")
    with open(os.path.join(ROOT, "workloads", "scenarios", "quickstart.json")) as stream:
        document = json.load(stream)
    document.update(workload=valid, device=os.path.join(ROOT, document["device"]),
                    platform=dict(topology="star", nodes=2,
                                  link=dict(bandwidth="1Gbps", latency="10us")))
    document["compressor"] = {"name": "topk", "density": 0.25}
    with open(scenario, "w") as stream:
        json.dump(document, stream)
    for label, args in [
            ("inspect --json onto a tensor", ["inspect", valid, "--json", tensor]),
            ("run --timeline onto a tensor",
             ["run", scenario, "--out", os.path.join(workdir, "on-trace"), "--timeline", tensor])]:
        result = subprocess.run([gcsim, *args], capture_output=True, text=True)
        problems = refusal_problems(result, ["is a file of"])
        if open(tensor, "rb").read() != tensor_before:
            problems.append("the tensor changed")
        if problems:
            failures.append(f"{label}: {'; '.join(problems)}")
    # A new file beside the trace's own destroys nothing.
    beside = os.path.join(valid, "report.json")
    result = subprocess.run([gcsim, "inspect", valid, "--json", beside], capture_output=True,
                            text=True)
    if result.returncode != 0 or not os.path.isfile(beside):
        failures.append(f"inspect --json beside the trace's files: exit {result.returncode}: "
                        f"{result.stderr.strip()}")
    if os.path.exists(beside):
        os.remove(beside)
    result = subprocess.run([gcsim, "run", scenario, "--out", os.path.join(workdir, "on-trace"),
                             "--quiet"], capture_output=True, text=True)
    if result.returncode != 0:
        failures.append(f"the scenario on the tiny trace runs: exit {result.returncode}: "
                        f"{result.stderr.strip()}")
    # One captured worker has no spread to draw others from: every
    # synthesized worker was a copy of it.
    single = os.path.join(workdir, "single")
    tiny_trace.write(single, workers=1)
    document["workload"] = single
    with open(scenario, "w") as stream:
        json.dump(document, stream)
    result = subprocess.run([gcsim, "run", scenario, "--out", os.path.join(workdir, "single-out")],
                            capture_output=True, text=True)
    problems = refusal_problems(
        result, [os.path.join(single, "manifest.json") + ": /workers: one captured worker"])
    if problems:
        failures.append(f"a one-worker trace for two workers: {'; '.join(problems)}")
    # --json onto the manifest wrote the statistics over it.
    manifest = os.path.join(valid, "manifest.json")
    before = open(manifest).read()
    result = subprocess.run([gcsim, "inspect", valid, "--json", manifest], capture_output=True,
                            text=True)
    if result.returncode != 2 or "--json:" not in result.stderr or open(manifest).read() != before:
        failures.append(f"inspect --json onto the manifest: exit {result.returncode}: "
                        f"{result.stderr.strip()}")
    for number, (name, (breaker, named, says)) in enumerate(CASES.items()):
        folder = os.path.join(workdir, f"case{number}")
        shutil.copytree(valid, folder)
        breaker(folder)
        expected_file = named(folder) if callable(named) else os.path.join(folder, named)
        args = [gcsim, "inspect", folder, "--iteration", "1"]
        args[-1] = ITERATION_ASKED.get(name, args[-1])
        result = subprocess.run(args, capture_output=True, text=True)
        lines = result.stderr.strip().splitlines()
        problems = []
        if result.returncode != 2:
            problems.append(f"exit status {result.returncode}, expected 2")
        if len(lines) != 1:
            problems.append(f"{len(lines)} lines on stderr, expected 1")
        elif not lines[0].startswith(expected_file + ": "):
            problems.append(f"message does not start with {expected_file}: ")
        if says not in result.stderr:
            problems.append(f"message lacks {says!r}")
        # Half a table on stdout (a NaN found in the third layer) reads as a result.
        if result.stdout:
            problems.append("printed to stdout before failing")
        status = "ok" if not problems else "FAIL: " + "; ".join(problems)
        print(f"{name:45s} {status}\n    {result.stderr.strip()}")
        if problems:
            failures.append(name)
    failures += statistics_only(gcsim, workdir, valid)
    # One worker has no pair to compare: its overlap read 1.000, a perfect
    # agreement; it is "-" and null.
    alone = os.path.join(workdir, "one-worker")
    tiny_trace.write(alone, workers=1)
    single = os.path.join(workdir, "one-worker.json")
    result = subprocess.run([gcsim, "inspect", alone, "--json", single], capture_output=True,
                            text=True)
    overlaps = [l.get("overlap", "absent") for l in json.load(open(single))["layers"]] \
        if result.returncode == 0 else []
    row = next((line.split() for line in result.stdout.splitlines()
                if line.startswith("fc1.weight")), [])
    if not overlaps or any(o is not None for o in overlaps) or row[4:5] != ["-"]:
        failures.append(f"one worker's overlap: {overlaps} {row} {result.stderr.strip()}")
    if failures:
        print("failed:", ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
