#!/usr/bin/python3
"""scripts/import_benchmarks.py end to end, on logs in nccl-tests' format and
in the format of gloo's benchmark program.

The logs' times are made from the alpha-beta costs of the algorithms gcsim
simulates (ring allreduce and allgather; NCCL's pipelined ring broadcast,
gloo's binomial tree) on a known star, so that after the import `gcsim
validate --fit` must recover that star's per-message cost and bandwidth and
simulate every point to within a fraction of a percent: a wrong column,
unit, size convention or broadcast model shows as an error of percents.
Also: the in-place column, the iteration counts, and bad input (exit 2, one
line naming the file), including 90 seeded mutations of a log (never a
traceback or a file gcsim cannot read), times that are nan, infinite,
negative, 0 or below 1 ps, a result row's size, count or time that is no
number (or a negative count), logs that are not UTF-8, bad processes=,
sizes and counts, bad options (numbers, bandwidths, latencies, unknown
ones) and clusters without their required fields. nccl-tests' -J JSON of a run imports as its
log does; its per-iteration times become samples; -N's cycles one point, -G's
launches repetitions; grouped (-m) and cputime (-C) runs are refused, and 80
seeded damages of a JSON file never end in a traceback.

Usage: import_benchmarks_test.py PATH/TO/gcsim
"""
import json
import math
import os
import random
import subprocess
import sys
import tempfile

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
IMPORT = os.path.join(ROOT, "scripts", "import_benchmarks.py")

RANKS = 4
ALPHA = 30e-6   # seconds per message: twice the link latency of 15 us
BETA = 1 / 1.25e9  # seconds per byte: 10 Gbit/s
CHUNK = 512 * 1024
SIZES = [1 << 20, 4 << 20, 16 << 20, 64 << 20]

sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from checks import Checks, refusal_problems  # noqa: E402

check = Checks()


def model_seconds(kind, size, tree=False):
    """`size` as the measured-run format counts it (allgather: the output)."""
    chunk = math.ceil(size / RANKS)
    if kind == "allreduce":
        return 2 * (RANKS - 1) * (ALPHA + chunk * BETA)
    if kind == "allgather":
        return (RANKS - 1) * (ALPHA + chunk * BETA)
    if tree:  # gloo's eager binomial tree at P = 4: 3 n beta + 2 alpha
        return 3 * size * BETA + 2 * ALPHA
    return chain_stream_seconds(size)


def chain_stream_seconds(size):
    """NCCL's ring broadcast as gcsim streams it: the first chunk, the middle
    ones as one body that a rank passes on as soon as the first chunk is in,
    and the last chunk; the other pieces go on once they are in. A hop takes
    one piece at a time, each ALPHA + bytes * BETA."""
    chunks = max(1, math.ceil(size / CHUNK))
    last = size - (chunks - 1) * CHUNK
    if chunks == 1:
        pieces = [(size, False)]
    elif chunks == 2:
        pieces = [(CHUNK, False), (last, False)]
    else:
        pieces = [(CHUNK, False), (size - CHUNK - last, True), (last, False)]
    received = [0.0] * len(pieces)  # at the root
    for _ in range(RANKS - 1):
        posted = [received[i - 1] if cuts else received[i]
                  for i, (_, cuts) in enumerate(pieces)]
        arrived = []
        for i, (piece, _) in enumerate(pieces):
            start = max(posted[i], arrived[-1] if arrived else 0.0)
            arrived.append(start + ALPHA + piece * BETA)
        received = arrived
    return received[-1]


def gloo_log_text(benchmark, kind, nanos=False):
    """What gloo's benchmark program prints (gloo/benchmark/runner.cc); with
    nanos, as --show-nanos prints it: its times in ns."""
    rule = "=" * 92
    lines = [rule, " " * 38 + benchmark.upper(), "",
             "Device:                  tcp, pci=0000:00:03.0, iface=eth0, speed=10000, "
             "addr=[10.0.0.1]",
             f"Options:                 processes={RANKS}, inputs=1, threads=1, verify=true", "",
             rule, " " * 36 + "BENCHMARK RESULTS", "",
             "    size (B)    elements     min (us)    p50 (us)    p99 (us)    max (us)"
             "    bandwidth (GB/s)  iterations"]
    if nanos:
        lines[-1] = lines[-1].replace("(us)", "(ns)")
    for size in SIZES:
        per_rank = size // RANKS if kind == "allgather" else size  # gloo prints the input
        us = round(model_seconds(kind, size, tree=True) * 1e6)
        times = [us - 3, us, us + 9, us + 20]
        if nanos:  # the same times, to the nanosecond
            times = [1000 * t + 417 for t in times]
        lines.append(f"{per_rank:12d}{per_rank // 4:12d}" + "".join(f"{t:12d}" for t in times)
                     + f"{1.0:20.3f}{250:12d}")
    return "\n".join(lines) + "\n"


def log_text(kind, in_place_factor=1.0):
    """What an nccl-tests *_perf program prints (2.13-style columns)."""
    lines = [
        "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 67108864 step: 4(factor) "
        "warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    lines += [f"#  Rank {r:2d} Group  0 Pid {4100 + r:6d} on     node{r:02d} device  0 [0x07] "
              "NVIDIA A100-SXM4-80GB" for r in range(RANKS)]
    lines += [
        "#",
        "#                                                              out-of-place"
        "                       in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
        "     (us)  (GB/s)  (GB/s)       ",
    ]
    # Every row, the 0-byte one too, says its collective in redop and root.
    redop, root = ("sum", -1) if kind == "allreduce" else ("none", 0 if kind == "broadcast" else -1)
    lines.append(f"           0             0     float {redop:>7s} {root:7d}     0.31    0.00    0.00"
                 f"      0     0.30    0.00    0.00      0")
    for size in SIZES:
        us = model_seconds(kind, size) * 1e6
        lines.append(f"{size:12d} {size // 4:13d}     float {redop:>7s} {root:7d} {us:8.1f}"
                     f"    1.00    1.00      0 {us * in_place_factor:8.1f}    1.00    1.00    N/A")
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 1.00", "#"]
    return "\n".join(lines) + "\n"


def write_lines(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def run_import(tmp, *args):
    return subprocess.run(["/usr/bin/python3", IMPORT, *args], capture_output=True, text=True,
                          cwd=tmp)


with tempfile.TemporaryDirectory() as tmp:
    logs = {}
    for kind in ("allreduce", "allgather", "broadcast"):
        logs[kind] = os.path.join(tmp, kind + ".log")
        with open(logs[kind], "w") as f:
            f.write(log_text(kind, in_place_factor=2.0))
    measured = os.path.join(tmp, "cluster.json")
    done = run_import(tmp, "nccl-tests", *[f"{k}={v}" for k, v in logs.items()],
                      "--bandwidth", "10Gbps", "--latency", "15us", "--out", measured)
    check(done.returncode == 0, f"the import runs ({done.stderr.strip()})")
    with open(measured) as f:
        run = json.load(f)
    points = run["collectives"]
    check(len(points) == 12, f"12 points, the 0-byte rows left out: {len(points)}")
    check(all(p["ranks"] == RANKS and p["repetitions"] == 20 for p in points),
          "ranks from the '# Rank' lines, repetitions from 'iters: 20' (not the warm-up's 5)")
    check(run["cluster"] == {"topology": "star", "nodes": RANKS,
                             "link": {"bandwidth": "10Gbps", "latency": "15us"}},
          f"a star of the logs' ranks: {run['cluster']}")
    check("note:" not in done.stdout, f"ranks on hosts of their own fit a star: {done.stdout!r}")
    # The log's ranks each on a host of its own, the cluster's all on one
    # machine of 4 GPUs: compared so, one is NVLink and the other a network.
    gpus = os.path.join(tmp, "gpus.json")
    with open(gpus, "w") as f:
        json.dump({"topology": "multi_gpu", "nodes": 2, "gpus_per_node": RANKS,
                   "link": {"bandwidth": "10Gbps", "latency": "15us"},
                   "gpu_link": {"bandwidth": "100GBps", "latency": "2us"}}, f)
    done = run_import(tmp, "nccl-tests", f"allreduce={logs['allreduce']}", "--cluster", gpus,
                      "--out", os.path.join(tmp, "placed.json"))
    check(done.returncode == 0 and f"note: allreduce.log's '# Rank' lines put its {RANKS} ranks "
          f"on {RANKS} host(s), where the cluster places them on 1 machine(s)" in done.stdout,
          f"ranks placed otherwise than the log's hosts are pointed out: {done.stdout!r}")
    # The same machines as a fat tree's leaves (the import refused the
    # fields gcsim takes there, and placed one rank a leaf).
    with open(gpus, "w") as f:
        json.dump({"topology": "fat_tree", "fat_tree": {"down": [2], "up": [1]},
                   "gpus_per_node": RANKS, "link": {"bandwidth": "10Gbps", "latency": "15us"},
                   "gpu_link": {"bandwidth": "100GBps", "latency": "2us"}}, f)
    done = run_import(tmp, "nccl-tests", f"allreduce={logs['allreduce']}", "--cluster", gpus,
                      "--out", os.path.join(tmp, "placed-tree.json"))
    check(done.returncode == 0 and f"note: allreduce.log's '# Rank' lines put its {RANKS} ranks "
          f"on {RANKS} host(s), where the cluster places them on 1 machine(s)" in done.stdout,
          f"a fat tree of machines places the ranks as multi_gpu does: {done.stdout!r} "
          f"{done.stderr!r}")
    big = [p for p in points if p["collective"] == "allgather" and p["bytes"] == 64 << 20][0]
    check(abs(big["seconds"] - model_seconds("allgather", 64 << 20)) < 1e-6,
          f"seconds from the out-of-place microseconds: {big['seconds']}")

    report_path = os.path.join(tmp, "report.json")
    done = subprocess.run([GCSIM, "validate", measured, "--fit", "--out",
                           os.path.join(tmp, "platform.json"), "--json", report_path, "--quiet"],
                          capture_output=True, text=True)
    check(done.returncode == 0, f"gcsim validate --fit runs ({done.stderr.strip()})")
    if done.returncode == 0:
        with open(report_path) as f:
            report = json.load(f)
        fit = report["fit"]
        check(abs(fit["alpha_s"] / ALPHA - 1) < 0.01 and abs(fit["bandwidth_Bps"] * BETA - 1) < 0.001,
              f"the fit recovers alpha {fit['alpha_s'] * 1e6:.2f} us and "
              f"{fit['bandwidth_Bps'] * 8e-9:.4f} Gbit/s")
        worst = max(abs(p["relative_error"]) for p in report["collectives"])
        check(worst < 0.005, f"every point simulated within 0.5% (worst {100 * worst:.3f}%)")
        broadcast = [p for p in report["collectives"] if p["collective"] == "broadcast"]
        check(all(p["algorithm"] == "ring" and p["chunk_bytes"] == CHUNK for p in broadcast),
              "broadcast is simulated as NCCL's ring in 512 KiB pieces")
        # The rate of a ring point's critical path: 2 (P - 1) chunks for an
        # allreduce, P - 1 for an allgather, over the measured time; large
        # points of a clean alpha-beta cluster approach 1 / beta.
        for p in report["collectives"]:
            # What each point gave the fit (in sample), the rest predictions:
            # here one line over every ring point (no point below 1 MiB).
            role = None if p["collective"] == "broadcast" else (
                "alpha and bandwidth" if fit["latency_points"] == 0
                else "alpha" if p["bytes"] < 1 << 20 else "bandwidth" if p["bytes"] >= 4 << 20
                else None)
            check(p.get("fitted_to") == role,
                  f"{p['collective']} {p['bytes']} B: fitted to {p.get('fitted_to')}, not {role}")
            steps = {"allreduce": 2, "allgather": 1}.get(p["collective"])
            if steps is None:
                check("measured_path_rate_Bps" not in p, "broadcast has no ring path rate")
                continue
            chunk = -(-p["bytes"] // p["ranks"])
            expected = steps * (p["ranks"] - 1) * chunk / p["measured_s"]
            check(abs(p["measured_path_rate_Bps"] / expected - 1) < 1e-9,
                  f"{p['collective']} {p['bytes']} B: path rate {p['measured_path_rate_Bps']:.4g} "
                  f"B/s against {expected:.4g}")
        largest = max((p for p in report["collectives"] if p["collective"] != "broadcast"),
                      key=lambda p: p["bytes"])
        check(abs(largest["measured_path_rate_Bps"] * BETA - 1) < 0.05,
              f"the largest ring point runs at about 1 / beta: "
              f"{largest['measured_path_rate_Bps'] * BETA:.3f}")

    in_place = os.path.join(tmp, "in-place.json")
    done = run_import(tmp, "nccl-tests", f"allreduce={logs['allreduce']}", "--bandwidth", "10Gbps",
                      "--latency", "15us", "--in-place", "--out", in_place)
    with open(in_place) as f:
        doubled = json.load(f)["collectives"]
    check(done.returncode == 0 and all(
        abs(p["seconds"] / model_seconds("allreduce", p["bytes"]) - 2) < 1e-3 for p in doubled),
        "--in-place reads the second time column")

    # NCCL_ALGO=Tree: the allreduce points name the tree, which `gcsim
    # validate` runs, compares apart and leaves out of the fit.
    tree_run = os.path.join(tmp, "tree.json")
    done = run_import(tmp, "nccl-tests", f"allreduce={logs['allreduce']}", "--bandwidth", "10Gbps",
                      "--latency", "15us", "--allreduce", "tree", "--out", tree_run)
    with open(tree_run) as f:
        tree_points = json.load(f)["collectives"]
    check(done.returncode == 0 and tree_points and all(p["algorithm"] == "tree" for p in tree_points),
          f"--allreduce tree marks the allreduce points ({done.stderr.strip()})")
    tree_report = os.path.join(tmp, "tree-report.json")
    done = subprocess.run([GCSIM, "validate", tree_run, "--json", tree_report, "--quiet"],
                          capture_output=True, text=True, cwd=ROOT)
    check(done.returncode == 0, f"gcsim validate runs the tree points ({done.stderr.strip()})")
    if done.returncode == 0:
        with open(tree_report) as f:
            tree_sim = json.load(f)
        # At P = 4 rank 2 is interior in one tree (up once, down to two
        # children) and a leaf in the other: 2 n through its link, where the
        # ring sends 2(P-1)/P n = 1.5 n; the pipeline adds a few chunks.
        largest = max(tree_sim["collectives"], key=lambda p: p["bytes"])
        bound = 2 * largest["bytes"] * BETA
        check(all(p["label"] == "allreduce/tree" for p in tree_sim["collectives"]),
              "the comparison names the points allreduce/tree")
        check(largest["algorithm"] == "tree" and bound <= largest["simulated_s"] < 1.03 * bound,
              f"64 MiB on the tree takes 2 n / B and a few chunks: {largest['simulated_s']} s, "
              f"2 n / B = {bound} s")
        summary = tree_sim["summary"]
        check(summary["tree_allreduce_4MiB_and_more"]["points"] > 0
              and summary["ring_collectives_4MiB_and_more"]["points"] == 0,
              "tree points are summarised apart from the ring ones")

    # --allreduce tree names the allreduce's algorithm only; --chunk-bytes is
    # the broadcast's piece; --nodes the star's nodes.
    options_run = os.path.join(tmp, "options.json")
    done = run_import(tmp, "nccl-tests", *[f"{k}={v}" for k, v in logs.items()], "--bandwidth",
                      "10Gbps", "--latency", "15us", "--allreduce", "tree", "--chunk-bytes",
                      "1048576", "--nodes", "8", "--out", options_run)
    optioned = json.load(open(options_run)) if done.returncode == 0 else {}
    algorithms = {(p["collective"], p["algorithm"], p.get("chunk_bytes"))
                  for p in optioned.get("collectives", [])}
    check(algorithms == {("allreduce", "tree", None), ("allgather", "ring", None),
                         ("broadcast", "ring", 1 << 20)}
          and optioned["cluster"]["nodes"] == 8,
          f"--allreduce tree marks only the allreduce, --chunk-bytes the broadcast's pieces, "
          f"--nodes 8 the star ({done.stderr.strip()}{sorted(algorithms)})")

    # gloo's benchmark program: the title names the collective, allgather's
    # size is per rank, p50 is the time, broadcast is gloo's tree.
    gloo_logs = []
    for benchmark, kind in (("allreduce_ring", "allreduce"), ("allgather_ring", "allgather"),
                            ("broadcast", "broadcast")):
        gloo_logs.append(os.path.join(tmp, benchmark + ".txt"))
        with open(gloo_logs[-1], "w") as f:
            f.write(gloo_log_text(benchmark, kind))
    gloo_run = os.path.join(tmp, "gloo.json")
    done = run_import(tmp, "gloo", *gloo_logs, "--bandwidth", "10Gbps", "--latency", "15us",
                      "--out", gloo_run)
    check(done.returncode == 0, f"gloo: the import runs ({done.stderr.strip()})")
    with open(gloo_run) as f:
        gloo_points = json.load(f)["collectives"]
    check(len(gloo_points) == 12 and all(p["ranks"] == RANKS and p["repetitions"] == 250
                                         for p in gloo_points),
          "gloo: 12 points, ranks from processes=, repetitions from the iterations column")
    check(sorted({p["bytes"] for p in gloo_points if p["collective"] == "allgather"}) == SIZES,
          "gloo: an allgather's bytes are its output, processes x the printed input")
    # The p50 column exactly (its min and p99 are 3 and 9 us off, within
    # the fit's 0.5%).
    off = [(p["collective"], p["bytes"], p["seconds"]) for p in gloo_points
           if abs(p["seconds"] - 1e-6 * round(1e6 * model_seconds(
               p["collective"], p["bytes"], tree=True))) > 1e-12]
    check(not off, f"gloo: seconds are the p50 column's microseconds ({off[:2]})")
    # --show-nanos: the columns in ns, the same p50 to the nanosecond;
    # allreduce_ring_chunked is a ring allreduce too.
    nanos_logs = []
    for benchmark, kind in (("allreduce_ring_chunked", "allreduce"), ("broadcast", "broadcast")):
        nanos_logs.append(write_lines(os.path.join(tmp, benchmark + "-ns.txt"),
                                      gloo_log_text(benchmark, kind, nanos=True).splitlines()))
    nanos_run = os.path.join(tmp, "gloo-ns.json")
    done = run_import(tmp, "gloo", *nanos_logs, "--bandwidth", "10Gbps", "--latency", "15us",
                      "--out", nanos_run)
    nanos_points = json.load(open(nanos_run))["collectives"] if done.returncode == 0 else []
    off = [(p["collective"], p["bytes"], p["seconds"]) for p in nanos_points
           if abs(p["seconds"] - 1e-9 * (1000 * round(1e6 * model_seconds(
               p["collective"], p["bytes"], tree=True)) + 417)) > 1e-12]
    check(len(nanos_points) == 8 and not off
          and {(p["collective"], p["algorithm"]) for p in nanos_points}
          == {("allreduce", "ring"), ("broadcast", "binomial_tree")},
          f"gloo --show-nanos: p50 (ns) read as nanoseconds, allreduce_ring_chunked a ring "
          f"allreduce ({done.stderr.strip()}{off[:2]})")
    report_path = os.path.join(tmp, "gloo-report.json")
    done = subprocess.run([GCSIM, "validate", gloo_run, "--fit", "--out",
                           os.path.join(tmp, "gloo-platform.json"), "--json", report_path,
                           "--quiet"], capture_output=True, text=True)
    check(done.returncode == 0, f"gloo: gcsim validate --fit runs ({done.stderr.strip()})")
    if done.returncode == 0:
        with open(report_path) as f:
            report = json.load(f)
        worst = max(abs(p["relative_error"]) for p in report["collectives"])
        check(worst < 0.005 and all(p["algorithm"] == "binomial_tree" for p in
                                    report["collectives"] if p["collective"] == "broadcast"),
              f"gloo: every point within 0.5%, broadcast as gloo's tree (worst {100 * worst:.3f}%)")

    # Bad input: exit 2, one line naming what is wrong.
    empty = os.path.join(tmp, "empty.log")
    with open(empty, "w") as f:
        f.write("# nThread 1 nGpus 1\nsomething else\n")
    other = os.path.join(tmp, "eight.log")
    with open(other, "w") as f:
        f.write(log_text("allgather").replace("#  Rank  0", "#  Rank  0\n#  Rank  9", 1)
                .replace("#  Rank  1", "#  Rank  1\n#  Rank  8\n#  Rank  7\n#  Rank  6", 1))
    out = os.path.join(tmp, "bad.json")
    for label, args, needle in [
            ("a log without rows", [f"allreduce={empty}"], empty),
            ("an unknown collective", [f"alltoall={logs['allreduce']}"], "alltoall"),
            ("a missing log", [f"allreduce={tmp}/missing.log"], "missing.log"),
            ("logs of different rank counts", [f"allreduce={logs['allreduce']}",
                                               f"allgather={other}"], "different numbers of ranks")]:
        done = run_import(tmp, "nccl-tests", *args, "--bandwidth", "10Gbps", "--latency", "15us",
                          "--out", out)
        lines = done.stderr.strip().splitlines()
        check(done.returncode == 2 and len(lines) == 1 and needle in lines[0]
              and not os.path.exists(out),
              f"{label}: exit 2 with one line naming it, nothing written "
              f"(got {done.returncode}: {lines})")

    halving = os.path.join(tmp, "halving.txt")
    with open(halving, "w") as f:
        f.write(gloo_log_text("allreduce_halving_doubling", "allreduce"))
    one_process = write_lines(os.path.join(tmp, "one-process.txt"), gloo_log_text(
        "allreduce_ring", "allreduce").replace("processes=4", "processes=1").splitlines())
    two_threads = write_lines(os.path.join(tmp, "two-threads.txt"), gloo_log_text(
        "allreduce_ring", "allreduce").replace("threads=1", "threads=2").splitlines())
    two_inputs = os.path.join(tmp, "two-inputs.txt")
    with open(two_inputs, "w") as f:
        f.write(gloo_log_text("allreduce_ring", "allreduce").replace("inputs=1", "inputs=2"))
    # Two runs in one file (a loop's output redirected once): every row was
    # taken for the first title's collective and the last processes=.
    joined = os.path.join(tmp, "joined.txt")
    with open(joined, "w") as f:
        f.write(gloo_log_text("allreduce_ring", "allreduce")
                + gloo_log_text("broadcast", "broadcast").replace("processes=4", "processes=8"))
    nanos_joined = os.path.join(tmp, "nanos-joined.txt")
    with open(nanos_joined, "w") as f:  # titles and Options lines gone: the tables tell
        f.write("\n".join(line for line in (gloo_log_text("allreduce_ring", "allreduce")
                                            + gloo_log_text("allreduce_ring", "allreduce",
                                                            nanos=True)).splitlines()
                          if "Options" not in line and "ALLREDUCE" not in line) + "\n")
    # A log cut inside a row, and a row whose count is not its size's 4-byte
    # floats, were taken without a word (one point fewer, a count of -1).
    ring_text = gloo_log_text("allreduce_ring", "allreduce")
    cut = os.path.join(tmp, "cut.txt")
    with open(cut, "w") as f:
        f.write(ring_text[:ring_text.rindex(f"{250:12d}")])
    miscounted = os.path.join(tmp, "miscounted.txt")
    with open(miscounted, "w") as f:
        f.write(ring_text.replace(f"{SIZES[0]:12d}{SIZES[0] // 4:12d}", f"{SIZES[0]:12d}{-1:12d}", 1))
    for label, log, needle in [("a log cut inside a row", cut,
                                "columns, expected 8 (size, elements, min, p50, p99, max, "
                                "bandwidth, iterations): a row cut short?"),
                               ("a count that is not the size's floats", miscounted,
                                f"size {SIZES[0]} is not 4 x its -1 elements"),
                               ("two runs joined into one log", joined,
                                "line 16: a second benchmark title (broadcast)"),
                               ("two tables of results in one log", nanos_joined,
                                "a second table of results"),
                               ("an algorithm gcsim does not simulate", halving,
                                "allreduce_halving_doubling"),
                               ("two inputs per process", two_inputs, "inputs=2"),
                               ("two threads per process", two_threads, "threads=2"),
                               ("one process (a collective needs 2 ranks)", one_process,
                                "processes=1"),
                               ("a log that is not gloo's", empty, "no benchmark title")]:
        if os.path.exists(out):
            os.remove(out)
        done = run_import(tmp, "gloo", log, "--bandwidth", "10Gbps", "--latency", "15us",
                          "--out", out)
        lines = done.stderr.strip().splitlines()
        check(done.returncode == 2 and len(lines) == 1 and needle in lines[0]
              and not os.path.exists(out),
              f"gloo, {label}: exit 2 with one line naming it (got {done.returncode}: {lines})")
    # The same log twice (its points twice, weighed twice by --fit), and a
    # folder as --out (refused before any log is read).
    ring = os.path.join(tmp, "ring.txt")
    with open(ring, "w") as f:
        f.write(ring_text)
    for label, given, target, needle in [("a log given twice", [ring, ring], out,
                                         "twice in the logs"),
                                        ("a folder as --out", [ring], tmp,
                                         f"--out: {tmp} is a folder")]:
        done = run_import(tmp, "gloo", *given, "--bandwidth", "10Gbps", "--latency", "15us",
                          "--out", target)
        lines = done.stderr.strip().splitlines()
        check(done.returncode == 2 and len(lines) == 1 and needle in lines[0]
              and not os.path.exists(out),
              f"gloo, {label}: exit 2 with one line naming it (got {done.returncode}: {lines})")

    # Bad logs, options and clusters: exit 2, one line naming the file or
    # option, no traceback, nothing written; never a file gcsim validate
    # would refuse.
    binary = os.path.join(tmp, "binary.log")
    with open(binary, "wb") as f:
        f.write(b"\xff\xfe\x00 not text\n")
    gloo_text = gloo_log_text("allreduce_ring", "allreduce")
    gloo_bad = {}
    for name, old_text, new_text in [
            ("processes-word", "processes=4", "processes=four"),
            ("processes-negative", "processes=4", "processes=-4"),
            ("size-negative", f"{SIZES[0]:12d}", f"{-SIZES[0]:12d}"),
            ("iterations-negative", f"{250:12d}", f"{-250:12d}")]:
        gloo_bad[name] = write_lines(os.path.join(tmp, name + ".txt"),
                                     gloo_text.replace(old_text, new_text, 1).splitlines())
    no_topology = write_lines(os.path.join(tmp, "no-topology.json"), [json.dumps(
        {"nodes": RANKS, "link": {"bandwidth": "10Gbps", "latency": "15us"}})])
    bad_link = write_lines(os.path.join(tmp, "bad-link.json"), [json.dumps(
        {"topology": "star", "nodes": RANKS, "link": {"bandwidth": "fast", "latency": "15us"}})])
    gigabit_link = write_lines(os.path.join(tmp, "gigabit-link.json"), [json.dumps(
        {"topology": "star", "nodes": RANKS, "link": {"bandwidth": "1Gb/s", "latency": "15us"}})])
    no_gpu_link = write_lines(os.path.join(tmp, "no-gpu-link.json"), [json.dumps(
        {"topology": "multi_gpu", "nodes": 2, "gpus_per_node": 2,
         "link": {"bandwidth": "10Gbps", "latency": "15us"}})])
    deep = write_lines(os.path.join(tmp, "deep.json"), ["[" * 100000 + "]" * 100000])
    # A network section gcsim validate refuses was written through unchecked.
    bad_network = {}
    for name, network in (("model", {"model": "cm02"}), ("factor", {"latency_factor": 0}),
                          ("window", {"tcp_window": 4096}), ("field", {"modle": "CM02"})):
        bad_network[name] = write_lines(os.path.join(tmp, f"bad-network-{name}.json"), [
            json.dumps({"topology": "star", "nodes": RANKS, "network": network,
                        "link": {"bandwidth": "10Gbps", "latency": "15us"}})])
    # Runs that are not one good run of the named collective, which the
    # import took as one (a researcher's own cluster, 2026-12-03 audit):
    # two logs joined; nccl-tests without MPI under mpirun (a 1-rank run per
    # process, each with its own header and "# Rank 0"); wrong results; a
    # log of another collective, by its redop and root columns or by the
    # program's name.
    allreduce_text, allgather_text = log_text("allreduce"), log_text("allgather")
    joined = write_lines(os.path.join(tmp, "joined.log"),
                         (allreduce_text + allgather_text).splitlines())
    one_rank = "\n".join(line for line in allreduce_text.splitlines()
                         if "Rank" not in line or "Rank  0 " in line) + "\n"
    no_mpi = write_lines(os.path.join(tmp, "no-mpi.log"), (one_rank * 4).splitlines())
    one_rank_log = write_lines(os.path.join(tmp, "one-rank.log"), one_rank.splitlines())
    ranks_twice = write_lines(os.path.join(tmp, "ranks-twice.log"), [
        line for line in allreduce_text.splitlines()
        for _ in range(2 if "Rank  3 " in line else 1)])
    row = f"{SIZES[2]:12d} {SIZES[2] // 4:13d}"
    wrong_rows = write_lines(os.path.join(tmp, "wrong-rows.log"), [
        line[:line.index("      0 ")] + "   4096 " + line[line.index("      0 ") + 8:]
        if line.startswith(row) else line for line in allreduce_text.splitlines()])
    failed = write_lines(os.path.join(tmp, "failed.log"), allreduce_text.replace(
        "# Out of bounds values : 0 OK", "# Out of bounds values : 4096 FAILED").splitlines())
    unbounded = write_lines(os.path.join(tmp, "unbounded.log"), allreduce_text.replace(
        "# Out of bounds values : 0 OK", "# Out of bounds values : x").splitlines())
    # A run that died at its third size, the row it was printing cut in its
    # time column (2 of "25.4"): imported, its last point was 2 us.
    died = allreduce_text.splitlines()
    died = died[:died.index(next(line for line in died if line.startswith(row)))]
    died = write_lines(os.path.join(tmp, "died.log"), died + [row + "     float     sum      -1 2"])
    named = write_lines(os.path.join(tmp, "named.log"), [
        "# Collective test starting: all_gather_perf", *allgather_text.splitlines()])
    # reduce_perf's rows (redop sum, root 0) given as broadcast=; an in-place
    # #wrong above 0 where --in-place takes that column's times.
    reduce_log = write_lines(os.path.join(tmp, "reduce.log"), log_text("broadcast").replace(
        "float    none ", "float     sum ").splitlines())
    in_place_wrong = write_lines(os.path.join(tmp, "in-place-wrong.log"), [
        line[:line.rindex("N/A")] + "4096" if line.startswith(row) else line
        for line in allreduce_text.splitlines()])
    own_out = os.path.join(tmp, "own-out.log")
    with open(own_out, "w") as f:
        f.write(allreduce_text)
    star_file = os.path.join(ROOT, "platforms", "star-8x10g.json")
    star = ["--bandwidth", "10Gbps", "--latency", "15us"]
    allreduce = f"allreduce={logs['allreduce']}"
    broadcast = f"broadcast={logs['broadcast']}"
    out = os.path.join(tmp, "bad.json")
    for label, args, needles in [
            ("nccl-tests: a log that is not UTF-8", ["nccl-tests", f"allreduce={binary}", *star],
             ["binary.log", "UTF-8"]),
            ("gloo: a log that is not UTF-8", ["gloo", binary, *star], ["binary.log", "UTF-8"]),
            ("gloo: processes=four", ["gloo", gloo_bad["processes-word"], *star],
             ["processes-word.txt", "processes=four"]),
            ("gloo: processes=-4", ["gloo", gloo_bad["processes-negative"], *star],
             ["processes-negative.txt", "processes=-4"]),
            ("gloo: a negative size", ["gloo", gloo_bad["size-negative"], *star],
             ["size-negative.txt", f"size {-SIZES[0]}"]),
            ("gloo: a negative iteration count", ["gloo", gloo_bad["iterations-negative"], *star],
             ["iterations-negative.txt", "-250 iterations"]),
            ("--chunk-bytes -5", ["nccl-tests", broadcast, *star, "--chunk-bytes", "-5"],
             ["--chunk-bytes", "-5"]),
            ("--nodes=-3", ["nccl-tests", allreduce, *star, "--nodes=-3"], ["--nodes", "-3"]),
            ("--bandwidth garbage", ["nccl-tests", allreduce, "--bandwidth", "garbage",
                                     "--latency", "15us"], ["--bandwidth", "garbage"]),
            ("--latency=-5us", ["nccl-tests", allreduce, "--bandwidth", "10Gbps",
                                "--latency=-5us"], ["--latency", "-5us"]),
            ("--latency without a unit", ["nccl-tests", allreduce, "--bandwidth", "10Gbps",
                                          "--latency", "15"], ["--latency", "15"]),
            # gcsim's hints, for the spellings a platform file would get them for.
            ("--bandwidth 10Gb", ["nccl-tests", allreduce, "--bandwidth", "10Gb", "--latency",
                                  "15us"], ["--bandwidth", "'10Gb' (did you mean \"10Gbps\"?)"]),
            ("--latency 15US", ["nccl-tests", allreduce, "--bandwidth", "10Gbps", "--latency",
                                "15US"],
             ["--latency", "'15US' (units are case-sensitive: did you mean \"15us\"?)"]),
            ("--ranks 1", ["nccl-tests", allreduce, *star, "--ranks", "1"], ["--ranks"]),
            # Against the log's own count it was dropped without a word.
            ("--ranks against the log's", ["nccl-tests", allreduce, *star, "--ranks",
                                           str(2 * RANKS)],
             [f"{RANKS} '# Rank' lines", f"--ranks {2 * RANKS}"]),
            ("--ranks against processes=", ["gloo", gloo_logs[0], *star, "--ranks",
                                            str(2 * RANKS)],
             [f"processes={RANKS}", f"--ranks {2 * RANKS}"]),
            ("fewer --nodes than ranks", ["nccl-tests", allreduce, *star, "--nodes", "2"],
             ["--nodes", "2 workers", f"{RANKS} ranks"]),
            ("an unknown option", ["gloo", gloo_logs[0], *star, "--bogus"], ["--bogus"]),
            ("an empty --out", ["gloo", gloo_logs[0], *star, "--out="], ["--out"]),
            ("a --cluster without a topology", ["nccl-tests", allreduce, "--cluster", no_topology],
             ["no-topology.json", "/topology"]),
            ("a --cluster with a bad bandwidth", ["nccl-tests", allreduce, "--cluster", bad_link],
             ["bad-link.json", "/link/bandwidth", "fast"]),
            ("a --cluster with a bandwidth in Gb/s", ["nccl-tests", allreduce, "--cluster",
                                                      gigabit_link],
             ["gigabit-link.json", "/link/bandwidth", '"1Gb/s" (did you mean "1Gbps"?)']),
            ("a --cluster with an unknown network model",
             ["nccl-tests", allreduce, "--cluster", bad_network["model"]],
             ["bad-network-model.json", "/network/model", "CM02, LV08, SMPI", "cm02"]),
            ("a --cluster with a latency factor of 0",
             ["gloo", gloo_logs[0], "--cluster", bad_network["factor"]],
             ["bad-network-factor.json", "/network/latency_factor", "[0.001, 1000]"]),
            ("a --cluster with a TCP window without a unit",
             ["nccl-tests", allreduce, "--cluster", bad_network["window"]],
             ["bad-network-window.json", "/network/tcp_window", "4096"]),
            ("a --cluster with a misspelt network field",
             ["nccl-tests", allreduce, "--cluster", bad_network["field"]],
             ["bad-network-field.json", "/network/modle", "not a field"]),
            ("a multi_gpu --cluster without gpu_link", ["nccl-tests", allreduce, "--cluster",
                                                        no_gpu_link],
             ["no-gpu-link.json", "/gpu_link"]),
            ("a --cluster nested too deeply", ["nccl-tests", allreduce, "--cluster", deep],
             ["deep.json"]),
            ("a --cluster that is not UTF-8", ["nccl-tests", allreduce, "--cluster", binary],
             ["binary.log"]),
            ("two logs joined into one", ["nccl-tests", f"allreduce={joined}", *star],
             ["joined.log", "a second nccl-tests header (2 in all)"]),
            ("1-rank runs of nccl-tests without MPI", ["nccl-tests", f"allreduce={no_mpi}", *star],
             ["no-mpi.log", "(4 in all)", "without MPI"]),
            ("a rank listed twice", ["nccl-tests", f"allreduce={ranks_twice}", *star],
             ["ranks-twice.log", "'# Rank 3' appears 2 times"]),
            ("a row with wrong results", ["nccl-tests", f"allreduce={wrong_rows}", *star],
             ["wrong-rows.log", f"size {SIZES[2]}: #wrong is 4096"]),
            ("a run that failed its check", ["nccl-tests", f"allreduce={failed}", *star],
             ["failed.log", "4096 FAILED"]),
            ("an out-of-bounds line that is no count", ["nccl-tests", f"allreduce={unbounded}",
                                                        *star],
             ["unbounded.log", "expected 'Out of bounds values : N OK'"]),
            ("a run that did not finish", ["nccl-tests", f"allreduce={died}", *star],
             ["died.log", "no '# Avg bus bandwidth' line", "did not finish",
              f"line {len(open(died).read().splitlines())}"]),
            ("wrong in-place results, --in-place", ["nccl-tests", f"allreduce={in_place_wrong}",
                                                    *star, "--in-place"],
             ["in-place-wrong.log", f"size {SIZES[2]}: #wrong is 4096"]),
            ("a reduce log given as broadcast=", ["nccl-tests", f"broadcast={reduce_log}", *star],
             ["reduce.log", "redop sum and root 0 are a reduce's, not a broadcast's"]),
            ("a log of one '# Rank' line without --ranks", ["nccl-tests",
                                                            f"allreduce={one_rank_log}", *star],
             ["one-rank.log", "one '# Rank' line", "--ranks"]),
            ("one --node fewer than ranks", ["nccl-tests", allreduce, *star, "--nodes", "3"],
             ["--nodes", "3 workers", f"{RANKS} ranks"]),
            ("an allgather log given as allreduce=", ["nccl-tests", f"allreduce={logs['allgather']}",
                                                       *star],
             ["allgather.log", "redop none and root -1 are an allgather's, not an allreduce's"]),
            ("a broadcast log given as allgather=", ["nccl-tests", f"allgather={logs['broadcast']}",
                                                      *star],
             ["broadcast.log", "are a broadcast's, not an allgather's"]),
            ("all_gather_perf given as broadcast=", ["nccl-tests", f"broadcast={named}", *star],
             ["named.log", "a log of all_gather_perf, given as broadcast="]),
            ("--out over its own log", ["nccl-tests", f"allreduce={own_out}", *star, "--out",
                                        own_out],
             ["--out", "is also an input"]),
            ("--cluster with --bandwidth", ["nccl-tests", allreduce, "--cluster", star_file,
                                            "--bandwidth", "10Gbps"],
             ["--bandwidth", "without --cluster"]),
            # The one missing was not named.
            ("--bandwidth alone", ["nccl-tests", allreduce, "--bandwidth", "10Gbps"],
             ["--bandwidth without --latency: a star needs both"]),
            ("no cluster at all", ["nccl-tests", allreduce],
             ["--cluster FILE, or --bandwidth and --latency, describe the cluster"])]:
        if os.path.exists(out):
            os.remove(out)
        done = run_import(tmp, *args, "--out", out) if not any(
            a.startswith("--out") for a in args) else run_import(tmp, *args)
        problems = refusal_problems(done, ["import_benchmarks.py: ", *needles], result_file=out)
        if "Traceback" in done.stderr:
            problems.append("a traceback")
        if own_out in args and open(own_out).read() != allreduce_text:
            problems.append("the log was written over")
        check(not problems, f"{label}: exit 2, one line naming it, nothing written"
                            f"{'; ' + '; '.join(problems) if problems else ''}")
    # A log of one '# Rank' line (one process's of an MPI run): --ranks says
    # the run's ranks.
    out = os.path.join(tmp, "one-rank.json")
    done = run_import(tmp, "nccl-tests", f"allreduce={one_rank_log}", *star, "--ranks",
                      str(RANKS), "--out", out)
    given = json.load(open(out)) if done.returncode == 0 else {}
    check(given and all(p["ranks"] == RANKS for p in given["collectives"])
          and given["cluster"]["nodes"] == RANKS,
          f"one '# Rank' line and --ranks {RANKS}: {RANKS} ranks on {RANKS} nodes "
          f"({done.stderr.strip()})")
    # A table of in-place times alone (its label line says so): read with
    # --in-place, refused without; it was read as out-of-place, and
    # --in-place refused as "no in-place time column".
    def in_place_only(line):
        words = line.split()
        if "out-of-place" in words:
            return "#  in-place"
        if line.startswith("#") and "size" not in words and "(B)" not in words:
            return line
        return " ".join(words[:5] + words[9:]) if not line.startswith("#") else \
            "# " + " ".join(words[1:6] + words[10:])
    halved = log_text("allreduce", in_place_factor=0.5)
    only = write_lines(os.path.join(tmp, "in-place-only.log"),
                       [in_place_only(line) for line in halved.splitlines()])
    refused = run_import(tmp, "nccl-tests", f"allreduce={only}", *star, "--out", out)
    taken = run_import(tmp, "nccl-tests", f"allreduce={only}", *star, "--in-place", "--out", out)
    seconds = []
    if taken.returncode == 0:
        with open(out) as f:
            seconds = [p["seconds"] for p in json.load(f)["collectives"]]
    expected = [model_seconds("allreduce", size) * 0.5 for size in SIZES]
    check(not refusal_problems(refused, ["in-place", "--in-place"]) and len(seconds) == len(SIZES)
          and all(abs(a - b) < 1e-3 * b for a, b in zip(seconds, expected)),
          f"an in-place-only table: refused without --in-place ({refused.stderr.strip()}), its "
          f"times with it ({taken.stderr.strip()})")

    # A SimGrid XML platform: its "xml" written relative to the measured run,
    # where gcsim validate looks for it.
    xml_run = os.path.join(tmp, "sub", "xml.json")
    os.makedirs(os.path.dirname(xml_run))
    done = run_import(tmp, "nccl-tests", allreduce, "--cluster",
                      os.path.join(ROOT, "platforms", "xml-cluster.json"), "--out", xml_run)
    checked = subprocess.run([GCSIM, "validate", xml_run, "--quiet"], capture_output=True,
                             text=True, cwd=tmp) if done.returncode == 0 else done
    check(checked.returncode == 0, f"a simgrid_xml --cluster: its xml found from the measured "
                                   f"run ({checked.stderr.strip()})")

    # Mutated logs (lines deleted, duplicated or cut short; a number made
    # nan, 1e309, -1, 0 or a word), seeded: every import exits 0 with a
    # measured run gcsim validate reads (exit 0 or 2, never a crash), or 2
    # with one line and nothing written; never a traceback. (A result row
    # with a number that does not parse, or a time that is not positive and
    # finite, is refused; a line that is no result row is skipped.)
    rng = random.Random(7)
    sources = [("nccl-tests", "allreduce", log_text("allreduce")),
               ("gloo", None, gloo_log_text("allgather_ring", "allgather"))]
    outcomes = {0: 0, 2: 0}
    bad = []
    for trial in range(90):
        tool, kind, text = sources[trial % 2]
        lines = text.splitlines()
        at = rng.randrange(len(lines))
        how = rng.choice(["delete", "duplicate", "cut", "number"])
        if how == "delete":
            del lines[at]
        elif how == "duplicate":
            lines.insert(at, lines[at])
        elif how == "cut":
            lines[at] = lines[at][:rng.randrange(len(lines[at]) + 1)]
        else:
            numbers = [i for i, line in enumerate(lines) if any(c.isdigit() for c in line)]
            at = rng.choice(numbers)
            tokens = lines[at].split(" ")
            spots = [i for i, token in enumerate(tokens) if any(c.isdigit() for c in token)]
            tokens[rng.choice(spots)] = rng.choice(["nan", "1e309", "-1", "0", "many"])
            lines[at] = " ".join(tokens)
        mutated = write_lines(os.path.join(tmp, f"mutated-{trial}.log"), lines)
        out = os.path.join(tmp, f"mutated-{trial}.json")
        argument = f"{kind}={mutated}" if kind else mutated
        done = run_import(tmp, tool, argument, "--bandwidth", "10Gbps", "--latency", "15us",
                          "--out", out)
        said = done.stderr.strip().splitlines()
        if done.returncode == 2 and len(said) == 1 and not os.path.exists(out):
            outcomes[2] += 1
            continue
        if done.returncode == 0 and "Traceback" not in done.stderr:
            checked = subprocess.run([GCSIM, "validate", out, "--quiet"], capture_output=True,
                                     text=True)
            if checked.returncode in (0, 2):
                outcomes[0] += 1
                continue
        bad.append(f"{tool} {how} line {at + 1}: exit {done.returncode} {said[-1:] or ''}")
    check(not bad and outcomes[0] > 0 and outcomes[2] > 0,
          f"90 mutated logs: {outcomes[0]} imported and validated, {outcomes[2]} refused with "
          f"one line; {len(bad)} otherwise {bad[:3]}")
    # The time itself made nan, infinite, negative or 0: refused, naming it.
    rows = [i for i, line in enumerate(log_text("allreduce").splitlines())
            if line.strip() and not line.startswith("#")]
    # Python's float() read "1_0" as 10; a #wrong or an "Out of bounds
    # values" that is no count went through.
    for value, named, at in (("nan", "'nan' is not a number", 5), ("1e309", "time inf", 5),
                             ("-1", "time -1", 5), ("0", "time 0", 5),
                             ("1_0", "'1_0' is not a number", 5), ("x", "#wrong is 'x'", 8)):
        lines = log_text("allreduce").splitlines()
        words = lines[rows[1]].split()
        words[at] = value  # nccl-tests' out-of-place time (us), or its #wrong
        lines[rows[1]] = "  ".join(words)
        mutated = write_lines(os.path.join(tmp, f"time-{value}.log"), lines)
        out = os.path.join(tmp, f"time-{value}.json")
        done = run_import(tmp, "nccl-tests", f"allreduce={mutated}", "--bandwidth", "10Gbps",
                          "--latency", "15us", "--out", out)
        said = done.stderr.strip().splitlines()
        check(done.returncode == 2 and len(said) == 1 and named in said[0]
              and not os.path.exists(out),
              f"a time of {value}: exit 2 with one line naming it (got {done.returncode}: {said})")
    # A result row with a number that is not one: left out without a word
    # (a size or time of x, nan or inf; a count of x or -1), or a time below
    # 1 ps written as 0. Refused, naming the line and the column.
    line = rows[1] + 1
    for column, value, options, named in (
            (0, "x", [], f"line {line}: size: 'x' is not a whole number of bytes"),
            (0, "nan", [], f"line {line}: size: 'nan'"),
            (1, "-1", [], f"line {line}: count: '-1' is not a whole number of elements"),
            (1, "x", [], f"line {line}: count: 'x'"),
            (5, "x", [], f"line {line}: time (column 6): 'x' is not a number"),
            (5, "x", ["--in-place"], f"line {line}: time (column 6): 'x'"),
            (5, "1e-320", [], f"line {line}: size {SIZES[0]}: time 1e-320 us is below 1 ps")):
        lines = log_text("allreduce").splitlines()
        words = lines[rows[1]].split()
        words[column] = value
        lines[rows[1]] = "  ".join(words)
        mutated = write_lines(os.path.join(tmp, f"row-{column}-{value}.log"), lines)
        out = os.path.join(tmp, f"row-{column}-{value}.json")
        done = run_import(tmp, "nccl-tests", f"allreduce={mutated}", "--bandwidth", "10Gbps",
                          "--latency", "15us", "--out", out, *options)
        said = done.stderr.strip().splitlines()
        check(done.returncode == 2 and len(said) == 1 and named in said[0]
              and not os.path.exists(out),
              f"column {column + 1} of a row {value} {' '.join(options)}: exit 2 with one line "
              f"naming it (got {done.returncode}: {said})")

    def gloo_row_changed(benchmark, kind, first, column, value, name):
        """Imports gloo's log of `benchmark` with column `column` of the row
        starting `first` set to `value`: (done, the log, its line, --out)."""
        lines = gloo_log_text(benchmark, kind).splitlines()
        at = next(i for i, line in enumerate(lines) if line.split()[:1] == [first])
        words = lines[at].split()
        words[column] = value
        lines[at] = "  ".join(words)
        mutated = write_lines(os.path.join(tmp, f"gloo-{name}.log"), lines)
        out = os.path.join(tmp, f"gloo-{name}.json")
        return run_import(tmp, "gloo", mutated, "--bandwidth", "10Gbps", "--latency", "15us",
                          "--out", out), mutated, at + 1, out

    # The same in gloo's table: a p50 or p99 of x in one of its rows.
    for column, name in ((3, "p50"), (4, "p99")):
        done, mutated, line, out = gloo_row_changed("allgather_ring", "allgather",
                                                    str(SIZES[1] // 4), column, "x", f"{name}-x")
        said = done.stderr.strip().splitlines()
        check(done.returncode == 2 and said == [f"import_benchmarks.py: {mutated}: line {line}: "
                                                f"{name}: 'x' is not a number"]
              and not os.path.exists(out),
              f"gloo: a {name} of x in a row: exit 2, one line naming it ({said})")

    # A row out of its own order: a negative min, a p99 below its p50 (both
    # went through, the p50 taken as the time).
    for column, value, name in ((2, "-5", "negative-min"), (4, "1", "p99-below-p50")):
        done, mutated, line, out = gloo_row_changed("allreduce_ring", "allreduce", str(SIZES[1]),
                                                    column, value, name)
        said = done.stderr.strip().splitlines()
        check(done.returncode == 2 and len(said) == 1
              and said[0].startswith(f"import_benchmarks.py: {mutated}: line {line}: min, p50, "
                                     f"p99, max ")
              and said[0].endswith("expected 0 <= min <= p50 <= p99 <= max")
              and not os.path.exists(out),
              f"gloo: a row with {name}: exit 2, one line naming it ({said})")

    # A log that is a FIFO blocked the import for ever.
    fifo = os.path.join(tmp, "fifo.log")
    os.mkfifo(fifo)
    done = subprocess.run(["/usr/bin/python3", IMPORT, "nccl-tests", f"allreduce={fifo}",
                           "--bandwidth", "10Gbps", "--latency", "15us", "--out",
                           os.path.join(tmp, "fifo.json")], capture_output=True, text=True,
                          cwd=tmp, timeout=60)
    check(done.returncode == 2 and done.stderr == f"import_benchmarks.py: {fifo}: not a regular "
          f"file\n", f"a FIFO as a log: exit 2, one line ({done.stderr.strip()!r})")

    # Logs as they come from real clusters (tests/validation/data/README.md)
    # and from the launchers and builds nccl-tests' README suggests.
    DATA = os.path.join(ROOT, "tests", "validation", "data")

    def imported(name, *args):
        """(exit status, stderr's lines, the points written or None)."""
        out = os.path.join(tmp, name + ".json")
        done = run_import(tmp, *args, "--out", out)
        points = None
        if done.returncode == 0:
            with open(out) as f:
                points = json.load(f)["collectives"]
        return done.returncode, done.stderr.strip().splitlines(), points

    plain = imported("plain", "nccl-tests", f"allreduce={logs['allreduce']}", "--bandwidth",
                     "10Gbps", "--latency", "15us")[2]
    text = log_text("allreduce").splitlines()
    # OpenMPI's --tag-output and srun -l tag every line with its process;
    # the other ranks' stderr is interleaved. Refused as "no result rows".
    tagged = ["[1,1]<stderr>:Authorization required, but no authorization protocol specified"] \
        + [f"[1,0]<stdout>:{line}" for line in text]
    labelled = [f" 0: {line}" for line in text] + [" 1: "]
    for how, lines in (("--tag-output", tagged), ("srun -l", labelled)):
        log = write_lines(os.path.join(tmp, how.strip("-").replace(" ", "-") + ".log"), lines)
        status, said, points = imported("tagged", "nccl-tests", f"allreduce={log}", "--bandwidth",
                                        "10Gbps", "--latency", "15us")
        check(status == 0 and points == plain,
              f"a log tagged by {how} imports as the untagged one ({status}: {said[-1:]})")
    status, said, points = imported(
        "issue290", "nccl-tests",
        f"allreduce={os.path.join(DATA, 'nccl-tests-issue290-allreduce-2x8-h100-srun-l.log')}",
        "--bandwidth", "400Gbps", "--latency", "5us")
    check(status == 0 and len(points) == 11 and points[0]["ranks"] == 16
          and points[0]["bytes"] == 8388608 and abs(points[0]["seconds"] - 215.3e-6) < 1e-12
          and points[0]["repetitions"] == 200 and points[-1]["bytes"] == 8589934592,
          f"nccl-tests#290's srun -l log: 11 points on 16 ranks from 8 MiB, 215.3 us "
          f"({status}: {said[-1:]} {points[:1] if points else None})")

    # A build's NAME_SUFFIX (make MPI=1 NAME_SUFFIX=_mpi) is the program it
    # names: all_reduce_perf_mpi was refused as another collective's log.
    suffixed = write_lines(os.path.join(tmp, "mpi-suffix.log"),
                           ["# Collective test starting: all_reduce_perf_mpi"] + text)
    status, said, points = imported("suffix", "nccl-tests", f"allreduce={suffixed}",
                                    "--bandwidth", "10Gbps", "--latency", "15us")
    check(status == 0 and points == plain, f"all_reduce_perf_mpi is all_reduce_perf ({said[-1:]})")
    status, said, _ = imported("suffix-wrong", "nccl-tests", f"allgather={suffixed}",
                               "--bandwidth", "10Gbps", "--latency", "15us")
    check(status == 2 and len(said) == 1
          and "a log of all_reduce_perf_mpi, given as allgather=" in said[0],
          f"all_reduce_perf_mpi given as allgather= is refused: {said}")

    # Before nccl-tests 2.13 an allreduce's table had redop alone, a
    # broadcast's root alone, an allgather's neither: each was accepted
    # under any name.
    def old_log(kind):
        column = {"allreduce": "   redop", "broadcast": "    root", "allgather": ""}[kind]
        value = {"allreduce": "     sum", "broadcast": "       0", "allgather": ""}[kind]
        lines = ["# nThread 1 nGpus 4 minBytes 1048576 maxBytes 4194304 step: 4(factor) "
                 "warmup iters: 5 iters: 20 validation: 1", "# Using devices"]
        lines += [f"#   Rank {r:2d} Pid  88131 on    seville device {r:2d} [0x36] Tesla V100"
                  for r in range(RANKS)]
        lines += ["#                                          out-of-place"
                  "                       in-place",
                  f"#       size         count    type{column}     time   algbw   busbw  error"
                  "     time   algbw   busbw  error"]
        for size in (1 << 20, 4 << 20):
            us = model_seconds(kind, size) * 1e6
            lines.append(f"{size:12d} {size // 4:13d}   float{value}  {us:7.1f}"
                         "    1.00    1.00  0e+00    700.0    1.00    1.00  0e+00")
        lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 1.00 ", "#"]
        return write_lines(os.path.join(tmp, f"old-{kind}.log"), lines)

    for kind in ("allreduce", "broadcast", "allgather"):
        log = old_log(kind)
        status, said, points = imported("old", "nccl-tests", f"{kind}={log}", "--bandwidth",
                                        "10Gbps", "--latency", "15us")
        check(status == 0 and len(points) == 2 and points[0]["ranks"] == RANKS,
              f"a pre-2.13 {kind} log imports ({status}: {said[-1:]})")
        for other in (k for k in ("allreduce", "broadcast", "allgather") if k != kind):
            status, said, _ = imported("old-wrong", "nccl-tests", f"{other}={log}",
                                       "--bandwidth", "10Gbps", "--latency", "15us")
            check(status == 2 and len(said) == 1 and f"{kind}'s, not a" in said[0]
                  and f"given as {other}=" in said[0],
                  f"a pre-2.13 {kind} log given as {other}= is refused: {said}")

    # reduce_scatter_perf prints an allreduce's columns (redop sum, root -1);
    # its size is ranks x count x 4 bytes.
    status, said, _ = imported(
        "reduce-scatter", "nccl-tests", "--ranks", "8",
        f"allreduce={os.path.join(DATA, 'nccl-tests-issue128-reduce_scatter-excerpt.log')}",
        "--bandwidth", "10Gbps", "--latency", "15us")
    check(status == 2 and len(said) == 1 and "size 128 is not count 4 x 4-byte float" in said[0],
          f"nccl-tests#128's reduce_scatter log given as allreduce= is refused: {said}")

    # gloo's benchmark before 2021: an Algorithm: line, float elements.
    gloo_2020 = os.path.join(DATA, "gloo-issue248-allreduce_ring_chunked-2020.log")
    status, said, points = imported("gloo-2020", "gloo", gloo_2020, "--bandwidth", "40Gbps",
                                    "--latency", "5us")
    check(status == 0 and points == [{"collective": "allreduce", "algorithm": "ring", "ranks": 2,
                                      "bytes": 20000000, "seconds": 0.017251,
                                      "repetitions": 961}],
          f"gloo#248's log: 5,000,000 floats, p50 17251 us, 961 samples ({said[-1:]} {points})")
    # Its "GB/s" is GiB/s: a steady run (min 1000, max 1040 us) of 4 MB at
    # a mean of 1020 us prints 3.652, which in 10^9 bytes is 1095 us and
    # was refused; a rate rounded to 0.000 says nothing and is not checked.
    with open(gloo_2020) as f:
        head = f.read().splitlines()[:5]
    for rate, label in (("3.652", "GiB/s"), ("0.000", "a rate of 0.000")):
        steady = write_lines(os.path.join(tmp, f"gloo-2020-{rate}.log"), head + [
            f"    1000000       1000       1019       1035       1040        {rate}        100"])
        status, said, points = imported("gloo-steady", "gloo", steady, "--bandwidth", "40Gbps",
                                        "--latency", "5us")
        check(status == 0 and points and points[0]["bytes"] == 4000000
              and abs(points[0]["seconds"] - 1019e-6) < 1e-12,
              f"an old gloo table with {label}: 4 MB at p50 1019 us ({said[-1:]} {points})")
    with open(gloo_2020) as f:
        halved = f.read().replace("    5000000  ", "    2500000  ")
    log = write_lines(os.path.join(tmp, "gloo-2020-halved.log"), halved.splitlines())
    status, said, _ = imported("gloo-halved", "gloo", log, "--bandwidth", "40Gbps",
                               "--latency", "5us")
    check(status == 2 and len(said) == 1 and "not a table of float elements" in said[0],
          f"elements its rate and times disown are refused: {said}")

    # nccl-tests' -J JSON (src/util.cu, format version 3): the same run as
    # log_text's imports to the same points; under -I 1 each iteration's
    # time is a sample and their median the time.
    def nccl_json(kind, per_iter=None, cycles=1, program=None, devices=RANKS, ngpus=1,
                  config=None, placement_key="time", tail=None):
        """What nccl-tests -J writes for log_text(kind)'s run, compactly and
        with its quirks: a root of "%6i", booleans as strings, %lf numbers."""
        redop, root = ("sum", -1) if kind == "allreduce" else (
            "none", 0 if kind == "broadcast" else -1)
        results = []
        for _ in range(cycles):
            for size in [0] + SIZES:
                us = model_seconds(kind, size) * 1e6 if size else 0.31
                body = {placement_key: float(f"{us:.1f}"), "alg_bw": 1.0, "bus_bw": 1.0,
                        "nwrong": 0.0}
                result = {"size": size, "count": size // 4, "type": "float", "redop": redop,
                          "root": f"{root:6d}", "out_of_place": body,
                          "in_place": {**body, "nwrong": None}}
                if per_iter and size:
                    result["out_of_place_per_iter"] = per_iter(us)
                results.append({**result, "actual_iterations": 20, "experiment_name": ""})
        program = program or {"allreduce": "all_reduce_perf", "allgather": "all_gather_perf",
                              "broadcast": "broadcast_perf"}[kind]
        run = {"version": 3, "start_time": "2026-07-09 10:00:00",
               "args": [f"./build/{program}", "-b", "1M", "-e", "64M", "-f", "4", "-J",
                        "out.json"],
               "env": ["NCCL_ALGO=Ring"], "nccl_version": 22803,
               "config": {"nthreads": 1, "ngpus": ngpus, "minimum_bytes": 1 << 20,
                          "maximum_bytes": 64 << 20, "step_factor": 4, "warmup_iters": 5,
                          "iterations": 20, "aggregated_iterations": 1, "validation": 1,
                          "graph": 0, "blocking_collectives": "false",
                          "per_iter_timing": "true" if per_iter else "false",
                          "per_iter_skip": 0, "parallel_init": "false", **(config or {}),
                          "devices": [{"rank": r * ngpus, "group": 0, "pid": 4100 + r,
                                       "hostname": f"node{r:02d}", "device": 0,
                                       "device_hex": "0x07",
                                       "device_info": "NVIDIA A100-SXM4-80GB"}
                                      for r in range(devices)]},
               "results": results,
               "out_of_bounds": {"count": 0, "okay": "true"},
               "average_bus_bandwidth": {"bandwidth": 1.0, "okay": "unchecked"},
               # A finished run's errors are NCCL's last warning, "" without one.
               "errors": [""], "end_time": "2026-07-09 10:00:09"}
        return json.dumps(run, separators=(",", ":")) if tail is None else tail(run)

    def json_log(name, kind, **options):
        return write_lines(os.path.join(tmp, name + ".json"), [nccl_json(kind, **options)])

    star = ("--bandwidth", "10Gbps", "--latency", "15us")
    from_text = imported("all-text", "nccl-tests", *[f"{k}={v}" for k, v in logs.items()],
                         *star)[2]
    status, said, from_json = imported(
        "all-json", "nccl-tests", *[f"{k}={json_log('j-' + k, k)}" for k in logs], *star)
    check(status == 0 and from_json == from_text and len(from_json) == 12,
          f"nccl-tests -J JSON of a run imports as its text log: 12 points, the same bytes, "
          f"seconds, ranks and repetitions ({said[-1:]})")
    # A finished run's "errors" hold NCCL's last warning, which it may
    # have recovered from: the run is read as its text log would be.
    warned = json_log("j-warned", "allreduce", tail=lambda run: json.dumps(
        {**run, "errors": ["NET/Socket : peer 10.0.0.2 closed the connection; retrying"]}))
    status, said, points = imported("json-warned", "nccl-tests", f"allreduce={warned}", *star)
    check(status == 0 and points == [p for p in from_text if p["collective"] == "allreduce"],
          f"a finished run with a warning in its errors is read ({said[-1:]})")
    slowest = json_log("j-max", "allreduce", tail=lambda run: json.dumps(
        {**run, "args": run["args"] + ["-a3"]}))
    status, said, points = imported("json-max", "nccl-tests", f"allreduce={slowest}", *star)
    check(status == 0 and points == [p for p in from_text if p["collective"] == "allreduce"],
          f"-a3, the slowest rank's time, is read ({said[-1:]})")
    status, said, in_place_points = imported(
        "json-in-place", "nccl-tests", f"allreduce={json_log('j-ar', 'allreduce')}", "--in-place",
        *star)
    check(status == 0 and [p["seconds"] for p in in_place_points]
          == [p["seconds"] for p in from_json if p["collective"] == "allreduce"],
          f"--in-place reads a JSON result's in_place time ({said[-1:]})")
    # Two processes of two GPUs each: four ranks.
    status, said, points = imported(
        "json-2x2", "nccl-tests", f"allgather={json_log('j-2x2', 'allgather', devices=2, ngpus=2)}",
        *star)
    check(status == 0 and {p["ranks"] for p in points} == {4},
          f"ranks are the devices' processes x nthreads x ngpus: 2 x 2 ({said[-1:]})")

    # -I 1 with -K 2: the first two iterations left out, the median of the
    # rest the time; a sample per repetition, which gcsim validate reads.
    def per_iter(us):
        times = [9 * us, 7 * us] + [us * (1 + 0.01 * n) for n in range(18)]
        return {"skipped_iterations": 2, "min_us": min(times), "max_us": max(times),
                "avg_us": sum(times) / 20, "p50_us": us, "times_us": times}
    per_iter_log = json_log("j-per-iter", "allreduce", per_iter=per_iter)
    status, said, points = imported("json-per-iter", "nccl-tests", f"allreduce={per_iter_log}",
                                    *star)
    biggest = points[-1] if points else {}
    us = model_seconds("allreduce", 64 << 20) * 1e6
    check(status == 0 and biggest.get("repetitions") == 18
          and len(biggest.get("samples_s", [])) == 18
          and abs(biggest["samples_s"][0] - us * 1e-6) < 1e-15
          and abs(biggest["seconds"] - us * 1.085e-6) < 1e-12,
          f"-I 1: the 18 samples after -K 2's, their median (1.085 x) the time ({said[-1:]} "
          f"{ {k: v for k, v in biggest.items() if k != 'samples_s'} })")
    report = os.path.join(tmp, "per-iter-report.json")
    measured = os.path.join(tmp, "json-per-iter.json")
    done = subprocess.run([GCSIM, "validate", measured, "--json", report, "--quiet"],
                          capture_output=True, text=True)
    check(done.returncode == 0, f"gcsim validate reads the samples ({done.stderr.strip()})")

    # -N 2 (two cycles) prints each size twice: one point, the mean of the
    # cycles, their repetitions added; -G 2 launches the captured graph of
    # 20 iterations twice: 40 timed collectives.
    def twice(lines):
        rows = [line for line in lines if line and not line.startswith("#")]
        slower = [line.replace(f"{float(line.split()[5]):8.1f}",
                               f"{3 * float(line.split()[5]):8.1f}", 1) for line in rows]
        at = lines.index(rows[-1]) + 1
        return lines[:at] + slower + lines[at:]
    cycled = write_lines(os.path.join(tmp, "cycles.log"), twice(log_text("allgather").splitlines()))
    graphed = write_lines(os.path.join(tmp, "graph.log"),
                          log_text("allgather").replace("graph: 0", "graph: 2").splitlines())
    text_plain = [p for p in from_text if p["collective"] == "allgather"]
    for label, log in (("text -N 2", cycled), ("JSON -N 2", json_log("j-cycles", "allgather",
                                                                      cycles=2))):
        status, said, points = imported("cycles", "nccl-tests", f"allgather={log}", *star)
        factor = 2 if "text" in label else 1  # the text's second cycle is 3x as slow
        check(status == 0 and len(points) == len(SIZES)
              and all(p["repetitions"] == 40 and abs(p["seconds"] / q["seconds"] - factor) < 1e-3
                      for p, q in zip(points, text_plain)),
              f"{label}: one point a size, the cycles' mean time, 40 repetitions ({said[-1:]})")
    # Each cycle's samples under -I 1: the median of all of them (five at
    # the fast time, then three at 3x: the fast one), not of the cycles'.
    calls = []

    def two_cycles(us):
        calls.append(us)
        return {"times_us": [us] * 5 if len(calls) <= len(SIZES) else [3 * us] * 3}
    status, said, points = imported("cycles-iter", "nccl-tests", "allgather=" + json_log(
        "j-cycles-iter", "allgather", cycles=2, per_iter=two_cycles), *star)
    check(status == 0 and all(p["repetitions"] == 8 and len(p["samples_s"]) == 8
                              and abs(p["seconds"] / p["samples_s"][0] - 1) < 1e-12
                              for p in points),
          f"-N 2 -I 1: 8 samples a size, their median the time ({said[-1:]})")
    for label, log in (("text graph: 2", graphed),
                       ("JSON graph 2", json_log("j-graph", "allgather", config={"graph": 2}))):
        status, said, points = imported("graphed", "nccl-tests", f"allgather={log}", *star)
        check(status == 0 and {p["repetitions"] for p in points} == {40},
              f"{label}: 2 launches of 20 iterations are 40 repetitions ({said[-1:]})")

    # Refused, text and JSON alike: grouped collectives (-m 4), cputime
    # (-C 1); and a JSON file of a run that did not end or went wrong.
    aggregated = write_lines(os.path.join(tmp, "agg.log"),
                             log_text("allreduce").replace("agg iters: 1", "agg iters: 4")
                             .splitlines())
    cputime = write_lines(os.path.join(tmp, "cputime.log"),
                          log_text("allreduce").replace("     time ", "  cputime ").splitlines())
    whole = nccl_json("allreduce")
    for label, log, needles in [
            ("text agg iters 4", aggregated, ["agg iters 4", "-m 1"]),
            ("JSON aggregated_iterations 4",
             json_log("j-agg", "allreduce", config={"aggregated_iterations": 4}),
             ["agg iters 4", "-m 1"]),
            ("text cputime", cputime, ["cputime", "without -C"]),
            ("JSON cpu_time", json_log("j-cpu", "allreduce", placement_key="cpu_time"),
             ["cputime", "without -C"]),
            ("JSON cut short", write_lines(os.path.join(tmp, "j-cut.json"),
                                           [whole[:len(whole) // 2]]), ["does not end"]),
            ("JSON of another program", json_log("j-other", "allreduce",
                                                 program="reduce_scatter_perf"),
             ["a log of reduce_scatter_perf, given as allreduce="]),
            # A run that failed: nccl-tests closes the file without the
            # summary and end_time it writes after a finished run's results.
            ("JSON of a run that failed", json_log("j-failed", "allreduce", tail=lambda run:
                json.dumps({key: value for key, value in run.items()
                            if key not in ("out_of_bounds", "average_bus_bandwidth", "end_time")}
                           | {"errors": ["NCCL failure common.cu:1103 'unhandled system error'"]})),
             ["/out_of_bounds: missing: the run did not finish", "unhandled system error"]),
            ("JSON without its end_time", json_log("j-no-end", "allreduce", tail=lambda run:
                json.dumps({key: value for key, value in run.items() if key != "end_time"})),
             ["/end_time: missing: the run did not finish"]),
            # NCCL_TESTS_SPLIT: a collective in each group at once.
            ("JSON of two groups", json_log("j-split", "allreduce", tail=lambda run: json.dumps(
                {**run, "config": {**run["config"], "devices": [
                    {**device, "group": device["rank"] % 2}
                    for device in run["config"]["devices"]]}})),
             ["/config/devices", "2 groups at once (NCCL_TESTS_SPLIT)"]),
            ("a log of two groups", write_lines(os.path.join(tmp, "split.log"), [
                line.replace("Group  0", "Group  1") if line.startswith("#  Rank  1") else line
                for line in log_text("allreduce").splitlines()]),
             ["'# Rank' lines", "2 groups at once (NCCL_TESTS_SPLIT)"]),
            ("JSON of a group that is a list", json_log("j-group", "allreduce", tail=lambda run:
                json.dumps({**run, "config": {**run["config"], "devices": [
                    {**device, "group": [1]} for device in run["config"]["devices"]]}})),
             ["/config/devices/0/group", "expected a count"]),
            # -d all: a table of each size in several types.
            ("JSON of two types", json_log("j-types", "allreduce", tail=lambda run: json.dumps(
                {**run, "results": run["results"] + [
                    {**r, "type": "double", "count": r["count"] // 2}
                    for r in run["results"]]})),
             ["rows of 2 types, ops or roots", "double/sum/-1 and float/sum/-1", "-d all"]),
            ("a log of two ops", write_lines(os.path.join(tmp, "ops.log"), [
                line for line in log_text("allreduce").splitlines()] + [
                line.replace("     sum", "    prod") for line in log_text("allreduce")
                .splitlines() if line.strip() and not line.startswith("#")]),
             ["rows of 2 types, ops or roots", "float/prod/-1 and float/sum/-1"]),
            # -a 2: the fastest rank's time (-a 1, the mean, and -a 3, the
            # slowest's, are read).
            ("JSON of -a 2", json_log("j-min", "allreduce", tail=lambda run: json.dumps(
                {**run, "args": run["args"] + ["-a", "2"]})),
             ["/args", "-a 2", "the fastest rank's time"]),
            ("JSON of --average=0", json_log("j-rank0", "allreduce", tail=lambda run: json.dumps(
                {**run, "args": run["args"] + ["--average=0"]})),
             ["/args", "-a 0", "rank 0's time"]),
            # As strtol reads it, nccl-tests took "2x" for 2.
            ("JSON of -a 2x", json_log("j-min2x", "allreduce", tail=lambda run: json.dumps(
                {**run, "args": run["args"] + ["-a", "2x"]})),
             ["/args", "-a 2", "the fastest rank's time"]),
            # nccl-tests without MPI under mpirun: a 1-rank run per process.
            ("a 1-rank JSON run", json_log("j-one", "allreduce", devices=1),
             ["/config/devices", "one rank", "out.json.0"]),
            ("JSON out of bounds", json_log("j-oob", "allreduce", tail=lambda run: json.dumps(
                {**run, "out_of_bounds": {"count": 3, "okay": "false"}})),
             ["/out_of_bounds/count", "wrong results"]),
            ("JSON nwrong", json_log("j-nwrong", "allreduce", tail=lambda run: json.dumps(
                {**run, "results": [{**r, "out_of_place": {**r["out_of_place"], "nwrong": 2.0}}
                                    for r in run["results"]]})),
             ["/results/1/out_of_place/nwrong", "wrong"]),
            ("JSON nan time", json_log("j-nan", "allreduce", tail=lambda run: json.dumps(
                {**run, "results": run["results"][:2] + [
                    {**run["results"][2], "out_of_place": {"time": "nan"}}]})),
             ["/results/2/out_of_place/time", "'nan'"]),
            ("JSON rank twice", json_log("j-twice", "allreduce", tail=lambda run: json.dumps(
                {**run, "config": {**run["config"], "devices": run["config"]["devices"] * 2}})),
             ["/config/devices", "rank 0 listed twice"]),
            ("JSON of in-place times only", json_log(
                "j-ip", "allreduce", tail=lambda run: json.dumps(
                    {**run, "results": [{**r, "out_of_place": None} for r in run["results"]]})),
             ["/results", "in_place times: give --in-place"]),
            ("JSON allgather rows given as allreduce", json_log("j-ag", "allgather",
                                                                program="renamed"),
             ["/results/0", "an allgather's, not an allreduce's"])]:
        out = os.path.join(tmp, "refused.json")
        done = run_import(tmp, "nccl-tests", f"allreduce={log}", *star, "--out", out)
        problems = refusal_problems(done, ["import_benchmarks.py: ", log, *needles],
                                    result_file=out)
        check(not problems, f"{label} refused: {problems or done.stderr.strip()}")

    # Seeded damage to a JSON file (a field removed, retyped or out of
    # range): exit 0 or 2 with one line, never a traceback.
    rng = random.Random(7)
    bad_values = [None, "x", -1, 0, 1.5, [], {}, True, 1 << 60, "nan"]
    damaged = 0
    for trial in range(80):
        run = json.loads(nccl_json("allreduce", per_iter=per_iter))
        parent, key = rng.choice([(run, "config"), (run, "results"), (run["config"], None),
                                  (run["results"][1 + trial % 4], None),
                                  (run["results"][1 + trial % 4]["out_of_place"], None),
                                  (run["results"][1 + trial % 4]["out_of_place_per_iter"], None),
                                  (run["config"]["devices"][trial % RANKS], None)])
        key = key or rng.choice(sorted(parent))
        if rng.random() < 0.3:
            del parent[key]
        else:
            parent[key] = rng.choice(bad_values)
        log = write_lines(os.path.join(tmp, "damaged.json"), [json.dumps(run)])
        out = os.path.join(tmp, "damaged-out.json")
        if os.path.exists(out):
            os.remove(out)
        done = run_import(tmp, "nccl-tests", f"allreduce={log}", *star, "--out", out)
        lines = done.stderr.strip().splitlines()
        if done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr:
            damaged += 1
        elif done.returncode != 0 or "Traceback" in done.stderr:
            check(False, f"damaged JSON ({key}): exit {done.returncode}: {done.stderr[-300:]}")
            break
    # About half the fields are informative (bandwidths, hostnames, the
    # summary statistics beside times_us): damaged, the file is still read.
    check(damaged >= 30, f"80 damaged JSON files: {damaged} refused in one line, the rest read")

check.finish()
