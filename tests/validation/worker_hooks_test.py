#!/usr/bin/python3
"""scripts/minicluster/worker.py's PowerSGD and HalfPrecision against the
PyTorch DDP communication hooks they follow (powerSGD_hook,
fp16_compress_hook), on two real gloo processes over the loopback (a file
store, no namespace):

  - the same per-rank gradients, six steps, into worker.PowerSGD (real gloo
    collectives) and into the hook (a stand-in for DDP's GradBucket: one
    bucket of every gradient in the parameters' order): the updates agree to
    float rounding at ranks 1 and 4 (4: the hook's QR, one of the small
    CNN's matrices kept whole), before start_iteration (plain mean) and
    after (the first random Q, then warm starts and error feedback); and on
    a layout whose matrices repeat a shape apart, which the hook groups by
    shape (its P, Q and first random draw in that order);
  - the update is not the plain mean once compressed (the test could not
    tell a PowerSGD that sent the whole gradient);
  - PowerSGD's bytes a compressed step are the buffers the hook allreduces:
    the small CNN's biases whole, and (rows + cols) r for each matrix;
  - HalfPrecision's update equals fp16_compress_hook's bit for bit.

Usage: worker_hooks_test.py
"""
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "minicluster"))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
import worker  # noqa: E402
from checks import Checks  # noqa: E402

WORLD, STEPS, START = 2, 6, 2
CNN = [p.shape for p in worker.models.SmallCNN().parameters()]


class Bucket:
    """What the hooks read of DDP's GradBucket: one flat buffer whose
    per-parameter views are the gradients."""

    def __init__(self, flat, shapes):
        self.flat, self.views, offset = flat, [], 0
        for shape in shapes:
            n = int(torch.Size(shape).numel())
            self.views.append(flat[offset:offset + n].view(shape))
            offset += n

    def buffer(self):
        return self.flat

    def gradients(self):
        return self.views

    def index(self):
        return 0

    def is_last(self):
        return True


def gradients(shapes, rank):
    """STEPS flat gradients of `rank`, different on each rank and step."""
    numel = sum(int(torch.Size(s).numel()) for s in shapes)
    generator = torch.Generator().manual_seed(100 + rank)
    return [torch.randn(numel, generator=generator) for _ in range(STEPS)]


# Two matrices of one shape with another between them, and vectors.
REPEATED = [torch.Size(s) for s in ((16, 25), (16,), (30, 40), (16, 25), (10,))]


def compare(rank, store, results):
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=WORLD)
    found = {}
    for layout, shapes, matrix_rank in (("cnn", CNN, 1), ("cnn", CNN, 4),
                                        ("repeated", REPEATED, 1)):
        grads = gradients(shapes, rank)
        mine = worker.PowerSGD(shapes, WORLD, matrix_rank, start_iteration=START)
        state = powerSGD_hook.PowerSGDState(process_group=None,
                                            matrix_approximation_rank=matrix_rank,
                                            start_powerSGD_iter=START, random_seed=0)
        worst, moved, sent = 0.0, 0.0, []
        for step, grad in enumerate(grads):
            before = mine.bytes_sent
            update = mine.step(grad.clone(), step)[0]
            sent.append(mine.bytes_sent - before)
            hooked = powerSGD_hook.powerSGD_hook(state, Bucket(grad.clone(), shapes)).wait()
            worst = max(worst, float((update - hooked).abs().max() / hooked.abs().max()))
            mean = grad.clone()
            dist.all_reduce(mean)
            mean /= WORLD
            if step >= START:
                moved = max(moved, float((update - mean).norm() / mean.norm()))
        found[layout, matrix_rank] = (worst, moved, sent)
    grad = gradients(CNN, rank)[0]
    half = worker.HalfPrecision(WORLD).step(grad.clone(), 0)[0]
    hooked = default_hooks.fp16_compress_hook(None, Bucket(grad.clone(), CNN)).wait()
    found["fp16"] = bool(torch.equal(half, hooked))
    dist.destroy_process_group()
    results[rank] = found


def main():
    check = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        results = mp.Manager().dict()
        mp.spawn(compare, args=(os.path.join(tmp, "store"), results), nprocs=WORLD)
        results = dict(results)
    for layout, shapes, matrix_rank in (("cnn", CNN, 1), ("cnn", CNN, 4),
                                        ("repeated", REPEATED, 1)):
        # The hook's own rule (torch's _should_compress), written out here.
        want = 0
        for shape in shapes:
            rows = shape[0]
            cols = int(torch.Size(shape).numel()) // rows
            r = min(rows, cols, matrix_rank)
            want += 4 * ((rows + cols) * r if (rows + cols) * r * 2 < rows * cols else rows * cols)
        dense = 4 * sum(int(torch.Size(s).numel()) for s in shapes)
        for rank in range(WORLD):
            worst, moved, sent = results[rank][layout, matrix_rank]
            label = f"{layout}, rank {rank}, r = {matrix_rank}"
            check(worst < 1e-4, f"{label}: worker's PowerSGD against powerSGD_hook over {STEPS} "
                  f"steps: largest difference {worst:.2e} of the largest value")
            check(moved > 0.1, f"{label}: compressed updates are {moved:.3f} off the plain mean "
                  "(relative L2), not the mean")
            check(sent == [dense] * START + [want] * (STEPS - START),
                  f"{label}: bytes a step {sent}, want {dense} before step {START}, then {want}")
    for rank in range(WORLD):
        check(results[rank]["fp16"], f"rank {rank}: HalfPrecision equals fp16_compress_hook")
    check.finish()


if __name__ == "__main__":
    main()
