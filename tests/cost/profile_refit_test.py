#!/usr/bin/python3
"""gcsim profile refit replaces what the fitter now does better and nothing
else: the H200 profile with its sample_threshold fit put back to the one
smooth piece in n it was calibrated with is refitted to the committed three
pieces in k, the rest of the file keeps its keys in their order and its
values, and a second refit changes nothing.

Usage: profile_refit_test.py PATH/TO/gcsim
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from checks import Checks  # noqa: E402

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
H200 = os.path.join(ROOT, "platforms", "devices", "h200.json")
# sample_threshold's fit as gcsim_calibrate_cuda wrote it (2026-11-30), when
# pieces could only be in n.
CALIBRATED_FIT_SEGMENTS = [{"latency_s": 3.14753e-05, "per_k_log2k_s": 0.0,
                            "per_k_s": 6.931907e-11, "per_n_s": 2.713086e-13}]

check = Checks()


def ordered(path):
    """The file's JSON with every object as its list of (key, value) pairs."""
    with open(path) as handle:
        return json.load(handle, object_pairs_hook=list)


def refit(source, target):
    return subprocess.run([GCSIM, "profile", "refit", source, "--out", target],
                          capture_output=True, text=True, timeout=120)


with open(H200) as handle:
    committed = json.load(handle)

with tempfile.TemporaryDirectory() as work:
    old = json.loads(json.dumps(committed))
    fit = old["kernels"]["sample_threshold"]["fit"]
    fit.pop("piecewise_in")
    fit["segments"] = CALIBRATED_FIT_SEGMENTS
    before = os.path.join(work, "before.json")
    with open(before, "w") as handle:
        handle.write(json.dumps(old, indent=1) + "\n")

    after = os.path.join(work, "after.json")
    done = refit(before, after)
    check(done.returncode == 0 and done.stdout.splitlines() == [
        "refitted sample_threshold: 3 piece(s) in k, was 1 in n",
        f"1 of 14 curves changed; wrote {after}"],
          f"only sample_threshold is refitted: {done.returncode} {done.stdout!r} {done.stderr!r}")
    if done.returncode == 0:
        with open(after) as handle:
            text = handle.read()
        # Values and key order; the JSON library may write a rare number with
        # more digits than Python did (0.0006874440000000001), the same double.
        check(ordered(after) == ordered(H200),
              "the refitted file is the committed profile: its keys in the same order, every "
              "value the same")
        again = os.path.join(work, "again.json")
        done = refit(after, again)
        check(done.returncode == 0 and done.stdout.startswith("0 of 14 curves changed"),
              f"a second refit changes nothing: {done.stdout!r}")
        with open(again) as handle:
            check(handle.read() == text, "and writes the same bytes")

    # A point of 1e-300 s left the fitter without a curve: exit 1, an
    # "internal error" naming no file or field.
    tiny = json.loads(json.dumps(committed))
    tiny["kernels"]["sample_threshold"]["points"][0]["seconds"] = 1e-300
    tiny_file = os.path.join(work, "tiny.json")
    with open(tiny_file, "w") as handle:
        json.dump(tiny, handle)
    target = os.path.join(work, "tiny-refit.json")
    done = refit(tiny_file, target)
    check(done.returncode == 2 and done.stderr.strip() == (
        f"{tiny_file}: /kernels/sample_threshold/points/0/seconds: expected a time in "
        "seconds in [1e-12, 1e9], got number 1e-300") and not os.path.exists(target),
          f"a point faster than 1 ps is refused at its field: {done.returncode} {done.stderr!r}")

    # Nothing to refit: the file's own bytes. The JSON library wrote three of
    # h200.json's model times with more digits (0.00025551700000000003).
    for name in ("h200.json", "h200-tf32.json", "h200-bf16.json"):
        source = os.path.join(ROOT, "platforms", "devices", name)
        target = os.path.join(work, "same-" + name)
        done = refit(source, target)
        with open(source, "rb") as a, open(target, "rb") as b:
            check(done.returncode == 0 and a.read() == b.read(),
                  f"a refit of {name} that changes no curve writes its bytes unchanged")

    # A measured profile's blank command was dropped by the refit, whose own
    # check then named the output file for a missing field.
    blank = json.loads(json.dumps(committed))
    blank["provenance"]["command"] = ""
    blank_file = os.path.join(work, "blank.json")
    with open(blank_file, "w") as handle:
        json.dump(blank, handle)
    target = os.path.join(work, "blank-refit.json")
    done = refit(blank_file, target)
    shown = subprocess.run([GCSIM, "profile", "show", blank_file], capture_output=True, text=True,
                           timeout=120)
    check(done.returncode == 2 and shown.returncode == 2
          and done.stderr.startswith(f"{blank_file}: /provenance/command: empty")
          and not os.path.exists(target),
          f"a blank command is refused at its field, by show too: {done.stderr!r} "
          f"{shown.stderr!r}")

    # A range no measurement had makes the refitted curve fail its check: the
    # input is named, not the output that was not written.
    with open(os.path.join(ROOT, "platforms", "devices", "cpu-amd-epyc-zen4.json")) as handle:
        wide = json.load(handle)
    wide["kernels"]["sample_threshold"]["fit"]["range"]["k"][1] = 1e300
    wide_file = os.path.join(work, "wide.json")
    with open(wide_file, "w") as handle:
        json.dump(wide, handle)
    target = os.path.join(work, "wide-refit.json")
    done = refit(wide_file, target)
    check(done.returncode == 2 and done.stderr.startswith(f"{wide_file}: /kernels/sample_threshold/")
          and "nothing written" in done.stderr and not os.path.exists(target),
          f"a refit that fails its check names the input: {done.stderr!r}")

check.finish()
