#!/usr/bin/python3
"""Alternative collective cost models, fitted from a measured run's collectives only.

  /usr/bin/python3 scripts/minicluster/collective_models.py results/validation/minicluster-*.json

For issue 7's question "does a physically-motivated model explain the 1 Gbit/s
errors better than alpha-beta?". Every model is a closed form of the gloo
algorithms gcsim simulates (ring allreduce: 2(P-1) messages of n/P; ring
allgather: P-1 messages of n/P; gloo's eager binomial broadcast: L = log2(P)
latencies and L(L+1)/2 n/B, i.e. 3 n/B at P = 4 and 6 n/B at P = 8, the
same numbers SimGrid gives on the calibrated star), with weighted least squares
on relative error over every size (what `gcsim validate --fit` did until
2026-12-02; it now takes alpha from the sizes below 1 MiB and beta from those
of 4 MiB and more):

  alpha-beta      t = m a + b beta                          (gcsim's model, fitted over every size)
  +reduction      t = m a + b beta + r gamma                r: bytes a rank reduces (allreduce)
  +gather copy    t = m a + b beta + n kappa                n: the allgather's output, copied
                                                            out of gloo's buffer by torch
  per kind        alpha-beta fitted separately for allreduce and allgather
  by size         alpha-beta fitted separately below and above a message size, the
                  split chosen where it fits best (SMPI's piecewise calibration, which
                  SimGrid's size-dependent network factors express); a broadcast
                  message, the whole n, takes its segment's alpha and beta
  split           t = m a + b beta, a from the sizes below 1 MiB and beta from those of
                  4 MiB and more, solved together (`gcsim validate --fit` since 2026-12-02)
  overlap         t = sum over messages of max(a, L + bytes beta): the per-message cost
                  (process scheduling) hidden under a transfer that takes longer; L the
                  run's measured one-way latency, a from the sizes below 1 MiB, beta from
                  those of 4 MiB and more (where t = m L + b beta)
  shared CPU      the P concurrent ring flows share a CPU rate C: per-flow rate min(B, C/P);
                  fitted on the P = 4 run, predicts the P = 8 run at the same link rate

Held out: each ring size is predicted by the fit on the other sizes (leave one
size out), and broadcast is never fitted. Also printed: the run's own
repeatability (geometric-mean |ln(sample / median)| of the repetitions), a
floor no model of the median can go below on a single repetition, and, for
training, the "oracle" iteration that uses the measured benchmark time of a
collective of the same size (log-log interpolation between measured sizes):
what any model fitted to these collectives could at best give. It is given
twice: from each point's `seconds` (the median of its repetitions, what the
fit sees) and from the mean of its `samples_s` where the run recorded them, since
a mean iteration pays each collective's mean, tail included.
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from script_input import (LONGEST_SECONDS, MEASURED_RUN_FORMAT, SHORTEST_SECONDS,  # noqa: E402
                          BadInput, Parser, bandwidth_ok, latency_ok, parse_bandwidth,
                          parse_duration, read_json_object, run_script, tensor_shape_problem)

COMPRESSORS = ("dense", "topk", "cltk", "deft", "fp16", "powersgd")
LARGE = 4 << 20
SMALL = 1 << 20  # gcsim's kLatencyPointBytes: latency from the ring points below it


def path(point):
    P, n = point["ranks"], point["bytes"]
    chunk = math.ceil(n / P)
    if point["collective"] == "allreduce":
        return dict(m=2 * (P - 1), b=2 * (P - 1) * chunk, r=(P - 1) * chunk, n=0)
    if point["collective"] == "allgather":
        return dict(m=P - 1, b=(P - 1) * chunk, r=0, n=n)
    if point.get("algorithm") == "ring":  # NCCL's: a pipeline of pieces along the chain
        chunk = point.get("chunk_bytes", 512 * 1024)
        stages = math.ceil(n / chunk) + P - 2
        return dict(m=stages, b=stages * min(chunk, n), r=0, n=0)
    levels = int(round(math.log2(P)))
    # gloo's broadcast: each level's sender shares its link among its children.
    return dict(m=levels, b=levels * (levels + 1) // 2 * n, r=0, n=0)


def fit(points, columns):
    A = np.array([[path(p)[c] / p["seconds"] for c in columns] for p in points])
    x, *_ = np.linalg.lstsq(A, np.ones(len(points)), rcond=None)
    return dict(zip(columns, x))


def predict(point, params):
    cost = path(point)
    return sum(params.get(c, 0.0) * cost[c] for c in cost)


def geomean(pairs):
    pairs = [(m, s) for m, s in pairs if m > 0 and s > 0]
    if not pairs:
        return float("nan")
    return math.exp(sum(abs(math.log(s / m)) for m, s in pairs) / len(pairs)) - 1


def ring(points):
    return [p for p in points if p["collective"] != "broadcast"]


def leave_one_size_out(points, fitter):
    """(measured, predicted) of every ring point from a fit without its size."""
    out = []
    for size in sorted({p["bytes"] for p in ring(points)}):
        train = [p for p in ring(points) if p["bytes"] != size]
        model = fitter(train)
        out += [(p, model(p)) for p in ring(points) if p["bytes"] == size]
    return out


def linear(columns):
    def fitter(train):
        params = fit(train, columns)
        return lambda p: predict(p, params)
    return fitter


def per_kind(train):
    params = {k: fit([p for p in train if p["collective"] == k], ["m", "b"])
              for k in ("allreduce", "allgather")}
    both = fit(train, ["m", "b"])  # broadcast has no kind of its own to fit
    return lambda p: predict(p, params.get(p["collective"], both))


def message_bytes(point):
    """One message's size: a ring chunk, or a broadcast's whole payload."""
    if point["collective"] == "broadcast":
        return point["bytes"]
    return math.ceil(point["bytes"] / point["ranks"])


def by_size(train):
    """Two alpha-beta segments split at the message size that fits them best."""
    def squares(params, points):
        return sum((predict(p, params) / p["seconds"] - 1) ** 2 for p in points)
    best = None
    sizes = sorted({message_bytes(p) for p in train})
    for split in sizes[2:-1]:  # at least two sizes on each side
        below = [p for p in train if message_bytes(p) < split]
        above = [p for p in train if message_bytes(p) >= split]
        low, high = fit(below, ["m", "b"]), fit(above, ["m", "b"])
        error = squares(low, below) + squares(high, above)
        if best is None or error < best[0]:
            best = (error, split, low, high)
    if best is None:  # too few sizes to split
        return linear(["m", "b"])(train)
    _, split, low, high = best
    return lambda p: predict(p, low if message_bytes(p) < split else high)


def split(train):
    """gcsim's fit: both normal equations over the small and the large points only."""
    chosen = [p for p in train if p["bytes"] < SMALL or p["bytes"] >= LARGE]
    params = fit(chosen, ["m", "b"])
    return lambda p: predict(p, params)


def messages(point):
    """(count, bytes each) of a point's messages as the overlap model times them: a
    broadcast level's sender shares its link among the children it has left, so
    level j of L weighs (L - j) n."""
    P, n = point["ranks"], point["bytes"]
    if point["collective"] == "broadcast" and point.get("algorithm") != "ring":
        levels = int(round(math.log2(P)))
        return [(1, (levels - j) * n) for j in range(levels)]
    cost = path(point)
    return [(cost["m"], cost["b"] / cost["m"])]


def overlap(one_way):
    def fitter(train):
        small = [p for p in train if p["bytes"] < SMALL]
        large = [p for p in train if p["bytes"] >= LARGE]
        count = [sum(m for m, _ in messages(p)) for p in small]
        alpha = np.linalg.lstsq(np.array([[m / p["seconds"]] for m, p in zip(count, small)]),
                                np.ones(len(small)), rcond=None)[0][0]
        A = np.array([[sum(m * b for m, b in messages(p)) / p["seconds"]] for p in large])
        y = np.array([1 - one_way * sum(m for m, _ in messages(p)) / p["seconds"] for p in large])
        beta = np.linalg.lstsq(A, y, rcond=None)[0][0]
        return lambda p: sum(m * max(alpha, one_way + b * beta) for m, b in messages(p))
    return fitter


def one_way_latency(run):
    """The run's measured one-way time: a route is two links of the stated latency."""
    text = run["cluster"]["link"]["latency"]
    seconds = parse_duration(text)
    if seconds is None:
        raise ValueError(f"{run['name']}: latency {text!r} has no unit gcsim reads")
    return 2 * seconds


MODELS = [("alpha-beta", lambda run: linear(["m", "b"])),
          ("+reduction", lambda run: linear(["m", "b", "r"])),
          ("+gather copy", lambda run: linear(["m", "b", "n"])), ("per kind", lambda run: per_kind),
          ("by size", lambda run: by_size), ("split", lambda run: split),
          ("overlap", lambda run: overlap(one_way_latency(run)))]


class BadRun(BadInput):
    """A file these scripts cannot use as a measured run; str() is the one
    line, naming the file, that a script prints before exit 2."""


_KINDS = {dict: "an object", list: "an array", str: "a string", int: "an integer",
          float: "a number"}


def _show(value):
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _get(obj, key, at, kind, default=BadRun):
    """obj[key] of `kind` (dict, list, str, int, or float: any finite number);
    `default` where it may be missing."""
    if key not in obj:
        if default is not BadRun:
            return default
        raise BadRun(f"{at}/{key}: required field is missing")
    value = obj[key]
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is float:
        ok = number and math.isfinite(value)
    elif kind is int:
        ok = number and math.isfinite(value) and float(value).is_integer()
    else:
        ok = isinstance(value, kind)
    if not ok:
        raise BadRun(f"{at}/{key}: expected {_KINDS[kind]}, got {_show(value)}")
    if kind is int:
        obj[key] = value = int(value)  # 1.0 is a count gcsim reads; the scripts slice by it
    return value


def _within(value, low, high, at, what):
    if not low <= value <= high:
        raise BadRun(f"{at}: {_show(value)} is not {what}")
    return value


def _check_powersgd(training, compressor, at):
    """What training_calls reads of a PowerSGD run: gcsim's limits of the
    hook's settings, each layer's shape, and compared iterations that are
    all compressed (the plain allreduces before start_iteration are not
    priced)."""
    _within(_get(compressor, "rank", f"{at}/compressor", int, 1), 1, 1024,
            f"{at}/compressor/rank", "1..1024")
    rate = _get(compressor, "min_compression_rate", f"{at}/compressor", float, 2)
    if not 0 <= rate <= 1e9:
        raise BadRun(f"{at}/compressor/min_compression_rate: {_show(rate)} is not in [0, 1e9]")
    start = _within(_get(compressor, "start_iteration", f"{at}/compressor", int, 0), 0, 10 ** 9,
                    f"{at}/compressor/start_iteration", "0..1e9")
    if _get(training, "warmup_iterations", at, int, 0) < start:
        raise BadRun(f"{at}/warmup_iterations: below start_iteration {start}: the compared "
                     "iterations hold plain allreduces, and collective_models.py prices "
                     "PowerSGD's compressed steps")
    layers = _get(_get(training, "workload", at, dict), "layers", f"{at}/workload", list)
    for j, layer in enumerate(layers):
        where = f"{at}/workload/layers/{j}"
        # PowerSGD compresses each tensor by its shape.
        problem = tensor_shape_problem(_get(layer, "shape", where, list), layer["bytes"])
        if problem:
            raise BadRun(f"{where}/shape: {problem}")


def _check_run(run, models):
    """Raises BadRun for what the scripts would read and cannot: the fields of
    the measured-run format (results/validation/README.md) they use, with
    gcsim's limits; `models` adds what collective_models.py needs besides
    repeatability.py (the link's latency, each training run's compressor and
    layers, and ring collectives to fit)."""
    if _get(run, "format", "", str) != MEASURED_RUN_FORMAT:
        raise BadRun(f"/format: expected \"{MEASURED_RUN_FORMAT}\", got {_show(run['format'])}")
    _get(run, "name", "", str, None)
    _get(run, "date", "", str, None)
    cluster = _get(run, "cluster", "", dict)
    nodes = _within(_get(cluster, "nodes", "/cluster", int), 1, 65536, "/cluster/nodes", "1..65536")
    link = _get(cluster, "link", "/cluster", dict)
    bandwidth = _get(link, "bandwidth", "/cluster/link", str)
    if not bandwidth_ok(bandwidth):
        raise BadRun(f"/cluster/link/bandwidth: {_show(bandwidth)} is not a bandwidth gcsim reads "
                     "(a number and a rate unit, in [1kbps, 1000Tbps])")
    if models:
        latency = _get(link, "latency", "/cluster/link", str)
        if not latency_ok(latency):
            raise BadRun(f"/cluster/link/latency: {_show(latency)} is not a latency gcsim reads "
                         "(a number and a unit of time, at most 1e9 s)")
    points = _get(run, "collectives", "", list, [])
    for i, point in enumerate(points):
        at = f"/collectives/{i}"
        if not isinstance(point, dict):
            raise BadRun(f"{at}: expected an object, got {_show(point)}")
        if _get(point, "collective", at, str) not in ("allreduce", "allgather", "broadcast"):
            raise BadRun(f"{at}/collective: {_show(point['collective'])} is not allreduce, "
                         "allgather or broadcast")
        _get(point, "algorithm", at, str, None)
        _within(_get(point, "ranks", at, int), 2, 65536, f"{at}/ranks", "2..65536")
        _within(_get(point, "bytes", at, int), 1, 1 << 50, f"{at}/bytes", "1..2^50")
        _within(_get(point, "chunk_bytes", at, int, 1), 1, 1 << 50, f"{at}/chunk_bytes", "1..2^50")
        dtype = _get(point, "dtype", at, str, "float32")
        if dtype not in ("float32", "float16"):
            raise BadRun(f"{at}/dtype: {_show(point['dtype'])} is not float32 or float16")
        # gcsim's rule: float16 for ring allreduces of whole 2-byte elements.
        if dtype == "float16" and (point["collective"] != "allreduce"
                                   or point.get("algorithm", "ring") != "ring"):
            raise BadRun(f"{at}/dtype: \"float16\" is for the ring allreduce only")
        if dtype == "float16" and point["bytes"] % 2:
            raise BadRun(f"{at}/bytes: {point['bytes']} is not a whole number of 2-byte float16 "
                         "elements")
        seconds = _get(point, "seconds", at, float)
        if not SHORTEST_SECONDS <= seconds <= LONGEST_SECONDS:
            raise BadRun(f"{at}/seconds: {_show(seconds)} is not in [1e-12, 1e9]")
        for j, sample in enumerate(_get(point, "samples_s", at, list, [])):
            sample = _get({j: sample}, j, f"{at}/samples_s", float)
            if not (sample == 0 or SHORTEST_SECONDS <= sample <= LONGEST_SECONDS):
                raise BadRun(f"{at}/samples_s/{j}: {_show(sample)} is not 0 or in [1e-12, 1e9]")
    # The models and the run-to-run comparison are the network's: a float16
    # allreduce's pace can be gloo's float16 sums (gcsim validate --fit
    # fits those).
    points = run["collectives"] = [p for p in points if p.get("dtype", "float32") == "float32"]
    trainings = _get(run, "training", "", list, [])
    for i, training in enumerate(trainings):
        at = f"/training/{i}"
        if not isinstance(training, dict):
            raise BadRun(f"{at}: expected an object, got {_show(training)}")
        if models and "scenario" in training:
            raise BadRun(f"{at}: names a scenario; collective_models.py needs the run's own "
                         "compressor and workload")
        compressor = _get(training, "compressor", at, dict, {})
        if "compressor" in training or models:
            name = _get(compressor, "name", f"{at}/compressor", str)
            if name not in COMPRESSORS:
                raise BadRun(f"{at}/compressor/name: {_show(name)} is not "
                             f"{', '.join(COMPRESSORS[:-1])} or {COMPRESSORS[-1]}")
            if name in ("topk", "cltk", "deft"):
                density = _get(compressor, "density", f"{at}/compressor", float)
                if not 0 < density <= 1:
                    raise BadRun(f"{at}/compressor/density: {_show(density)} is not in (0, 1]")
        # Its name defaults to its compressor's, as gcsim's (or here its scenario's file).
        scenario = _get(training, "scenario", at, str, None)
        if "name" not in training:
            training["name"] = compressor.get("name") or os.path.splitext(
                os.path.basename(scenario or "training"))[0]
        _get(training, "name", at, str)
        if models:
            layers = _get(_get(training, "workload", at, dict), "layers", f"{at}/workload", list)
            if not layers:
                raise BadRun(f"{at}/workload/layers: expected a non-empty array, got []")
            for j, layer in enumerate(layers):
                if not isinstance(layer, dict):
                    raise BadRun(f"{at}/workload/layers/{j}: expected an object, got {_show(layer)}")
                _within(_get(layer, "bytes", f"{at}/workload/layers/{j}", int), 1, 1 << 50,
                        f"{at}/workload/layers/{j}/bytes", "1..2^50")
            if compressor["name"] == "powersgd":
                _check_powersgd(training, compressor, at)
        iterations = _get(training, "iterations", at, list)
        if not iterations:
            raise BadRun(f"{at}/iterations: expected a non-empty array, got []")
        for j, iteration in enumerate(iterations):
            if not isinstance(iteration, dict):
                raise BadRun(f"{at}/iterations/{j}: expected an object, got {_show(iteration)}")
            for key in iteration:  # every phase (and the loss) is a number
                if key != "comment":
                    _get(iteration, key, f"{at}/iterations/{j}", float)
            if models:  # the measured compute beside a model's collectives
                for phase in ("forward_s", "backward_s"):
                    _get(iteration, phase, f"{at}/iterations/{j}", float)
                if "arrival_spread_s" in iteration:  # run.py's line-up, whole
                    _get(iteration, "collectives_after_last_arrival_s", f"{at}/iterations/{j}",
                         float)
            iteration_s = _get(iteration, "iteration_s", f"{at}/iterations/{j}", float)
            if not SHORTEST_SECONDS <= iteration_s <= LONGEST_SECONDS:
                raise BadRun(f"{at}/iterations/{j}/iteration_s: {_show(iteration_s)} "
                             "is not in [1e-12, 1e9]")
        _within(_get(training, "warmup_iterations", at, int, 0), 0, len(iterations) - 1,
                f"{at}/warmup_iterations", f"0..{len(iterations) - 1} (leaves no iteration)")
    if models:
        # Every fit of leave_one_size_out keeps a point of each kind, and
        # (split, overlap) a small and a large size.
        sizes = {kind: {p["bytes"] for p in points if p["collective"] == kind}
                 for kind in ("allreduce", "allgather")}
        ring_sizes = sizes["allreduce"] | sizes["allgather"]
        small = sum(size < SMALL for size in ring_sizes)
        large = sum(size >= LARGE for size in ring_sizes)
        if min(map(len, sizes.values())) < 2 or small < 2 or large < 2:
            raise BadRun(f"/collectives: the models, each size left out in turn, need allreduce "
                         f"and allgather at two sizes or more, two sizes below 1 MiB and two of "
                         f"4 MiB and more (allreduce {len(sizes['allreduce'])}, allgather "
                         f"{len(sizes['allgather'])}, {small} below 1 MiB, {large} of 4 MiB and more)")
        measured = {p["collective"] for p in points if p["ranks"] == nodes}
        for i, training in enumerate(trainings):
            wanted = {c for c, _ in training_calls(training, nodes)} - measured
            if wanted:
                raise BadRun(f"/training/{i}: its {', '.join(sorted(wanted))} not measured at "
                             f"{nodes} ranks (/collectives): no measured time to price it with")


def load_run(path, models=True):
    """The measured run in `path`, checked as _check_run checks it (its name
    the file's, as gcsim's, where it has none); BadRun naming the file when it
    cannot be read or used."""
    try:
        run = read_json_object(path, "an object (a measured run)")
    except BadInput as error:
        raise BadRun(str(error))
    if "name" not in run:
        run["name"] = os.path.splitext(os.path.basename(path))[0]
    try:
        _check_run(run, models)
    except BadRun as error:
        raise BadRun(f"{path}: {error}")
    return run


def report_models(run):
    points = run["collectives"]
    print(f"{run['name']}:")
    for name, make in MODELS:
        fitter = make(run)
        held = leave_one_size_out(points, fitter)
        model = fitter(ring(points))
        broadcast = [(p["seconds"], model(p)) for p in points if p["collective"] == "broadcast"]
        large = [(p["seconds"], s) for p, s in held if p["bytes"] >= LARGE]
        every = [(p["seconds"], s) for p, s in held]
        columns = {"alpha-beta": ["m", "b"], "+reduction": ["m", "b", "r"],
                   "+gather copy": ["m", "b", "n"]}.get(name)
        shown = ""
        if columns:
            params = fit(ring(points), columns)
            shown = (f"alpha {params['m'] * 1e6:7.1f} us, {8 / params['b'] / 1e6:6.1f} Mbit/s"
                     + (f", gamma {params['r'] * 1e9:+.2f} ns/B" if "r" in params else "")
                     + (f", kappa {params['n'] * 1e9:+.2f} ns/B" if "n" in params else ""))
        large_broadcast = [pair for pair, p in zip(broadcast, [q for q in points
                                                               if q["collective"] == "broadcast"])
                           if p["bytes"] >= LARGE]
        print(f"  {name:13s} held-out ring >= 4 MiB {100 * geomean(large):5.1f}%, all ring "
              f"{100 * geomean(every):5.1f}%, broadcast >= 4 MiB "
              f"{100 * geomean(large_broadcast):5.1f}%  {shown}")
    spread = [(p["seconds"], s) for p in points for s in p.get("samples_s", [])
              if p["bytes"] >= LARGE]
    print(f"  repeatability of the >= 4 MiB points (sample vs median): {100 * geomean(spread):.1f}%")


def shared_cpu(runs):
    """Fit C on P = 4 (per-flow rate min(B, C/P)), predict P = 8 at the same rate."""
    by_rate = {}
    for run in runs:
        by_rate.setdefault(run["cluster"]["link"]["bandwidth"], {})[run["cluster"]["nodes"]] = run
    for rate, pair in sorted(by_rate.items()):
        if 4 not in pair or 8 not in pair:
            continue
        small, big = pair[4], pair[8]
        link = parse_bandwidth(rate) * 8 / 1e6  # Mbit/s; load_run checked it
        flow4 = 8 / fit(ring(small["collectives"]), ["m", "b"])["b"] / 1e6
        flow8 = 8 / fit(ring(big["collectives"]), ["m", "b"])["b"] / 1e6
        # Link-bound at P = 4 (TCP's 95.6% of the rate): a CPU limit is not visible there.
        if flow4 > 0.94 * link:
            print(f"shared CPU at {rate}: P = 4 is link-bound ({flow4:.1f} Mbit/s per flow): "
                  f"no CPU rate to fit")
            continue
        cpu = 4 * flow4
        print(f"shared CPU at {rate}: per-flow rate {flow4:.1f} Mbit/s at P = 4 gives C = "
              f"{cpu:.0f} Mbit/s; it predicts {min(link, cpu / 8):.1f} per flow at P = 8, "
              f"measured {flow8:.1f}")


def interpolate(points, collective, ranks, size, mean=False):
    """Measured seconds of `collective` at `size`, log-log between measured sizes:
    the points' medians, or with `mean` the mean of their samples where recorded."""
    def seconds(p):
        return sum(p["samples_s"]) / len(p["samples_s"]) if mean and p.get("samples_s") \
            else p["seconds"]
    known = sorted((p["bytes"], seconds(p)) for p in points
                   if p["collective"] == collective and p["ranks"] == ranks)
    if not known:
        return None
    if size <= known[0][0]:
        return known[0][1]  # latency-bound below the smallest size
    for (x0, y0), (x1, y1) in zip(known, known[1:]):
        if x0 <= size <= x1:
            w = math.log(size / x0) / math.log(x1 / x0)
            return math.exp((1 - w) * math.log(y0) + w * math.log(y1))
    return known[-1][1] * size / known[-1][0]


def training_calls(t, P):
    """The collectives worker.py makes per step of training run `t` (its
    docstrings), in nccl-tests' byte convention (allgather: the whole output);
    PowerSGD's once past its start_iteration."""
    d = sum(layer["bytes"] for layer in t["workload"]["layers"]) // 4
    name = t["compressor"]["name"]
    k = max(1, int(t["compressor"].get("density", 1) * d))  # worker.py's floor(density d)
    if name == "dense":
        return [("allreduce", 4 * d)]
    if name == "fp16":
        return [("allreduce", 2 * d)]
    if name == "powersgd":  # the uncompressed tensors, then P, then Q (the hook's rule)
        rank = t["compressor"].get("rank", 1)
        rate = t["compressor"].get("min_compression_rate", 2)
        whole = left = right = 0
        for layer in t["workload"]["layers"]:  # shapes checked by _check_powersgd
            n = layer["bytes"] // 4
            rows = layer["shape"][0] if layer["shape"] else 1  # [] a scalar's
            r = min(rows, n // rows, rank)
            if (rows + n // rows) * r * rate < n:
                left, right = left + rows * r, right + n // rows * r
            else:
                whole += n
        return [("allreduce", 4 * whole), ("allreduce", 4 * left), ("allreduce", 4 * right)]
    if name == "topk":
        return [("allgather", 8 * k * P)]
    if name == "cltk":  # the leader's int32 indices, then the values
        return [("broadcast", 4 * k), ("allreduce", 4 * k)]
    # deft: the bin assignment (P + L int32), the counts, the int32
    # indices padded to the largest count (about k / P when the bins
    # balance), the values at the union (about k: partitions are disjoint).
    sizes = [layer["bytes"] // 4 for layer in t["workload"]["layers"]]
    partitions = sum(P if n > d / P else 1 for n in sizes)
    return [("broadcast", 4 * (P + partitions)), ("allgather", 4 * P),
            ("allgather", 4 * math.ceil(k / P) * P), ("allreduce", 4 * k)]


def mean_iteration(t):
    its = t["iterations"][t.get("warmup_iterations", 0):]
    return {k: sum(i.get(k, 0) for i in its) / len(its) for k in its[0] if k != "comment"}


def iteration_with(t, mean, comm):
    """The measured compute (and compression, except deft's, which overlaps its
    collectives) plus `comm` seconds of collectives."""
    compute = mean["forward_s"] + mean["backward_s"] + mean.get("optimizer_s", 0)
    return compute + (mean.get("compression_s", 0) if t["compressor"]["name"] != "deft" else 0) + comm


def oracle_training(run):
    """Per training run: measured compute + the benchmarks' measured collective times."""
    P = run["cluster"]["nodes"]
    points = run["collectives"]
    out = []
    for t in run.get("training", []):
        mean = mean_iteration(t)
        calls = training_calls(t, P)
        comm = sum(interpolate(points, c, P, n) for c, n in calls)
        comm_of_means = sum(interpolate(points, c, P, n, mean=True) for c, n in calls)
        # run.py's line-up of the ranks' collectives, in runs that have it.
        lineup = (mean["arrival_spread_s"], mean["collectives_after_last_arrival_s"]) \
            if "arrival_spread_s" in mean else None
        out.append((t["name"], mean["iteration_s"], iteration_with(t, mean, comm),
                    iteration_with(t, mean, comm_of_means), mean.get("communication_s", 0), comm,
                    lineup))
    return out


def modelled_training(run, make):
    """Per training run: measured compute + a model's collective times, the
    model fitted to the run's ring collectives: (name, measured, modelled)."""
    P = run["cluster"]["nodes"]
    model = make(run)(ring(run["collectives"]))
    algorithm = {"broadcast": "binomial_tree"}
    out = []
    for t in run.get("training", []):
        mean = mean_iteration(t)
        comm = sum(model(dict(collective=c, ranks=P, bytes=n, algorithm=algorithm.get(c, "ring")))
                   for c, n in training_calls(t, P))
        out.append((t["name"], mean["iteration_s"], iteration_with(t, mean, comm)))
    return out


def parse_args(argv):
    parser = Parser(
        summary_of=__doc__,
        epilog="Each file is a measured run (results/validation/README.md's format) with ring "
               "collectives below 1 MiB and of 4 MiB and more.")
    parser.add_argument("runs", nargs="+", metavar="RUN.json")
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    runs = [load_run(path) for path in args.runs]  # every file checked before any output
    for run in runs:
        report_models(run)
    shared_cpu(runs)
    print("training with the measured benchmark time of each collective (the best any "
          "collective-fitted model can do):")
    for run in runs:
        for name, measured, oracle, of_means, comm, bench, lineup in oracle_training(run):
            print(f"  {run['name']:24s} {name:6s} iteration measured {measured * 1e3:7.1f} ms, "
                  f"oracle {oracle * 1e3:7.1f} ms ({100 * (oracle / measured - 1):+5.1f}%), "
                  f"of the means {of_means * 1e3:7.1f} ms ({100 * (of_means / measured - 1):+5.1f}%); "
                  f"communication measured {comm * 1e3:6.1f} ms, benchmark {bench * 1e3:6.1f} ms"
                  + (f"; ranks arrive {lineup[0] * 1e3:.1f} ms apart, then the collectives take "
                     f"{lineup[1] * 1e3:.1f} ms" if lineup else ""))
    print("training with each collective priced by a model fitted to the run's ring collectives "
          "(measured compute; iteration error against the measured):")
    for run in runs:
        for name, make in MODELS:
            if name not in ("split", "overlap"):
                continue
            errors = "  ".join(f"{training} {100 * (modelled / measured - 1):+5.1f}%"
                               for training, measured, modelled in modelled_training(run, make))
            if errors:
                print(f"  {run['name']:24s} {name:8s} {errors}")


if __name__ == "__main__":
    run_script(main, sys.argv[1:])
