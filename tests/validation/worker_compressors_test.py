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
What each one selects and sends, where a wrong program passed the above:
  - topk sends the k largest |g| (8 bytes each), cltk broadcasts from rank
    t mod P and sends 8 bytes per index;
  - deft's k_i follow the DEFT paper's order (descending norm), the leader packs
    the partitions by LPT on n_i log2 k_i, and rank r owns bin (t + r) mod P;
  - bench times `reps` collectives after one warm-up and keeps only those,
    sized as nccl-tests size them (an allgather's bytes are its output);
  - deft's bytes on a case worked by hand (the leader's assignment, the
    count, the padded indices, the union's values).

Usage: worker_compressors_test.py
"""
import json
import math
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
WORLD = 4
DENSITY = 0.01

torch.manual_seed(3)
sizes = [p.numel() for p in worker.models.SmallCNN().parameters()]
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

    def clear_residual(self):
        self.residual = torch.zeros(numel)

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

# topk: the k largest magnitudes, their own values, 8 bytes (value, int32 index) each.
update, _, sparse = alone("topk", 1, 0)
largest = set(torch.topk(grad.abs(), k).indices.tolist())
sent = set(torch.nonzero(update).flatten().tolist())
check(sent == largest and all(float(update[i]) == float(grad[i]) for i in sent),
      f"topk: the update holds the k = {k} largest |g| at their values "
      f"({len(sent & largest)} of {k} in place)")
check(sparse.bytes_sent == 8 * k, f"topk: {sparse.bytes_sent} bytes sent, 8 k = {8 * k}")


class RecordingStandIns(worker.StandIns):
    """StandIns that also keep each broadcast's root and what it carried."""

    def __init__(self, rank):
        super().__init__(rank)
        self.broadcasts = []

    def broadcast(self, tensor, src, leader_value):
        super().broadcast(tensor, src, leader_value)
        self.broadcasts.append((src, tensor.clone()))


roots = []
for iteration in range(2 * WORLD):
    comm = RecordingStandIns(0)
    sparse = worker.Sparse("cltk", numel, DENSITY, sizes, WORLD, 0, comm)
    sparse.step(grad.clone(), iteration)
    roots.append(comm.broadcasts[0][0])
    if iteration == 0:
        check(sparse.bytes_sent == 8 * k,
              f"cltk: {sparse.bytes_sent} bytes sent, 8 k = {8 * k} (k indices, k values)")
check(roots == [t % WORLD for t in range(2 * WORLD)],
      f"cltk: the broadcast's root is t mod P at t = 0 .. {2 * WORLD - 1}: {roots}")

# deft_k visits by descending norm: ascending would give [3, 1, 1].
check(worker.deft_k([5.0, 3.0, 2.0], [10, 10, 10], 5) == [2, 1, 2],
      f"deft_k([5, 3, 2], [10] * 3, 5) = {worker.deft_k([5.0, 3.0, 2.0], [10, 10, 10], 5)}, "
      "want [2, 1, 2]")

# LPT: largest first, each into the least loaded bin (ties: the lower bin).
check(worker.lpt_bins([5, 4, 3, 3, 3], 2) == [[0, 3], [1, 2, 4]],
      f"lpt_bins([5, 4, 3, 3, 3], 2) = {worker.lpt_bins([5, 4, 3, 3, 3], 2)}, "
      "want [[0, 3], [1, 2, 4]]")

# The leader's packing: LPT of the packed partitions on n_i log2 k_i (1 where k_i = 1).
comm = RecordingStandIns(2)
worker.Sparse("deft", numel, DENSITY, sizes, WORLD, 2, comm).step(grad.clone(), 2)
root, assignment = comm.broadcasts[0]
packed = [i for i in range(len(parts)) if i not in whole]
costs = [part_sizes[i] * math.log2(ks[i]) if ks[i] > 1 else part_sizes[i] for i in packed]
want = []
for members in worker.lpt_bins(costs, WORLD):
    want.append([packed[item] for item in members])
counts = assignment[:WORLD].tolist()
ids = assignment[WORLD:].tolist()
got, start = [], 0
for count in counts:
    got.append(ids[start:start + count])
    start += count
check(root == 2 and got == want,
      f"deft: rank 2 leads at t = 2 and broadcasts the LPT bins of n_i log2 k_i: {got} vs {want}")


def deft_picked(rank, iteration):
    update, _, _ = alone("deft", rank, iteration)
    return set(torch.nonzero(update).flatten().tolist()) - whole_positions


# Rank r owns bin (t + r) mod P: rank 0 at t = 3 owns what rank 1 owned at t = 2.
check(deft_picked(0, 3) == picked[1] and deft_picked(0, 3) != picked[0],
      "deft: the bins rotate with t (rank 0 at t = 3 selects rank 1's bin of t = 2)")


class NoNetwork:
    """torch.distributed as bench calls it, for one process."""

    class ReduceOp:
        MAX = None

    def barrier(self):
        pass


calls = []
# The fp16 hook's values, as the bench's float16 allreduces must sum them
# (a stand-in for the model's gradient over P).
HOOK = torch.tensor([0.5, -0.25, 0.0], dtype=torch.float16)
real_dist, real_all_max, real_ping_pong = worker.dist, worker.all_max, worker.ping_pong
real_run_collective, real_hook_values = worker.run_collective, worker.hook_values
worker.dist, worker.all_max, worker.ping_pong = NoNetwork(), (lambda v: v), (lambda: 1e-4)
worker.hook_values = lambda rank, world, model, batch: (
    HOOK if (rank, world, model, batch) == (0, WORLD, "wide-cnn", 8) else None)


def record(collective, data, outputs):
    calls.append((collective, data.numel(), len(outputs), str(data.dtype),
                  data[:4].tolist() if data.dtype == torch.float16 else None))
    data.mul_(WORLD)  # as a sum would: the next repetition must start again


worker.run_collective = record
try:
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "bench.json")
        worker.bench(0, WORLD, out, [1 << 20, 4 << 20], 3, "wide-cnn", 8)
        with open(out) as f:
            points = json.load(f)["collectives"]
finally:
    worker.dist, worker.all_max, worker.ping_pong = real_dist, real_all_max, real_ping_pong
    worker.run_collective, worker.hook_values = real_run_collective, real_hook_values
check(len(calls) == 7 * 4 and all(len(p["samples_s"]) == p["repetitions"] == 3 for p in points),
      f"bench: {len(calls)} collectives for 3 kinds at 2 sizes and a float16 allreduce, 3 "
      f"repetitions and a warm-up each, {[len(p['samples_s']) for p in points]} samples kept")
# nccl-tests' sizes: the whole buffer, an allgather's output (each rank's
# input a P-th of it); each point's time the median of its samples.
float32 = [c[:3] for c in calls if c[3] == "torch.float32"]
check([c for c in calls if c[2] != WORLD] == []
      and sorted(set(float32)) == [("allgather", (1 << 18) // WORLD, WORLD),
                                   ("allgather", (1 << 20) // WORLD, WORLD),
                                   ("allreduce", 1 << 18, WORLD), ("allreduce", 1 << 20, WORLD),
                                   ("broadcast", 1 << 18, WORLD), ("broadcast", 1 << 20, WORLD)]
      and [(p["collective"], p["algorithm"], p["ranks"], p["bytes"]) for p in points][:6]
      == [(c, a, WORLD, n) for c, a in (("allreduce", "ring"), ("allgather", "ring"),
                                        ("broadcast", "binomial_tree"))
          for n in (1 << 20, 4 << 20)]
      and all(p["seconds"] == sorted(p["samples_s"])[1] for p in points),
      f"bench: allreduce and broadcast of 2^18 and 2^20 floats, allgather of a P-th of that "
      f"each, every point 1 or 4 MiB, the median time: {sorted(set(float32))}, "
      f"{[(p['collective'], p['algorithm'], p['bytes']) for p in points]}")
# Float16 allreduces from 4 MiB only, each repetition summing the hook's
# values tiled, written as float16 points.
float16 = [c for c in calls if c[3] == "torch.float16"]
check(float16 == [("allreduce", 2 << 20, WORLD, "torch.float16", [0.5, -0.25, 0.0, 0.5])] * 4
      and points[6] == dict(points[6], collective="allreduce", algorithm="ring",
                            dtype="float16", bytes=4 << 20) and len(points) == 7,
      f"bench: one float16 allreduce of 4 MiB of the hook's values, every repetition: "
      f"{float16[:2]}, {points[6:]}")

# Without a size of 4 MiB or more there is no float16 allreduce, and no
# gradient is worked out for one.
hook_calls = []
worker.dist, worker.all_max, worker.ping_pong = NoNetwork(), (lambda v: v), (lambda: 1e-4)
worker.run_collective = record
worker.hook_values = lambda *args: hook_calls.append(args)
try:
    with tempfile.TemporaryDirectory() as scratch:
        worker.bench(0, WORLD, os.path.join(scratch, "bench.json"), [1 << 20], 1, "wide-cnn", 8)
finally:
    worker.dist, worker.all_max, worker.ping_pong = real_dist, real_all_max, real_ping_pong
    worker.run_collective, worker.hook_values = real_run_collective, real_hook_values
check(hook_calls == [], f"bench below 4 MiB: the hook's values worked out {len(hook_calls)} times")

# The hook's values themselves: each rank's own batch's gradient at the
# starting weights, over P, in float16, worked out here from the model and
# Fashion-MNIST without worker's helpers; many of them float16 subnormals,
# the values gloo's float16 sum is slow on (ones never are).
torch.manual_seed(1)
model = worker.models.build("cnn", 10)[0]
images, labels = worker.load_fashion(2 * 8)
for rank in (0, 1):
    model.zero_grad()
    torch.nn.functional.cross_entropy(model(images[rank * 8:rank * 8 + 8]),
                                      labels[rank * 8:rank * 8 + 8]).backward()
    want = torch.cat([p.grad.reshape(-1) for p in model.parameters()]) / 4
    got = worker.hook_values(rank, 4, "cnn", 8)
    magnitude = got.float().abs()
    subnormal = ((magnitude > 0) & (magnitude < 2.0 ** -14)).float().mean().item()
    check(got.dtype == torch.float16 and got.numel() == sum(sizes)
          and torch.allclose(got.float(), want, rtol=2e-3, atol=1e-7) and subnormal > 0.05,
          f"hook_values, rank {rank} of 4: its batch's gradient over 4 in float16 "
          f"({got.dtype}, {got.numel()} values, {subnormal:.0%} subnormal)")

# DEFT's bytes, worked by hand. Layers of 6 and 2 on 2 ranks, k = 4: the
# first cut in two (6 > 8 / 2), so partitions [0, 3), [3, 6), [6, 8) with
# norms sqrt(14), sqrt(0.5), sqrt(200). By descending norm: the last gets
# int(4 * 14.1 / 18.6) = 3 > 2, kept whole (k = 2); then int(2 * 3.74 / 4.45)
# = 1 and 1. The leader broadcasts 2 counts and 3 partition ids (20 bytes);
# each rank sends its count (4) and its one index (width 1, 4), and the
# union (two bins of one index and the whole partition's two) has 4 values
# (16): 44 bytes for the leader, 24 for the other.
small = torch.tensor([3.0, 2.0, 1.0, 0.5, 0.4, 0.3, 10.0, 10.0])
for rank, want in ((0, 44), (1, 24)):
    sparse = worker.Sparse("deft", 8, 0.5, [6, 2], 2, rank, worker.StandIns(rank))
    update = sparse.step(small.clone(), 0)[0]
    check(sparse.k == 4 and worker.deft_k([14 ** 0.5, 0.5 ** 0.5, 200 ** 0.5], [3, 3, 2], 4) == [1, 1, 2]
          and sparse.bytes_sent == want
          and torch.nonzero(update).flatten().tolist() == [[0, 6, 7], [3, 6, 7]][rank],
          f"deft by hand, rank {rank} of 2 at t = 0: {sparse.bytes_sent} bytes (want {want}), "
          f"sends {torch.nonzero(update).flatten().tolist()}")

check.finish()
