#!/usr/bin/python3
"""scripts/minicluster/run.py's main and run_job with the cluster and the
ranks stood in for (no namespace, no root, no torch):

- the measured-run file: format, name, cluster (star, nodes, the link's
  rate in Mbps and half the measured one-way latency, the shared cores),
  the benchmark's points as the ranks wrote them, one training entry per
  --train run in its order with --warmup as its warm-up; written after
  the cluster is torn down;
- what the ranks are started with: each its own rank, P, rank 0's address,
  the sizes and --reps (bench), the compressor, --iterations, --batch,
  --density, --matrix-rank, --model and the barrier (train);
- SIGTERM (and SIGINT) during a job become a KeyboardInterrupt that tears
  the cluster down and writes nothing; so does a failed job; no
  namespaces (can_create_namespaces says why) is one line and exit before
  any cluster;
- run_job: a rank past --timeout or a rank's non-zero exit is JobFailed
  naming the rank, every rank still running is killed (none outlives
  run.py to keep the deleted namespace's addresses busy), and the ranks
  get GLOO_SOCKET_IFNAME and one OpenMP thread.

The live run (minicluster_test.py) checks neither the latency (microseconds
against the 4 MiB collectives' hundreds of milliseconds) nor --warmup (its
training errors are not asserted), nor what a signal does.

Usage: run_main_test.py
"""
import json
import os
import signal
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
sys.path.insert(0, os.path.join(ROOT, "scripts", "minicluster"))
from checks import Checks  # noqa: E402
import run  # noqa: E402

check = Checks()
events = []


class FakeCluster:
    def __init__(self, nodes, rate_mbit, node_queue="fair"):
        events.append(("cluster", nodes, rate_mbit, node_queue))
        self.nodes = nodes
        self.addresses = [f"10.77.0.{i + 1}" for i in range(nodes)]
        self.interface = "eth0"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        events.append(("down",))
        return False


BENCH = dict(one_way_latency_s=1.5e-4,
             collectives=[dict(collective="allreduce", algorithm="ring", ranks=3, bytes=65536,
                               seconds=0.01, repetitions=15, samples_s=[0.01] * 15)])
ITERATIONS = 6


def rank_records(rank):
    return [dict(iteration_s=0.1 + rank * 0.01 + i * 0.001, forward_s=0.01, backward_s=0.02,
                 compression_s=0.003, communication_s=0.05, optimizer_s=0.001, wait_s=0.0,
                 loss=2.0 - 0.1 * i, collective_groups=[(i + 0.0, i + 0.04 + 0.001 * rank)])
            for i in range(ITERATIONS)]


def fake_run_job(action=None):
    def run_job(cluster, argv_for_rank, timeout):
        argvs = [argv_for_rank(r) for r in range(cluster.nodes)]
        events.append(("job", argvs, timeout))
        if action:
            action()
        mode, out = argvs[0][2], argvs[0][6]
        name = argvs[0][7]
        raw = BENCH if mode == "bench" else dict(
            compressor=dict(name=name) if name == "dense" else dict(name=name, density=0.05),
            layers=[dict(name="conv1.weight", bytes=1600)],
            per_rank=[rank_records(r) for r in range(cluster.nodes)],
            alone_per_rank=[[0.01, 0.02, 0.001, 0.002] for _ in range(cluster.nodes)],
            k=4, bytes_sent_rank0=None if argvs[0][7] == "dense" else 32.0)
        with open(out, "w") as f:
            json.dump(raw, f)
    return run_job


def main(argv, run_job, namespaces=(True, ""), python_problem=""):
    """run.main(argv) with the stand-ins; (what it raised or None, events)."""
    real = (run.netns.Cluster, run.netns.can_create_namespaces, run.run_job, run.os.geteuid,
            signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT),
            run.python_problem)
    run.python_problem = lambda python: python_problem
    ignored = []
    # A run.py that does not catch SIGTERM would be killed by it, and this
    # test with it: here the signal is only noted.
    signal.signal(signal.SIGTERM, lambda *_: ignored.append("SIGTERM"))
    run.netns.Cluster, run.netns.can_create_namespaces = FakeCluster, lambda: namespaces
    run.run_job, run.os.geteuid = run_job, lambda: 0
    del events[:]
    try:
        run.main(argv)
        raised = None
    except BaseException as error:
        raised = error
    finally:
        (run.netns.Cluster, run.netns.can_create_namespaces, run.run_job, run.os.geteuid) = real[:4]
        signal.signal(signal.SIGTERM, real[4])
        signal.signal(signal.SIGINT, real[5])
        run.python_problem = real[6]
    return raised, list(events), ignored


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "p3-12.5mbit.json")
    argv = ["--nodes", "3", "--rate", "12.5", "--sizes", "64K,1M", "--reps", "4",
            "--train", "topk,dense", "--iterations", str(ITERATIONS), "--warmup", "2",
            "--batch", "16", "--density", "0.05", "--timeout", "77", "--node-queue", "fifo",
            "--model", "wide-cnn", "--out", out]
    wrote = {}

    def written_after_down():
        wrote["down before the file"] = any(e[0] == "down" for e in events) and not os.path.exists(out)
    real_write = run.write_json_atomically
    run.write_json_atomically = lambda *a, **k: (written_after_down(), real_write(*a, **k))
    try:
        raised, seen, _ = main(argv, fake_run_job())
    finally:
        run.write_json_atomically = real_write
    check(raised is None and os.path.isfile(out), f"run.main wrote the file ({raised!r})")
    with open(out) as f:
        measured = json.load(f)
    check(seen[0] == ("cluster", 3, 12.5, "fifo") and seen[-1] == ("down",)
          and wrote.get("down before the file"),
          f"one cluster of 3 nodes at 12.5 Mbit/s, fifo, torn down before the file is written ({seen[0]})")
    cluster = measured["cluster"]
    check(measured["format"] == "gcsim-measured-run/1" and measured["name"] == "p3-12.5mbit"
          and measured["source"].startswith("scripts/minicluster/run.py --nodes 3")
          and isinstance(measured["wall_s"], float),
          f"format, name, source, wall_s: {measured['format']}, {measured['name']}, "
          f"{measured['source'][:40]}, {measured.get('wall_s')}")
    check(cluster["topology"] == "star" and cluster["nodes"] == 3
          and cluster["link"] == {"bandwidth": "12.5Mbps", "latency": "75.0us"}
          and cluster["shared_cores"] == len(os.sched_getaffinity(0)),
          f"the cluster: star of 3, 12.5Mbps, half the one-way 150 us per link: {cluster}")
    check(measured["collectives"] == BENCH["collectives"], "the benchmark's points as written")
    bench, topk, dense = [e for e in seen if e[0] == "job"]
    worker = os.path.join(ROOT, "scripts", "minicluster", "worker.py")
    want = [["/usr/bin/python3", worker, "bench", str(r), "3", "10.77.0.1"] for r in range(3)]
    check([a[:6] for a in bench[1]] == want
          and all(a[7:] == ["65536,1048576", "4", "wide-cnn", "16"] for a in bench[1])
          and bench[2] == 77,
          f"bench: each rank its rank, P, rank 0's address, the sizes, --reps, --model and "
          f"--batch, --timeout: {bench[1][1]}")
    check(all(a[2:6] == ["train", str(r), "3", "10.77.0.1"]
              and a[7:] == ["topk", str(ITERATIONS), "16", "0.05", "1", "wide-cnn"] for r, a in enumerate(topk[1]))
          and dense[1][0][7] == "dense",
          f"train: the compressor, --iterations, --batch, --density, --matrix-rank, --model: "
          f"{topk[1][2]}")
    training = measured["training"]
    check([t["name"] for t in training] == ["topk", "dense"]
          and all(t["warmup_iterations"] == 2 and len(t["iterations"]) == ITERATIONS
                  and t["ranks"] == 3 and t["workload"]["batch_per_worker"] == 16
                  and t["workload"]["model"] == "wide-cnn" for t in training),
          f"training: topk then dense, --warmup 2, {ITERATIONS} iterations, 3 ranks, 16 a batch: "
          f"{[(t['name'], t['warmup_iterations'], len(t['iterations'])) for t in training]}")
    check(training[0]["bytes_sent_per_worker"] == 32.0 and "bytes_sent_per_worker" not in training[1]
          and training[0]["compressor"] == {"name": "topk", "density": 0.05},
          f"topk's bytes and density, none for dense: {training[0].get('bytes_sent_per_worker')}")
    first = training[0]["iterations"][0]
    check(abs(first["communication_s"] - 0.05) < 1e-12 and abs(first["compression_s"] - 0.003) < 1e-12
          and abs(first["optimizer_s"] - 0.001) < 1e-12 and abs(first["iteration_s"] - 0.11) < 1e-12,
          f"the phases where the ranks put them: {first}")

    # With --barrier, the ranks get it, and their wait is kept.
    raised, seen, _ = main(argv[:-1] + [os.path.join(tmp, "barrier.json"), "--barrier", "--sizes", ""],
                           fake_run_job())
    jobs = [e for e in seen if e[0] == "job"]
    check(raised is None and len(jobs) == 2 and all(a[-1] == "barrier" and len(a) == 14
                                                    for _, argvs, _ in jobs for a in argvs),
          f"--barrier: no bench, every train rank's command ends in barrier ({raised!r})")

    # Signals and failures during a job: the cluster torn down, nothing written.
    for signum in (signal.SIGTERM, signal.SIGINT):
        late = os.path.join(tmp, f"signal{signum}.json")
        raised, seen, ignored = main(argv[:-1] + [late], fake_run_job(
            lambda: (os.kill(os.getpid(), signum), time.sleep(0.5))))
        check(isinstance(raised, KeyboardInterrupt) and not ignored and seen[-1] == ("down",)
              and not os.path.exists(late),
              f"signal {signum} during a job: KeyboardInterrupt ({raised!r}), the cluster torn "
              f"down ({seen[-1]}), nothing written")

    def fail():
        raise run.JobFailed("rank 2 exited with status 1")
    late = os.path.join(tmp, "failed.json")
    raised, seen, _ = main(argv[:-1] + [late], fake_run_job(fail))
    check(isinstance(raised, run.JobFailed) and seen[-1] == ("down",) and not os.path.exists(late),
          f"a failed job: JobFailed ({raised!r}), the cluster torn down, nothing written")
    raised, seen, _ = main(argv[:-1] + [late], fake_run_job(), (False, "the `ip` command is missing"))
    check(isinstance(raised, SystemExit) and "cannot create network namespaces: the `ip` command"
          in str(raised.code) and not seen and not os.path.exists(late),
          f"no namespaces: exit with why ({raised!r}), no cluster, nothing written")
    # A --python without torch failed in every rank once the namespaces were up.
    raised, seen, _ = main(argv[:-1] + [late], fake_run_job(), python_problem="cannot import "
                           "torch.distributed: ModuleNotFoundError: No module named 'torch'")
    check(isinstance(raised, SystemExit) and "--python /usr/bin/python3: cannot import "
          "torch.distributed: ModuleNotFoundError" in str(raised.code) and not seen
          and not os.path.exists(late),
          f"a --python without torch: exit with why ({raised!r}), no cluster, nothing written")
    # The check itself, on an interpreter that has torch and one that is not Python.
    check(run.python_problem("/usr/bin/python3") == ""
          and run.python_problem("/bin/false") == "cannot import torch.distributed: exit status 1",
          f"python_problem: {run.python_problem('/bin/false')!r}")


# run_job with ranks that are real processes (no namespace: the cluster's
# command is the rank's own).
class Local:
    nodes, interface = 3, "eth0"

    def __init__(self, commands):
        self.commands = commands

    def exec_argv(self, rank, argv):
        return self.commands[rank]


started = []
real_popen = run.subprocess.Popen


def popen(*args, **kwargs):
    started.append(real_popen(*args, **kwargs))
    return started[-1]


run.subprocess.Popen = popen
try:
    for commands, needle in (
            ([["/bin/true"], ["/bin/sleep", "30"], ["/bin/sleep", "30"]], "rank 1 still running"),
            ([["/bin/sh", "-c", "exit 3"], ["/bin/sleep", "30"], ["/bin/sleep", "30"]],
             "rank 0 exited with status 3")):
        del started[:]
        begun = time.time()
        try:
            run.run_job(Local(commands), lambda r: ["unused"], 0.5)
            raised = None
        except run.JobFailed as error:
            raised = error
        check(raised is not None and needle in str(raised) and len(started) == 3
              and all(p.poll() is not None for p in started) and time.time() - begun < 10,
              f"run_job: {needle!r} ({raised!r}), all 3 ranks ended "
              f"({[p.poll() for p in started]})")
    del started[:]
    env_check = ["/bin/sh", "-c", 'test "$GLOO_SOCKET_IFNAME" = eth0 && test "$OMP_NUM_THREADS" = 1']
    try:
        run.run_job(Local([env_check] * 3), lambda r: ["unused"], 30)
        raised = None
    except run.JobFailed as error:
        raised = error
    check(raised is None, f"run_job: the ranks get GLOO_SOCKET_IFNAME=eth0, OMP_NUM_THREADS=1 ({raised!r})")
finally:
    run.subprocess.Popen = real_popen
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait()

check.finish()
