"""One rank of the mini-cluster, run inside its namespace by run.py.

  worker.py bench RANK P MASTER OUT.json SIZES REPS MODEL BATCH
  worker.py train RANK P MASTER OUT.json COMPRESSOR ITERATIONS BATCH DENSITY MATRIX_RANK MODEL [barrier]

COMPRESSOR is dense, topk, cltk, deft (at DENSITY), fp16 or powersgd (at
rank MATRIX_RANK); MODEL is cnn or wide-cnn (scripts/trace_tools/models.py,
the models the traces are captured from; the bench's float16 allreduces sum
its gradient over BATCH samples, as DDP's fp16 hook sends it); rank 0
writes OUT.json. Each process uses one thread (torch.set_num_threads(1)).
The collectives are torch.distributed's gloo ones: allreduce is gloo's ring,
allgather its ring, broadcast its binomial tree (gloo/allreduce.cc,
allgather.cc, broadcast.cc).
"""

import copy
import gzip
import math
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from trace_tools import models  # noqa: E402

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"
# The models a rank trains: those whose traces the compressors run on in gcsim.
TRAINED_MODELS = ("cnn", "wide-cnn")
TRAINED_COMPRESSORS = ("dense", "topk", "cltk", "deft", "fp16", "powersgd")


def init(rank, world, master):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://{master}:29511", rank=rank,
                            world_size=world)


def all_max(value):
    t = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t[0])


def ping_pong(rounds=200):
    """Half the round trip of a 4-byte gloo message between ranks 0 and 1."""
    t = torch.zeros(1)
    rank = dist.get_rank()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        if rank == 0:
            dist.send(t, 1)
            dist.recv(t, 1)
        elif rank == 1:
            dist.recv(t, 0)
            dist.send(t, 0)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples[rounds // 4:]) / 2


def run_collective(collective, data, outputs):
    """One benchmark collective: allreduce of `data`, allgather of it into
    `outputs` (one tensor per rank), or broadcast of it from rank 0."""
    if collective == "allreduce":
        dist.all_reduce(data)
    elif collective == "allgather":
        dist.all_gather(outputs, data)
    else:
        dist.broadcast(data, 0)


# The float16 allreduces the benchmark adds: sizes from 4 MiB (gcsim
# validate --fit derives the float16 sum from those; gloo sums float16 on
# the CPU through conversions, which can outlast the transfers).
FLOAT16_FROM_BYTES = 4 << 20


def hook_values(rank, world, model_name, batch):
    """What DDP's fp16 hook sends in training: the model's gradient, from
    this rank's first batch at the starting weights, cast to float16 and
    divided by P. gloo's float16 sum takes about twice as long on these as on
    ones, which take its conversions' quickest path (experiments.md, "gloo's
    float16 sum depends on the values summed"): many are float16
    subnormals, which its conversion normalizes bit by bit."""
    torch.manual_seed(1)
    x, y = load_fashion(world * batch)
    lo = rank * batch
    gradient = batch_gradient(models.build(model_name, 10)[0], x[lo:lo + batch], y[lo:lo + batch])
    return HalfPrecision.sent(gradient, world)


def tiled(values, elements):
    """`values` repeated to `elements` elements."""
    return values.repeat(elements // values.numel() + 1)[:elements].clone()


def bench_cases(sizes):
    """(collective, dtype, size) in the order timed: every collective at
    every size in float32, then float16 allreduces of 4 MiB and more."""
    cases = [(collective, torch.float32, size)
             for collective in ("allreduce", "allgather", "broadcast") for size in sizes]
    return cases + [("allreduce", torch.float16, size) for size in sizes
                    if size >= FLOAT16_FROM_BYTES]


def bench(rank, world, out, sizes, reps, model_name, batch):
    cases = bench_cases(sizes)
    # The float16 allreduces' values: a batch's gradient, only where there are any.
    gradient = (hook_values(rank, world, model_name, batch)
                if any(dtype == torch.float16 for _, dtype, _ in cases) else None)
    dist.barrier()
    one_way = all_max(ping_pong() if rank < 2 else 0.0)
    points = []
    for collective, dtype, size in cases:
        # Sizes follow nccl-tests: the whole buffer (allgather: the output).
        width = 2 if dtype == torch.float16 else 4
        elements = size // width
        if collective == "allgather":
            elements //= world
        start_values = (tiled(gradient, elements) if dtype == torch.float16
                        else torch.ones(elements, dtype=dtype))
        data = start_values.clone()
        outputs = [torch.empty(elements, dtype=dtype) for _ in range(world)]
        times = []
        # Below 1 MiB one collective takes milliseconds and process
        # scheduling scatters it by several times: more repetitions give
        # a median that holds still.
        count = reps if size >= (1 << 20) else max(reps, 15)
        for rep in range(count + 1):
            # Each sum changes them: every repetition sums the same values.
            data.copy_(start_values)
            dist.barrier()
            start = time.perf_counter()
            run_collective(collective, data, outputs)
            elapsed = all_max(time.perf_counter() - start)
            if rep > 0:  # the first one warms up connections and buffers
                times.append(elapsed)
        algorithm = {"allreduce": "ring", "allgather": "ring", "broadcast": "binomial_tree"}
        point = dict(collective=collective, algorithm=algorithm[collective], ranks=world,
                     bytes=elements * width * (world if collective == "allgather" else 1),
                     seconds=statistics.median(times), repetitions=count, samples_s=times)
        if dtype == torch.float16:
            point["dtype"] = "float16"
        points.append(point)
    if rank == 0:
        with open(out, "w") as f:
            json.dump(dict(one_way_latency_s=one_way, collectives=points), f)


# ---------------------------------------------------------------- training

def load_fashion(limit):
    def idx(name):
        with gzip.open(os.path.join(FASHION_MNIST, name), "rb") as f:
            raw = f.read()
        dims = raw[3]
        shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
        return np.frombuffer(raw, np.uint8, offset=4 + 4 * dims).reshape(shape)
    x = idx("train-images-idx3-ubyte.gz")[:limit].astype(np.float32) / 255.0
    y = idx("train-labels-idx1-ubyte.gz")[:limit].astype(np.int64)
    return torch.from_numpy(x).unsqueeze(1), torch.from_numpy(y)


def deft_partitions(layer_sizes, world):
    """DEFT's partitions (the DEFT paper, step 1): a layer above d/P elements is cut
    into P contiguous chunks (the first n mod P one longer), any other layer
    is one partition. Returns (offset, size) pairs."""
    d = sum(layer_sizes)
    parts, offset = [], 0
    for n in layer_sizes:
        if n > d / world:
            base, extra = divmod(n, world)
            for c in range(world):
                size = base + (1 if c < extra else 0)
                parts.append((offset, size))
                offset += size
        else:
            parts.append((offset, n))
            offset += n
    return parts


def deft_k(norms, sizes, k):
    """k per partition by norm (the DEFT paper, step 2)."""
    ks = [0] * len(sizes)
    rem_k, rem_norm = k, sum(norms)
    for i in sorted(range(len(sizes)), key=lambda i: -norms[i]):
        tmp = int(rem_k * norms[i] / rem_norm) if rem_norm > 0 else 0
        ks[i] = sizes[i] if tmp > sizes[i] else max(1, tmp)
        rem_k -= ks[i]
        rem_norm -= norms[i]
    return ks


def lpt_bins(costs, bins):
    """Items into bins, largest cost first into the least loaded (DEFT's packing)."""
    load = [0.0] * bins
    members = [[] for _ in range(bins)]
    for item in sorted(range(len(costs)), key=lambda i: -costs[i]):
        b = min(range(bins), key=lambda j: load[j])
        load[b] += costs[item]
        members[b].append(item)
    return members


class Collectives:
    """gloo's collectives through torch.distributed, as Sparse calls them.

    A broadcast's `leader_value` (what the leader sends) is for the stand-ins
    below; the real broadcast receives it."""

    def broadcast(self, tensor, src, leader_value):
        dist.broadcast(tensor, src)

    def all_gather(self, outputs, tensor):
        dist.all_gather(outputs, tensor)

    def all_reduce(self, tensor):
        dist.all_reduce(tensor)


class StandIns:
    """What the collectives would give one rank, made without the others: each
    rank sent what this one sends, and a leader's broadcast is what this rank
    computes as that leader (inside the broadcast, so outside the compression's
    timing as in the run). For timing the compressor alone."""

    def __init__(self, rank):
        self.rank = rank

    def broadcast(self, tensor, src, leader_value):
        if src != self.rank:
            tensor.copy_(leader_value())

    def all_gather(self, outputs, tensor):
        for out in outputs:
            out.copy_(tensor)

    def all_reduce(self, tensor):
        pass


class Sparse:
    """topk, cltk and deft with error feedback, on the flat gradient.

    Independent of compressors/: this is the check of the C++ library's
    communication behaviour (what each one sends, in which collective).
    Indices travel as int32, values as float32."""

    def __init__(self, name, numel, density, layer_sizes, world, rank, comm=None):
        self.name, self.n, self.world, self.rank = name, numel, world, rank
        self.comm = comm or Collectives()
        self.k = max(1, int(density * numel))
        self.description = dict(name=name, density=density)
        self.residual = torch.zeros(numel)
        self.partitions = deft_partitions(layer_sizes, world)
        self.bytes_sent = 0

    def clear_residual(self):
        self.residual = torch.zeros(self.n)

    def step(self, grad, iteration):
        """(update, compression_s, communication_s); self.groups gets the
        (start, end) clock readings of each run of collectives."""
        acc = self.residual + grad
        self.groups = []
        t0 = time.perf_counter()
        if self.name == "topk":
            _, idx = torch.topk(acc.abs(), self.k, sorted=False)
            values = acc[idx]
            acc[idx] = 0.0
            self.residual = acc
            packed = torch.cat([values, idx.to(torch.int32).view(torch.float32)])
            compression = time.perf_counter() - t0
            c0 = time.perf_counter()
            gathered = [torch.empty_like(packed) for _ in range(self.world)]
            self.comm.all_gather(gathered, packed)
            comm = time.perf_counter() - c0
            self.groups.append((c0, c0 + comm))
            self.bytes_sent += 8 * self.k
            total = torch.zeros(self.n)
            for g in gathered:
                total.index_add_(0, g[self.k:].view(torch.int32).long(), g[:self.k])
            return total / self.world, compression, comm
        if self.name == "cltk":
            leader = iteration % self.world

            def select():
                return torch.topk(acc.abs(), self.k, sorted=False)[1].to(torch.int32)

            idx = select() if self.rank == leader else torch.zeros(self.k, dtype=torch.int32)
            compression = time.perf_counter() - t0
            c0 = time.perf_counter()
            self.comm.broadcast(idx, leader, select)
            long_idx = idx.long()
            values = acc[long_idx].clone()
            self.comm.all_reduce(values)
            comm = time.perf_counter() - c0
            self.groups.append((c0, c0 + comm))
            self.bytes_sent += 8 * self.k
            total = torch.zeros(self.n)
            total[long_idx] = values
            acc[long_idx] = 0.0
            self.residual = acc
            return total / self.world, compression, comm
        return self._deft(acc, iteration, t0)

    def _deft(self, acc, iteration, t0):
        """The DEFT paper's steps: norms -> k_i, the leader's bin packing broadcast,
        top-k on the owned bin, allgather of counts and of padded indices, the
        union's values allreduced."""
        world, parts = self.world, self.partitions
        sizes = [n for _, n in parts]
        norms = [float(acc[o:o + n].norm()) for o, n in parts]
        ks = deft_k(norms, sizes, self.k)
        leader = iteration % world
        comm = 0.0
        # The leader packs by its own k_i; everyone learns the assignment.
        def pack():
            assignment = torch.zeros(world + len(parts), dtype=torch.int32)
            packed = [i for i in range(len(parts)) if ks[i] != sizes[i]]
            costs = [sizes[i] * math.log2(ks[i]) if ks[i] > 1 else sizes[i] for i in packed]
            bins = lpt_bins(costs, world)
            ids = []
            for b in range(world):
                assignment[b] = len(bins[b])
                ids += [packed[item] for item in bins[b]]
            assignment[world:world + len(ids)] = torch.tensor(ids, dtype=torch.int32)
            # Whole partitions (k_i = n_i) are marked -1-i after the bins.
            common = [i for i in range(len(parts)) if ks[i] == sizes[i]]
            for j, i in enumerate(common):
                assignment[world + len(ids) + j] = -1 - i
            return assignment

        if self.rank == leader:
            assignment = pack()
        else:
            assignment = torch.zeros(world + len(parts), dtype=torch.int32)
        compression = time.perf_counter() - t0
        c0 = time.perf_counter()
        self.comm.broadcast(assignment, leader, pack)
        comm += time.perf_counter() - c0
        t1 = time.perf_counter()
        self.groups.append((c0, t1))
        counts = assignment[:world].tolist()
        ids = assignment[world:].tolist()
        mine = (iteration + self.rank) % world
        start = sum(counts[:mine])
        selected = []
        for i in ids[start:start + counts[mine]]:
            o, n = parts[i]
            _, local = torch.topk(acc[o:o + n].abs(), min(ks[i], n), sorted=False)
            selected.append(local + o)
        idx = torch.cat(selected) if selected else torch.zeros(0, dtype=torch.int64)
        compression += time.perf_counter() - t1
        c0 = time.perf_counter()
        count = torch.tensor([len(idx)], dtype=torch.int32)
        all_counts = [torch.zeros(1, dtype=torch.int32) for _ in range(world)]
        self.comm.all_gather(all_counts, count)
        width = max(int(c[0]) for c in all_counts)
        padded = torch.full((width,), -1, dtype=torch.int32)
        padded[:len(idx)] = idx.to(torch.int32)
        gathered = [torch.empty(width, dtype=torch.int32) for _ in range(world)]
        self.comm.all_gather(gathered, padded)
        union = torch.cat([g[g >= 0] for g in gathered]).long()
        whole = [parts[-1 - i] for i in ids if i < 0]
        if whole:
            union = torch.cat([union] + [torch.arange(o, o + n) for o, n in whole])
        values = acc[union].clone()
        self.comm.all_reduce(values)
        c1 = time.perf_counter()
        comm += c1 - c0
        self.groups.append((c0, c1))
        self.bytes_sent += 4 * (world + len(parts)) * (self.rank == leader) + 4 + 4 * width + 4 * len(union)
        total = torch.zeros(self.n)
        total[union] = values
        acc[union] = 0.0
        self.residual = acc
        return total / self.world, compression, comm


def orthogonalize(matrix):
    """Orthonormal columns in place, as the hook's _orthogonalize: Gram-Schmidt
    up to 2 columns, a QR factorization above."""
    columns = matrix.shape[1]
    if columns > 2:
        matrix.copy_(torch.linalg.qr(matrix).Q)
        return
    for i in range(columns):
        column = matrix[:, i:i + 1]
        column /= torch.norm(column)
        if i + 1 < columns:
            rest = matrix[:, i + 1:]
            rest -= torch.sum(column * rest, dim=0, keepdim=True) * column


# torch's PowerSGDState refuses fewer with error feedback or warm start (DDP
# rebuilds its buckets after the first iterations).
POWERSGD_START = 2


class PowerSGD:
    """PyTorch DDP's powerSGD_hook (torch 1.13), with one bucket holding every
    gradient in the parameters' order: plain allreduces (each worker's
    gradient divided by P first) before `start_iteration`; then error
    feedback over the whole bucket, each tensor viewed as shape[0] rows and
    compressed at rank r = min(rows, cols, matrix_rank) where (rows + cols) r
    times 2 is under rows x cols; the other tensors allreduced in one buffer
    and divided by P; P = M Q allreduced (one buffer) and orthogonalized,
    Q = M^T P allreduced and divided by P, M = P Q^T; Q kept for the next
    step (warm start), the first one drawn as the hook draws it.

    Independent of compressors/powersgd.cpp; tests/validation/worker_hooks_test.py
    checks it against the hook itself. Values travel as float32."""

    def __init__(self, shapes, world, matrix_rank, start_iteration=POWERSGD_START, comm=None,
                 seed=0):
        self.world, self.start = world, start_iteration
        self.comm = comm or Collectives()
        self.matrices, self.plain = [], []  # (offset, rows, cols, r); (offset, numel)
        offset = 0
        for shape in shapes:
            numel = math.prod(shape)
            rows = shape[0] if len(shape) else 1
            cols = numel // rows
            r = min(rows, cols, matrix_rank)
            if (rows + cols) * r * 2 < rows * cols:
                self.matrices.append((offset, rows, cols, r))
            else:
                self.plain.append((offset, numel))
            offset += numel
        # The hook lays P and Q out, and draws the first Q, matrix shape by
        # matrix shape in the order each shape first appears.
        first = {}
        for _, rows, cols, _ in self.matrices:
            first.setdefault((rows, cols), len(first))
        self.matrices.sort(key=lambda matrix: first[matrix[1:3]])
        self.n = offset
        self.description = dict(name="powersgd", rank=matrix_rank,
                                start_iteration=start_iteration)
        self.residual = torch.zeros(offset)
        # The factors' buffers (one P, one Q for every matrix) and each
        # matrix's views of them, kept from step to step as the hook keeps them.
        self.p_memory = torch.empty(sum(rows * r for _, rows, _, r in self.matrices))
        self.q_memory = torch.empty(sum(cols * r for _, _, cols, r in self.matrices))
        self.ps = self._views(self.p_memory, [(rows, r) for _, rows, _, r in self.matrices])
        self.qs = self._views(self.q_memory, [(cols, r) for _, _, cols, r in self.matrices])
        self.drawn = False  # the first Q: drawn at the first compressed step
        self.rng = np.random.RandomState(seed)
        self.bytes_sent = 0

    def clear_residual(self):
        self.residual = torch.zeros(self.n)

    def _allreduce(self, tensor):
        """Seconds in the collective; its (start, end) joins self.groups."""
        c0 = time.perf_counter()
        self.comm.all_reduce(tensor)
        c1 = time.perf_counter()
        self.groups.append((c0, c1))
        self.bytes_sent += 4 * tensor.numel()
        return c1 - c0

    def step(self, grad, iteration):
        """(update, compression_s, communication_s), as Sparse.step."""
        self.groups = []
        t0 = time.perf_counter()
        if iteration < self.start:
            update = grad / self.world
            compression = time.perf_counter() - t0
            return update, compression, self._allreduce(update)
        acc = grad + self.residual
        kept = acc.clone()
        matrices = [acc[o:o + rows * cols].view(rows, cols) for o, rows, cols, _ in self.matrices]
        plain = torch.cat([acc[o:o + n] for o, n in self.plain]) if self.plain else torch.zeros(0)
        ps, qs = self.ps, self.qs
        if not self.drawn:
            # The hook's draw: one seed a step from its RandomState, every Q in turn.
            generator = torch.Generator().manual_seed(int(self.rng.randint(1_000_000_000)))
            for q in qs:
                q.copy_(torch.randn(q.shape, generator=generator))
            self.drawn = True
        for q in qs:
            orthogonalize(q)
        for m, q, p in zip(matrices, qs, ps):
            torch.matmul(m, q, out=p)
        compression = time.perf_counter() - t0
        communication = self._allreduce(plain)
        t1 = time.perf_counter()
        plain.div_(self.world)
        compression += time.perf_counter() - t1
        communication += self._allreduce(self.p_memory)
        t2 = time.perf_counter()
        for m, p, q in zip(matrices, ps, qs):
            orthogonalize(p)
            torch.matmul(m.t(), p, out=q)
        compression += time.perf_counter() - t2
        communication += self._allreduce(self.q_memory)
        t3 = time.perf_counter()
        self.q_memory.div_(self.world)
        for m, p, q in zip(matrices, ps, qs):
            torch.matmul(p, q.t(), out=m)
        start = 0
        for o, n in self.plain:
            acc[o:o + n] = plain[start:start + n]
            start += n
        self.residual = kept - acc
        compression += time.perf_counter() - t3
        return acc, compression, communication

    @staticmethod
    def _views(memory, shapes):
        views, start = [], 0
        for rows, cols in shapes:
            views.append(memory[start:start + rows * cols].view(rows, cols))
            start += rows * cols
        return views


class HalfPrecision:
    """PyTorch DDP's fp16_compress_hook: each worker's gradient cast to
    float16 and divided by P, allreduced (gloo sums the 2-byte values), cast
    back. No memory."""

    def __init__(self, world, comm=None):
        self.world = world
        self.comm = comm or Collectives()
        self.description = dict(name="fp16")
        self.bytes_sent = 0

    def clear_residual(self):
        pass

    @staticmethod
    def sent(grad, world):
        """What the hook allreduces: the gradient cast to float16, over P."""
        return grad.to(torch.float16).div_(world)

    def step(self, grad, iteration):
        """(update, compression_s, communication_s), as Sparse.step."""
        t0 = time.perf_counter()
        half = self.sent(grad, self.world)
        compression = time.perf_counter() - t0
        c0 = time.perf_counter()
        self.comm.all_reduce(half)
        c1 = time.perf_counter()
        self.groups = [(c0, c1)]
        self.bytes_sent += 2 * half.numel()
        update = half.to(torch.float32)
        return update, compression + time.perf_counter() - c1, c1 - c0


def backward(loss, params):
    for p in params:
        p.grad = None
    loss.backward()


def flat_gradient(params):
    return torch.cat([p.grad.reshape(-1) for p in params])


def batch_gradient(model, xb, yb):
    """The flat gradient of one batch's loss on `model`'s parameters."""
    params = list(model.parameters())
    backward(F.cross_entropy(model(xb), yb), params)
    return flat_gradient(params)


def apply_update(params, update, lr):
    """Plain SGD with a flat update."""
    with torch.no_grad():
        offset = 0
        for p in params:
            p.add_(update[offset:offset + p.numel()].view_as(p), alpha=-lr)
            offset += p.numel()


def compute_alone(model, xb, yb, lr, rounds=12):
    """Median forward, backward and update times of this rank while every other
    rank waits in a barrier: what the compute costs on a core of its own.

    Inside a run the ranks' processes share the machine's cores, so their
    in-run compute times hold the sharing; a simulator that models the
    sharing needs the cost without it. Runs on a copy of the model."""
    model = copy.deepcopy(model)
    params = list(model.parameters())
    samples = []
    for turn in range(dist.get_world_size()):
        dist.barrier()
        if turn == dist.get_rank():
            for _ in range(rounds):
                t0 = time.perf_counter()
                loss = F.cross_entropy(model(xb), yb)
                t1 = time.perf_counter()
                backward(loss, params)
                t2 = time.perf_counter()
                apply_update(params, flat_gradient(params), lr)
                samples.append((t1 - t0, t2 - t1, time.perf_counter() - t2))
        dist.barrier()
    warm = samples[rounds // 4:]
    return [statistics.median(s[i] for s in warm) for i in range(3)]


def compression_alone(make_compressor, grad, world, rank, barrier):
    """Mean compression time per step of this rank's compressor while every
    other rank waits in `barrier` (see compute_alone), the collectives made by
    StandIns. Over 3 P steps after P warm-ups, so that the rank leads (cltk,
    deft) and owns each of DEFT's bins as often as in the run. Each step starts
    from `grad` with no residual: alone, a rank's error feedback would keep
    what the other ranks' selections clear in the run, and drift from it."""
    samples = []
    for turn in range(world):
        barrier()
        if turn == rank:
            compressor = make_compressor(StandIns(rank))
            for it in range(4 * world):
                compressor.clear_residual()
                compression = compressor.step(grad, it)[1]
                if it >= world:
                    samples.append(compression)
        barrier()
    return statistics.mean(samples)


def train(rank, world, out, name, iterations, batch, density, matrix_rank, model_name="cnn",
          barrier=False):
    """Trains `model_name` (the small CNN or its wide version) with compressor
    `name` (dense, topk, cltk, deft at `density`, fp16, powersgd at
    `matrix_rank`); rank 0 writes `out`."""
    torch.manual_seed(1)
    model = models.build(model_name, 10)[0]
    params = list(model.parameters())
    sizes = [p.numel() for p in params]
    numel = sum(sizes)
    x, y = load_fashion(world * batch * iterations)

    def make_compressor(comm=None):
        if name == "fp16":
            return HalfPrecision(world, comm)
        if name == "powersgd":
            return PowerSGD([p.shape for p in params], world, matrix_rank, comm=comm)
        return Sparse(name, numel, density, sizes, world, rank, comm)

    compressor = None if name == "dense" else make_compressor()
    lr = 0.05
    alone = compute_alone(model, x[:batch], y[:batch], lr)
    if compressor is not None:
        # One batch's gradient, on a copy of the model as compute_alone's.
        gradient = batch_gradient(copy.deepcopy(model), x[:batch], y[:batch])
        alone.append(compression_alone(make_compressor, gradient, world, rank, dist.barrier))
    records = []
    dist.barrier()
    previous_end = time.perf_counter()
    for it in range(iterations):
        lo = (it * world + rank) * batch
        xb, yb = x[lo:lo + batch], y[lo:lo + batch]
        t_fwd = time.perf_counter()
        loss = F.cross_entropy(model(xb), yb)
        t_bwd = time.perf_counter()
        backward(loss, params)
        t_compute = time.perf_counter()
        grad = flat_gradient(params)
        # Diagnostic (run.py --barrier): wait for the slowest rank first, so
        # that the communication phase times the collectives alone.
        wait = 0.0
        if barrier:
            b0 = time.perf_counter()
            dist.barrier()
            wait = time.perf_counter() - b0
        if compressor is None:
            c0 = time.perf_counter()
            dist.all_reduce(grad)
            comm = time.perf_counter() - c0
            update, compression = grad / world, 0.0
            groups = [(c0, c0 + comm)]
        else:
            update, compression, comm = compressor.step(grad, it)
            groups = compressor.groups
        t_comm = time.perf_counter()
        apply_update(params, update, lr)
        end = time.perf_counter()
        records.append(dict(iteration_s=end - previous_end, forward_s=t_bwd - t_fwd,
                            backward_s=t_compute - t_bwd, compression_s=compression,
                            communication_s=comm,
                            optimizer_s=(end - t_comm) + (t_comm - t_compute - comm - compression - wait),
                            wait_s=wait, loss=loss.item(),
                            # perf_counter is the machine's monotonic clock, the
                            # same in every rank's process: run.py lines them up.
                            collective_groups=groups))
        previous_end = end
    # Every rank's records reach rank 0 (tiny, after the timed loop).
    gathered = [None] * world
    dist.all_gather_object(gathered, records)
    alone_gathered = [None] * world
    dist.all_gather_object(alone_gathered, alone)
    if rank == 0:
        layers = [dict(name=n, bytes=4 * p.numel(), shape=list(p.shape))
                  for n, p in model.named_parameters()]
        # The compressor as the measured-run format names it, with what it ran at.
        described = compressor.description if compressor else dict(name="dense")
        with open(out, "w") as f:
            json.dump(dict(compressor=described, layers=layers, per_rank=gathered,
                           alone_per_rank=alone_gathered,
                           k=getattr(compressor, "k", None),
                           bytes_sent_rank0=None if compressor is None
                           else compressor.bytes_sent / iterations),
                      f)


USAGE = ("worker.py: usage (internal, started by run.py): worker.py bench RANK P MASTER OUT.json "
         "SIZES REPS MODEL BATCH | worker.py train RANK P MASTER OUT.json COMPRESSOR ITERATIONS "
         "BATCH DENSITY MATRIX_RANK MODEL [barrier]")


def parse_command(argv):
    """(mode, rank, world, master, out, the mode's own values) from the command
    line (argv[0] the script), or None when it is not one of the two forms."""
    try:
        mode = argv[1]
        rank, world, master, out = int(argv[2]), int(argv[3]), argv[4], argv[5]
        if not 0 <= rank < world:
            return None
        # run.py checks every value it passes; these are the ones past which
        # a rank would fail only after connecting, or measure nothing.
        if mode == "bench" and len(argv) == 10 and argv[8] in TRAINED_MODELS:
            sizes, reps, batch = [int(s) for s in argv[6].split(",")], int(argv[7]), int(argv[9])
            if min(sizes) > 0 and reps > 0 and batch > 0:
                return mode, rank, world, master, out, (sizes, reps, argv[8], batch)
        if (mode == "train" and len(argv) in (12, 13) and argv[6] in TRAINED_COMPRESSORS
                and argv[11] in TRAINED_MODELS and argv[12:] in ([], ["barrier"])):
            iterations, batch, density, matrix_rank = (int(argv[7]), int(argv[8]), float(argv[9]),
                                                       int(argv[10]))
            if iterations > 0 and batch > 0 and 0 < density <= 1 and matrix_rank > 0:
                return mode, rank, world, master, out, (argv[6], iterations, batch, density,
                                                        matrix_rank, argv[11], len(argv) == 13)
    except (IndexError, ValueError):
        pass
    return None


def main(argv):
    command = parse_command(argv)
    if command is None:
        print(USAGE, file=sys.stderr)
        sys.exit(2)
    mode, rank, world, master, out, values = command
    init(rank, world, master)
    if mode == "bench":
        bench(rank, world, out, *values)
    else:
        *values, barrier = values
        train(rank, world, out, *values, barrier=barrier)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv)
