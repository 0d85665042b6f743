#!/usr/bin/python3
"""compare_profiles.py, which the devices README's before/after ratios come
from: a profile against itself is 1.00 everywhere; against a copy whose
threshold_select points take half the time, that kernel is 0.50 at every
density and the others stay 1.00; a file that is not a profile, or a point
whose seconds are not a time (a string, negative; NaN, which is not JSON),
is exit 2 with one line naming the file and the point; a shape timed more
than once is compared at the median of its timings, not its last; -h prints
the usage and exits 0.

Usage: compare_profiles_test.py
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from checks import Checks, refusal_problems  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "calibrate", "compare_profiles.py")
CPU = os.path.join(ROOT, "platforms", "devices", "cpu-amd-epyc-zen4.json")

check = Checks()


def compare(*args):
    return subprocess.run(["/usr/bin/python3", SCRIPT, *args], capture_output=True, text=True,
                          timeout=60)


def medians(stdout):
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^  (\w+)\s+([\d.]+)\s", stdout, re.MULTILINE)}


same = compare(CPU, CPU)
found = medians(same.stdout)
check(same.returncode == 0 and len(found) == 14 and all(v == 1.0 for v in found.values()),
      f"a profile against itself: 14 kernels at 1.00 ({found})")

with tempfile.TemporaryDirectory() as work:
    with open(CPU) as handle:
        profile = json.load(handle)
    for point in profile["kernels"]["threshold_select"]["points"]:
        point["seconds"] /= 2
    halved = os.path.join(work, "halved.json")
    with open(halved, "w") as handle:
        json.dump(profile, handle)
    done = compare(CPU, halved, "--by-density")
    found = medians(done.stdout)
    check(done.returncode == 0 and found.get("threshold_select") == 0.5
          and all(v == 1.0 for k, v in found.items() if k != "threshold_select"),
          f"halved threshold_select: 0.50, every other kernel 1.00 ({found})")
    per_density = re.findall(r"density ([\d.e-]+), n >= 2\^20: median ([\d.]+)",
                             done.stdout.split("threshold_select", 1)[-1].split("\n  topk")[0])
    check(len(per_density) == 4 and all(float(r) == 0.5 for _, r in per_density),
          f"and 0.50 at each of its four densities ({per_density})")

    # Only the small sizes slower: --min-log2 leaves them out, and the line
    # over every kernel says what the per-kernel lines say.
    with open(CPU) as handle:
        profile = json.load(handle)
    for kernel in profile["kernels"].values():
        for point in kernel["points"]:
            point["seconds"] *= 3 if point["n"] < 2 ** 20 else 1
    small_slower = os.path.join(work, "small-slower.json")
    with open(small_slower, "w") as handle:
        json.dump(profile, handle)
    every = re.compile(r"^every kernel\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+\((\d+) points\)",
                       re.MULTILINE)
    done = compare(CPU, small_slower, "--min-log2", "20")
    found, large = medians(done.stdout), every.search(done.stdout)
    check(done.returncode == 0 and len(found) == 14 and all(v == 1.0 for v in found.values())
          and large is not None and large.groups()[:3] == ("1.00", "1.00", "1.00")
          and "n >= 2^20" in done.stdout, f"--min-log2 20: every kernel 1.00 ({done.stdout!r})")
    done = compare(CPU, small_slower)
    line = every.search(done.stdout)
    check(done.returncode == 0 and line is not None and large is not None
          and line.groups()[:3] == ("3.00", "1.00", "3.00")
          and int(line.group(4)) > int(large.group(4)),
          f"without it the small sizes count, and are most points ({done.stdout!r})")
    # --min-log2 20 keeps the points of n = 2^20 itself, and --by-density
    # looks at n >= 2^20 only: the small sizes, 3x slower, move no density.
    at_least = sum(point["n"] >= 2 ** 20 for kernel in profile["kernels"].values()
                   for point in {(p["n"], p.get("k", 0), p.get("rows", 0), p.get("cols", 0)): p
                                 for p in kernel["points"]}.values())
    check(large is not None and int(large.group(4)) == at_least,
          f"--min-log2 20 counts the {at_least} shapes of n >= 2^20 "
          f"({large.group(4) if large else None})")
    done = compare(CPU, small_slower, "--by-density")
    per_density = re.findall(r"density ([\d.e-]+), n >= 2\^20: median ([\d.]+)", done.stdout)
    check(done.returncode == 0 and len(per_density) > 4
          and all(float(r) == 1.0 for _, r in per_density),
          f"--by-density leaves the small sizes out: 1.00 at every density ({per_density})")
    # A point of 0 s before (a kernel too fast for the clock) has no ratio:
    # left out, not a ZeroDivisionError.
    with open(CPU) as handle:
        profile = json.load(handle)
    profile["kernels"]["dense_add"]["points"][0]["seconds"] = 0
    zero = os.path.join(work, "zero.json")
    with open(zero, "w") as handle:
        json.dump(profile, handle)
    done = compare(zero, CPU)
    check(done.returncode == 0 and not done.stderr
          and re.search(r"^  dense_add .*\(18 points\)$", done.stdout, re.MULTILINE),
          f"a 0 s point before is left out of the ratios ({done.returncode}: {done.stderr!r})")
    # Small n, where several densities clamp to one k, times a shape more
    # than once: each profile's median of them counts, once. Keeping the
    # last timing would read 2 / 3 = 0.67 here.
    repeated = {}
    for name, timings in (("before", [1.0, 3.0]), ("after", [6.0, 2.0])):
        repeated[name] = os.path.join(work, f"repeated-{name}.json")
        with open(repeated[name], "w") as handle:
            json.dump({"kernels": {"topk_select": {"points": [
                {"n": 1024, "k": 1, "seconds": s} for s in timings]}}}, handle)
    done = compare(repeated["before"], repeated["after"])
    check(done.returncode == 0 and re.search(r"^  topk_select\s+2\.00\s+2\.00\s+2\.00\s+\(1 points\)$",
                                             done.stdout, re.MULTILINE),
          f"a shape timed twice: the medians' ratio, 2.00 over 1 point ({done.stdout!r})")
    done = compare(CPU, CPU, "--min-log2", "-1")
    check(not refusal_problems(done, ["--min-log2", "-1"]), f"--min-log2 -1: exit 2 ({done.stderr!r})")

    bad = os.path.join(work, "bad.json")
    # Each named the file but not the field ("not a device profile (KeyError(...))").
    for text, where in [('{"kernels": 3}', "/kernels: expected an object"),
                        ('{"name": "x"}', "/kernels: expected an object of measured kernels, "
                                          "got none"),
                        ('{"kernels": {"l2_norm": [1]}}', "/kernels/l2_norm: expected an object"),
                        ('{"kernels": {}, "compute": 7}', "/compute: expected an object")]:
        with open(bad, "w") as handle:
            handle.write(text)
        done = compare(CPU, bad)
        check(not refusal_problems(done, ["bad.json: " + where]),
              f"{text}: exit 2 and one line naming the file and field "
              f"({done.returncode}: {done.stderr!r})")

    # A point's seconds that are no time: the string was a TypeError traceback,
    # a negative time a ratio of -2.00.
    # A point of no size (n 0) is refused as well: its ratio would count.
    with open(CPU) as handle:
        profile = json.load(handle)
    profile["kernels"]["l2_norm"]["points"][3]["n"] = 0
    with open(bad, "w") as handle:
        json.dump(profile, handle)
    done = compare(CPU, bad)
    check(not refusal_problems(done, ["bad.json", "/kernels/l2_norm/points/3/n"]),
          f"n 0: exit 2, one line naming the point ({done.returncode}: {done.stderr!r})")
    for seconds in ("fast", -2, float("nan"), None):
        with open(CPU) as handle:
            profile = json.load(handle)
        profile["kernels"]["l2_norm"]["points"][3]["seconds"] = seconds
        with open(bad, "w") as handle:
            json.dump(profile, handle)
        done = compare(CPU, bad)
        # NaN is not JSON (json.dump writes it anyway): refused with the file.
        where = ("NaN is not a JSON number" if seconds != seconds
                 else "/kernels/l2_norm/points/3/seconds")
        problems = refusal_problems(done, ["bad.json", where])
        problems += ["it printed ratios"] if "l2_norm" in done.stdout else []
        check(not problems, f"seconds {seconds!r}: exit 2, one line naming the point ({problems})")

for flag in ("-h", "--help"):
    done = compare(flag)
    check(done.returncode == 0 and done.stdout.startswith("usage: ") and not done.stderr,
          f"{flag}: the usage on stdout, exit 0 ({done.returncode}: {done.stderr!r})")
done = compare(CPU)
check(not refusal_problems(done, ["compare_profiles.py: "]),
      f"one profile: exit 2, one line ({done.returncode}: {done.stderr!r})")

check.finish()
