#!/usr/bin/python3
"""No input field, whatever its value, crashes gcsim: every field of a
scenario, a layer spec, a platform file, a device profile's compute part, a
trace manifest, a measured run and a replayed schedule is in turn deleted and set to values
of the wrong type or absurd size, and each run must exit 0 or 2 (2 with one
line on stderr), never 1 (an internal error), a signal or a timeout. This
found SimGrid aborts on infinite times, a 19 GiB sketch and unchecked types.

Usage: field_mutation_test.py PATH/TO/gcsim
"""
import concurrent.futures
import copy
import json
import os
import subprocess
import sys
import tempfile
import time

from checks import Checks

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCENARIOS = os.path.join(ROOT, "workloads", "scenarios")
TRACE = os.path.join(ROOT, "workloads", "traces", "fmnist-cnn-16w")
VALUES = [None, -1, 0, 1e308, "x", [], {}, True]
# The first few entries of a list stand for the rest.
LIST_ENTRIES = 2

check = Checks()


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return json.load(handle)


def field_paths(value, prefix=(), skip=()):
    """Every path into `value`, lists cut to their first entries."""
    if prefix in skip:
        return
    if prefix:
        yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from field_paths(item, prefix + (key,), skip)
    elif isinstance(value, list):
        for index, item in enumerate(value[:LIST_ENTRIES]):
            yield from field_paths(item, prefix + (index,), skip)


def mutations(document, skip=()):
    """(label, mutated document) for every path and value."""
    for path in field_paths(document, skip=skip):
        for value in ["<delete>"] + VALUES:
            mutated = copy.deepcopy(document)
            holder = mutated
            for key in path[:-1]:
                holder = holder[key]
            if value == "<delete>":
                del holder[path[-1]]
            else:
                holder[path[-1]] = value
            yield "/".join(str(key) for key in path) + f" = {value!r}", mutated


def run(args):
    try:
        done = subprocess.run([GCSIM] + args, capture_output=True, text=True, timeout=120,
                              cwd=ROOT)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    return done.returncode, done.stderr


def verdict(outcome):
    code, stderr = outcome
    lines = stderr.strip().splitlines()
    if code == 0 or (code == 2 and len(lines) == 1):
        return None
    return f"exit {code}: {stderr.strip()[-300:]!r}"


def campaign(name, cases):
    """Runs (label, args) pairs two at a time; one check per input kind."""
    cases = list(cases)
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(lambda case: run(case[1]), cases))
    print(f"{name}: {len(cases)} runs in {time.monotonic() - started:.0f} s", flush=True)
    bad = [f"{label}: {verdict(outcome)}" for (label, _), outcome in zip(cases, outcomes)
           if verdict(outcome)]
    check(not bad, f"{name}: {len(cases)} mutated inputs, none crashed" +
          ("" if not bad else f"; {len(bad)} did: " + "; ".join(bad[:5])))


with tempfile.TemporaryDirectory() as work:
    def written(document, name):
        path = os.path.join(work, name)
        with open(path, "w") as handle:
            json.dump(document, handle)
        return path

    quick = ["--quiet", "--set", "training.iterations=1"]
    # The same fields on the small CNN's layer spec: a run takes 0.05 s, not
    # ResNet-18's 1.3 s.
    scenario = load("workloads", "scenarios", "topk-resnet18-8x10g.json")
    scenario["workload"] = "workloads/models/fmnist-cnn.json"
    campaign("scenario", ((label, ["run", written(doc, f"s{i}.json"), "--out",
                                   os.path.join(work, f"s{i}")] + quick)
                          for i, (label, doc) in enumerate(mutations(scenario))))

    spec = load("workloads", "models", "fmnist-cnn.json")
    campaign("layer spec", ((label, ["run", os.path.join(SCENARIOS, "topk-resnet18-8x10g.json"),
                                     "--out", os.path.join(work, f"w{i}"),
                                     "--set", "workload=" + written(doc, f"w{i}.json")] + quick)
                            for i, (label, doc) in enumerate(mutations(spec))))

    platform = load("platforms", "dgx-2x8-v100.json")
    campaign("platform", ((label, ["run", os.path.join(SCENARIOS, "quickstart.json"),
                                   "--out", os.path.join(work, f"p{i}"),
                                   "--set", "platform=" + written(doc, f"p{i}.json")] + quick)
                          for i, (label, doc) in enumerate(mutations(platform))))

    # The compute part and the optimizer's kernel: the other kernels' fits
    # are the same schema (tests/cost covers their loading).
    profile = load("platforms", "devices", "v100.json")
    skip = tuple(("kernels", name) for name in profile["kernels"] if name != "sgd_momentum")
    campaign("device profile", ((label, ["run", os.path.join(SCENARIOS, "quickstart.json"),
                                         "--out", os.path.join(work, f"d{i}"),
                                         "--set", "device=" + written(doc, f"d{i}.json")] + quick)
                                for i, (label, doc) in enumerate(mutations(profile, skip))))

    manifest = load("workloads", "traces", "fmnist-cnn-16w", "manifest.json")

    def trace(i, document):
        folder = os.path.join(work, f"t{i}")
        os.makedirs(folder)
        os.symlink(os.path.join(TRACE, "iterations"), os.path.join(folder, "iterations"))
        written(document, os.path.join(f"t{i}", "manifest.json"))
        return folder

    deft = os.path.join(SCENARIOS, "deft-fmnist-16.json")
    campaign("trace manifest", ((label, ["run", deft, "--out", os.path.join(work, f"t{i}-out"),
                                         "--set", "workload=" + trace(i, doc)] + quick)
                                for i, (label, doc) in enumerate(mutations(manifest))))

    # Only the first entries of a list are mutated, so the rest is cut: two
    # collectives, dense and topk training, and no warm-up, so that the
    # mutated iterations are the compared ones. Each validate is then a few
    # times quicker, over the same fields.
    measured = load("results", "validation", "minicluster-p4-100mbit-short.json")
    measured["collectives"] = measured["collectives"][:LIST_ENTRIES]
    measured["training"] = measured["training"][:LIST_ENTRIES]
    for training in measured["training"]:
        training["warmup_iterations"] = 0
        # One more than is mutated: deleting one still leaves two to compare.
        training["iterations"] = training["iterations"][:LIST_ENTRIES + 1]
    campaign("measured run", ((label, ["validate", written(doc, f"m{i}.json")])
                              for i, (label, doc) in enumerate(mutations(measured))))

    recorded = os.path.join(work, "recorded")
    code, stderr = run(["run", deft, "--out", recorded, "--quiet", "--set", "training.iterations=1"])
    if check(code == 0, f"a schedule to replay is recorded ({stderr.strip()})"):
        with open(os.path.join(recorded, "schedule.json")) as handle:
            schedule = json.load(handle)
        campaign("replayed schedule",
                 ((label, ["run", deft, "--out", os.path.join(work, f"r{i}"), "--replay",
                           written(doc, f"r{i}.json")] + quick)
                  for i, (label, doc) in enumerate(mutations(schedule))))

check.finish()
