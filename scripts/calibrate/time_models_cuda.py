#!/usr/bin/python3
"""Time the workload models' layers on a GPU, for the device profile's compute part.

For each model of workloads/models/ (built as scripts/generate_workloads.py
builds it, so the layer names match), runs forward and backward passes of one
micro-batch of random data and times every leaf module with CUDA events
(scripts/trace_tools/timing.py, CudaClock), after warm-up. FP32 with TF32
off, like gcsim_calibrate_cuda's SGEMM rate, unless --tf32; with --autocast
bf16 (or fp16) the forward passes run under torch.autocast, as mixed-precision
training runs them (weights, gradients and their exchange stay FP32). Writes one JSON
file; scripts/calibrate/fit_compute.py turns it into the profile's compute
section and compares the profile's prediction with it.

    python3 scripts/calibrate/time_models_cuda.py --out h200-layer-times.json
    /usr/bin/python3 scripts/calibrate/time_models_cuda.py --device cpu --models resnet18-cifar10 \\
        --batch 4 --iterations 2 --warmup 1 --out /tmp/cpu-layer-times.json   # a smoke test
"""

import argparse
import contextlib
import datetime
import os
import platform
import statistics
import sys
import time

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from generate_workloads import models  # noqa: E402
from trace_tools.models import no_inplace  # noqa: E402
from trace_tools.timing import CpuClock, CudaClock, LayerTimer  # noqa: E402
from atomic_write import write_json_atomically  # noqa: E402
from script_input import Parser, check_output_file, run_script  # noqa: E402

DEFAULT_MODELS = ["resnet50-imagenet", "vgg16-imagenet", "alexnet-imagenet", "resnet18-cifar10"]
MAX_BATCH = 1 << 20  # what fit_compute.py and gcsim's scenarios take
AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}


def parse_args(argv):
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="JSON file to write")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help="comma-separated workloads/models names (image models, and "
                             "token models whose batch comes first, such as bert-base-seq128)")
    parser.add_argument("--batch", type=int, default=32, help="samples per micro-batch")
    parser.add_argument("--warmup", type=int, default=5, help="untimed iterations first")
    parser.add_argument("--iterations", type=int, default=20, help="timed iterations")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--tf32", action="store_true", help="allow TF32 in matmul and cuDNN")
    parser.add_argument("--autocast", choices=sorted(AUTOCAST),
                        help="run the forward passes under torch.autocast in this type")
    parser.add_argument("--gemm-size", type=int, default=4096,
                        help="also time an N x N x N matrix product in the same precision, the "
                             "forward rate of a profile fitted to these times (0: none)")
    args = parser.parse_args(argv)
    if not args.out:
        parser.error("--out: expected a file name, got ''")
    if not 1 <= args.batch <= MAX_BATCH:
        parser.error(f"--batch: expected an integer in [1, {MAX_BATCH}], got {args.batch}")
    if args.warmup < 0:
        parser.error(f"--warmup: expected an integer >= 0, got {args.warmup}")
    if args.iterations < 1:
        parser.error(f"--iterations: expected an integer >= 1, got {args.iterations}")
    if not 0 <= args.gemm_size <= 1 << 15:
        parser.error(f"--gemm-size: expected an integer in [0, 32768], got {args.gemm_size}")
    return args


def forward_context(args, device):
    """What the forward passes run inside: torch.autocast, or nothing."""
    if not args.autocast:
        return contextlib.nullcontext
    return lambda: torch.autocast(device.type, dtype=AUTOCAST[args.autocast])


def tokens_in(model):
    """The vocabulary of a model that reads token ids (its first embedding's), or 0."""
    return next((m.num_embeddings for m in model.modules() if isinstance(m, nn.Embedding)), 0)


def timeable(entry):
    """Whether time_models_cuda.py can feed the model: an image model, or a
    token model with the batch first (the LSTM's tokens come first)."""
    _, shape, _, unit = entry
    return unit == "image" or (unit == "sequence" and shape[0] == 1)


def time_model(build, shape, args, device, clock):
    torch.manual_seed(0)
    model = no_inplace(build().to(device).train())
    kinds = {module_name: type(module).__name__ for module_name, module in model.named_modules()}
    vocabulary = tokens_in(model)
    if vocabulary:
        x = torch.randint(0, vocabulary, (args.batch,) + tuple(shape[1:]), device=device)
    else:
        x = torch.randn((args.batch,) + tuple(shape[1:]), device=device)
    with torch.no_grad():
        classes = model(x[:1]).shape[-1]
    y = torch.randint(0, classes, (args.batch,), device=device)
    loss_fn = nn.CrossEntropyLoss()

    context = forward_context(args, device)

    def forward():
        with context():
            return loss_fn(model(x), y)

    for _ in range(args.warmup):
        model.zero_grad(set_to_none=True)
        forward().backward()
    clock.wait()

    # The whole passes without hooks first: the hooks' own host time can leave
    # the GPU idle when kernels are short, and this says how much.
    plain_forward, plain_backward = [], []
    for _ in range(args.iterations):
        model.zero_grad(set_to_none=True)
        start = clock.mark()
        loss = forward()
        middle = clock.mark()
        loss.backward()
        end = clock.mark()
        clock.wait()
        plain_forward.append(clock.seconds(start, middle))
        plain_backward.append(clock.seconds(middle, end))

    timer = LayerTimer(model, clock)
    forward, backward = [], []
    for _ in range(args.iterations):
        model.zero_grad(set_to_none=True)
        before_f, before_b = timer.forward_total_s, timer.backward_total_s
        timer.run(model, loss_fn, x, y, context)
        forward.append(timer.forward_total_s - before_f)
        backward.append(timer.backward_total_s - before_b)
    # (A layer of the model's own parameters is named after its class.)
    layers = [{"name": layer, "module": kinds.get(layer, layer), "forward_s": f, "backward_s": b}
              for layer, f, b in timer.averages()]
    return {"batch": args.batch, "iterations": args.iterations, "warmup": args.warmup,
            "plain_forward_median_s": statistics.median(plain_forward),
            "plain_backward_median_s": statistics.median(plain_backward),
            "forward_median_s": statistics.median(forward),
            "backward_median_s": statistics.median(backward),
            "forward_mean_s": timer.forward_total_s / timer.samples,
            "backward_mean_s": timer.backward_total_s / timer.samples,
            "layers": layers}


def time_gemm(args, device, clock):
    """The FLOP rate of one N^3 product under the file's precision settings:
    what cuBLAS reaches in FP32, with TF32 allowed or in the autocast type, so
    that a profile fitted to such passes has their forward rate, not the FP32
    SGEMM's."""
    n = args.gemm_size
    torch.manual_seed(0)
    # Under autocast the layers' products run in its type: so does this one,
    # on operands cast before the timing, as a cast weight is reused.
    dtype = AUTOCAST[args.autocast] if args.autocast else torch.float32
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    for _ in range(args.warmup):
        torch.mm(a, b)
    clock.wait()
    seconds = []
    for _ in range(args.iterations):
        start = clock.mark()
        torch.mm(a, b)
        end = clock.mark()
        clock.wait()
        seconds.append(clock.seconds(start, end))
    median = statistics.median(seconds)
    return {"size": n, "median_s": median, "flop_rate": 2 * n ** 3 / median}


def main(argv):
    args = parse_args(argv)
    known = models()
    names = args.models.split(",")
    for name in names:  # every model and the output checked before any timing
        if name not in known or not timeable(known[name]):
            print(f"time_models_cuda.py: --models: {name!r} is not a model of workloads/models "
                  f"that this script can time ({', '.join(n for n in known if timeable(known[n]))})",
                  file=sys.stderr)
            return 2
    check_output_file(args.out)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("time_models_cuda.py: no CUDA device is available", file=sys.stderr)
        return 1
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    device = torch.device(args.device)
    clock = CudaClock() if args.device == "cuda" else CpuClock()
    result = {
        "format": "gcsim-layer-times/1",
        "command": " ".join(["python3", "scripts/calibrate/time_models_cuda.py"] + argv),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "host": platform.node(),
        "device": torch.cuda.get_device_name() if args.device == "cuda" else platform.processor(),
        "torch_version": torch.__version__,
        "cudnn_version": torch.backends.cudnn.version() if args.device == "cuda" else None,
        "settings": {"dtype": "float32", "tf32": args.tf32,
                     "autocast": str(AUTOCAST[args.autocast]).replace("torch.", "")
                     if args.autocast else None,
                     "cudnn_benchmark": torch.backends.cudnn.benchmark,
                     "timing": "CUDA events around every leaf module (forward) and between "
                               "output-gradient hooks (backward); means over the timed iterations"},
        "models": {},
    }
    if args.gemm_size:
        result["gemm"] = time_gemm(args, device, clock)
        print(f"gemm {args.gemm_size}^3: {result['gemm']['flop_rate'] / 1e12:.4g} TFLOP/s "
              f"(median of {args.iterations})", flush=True)
    for name in names:
        build, shape = known[name][0], known[name][1]
        started = time.perf_counter()
        result["models"][name] = time_model(build, shape, args, device, clock)
        entry = result["models"][name]
        print(f"{name}: forward {entry['forward_median_s'] * 1e3:.3f} ms, backward "
              f"{entry['backward_median_s'] * 1e3:.3f} ms; without hooks "
              f"{entry['plain_forward_median_s'] * 1e3:.3f} + "
              f"{entry['plain_backward_median_s'] * 1e3:.3f} ms (median of {args.iterations}; "
              f"{time.perf_counter() - started:.1f} s)", flush=True)
    write_json_atomically(args.out, result, indent=1)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    run_script(main, sys.argv[1:])
