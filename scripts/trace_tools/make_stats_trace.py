#!/usr/bin/python3
"""Makes a statistics-only trace (small enough for git) from a full one:
the manifest with has_tensors=false, and statistics.json holding
`gcsim inspect --json` of every captured iteration.

Usage: /usr/bin/python3 scripts/trace_tools/make_stats_trace.py GCSIM SOURCE_TRACE OUT_DIR
e.g.   ... build/gcsim workloads/traces/cache/fmnist-resnet18-8w workloads/traces/fmnist-resnet18-stats

The two files appear together or not at all: they are written into a new
folder beside OUT_DIR, which then replaces it. An OUT_DIR that holds anything
else, is SOURCE_TRACE or is inside it, is refused (exit 2), as is a trace
gcsim inspect refuses; nothing is written then.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from atomic_write import atomic_folder, nearest_existing, write_atomically  # noqa: E402
from capture_traces import dump_manifest  # noqa: E402
from script_input import BadInput, Parser, read_json_object, run_script  # noqa: E402

OUTPUTS = ("manifest.json", "statistics.json")


def parse_args(argv):
    parser = Parser(description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("gcsim", metavar="GCSIM", help="the gcsim executable")
    parser.add_argument("source", metavar="SOURCE_TRACE", help="a full trace (with tensors)")
    parser.add_argument("out", metavar="OUT_DIR",
                        help="folder to write manifest.json and statistics.json into "
                             "(replaced whole if it holds only those)")
    args = parser.parse_args(argv)
    for name, value in (("GCSIM", args.gcsim), ("SOURCE_TRACE", args.source), ("OUT_DIR", args.out)):
        if not value:
            raise BadInput(f"{name}: expected a path, got ''")
    if not os.path.isdir(args.source):
        raise BadInput(f"SOURCE_TRACE {args.source}: not a trace folder")
    # Links followed, as the writes would follow them; a folder inside the
    # trace was written into it (and gcsim then read the statistics as
    # part of the trace's folder).
    source, out = os.path.realpath(args.source), os.path.realpath(args.out)
    if out == source:
        raise BadInput(f"OUT_DIR {args.out} is SOURCE_TRACE; the source trace's manifest "
                       "would be rewritten")
    if os.path.commonpath([source, out]) == source:
        raise BadInput(f"OUT_DIR {args.out} is inside SOURCE_TRACE {args.source}; write the "
                       "statistics-only trace outside the trace it is made from")
    if os.path.exists(args.out):
        if not os.path.isdir(args.out):
            raise BadInput(f"OUT_DIR {args.out}: not a folder")
        others = sorted(set(os.listdir(args.out)) - set(OUTPUTS))
        if others:
            raise BadInput(f"OUT_DIR {args.out}: holds {', '.join(others[:3])}, not only "
                           f"{' and '.join(OUTPUTS)}; not replaced")
    else:
        # Said now, not as "File exists" once every iteration is inspected.
        existing = nearest_existing(args.out)
        if not os.path.isdir(existing):
            raise BadInput(f"OUT_DIR {args.out}: cannot be made, {existing} is not a folder")
    return args


def read_manifest(source):
    path = os.path.join(source, "manifest.json")
    manifest = read_json_object(path, "an object (a trace manifest)")
    if manifest.get("has_tensors") is False:
        raise BadInput(f"SOURCE_TRACE {source}: a statistics-only trace (has_tensors false); "
                       "give the full trace it was made from")
    iterations = manifest.get("iterations")
    # As gcsim's reader takes them (a -1 got gcsim inspect's --iteration
    # refusal, which named no manifest).
    if (not isinstance(iterations, list) or not iterations
            or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0
                       for i in iterations)):
        raise BadInput(f"{path}: /iterations: expected the captured iterations, got "
                       f"{iterations!r}")
    return manifest


def inspect(gcsim, source, iteration, report):
    """`gcsim inspect --json` of one iteration; its failure is BadInput (exit 2,
    the trace) or SystemExit (exit 1), one line with gcsim's own."""
    command = [gcsim, "inspect", source, "--iteration", str(iteration), "--json", report]
    try:
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    except OSError as error:
        raise BadInput(f"GCSIM: cannot run {gcsim}: {error.strerror}") from error
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no message (is GCSIM gcsim?)"])[-1]
        line = f"gcsim inspect {source} --iteration {iteration}: status {done.returncode}: {said}"
        if done.returncode == 2:
            raise BadInput(line)
        sys.exit(f"make_stats_trace.py: {line}")
    try:
        with open(report) as stream:
            return [{k: layer[k] for k in ("name", "params", "k", "norm", "top_mass", "overlap")}
                    for layer in json.load(stream)["layers"]]
    except (OSError, ValueError, KeyError, TypeError) as error:
        sys.exit(f"make_stats_trace.py: {gcsim} inspect --json wrote no per-layer report "
                 f"({error!r})")


def write_together(out, files):
    """Writes {name: text} as the folder `out`, all files or none (the old
    one, which parse_args saw holds only these files, is replaced)."""
    with atomic_folder(out) as staging:
        for name, text in files.items():
            write_atomically(os.path.join(staging, name), text)


def main(argv):
    args = parse_args(argv)
    gcsim, source, out = args.gcsim, args.source, args.out
    manifest = read_manifest(source)
    per_iteration = []
    with tempfile.TemporaryDirectory() as scratch:
        for iteration in manifest["iterations"]:
            per_iteration.append(dict(iteration=iteration, layers=inspect(
                gcsim, source, iteration, os.path.join(scratch, f"report-{iteration}.json"))))
    manifest["has_tensors"] = False
    # The command that captured the full trace, as its manifest recorded it:
    # a preset named after the folder need not exist.
    capture = manifest.get("capture")
    made_by = capture.get("command") if isinstance(capture, dict) else None
    manifest["comment"] = ("statistics only (no .npy files); statistics.json has gcsim inspect's "
                           "per-layer statistics of every captured iteration; the full trace: "
                           + (made_by if isinstance(made_by, str) and made_by else
                              os.path.basename(os.path.normpath(source))
                              + " (its capture command is not recorded)"))
    statistics = dict(source=os.path.basename(os.path.normpath(source)), top_fraction=0.01,
                      definitions=dict(
                          norm="mean over workers of the layer gradient's L2 norm",
                          top_mass="mean over workers of the share of squared L2 mass in the "
                                   "top k = ceil(1% of params) elements by magnitude",
                          overlap="mean over worker pairs of |top_a & top_b| / k"),
                      iterations=per_iteration)
    write_together(out, {
        "manifest.json": dump_manifest(manifest),
        "statistics.json": dump_manifest(statistics)})


if __name__ == "__main__":
    run_script(main, sys.argv[1:])
