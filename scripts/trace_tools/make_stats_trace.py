#!/usr/bin/python3
"""Makes a statistics-only trace (small enough for git) from a full one:
the manifest with has_tensors=false, and statistics.json holding
`gcsim inspect --json` of every captured iteration.

Usage: /usr/bin/python3 scripts/trace_tools/make_stats_trace.py GCSIM SOURCE_TRACE OUT_DIR
e.g.   ... build/gcsim workloads/traces/cache/fmnist-resnet18-8w workloads/traces/fmnist-resnet18-stats
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from atomic_write import WriteError, write_atomically  # noqa: E402
from capture_traces import dump_manifest  # noqa: E402


def main(gcsim, source, out):
    with open(os.path.join(source, "manifest.json")) as stream:
        manifest = json.load(stream)
    per_iteration = []
    for iteration in manifest["iterations"]:
        with tempfile.NamedTemporaryFile(suffix=".json") as report:
            subprocess.run([gcsim, "inspect", source, "--iteration", str(iteration), "--json",
                            report.name], check=True, stdout=subprocess.DEVNULL)
            data = json.load(open(report.name))
        per_iteration.append(dict(iteration=iteration, layers=[
            {k: layer[k] for k in ("name", "params", "k", "norm", "top_mass", "overlap")}
            for layer in data["layers"]]))
    os.makedirs(out, exist_ok=True)
    manifest["has_tensors"] = False
    manifest["comment"] = ("statistics only (no .npy files); statistics.json has gcsim inspect's "
                           "per-layer statistics of every captured iteration; the full trace: "
                           "/usr/bin/python3 scripts/capture_traces.py --preset "
                           + os.path.basename(os.path.normpath(source)))
    write_atomically(os.path.join(out, "manifest.json"), dump_manifest(manifest))
    statistics = dict(source=os.path.basename(os.path.normpath(source)), top_fraction=0.01,
                      definitions=dict(
                          norm="mean over workers of the layer gradient's L2 norm",
                          top_mass="mean over workers of the share of squared L2 mass in the "
                                   "top k = ceil(1% of params) elements by magnitude",
                          overlap="mean over worker pairs of |top_a & top_b| / k"),
                      iterations=per_iteration)
    write_atomically(os.path.join(out, "statistics.json"),
                     dump_manifest(statistics).replace('"iterations": [\n    {', '"iterations": [\n    {'))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    try:
        main(*sys.argv[1:])
    except WriteError as error:
        sys.exit(f"make_stats_trace.py: {error}")
