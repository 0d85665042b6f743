#!/usr/bin/python3
"""Runs scripts/capture_traces.py on tiny configurations (a few seconds) and
checks what can be checked in Python: the training loss goes down, the same
seed gives byte-identical files, float16 storage reports its precision loss,
and NumPy opens every file. The C++ test then checks the captured data
itself (mean gradient == weight change / lr). Usage: capture_test.py OUTDIR"""
import filecmp
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "capture_traces.py")


def capture(out, *extra):
    args = ["/usr/bin/python3", SCRIPT, "--model", "cnn", "--dataset", "digits",
            "--workers", "4", "--micro-batch", "16", "--lr", "0.1", "--seed", "5",
            "--out", out, "--force"] + list(extra)
    result = subprocess.run(args, capture_output=True, text=True)
    print(result.stdout)
    if result.returncode != 0:
        sys.exit(f"capture failed: {result.stderr}")
    with open(os.path.join(out, "manifest.json")) as stream:
        return json.load(stream)


def main(out):
    failures = []
    steps = ["--iterations", "40", "--capture-start", "37", "--capture-stride", "1"]
    a = capture(os.path.join(out, "a"), *steps)
    capture(os.path.join(out, "b"), *steps)  # the same seed again: compared file by file
    if a["iterations"] != [37, 38, 39]:
        failures.append(f"captured iterations {a['iterations']}, expected [37, 38, 39]")
    first, last = a["loss"][0]["loss"], np.mean([e["loss"] for e in a["loss"][-3:]])
    print(f"loss {first:.4f} at iteration 0, {last:.4f} over the last logged iterations")
    if not last < 0.9 * first:
        failures.append(f"loss did not go down: {first} -> {last}")
    for it in a["iterations"]:
        sub = os.path.join("iterations", f"{it:06d}")
        names = ["weights.npy"] + [f"worker_{w:03d}.npy" for w in range(4)]
        for name in names:
            path_a = os.path.join(out, "a", sub, name)
            if not filecmp.cmp(path_a, os.path.join(out, "b", sub, name), shallow=False):
                failures.append(f"{sub}/{name} differs between two runs with the same seed")
            if np.load(path_a).shape != (a["total_params"],):
                failures.append(f"{path_a}: numpy reads a wrong shape")
    h = capture(os.path.join(out, "f16"), "--iterations", "3", "--dtype", "float16")
    loss16 = h.get("float16_loss")
    if loss16 is None:
        failures.append("float16 capture did not report its precision loss")
    else:
        print("float16 loss:", json.dumps(loss16))
        if not 0 < loss16["max_relative_l2_error"] < 1e-3:
            failures.append(f"float16 relative L2 error {loss16['max_relative_l2_error']}")
    if np.load(os.path.join(out, "f16", "iterations", "000001", "worker_000.npy")).dtype != np.float16:
        failures.append("float16 capture did not store float16")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
