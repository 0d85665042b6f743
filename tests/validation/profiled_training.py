#!/usr/bin/python3
"""One rank of a small data-parallel training run on gloo over 127.0.0.1,
profiled as scripts/import_torch_profile.py expects: a range per iteration
and one per phase, with torch.autograd.profiler (the older profiler, which
Debian's torch, without Kineto, also records torch.profiler's traces with):
a range around each iteration, named by --step.

Usage: profiled_training.py RANK WORLD PORT OUT_DIR ITERATIONS
Writes OUT_DIR/trace-rankRANK.json, and rank 0 OUT_DIR/layers.json.
"""
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import profiler


def main(rank, world, port, out_dir, iterations):
    torch.set_num_threads(1)
    torch.manual_seed(rank)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    model = nn.Sequential(nn.Conv2d(1, 8, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(8 * 12 * 12, 10))
    params = list(model.parameters())
    x, y = torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,))
    with profiler.profile() as prof:
        for _ in range(iterations):
            with profiler.record_function("iteration"):
                with profiler.record_function("forward"):
                    loss = F.cross_entropy(model(x), y)
                with profiler.record_function("backward"):
                    loss.backward()
                flat = torch.cat([p.grad.reshape(-1) for p in params])
                dist.all_reduce(flat)
                with profiler.record_function("optimizer"), torch.no_grad():
                    offset = 0
                    for p in params:
                        p -= 0.01 * flat[offset:offset + p.numel()].view_as(p) / world
                        offset += p.numel()
                        p.grad = None
    prof.export_chrome_trace(os.path.join(out_dir, f"trace-rank{rank}.json"))
    if rank == 0:
        with open(os.path.join(out_dir, "layers.json"), "w") as f:
            json.dump([{"name": n, "bytes": 4 * p.numel()} for n, p in model.named_parameters()],
                      f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
