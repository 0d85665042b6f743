#!/usr/bin/python3
"""PyTorch profiler traces of a training run -> a gcsim measured run
(results/validation/README.md), for `gcsim validate` of your own training.

  # one trace per rank (JSON, or gzipped: tensorboard_trace_handler's use_gzip), from
  # torch.profiler (prof.export_chrome_trace, tensorboard_trace_handler) or
  # the older torch.autograd.profiler
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
`with record_function("iteration"):` around the loop's body); an
iteration's time is its range's. A last ProfilerStep holding no forward or
backward pass (torch.profiler without a schedule records one after the
loop) is left out, and a line says so. Phases: the ranges named forward,
backward, optimizer and compression (--forward etc. rename them; in a
Kineto trace, record_function's ranges, not an operator of that name) that
start inside an iteration; forward and backward must be in every
iteration. Every figure is the mean over the ranks' traces, iteration by
iteration (as scripts/minicluster/run.py takes its ranks'); the first
--warmup iterations (default 1) are marked to be left out of the
comparison. A collective that ran while the backward pass was still
running (DDP's buckets) marks the run `"overlap": true`, and a line says
so.

Two clocks (--clock; auto takes gpu where the trace holds GPU kernels
linked to their launches, as torch.profiler records them with
ProfilerActivity.CUDA, and cpu otherwise):
  gpu  a phase is the GPU's busy time in the kernels and copies that were
       launched inside its range (from any thread: autograd launches the
       backward's from its own), wherever on the GPU's timeline they ran;
       what was launched outside every range counts as forward before the
       backward range and as optimizer after it;
       communication is the busy time of NCCL's kernels (`ncclKernel_*`,
       `ncclDevKernel_*`) launched in the iteration, with gloo's CPU
       ranges (`gloo:*`); c10d's `nccl:*` ranges only enqueue them. A line
       says how much of the iterations the GPU was busy: where it idles,
       the run waited on its CPU (launches, data loading, the profiler
       itself), which gcsim does not simulate. A trace without forward
       and backward ranges is read by the ranges PyTorch's profiler names
       by itself: backward is what autograd's functions
       (`autograd::engine::evaluate_function: *`) launched, optimizer what
       `Optimizer.step#*` and `Optimizer.zero_grad#*` launched and what
       came after backward, forward the rest before backward.
  cpu  a phase is its range, communication the union of the collectives'
       ranges (c10d's `gloo:*` and `nccl:*`, and NCCL's kernels where the
       trace has them) inside the iteration. On a GPU a range times its
       kernels' launches unless the loop synchronizes at its end.

--scenario: the run names that scenario instead of a workload and a
compressor (--compressor and its settings are refused beside it); `gcsim
validate` simulates it as `gcsim run` does, on the platform it validates,
for the traces' iterations and --warmup.

--layers (without --scenario): the gradient's layers, a JSON list (or an object with "layers")
of {"name", "bytes"}, or of {"name", "parameters"} as in workloads/models/
(4 bytes each), each with its tensor's "shape" or none (powersgd needs them);
e.g. from the model itself:
  json.dump([{"name": n, "bytes": 4 * p.numel(), "shape": list(p.shape)}
             for n, p in model.named_parameters()], f)
--compressor: dense, topk, cltk, deft (with --density), or DDP's hooks fp16
and powersgd (--matrix-rank, --start-iteration: the hook's settings).
A dense run's GPU trace whose NCCL kernels record their messages (as
recent PyTorch does: "In msg nelems", "dtype") needs no --layers: the gradient is
then the allreduces of the first compared iteration of the first trace, a
layer per bucket (bucket0 the first allreduced, DDP's last layers), each
with the backward time from the previous bucket's data ready to its own
(`backward_s`): gcsim validate then reduces each bucket as the backward
pass reaches it, as DDP does.

Bad input (a file that is not a trace, not UTF-8, a corrupt gzip stream or
JSON nested too deeply, no iterations, a phase missing, ranks with
different numbers of iterations, a count, bandwidth or latency gcsim would
refuse) exits with status 2 and one line naming the file or option.
"""
import argparse
import bisect
import collections
import gzip
import io
import json
import math
import os
import re
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_write import write_json_atomically  # noqa: E402
from import_benchmarks import (MAX_BYTES, MAX_RANKS, add_cluster_options,  # noqa: E402
                               check_cluster, cluster_of, placed_cluster, workers_of)
from script_input import (MEASURED_RUN_FORMAT, BadInput, Parser, integer_in,  # noqa: E402
                          json_kind, open_input, parse_json, read_json_object,
                          refuse_folder_output, refuse_output_over_inputs, run_script,
                          tensor_shape_problem)

# What gcsim validate simulates: the mini-cluster's, and DDP's hooks.
COMPRESSORS = ("dense", "topk", "cltk", "deft", "fp16", "powersgd")
BY_DENSITY = ("topk", "cltk", "deft")
PHASES = ("forward", "backward", "optimizer", "compression")
REQUIRED_PHASES = ("forward", "backward")
NCCL_KERNELS = ("ncclKernel", "ncclDevKernel")
COLLECTIVE_PREFIXES = ("gloo:", "nccl:") + NCCL_KERNELS
PROFILER_STEP = re.compile(r"ProfilerStep#\d+$")
# Kineto repeats a CPU range on the GPU's timeline under this category.
GPU_COPY_OF_A_RANGE = "gpu_user_annotation"
# Kineto's categories (older traces capitalize them) of what ran on the GPU
# and of the CUDA calls that launched it; "correlation" links the two.
GPU_ACTIVITIES = ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset")
LAUNCHES = ("cuda_runtime", "cuda_driver", "runtime")
# What PyTorch's profiler names by itself: the autograd engine's functions
# (the backward pass) and the optimizers' steps.
AUTOGRAD = ("autograd::engine::evaluate_function: ",)
OPTIMIZER = ("Optimizer.step#", "Optimizer.zero_grad#")
# Collectives that ran during backward for more than this share of their time
# make the run an overlapped one.
OVERLAP_SHARE = 0.05
# Below this share of the iterations on the GPU, the run waited on its CPU.
GPU_BUSY_NOTE = 0.5
# What gcsim validate reads (sim/validate/measured_run.cpp): batch_per_worker
# and warmup_iterations up to 2^30, times up to 1e9 s (json_reader.hpp).
MAX_COUNT = 1 << 30
LONGEST_SECONDS = 1e9

Event = collections.namedtuple("Event", "name category start end correlation message")
# What recent PyTorch records of an NCCL kernel's message: the
# collective, its elements and their type. Bytes per element by type name.
DTYPE_BYTES = {"float": 4, "half": 2, "bfloat16": 2, "double": 8, "int": 4, "long": 8,
               "short": 2, "byte": 1, "char": 1, "bool": 1, "float8_e4m3fn": 1,
               "float8_e5m2": 1}
# One iteration of one rank: its times, the seconds of communication during
# the backward pass, the GPU's busy share (None on the CPU's clock) and, per
# NCCL allreduce it launched, its (collective, elements, dtype) and the
# backward seconds before its data was ready; and per phase, the GPU's
# seconds by kernel_kind.
Iteration = collections.namedtuple("Iteration",
                                   "times during_backward gpu_busy allreduced by_kind")
# How the phases were read: on the "gpu" or "cpu" clock, from the named
# "ranges" or "autograd"'s, and the GPU's busy share of the compared
# iterations (None on the CPU's clock), and how many NCCL buckets gave the
# gradient's layers (0: --layers or a scenario did), and per phase the GPU's
# mean seconds by kernel_kind over the compared iterations and traces.
Reading = collections.namedtuple("Reading", "clock found gpu_busy buckets by_kind")


def read_json(path, written_by_hand=False):
    """A JSON file, or a gzipped one (`*.pt.trace.json.gz`, as PyTorch's
    tensorboard_trace_handler writes them with use_gzip=True).
    written_by_hand: read as gcsim reads its inputs (a key twice in one
    object refused); a profiler's trace, millions of objects no one typed,
    is read plainly."""
    try:
        with open_input(path, "rb") as raw:
            packed = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            stream = gzip.GzipFile(fileobj=raw, mode="rb") if packed else raw
            # utf-8-sig: a byte-order mark skipped, as gcsim skips it.
            with io.TextIOWrapper(stream, encoding="utf-8-sig") as f:
                return parse_json(f.read(), path) if written_by_hand else json.load(f)
    except gzip.BadGzipFile as error:
        raise BadInput(f"{path}: not gzip: {error}")
    except (EOFError, zlib.error) as error:
        raise BadInput(f"{path}: a corrupt gzip stream: {str(error) or 'it ends early'}")
    except OSError as error:
        raise BadInput(f"{path}: cannot read: {error.strerror or error}")
    except UnicodeDecodeError as error:
        raise BadInput(f"{path}: not UTF-8 text (byte {error.start}): not JSON")
    except ValueError as error:
        raise BadInput(f"{path}: not JSON: {error}")
    except RecursionError:
        raise BadInput(f"{path}: JSON nested deeper than Python reads (no trace, list of layers or "
                       f"measured run is)")


def distributed_info(path, trace):
    """(rank, world size) from Kineto's "distributedInfo", or None."""
    info = trace.get("distributedInfo") if isinstance(trace, dict) else None
    if not isinstance(info, dict) or "world_size" not in info:
        return None
    rank, world = info.get("rank"), info.get("world_size")
    for key, value in (("world_size", world), ("rank", rank)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise BadInput(f"{path}: /distributedInfo/{key}: expected an integer, got "
                           f"{json.dumps(value)} ({json_kind(value)})")
    if not 0 <= rank < world:
        raise BadInput(f"{path}: /distributedInfo/rank: expected an integer in [0, world_size "
                       f"{world}), got {rank}")
    return rank, world


def read_events(path):
    """The complete ('X') events of a Chrome trace, times in seconds, and
    its (rank, world size) where Kineto recorded them."""
    trace = read_json(path)
    events = trace.get("traceEvents") if isinstance(trace, dict) else trace
    if not isinstance(events, list):
        raise BadInput(f"{path}: not a Chrome trace (expected a list of events or an object "
                       f"with \"traceEvents\")")
    if not events:
        raise BadInput(f"{path}: no events: nothing was profiled (was the profiler's "
                       f"schedule in its active steps when the trace was written?)")
    complete = []
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        name, start, duration = event.get("name"), event.get("ts"), event.get("dur")
        # A complete event has all three (one of a string time was left out
        # without a word, an optimizer range with it).
        if not isinstance(name, str):
            raise BadInput(f"{path}: a complete ('X') event whose name is "
                           f"{json_kind(name) if 'name' in event else 'missing'}")
        for field, value in (("ts", start), ("dur", duration)):
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise BadInput(f"{path}: event '{name[:60]}': {field} is "
                               f"{json_kind(value) if field in event else 'missing'}, "
                               "expected microseconds")
        if not (duration >= 0 and abs(start) < 1e18 and duration < 1e15):
            raise BadInput(f"{path}: event '{name}' at {start} us lasts {duration} us")
        details = event.get("args")
        correlation = details.get("correlation") if isinstance(details, dict) else None
        category = event.get("cat")
        message = None
        if isinstance(details, dict) and name.startswith(NCCL_KERNELS):
            message = (details.get("Collective name"), details.get("In msg nelems"),
                       details.get("dtype"))
        complete.append(Event(name, category.lower() if isinstance(category, str) else None,
                              start * 1e-6, (start + duration) * 1e-6,
                              correlation if isinstance(correlation, int) else None, message))
    if not complete:
        raise BadInput(f"{path}: no complete ('X') events: is this a profiler trace?")
    return complete, distributed_info(path, trace)


# What a kernel computes, by its name, first match: batch and layer norms
# before the convolutions (cuDNN names both), copies by their category.
KERNEL_KINDS = (("norm", ("bn_", "batch_norm", "batchnorm", "layer_norm", "layernorm")),
                ("conv/gemm", ("conv", "cudnn", "cutlass", "gemm", "xmma", "wgrad", "dgrad",
                               "sm80_", "sm90_", "ampere_", "volta_", "turing_")),
                ("pool", ("pool",)),
                ("elementwise", ("elementwise", "threshold", "relu")))


def kernel_kind(event):
    if event.category != "kernel":
        return "copy"
    name = event.name.lower()
    return next((kind for kind, parts in KERNEL_KINDS if any(p in name for p in parts)), "other")


def launched_on_gpu(events):
    """(launch time, event) of every kernel and copy whose launch the trace holds."""
    launches = {e.correlation: e.start for e in events
                if e.category in LAUNCHES and e.correlation is not None}
    return [(launches[e.correlation], e) for e in events
            if e.category in GPU_ACTIVITIES and e.correlation in launches]


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


class Ranges:
    """Merged intervals, to ask whether a time falls in one of them."""

    def __init__(self, intervals):
        self.merged = merged(intervals)
        self.starts = [a for a, _ in self.merged]

    def __contains__(self, t):
        i = bisect.bisect_right(self.starts, t) - 1
        return i >= 0 and t < self.merged[i][1]


def by_position(phases, launched, taken, backward_from, backward_to):
    """Adds to `phases` what was launched outside every range `taken` by a
    phase: forward before the backward pass's window [backward_from,
    backward_to], backward inside it, optimizer after it (a loss outside
    the forward range, DDP's copies between autograd's functions, a
    gradient clipping)."""
    for t, e in launched:
        if t in taken:
            continue
        phase = "forward" if t < backward_from else "backward" if t <= backward_to else "optimizer"
        phases[phase].append(e)
    return phases


def named_phases(path, number, args, ranges, low, high, launched):
    """{phase: ...} from the ranges named by --forward etc. that start in
    the iteration [low, high): on the CPU's clock (`launched` None) the
    ranges themselves, (start, end) each; on the GPU's the GPU activities
    (events) launched inside them, and by_position's phase for the rest."""
    phases, named = {}, []
    for phase in PHASES:
        inside = [(a, min(b, high)) for a, b in ranges[phase] if low <= a < high]
        if not inside and phase in REQUIRED_PHASES:
            raise BadInput(f"{path}: iteration {number} has no '{getattr(args, phase)}' "
                           f"range (wrap that phase in record_function(\""
                           f"{getattr(args, phase)}\"), or name yours with --{phase})")
        if launched is not None:
            within = Ranges(inside)
            named += inside
            inside = [e for t, e in launched if t in within]
            if not inside and phase in REQUIRED_PHASES:
                raise BadInput(f"{path}: iteration {number}: no GPU work was launched inside "
                               f"'{getattr(args, phase)}' (--clock cpu times the ranges)")
        phases[phase] = inside
    if launched is None:
        return phases
    backward = [(a, b) for a, b in ranges["backward"] if low <= a < high]
    return by_position(phases, launched, Ranges(named), min(a for a, _ in backward),
                       max(b for _, b in backward))


def autograd_phases(path, number, own_ranges, low, high, launched):
    """{phase: GPU activities (events)} by what PyTorch's profiler names
    without being asked (`own_ranges`: autograd's functions' and the
    optimizers' ranges of the trace): backward is what autograd's functions
    launched, optimizer what the optimizers' step and zero_grad launched,
    and by_position's phase for the rest, the backward pass's window
    running from autograd's first launch to its last."""
    def starting_inside(prefixes):
        return [(a, b) for name, a, b in own_ranges
                if name.startswith(prefixes) and low <= a < high]

    autograd_ranges, optimizer_ranges = starting_inside(AUTOGRAD), starting_inside(OPTIMIZER)
    autograd, optimizer = Ranges(autograd_ranges), Ranges(optimizer_ranges)
    backward = [(t, e) for t, e in launched if t in autograd]
    if not backward:
        raise BadInput(f"{path}: iteration {number}: autograd launched no GPU work (no "
                       f"'{AUTOGRAD[0]}*' ranges): name the loop's phases with record_function "
                       f"and --forward, --backward")
    phases = {"forward": [], "backward": [e for _, e in backward],
              "optimizer": [e for t, e in launched if t in optimizer and t not in autograd],
              "compression": []}
    return by_position(phases, launched, Ranges(autograd_ranges + optimizer_ranges),
                       backward[0][0], backward[-1][0])


def rank_iterations(path, args):
    """The clock its phases were taken on and how they were found, and per
    iteration of one rank's trace: its times, how much of its communication
    ran during the backward pass, and how much of it the GPU was busy (None
    on the CPU's clock)."""
    events, placed = read_events(path)
    on_gpu = sorted(launched_on_gpu(events), key=lambda pair: pair[0])
    clock = args.clock if args.clock != "auto" else ("gpu" if on_gpu else "cpu")
    if clock == "gpu" and not on_gpu:
        raise BadInput(f"{path}: --clock gpu: no GPU kernels linked to their launches "
                       f"(torch.profiler with ProfilerActivity.CUDA records them)")
    cpu = [e for e in events if e.category != GPU_COPY_OF_A_RANGE]
    if args.step:
        steps = [(e.start, e.end) for e in cpu if e.name == args.step]
        hint = f"no range named '{args.step}'"
    else:
        steps = [(e.start, e.end) for e in cpu if PROFILER_STEP.match(e.name)]
        hint = ("no ProfilerStep#N ranges (torch.profiler with a schedule and prof.step() "
                "once per iteration); name the range that holds one iteration with --step")
    if not steps:
        raise BadInput(f"{path}: {hint}")
    steps.sort()
    # The loop's phases are record_function ranges: in a Kineto trace those
    # of category user_annotation, not an operator of the same name (a
    # scripted module's "forward" is a cpu_op); the older profiler's
    # events have no category.
    annotated = any(e.category == "user_annotation" for e in cpu)
    ranges = {phase: [(e.start, e.end) for e in cpu if e.name == getattr(args, phase)
                      and (not annotated or e.category == "user_annotation")]
              for phase in PHASES}
    # A GPU trace without the loop's own phase ranges: PyTorch's own names.
    found = "autograd" if clock == "gpu" and not ranges["forward"] and not ranges["backward"] \
        else "ranges"
    own_ranges = [(e.name, e.start, e.end) for e in cpu if e.name.startswith(AUTOGRAD + OPTIMIZER)]
    # torch.profiler without a schedule records one more ProfilerStep#N
    # after the loop's last prof.step(), holding none of its work.
    if not args.step and len(steps) > 1:
        low, high = steps[-1]
        starts = [a for name, a, _ in own_ranges if name.startswith(AUTOGRAD)] \
            if found == "autograd" else [a for a, _ in ranges["forward"] + ranges["backward"]]
        # Only after steps that hold passes: with none anywhere, the phase
        # ranges are missing, which the iterations below say.
        if not any(low <= a < high for a in starts) \
                and any(steps[0][0] <= a < steps[-2][1] for a in starts):
            steps.pop()
            print(f"note: {path}: its last ProfilerStep ({1e6 * (high - low):.0f} us) holds no "
                  f"forward or backward pass (torch.profiler without a schedule records one "
                  f"after the loop): left out")
    launch_times = [t for t, _ in on_gpu]
    if clock == "gpu":
        # NCCL's kernels are the communication; c10d's nccl:* ranges only
        # enqueue them, gloo's are the collective itself.
        cpu_collectives = [(e.start, e.end) for e in events if e.name.startswith("gloo:")]
    else:
        cpu_collectives = [(e.start, e.end) for e in events
                           if e.name.startswith(COLLECTIVE_PREFIXES)]
    iterations = []
    for number, (low, high) in enumerate(steps, start=1):
        if not high > low:
            raise BadInput(f"{path}: iteration {number} lasts 0 us")
        in_step = [(max(a, low), min(b, high)) for a, b in cpu_collectives if b > low and a < high]
        busy = None
        by_kind = {phase: collections.Counter() for phase in PHASES}
        if clock == "gpu":
            launched = on_gpu[bisect.bisect_left(launch_times, low):
                              bisect.bisect_left(launch_times, high)]
            busy = union_length([(e.start, e.end) for _, e in launched], -math.inf, math.inf)
            in_step += [(e.start, e.end) for _, e in launched if e.name.startswith(NCCL_KERNELS)]
            computing = [(t, e) for t, e in launched if not e.name.startswith(NCCL_KERNELS)]
            if found == "autograd":
                on_phases = autograd_phases(path, number, own_ranges, low, high, computing)
            else:
                on_phases = named_phases(path, number, args, ranges, low, high, computing)
            phases = {p: [(e.start, e.end) for e in ran] for p, ran in on_phases.items()}
            for phase, ran in on_phases.items():
                for e in ran:
                    by_kind[phase][kernel_kind(e)] += e.end - e.start
            backward = phases["backward"]
            backward = [(min(a for a, _ in backward), max(b for _, b in backward))]
        else:
            phases = named_phases(path, number, args, ranges, low, high, None)
            backward = phases["backward"]
        times = {"iteration_s": high - low}
        for phase in PHASES:
            times[f"{phase}_s"] = union_length(phases[phase], -math.inf, math.inf)
        times["communication_s"] = union_length(in_step, -math.inf, math.inf)
        during_backward = intersection_length(in_step, backward)
        allreduced = [] if clock != "gpu" else allreduces(launched, phases["backward"], low)
        iterations.append(Iteration(times, during_backward,
                                    None if busy is None else busy / (high - low), allreduced,
                                    by_kind))
    return (clock, found), iterations, placed


def allreduces(launched, backward, low):
    """(message, backward seconds before its data was ready) of each NCCL
    allreduce launched in the iteration, in launch order. Its data is ready
    when the GPU work launched before it has ended (DDP's allreduce waits
    for the compute stream); the backward pass's busy time up to then is
    how far backward had come."""
    out, ready = [], low
    for _, e in launched:
        if not e.name.startswith(NCCL_KERNELS):
            ready = max(ready, e.end)
        elif e.message and e.message[0] == "allreduce":
            out.append((e.message, union_length(backward, -math.inf, ready)))
    return out


def bucket_backward_times(per_rank, warmup, messages):
    """Each bucket's share of the backward pass, in launch order: from the
    previous bucket's data ready to its own, the last taking what remains;
    means over the compared iterations of every rank that allreduced these
    messages."""
    alike = [iteration for iterations in per_rank for iteration in iterations[warmup:]
             if [m for m, _ in iteration.allreduced] == messages]
    befores = [[before for _, before in iteration.allreduced] for iteration in alike]
    mean_before = [sum(column) / len(column) for column in zip(*befores)]
    backward = sum(iteration.times["backward_s"] for iteration in alike) / len(alike)
    spans = [b - a for a, b in zip([0.0] + mean_before, mean_before)]
    spans[-1] += max(0.0, backward - mean_before[-1])
    return spans


def buckets_of(path, allreduced):
    """The gradient as the iteration's NCCL allreduces sent it: a layer per
    bucket, of its elements times their bytes, in forward order (DDP
    allreduces the last layers' bucket first: bucket0 is the last layer)."""
    layers = []
    for number, (_, elements, dtype) in enumerate(allreduced):
        size = DTYPE_BYTES.get(str(dtype).lower())
        # gcsim's largest layer, as read_layers checks.
        if not isinstance(elements, int) or isinstance(elements, bool) or elements <= 0 \
                or size is None or elements * size > MAX_BYTES:
            raise BadInput(f"{path}: an NCCL allreduce of {elements} elements of type {dtype}: "
                           f"give the gradient's layers with --layers")
        layers.append({"name": f"bucket{number}", "bytes": elements * size})
    return layers[::-1]


def read_layers(path):
    data = read_json(path, written_by_hand=True)
    layers = data.get("layers") if isinstance(data, dict) else data
    if not isinstance(layers, list) or not layers:
        raise BadInput(f"{path}: expected a non-empty list of layers (or an object with "
                       f"\"layers\")")
    out = []
    for i, layer in enumerate(layers):
        if not isinstance(layer, dict):
            raise BadInput(f"{path}: layer {i}: expected an object with \"name\" and \"bytes\"")
        size = layer.get("bytes")
        # (true is an int to Python: it was taken for 1 parameter.)
        if size is None and isinstance(layer.get("parameters"), int) \
                and not isinstance(layer["parameters"], bool):
            size = 4 * layer["parameters"]
        if not isinstance(size, int) or isinstance(size, bool) or not 0 < size <= MAX_BYTES:
            raise BadInput(f"{path}: layer {i}: expected \"bytes\" (or \"parameters\") as a "
                           f"positive integer, got {json.dumps(layer)[:80]}")
        name = layer.get("name", f"layer{i}")
        if not isinstance(name, str) or not name:  # a null one was written as "None"
            raise BadInput(f"{path}: layer {i}: name is {json.dumps(name)[:40]}, expected "
                           f"a non-empty string")
        entry = {"name": name, "bytes": size}
        if "shape" in layer:
            entry["shape"] = read_shape(path, i, layer["shape"], size)
        out.append(entry)
    if len({"shape" in layer for layer in out}) > 1:
        raise BadInput(f"{path}: \"shape\" in some layers only: give it for every layer or none")
    return out


def read_shape(path, i, shape, size):
    """A layer's tensor shape, whose elements at 4 bytes each are its bytes."""
    problem = tensor_shape_problem(shape, size)
    if problem:
        raise BadInput(f"{path}: layer {i}: \"shape\" {problem}")
    return shape


def ranks_of(args, placed):
    """The run's ranks: --ranks, else the traces' world size, else one per
    trace; the traces must be of one run, each rank once."""
    known = [(path, p) for path, p in zip(args.traces, placed) if p]
    worlds = {world for _, (_, world) in known}
    if len(worlds) > 1:
        listed = ", ".join(f"{os.path.basename(path)}: {world}" for path, (_, world) in known)
        raise BadInput(f"{args.traces[0]}: the traces come from runs of different sizes "
                       f"(world_size {listed})")
    seen = {}
    for path, (rank, _) in known:
        if rank in seen:
            raise BadInput(f"{path}: rank {rank} again (also {os.path.basename(seen[rank])})")
        seen[rank] = path
    world = worlds.pop() if worlds else None
    if args.ranks and world and args.ranks != world:
        raise BadInput(f"--ranks {args.ranks}: the traces are of a run of {world} ranks "
                       f"(their distributedInfo)")
    ranks = args.ranks or world or len(args.traces)
    if ranks > MAX_RANKS:
        raise BadInput(f"{args.traces[0]}: a run of {ranks} ranks (its distributedInfo), more "
                       f"than gcsim's {MAX_RANKS}")
    if len(args.traces) > ranks:
        raise BadInput(f"{len(args.traces)} traces of a run of {ranks} ranks")
    return ranks


def training_entry(args):
    readings, per_rank, placed = zip(*(rank_iterations(path, args) for path in args.traces))
    ranks = ranks_of(args, placed)
    if len(set(readings)) > 1:
        listed = ", ".join(f"{os.path.basename(p)}: {c} clock, {f}"
                           for p, (c, f) in zip(args.traces, readings))
        raise BadInput(f"{args.traces[0]}: the traces' phases are read differently ({listed}; "
                       f"GPU kernels linked to their launches make it the GPU's clock, and "
                       f"without forward and backward ranges autograd's): name the clock with "
                       f"--clock, the phases' ranges with --forward and --backward")
    clock, found = readings[0]
    counts = {len(iterations) for iterations in per_rank}
    if len(counts) > 1:
        listed = ", ".join(f"{os.path.basename(p)}: {len(i)}" for p, i in zip(args.traces, per_rank))
        raise BadInput(f"{args.traces[0]}: the traces hold different numbers of iterations "
                       f"({listed})")
    count = counts.pop()
    if args.warmup >= count:
        raise BadInput(f"--warmup {args.warmup} leaves none of the traces' {count} iterations "
                       f"to compare")
    iterations, overlapped, busy = [], False, []
    by_kind = {phase: collections.Counter() for phase in PHASES}
    for i in range(count):
        rows = [iterations_of_rank[i].times for iterations_of_rank in per_rank]
        row = {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}
        row["compute_s"] = row["forward_s"] + row["backward_s"]
        # The traces count microseconds: nanoseconds keep every digit of a mean.
        row = {key: round(value, 9) for key, value in row.items()}
        for key, value in row.items():
            if value > LONGEST_SECONDS:
                raise BadInput(f"{args.traces[0]}: iteration {i + 1}: {key} {value:g}, past the "
                               f"1e9 s gcsim reads")
        iterations.append(row)
        during = sum(r[i].during_backward for r in per_rank) / len(per_rank)
        overlapped |= during > OVERLAP_SHARE * max(row["communication_s"], 1e-12)
        if i >= args.warmup and clock == "gpu":
            busy += [r[i].gpu_busy for r in per_rank]
            for r in per_rank:
                for phase, seconds in r[i].by_kind.items():
                    by_kind[phase].update({k: v / len(per_rank) / (count - args.warmup)
                                           for k, v in seconds.items()})
    reading = Reading(clock, found, sum(busy) / len(busy) if busy else None, 0, by_kind)
    if args.scenario:
        given = [option for option, value in (("--compressor", args.compressor != "dense"),
                                              ("--density", args.density is not None),
                                              ("--matrix-rank", args.matrix_rank is not None),
                                              ("--start-iteration",
                                               args.start_iteration is not None)) if value]
        if given:
            raise BadInput(f"{given[0]}: the --scenario says the compressor and its settings")
        # The scenario says the workload, compressor and overlap; validate
        # resolves the path from the measured file's folder.
        if not os.path.isfile(args.scenario):
            raise BadInput(f"--scenario {args.scenario}: " +
                           ("is a folder, not a file" if os.path.isdir(args.scenario) else
                            "not a regular file" if os.path.exists(args.scenario) else
                            "a link to nothing" if os.path.lexists(args.scenario) else
                            "no such file"))
        where = os.path.relpath(os.path.abspath(args.scenario),
                                os.path.dirname(os.path.abspath(args.out)))
        return {"name": args.name or os.path.splitext(os.path.basename(args.scenario))[0],
                "scenario": where, "ranks": ranks, "warmup_iterations": args.warmup,
                "iterations": iterations}, reading
    if args.layers:
        layers = read_layers(args.layers)
    elif args.compressor == "dense" and per_rank[0][args.warmup].allreduced:
        # DDP's buckets, as the first compared iteration of the first trace
        # allreduced them, each with the backward time it waited for.
        messages = [m for m, _ in per_rank[0][args.warmup].allreduced]
        layers = buckets_of(args.traces[0], messages)
        spans = bucket_backward_times(per_rank, args.warmup, messages)
        for layer, span in zip(layers, spans[::-1]):
            layer["backward_s"] = round(span, 9)
        reading = reading._replace(buckets=len(layers))
    else:
        raise BadInput("--layers describes the gradient (or --scenario the whole run; a dense "
                       "run whose trace records its NCCL allreduces' sizes needs neither)")
    return dict(training_run(args, layers, ranks), overlap=overlapped,
                warmup_iterations=args.warmup, iterations=iterations), reading


def training_run(args, layers, ranks):
    """The run's name, compressor, ranks and workload from the options."""
    compressor = {"name": args.compressor}
    if args.compressor not in BY_DENSITY and args.density is not None:
        raise BadInput(f"--density is top-k's, CLT-k's and DEFT's: {args.compressor} has none")
    if args.compressor != "powersgd" and (args.matrix_rank, args.start_iteration) != (None, None):
        raise BadInput(f"--matrix-rank and --start-iteration are powersgd's, not "
                       f"{args.compressor}'s")
    if args.compressor in BY_DENSITY:
        if args.density is None or not 0 < args.density <= 1:
            raise BadInput(f"--compressor {args.compressor} needs --density in (0, 1]")
        compressor["density"] = args.density
    if args.compressor == "powersgd":
        if "shape" not in layers[0]:
            raise BadInput(f"--layers {args.layers}: powersgd compresses each tensor by its "
                           "shape: give every layer its \"shape\"")
        # DDP's PowerSGDState defaults where the run took them.
        compressor["rank"] = 1 if args.matrix_rank is None else args.matrix_rank
        compressor["start_iteration"] = (1000 if args.start_iteration is None
                                         else args.start_iteration)
    return {"name": args.name or args.compressor, "compressor": compressor, "ranks": ranks,
            "workload": {"model": args.model, "batch_per_worker": args.batch,
                         "layers": layers}}


def measured_run(args, entry, reading):
    sources = ", ".join(os.path.basename(p) for p in args.traces)
    sources += f"; phases on the {reading.clock.upper()}'s clock" + \
        (", found by autograd's and the optimizers' ranges" if reading.found == "autograd" else "")
    if args.into:
        if args.cluster or args.bandwidth or args.latency or args.nodes:
            raise BadInput("--into takes the cluster of its measured run: leave out --cluster, "
                           "--nodes, --bandwidth and --latency")
        # As gcsim reads it: NaN, a key twice or a number past a float refused
        # here, not written through into a file gcsim validate refuses.
        run = read_json_object(args.into, "a measured run (a JSON object)")
        if run.get("format") != MEASURED_RUN_FORMAT:
            raise BadInput(f"{args.into}: not a measured run (\"format\": "
                           f"\"{MEASURED_RUN_FORMAT}\")")
        if not isinstance(run.get("training", []), list):
            raise BadInput(f"{args.into}: /training is not a list")
        for i, earlier in enumerate(run.get("training", [])):
            if not isinstance(earlier, dict):
                raise BadInput(f"{args.into}: /training/{i}: expected a training run (an "
                               f"object)")
        check_cluster(run.get("cluster"), args.into, "/cluster")
        run["cluster"] = placed_cluster(run["cluster"], args.into, args.out, "/cluster")
        run["source"] = f"{run.get('source', '')}; training from scripts/import_torch_profile.py " \
                        f"({sources})".lstrip("; ")
        run["training"] = run.get("training", []) + [entry]
    else:
        run = {"format": MEASURED_RUN_FORMAT,
               "name": os.path.splitext(os.path.basename(args.out))[0],
               "source": f"scripts/import_torch_profile.py from {sources}",
               "cluster": cluster_of(args, entry["ranks"]), "training": [entry]}
    workers = workers_of(run.get("cluster"))
    if workers is not None and workers != entry["ranks"]:
        raise BadInput(f"{args.into or args.cluster or '--nodes'}: the cluster has {workers} "
                       f"workers, the run {entry['ranks']} ranks (gcsim validate simulates a "
                       f"rank per worker: a node, or a GPU of a machine of GPUs)")
    return run


def main(argv):
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("traces", nargs="+", metavar="TRACE", help="one Chrome trace per rank")
    parser.add_argument("--layers", help="the gradient's layers (JSON, above)")
    parser.add_argument("--scenario", help="the gcsim scenario of this run: validate then "
                                           "simulates its model, loop and compressor")
    parser.add_argument("--compressor", choices=COMPRESSORS, default="dense")
    parser.add_argument("--density", type=float, help="topk's, cltk's and deft's density")
    parser.add_argument("--matrix-rank", type=integer_in(1, 1024),
                        help="powersgd: the hook's matrix_approximation_rank (default 1, DDP's)")
    parser.add_argument("--start-iteration", type=integer_in(0, 10 ** 9),  # gcsim's bound
                        help="powersgd: the hook's start_powerSGD_iter (default 1000, DDP's)")
    parser.add_argument("--batch", type=integer_in(1, MAX_COUNT), default=1,
                        help="samples per rank and iteration")
    parser.add_argument("--model", default="model", help="the model's name, for the record")
    parser.add_argument("--ranks", type=integer_in(1, MAX_RANKS),
                        help="ranks (default: the traces' world size where Kineto recorded it, "
                             "else one per trace)")
    parser.add_argument("--warmup", type=integer_in(0, MAX_COUNT), default=1,
                        help="first iterations left out of the comparison (default 1)")
    parser.add_argument("--step", help="the range of one iteration (default: ProfilerStep#N)")
    parser.add_argument("--by-kernel", action="store_true",
                        help="on the GPU's clock, also print each phase's GPU time by kind of "
                             "kernel (convolution and GEMM, norm, elementwise, pool, copy)")
    parser.add_argument("--clock", choices=("auto", "gpu", "cpu"), default="auto",
                        help="time the phases by the GPU's kernels or the CPU's ranges "
                             "(default auto: gpu where the trace holds GPU kernels)")
    for phase in PHASES:
        parser.add_argument(f"--{phase}", default=phase,
                            help=f"the range of the {phase} phase (default '{phase}')")
    parser.add_argument("--into", help="add the run to this measured run (its cluster)")
    add_cluster_options(parser, "the ranks")
    parser.add_argument("--name", help="the training run's name (default: the compressor, or "
                        "with --scenario the scenario file's name without .json)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if not args.out:
        parser.error("--out: expected a file name, got ''")
    refuse_folder_output(args.out)
    # One file given twice was taken for two ranks; said before any is read.
    for i, path in enumerate(args.traces):
        for earlier in args.traces[:i]:
            if os.path.exists(path) and os.path.exists(earlier) and os.path.samefile(path, earlier):
                raise BadInput(f"{path}: given twice (also as {earlier}): one trace per rank")
    # --into may be written over: the run added to the file it names.
    refuse_output_over_inputs(args.out, [*args.traces, args.layers, args.scenario, args.cluster])
    entry, reading = training_entry(args)
    run = measured_run(args, entry, reading)
    write_json_atomically(args.out, run, indent=1)
    compared = entry["iterations"][args.warmup:]

    def mean_ms(key):
        return 1e3 * sum(i[key] for i in compared) / len(compared)

    traces = "" if len(args.traces) == entry["ranks"] else f" ({len(args.traces)} traced)"
    print(f"wrote {args.out}: {len(entry['iterations'])} iterations of {entry['ranks']} ranks"
          f"{traces}, "
          f"{mean_ms('iteration_s'):.3f} ms each after the warm-up")
    print("  " + ", ".join(f"{phase} {mean_ms(phase + '_s'):.3f}"
                           for phase in (*PHASES, "communication")) + " ms")
    if reading.clock == "gpu":
        how = " (no forward and backward ranges: backward is what autograd launched, " \
              "optimizer what the optimizers' step and zero_grad and what came after, forward " \
              "the rest before backward)" if reading.found == "autograd" else ""
        print(f"phases on the GPU's clock{how}: the GPU was busy {100 * reading.gpu_busy:.0f}% "
              f"of the iterations after the warm-up")
        if args.by_kernel:
            print("GPU time by kernel kind (ms, mean of the compared iterations; the kind by "
                  "the kernel's name, copies by their category):")
            for phase, seconds in reading.by_kind.items():
                if seconds:
                    print(f"  {phase}: " + ", ".join(f"{kind} {1e3 * s:.3f}"
                                                      for kind, s in seconds.most_common()))
        if reading.gpu_busy < GPU_BUSY_NOTE:
            print("note: the GPU idled most of each iteration: the run waited on its CPU "
                  "(launches, data loading, the profiler), which gcsim does not simulate; its "
                  "phases still compare")
    if reading.buckets:
        total = sum(layer["bytes"] for layer in entry["workload"]["layers"])
        print(f"the gradient: the {reading.buckets} NCCL allreduces of an iteration, "
              f"{total} bytes (--layers gives it layer by layer)")
    if entry.get("overlap"):
        print("note: the collectives ran during the backward pass (overlap); " + (
            "gcsim validate reduces each bucket as the backward pass reaches it"
            if reading.buckets else
            "gcsim validate simulates the gradient's allreduce after it"))
    return 0


if __name__ == "__main__":
    run_script(main, sys.argv[1:])
