#!/usr/bin/python3
"""Writes the derived GPU device profiles (platforms/devices/{gtx1080ti,v100,a100,h100}.json).

Nobody could measure these GPUs for gcsim yet, so every figure below is either a
published number (spec sheets, the kljp/topk_results logs, pytorch#22812; see
../../../shared/PAPERS.md) or a named assumption, and each profile lists them in
its provenance. Rerun after changing a figure:

    /usr/bin/python3 scripts/calibrate/derive_gpu_profiles.py

When a GPU is available, `build/gcsim_calibrate_cuda` measures a
profile instead, and the measured file replaces the derived one.
"""
import json
import math
import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "scripts"))
from atomic_write import write_json_atomically  # noqa: E402
from script_input import Parser, parse_duration, run_script  # noqa: E402

# ---------------------------------------------------------------- public figures
KLJP = "kljp/topk_results training logs (PyTorch 1.5, V100-class GPUs, 4 workers, density 0.001), as summarised in shared/PAPERS.md"
PR22812 = "pytorch/pytorch#22812 (P100, PyTorch 1.1)"

GPUS = {
    "gtx1080ti": {
        "model": "NVIDIA GeForce GTX 1080 Ti",
        "bandwidth": 484e9, "bandwidth_text": "484 GB/s (11 Gbps GDDR5X, 352-bit)",
        "fp32": 11.34e12, "fp32_text": "11.34 TFLOPS FP32 (3584 CUDA cores x 1582 MHz boost x 2)",
        "spec": "NVIDIA GeForce GTX 1080 Ti specifications page (nvidia.com/en-us/geforce/10-series) and launch whitepaper",
        "l2": 2.75 * 2**20, "regime": "legacy_torch_topk",
    },
    "v100": {
        "model": "NVIDIA Tesla V100-SXM2",
        "bandwidth": 900e9, "bandwidth_text": "900 GB/s HBM2",
        "fp32": 15.7e12, "fp32_text": "15.7 TFLOPS FP32 (SXM2)",
        "spec": "NVIDIA Tesla V100 GPU datasheet (2017/2018)",
        "l2": 6 * 2**20, "regime": "legacy_torch_topk",
    },
    "a100": {
        "model": "NVIDIA A100-SXM4-40GB",
        "bandwidth": 1555e9, "bandwidth_text": "1,555 GB/s HBM2 (40 GB)",
        "fp32": 19.5e12, "fp32_text": "19.5 TFLOPS FP32 (non-tensor)",
        "spec": "NVIDIA A100 Tensor Core GPU datasheet",
        "l2": 40 * 2**20, "regime": "radix_select_memory_bound",
    },
    "h100": {
        "model": "NVIDIA H100 SXM5 80GB",
        "bandwidth": 3.35e12, "bandwidth_text": "3.35 TB/s HBM3",
        "fp32": 67e12, "fp32_text": "67 TFLOPS FP32 (non-tensor, SXM)",
        "spec": "NVIDIA H100 Tensor Core GPU datasheet",
        "l2": 50 * 2**20, "regime": "radix_select_memory_bound",
    },
}

# kljp ResNet-18 CIFAR-10 at batch 256 per worker (V100-class).
KLJP_FORWARD_S = 29.0e-3
KLJP_BACKWARD_S = 68.5e-3
KLJP_BATCH = 256
# kljp torch.topk over the whole flattened gradient at density 0.001.
KLJP_TOPK = [  # (model, n, seconds)
    ("ResNet-18 CIFAR-10", 11_173_962, 106e-3),
    ("LSTM WikiText-2", 28_949_319, 340e-3),
]
# The layer spec the kljp times are of: the simulator prices each of its
# layers, so the anchor is met layer by layer, latency and kinds included.
RESNET18_SPEC = os.path.join(REPO, "workloads", "models", "resnet18-cifar10.json")
# The one GPU whose layer latency was fitted to timed passes (fit_compute.py, FP32).
H200_PROFILE = os.path.join(REPO, "platforms", "devices", "h200.json")
P100_BANDWIDTH = 732e9  # P100 SXM2 datasheet, for the pytorch#22812 cross-check
PR22812_N, PR22812_K, PR22812_S = 2_000_000, 1000, 25.6e-3

# ---------------------------------------------------------------- assumptions
LAUNCH_S = 5e-6  # one CUDA kernel launch + framework dispatch, order of magnitude
STREAM_EFFICIENCY = 0.8  # share of spec bandwidth a streaming kernel reaches
SECTOR = 32  # bytes a random 4-byte access moves (one DRAM sector)
RADIX_PASSES = 5  # 4 histogram passes (8-bit digits of a 32-bit key) + 1 compaction pass
LEGACY_TOPK_LATENCY_S = 20e-6
LAYER_EFFICIENCY = {  # relative to the conv rate derived from ResNet-18; assumptions
    "conv": 1.0, "linear": 1.0, "norm": 0.05, "embedding": 0.05,
    "lstm": 0.5, "attention": 0.7, "other": 0.1,
}


def h200_layer_latency():
    """The H200's layer latency in FP32, fitted to its timed passes (seconds), and its text."""
    with open(H200_PROFILE) as f:
        text = json.load(f)["compute"]["layer_latency"]
    return parse_duration(text), text


def resnet18_layers():
    with open(RESNET18_SPEC) as f:
        return json.load(f)["layers"]


def anchored_rate(layers, flops_field, anchor_s, latency_s):
    """The FLOP rate at which the simulator's passes over `layers` (each the
    latency plus its FLOPs at the rate times its kind's efficiency) add up to
    `anchor_s` at kljp's batch."""
    weighted = sum(KLJP_BATCH * layer[flops_field] / LAYER_EFFICIENCY[layer["kind"]] for layer in layers)
    return weighted / (anchor_s - len(layers) * latency_s)


def legacy_topk_ns():
    """Least-squares c (through the origin) of t = c * n * log2(k) on kljp's two figures."""
    xs = [n * math.log2(math.floor(0.001 * n)) for _, n, _ in KLJP_TOPK]
    ts = [t for _, _, t in KLJP_TOPK]
    return sum(x * t for x, t in zip(xs, ts)) / sum(x * x for x in xs), xs, ts


def segment(**coefficients):
    return dict(coefficients)


def kernel(family, range_, segments, source, regime):
    return {"regime": regime, "source": source,
            "fit": {"family": family, "range": range_, "segments": segments}}


def fmt(x):
    return float(f"{x:.7g}")


def build(key, gpu, figures):
    bw = gpu["bandwidth"] * STREAM_EFFICIENCY
    per_byte = 1.0 / bw
    L = LAUNCH_S
    n_range = [1024, 2**28]
    k_range = [1, 2**28 // 10]
    stream = "memory-bound: latency = launches x %g us; per element = bytes moved / (%.0f%% of %s)" % (
        L * 1e6, STREAM_EFFICIENCY * 100, gpu["bandwidth_text"])

    def linear(bytes_per_element, launches, what):
        return kernel("latency_linear", {"n": n_range},
                      [segment(latency_s=fmt(launches * L), per_n_s=fmt(bytes_per_element * per_byte))],
                      f"{what}: {bytes_per_element} B/element, {launches} launch(es); {stream}",
                      "memory_bound")

    kernels = {}
    c_legacy, _, _ = legacy_topk_ns()
    if gpu["regime"] == "legacy_torch_topk":
        scale = GPUS["v100"]["bandwidth"] / gpu["bandwidth"]
        c = c_legacy * scale
        kernels["topk_select"] = kernel(
            "selection", {"n": n_range, "k": k_range},
            [segment(latency_s=LEGACY_TOPK_LATENCY_S, per_n_s=0.0, per_k_s=0.0, per_n_log2k_s=fmt(c))],
            "legacy torch.topk: t = c n log2 k with c = %.3f ns fitted to kljp's V100 figures "
            "(ResNet-18 106 ms, LSTM 340 ms at density 0.001)%s" % (
                c_legacy * 1e9,
                "" if scale == 1 else ", scaled by the memory-bandwidth ratio V100/%s = %.2f" % (key, scale)),
            "legacy_torch_topk")
    else:
        kernels["topk_select"] = kernel(
            "selection", {"n": n_range, "k": k_range},
            [segment(latency_s=fmt(6 * L), per_n_s=fmt(RADIX_PASSES * 4 * per_byte), per_k_s=0.0, per_n_log2k_s=0.0)],
            "radix select (PyTorch >= 1.12 torch.topk): %d passes over 4-byte floats, 6 launches; %s" % (
                RADIX_PASSES, stream),
            "radix_select_memory_bound")
    kernels["threshold_select"] = kernel(
        "latency_linear_nk", {"n": n_range, "k": k_range},
        [segment(latency_s=fmt(3 * L), per_n_s=fmt(4 * per_byte), per_k_s=fmt(8 * per_byte))],
        "CUB DeviceSelect: read 4 B/element, write 8 B per kept (index, value), 3 launches; " + stream,
        "memory_bound")
    kernels["l2_norm"] = linear(4, 2, "reduction of squares")
    kernels["sample_threshold"] = kernel(
        "sampling", {"n": n_range, "k": k_range},
        [segment(latency_s=fmt(8 * L), per_n_s=0.0, per_k_s=fmt((SECTOR + 4 * 8) * per_byte), per_k_log2k_s=0.0)],
        "k = samples random reads (one 32-B sector each) + radix sort of the samples (4 passes x 8 B); 8 launches; "
        + stream, "memory_bound")
    kernels["sketch_insert"] = kernel(
        "sketch_insert", {"n": n_range, "rows": [1, 32], "cols": [1, 2**26]},
        [segment(latency_s=fmt(2 * L), per_n_rows_s=fmt((2 * SECTOR) * per_byte),
                 per_rows_cols_s=fmt(4 * per_byte))],
        "one atomic add per (element, row) costing a 32-B sector read + write, table cleared at 4 B/cell; "
        "pessimistic when the table fits in L2 (%.0f MiB); " % (gpu["l2"] / 2**20) + stream,
        "memory_bound")
    kernels["sketch_query"] = kernel(
        "sketch_query", {"n": n_range, "rows": [1, 32]},
        [segment(latency_s=fmt(1 * L), per_n_rows_s=fmt(SECTOR * per_byte))],
        "one random 32-B sector read per (coordinate, row), median in registers; " + stream,
        "memory_bound")
    kernels["gather"] = linear(4 + SECTOR + 4, 1, "index read + random sector + value write")
    kernels["scatter_add"] = linear(4 + 4 + 2 * SECTOR, 1, "index + value read, atomic add on a random sector")
    kernels["sparse_pack"] = linear(4 + SECTOR + 8, 1, "n = pairs: index read, random value read, (index, value) write")
    kernels["sparse_unpack"] = linear(8 + SECTOR, 1, "n = pairs: (index, value) read, random write")
    kernels["dense_add"] = linear(12, 1, "y += x")
    kernels["dense_scale"] = linear(8, 1, "y *= a")
    kernels["fp16_cast"] = linear(6, 1, "float32 read, float16 write")
    kernels["sgd_momentum"] = linear(20, 1, "SGD with momentum: read w, g, m; write w, m")

    # Forward/backward: the FLOP rates at which the simulator's ResNet-18
    # passes take kljp's V100-class times, each layer paying the H200's
    # fitted layer latency; carried to the others as the same share of their
    # FP32 peak, the latency unchanged (an assumption: no other GPU's passes
    # were timed).
    layers = resnet18_layers()
    latency_s, latency_text = h200_layer_latency()
    forward_rate_v100 = anchored_rate(layers, "forward_flops", KLJP_FORWARD_S, latency_s)
    backward_rate_v100 = anchored_rate(layers, "backward_flops", KLJP_BACKWARD_S, latency_s)
    forward_share = forward_rate_v100 / GPUS["v100"]["fp32"]
    backward_share = backward_rate_v100 / GPUS["v100"]["fp32"]
    forward_flops = sum(layer["forward_flops"] for layer in layers)
    compute = {
        # Seven digits, so that the anchor holds to a millionth.
        "forward_flop_rate": "%.7gTflops" % (gpu["fp32"] * forward_share / 1e12),
        "backward_flop_rate": "%.7gTflops" % (gpu["fp32"] * backward_share / 1e12),
        "layer_latency": latency_text,
        "efficiency": LAYER_EFFICIENCY,
        "source": (
            "rates: gcsim's ResNet-18 CIFAR-10 passes (%d layers, %.4g GFLOP forward per sample) take kljp's "
            "V100-class forward 29.0 ms and backward 68.5 ms at batch 256 with each layer pass paying the layer "
            "latency and each kind its efficiency: %.4g and %.4g TFLOP/s, i.e. %.1f%% and %.1f%% of V100's "
            "15.7 TFLOPS FP32; this profile applies those shares to its own FP32 peak (%s). Layer latency: the "
            "H200's, fitted to its FP32 passes (h200.json), assumed the same on this GPU. Per-kind efficiencies "
            "other than conv are assumptions. FP32 without tensor cores (no TF32/AMP)." % (
                len(layers), forward_flops / 1e9, forward_rate_v100 / 1e12, backward_rate_v100 / 1e12,
                forward_share * 100, backward_share * 100, gpu["fp32_text"])),
    }

    sources = [
        {"figure": "%s memory bandwidth" % gpu["model"], "value": gpu["bandwidth_text"], "source": gpu["spec"]},
        {"figure": "%s FP32 peak" % gpu["model"], "value": gpu["fp32_text"], "source": gpu["spec"]},
        {"figure": "ResNet-18 CIFAR-10 forward / backward time, batch 256", "value": "29.0 ms / 68.5 ms",
         "source": KLJP},
        {"figure": "ResNet-18 CIFAR-10 layers", "value": "%d layers, %.4g GFLOP forward per sample" % (
            len(layers), forward_flops / 1e9),
         "source": "workloads/models/resnet18-cifar10.json (the layer spec the simulator prices)"},
        {"figure": "layer latency", "value": latency_text,
         "source": "the NVIDIA H200's, FP32: the intercept per layer pass that scripts/calibrate/fit_compute.py "
                   "fitted, with the H200's efficiencies, to whole timed GPU-bound passes of four models "
                   "(platforms/devices/h200.json); assumption: the same on this GPU (an order of magnitude)"},
        {"figure": "V100 FP32 peak (for the efficiency share)", "value": "15.7 TFLOPS",
         "source": GPUS["v100"]["spec"]},
        {"figure": "assumption: kernel launch + dispatch latency", "value": "%g us per launch" % (L * 1e6),
         "source": "assumption (order of magnitude commonly reported for CUDA launches); not measured"},
        {"figure": "assumption: achievable share of spec bandwidth", "value": "%.0f%%" % (STREAM_EFFICIENCY * 100),
         "source": "assumption (streaming benchmarks such as BabelStream typically reach 80-90% on HBM GPUs); not measured"},
        {"figure": "assumption: random 4-byte access cost", "value": "%d B (one DRAM sector)" % SECTOR,
         "source": "assumption from the CUDA memory model (32-byte sectors); not measured"},
        {"figure": "assumption: per-layer-kind efficiency relative to conv", "value": json.dumps(LAYER_EFFICIENCY),
         "source": "assumption; replace with per-layer times from a trace manifest when available"},
    ]
    if gpu["regime"] == "legacy_torch_topk":
        sources.append({"figure": "legacy torch.topk time", "value": "; ".join(
            "%s n=%d k=%d: %.0f ms" % (m, n, math.floor(0.001 * n), t * 1e3) for m, n, t in KLJP_TOPK),
            "source": KLJP})
        p100_c = PR22812_S / (PR22812_N * math.log2(PR22812_K))
        sources.append({"figure": "cross-check: P100 torch.topk k=1000 over 2M floats",
                        "value": "25.6 ms, i.e. %.2f ns per n log2 k at 732 GB/s (V100-fitted c scaled to 732 GB/s: %.2f ns)" % (
                            p100_c * 1e9, c_legacy * GPUS["v100"]["bandwidth"] / P100_BANDWIDTH * 1e9),
                        "source": PR22812 + "; P100 bandwidth from the Tesla P100 datasheet"})
    else:
        sources.append({"figure": "assumption: radix-select passes", "value": "%d passes over 4n bytes" % RADIX_PASSES,
                        "source": "assumption: 8-bit-digit radix select (4 histogram passes) + 1 compaction pass; "
                                  "shared/PAPERS.md: modern radix-select top-k is close to memory-bound"})

    regime_text = {
        "legacy_torch_topk": "legacy torch.topk (PyTorch <= 1.11): t ~ c n log2 k, as measured by the seeds' papers",
        "radix_select_memory_bound": "memory-bound radix select (PyTorch >= 1.12 torch.topk)",
    }[gpu["regime"]]
    return {
        "format": "gcsim-device-profile/1",
        "comment": "Derived, not measured: written by scripts/calibrate/derive_gpu_profiles.py; see platforms/devices/README.md.",
        "name": "%s (derived, %s)" % (gpu["model"], gpu["regime"]),
        "device": {"kind": "gpu", "model": gpu["model"],
                   "details": {"memory_bandwidth_Bps": gpu["bandwidth"], "fp32_peak_flops": gpu["fp32"],
                               "l2_cache_bytes": gpu["l2"]}},
        "provenance": {"kind": "derived", "regime": regime_text, "sources": sources},
        "compute": compute,
        "kernels": kernels,
    }


def main():
    # No options; argparse gives --help (and refuses anything else) before
    # the four profiles are written over.
    Parser(
        description="Writes the derived GPU device profiles "
                    "(platforms/devices/{gtx1080ti,v100,a100,h100}.json) from the figures "
                    "in this script.").parse_args()
    for key, gpu in GPUS.items():
        profile = build(key, gpu, None)
        path = os.path.join(REPO, "platforms", "devices", key + ".json")
        write_json_atomically(path, profile, indent=2)
        print("wrote", os.path.relpath(path, REPO))
    c, xs, ts = legacy_topk_ns()
    print("legacy topk c = %.4f ns (per-point: %s)" % (
        c * 1e9, ", ".join("%.3f" % (t / x * 1e9) for x, t in zip(xs, ts))))


if __name__ == "__main__":
    run_script(main)
