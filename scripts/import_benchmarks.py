#!/usr/bin/python3
"""Collective benchmark output -> a gcsim measured run (results/validation/README.md),
for `gcsim validate` against your own cluster.

  # nccl-tests: name each log's collective (checked by its redop and root);
  # a log is its printed output or the JSON file of its -J
  /usr/bin/python3 scripts/import_benchmarks.py nccl-tests allreduce=all_reduce_perf.log \\
      allgather=all_gather_perf.json broadcast=broadcast_perf.log \\
      --cluster platforms/star-8x10g.json --out measured.json
  # gloo's benchmark program (gloo/benchmark): one log per --benchmark it ran
  /usr/bin/python3 scripts/import_benchmarks.py gloo allreduce_ring.log allgather_ring.log \\
      broadcast.log --bandwidth 10Gbps --latency 10us --out measured.json
  build/gcsim validate measured.json --fit

nccl-tests: every size becomes a point; `bytes` is its size column
(the whole buffer; for allgather the output), `seconds` its time column in
microseconds (out-of-place unless --in-place), the mean over its `iters`,
which become `repetitions` (times the CUDA-graph launches of -G; -N's
cycles are one point, their mean time and repetitions added up); the ranks
are its `# Rank` lines. Logs of nccl-tests and rccl-tests since 2019 are
read: before 2.13 (an `error` column, redop or root alone), a build's
NAME_SUFFIX (all_reduce_perf_mpi), and lines a launcher tagged with their
process (OpenMPI's --tag-output, srun -l), whose standard output is read.
So is the JSON file nccl-tests 2.17.4 and later write under -J: its
devices give the ranks (processes x threads x GPUs), and under -I 1 each
iteration's time (the slowest process's, past -K's skipped ones) becomes
a sample in `samples_s`, their median the point's `seconds`. gcsim
simulates allgather as a ring, broadcast as NCCL's pipelined ring (512 KiB
pieces, or --chunk-bytes) and allreduce as the algorithm you ran: run
nccl-tests with NCCL_ALGO=Ring (the default here) or NCCL_ALGO=Tree and say
which with --allreduce ring|tree, since NCCL picks by size otherwise and
the log does not say which it took.

gloo: the benchmark's name (its title line, or before 2021 its
"Algorithm:" line, whose table counts 4-byte float elements) gives the collective:
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
result rows or not UTF-8 text, a result row cut short or whose size, count
or time is no plain number (not "1_0", "nan", "inf") or a time below 1 ps, a
gloo row whose count is not its size's 4-byte floats, a #wrong that is no
count or N/A, an unknown collective or algorithm, logs of different rank
counts, a point given twice (a log named twice), a size, count, bandwidth or
latency gcsim would refuse, a cluster without a field its topology needs or
with fewer workers than the logs' ranks, a star's options beside --cluster,
an --out that is a folder or names an input) exits with status 2 and one
line naming the file or option: what
is written is a measured run `gcsim validate` reads. So does an nccl-tests
log that is not one good run of the collective it is named as: a second
header (logs joined, or nccl-tests without MPI started by mpirun, each
process a 1-rank run), a rank listed twice, a row whose #wrong is above 0
or an "Out of bounds values: N FAILED" line, rows whose redop and root
columns are another collective's, an allreduce's rows whose size is not
their count's elements (a reduce_scatter's is ranks times that; checked
where the table has count and a type nccl-tests names), or a
"Collective test starting:" line naming another program; a log without
the "# Avg bus bandwidth" line that ends every finished run (a run that
died, or a log cut short: its last row may be cut in its time); a run of
grouped collectives (`agg iters` above 1: -m N times N collectives
launched as one) or of cputime (-C 1: the launch's time), where the
header says so (logs before nccl-tests 2.13 print neither agg iters nor
graph: -m and -G cannot be told there); a run split into groups of ranks
(NCCL_TESTS_SPLIT: ranks in more than one `Group`, a collective in each
group at once); and a table of several types, ops or roots (-d all, -o all, -r -1).
A JSON file is refused for the same, when it is of one rank or its args
give -a 0 or 2 (rank 0's or the fastest rank's time), and when its
run did not finish (no out_of_bounds summary or end_time; its "errors",
NCCL's last warning, do not tell) or it lacks a field gcsim reads (the
path in the file is named).
"""
import argparse
import collections
import json
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_write import write_json_atomically  # noqa: E402
from script_input import (MEASURED_RUN_FORMAT, SHORTEST_SECONDS, BadInput, Parser,  # noqa: E402
                          bandwidth_ok, checked_size, integer_in, is_json_number, json_kind,
                          latency_ok, open_input, read_json_object, refuse_folder_output,
                          refuse_output_over_inputs, run_script, spelling_hint)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NCCL_KINDS = ("allreduce", "allgather", "broadcast")
# What gcsim validate reads (sim/validate/measured_run.cpp, platform_spec.cpp):
# ranks and workers, a point's bytes and chunk_bytes, its repetitions.
MAX_RANKS = 1 << 16
MAX_BYTES = 1 << 50
# A number as the benchmarks print one: float() also takes "1_0" (10),
# "inf" and "nan", which no benchmark prints.
NUMBER = re.compile(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")
MAX_REPETITIONS = 1 << 30
# gloo benchmark name -> (collective, algorithm in the measured-run format)
GLOO_BENCHMARKS = {
    "allreduce_ring": ("allreduce", "ring"),
    "allreduce_ring_chunked": ("allreduce", "ring"),
    "allgather": ("allgather", "ring"),
    "allgather_ring": ("allgather", "ring"),
    "broadcast": ("broadcast", "binomial_tree"),
}


# What gcsim's platform descriptions accept (script_input checks it as
# sim/input/units.cpp and json_reader.cpp do), in its words.
WANTED_BANDWIDTH = "a bandwidth with a unit in [1kbps, 1000Tbps] (e.g. \"10Gbps\")"
WANTED_LATENCY = "a duration with a unit, 0 or in [1ps, 1e9s] (e.g. \"5us\")"


def text_option(accepts, wanted, quantity):
    """An argparse type: a string `accepts` takes (a link's `quantity`,
    whose misspellings gcsim's hint follows)."""
    def parse(text):
        if not accepts(text):
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}"
                                             + spelling_hint(text, quantity))
        return text
    return parse


def read_text(path):
    try:
        with open_input(path) as f:
            return f.read()
    except OSError as error:
        raise BadInput(f"{path}: cannot read: {error.strerror or error}")
    except UnicodeDecodeError as error:
        raise BadInput(f"{path}: not UTF-8 text (byte {error.start}): is this a benchmark log?")


def read_lines(path):
    return read_text(path).splitlines()


def positive_bytes(path, size):
    if not 0 < size <= MAX_BYTES:
        raise BadInput(f"{path}: size {size} is not a number of bytes in [1, 2^50]")
    return size


def repetitions(path, text):
    """A count of timed iterations, in [1, 2^30] as gcsim reads them."""
    if not re.fullmatch(r"[0-9]{1,10}", text) or not 1 <= int(text) <= MAX_REPETITIONS:
        raise BadInput(f"{path}: {text[:20]} iterations: expected a count in [1, 2^30]")
    return int(text)


def positive_seconds(path, size, value, scale, where=None):
    """value * scale seconds, a time gcsim reads: in [1 ps, 1e9 s]
    (json_reader.hpp's kLongestSeconds; an infinite one would also be written
    as JSON's invalid "Infinity", and one below 1 ps as 0, which gcsim
    refuses). `where` ("line 24") goes before the size in the message."""
    at = f"{path}: {where + ': ' if where else ''}size {size}"
    if not value > 0:
        raise BadInput(f"{at}: time {value} is not positive")
    if not value * scale <= 1e9:
        raise BadInput(f"{at}: time {value} is not a finite time under 1e9 s")
    if value * scale < SHORTEST_SECONDS:
        unit = {1e-6: " us", 1e-9: " ns"}.get(scale, "")
        raise BadInput(f"{at}: time {value}{unit} is below 1 ps, the shortest time gcsim reads")
    return value * scale


# What each collective's rows say in nccl-tests' redop and root columns, and
# the program that prints them ("# Collective test starting: all_reduce_perf"
# in recent versions): a log named after another collective is caught. A
# build's NAME_SUFFIX (`make MPI=1 NAME_SUFFIX=_mpi`, as nccl-tests' README
# suggests) follows the name: all_reduce_perf_mpi is all_reduce_perf.
NCCL_PROGRAMS = {"all_reduce_perf": "allreduce", "all_gather_perf": "allgather",
                 "broadcast_perf": "broadcast", "reduce_scatter_perf": "reduce_scatter",
                 "reduce_perf": "reduce", "alltoall_perf": "alltoall",
                 "sendrecv_perf": "sendrecv", "gather_perf": "gather", "scatter_perf": "scatter",
                 "hypercube_perf": "hypercube"}
# Bytes per element of nccl-tests' `type` column.
NCCL_TYPE_BYTES = {"int8": 1, "char": 1, "uint8": 1, "int32": 4, "int": 4, "uint32": 4,
                   "int64": 8, "uint64": 8, "half": 2, "float": 4, "double": 8, "bfloat16": 2,
                   "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
# What launchers put before each line of a process's output: OpenMPI's
# --tag-output ("[1,0]<stdout>:") and srun -l (" 0: ").
LAUNCHER_PREFIX = re.compile(r"\[\d+,\d+\]<(stdout|stderr)>:|\s*\d+: ")


def nccl_program_kind(program):
    """The collective of an nccl-tests program's name, its build suffix
    ignored; None for a name that is not nccl-tests' (a renamed binary)."""
    base = next((name for name in NCCL_PROGRAMS
                 if program == name or program.startswith(name + "_")), None)
    return NCCL_PROGRAMS.get(base)


def nccl_row_kind(redop, root):
    """The collective a row's redop and root columns say it is (None in a
    column the log has not: before nccl-tests 2.13 an allreduce's table had
    redop only, a broadcast's root only, an allgather's neither), or None
    where they say nothing gcsim tells apart (reduce_scatter looks like
    allreduce; the sizes tell, in parse_nccl_tests)."""
    if root is not None and root.lstrip("-").isdigit() and int(root) >= 0:
        return "broadcast" if redop in (None, "none") else "reduce"
    if root in (None, "-1"):
        if redop is None:
            return "allgather" if root is None else None
        return "allgather" if redop == "none" else "allreduce"
    return None


# The columns of a result row that say which collective it is.
NCCL_ROW_COLUMNS = ("redop", "root", "type", "count")


def check_row_is(path, where, kind, size, said):
    """BadInput unless a result row of `size` bytes whose columns say `said`
    (NCCL_ROW_COLUMNS -> its text, None where the log has no such column)
    can be a row of `kind`."""
    shown = {key: said[key] for key in ("redop", "root")}
    says = nccl_row_kind(shown["redop"], shown["root"])
    if says is not None and says != kind:
        named = " and ".join(f"{key} {value}" for key, value in shown.items() if value)
        raise BadInput(f"{path}: {where}: "
                       + (f"{named} {'are' if ' and ' in named else 'is'}" if named else
                          "no redop and no root column are")
                       + f" a{'n' if says[0] in 'a' else ''} {says}'s, not "
                       f"a{'n' if kind[0] in 'a' else ''} {kind}'s: is this the log given "
                       f"as {kind}=?")
    # An allreduce's size is its count's elements; a reduce_scatter's
    # (which its redop and root columns do not tell apart) P times that.
    element = NCCL_TYPE_BYTES.get(said["type"])
    count = said["count"] or ""
    if kind == "allreduce" and element and count.isdigit() and size != int(count) * element:
        raise BadInput(f"{path}: {where}: size {size} is not count {count} x "
                       f"{element}-byte {said['type']}, as an allreduce's is (a "
                       f"reduce_scatter's is ranks times that): is this the log given as "
                       f"allreduce=?")


def without_launcher_prefixes(lines):
    """The lines as the program printed them, when a launcher tagged every
    line of a log with its process (OpenMPI's --tag-output, srun -l): the
    tagged lines of standard output, untagged; else the lines as they are.
    A log where the header itself is tagged is a tagged log."""
    header = next((line for line in lines if re.search(r"#\s*nThread\s+\d+", line)), None)
    prefix = LAUNCHER_PREFIX.match(header) if header is not None else None
    if prefix is None:
        return lines
    return [line[found.end():] for line in lines
            for found in [LAUNCHER_PREFIX.match(line)]
            if found and found.group(1) != "stderr"]


# One size's measurement: its mean seconds over `repetitions` timed
# collectives (None: the log does not say how many), each one's seconds
# where the log holds them (nccl-tests' JSON under -I 1), else None; and
# `case`, the row's type, redop and root (-d all, -o all, -r -1 run one
# table of several).
Row = collections.namedtuple("Row", "bytes seconds repetitions samples case")


def parse_nccl_tests(path, in_place, kind):
    """(ranks, [Row], what counted the ranks, {rank: host}) of one
    nccl-tests log of `kind`, its text or its -J JSON (which names no
    hosts)."""
    text = read_text(path)
    if text.lstrip().startswith("{"):
        ranks, rows = parse_nccl_tests_json(path, text, in_place, kind)
        return one_row_per_size(path, ranks, rows) + ("ranks in its devices", {})
    ranks, rows, hosts = parse_nccl_tests_text(path, text.splitlines(), in_place, kind)
    return one_row_per_size(path, ranks, rows) + ("'# Rank' lines", hosts)


def placement_note(path, hosts, cluster):
    """A line saying that `path`'s ranks ran on other machines than gcsim
    places them on in `cluster` (rank r on machine r // gpus_per_node, one
    worker per node elsewhere), or None: ranks that shared a host compared
    with ranks a network apart (or the reverse) were 40 times off without a
    word. Not refused: container host names need not name machines."""
    gpus = gpus_per_machine(cluster)
    ranks = sorted(hosts)
    if len(ranks) < 2 or not isinstance(gpus, int) or gpus < 1:
        return None
    together = {(a, b) for a in ranks for b in ranks if a < b and hosts[a] == hosts[b]}
    placed = {(a, b) for a in ranks for b in ranks if a < b and a // gpus == b // gpus}
    if together == placed:
        return None
    machines = len({r // gpus for r in ranks})
    return (f"note: {os.path.basename(path)}'s '# Rank' lines put its {len(ranks)} ranks on "
            f"{len(set(hosts.values()))} host(s), where the cluster places them on {machines} "
            f"machine(s) ({'rank r on machine r // ' + str(gpus) if gpus > 1 else 'one per node'})"
            f": gcsim will simulate its own placement; describe the cluster the log ran on")


def one_row_per_size(path, ranks, rows):
    """(ranks, rows) with the rows of one size joined: nccl-tests -N (run
    cycles) prints its table again, each cycle's rows a measurement of the
    same size. Their samples and repetitions added up; the median of the
    samples, where each row has them, else the mean of the rows' means. A
    table of several types, ops or roots (-d all, -o all, -r -1) is not
    cycles of one measurement: refused."""
    cases = sorted({row.case for row in rows}, key=str)
    if len(cases) > 1:
        shown = " and ".join("/".join(part for part in case if part) or "?" for case in cases[:2])
        raise BadInput(f"{path}: rows of {len(cases)} types, ops or roots ({shown}"
                       f"{', ...' if len(cases) > 2 else ''}: -d all, -o all or -r -1?): one "
                       f"collective of one type, op and root per log")
    sizes = {}
    for row in rows:
        sizes.setdefault(row.bytes, []).append(row)
    joined = []
    for size, cycles in sizes.items():
        counts = [row.repetitions for row in cycles]
        samples = [sample for row in cycles for sample in row.samples or []]
        if any(row.samples is None for row in cycles):
            samples = None
        repetitions = None if None in counts else sum(counts)
        if repetitions is not None and repetitions > MAX_REPETITIONS:
            raise BadInput(f"{path}: size {size}: {repetitions} timed collectives, past "
                           f"gcsim's 2^30 repetitions")
        seconds = statistics.median(samples) if samples is not None else \
            sum(row.seconds for row in cycles) / len(cycles)
        joined.append(Row(size, seconds, repetitions, samples, cases[0]))
    return ranks, joined


def aggregated_refused(path, count):
    """nccl-tests -m N > 1 issues N collectives in one NCCL group, which NCCL
    may run as one, and divides the time among them: not one collective's
    time, which is what gcsim simulates."""
    if count > 1:
        raise BadInput(f"{path}: agg iters {count}: nccl-tests grouped {count} collectives "
                       f"into one launch and divided its time among them, while gcsim times "
                       f"one collective alone: run it with -m 1")


def average_option(arguments):
    """The value of nccl-tests' -a/--average (how it reduces the ranks' times:
    0 rank 0's, 1 their mean, 2 the least, 3 the most) in its command line
    `arguments` (argv, the program first), or None where it is not given."""
    value = None
    for at, argument in enumerate(arguments[1:], 1):
        if argument in ("-a", "--average") and at + 1 < len(arguments):
            value = arguments[at + 1]
        elif argument.startswith("--average="):
            value = argument.partition("=")[2]
        elif argument.startswith("-a") and not argument.startswith("--"):
            value = argument[2:]
    if value is None:
        return None
    # As nccl-tests reads it, strtol(value, NULL, 0): the longest number at
    # its start, in the base its prefix says; none at all is 0.
    found = re.match(r"\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)", value)
    if not found:
        return 0
    digits = found.group(2)
    number = int(digits, 16) if digits[:2].lower() == "0x" else \
        int(digits, 8) if digits.startswith("0") else int(digits)
    return -number if found.group(1) == "-" else number


def split_refused(path, where, groups):
    """NCCL_TESTS_SPLIT runs a collective in each group of ranks at once, and
    its times are per group: not one collective over the ranks listed."""
    if len(groups) > 1:
        raise BadInput(f"{path}: {where}: its ranks ran in {len(groups)} groups at once "
                       f"(NCCL_TESTS_SPLIT), a collective in each: run it without a split")


def cputime_refused(path):
    raise BadInput(f"{path}: its times are cputime (nccl-tests -C 1): the host's time to "
                   f"launch the collectives, not theirs: run it without -C")


def parse_nccl_tests_text(path, lines, in_place, kind):
    """(ranks, [Row], {rank: host}) of one nccl-tests text log of `kind`, a
    size's rows once per cycle, the hosts from its '# Rank N Group G Pid P
    on HOST' lines."""
    lines = without_launcher_prefixes(lines)
    # One run per log: a second header is a second run (two logs in one
    # file, or nccl-tests built without MPI and started by mpirun, where
    # every process is a 1-rank run of its own and prints its own header).
    headers = [n for n, line in enumerate(lines, 1) if re.match(r"#\s*nThread\s+\d+", line)]
    if len(headers) > 1:
        raise BadInput(f"{path}: line {headers[1]}: a second nccl-tests header ({len(headers)} "
                       f"in all): one run per log (logs joined into one, or nccl-tests without "
                       f"MPI support started by mpirun, each process a run of its own?)")
    numbers = [int(found.group(1)) for line in lines
               for found in [re.match(r"#\s+Rank\s+(\d+)", line)] if found]
    hosts = {int(found.group(1)): found.group(2) for line in lines for found in [
        re.match(r"#\s+Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)", line)] if found}
    split_refused(path, "its '# Rank' lines", {found.group(1) for line in lines for found in [
        re.match(r"#\s+Rank\s+\d+\s+Group\s+(\d+)", line)] if found})
    # Counted once: list.count per rank was quadratic in 65536 ranks.
    repeated = sorted((rank, count) for rank, count in collections.Counter(numbers).items()
                      if count > 1)
    if repeated:
        raise BadInput(f"{path}: '# Rank {repeated[0][0]}' appears {repeated[0][1]} "
                       f"times: one run per log, each rank listed once")
    for line in lines:
        found = re.match(r"#\s*Collective test starting:\s*(\S+)", line)
        named = nccl_program_kind(found.group(1)) if found else None
        if named is not None and named != kind:
            raise BadInput(f"{path}: a log of {found.group(1)}, given as {kind}=")
    iterations, launches, columns, rows, label = None, 1, None, [], ""
    for number, line in enumerate(lines, 1):
        words = line.lstrip("#").split()
        if line.startswith("#"):
            if re.search(r"Out of bounds values\s*:.*FAILED", line):
                raise BadInput(f"{path}: line {number}: nccl-tests found wrong results "
                               f"({line.lstrip('# ').strip()}): not a run to compare with")
            bounds = re.search(r"Out of bounds values\s*:(.*)", line)
            if bounds and not re.fullmatch(r"\s*[0-9]+\s+OK\s*", bounds.group(1)):
                raise BadInput(f"{path}: line {number}: {line.lstrip('# ').strip()[:60]!r}: "
                               f"expected 'Out of bounds values : N OK' (or N FAILED)")
            # "warmup iters: 5 iters: 20 agg iters: 1": the timed ones; and
            # "graph: 2", CUDA graphs of them launched twice (-G 2).
            for found in re.finditer(r"(?:(\w+)\s+)?iters:\s*([0-9]+)", line):
                if found.group(1) == "agg":
                    aggregated_refused(path, int(found.group(2)))
                elif found.group(1) != "warmup":
                    iterations = repetitions(path, found.group(2))
            graphs = re.search(r"\bgraph:\s*([0-9]{1,10})\b", line)
            if graphs and int(graphs.group(1)) > 0:
                launches = int(graphs.group(1))
            if "size" in words and "cputime" in words:
                cputime_refused(path)
            if "size" in words and "time" in words:
                columns = nccl_columns(path, words, label, in_place)
            elif "out-of-place" in words or "in-place" in words:
                label = line
            continue
        if not words or columns is None:
            continue
        row = nccl_row(path, number, words, columns)
        if row is None:
            continue  # a line that is not a result (NCCL's INFO lines)
        size, micros = row
        if columns.get("wrong") is not None and columns["wrong"] < len(words):
            wrong = words[columns["wrong"]]
            if wrong.isdigit() and int(wrong) > 0:
                raise BadInput(f"{path}: line {number}: size {size}: #wrong is {wrong}: the "
                               f"results were wrong, so its times are not a run to compare with")
            if not wrong.isdigit() and wrong != "N/A":  # N/A: run without checking (-c 0)
                raise BadInput(f"{path}: line {number}: size {size}: #wrong is {wrong[:20]!r}: "
                               f"expected a count of wrong results, or N/A")
        said = {key: words[columns[key]] if columns.get(key) is not None
                and columns[key] < len(words) else None for key in NCCL_ROW_COLUMNS}
        check_row_is(path, f"line {number}", kind, size, said)
        last_row = number
        if size != 0:  # nccl-tests prints 0-byte rows for sizes below one element
            rows.append(Row(positive_bytes(path, size),
                            positive_seconds(path, size, micros, 1e-6, f"line {number}"),
                            iterations and iterations * launches, None,
                            tuple(said[key] for key in ("type", "redop", "root"))))
    if not rows:
        raise BadInput(f"{path}: no result rows (is this the output of an nccl-tests *_perf "
                       f"program?)")
    # Every finished run ends its table with this line; without it the run
    # died or the log was cut, and its last row may be cut in its time.
    if not any(re.match(r"#\s*Avg bus bandwidth\s*:", line) for line in lines):
        raise BadInput(f"{path}: no '# Avg bus bandwidth' line after its table: the run did not "
                       f"finish or the log was cut (its last row, line {last_row}, may be cut "
                       f"too); import a finished run's whole output")
    return len(numbers), rows, hosts


def nccl_row(path, number, words, columns):
    """(size, microseconds) of the nccl-tests text line `number` (its words)
    when it is a result row: as many words as the header has names, or a
    whole number first, in the size column. None for other lines (NCCL's
    INFO lines among the rows). BadInput naming the line and the column for
    a row with a size or count that is not a whole number of at least 0, or
    a time, algbw or busbw that is no number: such a row was left out of
    the import without a word."""
    names, at_size = columns["names"], columns["size"]
    if len(words) != len(names) and not (
            at_size < len(words) and re.fullmatch(r"[-+]?[0-9]+", words[at_size])):
        return None
    for at, name in enumerate(names):
        text = words[at] if at < len(words) else None
        if name in ("size", "count"):
            if text is None or not re.fullmatch(r"[0-9]+", text):
                raise BadInput(f"{path}: line {number}: {name}: "
                               + ("missing (a row cut short?)" if text is None else
                                  f"{text[:20]!r} is not a whole number of "
                                  f"{'bytes' if name == 'size' else 'elements'}"))
        elif name in ("time", "algbw", "busbw") and (at == columns["time"] or text is not None):
            if text is None or not NUMBER.fullmatch(text):
                raise BadInput(f"{path}: line {number}: {name}"
                               + (f" (column {at + 1})" if names.count(name) > 1 else "") + ": "
                               + ("missing (a row cut short?)" if text is None else
                                  f"{text[:20]!r} is not a number"))
    return int(words[at_size]), float(words[columns["time"]])


def parse_nccl_tests_json(path, text, in_place, kind):
    """(ranks, [Row]) of the file nccl-tests writes under -J (its JSON
    output since nccl-tests 2.17.4, format versions 1 to 3: config, devices,
    results). A result's time is its out-of-place (or in-place) "time" in
    us, the mean over its iterations; under -I 1 (since 2.19.2) its
    "*_per_iter" times_us are each iteration's time (the slowest
    process's), past its skipped_iterations: the samples, whose median is
    the point's time."""
    if not text.rstrip().endswith("}"):
        raise BadInput(f"{path}: its JSON does not end: nccl-tests ends its -J file when the "
                       f"run ends (did this one end?)")
    run = read_json_object(path, "an object (nccl-tests' -J output)")

    def fail(at, why):
        raise BadInput(f"{path}: {at}: {why}")

    def seconds_of(micros, size, at):
        # nccl-tests writes a NaN time as the string "nan".
        if not is_json_number(micros):
            fail(at, "expected microseconds, got " + (repr(micros[:20]) if isinstance(micros, str)
                                                      else json_kind(micros)))
        return positive_seconds(path, size, micros, 1e-6)

    def count_at(parent, key, at, low, high):
        value = parent.get(key) if isinstance(parent, dict) else None
        if not is_count(value) or not low <= value <= high:
            fail(f"{at}/{key}", f"expected a count in [{low}, {high}], got "
                                f"{value if is_count(value) else json_kind(value)}")
        return value

    arguments = run.get("args")
    if isinstance(arguments, list) and arguments and isinstance(arguments[0], str):
        program = os.path.basename(arguments[0])
        if nccl_program_kind(program) not in (None, kind):
            raise BadInput(f"{path}: a log of {program}, given as {kind}=")
        averaged = average_option([str(argument) for argument in arguments])
        if averaged in (0, 2):
            fail("/args", f"-a {averaged}: nccl-tests reported "
                          f"{'rank 0' if averaged == 0 else 'the fastest rank'}'s time; gcsim "
                          f"compares the ranks' mean (-a 1, the default) or the slowest's (-a 3)")
    # A run that failed still ends its file (nccl-tests closes what is
    # open), without the summary a finished run writes after its results.
    # Its "errors" say little: NCCL's last warning, or "" (finished runs
    # write [""]).
    for key in ("out_of_bounds", "end_time"):
        if key not in run:
            said = [e for e in run.get("errors") or [] if isinstance(e, str) and e.strip()] \
                if isinstance(run.get("errors"), list) else []
            fail(f"/{key}", "missing: the run did not finish" + (f" ({said[0][:200]})" if said
                                                                  else "")
                 + ": not a run to compare with")
    wrong = run.get("out_of_bounds", {}).get("count") \
        if isinstance(run.get("out_of_bounds"), dict) else None
    if is_count(wrong) and wrong > 0:
        fail("/out_of_bounds/count", f"{wrong}: nccl-tests found wrong results: not a run to "
                                     f"compare with")
    config = run.get("config")
    if not isinstance(config, dict):
        fail("/config", f"expected an object (the run's options and devices), got "
                        f"{json_kind(config)}: is this nccl-tests' -J output?")
    iterations = count_at(config, "iterations", "/config", 1, MAX_REPETITIONS)
    if "aggregated_iterations" in config:
        aggregated_refused(path, count_at(config, "aggregated_iterations", "/config", 1,
                                          MAX_REPETITIONS))
    launches = max(1, count_at(config, "graph", "/config", 0, MAX_REPETITIONS)) \
        if "graph" in config else 1
    per_process = count_at(config, "nthreads", "/config", 1, MAX_RANKS) \
        * count_at(config, "ngpus", "/config", 1, MAX_RANKS)
    devices = config.get("devices")
    if not isinstance(devices, list) or not devices:
        fail("/config/devices", f"expected a list of the processes' devices, got "
                                f"{json_kind(devices) if devices != [] else 'an empty list'}")
    numbers = [count_at(device, "rank", f"/config/devices/{index}", 0, MAX_RANKS)
               for index, device in enumerate(devices)]
    repeated = [n for n, count in collections.Counter(numbers).items() if count > 1]
    if repeated:
        fail("/config/devices", f"rank {repeated[0]} listed twice: one run per file")
    split_refused(path, "/config/devices", {
        count_at(device, "group", f"/config/devices/{index}", 0, MAX_RANKS)
        for index, device in enumerate(devices) if "group" in device})
    ranks = len(devices) * per_process
    if ranks < 2:
        fail("/config/devices", "one rank (its processes x nthreads x ngpus): a collective needs "
                                "2 (nccl-tests without MPI started by mpirun writes a 1-rank "
                                "run per process, out.json, out.json.0, ...)")
    results = run.get("results")
    if not isinstance(results, list):
        fail("/results", f"expected the list of results, got {json_kind(results)}")
    placement = "in_place" if in_place else "out_of_place"
    rows = []
    for index, result in enumerate(results):
        at = f"/results/{index}"
        if not isinstance(result, dict):
            fail(at, f"expected a result object, got {json_kind(result)}")
        size = count_at(result, "size", at, 0, MAX_BYTES)
        count = result.get("count")
        if is_json_number(count) and not (is_count(count) and count >= 0):
            fail(f"{at}/count", f"{count} is not a whole number of elements")
        said = {key: str(result[key]).strip() if isinstance(result.get(key), (str, int))
                and not isinstance(result.get(key), bool) else None
                for key in NCCL_ROW_COLUMNS}
        check_row_is(path, at, kind, size, said)
        case = tuple(said[key] for key in ("type", "redop", "root"))
        # A size below one element has a size of 0; a run that times
        # in-place only (nccl-tests' trace replay) has "out_of_place": null.
        body = result.get(placement)
        if size == 0 or body is None:
            continue
        if not isinstance(body, dict):
            fail(f"{at}/{placement}", f"expected an object of times, got {json_kind(body)}")
        if "cpu_time" in body:
            cputime_refused(path)
        misses = body.get("nwrong")
        if is_json_number(misses) and misses > 0:
            fail(f"{at}/{placement}/nwrong", f"{misses:g}: the results were wrong, so its "
                                             f"times are not a run to compare with")
        seconds = seconds_of(body.get("time"), size, f"{at}/{placement}/time")
        timed = result.get(placement + "_per_iter")
        if timed is None:
            rows.append(Row(size, seconds, iterations * launches, None, case))
            continue
        where = f"{at}/{placement}_per_iter"
        if not isinstance(timed, dict):
            fail(where, f"expected an object of each iteration's times, got {json_kind(timed)}")
        skipped = count_at(timed, "skipped_iterations", where, 0, MAX_REPETITIONS) \
            if "skipped_iterations" in timed else 0
        times = timed.get("times_us")
        if not isinstance(times, list) or len(times) <= skipped:
            fail(f"{where}/times_us", f"expected a list of more than {skipped} iterations' "
                                      f"microseconds, got {json_kind(times)}"
                                      + (f" of {len(times)}" if isinstance(times, list) else ""))
        samples = [seconds_of(time, size, f"{where}/times_us/{n}")
                   for n, time in enumerate(times) if n >= skipped]
        rows.append(Row(size, statistics.median(samples), len(samples), samples, case))
    if not rows:
        other = "out_of_place" if in_place else "in_place"
        fail("/results", f"no result of a size above 0 bytes with an {placement} time"
                         + (f" (they have {other} times: "
                            f"{'leave out' if in_place else 'give'} --in-place)"
                            if any(isinstance(result, dict) and result.get(other) is not None
                                   for result in results) else ""))
    return ranks, rows


def nccl_columns(path, words, label, in_place):
    """Where a result row's size, time, #wrong, redop and root are, from the
    header's column names (and the line above them, which says which time
    columns are out-of-place and which in-place)."""
    times = [i for i, word in enumerate(words) if word == "time"]
    wrongs = [i for i, word in enumerate(words) if word == "#wrong"]
    # A table of one time column is the one its label line names.
    only_in_place = len(times) == 1 and "in-place" in label.split() \
        and "out-of-place" not in label.split()
    if len(times) >= 2:
        chosen = 1 if in_place else 0
    elif in_place != only_in_place:
        raise BadInput(f"{path}: its one time column is "
                       f"{'in-place' if only_in_place else 'out-of-place'}"
                       f"{'' if in_place else ': give --in-place'}")
    else:
        chosen = 0
    columns = {"size": words.index("size"), "time": times[chosen],
               "wrong": wrongs[chosen] if chosen < len(wrongs) else None,
               "names": words}
    for key in ("redop", "root", "type", "count"):
        if key in words:
            columns[key] = words.index(key)
    # Rows have no '#': the header's words line up with theirs.
    return columns


def parse_gloo(path):
    """(benchmark, ranks, [(bytes, seconds, iterations)]) of one gloo benchmark log."""
    lines = read_lines(path)
    benchmark, ranks, unit, rows = None, None, None, []
    options_seen, old_table = False, False

    def second_run(number, what):
        # Logs joined into one (a loop's output redirected once): the last
        # run's title or processes= would label every row.
        return BadInput(f"{path}: line {number}: a second {what}: one benchmark run per log "
                        f"(logs joined into one?); give each run its own file")

    for number, line in enumerate(lines, 1):
        words = line.split()
        title = len(words) == 1 and re.fullmatch(r"[A-Z][A-Z0-9_]+", words[0]) \
            and words[0] != "BENCHMARK"
        # Before 2021 the benchmark printed no title but "Algorithm: NAME".
        named = re.fullmatch(r"Algorithm:\s*(\S+)", line.strip())
        if named:
            title, words = True, [named.group(1)]
        if title and benchmark is not None:
            raise second_run(number, f"benchmark title ({words[0].lower()})")
        if len(words) == 1 and words[0].lower() in GLOO_BENCHMARKS:
            benchmark = words[0].lower()
        elif title:
            raise BadInput(f"{path}: gloo benchmark {words[0].lower()} is not one gcsim "
                           f"simulates (it does {', '.join(sorted(GLOO_BENCHMARKS))})")
        options = re.match(r"Options:\s*(.*)", line.strip())
        if options and options_seen:
            raise second_run(number, "Options line")
        if options:
            options_seen = True
            values = dict(item.split("=", 1) for item in options.group(1).split(", ")
                          if "=" in item)
            processes = values.get("processes", "").strip()
            if "processes" in values and (not re.fullmatch(r"[0-9]{1,6}", processes)
                                          or not 2 <= int(processes) <= MAX_RANKS):
                raise BadInput(f"{path}: processes={processes[:20]} in its Options line: "
                               f"expected a number of ranks in [2, {MAX_RANKS}]")
            ranks = int(processes) if processes else None
            for key in ("inputs", "threads"):
                if values.get(key, "1") != "1":
                    raise BadInput(f"{path}: {key}={values[key]}: gcsim simulates one input "
                                   f"buffer and one thread per process")
        if "p50" in line and ("size" in line or "elements" in line):
            if unit is not None:
                raise second_run(number, "table of results")
            unit = 1e-9 if "p50 (ns)" in line else 1e-6
            # Before 2021: elements (4-byte floats), min, p50, p99, max,
            # avg (GB/s), samples; since: size (B) first, iterations last.
            old_table = "size" not in line
            continue
        columns = 7 if old_table else 8
        if unit is None or not words:
            continue
        names = (["elements", "min", "p50", "p99", "max", "avg"] if old_table else
                 ["size", "elements", "min", "p50", "p99", "max", "bandwidth"])
        if len(words) != columns:
            # A row cut short (a log truncated, a column lost) was left out
            # without a word; a line of another shape that is no row (a
            # message after the table, a rule) is not one.
            if re.match(r"[-+]?([0-9]|\.[0-9])", words[0]):
                raise BadInput(f"{path}: line {number}: {len(words)} columns, expected "
                               f"{columns} ({', '.join(names)}, "
                               f"{'samples' if old_table else 'iterations'}): a row cut short?")
            continue
        # A result row with a number that is none was left out without a word.
        for at, name in enumerate(names):
            whole = name in ("size", "elements")
            # A negative one is positive_bytes' to refuse, saying the range.
            good = re.fullmatch(r"-?[0-9]+" if whole else NUMBER, words[at])
            if not good:
                raise BadInput(f"{path}: line {number}: {name}: {words[at][:20]!r} is not a "
                               f"{'whole ' if whole else ''}number")
        # The row's own order: a negative time, or a p50 past its p99, is a
        # table that is not what its columns say (a min below 0 went through).
        times = [float(words[names.index(name)]) for name in ("min", "p50", "p99", "max")]
        if not 0 <= times[0] <= times[1] <= times[2] <= times[3]:
            raise BadInput(f"{path}: line {number}: min, p50, p99, max "
                           f"{', '.join(f'{t:g}' for t in times)}: expected "
                           f"0 <= min <= p50 <= p99 <= max")
        if old_table:
            elements, p50, least, most = int(words[0]), float(words[2]), float(words[1]), \
                float(words[4])
            rate = float(words[5])
        else:
            size, p50 = int(words[0]), float(words[3])
            # The benchmark's elements are 4-byte floats (a count of -1 or
            # 10^23 went through beside a good size).
            if int(words[1]) * 4 != size:
                raise BadInput(f"{path}: line {number}: size {size} is not 4 x its "
                               f"{words[1]} elements (gloo's benchmark sums 4-byte floats)")
        if old_table:
            size = 4 * elements
            # The mean rate is the floats' bytes over the mean time, which
            # lies between the least and the most: else not 4-byte floats.
            # Its "GB" may be 2^30 bytes or 10^9, and it is printed to three
            # decimals (a rate of 0.000 says nothing).
            if rate > 0:
                slack = 0.0005 / rate + 0.01
                means = [size / (rate * gb) / unit for gb in (2 ** 30, 1e9)]
                if not any((1 - slack) * least <= mean <= (1 + slack) * most for mean in means):
                    raise BadInput(f"{path}: line {number}: {elements} elements at {rate} GB/s "
                                   f"take {min(means):.4g}-{max(means):.4g} "
                                   f"{'ns' if unit == 1e-9 else 'us'} as 4-byte floats, outside "
                                   f"its min {least:g} and max {most:g}: not a table of float "
                                   f"elements")
        rows.append((positive_bytes(path, size),
                     positive_seconds(path, size, p50, unit, f"line {number}"),
                     repetitions(path, words[6 if old_table else 7])))
    if benchmark is None:
        raise BadInput(f"{path}: no benchmark title (is this the output of gloo's benchmark "
                       f"program?)")
    if not rows:
        raise BadInput(f"{path}: no result rows under BENCHMARK RESULTS")
    return benchmark, ranks, rows


def nccl_points(args):
    """(points, rank counts, log names, [(log, {rank: host})])."""
    points, ranks_seen, sources, placed = [], set(), [], []
    for item in args.logs:
        kind, _, path = item.partition("=")
        if kind not in NCCL_KINDS or not path:
            raise BadInput(f"{item}: expected COLLECTIVE=LOG with COLLECTIVE one of "
                           f"{', '.join(NCCL_KINDS)}")
        ranks, rows, counted, hosts = parse_nccl_tests(path, args.in_place, kind)
        placed.append((path, hosts))
        if ranks > MAX_RANKS:
            raise BadInput(f"{path}: {ranks} {counted}, more than gcsim's {MAX_RANKS} ranks")
        if ranks >= 2 and args.ranks and args.ranks != ranks:
            raise BadInput(f"{path}: {ranks} {counted}, but --ranks {args.ranks}: the log "
                           f"names its ranks (leave --ranks out)")
        listed, ranks = ranks, ranks if ranks >= 2 else args.ranks
        if not ranks:
            raise BadInput(f"{path}: " + ("one '# Rank' line, and a collective needs 2 ranks"
                                          if listed == 1 else "no '# Rank' lines") +
                           ": give --ranks")
        ranks_seen.add(ranks)
        sources.append(os.path.basename(path))
        for row in rows:
            algorithm = args.allreduce if kind == "allreduce" else "ring"
            point = {"collective": kind, "algorithm": algorithm, "ranks": ranks,
                     "bytes": row.bytes, "seconds": row.seconds,
                     "repetitions": row.repetitions or 1}
            if row.samples is not None:
                point["samples_s"] = row.samples
            if kind == "broadcast":
                point["chunk_bytes"] = args.chunk_bytes
            points.append(point)
    return points, ranks_seen, sources, placed


def gloo_points(args):
    points, ranks_seen, sources = [], set(), []
    for path in args.logs:
        benchmark, ranks, rows = parse_gloo(path)
        if ranks and args.ranks and args.ranks != ranks:
            raise BadInput(f"{path}: processes={ranks} in its Options line, but --ranks "
                           f"{args.ranks}: the log names its ranks (leave --ranks out)")
        ranks = ranks or args.ranks
        if not ranks:
            raise BadInput(f"{path}: no 'processes=' in its Options line: give --ranks")
        collective, algorithm = GLOO_BENCHMARKS[benchmark]
        ranks_seen.add(ranks)
        sources.append(os.path.basename(path))
        for size, seconds, count in rows:
            # gloo prints an allgather's input; the format counts the output.
            total = size * ranks if collective == "allgather" else size
            if total > MAX_BYTES:
                raise BadInput(f"{path}: size {size}: an allgather of {total} bytes on {ranks} "
                               f"ranks, past gcsim's 2^50")
            points.append({"collective": collective, "algorithm": algorithm, "ranks": ranks,
                           "bytes": total, "seconds": seconds, "repetitions": count})
    return points, ranks_seen, sources, []  # gloo's logs name no hosts


def add_cluster_options(parser, default_nodes):
    """The options cluster_of reads: a platform file, or a star's figures."""
    parser.add_argument("--cluster", help="platform description JSON (platforms/README.md)")
    parser.add_argument("--nodes", type=integer_in(1, MAX_RANKS),
                        help=f"star nodes (default: {default_nodes})")
    parser.add_argument("--bandwidth", type=text_option(bandwidth_ok, WANTED_BANDWIDTH, "bandwidth"),
                        help="star link bandwidth, e.g. 100Gbps")
    parser.add_argument("--latency", type=text_option(latency_ok, WANTED_LATENCY, "latency"),
                        help="star link latency, e.g. 5us")


def is_count(value):
    return isinstance(value, int) and not isinstance(value, bool)


def fat_tree_leaves(cluster):
    """A fat_tree platform's leaves (the product of its "down"), or None."""
    down = (cluster.get("fat_tree") or {}).get("down") if isinstance(cluster, dict) else None
    if not isinstance(down, list) or not down or not all(is_count(d) for d in down):
        return None
    return math.prod(down)


def gpus_per_machine(cluster):
    """The consecutive ranks a machine of a platform description holds: a
    multi_gpu platform's GPUs per node, a fat tree's that gives them
    (PlatformSpec::has_gpu_machines), else 1."""
    machines = isinstance(cluster, dict) and (
        cluster.get("topology") == "multi_gpu"
        or (cluster.get("topology") == "fat_tree" and "gpus_per_node" in cluster))
    gpus = cluster.get("gpus_per_node") if machines else 1
    return gpus if is_count(gpus) else 1


def workers_of(cluster):
    """How many workers (ranks) a platform description has, as gcsim counts
    them: its machines' GPUs (multi_gpu, a fat tree of machines), a fat
    tree's nodes or else its leaves, any other's nodes; None if unsaid."""
    nodes = cluster.get("nodes") if isinstance(cluster, dict) else None
    if nodes is None and isinstance(cluster, dict) and cluster.get("topology") == "fat_tree":
        nodes = fat_tree_leaves(cluster)
    if not is_count(nodes):
        return None
    return nodes * gpus_per_machine(cluster)


# A platform description's fields by topology (sim/scenario/platform_spec.cpp):
# what each needs, what it may have besides.
PLATFORM_FIELDS = {"star": ({"nodes", "link"}, {"backbone", "shared_cores"}),
                   "ring": ({"nodes", "link"}, set()),
                   "parameter_server": ({"nodes", "link", "servers"}, {"server_link"}),
                   "multi_gpu": ({"nodes", "link", "gpus_per_node", "gpu_link"}, set()),
                   "fat_tree": ({"fat_tree", "link"}, {"nodes", "gpus_per_node", "gpu_link"}),
                   "simgrid_xml": ({"xml", "nodes"}, set())}
COMMON_FIELDS = {"topology", "name", "comment", "description", "source", "network"}


def check_network(network, fail):
    """Refuses what gcsim refuses in a platform's `network` section
    (sim/scenario/platform_spec.cpp), through `fail(key, message)`: written
    through, a bad one made a file gcsim validate refused naming the output."""
    if not isinstance(network, dict):
        fail("network", "expected an object")
    choices = {"model": ("CM02", "LV08", "SMPI"), "solver": ("auto", "lazy", "full")}
    for key in sorted(set(network) - {*choices, "crosstraffic", "latency_factor",
                                      "bandwidth_factor", "tcp_window", "comment"}):
        fail(f"network/{key}", "not a field of a platform's network")
    for key, known in choices.items():
        if key in network and network[key] not in known:
            fail(f"network/{key}", f"expected one of {', '.join(known)}, got "
                                   f"{json.dumps(network[key])[:40]}")
    if "crosstraffic" in network and not isinstance(network["crosstraffic"], bool):
        fail("network/crosstraffic", "expected true or false")
    for key in ("latency_factor", "bandwidth_factor"):
        value = network.get(key, 1.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not 1e-3 <= value <= 1e3:
            fail(f"network/{key}", f"expected a factor in [0.001, 1000], got "
                                   f"{json.dumps(value)[:40]}")
    if "tcp_window" in network and not (isinstance(network["tcp_window"], str)
                                        and checked_size(network["tcp_window"]) is not None):
        fail("network/tcp_window", f"expected a size with a unit in [1B, 8192TiB] (e.g. "
                                   f"\"4MiB\"), got {json.dumps(network['tcp_window'])[:40]}")


def check_cluster(cluster, file, at=""):
    """Refuses what gcsim would refuse in a platform description (`at` its
    JSON path in `file`): a topology it does not know, a field its topology
    needs missing or one it has not, a count out of gcsim's range, a link's
    bandwidth or latency that is not a string with a unit in range."""
    def fail(key, message):
        raise BadInput(f"{file}: {at}{'/' + key if key else ''}: {message}")

    def count(key, low, high):
        value = cluster[key]
        if not is_count(value) or not low <= value <= high:
            fail(key, f"expected an integer in [{low}, {high}], got {json.dumps(value)[:40]}")
        return value

    def link(key):
        value = cluster[key]
        if not isinstance(value, dict):
            fail(key, "expected an object with \"bandwidth\" and \"latency\"")
        for field in set(value) - {"bandwidth", "latency", "comment"}:
            fail(f"{key}/{field}", "not a field of a link")
        for field, accepts, wanted in (("bandwidth", bandwidth_ok, WANTED_BANDWIDTH),
                                       ("latency", latency_ok, WANTED_LATENCY)):
            if not accepts(value.get(field)):
                fail(f"{key}/{field}", f"expected {wanted}, got {json.dumps(value.get(field))}"
                     + spelling_hint(value.get(field), field))

    if not isinstance(cluster, dict):
        fail("", f"expected a platform description (a JSON object), got "
                 f"{json.dumps(cluster)[:40]}")
    topology = cluster.get("topology")
    if topology not in PLATFORM_FIELDS:
        fail("topology", f"expected one of {', '.join(PLATFORM_FIELDS)}, got "
                         f"{json.dumps(topology)[:40]}")
    needed, optional = PLATFORM_FIELDS[topology]
    for key in sorted(needed - set(cluster)):
        fail(key, f"missing: a {topology} platform needs it")
    for key in sorted(set(cluster) - needed - optional - COMMON_FIELDS):
        fail(key, f"not a field of a {topology} platform")
    if "network" in cluster:
        check_network(cluster["network"], fail)
    if "name" in cluster and not isinstance(cluster["name"], str):
        fail("name", "expected a string")
    for key in ("link", "backbone", "server_link", "gpu_link"):
        if key in cluster:
            link(key)
    if topology == "simgrid_xml" and (not isinstance(cluster["xml"], str) or not cluster["xml"]):
        fail("xml", "expected the path of a SimGrid platform file")
    if topology == "fat_tree":
        tree = cluster["fat_tree"]
        if not isinstance(tree, dict) or not all(isinstance(tree.get(k), list) and tree[k]
                                                 for k in ("down", "up")):
            fail("fat_tree", "expected an object with \"down\" and \"up\" (and \"links\")")
        for key in ("down", "up", "links"):
            levels = tree.get(key, tree["down"])
            if not isinstance(levels, list) or len(levels) != len(tree["down"]) \
                    or not all(is_count(v) and 1 <= v <= 4096 for v in levels):
                fail(f"fat_tree/{key}", f"expected {len(tree['down'])} integers in [1, 4096]")
        leaves = fat_tree_leaves(cluster)
        if leaves > MAX_RANKS:
            fail("fat_tree", f"the tree has {leaves} leaves, more than {MAX_RANKS}")
        if "nodes" in cluster:
            count("nodes", 1, leaves)
    else:
        count("nodes", 1, MAX_RANKS)
    if "servers" in cluster:
        count("servers", 1, MAX_RANKS)
    if "shared_cores" in cluster:
        count("shared_cores", 1, 4096)
    if topology == "multi_gpu" and count("gpus_per_node", 1, 64) * cluster["nodes"] > MAX_RANKS:
        fail("nodes", f"nodes x gpus_per_node exceeds {MAX_RANKS}")
    # A fat tree's leaves as machines of GPUs: both fields, every leaf's GPUs
    # built (platform_spec.cpp's read_gpu_machine).
    if topology == "fat_tree" and "gpu_link" in cluster and "gpus_per_node" not in cluster:
        fail("gpu_link", "is the link of a machine's GPUs: give \"gpus_per_node\" too")
    if topology == "fat_tree" and "gpus_per_node" in cluster:
        if "gpu_link" not in cluster:
            fail("gpu_link", "missing: a fat tree of machines needs it")
        if count("gpus_per_node", 1, 64) * fat_tree_leaves(cluster) > MAX_RANKS:
            fail("gpus_per_node", f"{cluster['gpus_per_node']} GPUs on each of the "
                                  f"{fat_tree_leaves(cluster)} leaves are more than {MAX_RANKS} hosts")


def placed_cluster(cluster, file, out, at=""):
    """The cluster of `file` (at its JSON path `at`) as written beside `out`:
    a simgrid_xml platform's "xml", which gcsim finds beside the file that
    names it (or in the current folder or the repository), relative to
    `out`'s folder."""
    xml = cluster.get("xml")
    if cluster.get("topology") != "simgrid_xml" or os.path.isabs(xml):
        return cluster
    for folder in (os.path.dirname(os.path.abspath(file)), os.getcwd(), ROOT):
        if os.path.isfile(os.path.join(folder, xml)):
            where = os.path.relpath(os.path.join(folder, xml),
                                    os.path.dirname(os.path.abspath(out)))
            return {**cluster, "xml": where}
    raise BadInput(f"{file}: {at}/xml: SimGrid platform file not found: {xml}")


def cluster_of(args, ranks):
    if args.cluster:
        given = [option for option, value in (("--nodes", args.nodes),
                                              ("--bandwidth", args.bandwidth),
                                              ("--latency", args.latency)) if value is not None]
        if given:
            raise BadInput(f"{given[0]}: describes a star without --cluster; the cluster file "
                           f"{args.cluster} says it already")
        cluster = read_json_object(args.cluster, "an object (a platform description)")
        check_cluster(cluster, args.cluster)
        return placed_cluster(cluster, args.cluster, args.out)
    if bool(args.bandwidth) != bool(args.latency):
        raise BadInput(f"{'--bandwidth' if args.bandwidth else '--latency'} without "
                       f"{'--latency' if args.bandwidth else '--bandwidth'}: a star needs both "
                       f"(or --cluster FILE)")
    if not args.bandwidth:
        raise BadInput("--cluster FILE, or --bandwidth and --latency, describe the cluster")
    return {"topology": "star", "nodes": args.nodes or ranks,
            "link": {"bandwidth": args.bandwidth, "latency": args.latency}}


def refuse_out_over_inputs(args):
    """--out naming a log or the cluster file would write the measured run
    over it."""
    refuse_output_over_inputs(args.out, [item.partition("=")[2] if args.source == "nccl-tests"
                                         else item for item in args.logs] + [args.cluster])


def main(argv):
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="source", required=True)
    nccl = sub.add_parser("nccl-tests", help="logs of all_reduce_perf, all_gather_perf, "
                                             "broadcast_perf")
    nccl.add_argument("logs", nargs="+", metavar="COLLECTIVE=LOG")
    nccl.add_argument("--in-place", action="store_true", help="the in-place time column")
    nccl.add_argument("--chunk-bytes", type=integer_in(1, MAX_BYTES), default=512 * 1024,
                      help="NCCL's ring broadcast piece (default 524288)")
    nccl.add_argument("--allreduce", choices=("ring", "tree"), default="ring",
                      help="the NCCL_ALGO the allreduce log ran with (default ring)")
    gloo = sub.add_parser("gloo", help="logs of gloo's benchmark program")
    gloo.add_argument("logs", nargs="+", metavar="LOG")
    for source in (nccl, gloo):
        add_cluster_options(source, "the logs' ranks")
        source.add_argument("--ranks", type=integer_in(2, MAX_RANKS),
                            help="ranks, where the logs do not say (a log that does must agree)")
        source.add_argument("--name", default=None)
        source.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if not args.out:
        parser.error("--out: expected a file name, got ''")
    refuse_folder_output(args.out)
    refuse_out_over_inputs(args)
    points, ranks_seen, sources, placed = (nccl_points if args.source == "nccl-tests"
                                           else gloo_points)(args)
    # One measured point per collective and size: a log given twice wrote
    # each twice, which gcsim validate --fit then weighed twice.
    seen = set()
    for point in points:
        key = (point["collective"], point["algorithm"], point["ranks"], point["bytes"])
        if key in seen:
            raise BadInput(f"{point['collective']} ({point['algorithm']}) of {point['bytes']} bytes "
                           f"on {point['ranks']} ranks twice in the logs ({', '.join(sources)}): "
                           f"give each benchmark once")
        seen.add(key)
    if len(ranks_seen) > 1:
        raise BadInput(f"the logs ran on different numbers of ranks: {sorted(ranks_seen)}")
    ranks = ranks_seen.pop()
    run = {"format": MEASURED_RUN_FORMAT,
           "name": args.name or os.path.splitext(os.path.basename(args.out))[0],
           "source": f"scripts/import_benchmarks.py {args.source} from " + ", ".join(sources),
           "cluster": cluster_of(args, ranks),
           "collectives": points}
    workers = workers_of(run["cluster"])
    if workers is not None and workers < ranks:
        raise BadInput(f"{args.cluster or '--nodes'}: the cluster has {workers} workers, "
                       f"the logs ran on {ranks} ranks")
    write_json_atomically(args.out, run, indent=1)
    print(f"wrote {args.out}: {len(points)} points on {workers_of(run['cluster']) or '?'} "
          f"workers")
    for path, hosts in placed:
        note = placement_note(path, hosts, run["cluster"])
        if note:
            print(note)
    return 0


if __name__ == "__main__":
    run_script(main, sys.argv[1:])
