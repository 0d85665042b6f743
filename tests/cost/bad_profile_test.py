#!/usr/bin/python3
"""`gcsim profile show` refuses a device profile with a mistake in it with
exit status 2 and one line naming the file and the JSON path: the shipped
V100 profile without a kernel (the rest stays valid as the shipped profiles
move; profile_test.cpp's "schema errors" case has the loader's other
refusals, message by message). `gcsim profile refit` refuses a derived
profile, which has no measured points to refit, the same way and writes
nothing.

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
    profile = json.loads(shipped)
    del profile["kernels"]["sketch_query"]
    path = os.path.join(tmp, "missing-kernel.json")
    with open(path, "w") as handle:
        json.dump(profile, handle, indent=1)
    result = subprocess.run([GCSIM, "profile", "show", path], capture_output=True, text=True,
                            timeout=60)
    problems = refusal_problems(result, [f"{path}: /kernels/sketch_query: required field is missing"])
    check(not problems, "a profile without a kernel: " + ("; ".join(problems) or result.stderr.strip()))
check.finish()
