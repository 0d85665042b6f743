#!/usr/bin/python3
"""Real mini-cluster runs on one machine, written in gcsim's measured-run format.

Creates P network namespaces on a rate-limited star (netns.py), runs one
torch.distributed (gloo) process per namespace, and writes one JSON file
(format: results/validation/README.md) with
  - the collective benchmark: allreduce / allgather / broadcast per size,
    and float16 allreduces of the sizes from 4 MiB of the trained model's
    gradient over P, as DDP's fp16 hook sends it (gloo's software float16
    sum, which `gcsim validate --fit` fits, costs more on those values than
    on ones), and
  - training runs of the small CNN on Fashion-MNIST (or its wide version,
    --model wide-cnn): dense, topk, cltk, deft,
    and DDP's compression hooks fp16 and powersgd.
Everything is torn down on exit, on error and on SIGINT/SIGTERM.

  sudo scripts/minicluster/run.py --nodes 4 --rate 100 --out results/validation/p4-100mbit.json
Needs root, iproute2, dataset-fashion-mnist and Debian's python3-torch (or
another interpreter with torch: --python).
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import netns  # noqa: E402
from atomic_write import WriteError, write_json_atomically  # noqa: E402
from cpu_info import machine_identity  # noqa: E402
from script_input import (MEASURED_RUN_FORMAT, BadInput, Parser, check_output_file,  # noqa: E402
                          run_script)

PYTHON = "/usr/bin/python3"  # Debian's, with torch; never the one on PATH by default


class JobFailed(Exception):
    """A rank of a benchmark or training job failed or timed out: exit 1, one
    line (the ranks' own output above it says why)."""


def parse_size(text):
    units = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
    word = text.strip().upper().rstrip("IB")
    try:
        if word and word[-1] in units:
            return int(float(word[:-1]) * units[word[-1]])
        return int(word)
    except (ValueError, OverflowError):
        raise BadInput(f"--sizes: {text!r} is not a size (bytes, or with K, M or G)")


def check_args(args):
    """Every value, before a namespace is made: a bad one would otherwise
    surface minutes later as a worker's failure."""
    def within(name, value, low, high, what):
        if not (low <= value <= high):  # also refuses nan
            raise BadInput(f"--{name}: {value} {what}")
    within("nodes", args.nodes, 2, 16, "is not 2..16")
    if not 0 < args.rate <= 1000:
        raise BadInput(f"--rate: {args.rate} is not in (0, 1000] Mbit/s "
                       "(faster, two cores measure the CPU)")
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    # The allgather's size is its output: each rank's block needs one float.
    for size in sizes:
        within("sizes", size, 4 * args.nodes, 1 << 30,
               f"bytes is not {4 * args.nodes} B..1 GiB (an allgather on {args.nodes} "
               "nodes gives each rank at least one 4-byte element)")
    within("reps", args.reps, 1, 1000, "is not 1..1000")
    runs = [r for r in args.train.split(",") if r]
    for r in runs:
        if r not in TRAINING_RUNS:
            raise BadInput(f"--train: unknown training run {r!r} ({', '.join(TRAINING_RUNS)})")
    within("iterations", args.iterations, 1, 100000, "is not 1..100000")
    within("warmup", args.warmup, 0, args.iterations - 1,
           f"is not 0..{args.iterations - 1}: the iterations left out must leave one of "
           f"--iterations {args.iterations} to compare")
    within("batch", args.batch, 1, 4096, "is not 1..4096 samples")
    # Each rank trains on batches of its own, one after another, and the
    # benchmark's float16 allreduces sum one batch's gradient per rank: past
    # the training set's end the batches would be empty (a zero gradient).
    images = args.nodes * args.batch * (args.iterations if runs else 1)
    if images > FASHION_MNIST_IMAGES:
        raise BadInput(f"--batch: {args.batch} samples on each of {args.nodes} nodes"
                       + (f" for {args.iterations} iterations" if runs else "")
                       + f" need {images} Fashion-MNIST images; its training set has "
                       f"{FASHION_MNIST_IMAGES}")
    if not 0 < args.density <= 1:
        raise BadInput(f"--density: {args.density} is not in (0, 1]")
    if args.model not in MODELS:
        raise BadInput(f"--model: {args.model!r} is not {' or '.join(MODELS)}")
    within("matrix-rank", args.matrix_rank, 1, 1024, "is not 1..1024")
    if args.node_queue not in QUEUES:
        raise BadInput(f"--node-queue: {args.node_queue!r} is not {' or '.join(QUEUES)}")
    if not 0 < args.timeout <= 1e6:
        raise BadInput(f"--timeout: {args.timeout} is not in (0, 1e6] seconds")
    if not (os.path.isfile(args.python) and os.access(args.python, os.X_OK)):
        raise BadInput(f"--python: {args.python} is not an executable file")
    if not sizes and not runs:
        raise BadInput("--sizes: empty, and --train empty too: nothing to measure")
    check_output_file(args.out)
    return sizes, runs


TRAINING_RUNS = ("dense", "topk", "cltk", "deft", "fp16", "powersgd")
FASHION_MNIST_IMAGES = 60000  # its training set, which worker.py reads
# worker.py's models (scripts/trace_tools/models.py) and the names the
# measured run gives them.
MODELS = {"cnn": "small-cnn", "wide-cnn": "wide-cnn"}
QUEUES = {"fair": "a node's side shared equally among its destinations",
          "fifo": "one FIFO class on each"}


def parse_args(argv, prog=None):
    """prog: who refuses a bad option (campaign.py checks its runs' options)."""
    p = Parser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--rate", type=float, default=100, help="link rate in Mbit/s (at most 1000)")
    p.add_argument("--sizes", default="4K,64K,1M,4M,16M,64M",
                   help="collective sizes in bytes (those from 4 MiB also as float16 allreduces)")
    p.add_argument("--reps", type=int, default=3,
                   help="timed repetitions per size (after one warm-up; at least 15 below 1 MiB)")
    p.add_argument("--train", default="dense,topk,cltk,deft",
                   help="training runs: dense, topk, cltk, deft, fp16, powersgd (comma list, "
                        "or empty; fp16 and powersgd as DDP's hooks)")
    p.add_argument("--iterations", type=int, default=40)
    p.add_argument("--warmup", type=int, default=5, help="leading iterations left out of the comparison")
    p.add_argument("--batch", type=int, default=32, help="samples per worker per iteration")
    p.add_argument("--model", default="cnn",
                   help="the model trained: cnn (the small CNN, 29,994 parameters) or wide-cnn "
                        "(its fc1 2048 units wide, 1,084,362: a gradient of 4.3 MB)")
    p.add_argument("--density", type=float, default=0.01, help="topk, cltk and deft's density")
    p.add_argument("--matrix-rank", type=int, default=1,
                   help="powersgd's rank (DDP's matrix_approximation_rank)")
    p.add_argument("--barrier", action="store_true",
                   help="diagnostic: a barrier before each training step's communication, its wait "
                        "recorded as wait_s, so communication_s times the collectives alone")
    p.add_argument("--timeout", type=float, default=900, help="seconds per job before giving up")
    p.add_argument("--node-queue", default="fair",
                   help="fair (default): each node shares its rate equally among the peers it "
                        "sends to, as a Linux host's fq_codel does; fifo: one queue, the "
                        "mini-cluster of the runs published before 2026-12-02 (netns.py)")
    p.add_argument("--out", required=True)
    p.add_argument("--python", default=PYTHON,
                   help="interpreter with torch that runs the ranks (default: Debian's)")
    return p.parse_args(argv)


def run_job(cluster, argv_for_rank, timeout):
    procs = []
    env = dict(os.environ, GLOO_SOCKET_IFNAME=cluster.interface, OMP_NUM_THREADS="1")
    try:
        for rank in range(cluster.nodes):
            procs.append(subprocess.Popen(cluster.exec_argv(rank, argv_for_rank(rank)), env=env))
        deadline = time.time() + timeout
        for rank, proc in enumerate(procs):
            left = max(1.0, deadline - time.time())
            try:
                status = proc.wait(timeout=left)
            except subprocess.TimeoutExpired:
                raise JobFailed(f"rank {rank} still running after --timeout {timeout:g} s")
            if status != 0:
                raise JobFailed(f"rank {rank} exited with status {status}")
    finally:
        # Every rank first, then the waits: a rank left running while another
        # is waited for sees its peers gone and prints gloo's traceback.
        running = [proc for proc in procs if proc.poll() is None]
        for proc in running:
            proc.kill()
        for proc in running:
            proc.wait()


def mean(values):
    return sum(values) / len(values)


def line_up(group):
    """One run of collectives as the ranks' common clock saw it, from each
    rank's (start, end): how long it took once the last rank was there (what
    the benchmark measures, after its barrier), and how far apart the ranks
    arrived."""
    starts = [start for start, _ in group]
    return max(end for _, end in group) - max(starts), max(starts) - min(starts)


def training_entry(name, raw, args):
    per_rank = raw["per_rank"]
    iterations = []
    for i in range(len(per_rank[0])):
        rows = [ranks[i] for ranks in per_rank]
        iterations.append(dict(
            iteration_s=mean([r["iteration_s"] for r in rows]),
            # What bounds the line-up below (minicluster_test.py says why):
            # the mean is shorter when the ranks start the step apart.
            iteration_longest_rank_s=max(r["iteration_s"] for r in rows),
            forward_s=mean([r["forward_s"] for r in rows]),
            backward_s=mean([r["backward_s"] for r in rows]),
            compute_s=mean([r["forward_s"] + r["backward_s"] for r in rows]),
            compression_s=mean([r["compression_s"] for r in rows]),
            communication_s=mean([r["communication_s"] for r in rows]),
            optimizer_s=mean([r["optimizer_s"] for r in rows]),
            loss=rows[0]["loss"]))
        if args.barrier:
            iterations[-1]["wait_s"] = mean([r["wait_s"] for r in rows])
        spread = after_last = 0.0
        for group in zip(*[r["collective_groups"] for r in rows]):
            took, apart = line_up(group)
            after_last += took
            spread += apart
        iterations[-1]["arrival_spread_s"] = spread
        iterations[-1]["collectives_after_last_arrival_s"] = after_last
    entry = dict(name=name, compressor=raw["compressor"], ranks=args.nodes,
                 workload=dict(model=MODELS[args.model], dataset="fashion-mnist",
                               batch_per_worker=args.batch, layers=raw["layers"]),
                 overlap=False, warmup_iterations=args.warmup, iterations=iterations)
    alone = raw["alone_per_rank"]
    entry["compute_alone"] = dict(forward_s=mean([a[0] for a in alone]),
                                  backward_s=mean([a[1] for a in alone]),
                                  optimizer_s=mean([a[2] for a in alone]))
    if name != "dense":
        entry["compute_alone"]["compression_s"] = mean([a[3] for a in alone])
    if raw.get("bytes_sent_rank0") is not None:
        entry["bytes_sent_per_worker"] = raw["bytes_sent_rank0"]
    return entry


def python_problem(python):
    """Why `python` cannot run the ranks (it lacks torch.distributed, the
    gloo backend's), or "": found out before the namespaces are made, not
    from every rank's traceback once they are."""
    try:
        done = subprocess.run([python, "-c", "import torch.distributed"], capture_output=True,
                              text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"cannot run it: {error}"
    if done.returncode == 0:
        return ""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return "cannot import torch.distributed: " + (lines[-1].strip() if lines else
                                                   f"exit status {done.returncode}")


def main(argv):
    args = parse_args(argv)
    sizes, runs = check_args(args)
    if os.geteuid() != 0:
        sys.exit("run.py: needs root to create network namespaces")
    ok, why = netns.can_create_namespaces()
    if not ok:
        sys.exit(f"run.py: cannot create network namespaces: {why}")
    why = python_problem(args.python)
    if why:
        sys.exit(f"run.py: --python {args.python}: {why}")

    netns.stop_signals_raise()

    worker = os.path.join(HERE, "worker.py")
    started = time.time()
    measured = dict(format=MEASURED_RUN_FORMAT,
                    name=os.path.splitext(os.path.basename(args.out))[0],
                    source="scripts/minicluster/run.py " + " ".join(argv),
                    date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                    machine=machine_identity())
    with tempfile.TemporaryDirectory() as tmp, netns.Cluster(args.nodes, args.rate, node_queue=args.node_queue) as cluster:
        master = cluster.addresses[0]
        bench_out = os.path.join(tmp, "bench.json")
        collectives = []
        latency = None
        if sizes:
            run_job(cluster, lambda r: [args.python, worker, "bench", str(r), str(args.nodes), master,
                                        bench_out, ",".join(map(str, sizes)), str(args.reps),
                                        args.model, str(args.batch)],
                    args.timeout)
            with open(bench_out) as f:
                bench = json.load(f)
            latency = bench["one_way_latency_s"]
            collectives = bench["collectives"]
        # A route crosses two links (sender NIC, receiver NIC): half each.
        link_latency = f"{(latency or 0) / 2 * 1e6:.1f}us"
        measured["cluster"] = dict(
            topology="star", nodes=args.nodes,
            link=dict(bandwidth=f"{args.rate:g}Mbps", latency=link_latency),
            # Every rank is a process of this machine: their compute shares its cores.
            shared_cores=len(os.sched_getaffinity(0)),
            description=(f"{args.nodes} network namespaces on a Linux bridge, htb {args.rate:g} Mbit/s "
                         "on both ends of every veth (" + QUEUES[args.node_queue] + "), "
                         "TCP reno, the ranks' processes sharing the "
                         "machine's cores; latency: half the measured one-way "
                         "time of a 4-byte gloo message between ranks 0 and 1"))
        measured["collectives"] = collectives
        training = []
        for name in runs:
            out = os.path.join(tmp, f"train-{name}.json")
            run_job(cluster, lambda r: [args.python, worker, "train", str(r), str(args.nodes),
                                        master, out, name, str(args.iterations), str(args.batch),
                                        str(args.density), str(args.matrix_rank), args.model]
                                       + (["barrier"] if args.barrier else []),
                    args.timeout)
            with open(out) as f:
                training.append(training_entry(name, json.load(f), args))
        measured["training"] = training
    measured["wall_s"] = round(time.time() - started, 1)
    # Whole or not at all: a full disk leaves the old file (or none), never half a run.
    # Its folder is made only now (checked by check_output_file), so a refused run leaves none.
    try:
        os.makedirs(os.path.dirname(os.path.realpath(args.out)), exist_ok=True)
    except OSError as why:
        raise WriteError(args.out, why) from why
    write_json_atomically(args.out, measured, indent=1)
    print(f"run.py: wrote {args.out} in {measured['wall_s']} s")


if __name__ == "__main__":
    try:
        # The namespaces are gone by then.
        run_script(main, sys.argv[1:], failures=(JobFailed, netns.ClusterError))
    except KeyboardInterrupt as why:
        sys.exit(f"run.py: stopped ({why or 'interrupted'}); nothing written")
