#!/usr/bin/python3
"""Checks of what the mini-cluster's machine does to its ranks. Each prints
first a line with its command, the time it started and the machine.

  scheduling_check.py compute [--ranks 2,4,8]
      P processes run the small CNN's training step (forward, backward,
      update; one thread each) in lockstep, a barrier after every step. Prints
      each rank's step alone, the processor-sharing bound gcsim simulates
      (alone x P / cores) and the measured lockstep iteration: does fluid
      sharing of the cores hold for the compute? No root needed.

  scheduling_check.py collectives [--nodes 4] [--rate 100] [--no-limit] [--gap MS]   (root)
      Small gloo collectives (4 and 64 KiB) on the namespaced star, timed back
      to back (100 in a row, with the processor time all the ranks' threads
      took per call, its system part, the share of the cores that is, and
      the threads' context switches per call) and as run.py's
      benchmark times them (a barrier before each, the slowest rank's
      time). --no-limit leaves out the htb qdiscs, to see whether the
      per-message cost is the rate limiter's.
      Then as training issues them: after the barrier each rank first
      computes (spins) or sleeps for --gap ms (default 6, about the small
      CNN's step), and the ranks' clock readings are lined up (the machine's
      monotonic clock, shared by every process): the collective's time from
      the last rank's arrival to the last rank's finish, mean and median, and
      how far apart the ranks arrived. In those three the lining-up is itself
      a collective right after, so a rank that finishes first waits there;
      "pipelined" issues them as a training loop does, computing --gap ms and
      then the collective, again and again with nothing between, the clock
      readings exchanged only at the end: a rank that finishes first starts
      computing on the cores the others may still need. Pipelined twice more:
      "idle", computing at SCHED_IDLE (any woken thread of another rank
      takes the core at once), and "staggered", rank r sleeping --gap x
      (1 + r/P) instead of computing (spread out, the cores left free).

  scheduling_check.py memory
      What gloo's allgather does to memory beside the network, as torch
      calls it: filling a newly allocated buffer against one used before
      (4, 16 and 64 MiB; glibc maps anything over 32 MiB afresh on every
      allocation unless MALLOC_MMAP_MAX_=0 is in the environment, which the
      ranks of run.py inherit), and P processes at once (1, 2, 4, 8) each
      copying a 64 MiB flat buffer into four tensors, as torch copies
      gloo's output out. One thread each; no root needed.

  scheduling_check.py flows [--rate 1000] [--megabytes 64] [--repeats 3]   (root)
      Node 0 of a 3-node star sends --megabytes to node 1 alone, then to
      nodes 1 and 2 at once (two TCP connections, as a broadcast root's two
      sends), with each node queue of netns.py (fifo and fair): each
      transfer's time, and the rate they got together. Sharing the node's
      link fairly finishes both at about twice the lone time.

  scheduling_check.py float16 [--nodes 4] [--rate 1000] [--model wide-cnn]   (root)
      gloo's ring allreduce of the same bytes (1, 4 and 16 MiB) in float32
      and in float16, as DDP's fp16 hook sends them, on the namespaced star:
      the median of 7 (the slowest rank's time after a barrier) and their
      ratio; float16 twice, summing ones and summing --model's gradient
      over P (worker.py's hook_values, as run.py's benchmark does). gloo
      sums float16 element by element through software conversions; where the sum outlasts a reduce-scatter step's transfer,
      float16 is slower than float32 of the same bytes, and the float16
      step gives the sum's time per element (reduce-scatter steps taking
      the longer of transfer and sum, allgather steps the transfer), on a
      core of its own (the ranks share the cores).

Diagnostics behind results/validation/experiments.md; they write nothing.
SIGINT or SIGTERM ends a check with one line and exit 1, its ranks killed
and its namespaces deleted (as run.py).
"""

import argparse
import datetime
import functools
import json
import multiprocessing
import os
import resource
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from atomic_write import write_json_atomically  # noqa: E402
from cpu_info import machine_identity  # noqa: E402
from script_input import Parser, run_script  # noqa: E402
import netns  # noqa: E402
import run  # noqa: E402

PYTHON = "/usr/bin/python3"  # Debian's, with torch: the ranks' default, as in run.py


def _lockstep_rank(rank, world, barrier, results, steps):
    import torch
    import torch.nn.functional as F
    import worker
    torch.set_num_threads(1)
    torch.manual_seed(1)
    model = worker.SmallCNN()
    params = list(model.parameters())
    x, y = worker.load_fashion(32)

    def step():
        loss = F.cross_entropy(model(x), y)
        worker.backward(loss, params)
        worker.apply_update(params, worker.flat_gradient(params), 0.01)

    for _ in range(20):
        step()
    alone = []
    for turn in range(world):  # the others wait, as run.py's compute_alone
        barrier.wait()
        if turn == rank:
            for _ in range(12):
                t0 = time.perf_counter()
                step()
                alone.append(time.perf_counter() - t0)
    iterations, finishes = [], []
    for _ in range(steps):
        barrier.wait()
        t0 = time.perf_counter()
        step()
        finishes.append(time.perf_counter() - t0)
        barrier.wait()
        iterations.append(time.perf_counter() - t0)
    results.put((statistics.median(alone[3:]), statistics.median(iterations),
                 statistics.mean(finishes)))


def _processes(world, target, *args):
    """What `world` processes of target(rank, world, barrier, results, *args)
    put in `results`, one item each, in the order they finished."""
    barrier, results = multiprocessing.Barrier(world), multiprocessing.Queue()
    procs = [multiprocessing.Process(target=target, args=(r, world, barrier, results, *args))
             for r in range(world)]
    for p in procs:
        p.start()
    got = [results.get() for _ in procs]
    for p in procs:
        p.join()
    return got


def _median_ms(action, repeats=7):
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        action()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e3


def _copy_out_rank(_rank, _world, barrier, results, mib, repeats=6):
    import torch
    torch.set_num_threads(1)
    n = mib * (1 << 18)  # float32 elements
    flat, outputs = torch.ones(n), [torch.empty(n // 4) for _ in range(4)]
    samples = []
    for _ in range(repeats):
        barrier.wait()
        t0 = time.perf_counter()
        for i, output in enumerate(outputs):
            output.copy_(flat[i * (n // 4):(i + 1) * (n // 4)])
        samples.append(time.perf_counter() - t0)
    results.put(statistics.median(samples[1:]))


def check_memory():
    import torch
    torch.set_num_threads(1)
    malloc = {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")}
    print(f"one thread; malloc settings from the environment: {malloc or 'none'}")
    for mib in (4, 16, 64):
        n = mib * (1 << 18)
        used = torch.zeros(n)
        new = _median_ms(lambda: torch.empty(n).fill_(1))
        again = _median_ms(lambda: used.fill_(1))
        print(f"  fill {mib:2d} MiB: newly allocated {new:6.1f} ms, used before {again:6.1f} ms")
    print("copy of a 64 MiB flat buffer into four tensors, every process at once (median ms):")
    for world in (1, 2, 4, 8):
        got = _processes(world, _copy_out_rank, 64)
        print(f"  {world} processes: median {statistics.median(got) * 1e3:5.1f}, slowest "
              f"{max(got) * 1e3:5.1f}")


def check_compute(ranks):
    cores = os.cpu_count()
    print(f"{cores} cores; one training step of the small CNN (batch 32) per rank, in lockstep")
    for world in ranks:
        got = _processes(world, _lockstep_rank, 150)
        alone = statistics.mean(g[0] for g in got)
        shared = alone * max(1.0, world / cores)
        iteration = max(g[1] for g in got)
        print(f"  P = {world}: alone {alone * 1e3:.2f} ms, processor sharing {shared * 1e3:.2f} ms, "
              f"measured {iteration * 1e3:.2f} ms ({100 * (iteration / shared - 1):+.0f}%), "
              f"mean rank's own step {statistics.mean(g[2] for g in got) * 1e3:.2f} ms")


def _spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _idle_spin(seconds):
    """_spin at SCHED_IDLE, the lowest priority Linux has: a thread of any
    other rank that wakes takes the core at once (the calling thread only;
    gloo's threads keep theirs)."""
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    _spin(seconds)
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def _pipelined(world, once, pause, calls=40):
    """run.py's line_up of `calls` collectives issued as training issues them:
    each rank calls `pause` (its computation), then the collective, with no
    barrier between; the readings are exchanged after the last call."""
    import torch
    import torch.distributed as dist
    readings = []
    dist.barrier()
    for _ in range(calls):
        pause()
        t0 = time.perf_counter()
        once()
        readings += [t0, time.perf_counter()]
    mine = torch.tensor(readings, dtype=torch.float64)
    every = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(every, mine)
    return [run.line_up([(float(t[2 * i]), float(t[2 * i + 1])) for t in every])
            for i in range(calls)]


def _lined_up(world, start, end):
    """run.py's line_up of one collective, from every rank's perf_counter
    readings: one clock on one machine."""
    import torch
    import torch.distributed as dist
    mine = torch.tensor([start, end], dtype=torch.float64)
    every = [torch.empty(2, dtype=torch.float64) for _ in range(world)]
    dist.all_gather(every, mine)
    return run.line_up([(float(t[0]), float(t[1])) for t in every])


def _collectives_rank(rank, world, master, out, gap):
    import torch
    import torch.distributed as dist
    import worker
    worker.init(rank, world, master)
    rows = []
    for collective in ("allreduce", "allgather", "broadcast"):
        for size in (4096, 65536):
            elements = size // 4 // (world if collective == "allgather" else 1)
            data = torch.ones(elements)
            outputs = [torch.empty(elements) for _ in range(world)]

            def once():
                worker.run_collective(collective, data, outputs)

            for _ in range(5):
                once()
            dist.barrier()
            t0, usage0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
            for _ in range(100):
                once()
            in_a_row = (time.perf_counter() - t0) / 100
            # Per call, summed over the ranks: the processor time all their
            # threads took (the kernel's network work done in their context
            # included), the system part of it, and the times a thread gave
            # up its core or was made to (each message passes between gloo's
            # event loop and the threads waiting for it).
            usage = resource.getrusage(resource.RUSAGE_SELF)
            used = [usage.ru_utime - usage0.ru_utime + usage.ru_stime - usage0.ru_stime,
                    usage.ru_stime - usage0.ru_stime,
                    usage.ru_nvcsw - usage0.ru_nvcsw + usage.ru_nivcsw - usage0.ru_nivcsw]
            used = torch.tensor(used, dtype=torch.float64) / 100
            dist.all_reduce(used)
            after_barrier = []
            for _ in range(30):
                dist.barrier()
                t0 = time.perf_counter()
                once()
                after_barrier.append(worker.all_max(time.perf_counter() - t0))
            after_gap = {}
            for mode, wait in (("barrier", lambda: None), ("compute", lambda: _spin(gap)),
                               ("sleep", lambda: time.sleep(gap))):
                lined = []
                for _ in range(40):
                    dist.barrier()
                    wait()
                    t0 = time.perf_counter()
                    once()
                    lined.append(_lined_up(world, t0, time.perf_counter()))
                after_gap[mode] = lined[5:]
            # Sleeping, the ranks arrive spread out as computing on shared
            # cores spreads them, but leave the cores to the collective.
            stagger = gap * (1 + rank / world)
            for mode, pause in (("pipelined", lambda: _spin(gap)),
                                ("idle", lambda: _idle_spin(gap)),
                                ("staggered", lambda: time.sleep(stagger))):
                after_gap[mode] = _pipelined(world, once, pause)[5:]
            rows.append((collective, size, in_a_row, used.tolist(), statistics.median(after_barrier),
                         after_gap))
    if rank == 0:
        write_json_atomically(out, rows, indent=None, newline=False)
    dist.barrier()
    dist.destroy_process_group()


def check_collectives(nodes, rate, limit, gap_ms, python):
    ok, why = netns.can_create_namespaces()
    if not ok:
        sys.exit(f"scheduling_check.py: cannot create network namespaces: {why}")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        with netns.Cluster(nodes, rate, rate_limited=limit) as cluster:
            run.run_job(cluster, lambda r: [python, os.path.abspath(__file__), "_rank", str(r),
                                            str(nodes), cluster.addresses[0], out,
                                            str(gap_ms / 1e3)], 900)
        with open(out) as f:
            rows = json.load(f)
    steps = {"allreduce": 2 * (nodes - 1), "allgather": nodes - 1,
             "broadcast": max(1, (nodes - 1).bit_length())}
    cores = os.cpu_count()
    print(f"{nodes} ranks, {'htb ' + str(rate) + ' Mbit/s' if limit else 'no rate limit'}; "
          f"per step: a ring's 2(P-1) or P-1 steps, the tree's log2 P levels; processor: the "
          f"ranks' processor time per call, all threads of all ranks, its system part, and that "
          f"over the call's time on the machine's {cores} cores; switches: the times the ranks' "
          f"threads left a core per call (context switches), and per ring rank-step")
    for collective, size, in_a_row, (cpu, system, switches), after_barrier, _ in rows:
        # A ring's every rank sends and receives at each step; a tree's do not.
        per_rank_step = ("" if collective == "broadcast"
                         else f", {switches / (nodes * steps[collective]):4.1f} a rank-step")
        print(f"  {collective:9s} {size:6d} B: back to back {in_a_row * 1e3:6.2f} ms "
              f"({in_a_row * 1e3 / steps[collective]:.2f} per step; processor {cpu * 1e3:6.2f} ms, "
              f"{system / cpu:4.0%} system, {cpu / (in_a_row * cores):4.0%} of the cores; "
              f"switches {switches:5.1f}{per_rank_step}), "
              f"after a barrier {after_barrier * 1e3:6.2f} ms")
    print(f"lined up: from the last rank's arrival to the last finish, mean / median over 35 "
          f"calls (ms), and the ranks' mean arrival spread; first a barrier, then after each rank "
          f"computed or slept {gap_ms:g} ms; pipelined: compute {gap_ms:g} ms, then the "
          f"collective, with no barrier between; idle: the same at SCHED_IDLE; staggered: rank r "
          f"sleeps {gap_ms:g} ms x (1 + r/P) instead of computing")
    for collective, size, _, _, _, after_gap in rows:
        cells = []
        for mode in ("barrier", "compute", "sleep", "pipelined", "idle", "staggered"):
            times = [t for t, _ in after_gap[mode]]
            spread = statistics.mean(a for _, a in after_gap[mode])
            cells.append(f"{mode} {statistics.mean(times) * 1e3:5.2f} / "
                         f"{statistics.median(times) * 1e3:5.2f} (spread {spread * 1e3:4.2f})")
        print(f"  {collective:9s} {size:6d} B: " + ", ".join(cells))


FLOAT16_SIZES = (1 << 20, 4 << 20, 16 << 20)


def _float16_rank(rank, world, master, out, model):
    import torch
    import torch.distributed as dist
    import worker
    worker.init(rank, world, master)
    gradient = worker.hook_values(rank, world, model, 32)
    rows = []
    for size in FLOAT16_SIZES:
        row = [size]
        for start in (torch.ones(size // 4), torch.ones(size // 2, dtype=torch.float16),
                      worker.tiled(gradient, size // 2)):
            data = start.clone()
            times = []
            for rep in range(8):
                data.copy_(start)  # each sum changes them: every repetition sums the same
                dist.barrier()
                t0 = time.perf_counter()
                dist.all_reduce(data)
                elapsed = worker.all_max(time.perf_counter() - t0)
                if rep > 0:  # the first warms up connections and buffers
                    times.append(elapsed)
            row.append(statistics.median(times))
        rows.append(row)
    if rank == 0:
        write_json_atomically(out, rows, indent=None, newline=False)
    dist.barrier()
    dist.destroy_process_group()


def float16_sum_per_element(nodes, cores, size, float32_s, float16_s):
    """The float16 sum's seconds per element on a core of its own, from a
    ring allreduce of `size` bytes in both types. A float32 step is the
    transfer of size/P bytes: float32_s / (2 (P-1)); a float16
    reduce-scatter step the longer of that and the sum of size/(2P)
    elements, shared with the other ranks on the cores. None where float16
    is less than 5% slower: the sum hid under the transfer, and the few
    percent two runs differ by would pass for it."""
    if float16_s < 1.05 * float32_s:
        return None
    transfer = float32_s / (2 * (nodes - 1))
    step = float16_s / (nodes - 1) - transfer
    return step / (size / 2 / nodes) / max(1.0, nodes / cores)


def check_float16(nodes, rate, model, python):
    ok, why = netns.can_create_namespaces()
    if not ok:
        sys.exit(f"scheduling_check.py: cannot create network namespaces: {why}")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        with netns.Cluster(nodes, rate) as cluster:
            run.run_job(cluster, lambda r: [python, os.path.abspath(__file__), "_float16_rank",
                                            str(r), str(nodes), cluster.addresses[0], out, model],
                        900)
        with open(out) as f:
            rows = json.load(f)
    cores = os.cpu_count()
    print(f"{nodes} ranks, {rate:g} Mbit/s, {cores} cores: ring allreduce of the same bytes, "
          f"median of 7 (ms); float16 of ones and of {model}'s gradient over P")
    for size, float32_s, *float16 in rows:
        cells = []
        for values, float16_s in zip(("ones", "gradient"), float16):
            alone = float16_sum_per_element(nodes, cores, size, float32_s, float16_s)
            said = ("sum hidden" if alone is None else f"sum {alone * 1e9:.1f} ns/element alone")
            cells.append(f"{values} {float16_s * 1e3:7.1f} ({float16_s / float32_s:.2f}x, {said})")
        print(f"  {size >> 20:2d} MiB: float32 {float32_s * 1e3:7.1f}, float16 " + "; ".join(cells))


FLOW_PORT = 29600


def _flow_receive():
    """Takes one connection, reads it to the end, prints the monotonic time of
    the last byte (one clock for every namespace of the machine)."""
    import socket
    with socket.create_server(("0.0.0.0", FLOW_PORT)) as server:
        print("listening", flush=True)
        connection, _ = server.accept()
        buffer = bytearray(1 << 20)
        last = time.monotonic()
        with connection:
            while connection.recv_into(buffer):
                last = time.monotonic()
    print(last, flush=True)


def _flow_send(address, nbytes):
    import socket
    chunk = bytes(1 << 20)
    with socket.create_connection((address, FLOW_PORT)) as connection:
        left = nbytes
        while left > 0:
            left -= connection.send(chunk[:min(left, len(chunk))])


def transfer_times(cluster, destinations, nbytes, timeout=120):
    """Seconds from the start until each destination had its last byte.
    Raises RuntimeError (the processes killed) when a transfer fails or
    outlives `timeout` seconds, so that the caller's Cluster tears down."""
    import subprocess
    me = os.path.abspath(__file__)
    receivers = [subprocess.Popen(cluster.exec_argv(d, [PYTHON, me, "_flow_receive"]),
                                  stdout=subprocess.PIPE, text=True) for d in destinations]
    senders = []
    try:
        for receiver in receivers:
            if receiver.stdout.readline().strip() != "listening":
                raise RuntimeError("a flow receiver did not start")
        start = time.monotonic()
        senders = [subprocess.Popen(cluster.exec_argv(0, [PYTHON, me, "_flow_send",
                                                          cluster.addresses[d], str(nbytes)]))
                   for d in destinations]
        for sender in senders:
            if sender.wait(timeout=timeout) != 0:
                raise RuntimeError("a flow sender failed")
        return [float(r.communicate(timeout=timeout)[0]) - start for r in receivers]
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"a transfer took more than {timeout} s")
    finally:
        for proc in receivers + senders:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def check_flows(rate, megabytes, repeats):
    ok, why = netns.can_create_namespaces()
    if not ok:
        sys.exit(f"scheduling_check.py: cannot create network namespaces: {why}")
    nbytes = int(megabytes * 1e6)
    print(f"node 0 sends {megabytes:g} MB per connection at htb {rate:g} Mbit/s; seconds until "
          f"the last byte, and the rate the two got together")
    for queue in ("fifo", "fair"):
        with netns.Cluster(3, rate, node_queue=queue) as cluster:
            alone = transfer_times(cluster, [1], nbytes)[0]
            rows = [f"alone {alone:.3f}"]
            for _ in range(repeats):
                both = transfer_times(cluster, [1, 2], nbytes)
                rows.append(f"two at once {both[0]:.3f} and {both[1]:.3f} "
                            f"({2 * nbytes * 8 / max(both) / 1e6:.0f} Mbit/s)")
        print(f"  {queue}: " + "; ".join(rows))


def main(argv):
    # The ranks' and flows' own entries, started by the checks below (internal).
    internal = {"_rank": ("RANK P MASTER OUT GAP_S", 6), "_flow_receive": ("", 1),
                "_flow_send": ("ADDRESS BYTES", 3), "_float16_rank": ("RANK P MASTER OUT MODEL", 6)}
    if argv and argv[0] in internal:
        words, count = internal[argv[0]]
        try:
            if len(argv) != count:
                raise ValueError
            if argv[0] == "_rank":
                rank, world, gap = int(argv[1]), int(argv[2]), float(argv[5])
            elif argv[0] == "_float16_rank":
                rank, world = int(argv[1]), int(argv[2])
                if argv[5] not in run.MODELS:  # the models worker.py trains
                    raise ValueError
            elif argv[0] == "_flow_send":
                nbytes = int(argv[2])
        except ValueError:
            print(f"scheduling_check.py: usage (internal): scheduling_check.py {argv[0]} {words}",
                  file=sys.stderr)
            sys.exit(2)
        if argv[0] == "_rank":
            _collectives_rank(rank, world, argv[3], argv[4], gap)
        elif argv[0] == "_float16_rank":
            _float16_rank(rank, world, argv[3], argv[4], argv[5])
        elif argv[0] == "_flow_send":
            _flow_send(argv[1], nbytes)
        else:
            _flow_receive()
        return
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="check", required=True)
    compute = sub.add_parser("compute")
    compute.add_argument("--ranks", default="2,4,8")
    collectives = sub.add_parser("collectives")
    collectives.add_argument("--nodes", type=int, default=4)
    collectives.add_argument("--rate", type=int, default=100, help="Mbit/s")
    collectives.add_argument("--no-limit", action="store_true")
    collectives.add_argument("--gap", type=float, default=6.0,
                             help="ms each rank computes or sleeps before a lined-up collective")
    collectives.add_argument("--python", default=PYTHON,
                             help="interpreter with torch that runs the ranks (default: Debian's)")
    sub.add_parser("memory")
    float16 = sub.add_parser("float16")
    float16.add_argument("--nodes", type=int, default=4)
    float16.add_argument("--rate", type=int, default=1000, help="Mbit/s")
    float16.add_argument("--model", default="wide-cnn",
                         help="whose gradient over P the second float16 allreduce sums: cnn or "
                              "wide-cnn (DDP's fp16 hook's values; the first sums ones)")
    float16.add_argument("--python", default=PYTHON,
                         help="interpreter with torch that runs the ranks (default: Debian's)")
    flows = sub.add_parser("flows")
    flows.add_argument("--rate", type=float, default=1000, help="Mbit/s")
    flows.add_argument("--megabytes", type=float, default=64)
    flows.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    # Every value before anything starts (a namespace, a process): a subcommand's
    # own error, so that its line names the subcommand.
    if args.check == "flows":
        if not 0 < args.rate <= 1000:
            flows.error(f"--rate: {args.rate} is not in (0, 1000] Mbit/s")
        if not 0 < args.megabytes <= 1000:
            flows.error(f"--megabytes: {args.megabytes} is not in (0, 1000]")
        if not 1 <= args.repeats <= 100:
            flows.error(f"--repeats: {args.repeats} is not 1..100")
        check = functools.partial(check_flows, args.rate, args.megabytes, args.repeats)
    elif args.check == "memory":
        check = check_memory
    elif args.check == "float16":
        if not 2 <= args.nodes <= 16:
            float16.error(f"--nodes: {args.nodes} is not 2..16")
        if not 0 < args.rate <= 1000:
            float16.error(f"--rate: {args.rate} is not in (0, 1000] Mbit/s")
        if not (os.path.isfile(args.python) and os.access(args.python, os.X_OK)):
            float16.error(f"--python: {args.python} is not an executable file")
        if args.model not in run.MODELS:
            float16.error(f"--model: {args.model!r} is not {' or '.join(run.MODELS)}")
        check = functools.partial(check_float16, args.nodes, args.rate, args.model, args.python)
    elif args.check == "compute":
        check = functools.partial(check_compute, parse_ranks(args.ranks, compute))
    else:
        # netns.Cluster's own limits, checked here before its probe namespace.
        if not 2 <= args.nodes <= 16:
            collectives.error(f"--nodes: {args.nodes} is not 2..16")
        if not 0 < args.rate <= 1000:
            collectives.error(f"--rate: {args.rate} is not in (0, 1000] Mbit/s")
        if not 0 <= args.gap <= 1000:
            collectives.error(f"--gap: {args.gap} is not 0..1000 ms")
        if not (os.path.isfile(args.python) and os.access(args.python, os.X_OK)):
            collectives.error(f"--python: {args.python} is not an executable file")
        check = functools.partial(check_collectives, args.nodes, args.rate, not args.no_limit,
                                  args.gap, args.python)
    # A SIGTERM (campaign.py passes its own on) must not skip a Cluster's teardown.
    netns.stop_signals_raise()
    # The checks' output names neither when nor where it was measured: a first line does.
    machine = ", ".join(f"{k} {v}" for k, v in machine_identity().items())
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    print(f"# scripts/minicluster/scheduling_check.py {' '.join(argv)}: {started} on {machine}",
          flush=True)
    check()


def parse_ranks(text, parser):
    """compute's --ranks: a comma list of process counts, 1..16 each."""
    ranks = []
    for word in text.split(","):
        try:
            world = int(word)
        except ValueError:
            parser.error(f"--ranks: {word.strip()!r} is not a number of processes")
        if not 1 <= world <= 16:
            parser.error(f"--ranks: {world} is not 1..16 processes")
        ranks.append(world)
    return ranks

if __name__ == "__main__":
    try:
        # The namespaces are gone by then.
        run_script(main, sys.argv[1:], failures=(RuntimeError,))
    except KeyboardInterrupt as why:
        sys.exit(f"scheduling_check.py: stopped ({why or 'interrupted'})")
