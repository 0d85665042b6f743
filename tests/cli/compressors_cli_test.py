#!/usr/bin/python3
"""`gcsim compressors`: it lists every compressor `gcsim run` knows, once;
each one's defaults are what a run of it with no parameters records; its
--markdown is compressors/README.md's parameter tables (they had drifted
from the code while said to be generated from it); an unknown name is exit 2
with one line and a did-you-mean.

Usage: compressors_cli_test.py PATH/TO/gcsim
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
QUICKSTART = os.path.join(ROOT, "workloads", "scenarios", "quickstart.json")

check = Checks()


def gcsim(*args, cwd=None):
    return subprocess.run([GCSIM, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


listed = gcsim("compressors")
names = [line.split()[0] for line in listed.stdout.splitlines()
         if line and not line.startswith(" ") and not line.startswith("gcsim ")]
# What gcsim run knows: its refusal of an unknown compressor lists them.
refused = gcsim("run", QUICKSTART, "--out", "/nonexistent/never", "--set",
                'compressor={"name": "no-such-compressor"}')
known = re.search(r"\(known: ([^)]*)\)", refused.stderr)
check(listed.returncode == 0 and known is not None
      and names == known.group(1).split(", "),
      f"gcsim compressors lists what gcsim run knows, once each, in order: {names} against "
      f"{known.group(1) if known else refused.stderr.strip()!r}")

markdown = gcsim("compressors", "--markdown")
with open(os.path.join(ROOT, "compressors", "README.md")) as handle:
    readme = handle.read()
start = readme.index("#### `", readme.index("### Parameters (`gcsim compressors --markdown`)"))
section = readme[start:readme.index("\n## ", start)]
check(markdown.returncode == 0 and section.strip() == markdown.stdout.strip(),
      "compressors/README.md's parameter tables are gcsim compressors --markdown "
      "(rerun it and paste the output there)")

one = gcsim("compressors", "deft", "--markdown")
check(one.returncode == 0 and one.stdout.startswith("#### `deft`")
      and one.stdout.count("#### ") == 1 and one.stdout in markdown.stdout,
      "NAME --markdown is that compressor's section alone")

# Each compressor's printed defaults are what a run of it records.
with tempfile.TemporaryDirectory() as work:
    for name in names:
        described = gcsim("compressors", name)
        shown = dict(re.findall(r"^    (\w+) = (\S+)", described.stdout, re.M))
        shown = {key: json.loads(value) for key, value in shown.items()}
        out = os.path.join(work, name)
        # IWP sends its first 5 iterations dense: one more to run it. The
        # small CNN's trace runs all of them in seconds.
        ran = gcsim("run", QUICKSTART, "--out", out, "--quiet", "--set", "platform.nodes=2",
                    "--set", "workload=workloads/traces/fmnist-cnn-16w",
                    "--set", "training.iterations=6", "--set",
                    "compressor=" + json.dumps({"name": name}))
        recorded = None
        if ran.returncode == 0:
            with open(os.path.join(out, "result.json")) as handle:
                recorded = json.load(handle)["model"].get("compressor_params", {})
        check(described.returncode == 0 and described.stdout.startswith(name + ": ")
              and recorded == shown,
              f"{name}: the defaults gcsim compressors prints are what a run records: "
              f"{shown} against {recorded} ({ran.stderr.strip()[:200]})")

slip = gcsim("compressors", "topkk")
check(slip.returncode == 2 and slip.stderr.count("\n") == 1
      and slip.stderr.startswith("gcsim compressors: unknown compressor 'topkk'; did you mean "
                                 "'topk'?"),
      f"an unknown name is exit 2 with one line and a did-you-mean: {slip.stderr!r}")
check.finish()
