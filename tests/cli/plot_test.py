#!/usr/bin/python3
"""Checks of scripts/plot.py on generated sweep tables: every figure is written
as a non-empty PDF and PNG when its columns exist, figures whose columns are
absent are skipped with a message, result.json files work as input, and the
colours of compressors are fixed. Bad input (a missing, empty, malformed or
non-UTF-8 file, wrong fields, negative numbers, unknown options) is exit 2
with one line naming it and no figures folder; an output folder that cannot
be made is exit 1 with one line. scripts/plot_profile.py draws a shipped
device profile and refuses bad ones the same way.

Usage: plot_test.py   (runs scripts/plot.py with Debian's /usr/bin/python3)
"""
import contextlib
import csv
import hashlib
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks, refusal_problems  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PLOT = os.path.join(ROOT, "scripts", "plot.py")
PLOT_PROFILE = os.path.join(ROOT, "scripts", "plot_profile.py")
PYTHON = "/usr/bin/python3"
COMPRESSORS = ["dense", "topk", "gtopk", "dgc", "randomk", "cltk", "sketched_sgd", "gs_sgd",
               "deft", "iwp"]
WORKERS = [2, 8, 64]

check = Checks()


def synthetic_rows(full):
    """Rows shaped like sweep.csv; `full` adds the compression-aware columns."""
    rows = []
    index = 0
    for bandwidth in ["1Gbps", "10Gbps"]:
        for compressor in COMPRESSORS if full else ["dense"]:
            for workers in WORKERS:
                dense = compressor == "dense"
                density = 1.0 if dense else 0.01 * (1 + math.log2(workers) / 4)
                gradient = 44.7e6
                sent = 2 * (workers - 1) / workers * gradient * (1 if dense else density * 2)
                link = 1.25e8 if bandwidth == "1Gbps" else 1.25e9
                compute = 0.05
                kernel_topk = 0.0 if dense else 0.004
                kernel_pack = 0.0 if dense else 0.001
                communication = sent / link * 0.6
                iteration = compute + kernel_topk + kernel_pack + communication
                spec = {"name": compressor} if dense else {"name": compressor, "density": 0.01}
                row = {
                    "point": f"p{index:03d}_bandwidth-{bandwidth}_compressor-{compressor}_nodes-{workers}",
                    "platform.link.bandwidth": bandwidth,
                    "compressor": json.dumps(spec, separators=(",", ":")),
                    "platform.nodes": workers,
                    "command": f"build/gcsim run x.json --set platform.nodes={workers}",
                    "compressor_name": compressor,
                    "gcsim_commit": "0123456789ab-dirty",
                    "workers": workers,
                    "iteration_time_s": iteration,
                    "throughput_samples_per_s": workers * 128 / iteration,
                    "compute_s": compute,
                    "compression_s": kernel_topk + kernel_pack,
                    "communication_s": communication,
                    "bytes_sent_per_worker": sent,
                }
                if full:
                    row.update({
                        "compression_kernels_s.topk_select": kernel_topk,
                        "compression_kernels_s.sparse_pack": kernel_pack,
                        "density_after_aggregation": density,
                        "fidelity.cosine": 1.0 if dense else 0.7 + 0.02 * math.log2(workers),
                        "fidelity.rel_l2": 0.0 if dense else 0.5 - 0.02 * math.log2(workers),
                        "speedup_vs_dense": 1.0 if dense else 1.5,
                    })
                rows.append(row)
                index += 1
    return rows


def write_csv(path, rows):
    columns = list(rows[0])
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        writer.writerows(rows)


def draw_every_figure(table, work):
    """(drawn {stem: figure}, rows, facets) of every sweep figure of the
    sweep.csv `table` makes, drawn in this process without saving."""
    write_csv(os.path.join(work, "sweep.csv"), table)
    rows, params, _ = plot_module.load([os.path.join(work, "sweep.csv")])
    facets = plot_module.annotate(rows, params)
    drawn = {}
    real_save = plot_module.save
    plot_module.save = lambda figure, out, stem, written: drawn.__setitem__(stem, figure)
    try:
        for _, draw in plot_module.FIGURES:
            draw(rows, work, plot_module.Written())
    finally:
        plot_module.save = real_save
    return drawn, rows, params, facets


def plot(*args, script=PLOT, cwd=None, env=None):
    return subprocess.run([PYTHON, script, *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env=env)


def styled_environment(work):
    """(cwd, env) of a user whose matplotlib settings would change the
    figures or end the script: a matplotlibrc in the working folder, a
    backend that is none, a SOURCE_DATE_EPOCH that is no number, and a home
    folder where matplotlib cannot keep its settings (five lines of warning)."""
    folder = os.path.join(work, "styled")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "matplotlibrc"), "w") as handle:
        handle.write("lines.linewidth: 5\nfont.size: 20\n")
    environment = dict(os.environ, MPLBACKEND="nonsense", SOURCE_DATE_EPOCH="notanumber",
                       HOME="/proc")
    for name in ("XDG_CONFIG_HOME", "MPLCONFIGDIR"):
        environment.pop(name, None)
    return folder, environment


def refused(result, what, needles=(), status=2, absent=()):
    """A check that `result` refused well: `status`, one line on stderr with
    the needles, no traceback, and none of the `absent` paths made."""
    problems = refusal_problems(result, needles, status)
    problems += [f"{os.path.basename(path)} was made" for path in absent if os.path.exists(path)]
    check(not problems, f"{what}: {'; '.join(problems) or f'exit {status}, one line'}")


def non_empty(path, magic):
    if not os.path.isfile(path) or os.path.getsize(path) < 1000:
        return False
    with open(path, "rb") as handle:
        return handle.read(len(magic)) == magic


# A figure of more panels than fit (391 ended the script in a traceback,
# the PDF written and not the PNG) is skipped, saying why; a facet named by
# a long value (an object without a name) made a file name past 255 bytes.
with tempfile.TemporaryDirectory() as work:
    base = synthetic_rows(full=False)[:len(WORKERS)]
    many = []
    for i in range(61):
        for row in base:
            many.append(dict(row, **{"platform.link.bandwidth": f"{i + 1}Gbps",
                                     "point": f"{row['point']}-{i}"}))
            del many[-1]["compute_s"]  # no time breakdowns: 61 figures of one panel
    write_csv(os.path.join(work, "sweep.csv"), many)
    result = plot(work, "--out", os.path.join(work, "many"))
    check(result.returncode == 0 and "skipped throughput: 61 panels" in result.stdout
          and not os.path.exists(os.path.join(work, "many", "throughput.pdf")),
          f"61 panels: the figure skipped, saying why ({result.returncode}: "
          f"{result.stdout[-300:]!r} {result.stderr.strip()[-300:]!r})")
    # Saved again by a spreadsheet: a byte-order mark before the header.
    write_csv(os.path.join(work, "sweep.csv"), base)
    with open(os.path.join(work, "sweep.csv"), "rb") as handle:
        table = handle.read()
    with open(os.path.join(work, "sweep.csv"), "wb") as handle:
        handle.write(b"\xef\xbb\xbf" + table)
    result = plot(work, "--out", os.path.join(work, "bom"))
    check(result.returncode == 0
          and os.path.exists(os.path.join(work, "bom", "throughput.png")),
          f"a sweep.csv with a byte-order mark plots ({result.returncode}: "
          f"{result.stderr.strip()[-200:]!r})")
    long_value = json.dumps({"bandwidth": "10Gbps", "latency": "5us", "comment": "x" * 300})
    longer = [dict(row, **{"platform.link.bandwidth": value, "point": f"{row['point']}-{n}"})
              for n, value in enumerate(["1Gbps", long_value]) for row in base]
    write_csv(os.path.join(work, "sweep.csv"), longer)
    result = plot(work, "--out", os.path.join(work, "long"))
    names = os.listdir(os.path.join(work, "long")) if result.returncode == 0 else []
    check(result.returncode == 0
          and sum(name.startswith("time_breakdown") for name in names) == 4
          and max(len(name) for name in names) <= 200,
          f"a long facet value: every figure written, names within 200 bytes "
          f"({result.returncode}: {sorted(names)} {result.stderr.strip()[-300:]!r})")
    # A grid over a whole object without a name (`gradients`) is named by its
    # pairs, not by its JSON's punctuation ("_" separates facets in a name).
    # (In the grid's place, between point and command: the bandwidth's.)
    synthesis = [{("gradients" if key == "platform.link.bandwidth" else key):
                  (json.dumps({"synthesis": value}) if key == "platform.link.bandwidth" else
                   f"{item}-{value}" if key == "point" else item)
                  for key, item in row.items()}
                 for value in ("mean_scaling", "blockwise_shuffle") for row in base]
    write_csv(os.path.join(work, "sweep.csv"), synthesis)
    result = plot(work, "--out", os.path.join(work, "object"))
    names = sorted(os.listdir(os.path.join(work, "object"))) if result.returncode == 0 else []
    wanted = [f"time_breakdown_gradients-synthesis-{value}.{extension}"
              for value in ("blockwise-shuffle", "mean-scaling") for extension in ("pdf", "png")]
    check(all(name in names for name in wanted),
          f"a facet of objects without a name: figures named by their pairs "
          f"({result.returncode}: {names} {result.stderr.strip()[-300:]!r})")

with tempfile.TemporaryDirectory() as work:
    full = os.path.join(work, "full")
    os.makedirs(full)
    write_csv(os.path.join(full, "sweep.csv"), synthetic_rows(full=True))
    out = os.path.join(work, "figures-full")
    result = plot(full, "--out", out)
    check(result.returncode == 0, f"plot.py on a full sweep exits 0 ({result.stderr.strip()[-300:]})")
    stems = ["throughput", "density", "fidelity", "fidelity_rel_l2", "speedup",
             "time_breakdown_bandwidth-1Gbps", "time_breakdown_bandwidth-10Gbps"]
    for stem in stems:
        check(non_empty(os.path.join(out, stem + ".png"), b"\x89PNG"), f"{stem}.png is a PNG")
        check(non_empty(os.path.join(out, stem + ".pdf"), b"%PDF"), f"{stem}.pdf is a PDF")
    check("skipped" not in result.stdout, "nothing is skipped when every column exists")

    dense_only = os.path.join(work, "dense.csv")
    write_csv(dense_only, synthetic_rows(full=False))
    out = os.path.join(work, "figures-dense")
    result = plot(dense_only, "--out", out)
    check(result.returncode == 0, "plot.py on a dense-only table (given as a CSV path) exits 0")
    # The same table gives the same PDF (no creation date inside), whatever
    # the user's matplotlib settings.
    again = os.path.join(work, "figures-again")
    styled, environment = styled_environment(work)
    styled_result = plot(dense_only, "--out", again, cwd=styled, env=environment)
    with open(os.path.join(out, "throughput.pdf"), "rb") as a, \
            open(os.path.join(again, "throughput.pdf"), "rb") as b:
        check(a.read() == b.read() and not styled_result.stderr,
              "the same table gives a byte-identical PDF, under a matplotlibrc, a wrong "
              f"MPLBACKEND and SOURCE_DATE_EPOCH, and a home of no room, without a word on "
              f"stderr: {styled_result.stderr[:200]!r}")
    check("skipped density" in result.stdout and "skipped fidelity" in result.stdout,
          "figures without their columns are skipped with a message")
    check(non_empty(os.path.join(out, "throughput.png"), b"\x89PNG"),
          "throughput is drawn from dense-only results")
    check(not os.path.exists(os.path.join(out, "density.png")), "no empty density figure")

    # result.json files as input: parameters are the scenario fields that differ.
    results = []
    for workers in [2, 4, 8]:
        folder = os.path.join(work, "points", f"n{workers}")
        os.makedirs(folder)
        summary = {"workers": workers, "iteration_time_s": 0.1 + 0.01 * workers,
                   "compute_s": 0.1, "compression_s": 0.0, "communication_s": 0.01 * workers,
                   "throughput_samples_per_s": workers * 128 / (0.1 + 0.01 * workers)}
        with open(os.path.join(folder, "result.json"), "w") as handle:
            json.dump({"scenario": {"name": "q", "platform": {"nodes": workers},
                                    "compressor": {"name": "dense"}}, "summary": summary}, handle)
        results.append(os.path.join(folder, "result.json"))
    out = os.path.join(work, "figures-results")
    result = plot(*results, "--out", out)
    check(result.returncode == 0 and non_empty(os.path.join(out, "throughput.png"), b"\x89PNG"),
          "result.json files are accepted as input")
    check(non_empty(os.path.join(out, "time_breakdown.png"), b"\x89PNG"),
          "the time breakdown has no facet suffix without facets")
    # A run that spells out a default (training.overlap, a bucket size in
    # other units, 0 as 0.0, a compressor's variant) is the same setting as
    # one that leaves it to the run: each result's model says what ran. They
    # were other panels, titled with a blank ("overlap = ").
    for path, spelled in zip(results, (False, True, False)):
        with open(path) as handle:
            document = json.load(handle)
        document["model"] = {"training": {"overlap": True, "bucket_size_bytes": 26214400,
                                          "compute_variation": 0.0, "iterations": 2},
                             "compressor_params": {"density": 0.01, "variant": "allgather_pairs",
                                                   "error_feedback": True}}
        document["scenario"]["compressor"] = {"name": "topk", "density": 0.01}
        if spelled:
            document["scenario"]["training"] = {"overlap": True, "bucket_size": "25MiB",
                                                "compute_variation": 0}
            document["scenario"]["compressor"]["variant"] = "allgather_pairs"
        with open(path, "w") as handle:
            json.dump(document, handle)
    out = os.path.join(work, "figures-defaults")
    result = plot(*results, "--out", out)
    check(result.returncode == 0 and sorted(os.listdir(out)) == sorted(os.listdir(
              os.path.join(work, "figures-results"))),
          f"a default spelled out in one result is no facet: {sorted(os.listdir(out))}")
    # Nor a default no result wrote: only the fields a scenario gives are
    # looked up (a legend once listed every default of the compressor).
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import plot as plot_module  # noqa: E402
    _, params = plot_module.read_results(results)
    check(params == ["platform.nodes"], f"the parameters are the grid's own: {params}")

    # Whole platform objects as grid values set the worker count: they are
    # the x axis, not one panel each.
    rows = synthetic_rows(full=False)[:len(WORKERS)]
    for row in rows:
        row["platform.nodes"] = json.dumps({"name": f"cluster-{row['workers']}",
                                            "nodes": row["workers"]})
    platforms = os.path.join(work, "platforms.csv")
    write_csv(platforms, [{("platform" if k == "platform.nodes" else k): v
                           for k, v in row.items()} for row in rows])
    out = os.path.join(work, "figures-platforms")
    result = plot(platforms, "--out", out)
    check(result.returncode == 0 and os.path.isfile(os.path.join(out, "time_breakdown.png")),
          "a parameter that sets the worker count makes no panels or extra files")

    # Cells a point lacks are empty: a panel of them is left out, not a
    # crash. (Its worker count every point has: refused below.)
    rows = synthetic_rows(full=False)
    for row in rows:
        if row["platform.link.bandwidth"] == "10Gbps":
            row["compute_s"] = ""
    rows[0]["communication_s"] = ""
    holes = os.path.join(work, "holes.csv")
    write_csv(holes, rows)
    out = os.path.join(work, "figures-holes")
    result = plot(holes, "--out", out)
    drawn = os.path.join(out, "time_breakdown_bandwidth-1Gbps.png")
    left_out = os.path.join(out, "time_breakdown_bandwidth-10Gbps.png")
    check(result.returncode == 0 and os.path.isfile(drawn) and not os.path.exists(left_out)
          and not result.stderr,
          f"empty cells a point lacks are drawn around, their panel left out "
          f"({result.stderr.strip()[-300:]})")

    # Bad input: exit 2, one line naming the file, and no figures folder.
    def bad_file(name, content):
        path = os.path.join(work, "bad", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(content)
        return path

    good_csv = os.path.join(work, "dense.csv")
    with open(good_csv, "rb") as handle:
        good_table = handle.read()
    negative = good_table.decode().splitlines()
    header = negative[0].split(",")
    row = negative[1].split(",")
    row[header.index("compute_s")] = "-0.05"
    empty_folder = os.path.join(work, "bad", "empty-folder")
    os.makedirs(empty_folder)
    # A row without its worker count: three figures were written, then a
    # traceback (the fidelity figure sorted None against a number).
    no_workers = synthetic_rows(full=True)
    no_workers[1]["workers"] = ""
    write_csv(bad_file("no-workers.csv", b""), no_workers)
    # A FIFO blocked the script for ever.
    fifo = os.path.join(work, "bad", "fifo.csv")
    os.mkfifo(fifo)
    # A sweep folder whose sweep.csv is no file was plotted from its points'
    # results without a word.
    csv_folder = os.path.join(work, "bad", "csv-folder")
    os.makedirs(os.path.join(csv_folder, "sweep.csv"))
    cases = [
        ("a missing file", os.path.join(work, "nowhere.json"), ["nowhere.json"]),
        ("a sweep.csv that is a folder", csv_folder, ["sweep.csv: is a folder, not a file"]),
        ("a folder with no results", empty_folder, ["empty-folder", "no sweep.csv or result.json"]),
        ("an empty result.json", bad_file("empty.json", b""), ["empty.json: empty file"]),
        ("a malformed result.json", bad_file("malformed.json", b'{"summary": {'), ["not JSON"]),
        ("a result.json that is a list", bad_file("list.json", b"[1, 2]"), ["list.json"]),
        ("a summary that is a number", bad_file("summary5.json", b'{"summary": 5}'),
         ["summary5.json", "/summary"]),
        ("a summary with a string of workers",
         bad_file("text.json", b'{"summary": {"workers": "8"}}'), ["workers"]),
        ("NaN in a result.json", bad_file("nan.json", b'{"summary": {"workers": NaN}}'),
         ["nan.json"]),
        ("an empty sweep.csv", bad_file("empty.csv", b""), ["empty.csv: empty file"]),
        ("a sweep.csv without rows", bad_file("header.csv", good_table.splitlines()[0] + b"\n"),
         ["header.csv", "no rows"]),
        ("a non-UTF-8 sweep.csv", bad_file("latin1.csv", good_table + b"p9,\xff\xfe\n"),
         ["latin1.csv", "UTF-8"]),
        ("a row longer than the header",
         bad_file("long.csv", good_table + good_table.splitlines()[1] + b",extra\n"),
         ["long.csv", "line"]),
        ("a negative compute time",
         bad_file("negative.csv", "\n".join([negative[0], ",".join(row)]).encode() + b"\n"),
         ["negative.csv", "line 2", "compute_s"]),
        # These were drawn, or the short row left out, without a word.
        ("a row cut short",
         bad_file("short.csv", good_table + good_table.splitlines()[1][:60] + b"\n"),
         ["short.csv", "fewer fields than the header"]),
        ("an empty workers cell", os.path.join(work, "bad", "no-workers.csv"),
         ["no-workers.csv: line 3: workers: empty"]),
        ("a FIFO as the sweep.csv", fifo, ["fifo.csv: not a regular file"]),
        ("a point twice (a row pasted again)",
         bad_file("twice.csv", good_table + good_table.splitlines()[1] + b"\n"),
         ["twice.csv", "again (first on line 2)"]),
        ("half a worker", bad_file("half.json", b'{"summary": {"workers": 2.5}}'),
         ["half.json", "workers", "whole number"]),
        ("a cosine of 5",
         bad_file("cosine.json", b'{"summary": {"workers": 2, "fidelity": {"cosine": 5}}}'),
         ["cosine.json", "fidelity.cosine", "out of range"]),
        ("a density of 7",
         bad_file("density.json", b'{"summary": {"workers": 2, "density_after_aggregation": 7}}'),
         ["density.json", "density_after_aggregation", "out of range"]),
    ]
    for what, path, needles in cases:
        figures = os.path.join(work, "bad-figures")
        refused(plot(path, "--out", figures), what, needles, absent=[figures])
    refused(plot(good_csv, "--bogus", "--out", os.path.join(work, "bogus")), "an unknown option",
            ["--bogus"], absent=[os.path.join(work, "bogus")])
    refused(plot(good_csv, "--out", ""), "an empty --out", ["--out"])
    # Output folders that cannot be made: exit 1, one line.
    refused(plot(good_csv, "--out", good_csv), "--out naming a file", ["cannot create folder"],
            status=1)
    refused(plot(good_csv, "--out", os.path.join(good_csv, "figures")), "--out under a file",
            ["cannot create folder"], status=1)
    # --help writes nothing.
    quiet = os.path.join(work, "help")
    os.makedirs(quiet)
    result = plot("--help", cwd=quiet)
    check(result.returncode == 0 and "usage" in result.stdout and not os.listdir(quiet),
          "--help exits 0 and writes nothing")

    # plot_profile.py: a shipped profile is drawn; bad ones are refused.
    profile_out = os.path.join(work, "profile", "a100")
    refused(plot(os.path.join(ROOT, "platforms", "devices", "a100.json"), "--out", profile_out,
                 script=PLOT_PROFILE), "plot_profile.py: --out in a missing folder",
            ["cannot write"], status=1)
    os.makedirs(os.path.dirname(profile_out))
    result = plot(os.path.join(ROOT, "platforms", "devices", "a100.json"), "--out", profile_out,
                  script=PLOT_PROFILE)
    check(result.returncode == 0 and non_empty(profile_out + ".png", b"\x89PNG")
          and non_empty(profile_out + ".pdf", b"%PDF"),
          f"plot_profile.py draws a shipped profile ({result.stderr.strip()[-300:]})")
    # Its PDF carried the time it was made.
    again = os.path.join(work, "profile", "a100-again")
    styled, environment = styled_environment(work)
    plot(os.path.join(ROOT, "platforms", "devices", "a100.json"), "--out", again,
         script=PLOT_PROFILE, cwd=styled, env=environment)
    check(all(os.path.exists(f"{again}.{ext}") and open(f"{again}.{ext}", "rb").read()
              == open(f"{profile_out}.{ext}", "rb").read() for ext in ("png", "pdf")),
          "plot_profile.py draws the same profile into the same bytes, whatever the user's "
          "matplotlib settings")
    # Outputs checked before either figure is written: a folder as --out
    # (a traceback on the names DIR/.png), a folder where the PDF goes (the
    # PNG was left behind), the profile itself named *.png.
    a100 = os.path.join(ROOT, "platforms", "devices", "a100.json")
    refused(plot(a100, "--out", work + "/", script=PLOT_PROFILE), "plot_profile.py: --out a folder",
            ["--out:", "names a folder"], absent=[os.path.join(work, ".png")])
    blocked = os.path.join(work, "profile", "blocked")
    os.makedirs(blocked + ".pdf")
    refused(plot(a100, "--out", blocked, script=PLOT_PROFILE),
            "plot_profile.py: a folder where the PDF goes", [f"{blocked}.pdf is a folder"],
            absent=[blocked + ".png"])
    as_png = os.path.join(work, "profile", "input.png")
    shutil.copy(a100, as_png)
    refused(plot(as_png, script=PLOT_PROFILE), "plot_profile.py: over its own input",
            ["is also an input"])
    check(open(as_png, "rb").read() == open(a100, "rb").read(), "the input named *.png is kept")
    with open(os.path.join(ROOT, "platforms", "devices", "a100.json")) as handle:
        profile = json.load(handle)
    no_range = json.loads(json.dumps(profile))
    next(iter(no_range["kernels"].values()))["fit"]["range"]["n"] = [0, 5]
    cases = [
        ("a missing profile", os.path.join(work, "nowhere-profile.json"), ["nowhere-profile.json"]),
        ("an empty profile", bad_file("empty-profile.json", b""), ["empty-profile.json: empty file"]),
        ("a malformed profile", bad_file("malformed-profile.json", b'{"kernels": '), ["not JSON"]),
        ("a profile without kernels",
         bad_file("no-kernels.json", json.dumps({k: v for k, v in profile.items()
                                                 if k != "kernels"}).encode()), ["/kernels"]),
        ("a profile with n from 0", bad_file("zero-n.json", json.dumps(no_range).encode()),
         ["range/n"]),
    ]
    # Drawn, though gcsim refuses them.
    first = next(iter(profile["kernels"]))
    for what, change, needles in (
            ("a negative latency", lambda k: k["fit"]["segments"][0].update(latency_s=-1e-6),
             ["segments/0/latency_s", "out of range"]),
            ("no segments", lambda k: k["fit"].update(segments=[]),
             ["fit/segments", "non-empty", "an empty list"]),
            ("a point with k above n", lambda k: k.update(points=[{"n": 10, "k": 20,
                                                                   "seconds": 1e-6}]),
             ["points/0/k", "more than n"])):
        changed = json.loads(json.dumps(profile))
        change(changed["kernels"][first])
        cases.append((what, bad_file(what.replace(" ", "-") + ".json",
                                     json.dumps(changed).encode()), needles))
    for what, path, needles in cases:
        target = os.path.join(work, "profile", "bad")
        refused(plot(path, "--out", target, script=PLOT_PROFILE), f"plot_profile.py: {what}",
                needles, absent=[target + ".png", target + ".pdf"])

# Colours are part of the figures' meaning: one per compressor, fixed.
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import plot as plot_module  # noqa: E402


colours = [plot_module.style_of(name)[0] for name in plot_module.STYLE]
check(len(set(colours)) == len(plot_module.STYLE)
      and set(COMPRESSORS + ["fp16", "bf16", "powersgd"]) <= set(plot_module.STYLE),
      "each of the thirteen compressors has its own colour")
check(plot_module.style_of("topk") == ("#E69F00", "s"), "topk keeps Okabe-Ito orange")

# A figure that could not be written left the folders made for it behind,
# empty; one written keeps them.
with tempfile.TemporaryDirectory() as work:
    made = os.path.join(work, "a", "b")
    try:
        with plot_module.figures_folder(made, plot_module.Written()):
            raise OSError("the first figure cannot be written")
    except OSError:
        pass
    written = plot_module.Written()
    with plot_module.figures_folder(os.path.join(work, "c", "d"), written):
        written.append("x.pdf")
    check(os.listdir(work) == ["c"] and os.path.isdir(os.path.join(work, "c", "d")),
          f"the folders made for figures go when none was written: {os.listdir(work)}")

# Each of the fourteen fitted kernels and the derived low_rank_product has
# its own colour in a time breakdown, not one of eight taken in turn; one of
# another name takes a colour no kernel of its figure has, and none is a
# grey of compute, communication or "other".
with open(os.path.join(ROOT, "sim", "cost", "kernels.cpp")) as handle:
    KERNELS = [line.split('"')[1] for line in handle if line.strip().startswith("{Kernel::")]
KERNELS.append("low_rank_product")
columns = [f"compression_exposed_kernels_s.{k}" for k in KERNELS]
given = plot_module.kernel_colours(columns)
check(len(KERNELS) == 15 and len(set(given.values())) == len(columns),
      f"{len(columns)} kernel columns have {len(set(given.values()))} colours")
newcomer = plot_module.kernel_colours(columns[:13] + ["compression.new_kernel_s"])
check(len(set(newcomer.values())) == 14, "a kernel of another name takes a colour of its own")
check(not {plot_module.COMPUTE_COLOUR, plot_module.COMMUNICATION_COLOUR, "#DDDDDD"}
      & set(given.values()), "no kernel is drawn in a grey of the other parts")
check(plot_module.kernel_colours(columns[3:5]) == {c: given[c] for c in columns[3:5]},
      "a kernel keeps its colour in every figure")

# The time breakdown's bars add up to the iteration: compute, the wait for
# the slowest worker (left out, with stragglers bars fell 22% short),
# exposed kernels and the rest of compression, communication.
straggling = [{"compute_s": 0.03, "straggler_wait_s": 0.01, "compression_exposed_s": 0.002,
               "compression_exposed_kernels_s.topk_select": 0.0015, "communication_s": 0.005,
               "iteration_time_s": 0.047},
              {"compute_s": 0.03, "straggler_wait_s": 0.0, "compression_exposed_s": 0.0,
               "compression_exposed_kernels_s.topk_select": 0.0, "communication_s": 0.004,
               "iteration_time_s": 0.034}]
segments = plot_module.breakdown_segments(straggling, ["compression_exposed_kernels_s.topk_select"])
heights = [sum(values) for values in zip(*(values for _, _, values in segments))]
check(all(math.isclose(h, r["iteration_time_s"]) for h, r in zip(heights, straggling))
      and plot_module.STRAGGLER_LABEL in [label for label, _, _ in segments],
      f"the breakdown's bars are the iteration times, the straggler wait in them: {heights}")

# Point folders of a dense and a top-k run: dense has no density, so its
# label said "dense (density=)" and the dense linear-scaling line, which
# looks for the variant "dense", was not drawn. Grid values read as written
# (nodes 4, not 4.0).
with tempfile.TemporaryDirectory() as work:
    def point(folder, compressor, nodes, iterations=2):
        os.makedirs(folder)
        with open(os.path.join(folder, "result.json"), "w") as handle:
            json.dump({"scenario": {"name": "q", "platform": {"nodes": nodes},
                                    "training": {"iterations": iterations},
                                    "compressor": compressor},
                       "summary": {"workers": nodes, "iteration_time_s": 0.1,
                                   "throughput_samples_per_s": 1000.0 * nodes}}, handle)
        return folder

    folders = [point(os.path.join(work, f"p{i}"), compressor, nodes)
               for i, (compressor, nodes) in enumerate(
                   [({"name": "dense"}, 2), ({"name": "dense"}, 4),
                    ({"name": "topk", "density": 0.01}, 2), ({"name": "topk", "density": 0.01}, 4)])]
    rows, params, _ = plot_module.load(folders)
    labels = sorted({plot_module.compressor_of(row, params)[1] for row in rows})
    # Runs that differ in a flag alone are two lines, labelled as JSON
    # writes it (the flag was left out, and they were drawn as one).
    flagged = [point(os.path.join(work, f"f{i}"), {"name": "gs_sgd", "density": 0.01,
                                                   "second_round": flag}, 4)
               for i, flag in enumerate([True, False])]
    flag_rows, flag_params, _ = plot_module.load(flagged)
    flag_labels = sorted(plot_module.compressor_of(row, flag_params)[1] for row in flag_rows)
    check(flag_labels == ["gs_sgd (second_round=false)", "gs_sgd (second_round=true)"],
          f"a flag tells two runs apart: {flag_labels}")
    check(labels == ["dense", "topk (density=0.01)"] and "4" in [r["platform.nodes"] for r in rows],
          f"point folders: dense is labelled dense, grid values as written: {labels}, "
          f"{sorted({r['platform.nodes'] for r in rows})}")

    # An unfinished sweep (no sweep.csv) whose points/ keeps a folder of an
    # earlier grid: only the points its points.txt lists are read.
    sweep_folder = os.path.join(work, "sweep")
    point(os.path.join(sweep_folder, "points", "p000_nodes-2"), {"name": "dense"}, 2)
    point(os.path.join(sweep_folder, "points", "p001_nodes-16"), {"name": "dense"}, 16, 3)
    with open(os.path.join(sweep_folder, "points.txt"), "w") as handle:
        handle.write("p000_nodes-2\np001_nodes-4\n")  # p001_nodes-4 not yet run
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        rows, _, _ = plot_module.load([sweep_folder])
    check([row["point"] for row in rows] == ["p000_nodes-2"]
          and f"{sweep_folder}: an unfinished sweep (no sweep.csv): 1 of its 2 points have a "
          "result, and the figures show those only" in said.getvalue(),
          f"an unfinished sweep plots its own grid's points only, and says how many: "
          f"{[r['point'] for r in rows]} {said.getvalue()!r}")
    with open(os.path.join(sweep_folder, "points.txt"), "w") as handle:
        handle.write("../p0\n")
    refused_point = None
    try:
        plot_module.load([sweep_folder])
    except plot_module.BadInput as error:
        refused_point = str(error)
    check(refused_point is not None and "points.txt" in refused_point,
          f"a points.txt naming a folder elsewhere is refused: {refused_point}")

# A parameter whose values share one worker count (link rates at 8 nodes)
# is a panel per value; drawn on the workers axis, its points stood one
# above the other at x = 8. One whose values each have a count of their
# own (platforms of 8 and 16 nodes) is the workers axis.
def rows_of(values_and_workers):
    return [{"platform.link.bandwidth": value, "workers": workers}
            for value, workers in values_and_workers]


check(not plot_module.sets_workers(rows_of([("1Gbps", 8), ("10Gbps", 8), ("100Gbps", 8)]),
                                   "platform.link.bandwidth"),
      "rates at one worker count are panels, not the workers axis")
check(plot_module.sets_workers(rows_of([("a.json", 8), ("b.json", 16)]), "platform.link.bandwidth"),
      "values each with a worker count of their own are the workers axis")
check(not plot_module.sets_workers(rows_of([("a.json", 8), ("b.json", 8), ("c.json", 16)]),
                                   "platform.link.bandwidth"),
      "values sharing a worker count are not the workers axis")

# Log axes print plain numbers: with mathtext off (names from files may
# hold a "$"), matplotlib's default labels printed "$\\mathdefault{10^{-2}}$"
# in the validation figure; and 1000000, not 1e+06.
captured = []
real_save = plot_module.save
plot_module.save = lambda figure, out, stem, written: captured.append(figure)
try:
    plot_module.setup_matplotlib()
    report = {"name": "r", "platform": {"source": "the fit"},
              "collectives": [{"collective": "allreduce", "measured_s": m, "simulated_s": 1.05 * m}
                              for m in (1e-3, 1e-2, 0.1, 1.0)]}
    plot_module.validation_figure([report], "unused", "v", plot_module.Written())
    axis = captured[-1].axes[0]
    captured[-1].canvas.draw()
    ticks = [t.get_text() for t in axis.get_xticklabels() + axis.get_yticklabels() if t.get_text()]
    check(ticks and all("$" not in t for t in ticks) and "0.01" in ticks,
          f"the validation figure's log axes print plain numbers: {ticks}")
    label = captured[-1]._supxlabel
    said = label.get_text().replace("\n", " ") if label else ""
    check("the fit's own" in said and "in sample" in said and "predictions" in said,
          f"a fitted comparison says which points are in sample: {said!r}")
    check(plot_module.plain_number(1e6) == "1000000" and plot_module.plain_number(0.05) == "0.05",
          "a tick of a million is 1000000")

    # Every sweep figure says what a point is (one deterministic simulation,
    # the iterations its mean takes) and where synthesized gradients are;
    # the speed-up figure draws dense's level; a fidelity line runs in the
    # order of the workers, not of its x.
    rows = [{"compressor_name": name, "workers": workers, "iterations": 3.0,
             "warmup_iterations": 1.0, "gradients": "" if name == "dense" else "synthetic",
             "speedup_vs_dense": 1.0 if name == "dense" else 1.0 + workers / 100,
             "fidelity.cosine": None if name == "dense" else 0.9 - workers / 100,
             "compression_ratio": None if name == "dense" else [5.0, 2.0, 9.0][i],
             "bytes_sent_per_worker": 1.0}
            for name in ("dense", "topk") for i, workers in enumerate(WORKERS)]
    plot_module.annotate(rows, [])
    captured.clear()
    plot_module.speedup_figure(rows, "unused", plot_module.Written())
    plot_module.fidelity_figure(rows, "unused", plot_module.Written())
    speedup, fidelity = captured[0], captured[1]
    said = speedup._supxlabel.get_text().replace("\n", " ") if speedup._supxlabel else ""
    check("one simulation (deterministic for its seed), the mean of its iterations 1-2, the "
          "first 1 left out as warm-up" in said, f"the speed-up figure's caption: {said!r}")
    check("dense (1x)" in [t.get_text() for t in speedup.legends[0].get_texts()],
          "the speed-up figure draws dense's level")
    said = fidelity._supxlabel.get_text().replace("\n", " ") if fidelity._supxlabel else ""
    check("Gradients synthetic" in said and "from 2 to 64 workers" in said,
          f"the fidelity figure says its gradients are synthetic, and how a line runs: {said!r}")
    line = fidelity.axes[0].get_lines()[0]
    check(list(line.get_xdata()) == [5.0, 2.0, 9.0],
          f"a fidelity line joins its points in the order of the workers: {line.get_xdata()}")
    # The model, platform and device, from the points' result.json: a
    # figure did not say what it was of.
    study = plot_module.load([os.path.join(ROOT, "results", "studies", "study-iwp")])[0]
    settings = {row.get("_setting") for row in study}
    check(settings == {"cnn on cluster96-1g, NVIDIA GeForce GTX 1080 Ti (derived, "
                       "legacy_torch_topk)"}, f"a sweep's points say their setting: {settings}")
    for row in rows:
        row["_setting"] = "cnn on star-8x10g, V100"
    captured.clear()
    plot_module.speedup_figure(rows, "unused", plot_module.Written())
    said = captured[0]._supxlabel.get_text().replace("\n", " ")
    check(said.startswith("cnn on star-8x10g, V100."), f"the caption names the setting: {said!r}")

    # Points repeated over seeds (a grid parameter `seed`) are one point:
    # the mean of their runs, a bar from the least to the most, and the
    # caption says so; an unrepeated value stays exactly as it was. They
    # were lines of their own, or panels, one per seed.
    seeded = [{"compressor_name": "iwp", "workers": workers, "iterations": 3.0,
               "warmup_iterations": 1.0, "seed": str(seed), "compressor": "iwp",
               "speedup_vs_dense": 1.0 + seed / 10, "fidelity.cosine": 0.1 * seed,
               "compression_ratio": 60.0 + seed, "bytes_sent_per_worker": 0.1}
              for workers in (8, 16) for seed in (3, 1, 2)]
    joined, params = plot_module.mean_over_seeds(seeded, ["compressor", "seed"])
    first = joined[0] if joined else {}
    check(params == ["compressor"] and len(joined) == 2 and first.get("_seeds") == ["1", "2", "3"]
          and math.isclose(first["fidelity.cosine"], 0.2)
          and first["_range"].get("fidelity.cosine") == (0.1, 0.30000000000000004)
          and first["bytes_sent_per_worker"] == 0.1
          and "bytes_sent_per_worker" not in first["_range"],
          f"three seeds of a point are one: their mean and range ({first})")
    plot_module.annotate(joined, params)
    captured.clear()
    plot_module.fidelity_figure(joined, "unused", plot_module.Written())
    plot_module.speedup_figure(joined, "unused", plot_module.Written())
    said = captured[0]._supxlabel.get_text().replace("\n", " ")
    lines = [line for line in captured[0].axes[0].get_lines()
             if line.get_label() == "iwp"]
    bars = [c for c in captured[1].axes[0].collections
            if isinstance(c, plot_module.matplotlib.collections.LineCollection)]
    spans = sorted(tuple(sorted(round(y, 9) for _, y in segment))
                   for segment in bars[0].get_segments()) if bars else []
    check("the mean of 3 simulations, seeds 1, 2, 3; its bars span their least to most" in said
          and len(lines) == 1,
          f"the caption says a point is the mean of its seeds; one line ({len(lines)}): {said!r}")
    check(spans == [(1.1, 1.3), (1.1, 1.3)],
          f"each speed-up point has a bar from its seeds' least to most: {spans}")
    # A line drawn over another's points (within 2% of the axes) is named
    # in the caption: top-k lay hidden under CLT-k in study-deft-lstm.
    twins = [{"compressor_name": name, "workers": workers, "iterations": 3.0,
              "speedup_vs_dense": workers * (1.005 if name == "cltk" else 1.0)}
             for name in ("topk", "cltk", "deft") for workers in (8.0, 16.0)]
    for row in twins:
        if row["compressor_name"] == "deft":
            row["speedup_vs_dense"] *= 1.02
    plot_module.annotate(twins, [])
    captured.clear()
    plot_module.speedup_figure(twins, "unused", plot_module.Written())
    said = captured[0]._supxlabel.get_text().replace("\n", " ")
    check("Hidden under another line (every point within 2% of the axes): topk under cltk." in said
          and "deft" not in said,
          f"the caption names a line hidden under another: {said!r}")
    # On a log axis a line of points at 0 is not drawn: it hides nothing.
    zeros = [{"compressor_name": name, "workers": workers, "iterations": 3.0,
              "density_after_aggregation": {"topk": 1.0, "cltk": 0.0, "deft": 0.01 * workers}[name]}
             for name in ("topk", "cltk", "deft") for workers in (8.0, 16.0)]
    plot_module.annotate(zeros, [])
    check(plot_module.coinciding(zeros, plot_module.ordered_variants(zeros), "workers",
                                 "density_after_aggregation", True) == [],
          "a line at 0 on a log axis is not hidden under another")
    # Points that differ in another parameter than the seed stay apart; a
    # seed twice in one point is refused.
    apart, _ = plot_module.mean_over_seeds(
        [dict(row, **{"platform.link.bandwidth": rate}) for row in seeded[:3]
         for rate in ("1Gbps", "10Gbps")], ["compressor", "platform.link.bandwidth", "seed"])
    check(len(apart) == 2 and all(row["_seeds"] == ["1", "2", "3"] for row in apart),
          f"points of two bandwidths stay two points over their seeds: {len(apart)}")
    try:
        plot_module.mean_over_seeds(seeded[:3] + seeded[:1], ["compressor", "seed"])
        check(False, "a seed twice in one point is refused")
    except plot_module.BadInput as error:
        check("seed 3 2 times" in str(error), f"a seed twice in one point is refused: {error}")
    unchanged = [dict(row, seed="1") for row in seeded[:2]]
    check(plot_module.mean_over_seeds(unchanged, ["seed"]) == (unchanged, ["seed"]),
          "one seed: rows and parameters as they were")
finally:
    plot_module.save = real_save
    plot_module.plt.close("all")

# Panel titles too long for a panel go a facet a line: they ran into their
# neighbours (platform = tree-96-1g-oversubscribed, allreduce = ...).
long_facet = (("platform", "tree-96-1g-oversubscribed"), ("training.allreduce", "recursive_doubling"))
check(plot_module.facet_title(long_facet)
      == "platform = tree-96-1g-oversubscribed\nallreduce = recursive_doubling"
      and plot_module.facet_title((("platform", "ring"), ("training.allreduce", "tree")))
      == "platform = ring, allreduce = tree", "panel titles wrap only when too long")

# What the sweep figures show, drawn in this process from a sweep.csv whose
# rows run from the most workers down: each line is its own compressor's
# column against workers (or the compression ratio), in worker order, on a
# log2 worker axis; dense's linear scaling is its first point times the
# worker ratio; each time-breakdown bar stacks to its iteration in ms, the
# worker counts in order. Files were all that was checked: a speedup figure
# of throughput, fidelity files swapped, the scaling line upside down passed.
with tempfile.TemporaryDirectory() as work:
    table = synthetic_rows(full=True)
    write_csv(os.path.join(work, "sweep.csv"), table[::-1])
    rows, params, _ = plot_module.load([os.path.join(work, "sweep.csv")])
    check({row.get("gcsim_commit") for row in rows} == {"0123456789ab-dirty"},
          f"sweep.csv's gcsim_commit stays text, as command does: "
          f"{ {row.get('gcsim_commit') for row in rows} }")
    plot_module.annotate(rows, params)
    drawn = {}
    real_save = plot_module.save
    plot_module.save = lambda figure, out, stem, written: drawn.__setitem__(stem, figure)
    try:
        plot_module.setup_matplotlib()
        for _, draw in plot_module.FIGURES:
            draw(rows, work, plot_module.Written())
    finally:
        plot_module.save = real_save

    def expected(bandwidth, column, x="workers"):
        """{compressor: [(x, column)] in the order of the workers} of the
        table's rows at `bandwidth`: against the compression ratio too, a
        line is a compressor's path as workers are added."""
        dense = {r["workers"]: r["bytes_sent_per_worker"] for r in table
                 if r["compressor_name"] == "dense" and r["platform.link.bandwidth"] == bandwidth}
        lines = {}
        for r in table:
            if r["platform.link.bandwidth"] == bandwidth:
                at = dense[r["workers"]] / r["bytes_sent_per_worker"] if x == "ratio" else r[x]
                lines.setdefault(r["compressor_name"], []).append((r["workers"], at, r[column]))
        return {name: [(at, value) for _, at, value in sorted(points)]
                for name, points in lines.items()}

    def line_problems(stem, column, ylabel, x="workers"):
        problems = []
        for axis in drawn[stem].axes:
            if not axis.get_visible():
                continue
            bandwidth = axis.get_title().split(" = ")[-1]
            want = expected(bandwidth, column, x)
            got = {}
            for line in axis.get_lines():
                # Not a compressor's: the references, the larger end markers.
                if line.get_label() not in ("linear scaling of dense", "dense (1x)") \
                        and not line.get_label().startswith("_"):
                    got[line.get_label().split(" ")[0]] = list(zip(line.get_xdata(),
                                                                   line.get_ydata()))
            if got.keys() != want.keys() or any(
                    not all(math.isclose(a, b) for p, q in zip(got[k], want[k])
                            for a, b in zip(p, q)) or len(got[k]) != len(want[k]) for k in want):
                problems.append(f"{bandwidth}: lines {got} are not the rows' {want}")
            # One y scale for the panels, labelled on the first column.
            first = axis.get_subplotspec().is_first_col()
            if axis.get_ylabel() != (ylabel if first else ""):
                problems.append(f"{bandwidth}: y label {axis.get_ylabel()!r}")
            if axis.get_ylim() != drawn[stem].axes[0].get_ylim():
                problems.append(f"{bandwidth}: y limits {axis.get_ylim()} are not the first "
                                f"panel's {drawn[stem].axes[0].get_ylim()}")
            if x == "workers" and not (axis.get_xscale() == "log"
                                       and axis.xaxis.get_transform().base == 2):
                problems.append(f"{bandwidth}: the worker axis is not log2")
            if x == "ratio" and axis.get_xscale() != "log":
                problems.append(f"{bandwidth}: the compression ratio axis is not log")
        return problems

    for stem, column, ylabel, x in (
            ("throughput", "throughput_samples_per_s", "throughput (samples/s)", "workers"),
            ("speedup", "speedup_vs_dense", "speedup over dense (x)", "workers"),
            ("density", "density_after_aggregation", "density after aggregation", "workers"),
            ("fidelity", "fidelity.cosine", "cosine similarity to dense", "ratio"),
            ("fidelity_rel_l2", "fidelity.rel_l2", "relative L2 error vs dense", "ratio")):
        problems = line_problems(stem, column, ylabel, x) if stem in drawn else ["not drawn"]
        check(not problems, f"{stem}: each compressor's {column} against {x}, in order: "
              f"{'; '.join(problems)[:600] or 'yes'}")
    # A log y axis where the values span more than a decade (throughput from
    # 2 to 64 workers), linear where not (speedup 1 to 1.5).
    scales = {stem: {axis.get_yscale() for axis in drawn[stem].axes}
              for stem in ("throughput", "speedup")}
    check(scales == {"throughput": {"log"}, "speedup": {"linear"}},
          f"log y only where the values span more than a decade: {scales}")
    scaling = []
    for axis in drawn["throughput"].axes:
        dense = expected(axis.get_title().split(" = ")[-1], "throughput_samples_per_s")["dense"]
        scaling += [(list(line.get_xdata()), list(line.get_ydata()), dense)
                    for line in axis.get_lines() if line.get_label() == "linear scaling of dense"]
    scales_well = len(scaling) == 2 and all(
        xs == [w for w, _ in dense] and all(math.isclose(y, dense[0][1] * w / dense[0][0])
                                            for w, y in zip(xs, ys))
        for xs, ys, dense in scaling)
    check(scales_well, "dense's linear scaling: its first point times the worker ratio"
          + ("" if scales_well else f": (workers, drawn, dense's points) {scaling}"))
    for bandwidth in ("1Gbps", "10Gbps"):
        figure = drawn.get(f"time_breakdown_bandwidth-{bandwidth}")
        problems = [] if figure else ["not drawn"]
        for axis in (figure.axes if figure else []):
            if not axis.get_visible():
                continue
            name = axis.get_title().split(" ")[0]
            mine = sorted((r["workers"], r["iteration_time_s"]) for r in table
                          if r["compressor_name"] == name
                          and r["platform.link.bandwidth"] == bandwidth)
            ticks = [label.get_text() for label in axis.get_xticklabels()]
            totals = {}
            for bar in axis.patches:
                totals[round(bar.get_x() + bar.get_width() / 2, 6)] = totals.get(
                    round(bar.get_x() + bar.get_width() / 2, 6), 0.0) + bar.get_height()
            if ticks != [f"{w:g}" for w, _ in mine] or not all(
                    math.isclose(totals.get(i, 0.0), seconds * 1e3)
                    for i, (_, seconds) in enumerate(mine)):
                problems.append(f"{name}: bars {ticks} {totals}, expected {mine} in ms")
            if axis.get_ylabel() not in ("", "time per iteration (ms)"):
                problems.append(f"{name}: y label {axis.get_ylabel()!r}")
        check(not problems and any(a.get_ylabel() == "time per iteration (ms)"
                                   for a in (figure.axes if figure else [])),
              f"time breakdown at {bandwidth}: bars stack to each iteration in ms, workers in "
              f"order: {'; '.join(problems)[:600] or 'yes'}")
    # Kernels under 1% of the tallest bar in every bar (both at 1 Gbit/s,
    # whose dense bars are ~0.47 s: one "compression kernels" segment; none
    # at 10 Gbit/s, ~0.09 s) are not listed one by one: study-iwp's legend
    # named eleven kernels no bar showed.
    legends = {bandwidth: [t.get_text() for figure in [drawn[f"time_breakdown_bandwidth-"
                                                             f"{bandwidth}"]]
                           for legend in figure.legends for t in legend.get_texts()]
               for bandwidth in ("1Gbps", "10Gbps")}
    check(not any(t.startswith("kernel:") for t in legends["1Gbps"])
          and "compression kernels" in legends["1Gbps"]
          and {"kernel: topk select", "kernel: sparse pack"} <= set(legends["10Gbps"])
          and plot_module.FOLDED_LABEL not in legends["10Gbps"],
          f"kernels too small to see are one segment: {legends}")
    # One kernel large enough, one not: the other's time in "compression,
    # other", the bars still stacking to the iteration.
    def breakdown_legend(rows):
        """The legend entries of the time breakdown drawn from `rows`."""
        drawn.clear()
        plot_module.save = lambda figure, out, stem, written: drawn.__setitem__(stem, figure)
        try:
            plot_module.time_breakdown_figure(rows, work, plot_module.Written())
        finally:
            plot_module.save = real_save
        return [t.get_text() for figure in drawn.values() for legend in figure.legends
                for t in legend.get_texts()]

    tiny = [dict(r, **{"compression_kernels_s.sparse_pack": 1e-6,
                       "compression_s": r["compression_kernels_s.topk_select"] + 1e-6})
            for r in rows if r["platform.link.bandwidth"] == "10Gbps"]
    said = breakdown_legend(tiny)
    check("kernel: topk select" in said and "kernel: sparse pack" not in said
          and plot_module.FOLDED_LABEL in said,
          f"a kernel too small to see beside one that is not: {said}")
    # A panel whose kernels are all too small, beside one that keeps one:
    # its compression is the grey rest, not "compression kernels" in the
    # kept kernel's colour.
    said = breakdown_legend([
        dict(r, **{"compression_kernels_s.topk_select": 1e-6, "compression_s": 2e-6})
        if r["compressor_name"] == "dgc" else r for r in tiny])
    check("compression kernels" not in said and plot_module.FOLDED_LABEL in said,
          f"a panel of kernels too small to see draws them as the rest: {said}")
    plot_module.plt.close("all")

# Figures of a sweep record its sweep.csv's SHA-256 (the PDF's Subject, the
# PNG's Source), as tests/cli/studies_test.py reads it to find stale ones:
# only committed figures were checked, so a plot.py hashing other bytes, or
# writing another key, passed until the next replot.
from PIL import Image  # noqa: E402  (python3-matplotlib's dependency)

with tempfile.TemporaryDirectory() as work:
    folder = os.path.join(work, "sweep")
    os.makedirs(folder)
    write_csv(os.path.join(folder, "sweep.csv"), synthetic_rows(full=False)[:3])
    with open(os.path.join(folder, "sweep.csv"), "rb") as handle:
        source = "sweep.csv sha256 " + hashlib.sha256(handle.read()).hexdigest()
    result = plot(folder)
    figures = os.path.join(folder, "figures")
    with Image.open(os.path.join(figures, "throughput.png")) as image:
        png_source = image.text.get("Source")
    with open(os.path.join(figures, "throughput.pdf"), "rb") as handle:
        pdf = handle.read()
    check(result.returncode == 0 and png_source == source
          and f"/Subject ({source})".encode() in pdf,
          f"a sweep's figures record its sweep.csv's SHA-256: PNG Source {png_source!r}, "
          f"PDF Subject {f'/Subject ({source})'.encode() in pdf}")

# plot_profile.py's series: sample_threshold's 0.2% of n was drawn on the
# 0.1% curve (2x off its point) and the 64-sample floor on a curve through
# sizes it was never measured at. Each point now sits by its own fitted time.
import plot_profile  # noqa: E402

with open(os.path.join(ROOT, "platforms", "devices", "cpu-amd-epyc-zen4.json")) as handle:
    sampling = json.load(handle)["kernels"]["sample_threshold"]
groups = plot_profile.series(sampling["points"])
by_point = {(p["n"], p["k"]): key[0] for key, members in groups.items() for p in members}
check(by_point[(4194304, 8388)] == "k=0.002n" and by_point[(4194304, 4194)] == "k=0.001n"
      and by_point[(1024, 64)] == by_point[(4096, 64)] == "k=64",
      f"sample_threshold's series: {sorted(set(by_point.values()))}")
# profile show gives sample_threshold a median residual of a few percent: a
# line drawn at other shapes than the points' (as the decades did, 2x off at
# 0.2% of n) is far from them.
for key, members in groups.items():
    ns, seconds = plot_profile.fitted_line(sampling["fit"], members)
    errors = sorted(abs(s / p["seconds"] - 1) for s, p in zip(seconds, sorted(
        members, key=lambda p: (p["n"], p["k"]))))
    check(ns == sorted(ns) and errors[len(errors) // 2] < 0.1,
          f"{key[0]}: the line joins the fitted times at the points' own shapes "
          f"(median |fitted/measured - 1| {errors[len(errors) // 2]:.3f})")


# Series by k/n to one digit, the rate read as the middle of [k, k + 1) / n:
# a rate of 0.1% is one series from n = 1500 (k = 1) to n = 980000 (k = 980).
# The shipped profiles' points passed with k / n (n = 1500 then reads
# 0.07%) and with two digits (0.11% at n = 4000 a series of its own).
rates = plot_profile.series([{"n": 1500, "k": 1, "seconds": 1e-6},
                             {"n": 4000, "k": 4, "seconds": 2e-6},
                             {"n": 980000, "k": 980, "seconds": 1e-4},
                             {"n": 1000000, "k": 2000, "seconds": 2e-4}])
labels = sorted((key[0], len(members)) for key, members in rates.items())
check(labels == [("k=0.001n", 3), ("k=0.002n", 1)],
      f"one series per rate to one digit, k + 1/2 over n: {labels}")
# In the gap between two pieces (up to n = 100, from n = 400) each piece
# reaches the gap's geometric middle, n = 200, as Curve::seconds does.
gapped = {"piecewise_in": "n", "segments": [{"up_to": 100, "per_n_s": 1.0},
                                            {"from": 400, "per_n_s": 2.0}]}
gap = [plot_profile.curve_seconds(gapped, {"n": n, "k": 0, "rows": 0, "cols": 0})
       for n in (50, 150, 199, 201, 300, 500)]
check(gap == [50.0, 150.0, 199.0, 402.0, 600.0, 1000.0],
      f"a gap between pieces is split at its geometric middle: {gap}")

# The figure, drawn in this process: log2 n against log seconds, each
# panel's points those of its kernel; a derived profile (no points) draws
# each kernel's curve at k = n/1000, 5 rows and n/100 columns (at least 256)
# across its range.
drawn = []
never_written = tempfile.TemporaryDirectory()
real_write = plot_profile.write_figure_atomically
plot_profile.write_figure_atomically = lambda figure, path, **options: drawn.append(figure)
real_argv = sys.argv
try:
    for name in ("cpu-amd-epyc-zen4", "a100"):
        sys.argv = ["plot_profile.py", os.path.join(ROOT, "platforms", "devices", name + ".json"),
                    "--out", os.path.join(never_written.name, "figure.png")]
        with open(os.devnull, "w") as quiet:
            real_stdout, sys.stdout = sys.stdout, quiet
            try:
                plot_profile.main()
            finally:
                sys.stdout = real_stdout
finally:
    plot_profile.write_figure_atomically = real_write
    never_written.cleanup()
    sys.argv = real_argv
for figure, name in zip(drawn[::2], ("cpu-amd-epyc-zen4", "a100")):
    with open(os.path.join(ROOT, "platforms", "devices", name + ".json")) as handle:
        kernels = json.load(handle)["kernels"]
    problems = []
    panels = [axis for axis in figure.axes if axis.axison]
    for axis, (kernel, entry) in zip(panels, kernels.items()):
        if not axis.get_title().startswith(kernel + " ["):
            problems.append(f"panel {axis.get_title()!r} for {kernel}")
        if not (axis.get_xscale() == "log" and axis.xaxis.get_transform().base == 2
                and axis.get_yscale() == "log"):
            problems.append(f"{kernel}: scales {axis.get_xscale()}, {axis.get_yscale()}")
        shown = sorted(tuple(o) for c in axis.collections for o in c.get_offsets())
        if shown != sorted((p["n"], p["seconds"]) for p in entry.get("points", [])):
            problems.append(f"{kernel}: the points drawn are not its points")
        if not entry.get("points"):
            # curve_seconds itself is checked above (the gap case); here,
            # that the figure draws it at k = n/1000 over the fit's range.
            fit = entry["fit"]
            lines = axis.get_lines()
            ns = list(lines[0].get_xdata()) if len(lines) == 1 else []
            if not (ns and math.isclose(ns[0], fit["range"]["n"][0])
                    and math.isclose(ns[-1], fit["range"]["n"][1]) and all(
                        math.isclose(t, plot_profile.curve_seconds(fit, {
                            "n": n, "k": max(1.0, n / 1000), "rows": 5,
                            "cols": max(256.0, n / 100)}))
                        for n, t in zip(ns, lines[0].get_ydata()))):
                problems.append(f"{kernel}: the derived curve is not at k = n/1000 across "
                                f"{fit['range']['n']}")
    check(len(drawn) == 4 and len(panels) == len(kernels) and not problems,
          f"plot_profile.py {name}: a log2-log panel per kernel with its points or derived "
          f"curve: {'; '.join(problems)[:600] or 'yes'}")
    plot_profile.plt.close("all")

# A density study at one worker count: each compressor's points are one
# line against the density, in its order, and the legend names each
# compressor once (it had a line and an entry per compressor and density,
# the workers as the only x); dense, which has no density, is a level;
# against the compression ratio a line runs from the lowest density to the
# highest; the time breakdown has a bar per density.
with tempfile.TemporaryDirectory() as work:
    densities = [0.001, 0.01, 0.1]
    table = []
    for name in ["topk", "gtopk", "dense"]:
        for density in densities if name != "dense" else [None]:
            spec = {"name": name} if density is None else {"name": name, "density": density}
            sent = 4e6 if density is None else 8e6 * density * (2 if name == "topk" else 1)
            iteration = 0.05 + sent / 1.25e8
            table.append({
                "point": f"p{len(table):03d}", "compressor": json.dumps(spec),
                "command": "build/gcsim run x.json", "compressor_name": name, "workers": 16,
                "iteration_time_s": iteration, "throughput_samples_per_s": 16 * 32 / iteration,
                "compute_s": 0.05, "compression_s": 0.0, "communication_s": sent / 1.25e8,
                "bytes_sent_per_worker": sent,
                "speedup_vs_dense": (0.05 + 4e6 / 1.25e8) / iteration,
                "fidelity.cosine": 1.0 if density is None else 0.5 + density * 4,
                "density_after_aggregation": 1.0 if density is None else density * 1.5})
    drawn, rows, params, _ = draw_every_figure(table[::-1], work)
    for stem, column in (("speedup", "speedup_vs_dense"), ("throughput", "throughput_samples_per_s"),
                         ("density", "density_after_aggregation")):
        axis = drawn[stem].axes[0] if stem in drawn else None
        lines = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
                 for line in (axis.get_lines() if axis else [])}
        want = {name: (densities, [r[column] for r in table if r["compressor_name"] == name])
                for name in ("topk", "gtopk")}
        check(axis is not None and {k: lines.get(k) for k in want} == want
              and axis.get_xlabel() == "target density" and axis.get_xscale() == "log",
              f"{stem}: a line per compressor against the density, in its order: {lines}")
        legend = [t.get_text() for legend in drawn[stem].legends for t in legend.get_texts()] \
            if stem in drawn else []
        check(legend[:2] == ["topk", "gtopk"] and not any("density=" in t for t in legend),
              f"{stem}: the legend names each compressor once: {legend}")
    dense_levels = [list(line.get_ydata()) for line in drawn["throughput"].axes[0].get_lines()
                    if line.get_label() == "dense"] if "throughput" in drawn else []
    dense_row = next(r for r in table if r["compressor_name"] == "dense")
    check(dense_levels and all(math.isclose(y, dense_row["throughput_samples_per_s"])
                               for y in dense_levels[0]),
          f"dense's throughput is a level across the densities: {dense_levels}")
    fidelity = drawn["fidelity"].axes[0] if "fidelity" in drawn else None
    joined = {line.get_label(): list(line.get_ydata()) for line in
              (fidelity.get_lines() if fidelity else []) if not line.get_label().startswith("_")}
    caption_text = " ".join(" ".join(t.get_text() for t in drawn["fidelity"].texts).split()) \
        if fidelity else ""
    check(len(joined.get("topk", [])) == 3
          and all(math.isclose(y, 0.5 + d * 4) for y, d in zip(joined["topk"], densities))
          and "from target density 0.001 to 0.1, the larger marker at 0.1" in caption_text,
          f"against the compression ratio a line runs along the densities: {joined} "
          f"{caption_text!r}")
    ticks = {axis.get_title(): [t.get_text() for t in axis.get_xticklabels()]
             for axis in drawn["time_breakdown"].axes if axis.get_visible()} \
        if "time_breakdown" in drawn else {}
    check(ticks == {"dense": [""], "topk": ["0.001", "0.01", "0.1"],
                    "gtopk": ["0.001", "0.01", "0.1"]},
          f"the time breakdown has a bar per density, dense's one bar unlabelled: {ticks}")
    # The grid's density as compressor.density too, and none for dense.
    check([plot_module.grid_density(r, ["compressor.density"])
           for r in ({"compressor.density": "0.05"}, {"compressor.density": ""})] == [0.05, None]
          and plot_module.grid_density({"compressor": '{"name": "dense"}'}, ["compressor"]) is None,
          "grid_density reads compressor.density and a compressor object's density")
    # At more than one worker count the workers stay the axis, a line per density.
    both = [dict(r, workers=w) for r in table for w in (8, 16)]
    for i, r in enumerate(both):
        r["point"] = f"q{i:03d}"
    plot_module.annotate(both, params)
    check({r["_along_name"] for r in both} == {"workers"}
          and "topk (density=0.01)" in {r["_variant"] for r in both},
          "with several worker counts the density stays a line of its own")

# A link-rate study at one worker count: the rate is the x axis, ticked as
# the grid wrote it, one panel, a line per compressor (it was a panel per
# rate, each a single point); dense is a line of its own.
with tempfile.TemporaryDirectory() as work:
    table = [r for r in synthetic_rows(full=True) if r["workers"] == 8]
    drawn, _, _, facets = draw_every_figure(table, work)
    axes = [a for a in drawn["throughput"].axes if a.get_visible()] if "throughput" in drawn else []
    lines = {line.get_label().split(" ")[0]: list(line.get_xdata())
             for line in (axes[0].get_lines() if axes else [])}
    check(facets == [] and len(axes) == 1
          and [t.get_text() for t in axes[0].get_xticklabels()] == ["1Gbps", "10Gbps"]
          and axes[0].get_xlabel() == "platform.link.bandwidth"
          and lines.get("dense") == [1.25e8, 1.25e9] and lines.get("deft") == [1.25e8, 1.25e9]
          and "linear scaling of dense" not in lines,
          f"a rate sweep at one worker count has the rate as its axis: {facets} {lines}")
    check(sorted(drawn) == ["density", "fidelity", "fidelity_rel_l2", "speedup", "throughput",
                            "time_breakdown"],
          f"one figure of each, no file per rate: {sorted(drawn)}")

# A parameter with a 0 among its values (a latency of 0s) is still the axis
# (it fell back to a panel of one point per value): a symmetric log one,
# 0 at its origin. Replayed points say whose density and fidelity they show
# (a replay was said to synthesize gradients).
with tempfile.TemporaryDirectory() as work:
    table = []
    for latency in ["0s", "1us", "10us"]:
        for row in synthetic_rows(full=True):
            if row["workers"] == 8 and row["platform.link.bandwidth"] == "1Gbps":
                row = {k: v for k, v in row.items() if k != "platform.link.bandwidth"}
                table.append(dict(row, **{"point": f"p{len(table):03d}",
                                          "platform.link.latency": latency,
                                          "gradients": "replay"}))
    table = [{k: r[k] for k in ["point", "platform.link.latency", "compressor"] + [
        k for k in r if k not in ("point", "platform.link.latency", "compressor")]} for r in table]
    drawn, _, _, facets = draw_every_figure(table, work)
    axis = drawn["speedup"].axes[0] if "speedup" in drawn else None
    check(facets == [] and axis is not None and axis.get_xscale() == "symlog"
          and [t.get_text() for t in axis.get_xticklabels()] == ["0s", "1us", "10us"],
          f"a latency of 0s among the values: a symmetric log axis from 0 "
          f"({facets}, {axis.get_xscale() if axis else None})")
    said = " ".join(" ".join(t.get_text() for t in drawn["fidelity"].texts).split()) \
        if "fidelity" in drawn else ""
    check("Replayed points (gcsim run --replay): their density and fidelity are the recorded "
          "run's." in said and "synthesize" not in said,
          f"replayed points say whose density and fidelity they show: {said!r}")

check.finish()
