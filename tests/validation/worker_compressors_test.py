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
    more than a follower's (only the leader selects).

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
check(leading[1] > following[1],
      f"cltk: the leader's step times its selection ({leading[1] * 1e6:.0f} us), "
      f"a follower's less ({following[1] * 1e6:.0f} us)")

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
