#!/usr/bin/python3
"""Fit a device profile's compute section to measured per-layer times.

gcsim's compute model (platforms/devices/README.md) gives a layer of forward
FLOPs f and backward FLOPs b, for the whole micro-batch, of kind k

    forward  = L + f / (R * e_k)
    backward = L + b / (R_b * e_k)

This script reads the passes timed by time_models_cuda.py (without hooks),
keeps R (the profile's measured GEMM rate) and fits L, every measured kind's
e_k and R_b by least squares on the relative error of each model's whole
forward and backward passes: the sums over layers are what a simulation
uses. A kind under 1% of every forward pass's time, as the --profile prices
it (MINOR_SHARE), keeps the --profile's e_k. Only passes whose per-layer
times add up to within 5% of the pass timed without hooks enter the fit,
each pass on its own: elsewhere the host's launch time, not the GPU, set the
times, and a FLOP model cannot say that.

It prints, per model, the measured passes and those of a compute model: first
the --profile's compute section as given (what it was worth before), then
with each file held out of the fit in turn (one batch size each, say), and
writes the profile with its compute section replaced. Kinds it measured no
layer of keep the profile's values. Kinds whose time per FLOP the passes
cannot tell apart (every model timed has them in one proportion: one model
alone, say) are refused, exit 2, rather than fitted to any value; with
--model-times the profile is then written with its compute section as it
was and the measured times added.

With --model-times it also writes the measured times themselves into the
profile (`model_times`, platforms/devices/README.md): per model and layer of
its spec, forward and backward seconds at every measured batch, each
parameter-less module charged to the layer before it and each pass scaled to
its time without hooks. A simulation of a model of that name then uses them
instead of the FLOP model, interpolated between batches; the script prints
how well that interpolation predicts each inner batch from the others.

Times taken with TF32 allowed (time_models_cuda.py --tf32) or under autocast
(--autocast bf16) are fitted like FP32 ones, but a file set may not mix
precisions. Their forward rate is not the
profile's FP32 SGEMM rate: --forward-rate-from-times sets forward_flop_rate
to the median of the files' own GEMM rates (time_models_cuda.py times an
N^3 product in the same precision), so the efficiencies stay factors on a
rate the device reaches in that precision; --name names the written profile.

With --backward-per-kind it also fits and prints (never writes) the model
with a backward rate of each kind's own, in sample and held out, and each
kind's forward and backward rates in the measured layer times
(platforms/devices/README.md says why the profile keeps one backward rate).

    /usr/bin/python3 scripts/calibrate/fit_compute.py --profile h200-kernels.json \\
        h200-layer-times-b32.json h200-layer-times-b128.json --out platforms/devices/h200.json
"""

import argparse
import math
import os
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
from atomic_write import write_json_atomically  # noqa: E402
import script_input  # noqa: E402
from script_input import Parser, run_script  # noqa: E402

MODELS = os.path.join(REPO, "workloads", "models")
HOOK_TOLERANCE = 0.05
KINDS = ["conv", "linear", "norm", "embedding", "lstm", "attention", "other"]
# The largest per-kind efficiency gcsim reads (sim/cost/device_profile.cpp):
# a factor on the FLOP rate a little over 1 is real, a percentage is not.
MAX_EFFICIENCY = 4
# A kind under this share of every forward pass's time, as the --profile
# prices it, is not fitted (minor_kinds).
MINOR_SHARE = 0.01


def parse_args(argv):
    parser = Parser(description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", required=True, help="device profile to start from")
    parser.add_argument("layer_times", nargs="+", help="time_models_cuda.py outputs to fit")
    parser.add_argument("--out", help="profile to write with the fitted compute section")
    parser.add_argument("--model-times", action="store_true",
                        help="also write the measured per-layer times into the profile")
    parser.add_argument("--forward-rate-from-times", action="store_true",
                        help="set forward_flop_rate to the median GEMM rate the layer-times "
                             "files measured in their precision (TF32 times need it)")
    parser.add_argument("--name", help="the written profile's name (default: --profile's)")
    parser.add_argument("--backward-per-kind", action="store_true",
                        help="also print a fit with a backward rate per kind, and each kind's "
                             "rates in the measured layer times (compared, not written)")
    return parser.parse_args(argv)


def fail(path, message):
    raise script_input.BadInput(f"{path}: {message}")


def parse_unit(path, compute, key, parse, checked, example, positive):
    """The value of a unit string as gcsim reads it (script_input, after
    sim/input/units.cpp): a rate > 0, or a duration 0 or in [1ps, 1e9s]."""
    text = compute.get(key)
    if parse(text) is None:
        fail(path, f"/compute/{key}: {text!r} is not a value such as {example!r}")
    value = checked(text)
    if value is None:
        fail(path, f"/compute/{key}: {text!r} is not a finite value "
                   f"{'> 0' if positive else '0 or in [1ps, 1e9s]'}")
    return value


def parse_rate(path, compute, key):
    return parse_unit(path, compute, key, script_input.parse_flop_rate,
                      script_input.checked_flop_rate, "50.5Tflops", positive=True)


def parse_duration(path, compute, key):
    """gcsim's layer_latency: 0 when the profile has none."""
    if key not in compute:
        return 0.0
    return parse_unit(path, compute, key, script_input.parse_duration,
                      script_input.checked_duration, "5us", positive=False)


def parse_efficiency(path, compute):
    """{kind: factor}, each a finite number > 0."""
    efficiency = compute["efficiency"]
    missing = [kind for kind in KINDS if kind not in efficiency]
    if missing:
        fail(path, f"/compute/efficiency: no factor for {', '.join(missing)}")
    for kind, value in efficiency.items():
        if (not isinstance(value, (int, float)) or isinstance(value, bool)
                or not math.isfinite(value) or not 0 < value <= MAX_EFFICIENCY):
            fail(path, f"/compute/efficiency/{kind}: expected a factor on the FLOP rate in "
                       f"(0, {MAX_EFFICIENCY}] (0.5 for half of it, not 50), got {value!r}")
    return efficiency


SPECS = {}


def spec_layers(path, name):
    """The layers of workloads/models/NAME.json, read once."""
    if name not in SPECS:
        spec_path = os.path.join(MODELS, name + ".json")
        # A name is a file of workloads/models/ ("../scenarios/x" named another folder's).
        if "/" in name or name.startswith(".") or not os.path.isfile(spec_path):
            fail(path, f"/models/{name}: no workloads/models/{name}.json")
        layers = script_input.read_json_object(spec_path, "a model spec").get("layers")
        if not isinstance(layers, list):
            fail(spec_path, "/layers: expected the model's list of layers")
        SPECS[name] = layers
    return SPECS[name]


def measured_layers(path, name, entry):
    """{spec layer: [forward_s, backward_s]} for one pass, scaled to the pass without hooks."""
    names = {layer["name"] for layer in spec_layers(path, name)}
    grouped, current = {}, None
    for module in entry["layers"]:
        if module["name"] in names:
            current = grouped.setdefault(module["name"], [0.0, 0.0])
        if current is not None:  # parameter-less modules go to the layer before
            current[0] += module["forward_s"]
            current[1] += module["backward_s"]
    forward_scale = entry["plain_forward_median_s"] / sum(t[0] for t in grouped.values())
    backward_scale = entry["plain_backward_median_s"] / sum(t[1] for t in grouped.values())
    return {layer: [t[0] * forward_scale, t[1] * backward_scale] for layer, t in grouped.items()}


def interpolate(batches, values, batch):
    """gcsim's rule between two measured batches, linear
    (sim/cost/device_profile.cpp, ModelTimes::layer_seconds). Only inner
    batches are predicted here: outside them gcsim keeps the layer's latency
    and scales the rest with the batch."""
    assert batches[0] < batch < batches[-1], "an inner batch"
    i = max(j for j in range(len(batches)) if batches[j] <= batch)
    w = (batch - batches[i]) / (batches[i + 1] - batches[i])
    return values[i] + w * (values[i + 1] - values[i])


AUTOCAST_NAMES = {"bfloat16": "BF16", "float16": "FP16"}


def precision_of(path, data):
    """The precision the file's passes were timed in: "FP32", "TF32", or
    "BF16 autocast" (FP16) with ", TF32" where that was allowed too."""
    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        fail(path, f"/settings: expected an object, got {settings!r}"[:200])
    tf32, autocast = settings.get("tf32", False), settings.get("autocast")
    if not isinstance(tf32, bool):
        fail(path, f"/settings/tf32: expected true or false, got {tf32!r}")
    if autocast is None:
        return "TF32" if tf32 else "FP32"
    if not isinstance(autocast, str) or autocast not in AUTOCAST_NAMES:
        fail(path, f"/settings/autocast: expected null or one of "
                   f"{', '.join(sorted(AUTOCAST_NAMES))}, got {autocast!r}")
    return f"{AUTOCAST_NAMES[autocast]} autocast" + (", TF32" if tf32 else "")


def gemm_rate_of(path, data):
    """The FLOP rate of the GEMM the file timed in its own precision."""
    gemm = data.get("gemm")
    rate = gemm.get("flop_rate") if isinstance(gemm, dict) else None
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not math.isfinite(rate) \
            or rate <= 0:
        fail(path, f"/gemm/flop_rate: expected a FLOP rate > 0 (time_models_cuda.py times one "
                   f"unless --gemm-size 0), got {rate!r}; --forward-rate-from-times needs it")
    return rate


def model_times(paths, loaded, precision):
    """The profile's model_times, and the held-out error of each inner batch."""
    measured = {}
    for path, (data, _) in zip(paths, loaded):
        for name, entry in data["models"].items():
            if entry["batch"] in measured.setdefault(name, {}):
                fail(path, f"/models/{name}: batch {entry['batch']} measured twice")
            measured[name][entry["batch"]] = (measured_layers(path, name, entry),
                                              entry["plain_forward_median_s"]
                                              + entry["plain_backward_median_s"])
    section, held_out = {}, []
    for name, by_batch in sorted(measured.items()):
        batches = sorted(by_batch)
        layers = sorted(by_batch[batches[0]][0])
        section[name] = {
            "source": f"scripts/calibrate/time_models_cuda.py, {precision}; each pass scaled to "
                      "its time "
                      "without hooks, parameter-less modules charged to the layer before them",
            "batches": batches,
            "layers": {layer: {"forward_s": [float(f"{by_batch[b][0][layer][0]:.6g}")
                                             for b in batches],
                               "backward_s": [float(f"{by_batch[b][0][layer][1]:.6g}")
                                              for b in batches]}
                       for layer in layers}}
        for i in range(1, len(batches) - 1):
            rest = batches[:i] + batches[i + 1:]
            predicted = sum(interpolate(rest, [sum(by_batch[b][0][layer]) for b in rest], batches[i])
                            for layer in layers)
            held_out.append((name, batches[i], by_batch[batches[i]][1], predicted))
    return section, held_out


def layers_of(path, name, entry):
    """(kind, forward and backward FLOPs of the micro-batch) of every layer of
    the model's spec."""
    spec = spec_layers(path, name)
    timed = {module["name"] for module in entry["layers"]}
    missing = [layer["name"] for layer in spec if layer["name"] not in timed]
    if missing:
        fail(path, f"/models/{name}/layers: not the spec's architecture, no times for "
                   f"{missing[:3]}")
    # gcsim's workload reader takes twice the forward FLOPs where a layer gives none.
    return [(layer["kind"], layer["forward_flops"] * entry["batch"],
             layer.get("backward_flops", 2 * layer["forward_flops"]) * entry["batch"])
            for layer in spec]


def check_layer_times(path, data):
    """Exit 2 naming the file and the field unless it is time_models_cuda.py's output."""
    if data.get("format") != "gcsim-layer-times/1":
        fail(path, "/format: not 'gcsim-layer-times/1' (time_models_cuda.py's output)")
    models = data.get("models")
    if not isinstance(models, dict) or not models:
        fail(path, "/models: expected an object with one entry per model")
    for key in ("date", "torch_version"):  # the written profile's compute source cites them
        if not isinstance(data.get(key), str) or not data[key]:
            fail(path, f"/{key}: expected a string, got {data.get(key)!r}")

    def seconds(value):
        return (isinstance(value, (int, float)) and not isinstance(value, bool)
                and math.isfinite(value) and value >= 0)

    for name, entry in models.items():
        where = f"/models/{name}"
        if not isinstance(entry, dict):
            fail(path, f"{where}: expected an object")
        batch = entry.get("batch")
        # gcsim's scenarios take batches up to 2^20 (training.batch_per_worker).
        if not isinstance(batch, int) or isinstance(batch, bool) or not 0 < batch <= 1 << 20:
            fail(path, f"{where}/batch: expected an integer in [1, 1048576], got {batch!r}")
        for key in ("plain_forward_median_s", "plain_backward_median_s"):
            if not seconds(entry.get(key)) or entry[key] == 0:
                fail(path, f"{where}/{key}: expected seconds > 0, got {entry.get(key)!r}")
        layers = entry.get("layers")
        if not isinstance(layers, list) or not layers:
            fail(path, f"{where}/layers: expected a list of the timed modules")
        for i, module in enumerate(layers):
            if not isinstance(module, dict) or not isinstance(module.get("name"), str):
                fail(path, f"{where}/layers/{i}/name: expected the module's name")
            for key in ("forward_s", "backward_s"):
                if not seconds(module.get(key)):
                    fail(path, f"{where}/layers/{i}/{key}: expected seconds >= 0, "
                               f"got {module.get(key)!r}")


def load(path):
    data = script_input.read_json_object(path)
    check_layer_times(path, data)
    runs = []
    for name, entry in data["models"].items():
        # Each pass on its own: autograd launches the backward kernels from
        # C++, so a backward pass can keep the GPU busy where the forward
        # pass's Python launches do not (BERT in TF32 at batch 64 and 128).
        bound = tuple(abs(sum(m[key] for m in entry["layers"]) / entry[f"plain_{key[:-2]}_median_s"]
                          - 1) <= HOOK_TOLERANCE for key in ("forward_s", "backward_s"))
        runs.append(dict(model=name, batch=entry["batch"], layers=layers_of(path, name, entry),
                         forward_s=entry["plain_forward_median_s"],
                         backward_s=entry["plain_backward_median_s"],
                         passes_bound=bound, gpu_bound=any(bound)))
    return data, runs


class Compute:
    """A compute model as times per layer: latency_s + FLOPs x seconds per FLOP."""

    def __init__(self, latency_s, forward_per_flop, backward_per_flop):
        self.latency_s = latency_s
        self.forward_per_flop = forward_per_flop    # {kind: s per forward FLOP}
        self.backward_per_flop = backward_per_flop  # {kind: s per backward FLOP}

    @staticmethod
    def of_profile(path, compute):
        """The profile's own model: L + f / (R e_k), L + b / (R_b e_k), f and b a
        layer's forward and backward FLOPs."""
        forward = parse_rate(path, compute, "forward_flop_rate")
        backward = parse_rate(path, compute, "backward_flop_rate")
        efficiency = parse_efficiency(path, compute)
        return Compute(parse_duration(path, compute, "layer_latency"),
                       {k: 1 / (forward * e) for k, e in efficiency.items()},
                       {k: 1 / (backward * e) for k, e in efficiency.items()})

    def passes(self, run):
        forward = sum(self.latency_s + self.forward_per_flop[kind] * flops
                      for kind, flops, _ in run["layers"])
        backward = sum(self.latency_s + self.backward_per_flop[kind] * flops
                       for kind, _, flops in run["layers"])
        return forward, backward


def solve_relative(design, measured, known=None):
    """Least squares on relative errors, column 0 the layer latency (never
    negative: fitted without it then); `known` is time the design does not
    hold (kinds not fitted). The solution and its loss."""
    weighted = design / measured[:, None]
    ones = np.ones_like(measured) - (0 if known is None else known / measured)
    solution, *_ = np.linalg.lstsq(weighted, ones, rcond=None)
    if solution[0] < 0:
        solution[0] = 0.0
        solution[1:], *_ = np.linalg.lstsq(weighted[:, 1:], ones, rcond=None)
    return solution, float(np.sum((weighted @ solution - ones) ** 2))


class Unidentifiable(ValueError):
    """Passes whose layer kinds come in one proportion: any mix of those
    kinds' times per FLOP fits them, and least squares picks one (one model
    gave linear layers an efficiency of 440557)."""


def confounded(design, names):
    """The names of the columns of `design` that the others span: the fit
    cannot tell their coefficients from the others'."""
    full = np.linalg.matrix_rank(design)
    if full == design.shape[1]:
        return []
    return [name for j, name in enumerate(names)
            if np.linalg.matrix_rank(np.delete(design, j, axis=1)) == full]


def busy_passes(runs):
    """Per run, its forward and its backward pass, each True where the pass
    kept the GPU busy (the design's rows, in that order)."""
    return np.array([bound for run in runs for bound in run["passes_bound"]])


def minor_kinds(runs, given):
    """Kinds whose layers take under MINOR_SHARE of every forward pass, as
    `given` prices them: the passes cannot tell their time per FLOP (BERT's
    embeddings, gathers of 0.001 % of its FLOPs, came out negative), so it is
    not fitted. (By time, not FLOPs: batch norm is 0.5 % of ResNet-50's FLOPs
    and a large part of its time.)"""
    kinds = {kind for run in runs for kind, *_ in run["layers"]}
    share = {kind: 0.0 for kind in kinds}
    for run in runs:
        priced = {kind: 0.0 for kind in kinds}
        for kind, forward, *_ in run["layers"]:
            priced[kind] += given.forward_per_flop[kind] * forward
        total = sum(priced.values())
        for kind in kinds:
            share[kind] = max(share[kind], priced[kind] / total if total > 0 else 0.0)
    return sorted(kind for kind, value in share.items() if value < MINOR_SHARE)


class Fit(Compute):
    """L, 1/(R e_k) per kind and R / R_b, fitted to whole passes; a minor
    kind (minor_kinds) keeps `given`'s time per FLOP."""

    def __init__(self, runs, given=None):
        self.kept = minor_kinds(runs, given) if given is not None else []
        self.kinds = sorted({kind for run in runs for kind, *_ in run["layers"]}
                            - set(self.kept))
        column = {kind: i + 1 for i, kind in enumerate(self.kinds)}
        measured = np.array([t for run in runs for t in (run["forward_s"], run["backward_s"])])
        rows = busy_passes(runs)
        if not rows[0::2].any() or not rows[1::2].any():
            raise ValueError(f"every pass that kept the GPU busy is a "
                             f"{'backward' if rows[1::2].any() else 'forward'} one: the "
                             "backward rate cannot be told from the forward one")
        best = None
        # R / R_b multiplies 1/(R e_k): a linear fit for each value of it, and
        # a search over it.
        for ratio in np.geomspace(0.25, 4.0, 481):
            design = np.zeros((len(measured), len(self.kinds) + 1))
            known = np.zeros(len(measured))
            for i, run in enumerate(runs):
                design[2 * i:2 * i + 2, 0] = len(run["layers"])
                for kind, forward, backward in run["layers"]:
                    if kind in column:
                        design[2 * i, column[kind]] += forward
                        design[2 * i + 1, column[kind]] += ratio * backward
                    else:
                        known[2 * i] += given.forward_per_flop[kind] * forward
                        known[2 * i + 1] += ratio * given.forward_per_flop[kind] * backward
            solution, loss = solve_relative(design[rows], measured[rows], known[rows])
            if best is None or loss < best[0]:
                best = (loss, ratio, solution, design)
        _, self.ratio, solution, design = best
        design, measured = design[rows], measured[rows]
        kinds = confounded(design / measured[:, None], ["layer latency"] + self.kinds)
        if kinds:
            raise Unidentifiable(f"the passes cannot tell apart the time per FLOP of "
                                 f"{', '.join(kinds)}: every model timed has them in one "
                                 f"proportion at every batch")
        self.per_flop = {kind: float(solution[column[kind]]) for kind in self.kinds}
        negative = [kind for kind, value in self.per_flop.items() if not value > 0]
        if negative:
            raise ValueError(f"the time per FLOP of {', '.join(negative)} comes out 0 or "
                             "negative")
        # Kinds not fitted keep `given`'s times per FLOP (the minor ones, and
        # those only passes left out of the fit have).
        forward = dict(given.forward_per_flop if given is not None else {}, **self.per_flop)
        super().__init__(float(solution[0]), forward,
                         {kind: self.ratio * value for kind, value in forward.items()})


class KindFit(Compute):
    """L and, per kind, 1/(R e_k) forward and backward apart, fitted to whole
    passes: the model with a backward efficiency per kind (not the profile's)."""

    def __init__(self, runs):
        kinds = sorted({kind for run in runs for kind, *_ in run["layers"]})
        n = len(kinds)
        measured = np.array([t for run in runs for t in (run["forward_s"], run["backward_s"])])
        design = np.zeros((len(measured), 2 * n + 1))
        for i, run in enumerate(runs):
            design[2 * i:2 * i + 2, 0] = len(run["layers"])
            for kind, forward, backward in run["layers"]:
                design[2 * i, 1 + kinds.index(kind)] += forward
                design[2 * i + 1, 1 + n + kinds.index(kind)] += backward
        rows = busy_passes(runs)
        solution, _ = solve_relative(design[rows], measured[rows])
        super().__init__(float(solution[0]),
                         {kind: float(solution[1 + j]) for j, kind in enumerate(kinds)},
                         {kind: float(solution[1 + n + j]) for j, kind in enumerate(kinds)})


def layer_rates(paths, loaded):
    """Each kind's FLOP rates in the measured layer times (forward, backward),
    per model and batch: what a per-kind efficiency would have to be."""
    print("rates of the measured layer times by kind (TFLOP/s, forward / backward):")
    for path, (data, _) in zip(paths, loaded):
        for name, entry in data["models"].items():
            spec = {layer["name"]: layer for layer in spec_layers(path, name)}
            sums = {}
            for layer, (forward_s, backward_s) in measured_layers(path, name, entry).items():
                kind = spec[layer]["kind"]
                flops = (spec[layer]["forward_flops"] * entry["batch"],
                         spec[layer].get("backward_flops", 2 * spec[layer]["forward_flops"])
                         * entry["batch"])
                total = sums.setdefault(kind, [0.0, 0.0, 0.0, 0.0])
                total[0] += flops[0]
                total[1] += forward_s
                total[2] += flops[1]
                total[3] += backward_s
            print(f"  {name:<20} {entry['batch']:>5} " + ", ".join(
                f"{kind} {t[0] / t[1] / 1e12:.2f} / {t[2] / t[3] / 1e12:.2f}"
                for kind, t in sorted(sums.items())))


def report_fit(make_fit, paths, loaded, runs, fitted):
    """The fit on every GPU-bound run, then each file held out of it in turn."""
    fit = make_fit(fitted)
    report("measured / simulated passes, on the fit (error: both passes)", fit, runs)
    # Held out: each file (a batch size, say) predicted by the fit on the others.
    for path, (_, held_runs) in zip(paths, loaded):
        rest = [run for other, (_, file_runs) in zip(paths, loaded) if other != path
                for run in file_runs if run["gpu_bound"]]
        held = [run for run in held_runs if run["gpu_bound"]]
        if not rest or not held:
            continue
        try:
            report(f"{path} held out of the fit", make_fit(rest), held)
        except ValueError as error:
            print(f"{path} held out of the fit: no fit on the rest ({error})")
    return fit


def report(title, fit, runs):
    print(title)
    print(f"  {'model':<20} {'batch':>5} {'forward ms':>18} {'backward ms':>18} {'error':>7}")
    for run in runs:
        forward, backward = fit.passes(run)
        measured = run["forward_s"] + run["backward_s"]
        note = {(True, True): "", (False, False): "  (host-bound: not fitted)",
                (True, False): "  (backward host-bound: not fitted)",
                (False, True): "  (forward host-bound: not fitted)"}[run["passes_bound"]]
        print(f"  {run['model']:<20} {run['batch']:>5} {run['forward_s'] * 1e3:>8.2f} /"
              f"{forward * 1e3:>8.2f} {run['backward_s'] * 1e3:>8.2f} /{backward * 1e3:>8.2f}"
              f" {(forward + backward) / measured - 1:>+7.1%}{note}")


def set_compute(profile, fit, given_rate, rate, fitted, data, precision, rate_source):
    """The profile's compute section as `fit` gives it, with its source."""
    batches = {}
    for run in fitted:
        batches.setdefault(run["model"], set()).add(run["batch"])
    names = [f"{model} (batch {', '.join(str(b) for b in sorted(batches[model]))})"
             for model in sorted(batches)]
    compute = profile["compute"]
    unfitted = sorted(set(compute["efficiency"]) - set(fit.kinds))
    # An unmeasured kind keeps its FLOP rate when the reference rate changes:
    # its efficiency is a factor on the rate, and nothing says it got faster.
    for kind in unfitted:
        compute["efficiency"][kind] = significant(compute["efficiency"][kind] * given_rate / rate)
    compute["forward_flop_rate"] = f"{rate / 1e12:.4g}Tflops"
    compute["layer_latency"] = f"{fit.latency_s * 1e6:.3f}us"
    compute["backward_flop_rate"] = f"{rate / fit.ratio / 1e12:.4g}Tflops"
    for kind in fit.kinds:
        compute["efficiency"][kind] = significant(1 / (rate * fit.per_flop[kind]))
    kept = "assumptions" if given_rate == rate else \
        f"the --profile's assumed FLOP rates (efficiencies x {given_rate / rate:.4g})"
    compute["source"] = (
        f"forward rate: {rate_source or 'measured cuBLAS SGEMM 4096^3 (FP32, no TF32)'}; "
        f"layer latency, "
        f"backward rate and the efficiency of {', '.join(fit.kinds)}: fitted by "
        f"scripts/calibrate/fit_compute.py to whole passes of {', '.join(names)} timed by "
        f"scripts/calibrate/time_models_cuda.py on {' and '.join(sorted({d['date'] for d in data}))}"
        f" (torch {' and '.join(sorted({d['torch_version'] for d in data}))}, {precision}); "
        f"{', '.join(unfitted)}: {kept}")


def significant(value):
    """Four decimals, and four significant digits where that is more: a fitted
    norm efficiency of 0.0017 to four decimals would be up to 3% off."""
    return round(value, max(4, 3 - math.floor(math.log10(value))))


def main(argv):
    args = parse_args(argv)
    if args.out == "":
        fail("--out", "empty: give the profile to write")
    if args.out:  # --out may be --profile: the refit in place
        script_input.refuse_output_over_inputs(args.out, args.layer_times)
    profile = script_input.read_json_object(args.profile)
    compute = profile.get("compute") if isinstance(profile, dict) else None
    if not isinstance(compute, dict) or not isinstance(compute.get("efficiency"), dict):
        fail(args.profile, "/compute: a device profile's compute section is missing")
    given_rate = parse_rate(args.profile, compute, "forward_flop_rate")
    rate = given_rate
    given = Compute.of_profile(args.profile, compute)
    loaded = [load(path) for path in args.layer_times]
    precision = precision_of(args.layer_times[0], loaded[0][0])
    for path, (data, _) in zip(args.layer_times, loaded):
        if precision_of(path, data) != precision:
            fail(path, f"/settings: {precision_of(path, data)} passes, where "
                       f"{args.layer_times[0]}'s are {precision}; fit each precision to a "
                       "profile of its own")
    rate_source = None
    if args.forward_rate_from_times:
        rates = sorted(gemm_rate_of(path, data) for path, (data, _) in zip(args.layer_times, loaded))
        sizes = sorted({data["gemm"].get("size") for data, _ in loaded}, key=str)
        # Rounded as written, so that the efficiencies are factors on the rate the file holds.
        rate = float(f"{float(np.median(rates)) / 1e12:.4g}") * 1e12
        rate_source = (f"torch.mm {'/'.join(str(n) for n in sizes)}^3 ({precision}) timed by "
                       f"scripts/calibrate/time_models_cuda.py, median of {len(rates)} files' "
                       f"medians ({min(rates) / 1e12:.4g}-{max(rates) / 1e12:.4g} TFLOP/s)")
        print(f"forward rate from the files' GEMMs: {rate / 1e12:.4g} TFLOP/s ({precision}), "
              f"the profile's {given_rate / 1e12:.4g}")
    runs = [run for _, file_runs in loaded for run in file_runs]
    fitted = [run for run in runs if run["gpu_bound"]]
    if not fitted:
        fail(args.layer_times[0], "/models: no model's layer times are GPU-bound")
    report(f"measured / simulated passes, {args.profile}'s compute as given", given, runs)
    fit = None
    try:
        fit = Fit(fitted, given)
    except ValueError as error:
        batches = sorted({run["batch"] for run in fitted})
        models = sorted({run["model"] for run in fitted})
        if len(batches) == 1:
            why = (f"the passes of one batch size ({batches[0]}) cannot tell the layer latency "
                   "from the FLOP rates: time two or more batch sizes")
        elif isinstance(error, Unidentifiable):
            why = (f"time models whose layers mix the kinds otherwise ({len(models)} timed: "
                   f"{', '.join(models)})")
        else:
            why = "the passes do not fit the compute model"
        if not (args.model_times and isinstance(error, Unidentifiable) and len(batches) > 1):
            fail(", ".join(args.layer_times), f"no compute model fits: {error}; {why}")
        # The measured times alone are still worth writing: a simulation of
        # these models uses them, not the FLOP model.
        print(f"compute model not fitted ({error}; {why}): the profile's compute section is "
              "kept as it is and only model_times is written")
    if fit is not None:
        efficiency = {kind: 1 / (rate * fit.per_flop[kind]) for kind in fit.kinds}
        too_fast = {kind: value for kind, value in efficiency.items() if value > MAX_EFFICIENCY}
        if too_fast:
            fail(", ".join(args.layer_times),
                 f"fitted efficiencies above {MAX_EFFICIENCY}, which gcsim refuses: "
                 + ", ".join(f"{kind} {value:.3g}" for kind, value in sorted(too_fast.items()))
                 + f"; the profile's forward_flop_rate ({rate / 1e12:.3g} TFLOP/s) is below "
                 "what the device reaches")
        print(f"layer latency {fit.latency_s * 1e6:.2f} us, backward rate "
              f"{rate / fit.ratio / 1e12:.2f} TFLOP/s (forward {rate / 1e12:.2f}), efficiency "
              + ", ".join(f"{kind}={value:.3f}" for kind, value in efficiency.items()))
        if fit.kept:
            print(f"not fitted (under {MINOR_SHARE:.0%} of every pass): {', '.join(fit.kept)}")
        report_fit(lambda some: Fit(some, given), args.layer_times, loaded, runs, fitted)

    if args.backward_per_kind:
        kind_fit = KindFit(fitted)
        print("with a backward rate per kind (compared, not written): layer latency "
              f"{kind_fit.latency_s * 1e6:.2f} us, TFLOP/s forward / backward "
              + ", ".join(f"{kind} {1 / kind_fit.forward_per_flop[kind] / 1e12:.2f} / "
                          f"{1 / kind_fit.backward_per_flop[kind] / 1e12:.2f}"
                          for kind in sorted(kind_fit.forward_per_flop)))
        report_fit(KindFit, args.layer_times, loaded, runs, fitted)
        layer_rates(args.layer_times, loaded)

    if args.model_times:
        section, held_out = model_times(args.layer_times, loaded, precision)
        print("measured layer times, each inner batch interpolated from the others:")
        print(f"  {'model':<20} {'batch':>5} {'measured ms':>12} {'interpolated':>12} {'error':>7}")
        for name, batch, measured, predicted in held_out:
            print(f"  {name:<20} {batch:>5} {measured * 1e3:>12.2f} {predicted * 1e3:>12.2f}"
                  f" {predicted / measured - 1:>+7.1%}")
        profile["model_times"] = section
    elif "model_times" in profile:
        del profile["model_times"]

    if args.out:
        if fit is not None:
            set_compute(profile, fit, given_rate, rate, fitted, [data for data, _ in loaded], precision,
                        rate_source)
        if args.name:
            profile["name"] = args.name
        write_json_atomically(args.out, profile, indent=1)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    run_script(main, sys.argv[1:])
