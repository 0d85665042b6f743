#!/usr/bin/python3
"""scripts/minicluster/worker.py's training loop and latency probe, one rank
of two with torch.distributed stood in for (every rank sends what this one
sends) and a clock that advances one second per reading, so that every
phase is a whole number of readings (no namespace, no process group):

- each rank's file has --iterations records, one per step;
- a step's phases (forward, backward, compression, communication,
  optimizer, and the barrier's wait) add up to its iteration_s but for the
  one reading that starts the step: the step is measured from the end of
  the previous one, and no phase is counted twice or left out;
- the compressor's compression and communication times land in their own
  fields, dense has no compression; the barrier's wait is its own phase;
- bytes_sent_rank0 is per iteration (top-k: 8 k; fp16: 2 d; PowerSGD: 4 d
  before start_iteration, then the low-rank buffers), k and the layers'
  bytes and shapes are the model's (the small CNN's, or the wide one's with
  --model wide-cnn); compute alone holds forward, backward,
  optimizer (and the compression, for a compressor);
- ping_pong is half the round trip.

The live run cannot see these: its training errors are printed, not
asserted.

Usage: worker_train_test.py
"""
import json
import os
import sys
import tempfile

import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "minicluster"))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
import worker  # noqa: E402
from checks import Checks  # noqa: E402

check = Checks()
WORLD, RANK, ITERATIONS, BATCH, DENSITY, MATRIX_RANK = 2, 0, 5, 8, 0.01, 1


class Ticking:
    """worker.py's `time`: each perf_counter() reading one second after the last."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        self.now += 1.0
        return self.now


class SameEverywhere:
    """torch.distributed for rank RANK of WORLD, every rank doing what it does."""

    class ReduceOp:
        MAX = None

    def barrier(self):
        pass

    def get_rank(self):
        return RANK

    def get_world_size(self):
        return WORLD

    def all_reduce(self, tensor, op=None):
        if op is None:
            tensor.mul_(WORLD)

    def broadcast(self, tensor, src):
        pass

    def all_gather(self, outputs, tensor):
        for out in outputs:
            out.copy_(tensor)

    def all_gather_object(self, outputs, obj):
        for i in range(len(outputs)):
            outputs[i] = obj

    def send(self, tensor, dst):
        pass

    def recv(self, tensor, src):
        pass


def stood_in(action):
    real = worker.time, worker.dist
    worker.time, worker.dist = Ticking(), SameEverywhere()
    try:
        return action()
    finally:
        worker.time, worker.dist = real


def trained(compressor, barrier=False, sparse_class=None, model_name="cnn"):
    """The file rank 0 writes for `compressor`."""
    real_sparse = worker.Sparse
    if sparse_class:
        worker.Sparse = sparse_class
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "train.json")
            stood_in(lambda: worker.train(RANK, WORLD, out, compressor, ITERATIONS, BATCH, DENSITY,
                                          MATRIX_RANK, model_name, barrier=barrier))
            with open(out) as f:
                return json.load(f)
    finally:
        worker.Sparse = real_sparse


PHASES = ("forward_s", "backward_s", "compression_s", "communication_s", "optimizer_s", "wait_s")
model = worker.models.SmallCNN()
numel = sum(p.numel() for p in model.parameters())
k = int(DENSITY * numel)
for compressor, barrier in (("dense", False), ("topk", False), ("cltk", True), ("deft", False),
                            ("fp16", False), ("powersgd", True)):
    raw = trained(compressor, barrier)
    label = compressor + (" with barrier" if barrier else "")
    records = raw["per_rank"][RANK]
    check(len(raw["per_rank"]) == WORLD and all(len(r) == ITERATIONS for r in raw["per_rank"]),
          f"{label}: {[len(r) for r in raw['per_rank']]} records a rank, want {ITERATIONS}")
    gaps = [r["iteration_s"] - sum(r[p] for p in PHASES) for r in records]
    check(all(g == 1 for g in gaps) and all(r[p] >= 0 for r in records for p in PHASES),
          f"{label}: each step's phases add up to its iteration_s but for the reading that starts "
          f"it (gaps {gaps} s, want 1 each)")
    waits = [r["wait_s"] for r in records]
    check(all(w == (1.0 if barrier else 0.0) for w in waits),
          f"{label}: the barrier's wait {waits} (one reading {'with' if barrier else 'without'} it)")
    if compressor == "dense":
        check(all(r["compression_s"] == 0 and r["communication_s"] > 0 for r in records)
              and raw["k"] is None and raw["bytes_sent_rank0"] is None,
              f"dense: no compression, its allreduce timed, no k and no bytes "
              f"({records[0]['compression_s']}, {records[0]['communication_s']})")
    alone = raw["alone_per_rank"][RANK]
    check(len(alone) == (3 if compressor == "dense" else 4) and all(a > 0 for a in alone),
          f"{label}: compute alone {alone}")
    if compressor in ("topk", "cltk"):
        check(raw["k"] == k and raw["bytes_sent_rank0"] == 8 * k,
              f"{label}: k = {raw['k']} (want {k}), {raw['bytes_sent_rank0']} bytes an iteration "
              f"(want 8 k = {8 * k})")
    if compressor == "fp16":
        check(raw["k"] is None and raw["bytes_sent_rank0"] == 2 * numel,
              f"fp16: {raw['bytes_sent_rank0']} bytes an iteration (want 2 d = {2 * numel})")
    if compressor == "powersgd":
        # Two plain steps (start_iteration), then the biases whole and
        # rows + cols a matrix (rank 1; every weight of the CNN is compressed).
        shapes = [p.shape for p in model.parameters()]
        low_rank = sum(s[0] + s.numel() // s[0] if len(s) > 1 else s[0] for s in shapes)
        want = (2 * 4 * numel + (ITERATIONS - 2) * 4 * low_rank) / ITERATIONS
        check(raw["k"] is None and raw["bytes_sent_rank0"] == want,
              f"powersgd: {raw['bytes_sent_rank0']} bytes an iteration (want {want})")
check(raw["layers"] == [dict(name=n, bytes=4 * p.numel(), shape=list(p.shape))
                        for n, p in model.named_parameters()],
      f"the layers' names and bytes: {raw['layers'][:2]} ...")

# run.py --model wide-cnn: the same CNN with fc1 2048 units wide, the
# model of the fmnist-wide-cnn-8w trace.
raw = trained("topk", model_name="wide-cnn")
layers = {layer["name"]: layer for layer in raw["layers"]}
check(sum(layer["bytes"] for layer in raw["layers"]) == 4 * 1084362
      and layers["fc1.weight"]["shape"] == [2048, 512] and raw["k"] == int(DENSITY * 1084362),
      f"wide-cnn: 1,084,362 parameters, fc1 2048 x 512, k of them: "
      f"{layers['fc1.weight']}, k {raw['k']}")


class Fixed(worker.Sparse):
    """A compressor whose step reports 3.25 s of compression and 5.5 s of
    communication (the real step's update)."""

    def step(self, grad, iteration):
        return super().step(grad, iteration)[0], 3.25, 5.5


raw = trained("topk", sparse_class=Fixed)
records = raw["per_rank"][RANK]
check(all(r["compression_s"] == 3.25 and r["communication_s"] == 5.5 for r in records)
      and raw["alone_per_rank"][RANK][3] == 3.25,
      f"the step's compression and communication in their own fields: "
      f"{[(r['compression_s'], r['communication_s']) for r in records]}, alone "
      f"{raw['alone_per_rank'][RANK][3:]}")

# ping_pong: a round trip of two readings' difference (1 s) is 0.5 s one way.
torch.manual_seed(0)
one_way = stood_in(worker.ping_pong)
check(one_way == 0.5, f"ping_pong: half the 1 s round trip: {one_way}")

check.finish()
