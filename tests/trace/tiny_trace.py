"""A tiny valid trace written with NumPy only (no torch), for tests that
break it in controlled ways."""
import json
import os

import numpy as np

LAYERS = [("fc1.weight", "fc1", [4, 6]), ("fc1.bias", "fc1", [4]),
          ("fc2.weight", "fc2", [3, 4]), ("fc2.bias", "fc2", [3])]


def write(folder, workers=2, iterations=(0, 1), dtype="float32"):
    layers, offset = [], 0
    for name, module, shape in LAYERS:
        n = int(np.prod(shape))
        layers.append(dict(name=name, module=module, shape=shape, params=n, offset=offset))
        offset += n
    rng = np.random.default_rng(0)
    for it in iterations:
        sub = os.path.join(folder, "iterations", f"{it:06d}")
        os.makedirs(sub, exist_ok=True)
        np.save(os.path.join(sub, "weights.npy"), rng.standard_normal(offset).astype(np.float32))
        for w in range(workers):
            np.save(os.path.join(sub, f"worker_{w:03d}.npy"),
                    rng.standard_normal(offset).astype(dtype))
    modules = [dict(name="fc1", type="Linear", params=28, forward_s=1e-4, backward_s=2e-4),
               dict(name="relu", type="ReLU", params=0, forward_s=1e-5, backward_s=1e-5),
               dict(name="fc2", type="Linear", params=15, forward_s=5e-5, backward_s=1e-4)]
    manifest = dict(format="gcsim-trace", format_version=1, model="mlp", dataset="synthetic",
                    workers=workers, micro_batch=8, learning_rate=0.1, seed=1,
                    iterations=list(iterations), dtype=dtype, total_params=offset,
                    layers=layers, modules=modules,
                    timing=dict(device="cpu", micro_batch=8, forward_total_s=2e-4,
                                backward_total_s=4e-4))
    with open(os.path.join(folder, "manifest.json"), "w") as stream:
        json.dump(manifest, stream, indent=1)
    return manifest
