"""One rank of the mini-cluster, run inside its namespace by run.py.

  worker.py bench RANK P MASTER OUT.json SIZES REPS
  worker.py train RANK P MASTER OUT.json COMPRESSOR ITERATIONS BATCH DENSITY

Rank 0 writes OUT.json. Each process uses one thread (torch.set_num_threads(1)).
The collectives are torch.distributed's gloo ones: allreduce is gloo's ring,
allgather its ring, broadcast its binomial tree (gloo/allreduce.cc,
allgather.cc, broadcast.cc).
"""

import gzip
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


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


def bench(rank, world, out, sizes, reps):
    dist.barrier()
    one_way = all_max(ping_pong() if rank < 2 else 0.0)
    points = []
    for collective in ("allreduce", "allgather", "broadcast"):
        for size in sizes:
            # Sizes follow nccl-tests: the whole buffer (allgather: the output).
            elements = size // 4
            if collective == "allgather":
                elements //= world
            data = torch.ones(elements)
            outputs = [torch.empty(elements) for _ in range(world)]
            times = []
            for rep in range(reps + 1):
                dist.barrier()
                start = time.perf_counter()
                if collective == "allreduce":
                    dist.all_reduce(data)
                elif collective == "allgather":
                    dist.all_gather(outputs, data)
                else:
                    dist.broadcast(data, 0)
                elapsed = all_max(time.perf_counter() - start)
                if rep > 0:  # the first one warms up connections and buffers
                    times.append(elapsed)
            algorithm = {"allreduce": "ring", "allgather": "ring", "broadcast": "binomial_tree"}
            points.append(dict(collective=collective, algorithm=algorithm[collective],
                               ranks=world, bytes=elements * 4 * (world if collective == "allgather" else 1),
                               seconds=statistics.median(times), repetitions=reps,
                               samples_s=times))
    if rank == 0:
        with open(out, "w") as f:
            json.dump(dict(one_way_latency_s=one_way, collectives=points), f)


# ---------------------------------------------------------------- training

class SmallCNN(nn.Module):
    """The small Fashion-MNIST CNN of scripts/trace_tools/models.py."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5)
        self.conv2 = nn.Conv2d(16, 32, 5)
        self.fc1 = nn.Linear(32 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


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


def lpt_bins(sizes, bins):
    """Layers into bins by longest-processing-time on their sizes (DEFT's packing)."""
    load = [0] * bins
    members = [[] for _ in range(bins)]
    for layer in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        b = min(range(bins), key=lambda j: load[j])
        load[b] += sizes[layer]
        members[b].append(layer)
    return members


class Sparse:
    """topk, cltk and deft with error feedback, on the flat gradient.

    Independent of compressors/: this is the check of the C++ library's
    communication behaviour (what each one sends, in which collective)."""

    def __init__(self, name, numel, density, layer_sizes, world, rank):
        self.name, self.n, self.world, self.rank = name, numel, world, rank
        self.k = max(1, int(round(density * numel)))
        self.residual = torch.zeros(numel)
        offsets = np.cumsum([0] + layer_sizes)
        self.layer_ranges = [(int(offsets[i]), int(offsets[i + 1])) for i in range(len(layer_sizes))]
        self.bins = lpt_bins(layer_sizes, world)
        self.bytes_sent = 0

    def step(self, grad, iteration):
        acc = self.residual + grad
        t0 = time.perf_counter()
        if self.name == "topk":
            _, idx = torch.topk(acc.abs(), self.k, sorted=False)
            comm, total = self._gather(acc, idx, t0)
        elif self.name == "cltk":
            leader = iteration % self.world
            idx = torch.zeros(self.k, dtype=torch.int64)
            if self.rank == leader:
                _, idx = torch.topk(acc.abs(), self.k, sorted=False)
            selected = time.perf_counter()
            c0 = time.perf_counter()
            dist.broadcast(idx, leader)
            values = acc[idx].clone()
            dist.all_reduce(values)
            comm = time.perf_counter() - c0
            self.bytes_sent += 8 * self.k + 4 * self.k
            total = torch.zeros(self.n)
            total[idx] = values
            acc[idx] = 0.0
            self.residual = acc
            compression = (selected - t0)
            return total / self.world, compression, comm
        else:  # deft
            mine = self.bins[(iteration + self.rank) % self.world]
            ranges = [self.layer_ranges[l] for l in mine]
            size = sum(b - a for a, b in ranges)
            k_mine = max(1, int(round(self.k * size / self.n)))
            pieces = torch.cat([torch.arange(a, b) for a, b in ranges])
            _, local = torch.topk(acc[pieces].abs(), min(k_mine, len(pieces)), sorted=False)
            idx = pieces[local]
            comm, total = self._gather(acc, idx, t0, pad=True)
        compression = self._compression
        return total / self.world, compression, comm

    def _gather(self, acc, idx, t0, pad=False):
        values = acc[idx]
        acc[idx] = 0.0
        self.residual = acc
        count = len(idx)
        width = count
        if pad:  # DEFT's per-worker counts differ: pad to the largest
            width_t = torch.tensor([count])
            dist.all_reduce(width_t, op=dist.ReduceOp.MAX)
            width = int(width_t[0])
        packed = torch.full((2 * width,), -1.0)
        packed[:count] = values
        packed[width:width + count] = idx.float()  # exact below 2^24 elements
        self._compression = time.perf_counter() - t0
        c0 = time.perf_counter()
        gathered = [torch.empty(2 * width) for _ in range(self.world)]
        dist.all_gather(gathered, packed)
        comm = time.perf_counter() - c0
        self.bytes_sent += 8 * width * (self.world - 1)
        total = torch.zeros(self.n)
        for g in gathered:
            keep = g[width:] >= 0
            total.index_add_(0, g[width:][keep].long(), g[:width][keep])
        return comm, total


def train(rank, world, out, compressor, iterations, batch, density):
    torch.manual_seed(1)
    model = SmallCNN()
    params = list(model.parameters())
    sizes = [p.numel() for p in params]
    numel = sum(sizes)
    x, y = load_fashion(world * batch * iterations)
    sparse = None if compressor == "dense" else Sparse(compressor, numel, density, sizes, world, rank)
    lr = 0.05
    records = []
    dist.barrier()
    previous_end = time.perf_counter()
    for it in range(iterations):
        start = time.perf_counter()
        lo = (it * world + rank) * batch
        xb, yb = x[lo:lo + batch], y[lo:lo + batch]
        t_fwd = time.perf_counter()
        loss = F.cross_entropy(model(xb), yb)
        t_bwd = time.perf_counter()
        for p in params:
            p.grad = None
        loss.backward()
        t_compute = time.perf_counter()
        grad = torch.cat([p.grad.reshape(-1) for p in params])
        if sparse is None:
            c0 = time.perf_counter()
            dist.all_reduce(grad)
            comm = time.perf_counter() - c0
            update, compression = grad / world, 0.0
        else:
            update, compression, comm = sparse.step(grad, it)
        t_comm = time.perf_counter()
        with torch.no_grad():
            offset = 0
            for p in params:
                p.add_(update[offset:offset + p.numel()].view_as(p), alpha=-lr)
                offset += p.numel()
        end = time.perf_counter()
        records.append(dict(iteration_s=end - previous_end, forward_s=t_bwd - t_fwd,
                            backward_s=t_compute - t_bwd, compression_s=compression,
                            communication_s=comm,
                            optimizer_s=(end - t_comm) + (t_comm - t_compute - comm - compression),
                            loss=float(loss)))
        previous_end = end
    # Every rank's records reach rank 0 (tiny, after the timed loop).
    gathered = [None] * world
    dist.all_gather_object(gathered, records)
    if rank == 0:
        layers = [dict(name=n, bytes=4 * p.numel()) for n, p in model.named_parameters()]
        with open(out, "w") as f:
            json.dump(dict(layers=layers, per_rank=gathered, k=None if sparse is None else sparse.k,
                           bytes_sent_rank0=None if sparse is None else sparse.bytes_sent / iterations),
                      f)


def main(argv):
    mode, rank, world, master, out = argv[1], int(argv[2]), int(argv[3]), argv[4], argv[5]
    init(rank, world, master)
    if mode == "bench":
        bench(rank, world, out, [int(s) for s in argv[6].split(",")], int(argv[7]))
    else:
        train(rank, world, out, argv[6], int(argv[7]), int(argv[8]), float(argv[9]))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv)
