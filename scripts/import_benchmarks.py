#!/usr/bin/python3
"""Collective benchmark output -> a gcsim measured run (results/validation/README.md),
for `gcsim validate` against your own cluster.

  # nccl-tests: name each log's collective (nccl-tests does not print it)
  /usr/bin/python3 scripts/import_benchmarks.py nccl-tests allreduce=all_reduce_perf.log \\
      allgather=all_gather_perf.log broadcast=broadcast_perf.log \\
      --cluster platforms/star-8x10g.json --out measured.json
  # gloo's benchmark program (gloo/benchmark): one log per --benchmark it ran
  /usr/bin/python3 scripts/import_benchmarks.py gloo allreduce_ring.log allgather_ring.log \\
      broadcast.log --bandwidth 10Gbps --latency 10us --out measured.json
  build/gcsim validate measured.json --fit

nccl-tests: every result row becomes a point; `bytes` is its size column
(the whole buffer; for allgather the output), `seconds` its time column in
microseconds (out-of-place unless --in-place), the mean over its `iters`,
which become `repetitions`; the ranks are its `# Rank` lines. gcsim
simulates allgather as a ring, broadcast as NCCL's pipelined ring (512 KiB
pieces, or --chunk-bytes) and allreduce as the algorithm you ran: run
nccl-tests with NCCL_ALGO=Ring (the default here) or NCCL_ALGO=Tree and say
which with --allreduce ring|tree, since NCCL picks by size otherwise and
the log does not say which it took.

gloo: the benchmark's name (its title line) gives the collective:
allreduce_ring and allreduce_ring_chunked (rings), allgather and
allgather_ring (rings; `bytes` becomes the output, processes x the input),
broadcast (gloo's binomial tree, as torch.distributed uses it); `seconds`
is its p50 column (us, or ns under --show-nanos), `repetitions` its
iterations, the ranks its `processes=`. Runs with more than one input or
thread per process, and the other algorithms, are not what gcsim
simulates and are refused.

The cluster is a platform description, from a file (`--cluster`, any
topology of platforms/README.md) or a star of --nodes machines (default:
the ranks) with --bandwidth and --latency per link. Bad input (a log without
result rows, an unknown collective or algorithm, logs of different rank
counts) exits with status 2 and one line naming the file.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_write import WriteError, write_json_atomically  # noqa: E402

NCCL_KINDS = ("allreduce", "allgather", "broadcast")
# gloo benchmark name -> (collective, algorithm in the measured-run format)
GLOO_BENCHMARKS = {
    "allreduce_ring": ("allreduce", "ring"),
    "allreduce_ring_chunked": ("allreduce", "ring"),
    "allgather": ("allgather", "ring"),
    "allgather_ring": ("allgather", "ring"),
    "broadcast": ("broadcast", "binomial_tree"),
}


class BadInput(Exception):
    pass


def read_lines(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except OSError as error:
        raise BadInput(f"{path}: cannot read: {error.strerror}")


def positive_seconds(path, size, value, scale):
    # gcsim reads measured times up to 1e9 s (json_reader.hpp's kLongestSeconds);
    # an infinite one would also be written as JSON's invalid "Infinity".
    if not value > 0:
        raise BadInput(f"{path}: size {size}: time {value} is not positive")
    if not value * scale <= 1e9:
        raise BadInput(f"{path}: size {size}: time {value} is not a finite time under 1e9 s")
    return value * scale


def parse_nccl_tests(path, in_place):
    """(ranks, iterations, [(bytes, seconds)]) of one nccl-tests log."""
    lines = read_lines(path)
    ranks = sum(1 for line in lines if re.match(r"#\s+Rank\s+\d+", line))
    iterations, columns, rows = None, None, []
    for line in lines:
        words = line.lstrip("#").split()
        if line.startswith("#"):
            # "warmup iters: 5 iters: 20 agg iters: 1": the timed ones.
            for found in re.finditer(r"(?:(\w+)\s+)?iters:\s*(\d+)", line):
                if found.group(1) not in ("warmup", "agg"):
                    iterations = int(found.group(2))
            if "size" in words and "time" in words:
                times = [i for i, word in enumerate(words) if word == "time"]
                if in_place and len(times) < 2:
                    raise BadInput(f"{path}: no in-place time column in its header")
                columns = (words.index("size"), times[1] if in_place else times[0])
            continue
        if not words or columns is None:
            continue
        try:
            size, micros = int(words[columns[0]]), float(words[columns[1]])
        except (ValueError, IndexError):
            continue  # a row the test marked N/A, or a line that is not a result
        if size > 0:  # nccl-tests prints 0-byte rows for sizes below one element
            rows.append((size, positive_seconds(path, size, micros, 1e-6)))
    if not rows:
        raise BadInput(f"{path}: no result rows (is this the output of an nccl-tests *_perf "
                       f"program?)")
    return ranks, iterations, rows


def parse_gloo(path):
    """(benchmark, ranks, [(bytes, seconds, iterations)]) of one gloo benchmark log."""
    lines = read_lines(path)
    benchmark, ranks, unit, rows = None, None, None, []
    for line in lines:
        words = line.split()
        if len(words) == 1 and words[0].lower() in GLOO_BENCHMARKS and benchmark is None:
            benchmark = words[0].lower()
        elif len(words) == 1 and re.fullmatch(r"[A-Z][A-Z0-9_]+", words[0]) and benchmark is None \
                and words[0] != "BENCHMARK":
            raise BadInput(f"{path}: gloo benchmark {words[0].lower()} is not one gcsim "
                           f"simulates (it does {', '.join(sorted(GLOO_BENCHMARKS))})")
        options = re.match(r"Options:\s*(.*)", line.strip())
        if options:
            values = dict(item.split("=", 1) for item in options.group(1).split(", ")
                          if "=" in item)
            ranks = int(values.get("processes", 0))
            for key in ("inputs", "threads"):
                if values.get(key, "1") != "1":
                    raise BadInput(f"{path}: {key}={values[key]}: gcsim simulates one input "
                                   f"buffer and one thread per process")
        if "p50" in line and "size" in line:
            unit = 1e-9 if "p50 (ns)" in line else 1e-6
            continue
        if unit is None or len(words) != 8:
            continue
        try:
            size, p50, count = int(words[0]), float(words[3]), int(words[7])
        except ValueError:
            continue
        rows.append((size, positive_seconds(path, size, p50, unit), count))
    if benchmark is None:
        raise BadInput(f"{path}: no benchmark title (is this the output of gloo's benchmark "
                       f"program?)")
    if not rows:
        raise BadInput(f"{path}: no result rows under BENCHMARK RESULTS")
    return benchmark, ranks, rows


def nccl_points(args):
    points, ranks_seen, sources = [], set(), []
    for item in args.logs:
        kind, _, path = item.partition("=")
        if kind not in NCCL_KINDS or not path:
            raise BadInput(f"{item}: expected COLLECTIVE=LOG with COLLECTIVE one of "
                           f"{', '.join(NCCL_KINDS)}")
        ranks, iterations, rows = parse_nccl_tests(path, args.in_place)
        ranks = ranks or args.ranks
        if not ranks or ranks < 2:
            raise BadInput(f"{path}: no '# Rank' lines: give --ranks")
        ranks_seen.add(ranks)
        sources.append(os.path.basename(path))
        for size, seconds in rows:
            algorithm = args.allreduce if kind == "allreduce" else "ring"
            point = {"collective": kind, "algorithm": algorithm, "ranks": ranks, "bytes": size,
                     "seconds": seconds, "repetitions": iterations or 1}
            if kind == "broadcast":
                point["chunk_bytes"] = args.chunk_bytes
            points.append(point)
    return points, ranks_seen, sources


def gloo_points(args):
    points, ranks_seen, sources = [], set(), []
    for path in args.logs:
        benchmark, ranks, rows = parse_gloo(path)
        ranks = ranks or args.ranks
        if not ranks or ranks < 2:
            raise BadInput(f"{path}: no 'processes=' in its Options line: give --ranks")
        collective, algorithm = GLOO_BENCHMARKS[benchmark]
        ranks_seen.add(ranks)
        sources.append(os.path.basename(path))
        for size, seconds, count in rows:
            # gloo prints an allgather's input; the format counts the output.
            total = size * ranks if collective == "allgather" else size
            points.append({"collective": collective, "algorithm": algorithm, "ranks": ranks,
                           "bytes": total, "seconds": seconds, "repetitions": max(1, count)})
    return points, ranks_seen, sources


def add_cluster_options(parser, default_nodes):
    """The options cluster_of reads: a platform file, or a star's figures."""
    parser.add_argument("--cluster", help="platform description JSON (platforms/README.md)")
    parser.add_argument("--nodes", type=int, help=f"star nodes (default: {default_nodes})")
    parser.add_argument("--bandwidth", help="star link bandwidth, e.g. 100Gbps")
    parser.add_argument("--latency", help="star link latency, e.g. 5us")


def workers_of(cluster):
    """How many workers (ranks) a platform description has, as gcsim counts
    them: a multi_gpu platform's GPUs, any other's nodes; None if unsaid."""
    nodes = cluster.get("nodes") if isinstance(cluster, dict) else None
    if not isinstance(nodes, int) or isinstance(nodes, bool):
        return None
    gpus = cluster.get("gpus_per_node")
    if cluster.get("topology") == "multi_gpu" and isinstance(gpus, int):
        return nodes * gpus
    return nodes


def cluster_of(args, ranks):
    if args.cluster:
        try:
            with open(args.cluster) as f:
                cluster = json.load(f)
        except (OSError, ValueError) as error:
            raise BadInput(f"{args.cluster}: cannot read a platform description: {error}")
        if not isinstance(cluster, dict):
            raise BadInput(f"{args.cluster}: a platform description is a JSON object")
        return cluster
    if not args.bandwidth or not args.latency:
        raise BadInput("--cluster FILE, or --bandwidth and --latency, describe the cluster")
    return {"topology": "star", "nodes": args.nodes or ranks,
            "link": {"bandwidth": args.bandwidth, "latency": args.latency}}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="source", required=True)
    nccl = sub.add_parser("nccl-tests", help="logs of all_reduce_perf, all_gather_perf, "
                                             "broadcast_perf")
    nccl.add_argument("logs", nargs="+", metavar="COLLECTIVE=LOG")
    nccl.add_argument("--in-place", action="store_true", help="the in-place time column")
    nccl.add_argument("--chunk-bytes", type=int, default=512 * 1024,
                      help="NCCL's ring broadcast piece (default 524288)")
    nccl.add_argument("--allreduce", choices=("ring", "tree"), default="ring",
                      help="the NCCL_ALGO the allreduce log ran with (default ring)")
    gloo = sub.add_parser("gloo", help="logs of gloo's benchmark program")
    gloo.add_argument("logs", nargs="+", metavar="LOG")
    for source in (nccl, gloo):
        add_cluster_options(source, "the logs' ranks")
        source.add_argument("--ranks", type=int, help="ranks, where the logs do not say")
        source.add_argument("--name", default=None)
        source.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        points, ranks_seen, sources = (nccl_points if args.source == "nccl-tests"
                                       else gloo_points)(args)
        if len(ranks_seen) > 1:
            raise BadInput(f"the logs ran on different numbers of ranks: {sorted(ranks_seen)}")
        run = {"format": "gcsim-measured-run/1",
               "name": args.name or os.path.splitext(os.path.basename(args.out))[0],
               "source": f"scripts/import_benchmarks.py {args.source} from " + ", ".join(sources),
               "cluster": cluster_of(args, ranks_seen.pop()),
               "collectives": points}
    except BadInput as error:
        print(f"import_benchmarks.py: {error}", file=sys.stderr)
        return 2
    write_json_atomically(args.out, run, indent=1)
    print(f"wrote {args.out}: {len(points)} points on {run['cluster'].get('nodes', '?')} nodes")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except WriteError as error:
        sys.exit(f"import_benchmarks.py: {error}")
