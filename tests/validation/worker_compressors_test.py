#!/usr/bin/python3
"""The mini-cluster's own compressors (scripts/minicluster/worker.py's Sparse)
run alone, with StandIns in place of gloo's collectives, as run.py's
`compute_alone.compression_s` times them. No namespace, no process group.

On one gradient of the small CNN's size, four ranks each alone:
  - topk: every rank's update holds its k selected values (the stand-in
    allgather gave every rank's slot this rank's pairs);
  - cltk: a rank that does not lead still gets k indices, the leader's
    selection made by the stand-in broadcast (zeros would give one);
  - deft: the ranks' bins, each picked from the leader's packing that the
    stand-in broadcast made, cover every packed partition's k_i exactly
    once between them, and whole partitions are in every update;
  - every step times some compression, and the leader's cltk step times
    more than a follower's (only the leader selects);
  - compression_alone waits in the barrier on every turn, times 3 P steps
    after P warm-ups (iterations 0 .. 4P - 1, so each rank leads three
    times), each from the gradient with no residual, and returns their mean.

Usage: worker_compressors_test.py
"""
import os
import sys

import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "minicluster"))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
import worker  # noqa: E402
from checks import Checks  # noqa: E402

check = Checks()
WORLD = 4
DENSITY = 0.01

torch.manual_seed(3)
sizes = [p.numel() for p in worker.SmallCNN().parameters()]
numel = sum(sizes)
# Gaussian rather than a real gradient, whose dead units give exact zeros
# that a selection may pick and an update then cannot show.
grad = torch.randn(numel)
grad[-sizes[-1]:] *= 1000  # the last bias: a partition DEFT keeps whole


def alone(name, rank, iteration):
    """(update, compression_s) of `rank` alone at `iteration`, fresh state."""
    sparse = worker.Sparse(name, numel, DENSITY, sizes, WORLD, rank, worker.StandIns(rank))
    update, compression, _ = sparse.step(grad.clone(), iteration)
    return update, compression, sparse


k = int(DENSITY * numel)
for rank in range(WORLD):
    update, compression, _ = alone("topk", rank, 0)
    check(int((update != 0).sum()) == k and compression > 0,
          f"topk rank {rank}: {int((update != 0).sum())} of k = {k} values, "
          f"{compression * 1e6:.0f} us of selection")

leading = alone("cltk", 0, 0)
following = alone("cltk", 1, 0)
for label, (update, compression, _) in (("leader", leading), ("follower", following)):
    check(int((update != 0).sum()) == k,
          f"cltk {label}: {int((update != 0).sum())} of k = {k} values from the leader's selection")
# The fastest of several, so that a busy machine does not decide it.
lead_s = min(alone("cltk", 0, 0)[1] for _ in range(5))
follow_s = min(alone("cltk", 1, 0)[1] for _ in range(5))
check(lead_s > follow_s,
      f"cltk: the leader's step times its selection ({lead_s * 1e6:.0f} us), "
      f"a follower's less ({follow_s * 1e6:.0f} us)")


class Recording:
    """A stand-in compressor that records the iterations it steps through and
    the residual each starts from, and reports the iteration as its time."""

    def __init__(self):
        self.residual = torch.ones(numel)
        self.seen = []

    def step(self, gradient, iteration):
        self.seen.append((iteration, float(self.residual.abs().sum())))
        return None, float(iteration), 0.0


barriers = []
made = []


def make_recording(comm):
    made.append((Recording(), comm))
    return made[-1][0]


mean = worker.compression_alone(make_recording, grad, WORLD, 2, lambda: barriers.append(1))
recording, comm = made[0]
check(len(made) == 1 and isinstance(comm, worker.StandIns) and comm.rank == 2,
      "compression_alone: one compressor, on stand-ins for rank 2")
check([it for it, _ in recording.seen] == list(range(4 * WORLD))
      and all(residual == 0 for _, residual in recording.seen),
      f"compression_alone: steps 0 .. {4 * WORLD - 1}, each from no residual")
check(mean == sum(range(WORLD, 4 * WORLD)) / (3 * WORLD) and len(barriers) == 2 * WORLD,
      f"compression_alone: the mean of steps {WORLD} .. {4 * WORLD - 1} ({mean}), "
      f"{len(barriers)} barriers (two a turn)")

# DEFT: the partitions the leader packs and those it keeps whole, as worker.py decides.
parts = worker.deft_partitions(sizes, WORLD)
part_sizes = [n for _, n in parts]
ks = worker.deft_k([float(grad[o:o + n].norm()) for o, n in parts], part_sizes, k)
whole = {i for i in range(len(parts)) if ks[i] == part_sizes[i]}
check(len(whole) == 1, f"deft: {len(whole)} partition kept whole (the scaled bias)")
whole_positions = set()
for i in whole:
    o, n = parts[i]
    whole_positions |= set(range(o, o + n))
picked = []
for rank in range(WORLD):
    update, compression, _ = alone("deft", rank, 2)
    nonzero = set(torch.nonzero(update).flatten().tolist())
    check(compression > 0, f"deft rank {rank}: {compression * 1e6:.0f} us of selection")
    check(whole_positions <= nonzero, f"deft rank {rank}: the {len(whole)} whole partitions sent")
    picked.append(nonzero - whole_positions)
total = sum(len(p) for p in picked)
union = set().union(*picked)
packed_k = sum(ks[i] for i in range(len(parts)) if i not in whole)
check(total == len(union) == packed_k and all(picked),
      f"deft: the four bins hold {total} indices, {len(union)} distinct, the packed "
      f"partitions' k_i add up to {packed_k}, every bin non-empty")

check.finish()
