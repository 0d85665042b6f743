#!/usr/bin/python3
"""`gcsim profile show` refuses a device profile with one mistake in it with
exit status 2 and one line naming the file and the JSON path. Each bad
profile is a shipped one with one change, so the rest of it stays valid as
the shipped profiles move. `gcsim profile refit` refuses a derived profile,
which has no measured points to refit, the same way and writes nothing.

Usage: bad_profile_test.py PATH/TO/gcsim
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from checks import Checks, refusal_problems  # noqa: E402

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

check = Checks()


def missing_kernel(profile):
    del profile["kernels"]["sketch_query"]
    return "/kernels/sketch_query: required field is missing"


def negative_coefficient(profile):
    profile["kernels"]["l2_norm"]["fit"]["segments"][0]["per_n_s"] = -1e-12
    return "/kernels/l2_norm/fit/segments/0/per_n_s: coefficient"


def non_monotone(profile):
    segments = profile["kernels"]["l2_norm"]["fit"]["segments"]
    second = dict(segments[0], per_n_s=segments[0]["per_n_s"] / 2)
    segments[0]["up_to"] = 262144
    segments.append(second)
    return "/kernels/l2_norm/fit/segments/1: fit is not monotone"


def unknown_provenance(profile):
    profile["provenance"]["kind"] = "estimated"
    return '/provenance/kind: unknown value "estimated"'


V100 = os.path.join(ROOT, "platforms", "devices", "v100.json")
with open(V100) as handle:
    shipped = handle.read()
with tempfile.TemporaryDirectory() as tmp:
    refit = os.path.join(tmp, "refit.json")
    result = subprocess.run([GCSIM, "profile", "refit", V100, "--out", refit],
                            capture_output=True, text=True, timeout=60)
    problems = refusal_problems(result, [f"{V100}: /kernels/topk_select/points: no measured points"],
                                result_file=refit)
    check(not problems, "refit of a derived profile: " + ("; ".join(problems) or result.stderr.strip()))
    for mistake in (missing_kernel, negative_coefficient, non_monotone, unknown_provenance):
        profile = json.loads(shipped)
        expected = mistake(profile)
        path = os.path.join(tmp, f"{mistake.__name__}.json")
        with open(path, "w") as handle:
            json.dump(profile, handle, indent=1)
        result = subprocess.run([GCSIM, "profile", "show", path], capture_output=True,
                                text=True, timeout=60)
        problems = refusal_problems(result, [f"{path}: {expected}"])
        check(not problems, f"{mistake.__name__}: " + ("; ".join(problems) or result.stderr.strip()))
check.finish()
