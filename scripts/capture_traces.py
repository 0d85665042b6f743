#!/usr/bin/python3
"""Capture real per-layer gradient traces for gcsim.

Trains a real model on real data with synchronous data parallelism simulated
on one machine: every iteration, each of W workers computes the gradient of
its own disjoint micro-batch at the same weights, the gradients are averaged
and plain SGD (no momentum, no weight decay) applies
    w_{t+1} = w_t - lr * mean_w g_w(t).
Every captured iteration writes each worker's flattened gradient and the
weights w_t, plus per-layer forward/backward times measured with module hooks
(scripts/trace_tools/timing.py). The format is documented in
workloads/README.md, section "Gradient traces".

Run with Debian's interpreter only: /usr/bin/python3 scripts/capture_traces.py --help
"""

import argparse
import contextlib
import datetime
import hashlib
import json
import os
import platform
import shlex
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_write import (WriteError, atomic_folder, nearest_existing,  # noqa: E402
                          write_atomically)
from cpu_info import cpu_identity  # noqa: E402
from script_input import BadInput, Parser, open_input, run_script  # noqa: E402

FORMAT_VERSION = 1
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(REPO, "workloads", "traces", "cache")
SHIPPED = os.path.join(REPO, "workloads", "traces")
# The largest magnitude gcsim reads in a trace (sim/trace/npy.hpp): past it,
# float sums over workers and iterations overflow.
LARGEST_TRACE_VALUE = 1e24

# Named recipes, so that one documented command reproduces each trace.
PRESETS = {
    # Shipped in git (workloads/traces/fmnist-cnn-16w): a few MB.
    "fmnist-cnn-16w": dict(model="cnn", dataset="fashion-mnist", workers=16, micro_batch=32,
                           iterations=151, capture_start=0, capture_stride=50, lr=0.05, seed=1,
                           dtype="float32", out=os.path.join(SHIPPED, "fmnist-cnn-16w")),
    # Larger traces, into the git-ignored cache folder.
    "fmnist-resnet18-8w": dict(model="resnet18", dataset="fashion-mnist", workers=8,
                               micro_batch=32, iterations=21, capture_start=0,
                               capture_stride=10, lr=0.05, seed=1, dtype="float32",
                               out=os.path.join(CACHE, "fmnist-resnet18-8w")),
    "fmnist-resnet50-4w": dict(model="resnet50", dataset="fashion-mnist", workers=4,
                               micro_batch=16, iterations=11, capture_start=0,
                               capture_stride=10, lr=0.02, seed=1, dtype="float16",
                               out=os.path.join(CACHE, "fmnist-resnet50-4w")),
    # The mini-cluster's wide CNN, for its validation only (not in --preset
    # cache: results/validation/README.md).
    "fmnist-wide-cnn-8w": dict(model="wide-cnn", dataset="fashion-mnist", workers=8,
                               micro_batch=32, iterations=21, capture_start=0,
                               capture_stride=10, lr=0.05, seed=1, dtype="float32",
                               out=os.path.join(CACHE, "fmnist-wide-cnn-8w")),
    "fmnist-alexnet-4w": dict(model="alexnet", dataset="fashion-mnist", workers=4,
                              micro_batch=32, iterations=11, capture_start=0,
                              capture_stride=10, lr=0.01, seed=1, dtype="float16",
                              out=os.path.join(CACHE, "fmnist-alexnet-4w")),
}
CACHE_PRESETS = ["fmnist-resnet18-8w", "fmnist-resnet50-4w", "fmnist-alexnet-4w"]
# trace_tools.models.MODELS's names, here so that --help needs no torch
# (capture_test checks that the two agree).
MODEL_NAMES = ["cnn", "wide-cnn", "resnet18", "resnet50", "alexnet", "vgg16"]


DEFAULTS = dict(model="cnn", dataset="fashion-mnist", workers=4, micro_batch=32, iterations=3,
                capture_start=0, capture_stride=1, lr=0.05, seed=1, dtype="float32", out=None)


def parse_args(argv):
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS) + ["cache"],
                        help="a named recipe; 'cache' makes the studies' large traces into "
                             "workloads/traces/cache/. Explicit flags override a recipe.")
    # Without a preset or a flag, DEFAULTS; --help shows them.
    def default(key):
        return f"(default: {DEFAULTS[key]})"

    parser.add_argument("--model", choices=MODEL_NAMES, help=default("model"))
    parser.add_argument("--model-file", metavar="FILE.py",
                        help="a model of your own instead of --model: a Python file defining "
                             "build(num_classes) -> torch.nn.Module and INPUT = (channels, "
                             "side), the images it takes (workloads/README.md, 'Your own "
                             "model')")
    parser.add_argument("--dataset", choices=["fashion-mnist", "digits"], help=default("dataset"))
    parser.add_argument("--workers", type=int,
                        help="simulated data-parallel workers W " + default("workers"))
    parser.add_argument("--micro-batch", type=int,
                        help="samples per worker per iteration " + default("micro_batch"))
    parser.add_argument("--iterations", type=int,
                        help="training iterations to run " + default("iterations"))
    parser.add_argument("--capture-start", type=int,
                        help="first captured iteration " + default("capture_start"))
    parser.add_argument("--capture-stride", type=int,
                        help="capture every s-th iteration " + default("capture_stride"))
    parser.add_argument("--lr", type=float, help="plain SGD learning rate " + default("lr"))
    parser.add_argument("--seed", type=int, help="0 to 2^63 - 1 " + default("seed"))
    parser.add_argument("--dtype", choices=["float32", "float16"],
                        help="storage of gradients (weights are always float32) " +
                             default("dtype"))
    parser.add_argument("--threads", type=int,
                        help="torch CPU threads, at most this machine's cores, which the layer "
                             "timings need (default: 2, or 1 on one core)")
    parser.add_argument("--log-every", type=int, default=10, help="(default: 10)")
    parser.add_argument("--out", help="trace folder to write")
    parser.add_argument("--force", action="store_true",
                        help="replace an existing trace folder (once the new trace is complete)")
    args = parser.parse_args(argv)
    if args.model and args.model_file:
        parser.error("--model and --model-file: give one of them")
    if args.preset and args.model_file:
        # A preset's --out is a shipped model's trace folder, which --force
        # would replace with the model file's.
        parser.error(f"--preset {args.preset} makes a shipped model's trace; --model-file "
                     f"is for a trace of its own (--out)")
    if args.threads is None:
        args.threads = min(2, len(os.sched_getaffinity(0)))
    recipe = PRESETS.get(args.preset, {}) if args.preset != "cache" else {}
    for key, fallback in DEFAULTS.items():
        if getattr(args, key) is None:
            setattr(args, key, recipe.get(key, fallback))
    return args


def check_args(args):
    problems = []
    for key in ("workers", "micro_batch", "iterations", "capture_stride", "threads",
                "log_every"):
        if getattr(args, key) < 1:
            problems.append(f"--{key.replace('_', '-')} must be at least 1")
    if args.capture_start < 0 or args.capture_start >= args.iterations:
        problems.append("--capture-start must be in [0, iterations)")
    if not 0 < args.lr < float("inf"):
        problems.append("--lr must be positive and finite")
    if not 0 <= args.seed < 2 ** 63:
        problems.append("--seed must be in [0, 2^63 - 1]")
    # More threads than cores time the waiting for a core: layer times
    # 50-300x too long, which gcsim then takes as the model's compute.
    cores = len(os.sched_getaffinity(0))
    if args.threads > cores:
        problems.append(f"--threads {args.threads} is more than the {cores} cores this process "
                        f"may use: the measured layer times would count the waiting for a core")
    if args.out is None:
        problems.append("--out (or --preset) is required")
    elif not args.out:
        problems.append("--out must name a folder")
    elif os.path.lexists(args.out):
        out = os.path.abspath(args.out)
        if not os.path.isdir(out):
            problems.append(f"--out: {out} exists and is not a folder")
        elif not args.force:
            problems.append(f"--out: {out} exists; pass --force to replace it")
        elif os.listdir(out) and not os.path.isfile(os.path.join(out, "manifest.json")):
            problems.append(f"--out: {out} is not a trace folder (no manifest.json); not replaced")
    else:
        # Said now, not as "File exists" once the model is loaded.
        existing = nearest_existing(args.out)
        if not os.path.isdir(existing):
            problems.append(f"--out: cannot make {args.out}: {existing} is not a folder")
    if problems:
        raise BadInput("; ".join(problems))


def flat(tensors):
    import torch

    return torch.cat([t.detach().reshape(-1) for t in tensors]).numpy().astype(np.float32)


def save(path, array):
    """np.save into the staging folder; a failure (a full disk) is one line naming the file."""
    try:
        np.save(path, array)
    except OSError as error:
        raise WriteError(path, error) from error


def float16_loss(g32):
    """How much storing one gradient as float16 loses."""
    g16 = g32.astype(np.float16).astype(np.float32)
    norm = float(np.linalg.norm(g32))
    nonzero = g32 != 0
    flushed = int(np.count_nonzero(nonzero & (g16 == 0)))
    rel = np.abs(g16[nonzero] - g32[nonzero]) / np.abs(g32[nonzero])
    return dict(relative_l2_error=float(np.linalg.norm(g16 - g32)) / norm if norm > 0 else 0.0,
                max_elementwise_relative_error=float(rel.max()) if rel.size else 0.0,
                flushed_to_zero=flushed, overflow=int(np.count_nonzero(~np.isfinite(g16))))


def capture(args, staging):
    """Trains and writes the whole trace into the folder `staging`; what to print after."""
    import torch
    import torch.nn.functional as F

    from trace_tools import data, models
    from trace_tools.timing import (LayerTimer, Layout, layer_order, modules_run,
                                    parameters_in_run_order)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    rng = np.random.default_rng(args.seed)

    if args.model_file:
        model, channels, side, args.model = models.from_file(args.model_file, 10,
                                                             args.micro_batch)
    else:
        model, channels, side = models.build(args.model, 10)
    try:
        x_train, y_train = data.load(args.dataset, "train", channels, side)
        x_test, y_test = data.load(args.dataset, "test", channels, side)
    except OSError as error:
        sys.exit(f"capture_traces.py: cannot read the {args.dataset} data set: "
                 f"{error.filename or ''}: {error.strerror or error}")
    per_iteration = args.workers * args.micro_batch
    if per_iteration > len(y_train):
        raise BadInput(f"--workers x --micro-batch = {per_iteration} exceeds the "
                       f"{len(y_train)} training samples of {args.dataset}")

    def running(what, call):
        # A model file's code failing past its checks (in training, in eval
        # mode) is a refusal; the shipped models' would be bugs.
        return models.run_model_code(args.model_file, what, call) if args.model_file \
            else call()

    # A model that defines a module before one it runs earlier (a head first)
    # made a trace gcsim refuses; the shipped ones define them in run order.
    # Frozen parameters have no gradient to send: not in the trace, as DDP
    # leaves them out of its buckets.
    example = x_train[:args.micro_batch]
    layout = Layout(model, running("its forward pass on the data set failed",
                                   lambda: modules_run(model, example)))
    layers_in_order, inside = running("its forward and backward pass on the data set failed",
                                      lambda: layer_order(model, example, layout))
    named = [(name, p) for name, p in parameters_in_run_order(model, layout, layers_in_order)
             if p.requires_grad]
    # Known before any training: a split module that runs only inside
    # another timed module's forward takes no time of its own in any pass.
    untimed = sorted({layout.layer_of(name) for name, _ in named} & inside)
    if untimed:
        raise BadInput(f"--model-file {args.model_file}: module {untimed[0]} holds parameters "
                       f"but runs only inside another timed module's forward (called from it, "
                       f"not its child), whose time it is: its own is unknown; call it outside "
                       f"the other module")
    params = [p for _, p in named]
    # A tensor's module is the layer timed for it: its own, the module
    # holding parameters beside children that it lies in (MultiheadAttention),
    # or a split module's own parameters (timing.Layout).
    layers, offset = [], 0
    for name, p in named:
        layers.append(dict(name=name, module=layout.layer_of(name), shape=list(p.shape),
                           params=p.numel(), offset=offset))
        offset += p.numel()
    total = offset

    timer = LayerTimer(model, layout=layout)
    model.train()
    order = rng.permutation(len(y_train))
    cursor = 0
    captured, loss_log, f16 = [], [], []
    started = time.time()
    print(f"capture: {args.model} on {args.dataset}, {total:,} parameters in {len(layers)} "
          f"tensors, W={args.workers} x B={args.micro_batch}, lr={args.lr}, seed={args.seed}",
          flush=True)
    for it in range(args.iterations):
        if cursor + per_iteration > len(order):
            order, cursor = rng.permutation(len(y_train)), 0
        batch = order[cursor:cursor + per_iteration]
        cursor += per_iteration
        is_captured = it >= args.capture_start and (it - args.capture_start) % args.capture_stride == 0
        folder = os.path.join(staging, "iterations", f"{it:06d}")
        if is_captured:
            os.makedirs(folder)
            save(os.path.join(folder, "weights.npy"), flat(params))
        mean = np.zeros(total, dtype=np.float32)
        losses = []
        for w in range(args.workers):
            part = torch.from_numpy(batch[w * args.micro_batch:(w + 1) * args.micro_batch])
            x, y = x_train[part], y_train[part]
            model.zero_grad(set_to_none=False)
            if is_captured:
                loss = running(f"training failed at iteration {it}, worker {w}",
                               lambda: timer.run(model, F.cross_entropy, x, y))
            else:
                loss = running(f"training failed at iteration {it}, worker {w}",
                               lambda: F.cross_entropy(model(x), y))
                running(f"training failed at iteration {it}, worker {w}", loss.backward)
            losses.append(float(loss))
            # A parameter this pass did not use has no gradient yet: zeros,
            # as DDP sends for it (find_unused_parameters).
            g = flat(p.grad if p.grad is not None else torch.zeros_like(p) for p in params)
            if is_captured and args.dtype == "float16":
                past = int(np.count_nonzero(np.abs(g) > np.finfo(np.float16).max))
                if past:
                    raise BadInput(f"--dtype float16: {past} elements of the gradient at "
                                   f"iteration {it}, worker {w} are past float16's range "
                                   f"(65504); lower --lr, or keep --dtype float32")
            if not np.all(np.abs(g) <= LARGEST_TRACE_VALUE):  # NaN fails too
                raise BadInput(f"--lr {args.lr}: gradient at iteration {it}, worker {w} is not "
                               f"finite or past {LARGEST_TRACE_VALUE:g} (which gcsim refuses); "
                               "lower --lr")
            mean += g
            if is_captured:
                if args.dtype == "float16":
                    f16.append(float16_loss(g))
                save(os.path.join(folder, f"worker_{w:03d}.npy"), g.astype(args.dtype))
        mean /= np.float32(args.workers)
        # Plain SGD on the workers' mean gradient, as synchronous allreduce does.
        with torch.no_grad():
            start = 0
            for p in params:
                n = p.numel()
                p -= args.lr * torch.from_numpy(mean[start:start + n]).view_as(p)
                start += n
        loss_value = float(np.mean(losses))
        if is_captured:
            captured.append(it)
        if it % args.log_every == 0 or it == args.iterations - 1 or is_captured:
            loss_log.append(dict(iteration=it, loss=round(loss_value, 6)))
            print(f"iteration {it:6d}  loss {loss_value:.4f}{'  captured' if is_captured else ''}"
                  f"  ({time.time() - started:.1f} s)", flush=True)

    model.eval()
    # A model file's model in batches of the size it trained at, whole ones
    # only (one may be written for its batch size); the shipped ones 500.
    chunk = args.micro_batch if args.model_file else 500
    tested = min(len(y_test), 2000) // chunk * chunk if args.model_file \
        else min(len(y_test), 2000)
    # (A model file's with gradients: its forward may take some.)
    with contextlib.nullcontext() if args.model_file else torch.no_grad():
        correct = 0
        for i in range(0, tested, chunk):
            scores = running(f"its test in eval mode on {len(y_test[i:i + chunk])} images failed",
                             lambda: model(x_test[i:i + chunk]))
            correct += int((scores.argmax(1) == y_test[i:i + chunk]).sum())
        accuracy = correct / max(tested, 1)
    print(f"test accuracy on {tested} held-out samples: {accuracy:.3f}")

    module_entries = []
    for name, forward_s, backward_s in timer.averages():
        # The trace's tensors of the module: a weight tied to another
        # module's is the one's that runs first (timing.parameters_in_run_order).
        own = sum(layer["params"] for layer in layers if layer["module"] == name)
        module_entries.append(dict(name=name, type=type(layout.modules[name]).__name__,
                                   params=own, forward_s=forward_s, backward_s=backward_s))
    timed_names = {entry["name"] for entry in module_entries}
    unrun = [layer["module"] for layer in layers if layer["module"] not in timed_names]
    if unrun:
        raise BadInput(f"--model-file {args.model_file}: module {unrun[0]} holds parameters but "
                       f"ran in no captured pass (stochastic depth, LayerDrop?), or only "
                       f"inside another timed module's forward: its time is unknown; capture "
                       f"more iterations, keep it on while capturing, or call it outside the "
                       f"other module")
    manifest = dict(
        format="gcsim-trace", format_version=FORMAT_VERSION,
        model=args.model, dataset=args.dataset, input_shape=[channels, side, side],
        num_classes=10, workers=args.workers, micro_batch=args.micro_batch,
        optimizer="sgd", learning_rate=args.lr, seed=args.seed,
        iterations_trained=args.iterations, capture_start=args.capture_start,
        capture_stride=args.capture_stride, iterations=captured, has_tensors=True,
        dtype=args.dtype, weights_dtype="float32", total_params=total, layers=layers,
        modules=module_entries,
        timing=dict(device="cpu", cpu=cpu_name(), threads=args.threads,
                    micro_batch=args.micro_batch, samples=timer.samples,
                    forward_total_s=timer.forward_total_s / max(timer.samples, 1),
                    backward_total_s=timer.backward_total_s / max(timer.samples, 1),
                    # Times on a shared machine are inflated; say how busy it was.
                    load_average=[round(x, 2) for x in os.getloadavg()],
                    method="module hooks with time.perf_counter; see "
                           "scripts/trace_tools/timing.py"),
        loss=loss_log, test_accuracy=accuracy,
        capture=dict(command=capture_command(), torch_version=torch.__version__,
                     numpy_version=np.__version__, host=platform.node(),
                     date=datetime.datetime.now(datetime.timezone.utc).isoformat(
                         timespec="seconds"),
                     seconds=round(time.time() - started, 1)))
    if args.model_file:
        # Which version of the user's file made the trace: the command
        # names its path, which may hold another model by now.
        with open_input(args.model_file, "rb") as source:
            manifest["capture"]["model_file_sha256"] = hashlib.sha256(source.read()).hexdigest()
    if f16:
        manifest["float16_loss"] = dict(
            files=len(f16),
            max_relative_l2_error=max(e["relative_l2_error"] for e in f16),
            mean_relative_l2_error=float(np.mean([e["relative_l2_error"] for e in f16])),
            max_elementwise_relative_error=max(e["max_elementwise_relative_error"] for e in f16),
            flushed_to_zero=sum(e["flushed_to_zero"] for e in f16),
            overflow=sum(e["overflow"] for e in f16))
        print("float16 storage loss: " + json.dumps(manifest["float16_loss"]))
    write_atomically(os.path.join(staging, "manifest.json"), dump_manifest(manifest))
    return f"iterations {captured}, {len(captured) * args.workers} gradient files"


def dump_manifest(manifest):
    """JSON with one line per layer and per module, so a person can read it."""
    lines = []
    for i, (key, value) in enumerate(manifest.items()):
        comma = "," if i + 1 < len(manifest) else ""
        if isinstance(value, list) and value and isinstance(value[0], dict):
            items = [" " * 4 + json.dumps(item) for item in value]
            lines.append(f'  "{key}": [\n' + ",\n".join(items) + "\n  ]" + comma)
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}{comma}")
    return "{\n" + "\n".join(lines) + "\n}\n"


def cpu_name():
    return cpu_identity().get("cpu") or platform.processor() or "unknown"


def capture_command():
    # Relative to the repository so the manifest does not depend on where it ran.
    script = os.path.relpath(os.path.abspath(sys.argv[0]), REPO)
    return " ".join(["/usr/bin/python3", script] + [shlex.quote(a) for a in sys.argv[1:]])


def main(argv):
    args = parse_args(argv)
    captures = [args]
    if args.preset == "cache":
        captures = [parse_args(["--preset", name] + (["--force"] if args.force else []))
                    for name in CACHE_PRESETS]
    # Every output checked before the first capture: a later preset's folder
    # refused after minutes of capturing the earlier ones would leave half
    # the set written.
    for capture_args in captures:
        check_args(capture_args)
    for capture_args in captures:
        capture_one(capture_args)


def capture_one(args):
    # The trace is made in a folder beside OUT, which takes OUT's place only
    # once it is complete; a failed capture removes it and leaves OUT as it was.
    out = os.path.abspath(args.out)
    with atomic_folder(out) as staging:
        summary = capture(args, staging)
    print(f"wrote {out}: {summary}")


if __name__ == "__main__":
    run_script(main, sys.argv[1:])
