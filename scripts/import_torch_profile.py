#!/usr/bin/python3
"""PyTorch profiler traces of a training run -> a gcsim measured run
(results/validation/README.md), for `gcsim validate` of your own training.

  # one trace per rank, from torch.profiler (prof.export_chrome_trace) or the
  # older torch.autograd.profiler, around a loop that names its phases
  /usr/bin/python3 scripts/import_torch_profile.py trace-rank*.json --layers layers.json \\
      --compressor dense --batch 32 --cluster my-cluster.json --out my-training.json
  # or add the run to a measured run imported from nccl-tests, to fit on one
  # and validate the other
  /usr/bin/python3 scripts/import_torch_profile.py trace-rank*.json --layers layers.json \\
      --compressor dense --batch 32 --into my-cluster.json --out my-cluster-and-training.json
  build/gcsim validate my-cluster-and-training.json --fit
  # or name the gcsim scenario that describes the run: validate then predicts
  # the whole iteration (compute model, buckets, overlap, any compressor)
  /usr/bin/python3 scripts/import_torch_profile.py trace-rank*.json --scenario my-run.json \\
      --into my-cluster.json --out my-cluster-and-training.json

Iterations: torch.profiler's `ProfilerStep#N` ranges (a schedule and
prof.step() once per iteration), or the range you name with --step (e.g.
`with record_function("iteration"):` around the loop's body). Phases: the
ranges named forward, backward, optimizer and compression (--forward etc.
rename them) that start inside an iteration; forward and backward must be
in every iteration. Communication: the union of the ranges of the
collectives inside the iteration, as c10d names them (`gloo:all_reduce`,
`nccl:all_reduce`, ...) and, where the trace holds GPU activity, NCCL's
kernels (`ncclKernel_*`, `ncclDevKernel_*`). Every figure is the mean over
the ranks' traces, iteration by iteration (as scripts/minicluster/run.py
takes its ranks'); the first --warmup iterations (default 1) are marked to
be left out of the comparison.

The ranges are the CPU's: on a GPU, a phase's range times its kernels'
launches unless the loop synchronizes at its end (torch.cuda.synchronize())
or the phase waits for the GPU anyway. When the collectives ran while the
backward pass was still running (DDP's buckets), the run is marked
`"overlap": true` and a line says so.

--scenario: the run names that scenario instead of a workload and a
compressor; `gcsim validate` simulates it as `gcsim run` does, on the
platform it validates, for the traces' iterations and --warmup.

--layers (without --scenario): the gradient's layers, a JSON list (or an object with "layers")
of {"name", "bytes"}, or of {"name", "parameters"} as in workloads/models/
(4 bytes each); e.g. from the model itself:
  json.dump([{"name": n, "bytes": 4 * p.numel()} for n, p in model.named_parameters()], f)

Bad input (a file that is not a trace, no iterations, a phase missing,
ranks with different numbers of iterations) exits with status 2 and one
line naming the file.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_write import WriteError, write_json_atomically  # noqa: E402
from import_benchmarks import BadInput, add_cluster_options, cluster_of  # noqa: E402

COMPRESSORS = ("dense", "topk", "cltk", "deft")  # what gcsim validate simulates
PHASES = ("forward", "backward", "optimizer", "compression")
REQUIRED_PHASES = ("forward", "backward")
COLLECTIVE_PREFIXES = ("gloo:", "nccl:", "ncclKernel", "ncclDevKernel")
PROFILER_STEP = re.compile(r"ProfilerStep#\d+$")
# Kineto repeats a CPU range on the GPU's timeline under this category.
GPU_COPY_OF_A_RANGE = "gpu_user_annotation"
# Collectives that ran during backward for more than this share of their time
# make the run an overlapped one.
OVERLAP_SHARE = 0.05


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as error:
        raise BadInput(f"{path}: cannot read: {error.strerror}")
    except ValueError as error:
        raise BadInput(f"{path}: not JSON: {error}")


def read_events(path):
    """The complete ('X') events of a Chrome trace: (name, category, start, end) in seconds."""
    trace = read_json(path)
    events = trace.get("traceEvents") if isinstance(trace, dict) else trace
    if not isinstance(events, list):
        raise BadInput(f"{path}: not a Chrome trace (expected a list of events or an object "
                       f"with \"traceEvents\")")
    if not events:
        raise BadInput(f"{path}: no events (torch.profiler writes an empty trace where torch "
                       f"has no Kineto, as Debian's: profile with torch.autograd.profiler)")
    complete = []
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        name, start, duration = event.get("name"), event.get("ts"), event.get("dur")
        if not isinstance(name, str) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in (start, duration)):
            continue
        if not (duration >= 0 and abs(start) < 1e18 and duration < 1e15):
            raise BadInput(f"{path}: event '{name}' at {start} us lasts {duration} us")
        complete.append((name, event.get("cat"), start * 1e-6, (start + duration) * 1e-6))
    if not complete:
        raise BadInput(f"{path}: no complete ('X') events: is this a profiler trace?")
    return complete


def union_length(intervals, low, high):
    """Seconds of [low, high) covered by the intervals."""
    clipped = sorted((max(a, low), min(b, high)) for a, b in intervals if b > low and a < high)
    total, reach = 0.0, low
    for a, b in clipped:
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


def intersection_length(first, second):
    """Seconds covered by both lists of intervals."""
    return sum(union_length(first, a, b) for a, b in merged(second))


def merged(intervals):
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def rank_iterations(path, args):
    """Per iteration of one rank's trace: its times, and how much of its
    communication ran during the backward pass."""
    events = read_events(path)
    cpu = [e for e in events if e[1] != GPU_COPY_OF_A_RANGE]
    if args.step:
        steps = [(a, b) for name, _, a, b in cpu if name == args.step]
        hint = f"no range named '{args.step}'"
    else:
        steps = [(a, b) for name, _, a, b in cpu if PROFILER_STEP.match(name)]
        hint = ("no ProfilerStep#N ranges (torch.profiler with a schedule and prof.step() "
                "once per iteration); name the range that holds one iteration with --step")
    if not steps:
        raise BadInput(f"{path}: {hint}")
    steps.sort()
    ranges = {phase: [(a, b) for name, _, a, b in cpu if name == getattr(args, phase)]
              for phase in PHASES}
    collectives = [(a, b) for name, _, a, b in events if name.startswith(COLLECTIVE_PREFIXES)]
    iterations = []
    for number, (low, high) in enumerate(steps, start=1):
        if not high > low:
            raise BadInput(f"{path}: iteration {number} lasts 0 us")
        times = {"iteration_s": high - low}
        for phase in PHASES:
            inside = [(a, b) for a, b in ranges[phase] if low <= a < high]
            if not inside and phase in REQUIRED_PHASES:
                raise BadInput(f"{path}: iteration {number} has no '{getattr(args, phase)}' "
                               f"range (wrap that phase in record_function(\""
                               f"{getattr(args, phase)}\"), or name yours with --{phase})")
            times[f"{phase}_s"] = union_length(inside, low, high)
        times["communication_s"] = union_length(collectives, low, high)
        backward = [(a, b) for a, b in ranges["backward"] if low <= a < high]
        in_step = [(max(a, low), min(b, high)) for a, b in collectives if b > low and a < high]
        during_backward = intersection_length(in_step, backward)
        iterations.append((times, during_backward))
    return iterations


def read_layers(path):
    data = read_json(path)
    layers = data.get("layers") if isinstance(data, dict) else data
    if not isinstance(layers, list) or not layers:
        raise BadInput(f"{path}: expected a non-empty list of layers (or an object with "
                       f"\"layers\")")
    out = []
    for i, layer in enumerate(layers):
        if not isinstance(layer, dict):
            raise BadInput(f"{path}: layer {i}: expected an object with \"name\" and \"bytes\"")
        size = layer.get("bytes")
        if size is None and isinstance(layer.get("parameters"), int):
            size = 4 * layer["parameters"]
        if not isinstance(size, int) or isinstance(size, bool) or not 0 < size <= 1 << 50:
            raise BadInput(f"{path}: layer {i}: expected \"bytes\" (or \"parameters\") as a "
                           f"positive integer, got {json.dumps(layer)[:80]}")
        out.append({"name": str(layer.get("name", f"layer{i}")), "bytes": size})
    return out


def training_entry(args):
    per_rank = [rank_iterations(path, args) for path in args.traces]
    counts = {len(iterations) for iterations in per_rank}
    if len(counts) > 1:
        found = ", ".join(f"{os.path.basename(p)}: {len(i)}" for p, i in zip(args.traces, per_rank))
        raise BadInput(f"{args.traces[0]}: the traces hold different numbers of iterations "
                       f"({found})")
    count = counts.pop()
    if args.warmup >= count:
        raise BadInput(f"--warmup {args.warmup} leaves none of the traces' {count} iterations "
                       f"to compare")
    iterations, overlapped = [], False
    for i in range(count):
        rows = [iterations_of_rank[i][0] for iterations_of_rank in per_rank]
        row = {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}
        row["compute_s"] = row["forward_s"] + row["backward_s"]
        # The traces count microseconds: nanoseconds keep every digit of a mean.
        row = {key: round(value, 9) for key, value in row.items()}
        iterations.append(row)
        during = sum(r[i][1] for r in per_rank) / len(per_rank)
        overlapped |= during > OVERLAP_SHARE * max(row["communication_s"], 1e-12)
    ranks = args.ranks or len(args.traces)
    if args.scenario:
        # The scenario says the workload, compressor and overlap; validate
        # resolves the path from the measured file's folder.
        if not os.path.isfile(args.scenario):
            raise BadInput(f"--scenario {args.scenario}: no such file")
        where = os.path.relpath(os.path.abspath(args.scenario),
                                os.path.dirname(os.path.abspath(args.out)))
        return {"name": args.name or os.path.splitext(os.path.basename(args.scenario))[0],
                "scenario": where, "ranks": ranks, "warmup_iterations": args.warmup,
                "iterations": iterations}
    if not args.layers:
        raise BadInput("--layers describes the gradient (or --scenario the whole run)")
    compressor = {"name": args.compressor}
    if args.compressor != "dense":
        if args.density is None or not 0 < args.density <= 1:
            raise BadInput(f"--compressor {args.compressor} needs --density in (0, 1]")
        compressor["density"] = args.density
    return {"name": args.name or args.compressor, "compressor": compressor, "ranks": ranks,
            "workload": {"model": args.model, "batch_per_worker": args.batch,
                         "layers": read_layers(args.layers)},
            "overlap": overlapped, "warmup_iterations": args.warmup,
            "iterations": iterations}


def measured_run(args, entry):
    sources = ", ".join(os.path.basename(p) for p in args.traces)
    if args.into:
        if args.cluster or args.bandwidth or args.latency or args.nodes:
            raise BadInput("--into takes the cluster of its measured run: leave out --cluster, "
                           "--nodes, --bandwidth and --latency")
        run = read_json(args.into)
        if not isinstance(run, dict) or run.get("format") != "gcsim-measured-run/1":
            raise BadInput(f"{args.into}: not a measured run (\"format\": "
                           f"\"gcsim-measured-run/1\")")
        if not isinstance(run.get("training", []), list):
            raise BadInput(f"{args.into}: /training is not a list")
        run["source"] = f"{run.get('source', '')}; training from scripts/import_torch_profile.py " \
                        f"({sources})".lstrip("; ")
        run["training"] = run.get("training", []) + [entry]
    else:
        run = {"format": "gcsim-measured-run/1",
               "name": os.path.splitext(os.path.basename(args.out))[0],
               "source": f"scripts/import_torch_profile.py from {sources}",
               "cluster": cluster_of(args, entry["ranks"]), "training": [entry]}
    nodes = run.get("cluster", {}).get("nodes") if isinstance(run.get("cluster"), dict) else None
    if isinstance(nodes, int) and nodes != entry["ranks"]:
        raise BadInput(f"{args.into or args.cluster or '--nodes'}: the cluster has {nodes} "
                       f"nodes, the run {entry['ranks']} ranks (gcsim validate simulates a "
                       f"rank per node)")
    return run


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("traces", nargs="+", metavar="TRACE", help="one Chrome trace per rank")
    parser.add_argument("--layers", help="the gradient's layers (JSON, above)")
    parser.add_argument("--scenario", help="the gcsim scenario of this run: validate then "
                                           "simulates its model, loop and compressor")
    parser.add_argument("--compressor", choices=COMPRESSORS, default="dense")
    parser.add_argument("--density", type=float, help="the compressor's density")
    parser.add_argument("--batch", type=int, default=1, help="samples per rank and iteration")
    parser.add_argument("--model", default="model", help="the model's name, for the record")
    parser.add_argument("--ranks", type=int, help="ranks (default: one per trace)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="first iterations left out of the comparison (default 1)")
    parser.add_argument("--step", help="the range of one iteration (default: ProfilerStep#N)")
    for phase in PHASES:
        parser.add_argument(f"--{phase}", default=phase,
                            help=f"the range of the {phase} phase (default '{phase}')")
    parser.add_argument("--into", help="add the run to this measured run (its cluster)")
    add_cluster_options(parser, "the ranks")
    parser.add_argument("--name", help="the training run's name (default: the compressor)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        if args.warmup < 0 or args.batch < 1 or (args.ranks is not None and args.ranks < 1):
            raise BadInput("--warmup is at least 0, --batch and --ranks at least 1")
        entry = training_entry(args)
        run = measured_run(args, entry)
    except BadInput as error:
        print(f"import_torch_profile.py: {error}", file=sys.stderr)
        return 2
    write_json_atomically(args.out, run, indent=1)
    compared = entry["iterations"][args.warmup:]
    mean = sum(i["iteration_s"] for i in compared) / len(compared)
    print(f"wrote {args.out}: {len(entry['iterations'])} iterations of {entry['ranks']} ranks, "
          f"{mean * 1e3:.3f} ms each after the warm-up")
    if entry.get("overlap"):
        print("note: the collectives ran during the backward pass (overlap); gcsim validate "
              "simulates the gradient's allreduce after it")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except WriteError as error:
        sys.exit(f"import_torch_profile.py: {error}")
