#!/usr/bin/python3
"""nccl-tests output -> a gcsim measured run (results/validation/README.md), for
`gcsim validate` against your own cluster:

  /usr/bin/python3 scripts/import_nccl_tests.py allreduce=all_reduce_perf.log \\
      allgather=all_gather_perf.log broadcast=broadcast_perf.log \\
      --cluster platforms/star-8x10g.json --out measured.json
  build/gcsim validate measured.json --fit

Each argument names the collective its log measured (nccl-tests does not
print it): allreduce, allgather or broadcast, then the file the *_perf
program printed. Every result row becomes a point: `bytes` is nccl-tests'
size column (the whole buffer; for allgather the output), `seconds` its
time column in microseconds (out-of-place unless --in-place), the mean over
its `iters`, which becomes `repetitions`; the ranks are the `# Rank` lines.

The cluster is a platform description, from a file (`--cluster`, any
topology of platforms/README.md) or a star of --nodes machines with
--bandwidth and --latency per link. gcsim simulates allreduce and allgather
as rings and broadcast as NCCL's pipelined ring (512 KiB pieces, or
--chunk-bytes): run nccl-tests with NCCL_ALGO=Ring, since NCCL picks trees
for some sizes otherwise, and those are not what gets simulated.

Bad input (a log without result rows, an unknown collective, rank counts
that differ between logs) exits with status 2 and one line naming the file.
"""
import argparse
import json
import os
import re
import sys

KINDS = ("allreduce", "allgather", "broadcast")


class BadInput(Exception):
    pass


def parse_log(path, in_place):
    """(ranks, iterations, [(bytes, seconds)]) of one nccl-tests log."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as error:
        raise BadInput(f"{path}: cannot read: {error.strerror}")
    ranks = sum(1 for line in lines if re.match(r"#\s+Rank\s+\d+", line))
    iterations = None
    columns = None
    rows = []
    for line in lines:
        # "warmup iters: 5 iters: 20 agg iters: 1": the timed ones.
        for found in re.finditer(r"(?:(\w+)\s+)?iters:\s*(\d+)", line if line.startswith("#") else ""):
            if found.group(1) not in ("warmup", "agg"):
                iterations = int(found.group(2))
        words = line.lstrip("#").split()
        if line.startswith("#") and "size" in words and words.count("time") >= 1:
            times = [i for i, word in enumerate(words) if word == "time"]
            if in_place and len(times) < 2:
                raise BadInput(f"{path}: no in-place time column in its header")
            columns = (words.index("size"), times[1] if in_place else times[0])
            continue
        if line.startswith("#") or not words or columns is None:
            continue
        try:
            size = int(words[columns[0]])
            micros = float(words[columns[1]])
        except (ValueError, IndexError):
            continue  # a row the test marked N/A, or a line that is not a result
        if size <= 0:
            continue  # nccl-tests prints 0-byte rows for sizes below one element
        if not micros > 0:
            raise BadInput(f"{path}: size {size}: time {micros} us is not positive")
        rows.append((size, micros * 1e-6))
    if not rows:
        raise BadInput(f"{path}: no result rows (is this the output of an nccl-tests *_perf "
                       f"program?)")
    return ranks, iterations, rows


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
    parser.add_argument("logs", nargs="+", metavar="COLLECTIVE=LOG")
    parser.add_argument("--cluster", help="platform description JSON (platforms/README.md)")
    parser.add_argument("--nodes", type=int, help="star nodes (default: the logs' ranks)")
    parser.add_argument("--bandwidth", help="star link bandwidth, e.g. 100Gbps")
    parser.add_argument("--latency", help="star link latency, e.g. 5us")
    parser.add_argument("--ranks", type=int, help="ranks, where the logs list none")
    parser.add_argument("--in-place", action="store_true", help="the in-place time column")
    parser.add_argument("--chunk-bytes", type=int, default=512 * 1024,
                        help="NCCL's ring broadcast piece (default 524288)")
    parser.add_argument("--name", default=None)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        points, seen_ranks, sources = [], set(), []
        for item in args.logs:
            kind, _, path = item.partition("=")
            if kind not in KINDS or not path:
                raise BadInput(f"{item}: expected COLLECTIVE=LOG with COLLECTIVE one of "
                               f"{', '.join(KINDS)}")
            ranks, iterations, rows = parse_log(path, args.in_place)
            ranks = ranks or args.ranks
            if not ranks or ranks < 2:
                raise BadInput(f"{path}: no '# Rank' lines: give --ranks")
            seen_ranks.add(ranks)
            sources.append(os.path.basename(path))
            for size, seconds in rows:
                point = {"collective": kind, "algorithm": "ring", "ranks": ranks, "bytes": size,
                         "seconds": seconds, "repetitions": iterations or 1}
                if kind == "broadcast":
                    point["chunk_bytes"] = args.chunk_bytes
                points.append(point)
        if len(seen_ranks) > 1:
            raise BadInput(f"the logs ran on different numbers of ranks: {sorted(seen_ranks)}")
        run = {"format": "gcsim-measured-run/1",
               "name": args.name or os.path.splitext(os.path.basename(args.out))[0],
               "source": "scripts/import_nccl_tests.py from " + ", ".join(sources),
               "cluster": cluster_of(args, seen_ranks.pop()),
               "collectives": points}
    except BadInput as error:
        print(f"import_nccl_tests.py: {error}", file=sys.stderr)
        return 2
    with open(args.out + ".tmp", "w") as f:
        json.dump(run, f, indent=1)
        f.write("\n")
    os.replace(args.out + ".tmp", args.out)
    print(f"wrote {args.out}: {len(points)} points on {run['cluster'].get('nodes', '?')} nodes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
