#!/usr/bin/python3
"""Paper figures from a gcsim sweep (or from result.json files).

Usage:
  /usr/bin/python3 scripts/plot.py SWEEP_DIR_or_sweep.csv [--out DIR]
  /usr/bin/python3 scripts/plot.py RESULT.json|POINT_DIR ... [--out DIR]
  /usr/bin/python3 scripts/plot.py --validation COMPARISON.json ... [--out DIR] [--stem NAME]

Writes, as vector PDF and PNG, every figure whose columns the input has:
  throughput      throughput (samples/s) vs workers, one line per compressor
  time_breakdown  stacked compute / compression kernels / exposed communication
                  per iteration, one panel per compressor, bars per worker count;
                  kernels under 1% of the tallest bar in every bar drawn as one
  density         density after aggregation vs workers
  fidelity        cosine similarity (and relative L2 error) of the aggregated
                  update vs the dense average, against the compression ratio;
                  a line joins a compressor's points in the order of the
                  workers, the most workers' marker larger
  speedup         speedup over dense vs workers, dense's level (1x) dashed
A sweep of the compressors' density at one worker count (a density study:
`compressor.density`, or `density` in the grid's `compressor` objects) has
that density where the others have the workers: one line per compressor
against it (throughput, density, speedup; dense's throughput a dashed
level), a bar per density in the time breakdown, and against the
compression ratio a line from the lowest density to the highest. Likewise
a sweep at one worker count whose one other parameter is a number, a
bandwidth or a duration (a link-rate study) has it as the x axis, ticked as
the grid wrote it.
Under its panels each sweep figure says what it is of (the model, platform
and device, from the points' result.json, when they are one), what a point
is (one deterministic simulation; the iterations its mean takes, the
warm-up left out; points that differ only in a grid parameter `seed` are
one point, their mean, with a bar from the least to the most), for
density and fidelity where gradients were synthesized (a layer spec, or
more workers than a trace captured), and which lines lie hidden under
another (every point within 2% of the axes).
With --validation the inputs are `gcsim validate --json` comparisons and two
figures are drawn (validation.pdf/.png unless --stem): simulated against
measured seconds on log axes with the y = x line and +-10% band, one panel
per comparison, collectives by name and training iterations by compressor
(on a fitted platform a caption says which points the fit used: in sample);
and, where the comparisons have training runs, validation-phases: each
training iteration measured and simulated side by side, stacked by phase as
validate's errors compare them (compute with the optimizer, compression,
communication: what the iteration has beyond those), one panel per comparison.
A figure whose columns are absent is skipped with a message. Each compressor
keeps one colour and marker in every figure (Okabe-Ito based, colour-blind
safe). Parameters of the sweep other than the compressor and the worker count
become panels (line figures) or separate files (time breakdown); one whose
values each have a worker count of their own (platform files of 8 and 16
nodes) is the worker axis. Figures of
a sweep record the SHA-256 of the sweep.csv they were drawn from (the PDF's
Subject, the PNG's Source text), so that stale ones can be found; the same
table gives the same bytes, wherever it is drawn (a matplotlibrc is not
read: the figures keep matplotlib's defaults and this script's style). A sweep
folder without its sweep.csv (an unfinished sweep) gives the results of the
points its points.txt lists, and says how many of them have one.

Every input is read and checked before anything is drawn or a folder made:
bad input (a missing, empty, malformed or non-UTF-8 file, one that is not a
regular file, a field of the wrong type, a negative time, a row without its
worker count, a --stem too long for a file name) is exit 2 with one line
naming the file; an output folder or file that cannot be written is exit 1
with one line. A folder made for the figures is removed again when none was
written.

Runs on Debian's python3-matplotlib and python3-numpy; no pandas needed.
"""
import argparse
import contextlib
import csv
import glob
import hashlib
import json
import math
import os
import re
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_write import longest_name, write_figure_atomically  # noqa: E402
from script_input import (BadInput, Parser, check_output_file, is_json_number,  # noqa: E402
                          json_kind, open_input, parse_bandwidth, parse_duration, parse_size,
                          read_json_object, refuse_output_over_inputs, run_script,
                          use_plain_matplotlib)

matplotlib = use_plain_matplotlib()
import matplotlib.patheffects as path_effects  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator  # noqa: E402

# One colour and marker per compressor, in every figure. The first eight
# colours are Okabe & Ito's colour-blind-safe set; deft, iwp, fp16, bf16 and
# powersgd take five of Paul Tol's muted colours that stay apart from them.
STYLE = {
    "dense": ("#000000", "o"),
    "topk": ("#E69F00", "s"),
    "gtopk": ("#56B4E9", "^"),
    "dgc": ("#009E73", "D"),
    "randomk": ("#F0E442", "v"),
    "cltk": ("#0072B2", "P"),
    "sketched_sgd": ("#D55E00", "X"),
    "gs_sgd": ("#CC79A7", "<"),
    "deft": ("#882255", ">"),
    "iwp": ("#999933", "h"),
    "fp16": ("#332288", "*"),
    "bf16": ("#AA4499", "p"),
    "powersgd": ("#44AA99", "d"),
}
FALLBACK = [("#555555", "*"), ("#888888", "p"), ("#BBBBBB", "d"), ("#333333", "8")]
# Yellow needs a dark outline to be seen on white.
OUTLINED = {"#F0E442"}
LINESTYLES = ["-", "--", ":", "-."]
# Time-breakdown components: greys for compute and communication, and a
# colour of its own for each of the fourteen compression kernels
# (sim/cost/kernels.cpp) and the derived low_rank_product, the same in every
# figure: Tol's light palette, then six of his muted colours and his bright
# blue. Eight colours taken in turn
# gave two kernels of one figure one colour.
COMPUTE_COLOUR = "#BBBBBB"
COMMUNICATION_COLOUR = "#444444"
KERNEL_COLOUR = {
    "topk_select": "#EE8866", "threshold_select": "#EEDD88", "l2_norm": "#77AADD",
    "sample_threshold": "#99DDFF", "sketch_insert": "#44BB99", "sketch_query": "#BBCC33",
    "gather": "#FFAABB", "scatter_add": "#AAAA00", "sparse_pack": "#CC6677",
    "sparse_unpack": "#332288", "dense_add": "#117733", "dense_scale": "#882255",
    "fp16_cast": "#AA4499", "sgd_momentum": "#4477AA", "low_rank_product": "#88CCEE"}
KERNEL_COLOURS = list(KERNEL_COLOUR.values())
# Grid parameters that set the worker count are the x axis, not panels.
WORKER_KEYS = ("nodes", "gpus_per_node", "workers")


def style_of(name):
    if name in STYLE:
        return STYLE[name]
    return FALLBACK[sum(map(ord, name)) % len(FALLBACK)]


# ---------------------------------------------------------------- reading


def number(text):
    if text is None or text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


# The numeric columns the figures read, with the least value they may have.
FIGURE_COLUMNS = {
    "workers": 1.0, "iteration_time_s": 0.0, "throughput_samples_per_s": 0.0, "compute_s": 0.0,
    "compression_s": 0.0, "compression_exposed_s": 0.0, "communication_s": 0.0,
    "straggler_wait_s": 0.0,
    "bytes_sent_per_worker": 0.0, "density_after_aggregation": 0.0, "fidelity.cosine": -1.0,
    "fidelity.rel_l2": 0.0, "speedup_vs_dense": 0.0, "compression_ratio": 0.0,
}
# Shares and cosines no run passes: a figure of one would draw what no run gave.
MOST_VALUES = {"density_after_aggregation": 1.0, "fidelity.cosine": 1.0}
EXPOSED_KERNELS = "compression_exposed_kernels_s."


def is_kernel_column(key):
    """compression_exposed_kernels_s.topk_select, compression_kernels_s.topk_select
    or compression.topk_s: a compression kernel's seconds."""
    return isinstance(key, str) and (key.startswith(EXPOSED_KERNELS) or (
        key.startswith("compression") and "." in key
        and (key.split(".")[0].endswith("_s") or key.endswith("_s"))))


def least_value(key):
    """The least value of a column the figures read, or None for other columns."""
    return 0.0 if is_kernel_column(key) else FIGURE_COLUMNS.get(key)


def checked_value(where, key, value):
    """A figure column's value as a float (None: absent); exit 2 naming `where`
    unless it is a finite number no less than the column allows."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            parsed = float(value)
        except ValueError:
            raise BadInput(f"{where}: {key}: {value[:40]!r} is not a number")
    elif is_json_number(value):
        parsed = float(value)
    else:
        raise BadInput(f"{where}: {key}: expected a number, got {json_kind(value)}")
    least, most = least_value(key), MOST_VALUES.get(key, 1e15)
    if not math.isfinite(parsed) or parsed < least or parsed > most:
        raise BadInput(f"{where}: {key}: {value} is out of range (expected {least:g} to {most:g})")
    if key == "workers" and not parsed.is_integer():
        raise BadInput(f"{where}: {key}: {value} is not a whole number of workers")
    return parsed


def flatten(value, prefix, out, numbers_only, others=None):
    """Leaves of nested objects under dotted names; with `others`, the leaves
    left out (lists, booleans, and strings when numbers_only) go there."""
    for key, item in value.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(item, dict):
            flatten(item, name, out, numbers_only, others)
        elif isinstance(item, (int, float)) and not isinstance(item, bool):
            out[name] = float(item) if numbers_only else item  # a grid value reads as written
        elif not numbers_only and isinstance(item, str):
            out[name] = item
        elif not numbers_only and isinstance(item, bool):
            # As JSON writes it: left out, runs that differ only in a flag
            # (gs-SGD's second_round) were drawn as one line.
            out[name] = json.dumps(item)
        elif others is not None:
            others[name] = item


# sweep.csv's columns of what each point's result says, between the grid's
# and the summary's; "result." before the name where a grid key has it.
RESULT_COLUMNS = ("command", "compressor_name", "gradients", "gcsim_commit")


def result_column(row, name):
    """A row's RESULT_COLUMNS entry `name`, under whichever heading it has."""
    return row.get("result." + name, row.get(name))


def read_csv(path):
    """Rows as dicts (numbers as floats) and the grid parameter columns."""
    rows = []
    try:
        # utf-8-sig: a table saved again by a spreadsheet ("CSV UTF-8") opens
        # with a byte-order mark, which made its first column unknown.
        with open_input(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            for row in reader:
                if None in row:
                    raise BadInput(f"{path}: line {reader.line_num}: more fields than the header")
                if None in row.values():  # DictReader's filler for the fields a row lacks
                    raise BadInput(f"{path}: line {reader.line_num}: fewer fields than the header "
                                   "(a row cut short?)")
                rows.append((reader.line_num, dict(row)))
    except OSError as error:
        raise BadInput(f"{path}: cannot read: {error.strerror}")
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not UTF-8 text")
    except csv.Error as error:
        raise BadInput(f"{path}: not CSV: {error}")
    if not header:
        raise BadInput(f"{path}: empty file")
    if "workers" not in header:
        raise BadInput(f"{path}: no workers column (not gcsim's sweep.csv)")
    if not rows:
        raise BadInput(f"{path}: no rows below the header")
    # A point twice (tables joined, a row pasted again) was drawn twice,
    # its line doubling back on itself.
    seen = {}
    for line, row in rows:
        point = row.get("point")
        if point and point in seen:
            raise BadInput(f"{path}: line {line}: point {point} again (first on line "
                           f"{seen[point]}): one row per point")
        seen.setdefault(point, line)
    # sweep.csv lists the grid parameters between "point" and "command".
    params = []
    if "point" in header and "command" in header:
        params = header[header.index("point") + 1:header.index("command")]
    for line, row in rows:
        for key in list(row):
            if key == "point" or key in params or key in RESULT_COLUMNS or key in {
                    "result." + column for column in RESULT_COLUMNS}:
                continue
            if key == "workers" and not row[key]:
                # Every result has its worker count, and a row without one
                # was drawn into three figures before a traceback.
                raise BadInput(f"{path}: line {line}: workers: empty: every point has its "
                               "worker count")
            if least_value(key) is not None:
                row[key] = checked_value(f"{path}: line {line}", key, row[key])
            else:
                row[key] = number(row[key])
    return [row for _, row in rows], params


# Scenario fields whose resolved value result.json keeps under another name
# (in bytes, where the scenario writes a size with a unit).
RESOLVED_NAMES = {"training.bucket_size": "training.bucket_size_bytes",
                  "training.first_bucket_size": "training.first_bucket_size_bytes"}


def resolved_fields(model):
    """What a run resolved for the training and compressor fields, from
    result.json's model.training and compressor_params (defaults included),
    flattened as a scenario is; empty where the result does not say (older
    results). Look a scenario field up under RESOLVED_NAMES' name."""
    values = {}
    if isinstance(model, dict):
        for prefix, resolved in (("training", model.get("training")),
                                 ("compressor", model.get("compressor_params"))):
            if isinstance(resolved, dict):
                flatten(resolved, prefix, values, numbers_only=False)
    return values


def same_setting(key, value):
    """A value as compared across results: a number by value (0 is 0.0), a
    size by its bytes, anything else as written."""
    if key in RESOLVED_NAMES and isinstance(value, str):
        size = parse_size(value)
        value = value if size is None else size
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


def read_results(paths):
    """Rows from result.json files; parameters are the scenario fields that differ."""
    rows, scenarios, resolved = [], [], []
    for path in paths:
        result = read_json_object(path)
        summary, scenario_value = result.get("summary"), result.get("scenario", {})
        if not isinstance(summary, dict):
            raise BadInput(f"{path}: /summary: expected an object (gcsim's result.json), "
                 f"got {json_kind(summary) if 'summary' in result else 'nothing'}")
        if not isinstance(scenario_value, dict):
            raise BadInput(f"{path}: /scenario: expected an object, got {json_kind(scenario_value)}")
        row, others = {}, {}
        flatten(summary, "", row, numbers_only=True, others=others)
        for key, value in others.items():
            if least_value(key) is not None and value is not None:
                raise BadInput(f"{path}: /summary: {key}: expected a number, got {json_kind(value)}")
        if "workers" not in row:
            raise BadInput(f"{path}: /summary: no workers (not gcsim's result.json)")
        for key in list(row):
            if least_value(key) is not None:
                row[key] = checked_value(f"{path}: /summary", key, row[key])
            elif not math.isfinite(row[key]):
                del row[key]
        scenario = {}
        flatten(scenario_value, "", scenario, numbers_only=False)
        row["compressor_name"] = str(scenario.get("compressor.name", ""))
        row["point"] = os.path.basename(os.path.dirname(os.path.abspath(path)))
        row["_setting"] = setting_of(result.get("model"))
        rows.append(row)
        scenarios.append(scenario)
        resolved.append(resolved_fields(result.get("model")))
    keys = sorted({key for scenario in scenarios for key in scenario})
    params = []
    for key in keys:
        if key in ("name", "description"):
            continue
        # A field one scenario left out is the value its run resolved: a
        # default written out in another result is no other setting.
        values = [s[key] if key in s else r.get(RESOLVED_NAMES.get(key, key))
                  for s, r in zip(scenarios, resolved)]
        if len({json.dumps(same_setting(key, v)) for v in values}) < 2:
            continue
        params.append(key)
        for row, value in zip(rows, values):
            row[key] = "" if value is None else str(value)
    return rows, params


def sweep_csv(inputs):
    """The sweep.csv the inputs name, or None if they are result files."""
    if len(inputs) == 1 and inputs[0].endswith(".csv"):
        return inputs[0]
    # One there that is no file (a FIFO, a folder, a dangling link) is named
    # as the input it is, not passed over for the points' results.
    if len(inputs) == 1 and os.path.lexists(os.path.join(inputs[0], "sweep.csv")):
        return os.path.join(inputs[0], "sweep.csv")
    return None


def unfinished_sweep_results(folder):
    """The result.json files of a sweep folder without its sweep.csv: those
    of the grid its points.txt names (points/ may keep an earlier grid's
    folders), or every point's for a folder of a sweep before points.txt."""
    listed = os.path.join(folder, "points.txt")
    if not os.path.isfile(listed):
        return sorted(glob.glob(os.path.join(folder, "points", "*", "result.json")))
    try:
        with open_input(listed) as handle:
            ids = handle.read().split()
    except (OSError, UnicodeDecodeError) as error:
        raise BadInput(f"{listed}: cannot be read: {error}")
    for point in ids:
        if os.sep in point or point in (".", ".."):
            raise BadInput(f"{listed}: {point!r} is not a point of this folder")
    return [os.path.join(folder, "points", point, "result.json") for point in ids]


def setting_of(model):
    """"cnn on cluster96-1g, NVIDIA ... (derived)": a result's model, platform
    and device, for a figure's caption; None when it names none of them."""
    if not isinstance(model, dict):
        return None
    workload, platform, device = (model.get(key) for key in ("workload", "platform", "device"))
    if not all(isinstance(v, str) for v in (workload, platform, device)):
        return None
    return f"{workload} on {platform}, {device}"


def add_settings(rows, base):
    """Each sweep row's setting, from its point's result.json where it is
    there (a table copied alone has none: its figures then say none)."""
    for row in rows:
        point = row.get("point")
        path = os.path.join(base, "points", str(point), "result.json")
        if not point or os.sep in str(point) or not os.path.isfile(path):
            continue
        try:
            with open_input(path) as handle:
                row["_setting"] = setting_of(json.load(handle).get("model"))
        except (BadInput, OSError, ValueError, AttributeError):
            continue  # the figures say less; the table's own checks stand


def load(inputs):
    csv_path = sweep_csv(inputs)
    if csv_path:
        base = os.path.dirname(os.path.abspath(csv_path))
        rows, params = read_csv(csv_path)
        add_settings(rows, base)
        return rows, params, base
    files = []
    for item in inputs:
        if os.path.isdir(item):
            found = [os.path.join(item, "result.json")]
            listed = None
            if not os.path.isfile(found[0]):  # an unfinished sweep folder
                found = listed = unfinished_sweep_results(item)
            found = [f for f in found if os.path.isfile(f)]
            if listed and found and len(found) < len(listed):
                # Its figures would pass for the whole grid's.
                print(f"{item}: an unfinished sweep (no sweep.csv): {len(found)} of its "
                      f"{len(listed)} points have a result, and the figures show those only")
            if not found:
                raise BadInput(f"{item}: no sweep.csv or result.json found in this folder")
            files += found
        elif not os.path.exists(item):
            raise BadInput(f"{item}: no such file or folder")
        else:
            files.append(item)
    base = os.path.abspath(inputs[0] if os.path.isdir(inputs[0]) else os.path.dirname(inputs[0]))
    return read_results(files) + (base,)


@contextlib.contextmanager
def figures_folder(out, written):
    """Creates the figures' folder, once the inputs are known good (exit 1
    with one line when it cannot be), for the block to draw into; the
    folders made here are removed again when the block wrote nothing (a
    figure it could not write, every figure skipped)."""
    if os.path.exists(out) and not os.path.isdir(out):
        print(f"plot.py: cannot create folder {out}: a file of that name exists", file=sys.stderr)
        sys.exit(1)
    made = []
    missing = os.path.abspath(out)
    while not os.path.lexists(missing):
        made.append(missing)
        missing = os.path.dirname(missing)
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as error:
        print(f"plot.py: cannot create folder {out}: {error.strerror}", file=sys.stderr)
        sys.exit(1)
    try:
        yield
    finally:
        if not written:
            for folder in made:  # the deepest first; one not empty stays
                with contextlib.suppress(OSError):
                    os.rmdir(folder)


# ---------------------------------------------------------------- grouping


def compressor_of(row, params, density_axis=False):
    """(name, variant label) of the compressor a row ran; without its
    density where the density is the x axis (`density_axis`)."""
    name = result_column(row, "compressor_name") or ""
    extras = []
    for key in params:
        value = row.get(key, "")
        if key == "compressor":
            try:
                spec = json.loads(value)
            except (TypeError, ValueError):
                spec = {"name": value}
            if isinstance(spec, dict):
                name = name or str(spec.get("name", ""))
                extras += [f"{k}={json.dumps(v) if isinstance(v, bool) else v}"
                           for k, v in sorted(spec.items())
                           if k != "name" and not (density_axis and k == "density")]
        elif key.startswith("compressor."):
            if key == "compressor.name":
                name = name or value
            elif density_axis and key == "compressor.density":
                continue
            elif value != "":  # a parameter this compressor does not have (dense's density)
                extras.append(f"{key[len('compressor.'):]}={value}")
    name = name or "dense"
    return name, name + (f" ({', '.join(extras)})" if extras else "")


def grid_density(row, params):
    """The density the grid gave a row's compressor (`compressor.density`,
    or `density` in a `compressor` object), or None."""
    if "compressor.density" in params:
        return number(row.get("compressor.density"))
    if "compressor" in params:
        try:
            spec = json.loads(row.get("compressor", ""))
        except (TypeError, ValueError):
            return None
        if isinstance(spec, dict) and isinstance(spec.get("density"), (int, float)) \
                and not isinstance(spec.get("density"), bool):
            return float(spec["density"])
    return None


def sets_workers(rows, key):
    """True when each value of `key` goes with a worker count of its own
    (nodes, whole platform objects): such a parameter is the x axis, not a
    panel. Values that share a count (link rates at 8 nodes) are panels:
    on the workers axis they were drawn one above the other at x = 8."""
    workers = {}
    for row in rows:
        workers.setdefault(str(row.get(key)), set()).add(row.get("workers"))
    counts = [next(iter(c)) for c in workers.values() if len(c) == 1]
    return len(workers) > 1 and len(counts) == len(workers) and len(set(counts)) == len(counts)


def facet_params(rows, params):
    """Varying parameters that are neither the compressor nor the worker count."""
    chosen = []
    for key in params:
        if key == "compressor" or key.startswith("compressor."):
            continue
        if key.split(".")[-1] in WORKER_KEYS or sets_workers(rows, key):
            continue
        if len({str(row.get(key)) for row in rows}) > 1:
            chosen.append(key)
    return chosen


def mean_over_seeds(rows, params):
    """(rows, params) with the points that differ only in their seed (a
    grid parameter `seed`: replicates) joined into one: each column that
    is a number in every one of them their mean (others the first's),
    row["_range"] its least and most where they differ, row["_seeds"]
    the seeds; `seed` no longer a parameter. As they are without a seed
    parameter or with one seed. A seed twice in one point (a result
    given twice) is refused."""
    if "seed" not in params or len({str(r.get("seed")) for r in rows}) < 2:
        return rows, params
    others = [key for key in params if key != "seed"]
    groups = {}
    for row in rows:
        # The workers too: where no parameter says them, a point's are its own.
        key = tuple(str(row.get(key)) for key in others + ["workers"])
        groups.setdefault(key, []).append(row)
    joined = []
    for group in groups.values():
        row = {key: value for key, value in group[0].items() if key != "seed"}
        row["_seeds"] = sorted((str(r.get("seed")) for r in group), key=seed_order)
        twice = [seed for seed in set(row["_seeds"]) if row["_seeds"].count(seed) > 1]
        if twice:
            raise BadInput(f"point {row.get('point', '?')}: seed {twice[0]} "
                           f"{row['_seeds'].count(twice[0])} times: one result a seed")
        row["_range"] = {}
        for key, value in group[0].items():
            values = [r.get(key) for r in group]
            if key.startswith("_") or key in params or not all(
                    isinstance(v, float) for v in values):
                continue
            if min(values) != max(values):  # equal ones stay exactly as they are
                row[key] = math.fsum(values) / len(values)
                row["_range"][key] = (min(values), max(values))
        joined.append(row)
    return joined, others


def seed_order(seed):
    """Seeds as numbers where they are, so that 10 follows 9."""
    try:
        return (0, int(seed), seed)
    except ValueError:
        return (1, 0, seed)


def quantity(text):
    """A grid value as a number on an axis: a number, or a bandwidth or a
    duration with its unit (in bytes per second or seconds); None for
    anything else."""
    if text is None:
        return None
    text = str(text)
    for parse in (number, parse_bandwidth, parse_duration):
        value = parse(text)
        if value is not None and value >= 0:
            return value
    return None


def annotate(rows, params):
    """Each row's compressor, panel and place along the sweep's axis
    (`_along`, drawn as `_along_text`): its workers; at one worker count,
    where the grid varies the compressors' density (a paper's density
    study), that density, which then joins a compressor's points into one
    line instead of making a line of each (48 legend entries, no curve, for
    8 compressors at 6 densities); else, at one worker count, the one other
    grid parameter whose values are numbers, bandwidths or durations (a
    link-rate study), instead of a panel each."""
    facets = facet_params(rows, params)
    one_count = len({row.get("workers") for row in rows}) == 1
    densities = {grid_density(row, params) for row in rows} - {None}
    by_density = len(densities) > 1 and one_count
    along_key = None
    if one_count and not by_density and len(facets) == 1 \
            and all(quantity(row.get(facets[0])) is not None for row in rows):
        along_key = facets.pop()
    for row in rows:
        row["_name"], row["_variant"] = compressor_of(row, params, density_axis=by_density)
        row["_facet"] = tuple((key, str(row.get(key))) for key in facets)
        if by_density:
            row["_along"], row["_along_name"] = grid_density(row, params), "density"
        elif along_key:
            row["_along"], row["_along_name"] = quantity(row.get(along_key)), along_key
            row["_along_text"] = str(row.get(along_key))
        else:
            row["_along"], row["_along_name"] = row.get("workers"), "workers"
    return facets


def along_name(rows):
    """What the sweep's figures have on their x axis: "workers", "density"
    or a grid parameter's name."""
    names = [r["_along_name"] for r in rows if r.get("_along_name") not in (None, "workers")]
    return names[0] if names else "workers"


def along_label(name):
    return {"workers": "workers", "density": "target density"}.get(name, name)


def along_text(row):
    """A point's place on the sweep's axis as the grid wrote it ("10Gbps")."""
    return row.get("_along_text") or f"{row['_along']:g}"


def short_value(value):
    """A parameter value as a reader wants it in a title: a file's stem, an
    object's name, or an object without one as its "key: value" pairs."""
    try:
        spec = json.loads(value)
    except (TypeError, ValueError):
        spec = None
    if isinstance(spec, dict) and "name" in spec:
        return str(spec["name"])
    if isinstance(spec, dict):
        return ", ".join(f"{key}: {item if isinstance(item, str) else json.dumps(item)}"
                         for key, item in spec.items())
    if isinstance(value, str) and "/" in value:
        value = os.path.basename(value)
        return value[:-5] if value.endswith(".json") else value
    return value


def facet_title(facet, width=42):
    """"platform = x, allreduce = y" on one line if it fits a panel's width
    (in characters), else a line each: long ones ran into their neighbours."""
    parts = [f"{key.split('.')[-1]} = {short_value(value)}" for key, value in facet]
    line = ", ".join(parts)
    return line if len(line) <= width else "\n".join(parts)


def ordered_variants(rows):
    """Variants in a stable order: known compressors in STYLE order, then by label."""
    known = list(STYLE)
    variants = {(row["_name"], row["_variant"]) for row in rows}
    return sorted(variants, key=lambda v: (known.index(v[0]) if v[0] in known else len(known),
                                           v[0], v[1]))


def line_style(variant, variants):
    name = variant[0]
    same = [v for v in variants if v[0] == name]
    colour, marker = style_of(name)
    return dict(color=colour, marker=marker,
                linestyle=LINESTYLES[same.index(variant) % len(LINESTYLES)],
                markeredgecolor="#333333" if colour in OUTLINED else colour,
                path_effects=([path_effects.Stroke(linewidth=2.6, foreground="#555555"),
                               path_effects.Normal()] if colour in OUTLINED else None))


def has(rows, column):
    return any(row.get(column) is not None for row in rows)


def facets_of(rows):
    seen = []
    for row in rows:
        if row["_facet"] not in seen:
            seen.append(row["_facet"])
    return seen


# ---------------------------------------------------------------- figures


def setup_matplotlib():
    plt.rcParams.update({
        "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "legend.fontsize": 7,
        "xtick.labelsize": 7, "ytick.labelsize": 7, "lines.linewidth": 1.4,
        "lines.markersize": 4.5, "axes.spines.top": False, "axes.spines.right": False,
        "axes.grid": True, "grid.color": "#DDDDDD", "grid.linewidth": 0.5,
        "pdf.fonttype": 42, "svg.fonttype": "none", "savefig.dpi": 200,
        # Names come from input files: a "$" in one was read as mathtext, and
        # an unbalanced one ended the script in a traceback.
        "text.parse_math": False,
    })


def along_axis(axis, rows):
    """A log x axis ticked at the sweep's values as the grid wrote them: the
    workers (base 2), the densities, a link rate."""
    name = along_name(rows)
    ticks = {}
    for row in rows:
        if row.get("_along") is not None:
            ticks.setdefault(row["_along"], along_text(row))
    # A 0 (a latency of 0s, no stragglers) has no place on a log axis: a
    # symmetric log one puts it at its origin, linear up to the least other.
    positive = [value for value in ticks if value > 0]
    if len(positive) == len(ticks):
        axis.set_xscale("log", base=2 if name == "workers" else 10)
    elif positive:
        axis.set_xscale("symlog", linthresh=min(positive), linscale=0.5)
        axis.set_xlim(left=-0.3 * min(positive))  # no empty negative half
    if ticks:
        axis.xaxis.set_major_locator(FixedLocator(sorted(ticks)))
        axis.xaxis.set_minor_locator(NullLocator())
        # A parameter's values as written ("100MBps", "1Gbps") are long and
        # may lie close: slanted, they do not run into each other.
        slanted = name not in ("workers", "density") and len(ticks) > 1
        axis.set_xticklabels([ticks[v] for v in sorted(ticks)], rotation=30 if slanted else 0,
                             ha="right" if slanted else "center")
    axis.set_xlabel(along_label(name))


# The most panels one figure holds: 20 rows of them at 200 dpi stay well
# inside what a PNG can be (matplotlib refuses 2^16 pixels a side; 391
# panels ended the script in a traceback, the PDF written and the PNG not).
MOST_PANELS = 60


class TooManyPanels(Exception):
    """A figure that would not fit: the figure is skipped, saying why."""


def panels(count, what, width=3.4, height=2.5, sharey=False):
    if count > MOST_PANELS:
        raise TooManyPanels(f"{count} panels ({what}), more than the {MOST_PANELS} a figure "
                            f"holds: plot part of the sweep (some of its result files)")
    columns = min(count, 3)
    rows = math.ceil(count / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows),
                                squeeze=False, layout="constrained", sharey=sharey)
    for extra in axes.flat[count:]:
        extra.set_visible(False)
    return figure, list(axes.flat[:count])


def legend_below(figure, axes, order=None):
    # Two legend columns per panel column keep the legend as wide as the panels.
    columns = 2 * len({axis.get_subplotspec().colspan.start for axis in axes})
    handles, labels = {}, []
    for axis in axes:
        for handle, label in zip(*axis.get_legend_handles_labels()):
            if label not in handles:
                handles[label] = handle
                labels.append(label)
    if order:
        labels.sort(key=lambda label: order.index(label) if label in order else len(order))
    if labels:
        # Below the panels; savefig's tight bounding box makes room for it.
        figure.legend([handles[label] for label in labels], labels, loc="upper center",
                      bbox_to_anchor=(0.5, 0.0), ncol=min(len(labels), columns), frameon=False)


class Written(list):
    """The figure files written so far, and `source`: what they are drawn
    from, recorded in each file (a PDF's Subject, a PNG's Source text), so
    that figures left behind by their data can be told (tests/cli/studies_test.py)."""

    def __init__(self, source=None):
        super().__init__()
        self.source = source


def sweep_source(csv_path):
    """A sweep figure's `source`: the sweep.csv's SHA-256."""
    with open_input(csv_path, "rb") as handle:
        return "sweep.csv sha256 " + hashlib.sha256(handle.read()).hexdigest()


def save(figure, out, stem, written):
    for extension in ("pdf", "png"):
        path = os.path.join(out, f"{stem}.{extension}")
        # write_figure_atomically leaves out the date and version stamps.
        metadata = {}
        if written.source:
            metadata["Subject" if extension == "pdf" else "Source"] = written.source
        write_figure_atomically(figure, path, metadata=metadata, bbox_inches="tight",
                                pad_inches=0.03)
        written.append(path)
    plt.close(figure)


def plain_number(value):
    """A tick's number as written: 0.001, 20, 1000000 (not 1e+06)."""
    return f"{value:.0f}" if value >= 1e5 and value == round(value) else f"{value:g}"


def plain_log_ticks(axis, subs=(1.0, 2.0, 5.0)):
    """Plain numbers at 1-2-5 steps on a log axis (ratios rarely span many
    decades), or at `subs`; no minor ticks, and nothing in mathtext, which
    text.parse_math off would print raw ("$\\mathdefault{10^{-2}}$")."""
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _: plain_number(v)))
    axis.set_minor_locator(NullLocator())


def line_figure(rows, out, stem, column, ylabel, written, x="_along", xlabel=None,
                log_y=False, reference=None):
    usable = [r for r in rows if r.get(column) is not None and r.get(x) is not None]
    if not usable:
        return f"no row has both {column} and {x}"
    if log_y == "auto":  # a log scale only pays when values span more than a decade
        values = [r[column] for r in usable if r[column] > 0]
        log_y = bool(values) and max(values) > 10 * min(values)
    facets = facets_of(usable)
    variants = ordered_variants(usable)
    # One y scale for all panels: each its own made a V100's panel and an
    # H100's look alike.
    figure, axes = panels(len(facets), "one per value of the other grid parameters",
                          sharey=True)
    for axis, facet in zip(axes, facets):
        here = [r for r in usable if r["_facet"] == facet]
        for variant in variants:
            # Joined in the order of the sweep's axis (the workers, or the
            # density), whatever the x axis: against another x (compression
            # ratio) a line is the compressor's path along the sweep, its
            # last point's marker larger.
            mine = sorted((r for r in here if (r["_name"], r["_variant"]) == variant),
                          key=lambda r: (r.get("_along") or 0, r[x], r[column]))
            if not mine:
                continue
            style = line_style(variant, variants)
            axis.plot([r[x] for r in mine], [r[column] for r in mine], label=variant[1], **style)
            seeds_bars(axis, mine, x, column, style["color"])
            if x != "_along" and len(mine) > 1:
                axis.plot([mine[-1][x]], [mine[-1][column]], linestyle="none",
                          markersize=2 * plt.rcParams["lines.markersize"],
                          **{k: v for k, v in style.items() if k != "linestyle"})
        if reference:  # given the panel's every row: dense has no density to be drawn at
            reference(axis, [r for r in rows if r["_facet"] == facet])
        if x == "_along":
            along_axis(axis, here)
        else:
            axis.set_xscale("log")
            # 1-2-5 steps over more than three decades ran into each other.
            xs = [r[x] for r in here if r[x] > 0]
            wide = bool(xs) and max(xs) > 1000 * min(xs)
            plain_log_ticks(axis.xaxis, subs=(1.0,) if wide else (1.0, 2.0, 5.0))
            axis.set_xlabel(xlabel)
        if log_y:
            axis.set_yscale("log")
            plain_log_ticks(axis.yaxis)
        if axis.get_subplotspec().is_first_col():  # the shared scale's numbers are there only
            axis.set_ylabel(ylabel)
        if facet:
            axis.set_title(facet_title(facet))
    legend_below(figure, axes)
    groups = coinciding(usable, variants, x, column, log_y)
    # A compressor's name where no other line has it; else its label.
    names = [v[0] for v in variants]
    short = {v[1]: v[0] if names.count(v[0]) == 1 else v[1] for v in variants}
    hidden = [f"Hidden under another line (every point within {HIDDEN_SHARE:.0%} of the axes): "
              + "; ".join(f"{', '.join(short[label] for label in group[:-1])} under "
                          f"{short[group[-1]]}" for group in groups) + "."] if groups else []
    caption(figure, usable, gradients=column.startswith(("fidelity", "density")),
            along=x != "_along", notes=hidden)
    save(figure, out, stem, written)
    return None


# Two points closer than this share of a panel's axes lie under one
# another's marker (4.5 points on a 2-inch axis are 3%).
HIDDEN_SHARE = 0.02


def coinciding(rows, variants, x, column, log_y):
    """Groups of lines drawn over one another, each a list of labels in
    drawing order (the last on top): the same points (panel and workers),
    each within HIDDEN_SHARE of its panel's x and y extent of the group's
    first line's (on the axes' scales: x is logarithmic). A reader saw one
    line where two were drawn (top-k under CLT-k in study-deft-lstm)."""
    def place(value, log):
        return math.log(value) if log else value

    # On a log axis a point at or below 0 is not drawn: its line hides
    # nothing and is hidden by nothing.
    drawn = [r for r in rows if r[x] > 0 and (r[column] > 0 or not log_y)]
    extent = {}
    for row in drawn:
        for axis, key, log in (("x", x, True), ("y", column, log_y)):
            low, high = extent.get((row["_facet"], axis), (math.inf, -math.inf))
            value = place(row[key], log)
            extent[(row["_facet"], axis)] = (min(low, value), max(high, value))

    def close(point, first, other):
        return all(abs(place(a, log) - place(b, log))
                   <= HIDDEN_SHARE * (extent[(point[0], axis)][1] - extent[(point[0], axis)][0])
                   for axis, a, b, log in (("x", first[0], other[0], True),
                                           ("y", first[1], other[1], log_y)))

    def same(first, other):
        return first in whole and other in whole and len(series[first]) > 1 \
            and series[first].keys() == series[other].keys() and all(
                close(point, series[first][point], series[other][point])
                for point in series[first])

    series = {variant: {(r["_facet"], r.get("_along")): (r[x], r[column]) for r in rows
                        if (r["_name"], r["_variant"]) == variant} for variant in variants}
    whole = {variant for variant in variants
             if len([r for r in drawn if (r["_name"], r["_variant"]) == variant])
             == len(series[variant])}
    groups, grouped = [], set()
    for i, first in enumerate(variants):
        if first in grouped:
            continue
        group = [first] + [other for other in variants[i + 1:]
                           if other not in grouped and same(first, other)]
        if len(group) > 1:
            grouped.update(group)
            groups.append([variant[1] for variant in group])
    return groups


def seeds_bars(axis, rows, x, column, colour):
    """Bars from the least to the most of a point's seeds (mean_over_seeds),
    on each axis where they differ."""
    spans = {key: [r.get("_range", {}).get(key) for r in rows] for key in (x, column)}
    if not any(any(span) for span in spans.values()):
        return

    def errors(key):
        if not any(spans[key]):
            return None
        bounds = [span or (r[key], r[key]) for r, span in zip(rows, spans[key])]
        return [[r[key] - low for r, (low, _) in zip(rows, bounds)],
                [high - r[key] for r, (_, high) in zip(rows, bounds)]]

    axis.errorbar([r[x] for r in rows], [r[column] for r in rows], xerr=errors(x),
                  yerr=errors(column), fmt="none", ecolor=colour, elinewidth=0.8, capsize=2,
                  alpha=0.8, label="_seeds")


def caption(figure, rows, gradients=False, along=False, noun="point", notes=()):
    """What a reader needs beside the axes, under the panels: what each
    point averages, how a line runs (`along` an axis other than the
    workers), (`gradients`) where its gradients came from when not all
    from a trace's captured workers, and the figure's own `notes`."""
    runs = {(int(r["iterations"]), int(r.get("warmup_iterations") or 0)) for r in rows
            if r.get("iterations")}
    lines = []
    settings = {r.get("_setting") for r in rows}
    if len(settings) == 1 and None not in settings:  # else the panels or legend tell them apart
        lines.append(settings.pop() + ".")
    if len(runs) == 1:
        iterations, warmup = runs.pop()
        if warmup:
            counted = f"of its iterations {warmup}-{iterations - 1}, the first {warmup} left " \
                      f"out as warm-up"
        else:
            counted = f"of its {iterations} iterations" if iterations > 1 else "of its iteration"
        seeds = {tuple(r["_seeds"]) for r in rows if r.get("_seeds")}
        bars = " its bars span their least to most," if noun == "point" else ""
        if len(seeds) == 1:
            seeds = seeds.pop()
            lines.append(f"Each {noun} is the mean of {len(seeds)} simulation"
                         f"{'s' if len(seeds) > 1 else ''}, seeds {', '.join(seeds)};{bars} "
                         f"each simulation the mean {counted}.")
        elif seeds:  # a grid whose points ran different seeds
            counts = sorted({len(s) for s in seeds})
            lines.append(f"Each {noun} is the mean of its simulations with different seeds "
                         f"({counts[0]} to {counts[-1]} a {noun});{bars} each simulation the "
                         f"mean {counted}.")
        else:
            lines.append(f"Each {noun} is one simulation (deterministic for its seed), the "
                         f"mean {counted}.")
    steps = [along_text(r) for r in sorted((r for r in rows if r.get("_along") is not None),
                                           key=lambda r: r["_along"])]
    if along and len(set(steps)) > 1:
        name = along_name(rows)
        joined = (f"A line joins a compressor's points from {steps[0]} to {steps[-1]} workers, "
                  f"the larger marker at {steps[-1]}." if name == "workers" else
                  f"A line joins a compressor's points from {along_label(name)} {steps[0]} to "
                  f"{steps[-1]}, the larger marker at {steps[-1]}.")
        if lines:
            lines[-1] += " " + joined
        else:
            lines.append(joined)
    sources = {result_column(r, "gradients") for r in rows if result_column(r, "gradients")}
    if gradients and "replay" in sources:
        lines.append("Replayed points (gcsim run --replay): their density and fidelity are the "
                     "recorded run's.")
        sources.discard("replay")
    # A layer spec's synthesis ("synthetic" alone: a sweep.csv from before
    # it was named, shared_heavy_signal's).
    methods = sorted({source.partition(" ")[2] or "shared_heavy_signal" for source in sources
                      if source.startswith("synthetic")})
    if gradients and methods:
        named = [method + (", fitted to a ResNet-18 capture's top-1% overlap between workers"
                           if method == "capture_fitted" else "") for method in methods]
        lines.append(f"Gradients synthetic (a layer spec, no trace: {'; '.join(named)}): "
                     "density and fidelity are the synthesizer's, not this model's.")
    elif gradients and sources - {"captured"}:
        lines.append("Points of more workers than the trace captured synthesize the others' "
                     f"gradients ({', '.join(sorted(sources - {'captured'}))}).")
    lines += notes
    put_caption(figure, lines)
    return lines


def put_caption(figure, lines):
    """`lines` under the panels' own axis labels, above the legend:
    constrained layout makes room for a supxlabel (a facet's title is the
    suptitle). Wrapped to the figure's width (about 24 characters an inch
    at 6 points): one long line widened the figure past its panels."""
    if not lines:
        return
    width = max(60, int(24 * figure.get_figwidth()))
    figure.supxlabel("\n".join(textwrap.fill(line, width) for line in lines), fontsize=6,
                     color="#555555")


def throughput_reference(axis, rows):
    """Dense's linear scaling against the workers, its level across a
    density sweep (it has no density); along another parameter dense is a
    line of its own."""
    name = along_name(rows)
    if name == "workers":
        linear_scaling(axis, rows)
    elif name == "density":
        dense_throughput(axis, rows)


def linear_scaling(axis, rows):
    dense = sorted((r["workers"], r["throughput_samples_per_s"]) for r in rows
                   if r["_variant"] == "dense" and r.get("workers") is not None
                   and r.get("throughput_samples_per_s") is not None)
    if len(dense) < 2:
        return
    p0, t0 = dense[0]
    xs = [p for p, _ in dense]
    axis.plot(xs, [t0 * p / p0 for p in xs], color="#999999", linewidth=0.8, linestyle=(0, (4, 3)),
              label="linear scaling of dense", marker=None)


def dense_throughput(axis, rows):
    """Dense's throughput across a density sweep, where it has no density."""
    levels = [r["throughput_samples_per_s"] for r in rows
              if r["_variant"] == "dense" and r.get("throughput_samples_per_s") is not None]
    if levels:
        axis.axhline(math.fsum(levels) / len(levels), color="#999999", linewidth=0.8,
                     linestyle=(0, (4, 3)), label="dense")


def throughput_figure(rows, out, written):
    if not (has(rows, "throughput_samples_per_s") and has(rows, "workers")):
        return "no throughput_samples_per_s or workers column"
    return line_figure(rows, out, "throughput", "throughput_samples_per_s",
                       "throughput (samples/s)", written, log_y="auto",
                       reference=throughput_reference)


def kernel_columns(rows):
    """Per-kernel compression times, when the results split compression_s:
    the exposed ones (the most loaded worker's kernel time after the backward
    pass) where the results have them, otherwise the per-worker means."""
    names, exposed = set(), set()
    for row in rows:
        for key, value in row.items():
            if value is None or not is_kernel_column(key):
                continue
            (exposed if key.startswith(EXPOSED_KERNELS) else names).add(key)
    return sorted(exposed) if exposed else sorted(names)


def kernel_name(column):
    label = column.split(".")[-1]
    return label[:-2] if label.endswith("_s") else label


def kernel_label(column):
    return kernel_name(column).replace("_", " ")


def kernel_colours(columns):
    """Each kernel column's colour: its kernel's own; a kernel of another
    name takes the first colour no column of the figure has."""
    colours = {c: KERNEL_COLOUR[kernel_name(c)] for c in columns if kernel_name(c) in KERNEL_COLOUR}
    free = [c for c in KERNEL_COLOURS if c not in colours.values()]
    for i, column in enumerate(c for c in columns if c not in colours):
        colours[column] = free[i % len(free)] if free else KERNEL_COLOURS[i % len(KERNEL_COLOURS)]
    return colours


def compression_shown(row):
    """The compression time the breakdown stacks: the exposed part when the
    results have it, the kernels' mean otherwise."""
    exposed = row.get("compression_exposed_s")
    return exposed if exposed is not None else (row.get("compression_s") or 0.0)


# compute_s holds the optimizer step too (README, "What result.json holds").
COMPUTE_LABEL = "compute (fwd + bwd + optimizer)"
STRAGGLER_LABEL = "waiting for the slowest worker"
STRAGGLER_COLOUR = "#888888"


# A kernel under this share of a figure's tallest bar in every bar (a few
# pixels) is drawn in "compression, other": the legend listed eleven
# kernels no bar showed.
SMALLEST_KERNEL_SHARE = 0.01
FOLDED_LABEL = f"compression, other (kernels each under {SMALLEST_KERNEL_SHARE:.0%} of the " \
               f"tallest bar)"


def breakdown_segments(rows, kernels, folded=False):
    """[(label, colour, seconds per row)] stacked bottom to top; they add up
    to each row's iteration_time_s (compute + straggler wait + exposed
    compression + communication, README "What result.json holds"). The
    wait was left out, and bars with stragglers fell short of the iteration.
    `folded`: kernels left out of `kernels` for their size are in the
    compression time that no listed kernel has."""
    segments = [(COMPUTE_LABEL, COMPUTE_COLOUR, [r["compute_s"] for r in rows])]
    if any(r.get("straggler_wait_s") for r in rows):
        segments.append((STRAGGLER_LABEL, STRAGGLER_COLOUR,
                         [r.get("straggler_wait_s") or 0.0 for r in rows]))
    # The kernels' exposed time: the most loaded worker's kernel time after
    # the backward pass (per-bucket kernels that ran beside it are hidden; a
    # leader's selection counts once, in full).
    split = [sum(r.get(k) or 0.0 for k in kernels) for r in rows]
    # Where the figure lists kernels, a panel whose kernels are all too
    # small draws them as the rest too: as "compression kernels" it took
    # the first kernel's colour.
    if kernels and (any(split) or folded):
        colours = kernel_colours(kernels)
        for column in kernels:
            segments.append((f"kernel: {kernel_label(column)}", colours[column],
                             [r.get(column) or 0.0 for r in rows]))
        rest = [max(compression_shown(r) - s, 0.0) for r, s in zip(rows, split)]
        if any(v > 1e-12 for v in rest):
            segments.append((FOLDED_LABEL if folded else "compression, other", "#DDDDDD", rest))
    elif any(r.get("compression_s") for r in rows):
        segments.append(("compression kernels", KERNEL_COLOURS[0],
                         [compression_shown(r) for r in rows]))
    segments.append(("exposed communication", COMMUNICATION_COLOUR,
                     [r.get("communication_s") or 0.0 for r in rows]))
    return segments


def time_breakdown_figure(rows, out, written):
    if not (has(rows, "compute_s") and has(rows, "communication_s") and has(rows, "workers")):
        return "no compute_s, communication_s or workers column"
    every_kernel = kernel_columns(rows)
    drawn = 0
    for facet in facets_of(rows):
        here = [r for r in rows if r["_facet"] == facet and r.get("compute_s") is not None
                and r.get("workers") is not None]
        if not here:
            continue
        drawn += 1
        variants = ordered_variants(here)
        longest = max((r.get("iteration_time_s") or 0.0) for r in here)
        longest = max([longest] + [sum(column) for column in zip(
            *(values for _, _, values in breakdown_segments(here, every_kernel)))])
        kernels = [k for k in every_kernel
                   if max(r.get(k) or 0.0 for r in here) >= SMALLEST_KERNEL_SHARE * longest]
        folded = any(r.get(k) for k in every_kernel if k not in kernels for r in here)
        scale, unit = (1e3, "ms") if longest < 1.0 else (1.0, "s")
        # One y scale for all panels, so compressors compare at a glance.
        figure, axes = panels(len(variants), "one per compressor", width=2.6, height=2.3,
                              sharey=True)
        for number_, (axis, variant) in enumerate(zip(axes, variants)):
            mine = sorted((r for r in here if (r["_name"], r["_variant"]) == variant),
                          key=lambda r: r.get("_along") or 0)
            # Dense has no density: its bar stands alone in a density sweep.
            labels = [along_text(r) if r.get("_along") is not None else "" for r in mine]
            xs = list(range(len(mine)))
            bottom = [0.0] * len(mine)

            def stack(values, colour, label):
                heights = [(v or 0.0) * scale for v in values]
                axis.bar(xs, heights, 0.7, bottom=bottom, color=colour, label=label,
                         edgecolor="white", linewidth=0.4)
                for i, h in enumerate(heights):
                    bottom[i] += h

            for label, colour, values in breakdown_segments(mine, kernels, folded):
                stack(values, colour, label)
            axis.set_xticks(xs, labels)
            if any(labels):
                axis.set_xlabel(along_label(along_name(mine)))
            if number_ % 3 == 0:
                axis.set_ylabel(f"time per iteration ({unit})")
            axis.grid(axis="x", visible=False)
            axis.set_axisbelow(True)
            colour, _ = style_of(variant[0])
            axis.set_title(variant[1], color="#000000" if colour in OUTLINED else colour)
        if facet:
            figure.suptitle(facet_title(facet), fontsize=8)
        order = ([COMPUTE_LABEL, STRAGGLER_LABEL] + [f"kernel: {kernel_label(k)}" for k in kernels]
                 + ["compression, other", FOLDED_LABEL, "compression kernels",
                    "exposed communication"])
        legend_below(figure, axes, order)
        caption(figure, here, noun="bar")
        # A run of other characters is one "-" (": " of an object's pairs), and
        # none at the end; a "-" of the value stays (-1 and 1 are two files).
        stem = "time_breakdown" + "".join(
            "_" + re.sub(r"(?:[^\w.+-]|_)+", "-", re.sub(
                r"(?:[^\w.+-]|_)+$", "", f"{k.split('.')[-1]}-{short_value(v)}"))
            for k, v in facet)
        # A long value (an object without a name) made a name past the
        # file system's 255 bytes: cut, with a hash to keep it apart.
        if len(stem) > 150:
            stem = stem[:120] + "-" + hashlib.sha256(stem.encode()).hexdigest()[:12]
        save(figure, out, stem, written)
    return None if drawn else "no row has both compute_s and workers"


def density_figure(rows, out, written):
    if not has(rows, "density_after_aggregation"):
        return "no density_after_aggregation column (dense-only results)"
    return line_figure(rows, out, "density", "density_after_aggregation",
                       "density after aggregation", written, log_y="auto")


def add_compression_ratio(rows):
    """compression_ratio = dense bytes / sent bytes, from the results or a matching dense row."""
    if has(rows, "compression_ratio"):
        return True
    dense = {(r["_facet"], r.get("workers")): r.get("bytes_sent_per_worker")
             for r in rows if r["_variant"] == "dense"}
    found = False
    for row in rows:
        sent = row.get("bytes_sent_per_worker")
        reference = dense.get((row["_facet"], row.get("workers")))
        if sent and reference:
            row["compression_ratio"] = reference / sent
            found = True
    return found


def fidelity_figure(rows, out, written):
    metrics = [(c, label) for c, label in (
        ("fidelity.cosine", "cosine similarity to dense"),
        ("fidelity.rel_l2", "relative L2 error vs dense")) if has(rows, c)]
    if not metrics:
        return "no fidelity.cosine or fidelity.rel_l2 column (dense-only results)"
    if not add_compression_ratio(rows):
        return "no compression_ratio column and no dense rows to compute it from"
    reasons = []
    for column, label in metrics:
        stem = "fidelity" if column == "fidelity.cosine" else "fidelity_rel_l2"
        reasons.append(line_figure(rows, out, stem, column, label, written, x="compression_ratio",
                                   xlabel="compression ratio (dense bytes / sent bytes)"))
    return "; ".join(r for r in reasons if r) or None


def speedup_figure(rows, out, written):
    if not (has(rows, "speedup_vs_dense") and has(rows, "workers")):
        return "no speedup_vs_dense column"
    return line_figure(rows, out, "speedup", "speedup_vs_dense", "speedup over dense (x)",
                       written, reference=dense_level)


def dense_level(axis, rows):
    """Speed-up 1: dense's own pace, which a compressor must pass to pay."""
    axis.axhline(1.0, color="#999999", linewidth=0.8, linestyle=(0, (4, 3)), label="dense (1x)")


FIGURES = [("throughput", throughput_figure), ("time_breakdown", time_breakdown_figure),
           ("density", density_figure), ("fidelity", fidelity_figure),
           ("speedup", speedup_figure)]


# ---------------------------------------------------------------- validation

# Collectives are open markers in colours no compressor uses; training
# iterations are filled, in their compressor's colour and marker.
COLLECTIVE_STYLE = {
    "allreduce": ("#332288", "o"),
    "allreduce/tree": ("#88CCEE", "s"),
    "allreduce/float16": ("#999933", "p"),
    "allgather": ("#117733", "^"),
    "broadcast": ("#AA4499", "v"),
    "broadcast/ring": ("#CC6677", "D"),
}


def validation_points(report):
    """(kind label, measured_s, simulated_s, filled, colour, marker) per point."""
    points = []
    for c in report.get("collectives", []):
        # gcsim names a point's kind ("allreduce/tree"); comparisons made
        # before it did hold the default algorithms only.
        kind = c["label"] if "label" in c else c["collective"]
        colour, marker = COLLECTIVE_STYLE.get(kind, style_of(kind))
        points.append((kind, c["measured_s"], c["simulated_s"], False, colour, marker))
    for t in report.get("training", []):
        if not t.get("simulated"):
            continue
        name = t["compressor"]["name"]
        colour, marker = style_of(name)
        points.append((f"{name} iteration", t["measured"]["iteration_s"],
                       t["simulated"]["iteration_s"], True, colour, marker))
    return points


def validation_title(report):
    platform = report.get("platform", {})
    source = platform.get("source", "")
    on = "fitted platform" if source == "the fit" else source
    return f"{report.get('name', '?')} ({on})"


def validation_panels(count, height):
    """A panel per comparison, two columns for two or four (the 4- and 8-node
    runs at two rates side by side)."""
    columns = 2 if count in (2, 4) else min(count, 3)
    rows = math.ceil(count / columns)
    figure, grid = plt.subplots(rows, columns, figsize=(3.0 * columns, height * rows),
                                squeeze=False, layout="constrained")
    for extra in grid.flat[count:]:
        extra.set_visible(False)
    return figure, list(grid.flat[:count])


def validation_figure(reports, out, stem, written):
    figure, axes = validation_panels(len(reports), 2.9)
    for axis, report in zip(axes, reports):
        points = validation_points(report)
        values = [v for p in points for v in p[1:3] if v > 0]
        if not values:
            axis.set_title(validation_title(report) + ": no points")
            continue
        low, high = min(values) / 1.6, max(values) * 1.6
        line = [low, high]
        axis.fill_between(line, [v / 1.1 for v in line], [v * 1.1 for v in line],
                          color="#E4E4E4", linewidth=0, label="within 10%")
        axis.plot(line, line, color="#777777", linewidth=0.8, linestyle="--", label="y = x")
        for label, measured, simulated, filled, colour, marker in points:
            edge = "#000000" if colour in OUTLINED else colour
            axis.scatter([measured], [simulated], marker=marker, s=22, linewidths=0.9,
                         facecolors=colour if filled else "none", edgecolors=edge,
                         label=label, zorder=3)
        axis.set_xscale("log")
        axis.set_yscale("log")
        for scale in (axis.xaxis, axis.yaxis):
            plain_log_ticks(scale, subs=(1.0,))
        axis.set_xlim(low, high)
        axis.set_ylim(low, high)
        axis.set_aspect("equal")
        axis.set_xlabel("measured (s)")
        axis.set_ylabel("simulated (s)")
        axis.set_title(validation_title(report))
    order = ["y = x", "within 10%"] + list(COLLECTIVE_STYLE) + [
        f"{name} iteration" for name in STYLE]
    legend_below(figure, axes, order)
    if any(report.get("platform", {}).get("source") == "the fit" for report in reports):
        # A reader must know which comparisons are in-sample (the rule is
        # sim/validate/fit.cpp's, as `gcsim validate --fit` reports it).
        float16 = any(report.get("fit", {}).get("float16_points_shown", 0) > 0
                      for report in reports)
        put_caption(figure, [
            "On a fitted platform the ring allreduce and allgather points are the fit's own "
            "(alpha from those under 1 MiB, bandwidth from those of 4 MiB and more)"
            + (", and the float16 allreduces the float16 sum's where it was fitted to them"
               if float16 else "")
            + ": in sample. The broadcasts, the ring points from 1 MiB to under 4 MiB and the "
            "training iterations are predictions."])
    save(figure, out, stem, written)


# An iteration's phases as `gcsim validate` compares them; what they leave
# (where a simulation's parts do not add up) is "the rest".
PHASES = [("compute_s", "compute", COMPUTE_COLOUR), ("compression_s", "compression", KERNEL_COLOURS[0]),
          ("communication_s", "communication", COMMUNICATION_COLOUR)]


def compared_phases(run, side):
    """{phase key: seconds} of `run`'s `side` as validate's errors compare
    them. Measured: compute is forward, backward and the optimizer, and
    communication what the iteration has beyond compute and compression
    (rest_of_iteration_s), as the simulation's is taken; the collectives'
    own call time (communication_s) overlaps the backward pass in a DDP
    run, and stacked on it made a bar taller than the iteration."""
    phases = run[side]
    if side == "simulated":
        return {key: phases.get(key) or 0.0 for key, _, _ in PHASES}
    compression = 0.0 if run["compressor"]["name"] == "dense" else phases.get("compression_s") or 0.0
    compute = (phases.get("compute_s") or 0.0) + (phases.get("optimizer_s") or 0.0)
    rest = phases.get("rest_of_iteration_s")
    if rest is None:  # a comparison written before it was reported
        rest = max(phases["iteration_s"] - compute - compression, 0.0)
    return {"compute_s": compute, "compression_s": compression, "communication_s": rest}


def validation_phases_figure(reports, out, stem, written):
    """Measured against simulated iterations by phase; None, or why not drawn."""
    shown = [(r, [t for t in r.get("training", []) if t.get("simulated")]) for r in reports]
    shown = [(r, runs) for r, runs in shown if runs]
    if not shown:
        return "no training runs with a simulation"
    longest = max(t[side]["iteration_s"] for _, runs in shown for t in runs
                  for side in ("measured", "simulated"))
    scale, unit = (1e3, "ms") if longest < 1.0 else (1.0, "s")
    figure, axes = validation_panels(len(shown), 2.4)
    for axis, (report, runs) in zip(axes, shown):
        for i, run in enumerate(runs):
            # Measured on the left, plain; simulated on the right, hatched.
            for x, side, hatch in ((2.5 * i - 0.5, "measured", None),
                                   (2.5 * i + 0.5, "simulated", "////")):
                phases = compared_phases(run, side)
                heights = [phases[key] * scale for key, _, _ in PHASES]
                heights.append(max(run[side]["iteration_s"] * scale - sum(heights), 0.0))
                bottom = 0.0
                for height, (_, label, colour) in zip(heights, PHASES + [("", "the rest", "#DDDDDD")]):
                    axis.bar([x], [height], 0.95, bottom=bottom, color=colour, label=label,
                             hatch=hatch, edgecolor="white", linewidth=0.4)
                    bottom += height
        for side, hatch in (("measured (left)", None), ("simulated (right)", "////")):
            axis.bar([0], [0], 0, color="white", edgecolor="#555555", hatch=hatch, label=side)
        axis.set_xticks([2.5 * i for i in range(len(runs))], [run["name"] for run in runs])
        axis.set_ylabel(f"time per iteration ({unit})")
        axis.grid(axis="x", visible=False)
        axis.set_axisbelow(True)
        axis.set_title(validation_title(report))
    legend_below(figure, axes, [label for _, label, _ in PHASES]
                 + ["the rest", "measured (left)", "simulated (right)"])
    save(figure, out, stem, written)
    return None


def check_report(path, report):
    """Exit 2 naming the file and the field unless every value the two
    validation figures read is there and of its type."""

    def bad(where, what):
        raise BadInput(f"{path}: {where}: {what}")

    def seconds(where, value, optional=False):
        if optional and value is None:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            bad(where, f"expected seconds, got {json_kind(value)}")
        if not (math.isfinite(value) and 0 <= value <= 1e9):
            bad(where, f"{value} seconds is out of range (0 to 1e9)")

    def an_object(where, value):
        if not isinstance(value, dict):
            bad(where, f"expected an object, got {json_kind(value)}")
        return value

    def a_name(where, value):
        if not isinstance(value, str) or not value:
            bad(where, f"expected a name, got {json_kind(value) if value != '' else 'an empty one'}")

    if "collectives" not in report or "error_measure" not in report:
        raise BadInput(f"{path}: not a `gcsim validate --json` comparison (no collectives or error_measure)")
    if not isinstance(report["collectives"], list):
        bad("/collectives", f"expected a list, got {json_kind(report['collectives'])}")
    for i, c in enumerate(report["collectives"]):
        where = f"/collectives/{i}"
        an_object(where, c)
        if "label" in c:
            a_name(f"{where}/label", c["label"])
        else:
            a_name(f"{where}/collective", c.get("collective"))
        for key in ("measured_s", "simulated_s"):
            seconds(f"{where}/{key}", c.get(key))
    training = report.get("training", [])
    if not isinstance(training, list):
        bad("/training", f"expected a list, got {json_kind(training)}")
    for i, t in enumerate(training):
        where = f"/training/{i}"
        an_object(where, t)
        if not t.get("simulated"):
            continue
        a_name(f"{where}/name", t.get("name"))
        compressor = an_object(f"{where}/compressor", t.get("compressor"))
        a_name(f"{where}/compressor/name", compressor.get("name"))
        for side in ("measured", "simulated"):
            phases = an_object(f"{where}/{side}", t.get(side))
            seconds(f"{where}/{side}/iteration_s", phases.get("iteration_s"))
            for key in [key for key, _, _ in PHASES] + ["optimizer_s", "rest_of_iteration_s"]:
                seconds(f"{where}/{side}/{key}", phases.get(key), optional=True)
    fit = an_object("/fit", report.get("fit", {}))
    shown = fit.get("float16_points_shown", 0)
    if isinstance(shown, bool) or not isinstance(shown, int) or shown < 0:
        bad("/fit/float16_points_shown", f"expected a count, got {json_kind(shown)}")
    platform = an_object("/platform", report.get("platform", {}))
    if not isinstance(platform.get("source", ""), str):
        bad("/platform/source", f"expected a string, got {json_kind(platform['source'])}")
    if not isinstance(report.get("name", ""), str):
        bad("/name", f"expected a string, got {json_kind(report['name'])}")


def validation_main(inputs, out, stem):
    if len(inputs) > MOST_PANELS:
        raise BadInput(f"{len(inputs)} comparisons: a figure holds a panel for each, at most "
                       f"{MOST_PANELS}")
    reports = []
    for path in inputs:
        report = read_json_object(path)
        check_report(path, report)
        reports.append(report)
    setup_matplotlib()
    written = Written()
    with figures_folder(out, written):
        # Every figure can be written, and over no input, before the first
        # is (a folder named STEM-phases.pdf left STEM.pdf and STEM.png).
        for name in (stem, stem + "-phases"):
            for extension in ("pdf", "png"):
                path = os.path.join(out, f"{name}.{extension}")
                check_output_file(path, "--out")
                refuse_output_over_inputs(path, inputs, "--out")
        validation_figure(reports, out, stem, written)
        skipped = validation_phases_figure(reports, out, stem + "-phases", written)
    if skipped:
        print(f"skipped {stem}-phases: {skipped}")
    for path in written:
        print(f"wrote {path}")
    return 0


def main(argv):
    parser = Parser(summary_of=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="+",
                        help="a sweep folder, a sweep.csv, or result.json files / point folders")
    parser.add_argument("--out", help="folder for the figures (default: <input>/figures; "
                        "with --validation: the first input's folder)")
    parser.add_argument("--validation", action="store_true",
                        help="inputs are `gcsim validate --json` comparisons: simulated vs "
                             "measured, and training iterations by phase")
    parser.add_argument("--stem", default="validation",
                        help="with --validation: the figure's file name without extension "
                             "(the phase figure adds -phases)")
    args = parser.parse_args(argv)
    if args.out == "":
        parser.error("--out: an empty path")
    if not args.stem or "/" in args.stem or args.stem in (".", ".."):
        parser.error(f"--stem {args.stem!r}: expected a file name without a folder")
    if args.validation:
        out = args.out or os.path.dirname(os.path.abspath(args.inputs[0]))
        # Refused now, not as the first figure is written: the phases
        # figure's name (and its temporary's) is the longest.
        most = longest_name(out, ".pdf") - len("-phases.pdf")
        if len(os.fsencode(args.stem)) > most:
            parser.error(f"--stem: {len(os.fsencode(args.stem))} bytes: too long for a file name "
                         f"in {out}, where a stem may have {max(most, 0)} at most")
        return validation_main(args.inputs, out, args.stem)

    rows, params, base = load(args.inputs)
    rows, params = mean_over_seeds(rows, params)
    annotate(rows, params)
    out = args.out or os.path.join(base, "figures")
    setup_matplotlib()
    csv_path = sweep_csv(args.inputs)
    written = Written(sweep_source(csv_path) if csv_path else None)
    with figures_folder(out, written):
        for name, draw in FIGURES:
            try:
                reason = draw(rows, out, written)
            except TooManyPanels as error:
                plt.close("all")
                reason = str(error)
            if reason:
                print(f"skipped {name}: {reason}")
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    run_script(main, sys.argv[1:])
