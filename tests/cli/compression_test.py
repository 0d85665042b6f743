#!/usr/bin/python3
"""End-to-end checks of compression-aware runs on the shipped real trace
(16-worker Fashion-MNIST CNN): real selection sizes cross the network,
DEFT does not build up, gTop-k and gs-SGD scale as O(log P), topology
matters in the direction bandwidth says, timelines open, runs repeat.

Usage: compression_test.py PATH/TO/gcsim
"""
import copy
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TRACE = os.path.join(ROOT, "workloads", "traces", "fmnist-cnn-16w")

check = Checks()


def scenario(work, compressor, nodes, extra=None):
    document = {
        "name": "compression-test",
        "platform": {"name": "star", "topology": "star", "nodes": nodes,
                     "link": {"bandwidth": "10Gbps", "latency": "10us"}},
        "workload": TRACE,
        "device": os.path.join(ROOT, "platforms", "devices", "v100.json"),
        "training": {"iterations": 2, "batch_per_worker": 64},
        "compressor": compressor,
        "seed": 3,
    }
    document.update(extra or {})
    path = os.path.join(work, "scenario.json")
    with open(path, "w") as handle:
        json.dump(document, handle)
    return path


def crossing_spans(spans):
    """Complete events that start inside an open one on their track and end
    after it."""
    tracks = {}
    for e in spans:
        tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], -(e["ts"] + e["dur"])))
    crossing = 0
    for track in tracks.values():
        open_ends = []
        for start, negative_end in sorted(track):
            while open_ends and open_ends[-1] <= start + 1e-6:
                open_ends.pop()
            if open_ends and -negative_end > open_ends[-1] + 1e-6:
                crossing += 1
            open_ends.append(-negative_end)
    return crossing


def run(work, compressor, nodes, *args, extra=None, out="out"):
    path = scenario(work, compressor, nodes, extra)
    out = os.path.join(work, out)
    result = subprocess.run([GCSIM, "run", path, "--out", out, "--quiet", *args],
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise SystemExit(f"gcsim run failed ({result.returncode}): {result.stderr}")
    with open(os.path.join(out, "result.json"), "rb") as handle:
        raw = handle.read()
    return json.loads(raw), raw


with tempfile.TemporaryDirectory() as work:
    # top-k, union variant: the allreduce carries exactly the real union.
    for nodes in (4, 16):
        result, _ = run(work, {"name": "topk", "density": 0.01,
                               "variant": "allgather_indices_allreduce_values"}, nodes)
        for it in result["iterations"]:
            union = it["compressor_info"]["union_size"]
            k = it["compressor_info"]["k"]
            by_step = it["bytes_sent_per_worker_by_step"]
            ring = 2 * (nodes - 1) / nodes * 4 * union
            check(abs(by_step["allreduce values at the union"] - ring) <= 2 * nodes,
                  f"P={nodes}: the union allreduce carries the real union ({union} of k={k})")
            check(by_step["allgather indices"] == (nodes - 1) * k * 4,
                  f"P={nodes}: the index allgather carries k indices per worker")

    density = {}
    for nodes in (2, 4, 8, 16):
        # With the leader's k_i (sent with the bin assignment) the total is
        # exactly k; with each owner's own k_i (the reference code's default)
        # it wanders a little around k but never builds up with P.
        deft, _ = run(work, {"name": "deft", "density": 0.01, "k_source": "leader"}, nodes)
        local, _ = run(work, {"name": "deft", "density": 0.01}, nodes)
        topk, _ = run(work, {"name": "topk", "density": 0.01}, nodes)
        d = deft["summary"]["parameters"]
        k = max(1, int(0.01 * d))
        check(all(abs(it["density_after_aggregation"] - k / d) < 1e-12 for it in deft["iterations"]),
              f"P={nodes}: DEFT's aggregated density equals the target k/d exactly")
        check(all(abs(it["density_after_aggregation"] - k / d) < 0.1 * k / d for it in local["iterations"]),
              f"P={nodes}: DEFT with owners' own k_i stays within 10% of the target")
        density[nodes] = topk["summary"]["density_after_aggregation"]
    check(density[2] < density[4] < density[8] < density[16],
          f"local top-k builds up with P on the real trace: {density}")

    # The summary: each per-iteration number (and each number of an object
    # such as fidelity) is its mean over the iterations after the warm-up;
    # speedup and throughput are ratios of the mean times.
    result, _ = run(work, {"name": "dgc", "density": 0.01}, 4,
                    extra={"training": {"iterations": 4, "batch_per_worker": 64,
                                        "warmup_iterations": 1}})
    summary, after = result["summary"], result["iterations"][1:]
    wrong = []

    def compare(name, got, values):
        if abs(got - sum(values) / len(values)) > 1e-12 * max(1.0, abs(got)):
            wrong.append(f"{name}: {got} against the mean {sum(values) / len(values)}")

    for key, value in after[0].items():
        if key in ("speedup_vs_dense", "throughput_samples_per_s", "compressor_info"):
            continue
        if isinstance(value, dict):
            for inner in value:
                compare(f"{key}.{inner}", summary[key][inner], [it[key][inner] for it in after])
        else:
            compare(key, summary[key], [it[key] for it in after])
    mean_time = summary["iteration_time_s"]
    if abs(summary["speedup_vs_dense"] - summary["dense_iteration_time_s"] / mean_time) > 1e-12:
        wrong.append(f"speedup {summary['speedup_vs_dense']}, dense / compressed "
                     f"{summary['dense_iteration_time_s'] / mean_time}")
    if abs(summary["throughput_samples_per_s"] - 4 * 64 / mean_time) > 1e-9:
        wrong.append(f"throughput {summary['throughput_samples_per_s']}")
    check(not wrong and "fidelity" in summary and len(after) == 3,
          f"the summary is the mean of iterations 1-3 (warm-up 1), fidelity included: {wrong}")

    # Each iteration's ratios are its own: throughput is its samples over its
    # time, speedup its dense baseline's time over its own, and that baseline
    # is the dense run's own iteration (with stragglers, each differs). The
    # compression ratio is the dense bytes per worker over the mean worker's.
    varied_training = {"iterations": 4, "batch_per_worker": 64, "compute_variation": 0.5}
    leader, _ = run(work, {"name": "cltk", "density": 0.01}, 4,
                    extra={"training": varied_training}, out="ratios")
    alone, _ = run(work, {"name": "dense"}, 4, extra={"training": varied_training},
                   out="ratios-dense")
    wrong = []
    for i, (it, base) in enumerate(zip(leader["iterations"], alone["iterations"])):
        if not math.isclose(it["throughput_samples_per_s"] * it["iteration_time_s"], 4 * 64,
                            rel_tol=1e-12):
            wrong.append(f"{i}: throughput {it['throughput_samples_per_s']}")
        if not math.isclose(it["speedup_vs_dense"],
                            it["dense_iteration_time_s"] / it["iteration_time_s"], rel_tol=1e-12):
            wrong.append(f"{i}: speedup {it['speedup_vs_dense']}")
        if not math.isclose(it["dense_iteration_time_s"], base["iteration_time_s"], rel_tol=1e-9):
            wrong.append(f"{i}: dense {it['dense_iteration_time_s']} against the dense run's "
                         f"{base['iteration_time_s']}")
        exposed = sum(it["compression_exposed_kernels_s"].values())
        if not math.isclose(exposed, it["compression_exposed_s"], rel_tol=1e-9, abs_tol=1e-15):
            wrong.append(f"{i}: exposed kernels {exposed} against {it['compression_exposed_s']}")
    ratio = alone["summary"]["bytes_sent_per_worker"] / leader["summary"]["bytes_sent_per_worker"]
    check(not wrong and math.isclose(leader["summary"]["compression_ratio"], ratio, rel_tol=1e-12)
          and leader["summary"]["bytes_sent_max_worker"]
          > 1.05 * leader["summary"]["bytes_sent_per_worker"],
          f"per-iteration throughput, speedup and dense time, and the compression ratio "
          f"({leader['summary']['compression_ratio']}, expected {ratio}): {wrong}")

    # Top-k that keeps every coordinate applies the dense average exactly,
    # on the whole model or bucket by bucket: cosine 1, relative L2 error 0,
    # all the energy delivered.
    for scope in ("model", "bucket"):
        training = {"iterations": 2, "batch_per_worker": 64, "bucket_size": "8KiB",
                    "compression_scope": scope}
        exact, _ = run(work, {"name": "topk", "density": 1.0}, 4, extra={"training": training},
                       out=f"exact-{scope}")
        fidelity = exact["summary"]["fidelity"]
        check(exact["model"]["compression_scope"] == scope
              and abs(fidelity["cosine"] - 1) < 1e-6 and fidelity["rel_l2"] < 1e-5
              and abs(fidelity["energy_share"] - 1) < 1e-5
              and exact["summary"]["density_after_aggregation"] == 1.0,
              f"top-k of density 1, {scope} scope, is the dense average: {fidelity}")

    # The summary table's "compression not hidden" is the exposed part (a
    # per-bucket run hides some of its kernels).
    printed = subprocess.run([GCSIM, "run", scenario(work, {"name": "topk", "density": 0.01}, 8, {
                                  "training": {"iterations": 2, "batch_per_worker": 64,
                                               "bucket_size": "8KiB"}}),
                              "--out", os.path.join(work, "b1-printed")],
                             capture_output=True, text=True, timeout=600)
    with open(os.path.join(work, "b1-printed", "result.json")) as handle:
        hidden = json.load(handle)["summary"]
    line = next((row for row in printed.stdout.splitlines()
                 if row.strip().startswith("compression not hidden")), "")
    shown = line.split()[-2:] if line else []
    check(hidden["compression_exposed_s"] < 0.9 * hidden["compression_s"] and len(shown) == 2
          and shown[1] in ("s", "ms", "us") and math.isclose(
              float(shown[0]) * {"s": 1, "ms": 1e-3, "us": 1e-6}[shown[1]],
              hidden["compression_exposed_s"], rel_tol=0.01),
          f"the summary's compression not hidden is compression_exposed_s: {line.strip()!r}, "
          f"{hidden['compression_exposed_s']} of {hidden['compression_s']} s")

    def max_bytes(compressor, nodes):
        result, _ = run(work, compressor, nodes)
        return max(it["bytes_sent_max_worker"] for it in result["iterations"])

    for name, params in (("gtopk", {"density": 0.01}), ("gs_sgd", {"density": 0.01})):
        small = max_bytes(dict(name=name, **params), 4)
        large = max_bytes(dict(name=name, **params), 16)
        # log2 16 / log2 4 = 2; the root's broadcast adds a log P term too.
        check(large / small <= 2.2, f"{name}: busiest worker sends O(log P): x{large / small:.2f} from P=4 to 16")
    # The summary lists gTop-k's rounds as their strides go (1, 2, ..., 16),
    # not as text sorts them (1, 16, 2, ...).
    printed = subprocess.run([GCSIM, "run", scenario(work, {"name": "gtopk", "density": 0.01}, 32),
                              "--out", os.path.join(work, "gtopk-32")],
                             capture_output=True, text=True, timeout=600)
    strides = [int(line.split("stride")[1].split()[0]) for line in printed.stdout.splitlines()
               if "gtopk merge, stride" in line]
    check(strides == [1, 2, 4, 8, 16], f"the summary lists the merge rounds by stride: {strides}")
    check("note: sends more bytes than dense" not in printed.stdout,
          "gTop-k at 1% sends less than dense, and no note says otherwise")
    # A count sketch at the default 10 k columns outweighs the gradient past
    # a density of about 2%: the summary says so, with the sketch's size.
    printed = subprocess.run([GCSIM, "run", scenario(work, {"name": "gs_sgd", "density": 0.05}, 4),
                              "--out", os.path.join(work, "gs-dense")],
                             capture_output=True, text=True, timeout=600)
    with open(os.path.join(work, "gs-dense", "result.json")) as handle:
        gs_dense = json.load(handle)
    columns = gs_dense["iterations"][0]["compressor_info"]["sketch_columns"]
    ratio = gs_dense["summary"]["compression_ratio"]
    check(ratio < 1 and f"  note: sends more bytes than dense (compression ratio {ratio:.2f}): it "
          f"sends count sketches of 5 x {columns} floats a worker; columns default to 10 k: fewer "
          "columns or a lower density send less" in printed.stdout
          and f"compression ratio (dense/sent) {ratio:.2f}" in " ".join(printed.stdout.split()),
          f"gs-SGD at 5% says its sketch outweighs the gradient (ratio {ratio}): "
          f"{printed.stdout[:700]!r}")
    # gs-SGD's sketches through NCCL's double binary tree: on 16 workers
    # fewer latencies than recursive doubling's, and a replay of its schedule
    # keeps the tree.
    gs_tree, _ = run(work, {"name": "gs_sgd", "density": 0.01, "allreduce": "tree"}, 16,
                     out="gs-tree")
    with open(os.path.join(work, "gs-tree", "schedule.json")) as handle:
        kinds = {step["kind"] for it in json.load(handle)["iterations"] for step in it["steps"]}
    check(kinds == {"allreduce_tree"}, f"gs_sgd with allreduce tree asks for tree allreduces: {kinds}")
    replayed, _ = run(work, {"name": "gs_sgd", "density": 0.01, "allreduce": "tree"}, 16, "--replay",
                      os.path.join(work, "gs-tree", "schedule.json"), out="gs-tree-replay")
    check(replayed["summary"]["communication_total_s"] == gs_tree["summary"]["communication_total_s"],
          "a replayed tree schedule takes the same time")
    # CLT-k's allreduce names no algorithm: it runs the run's, and a replay
    # on a ring cluster takes the ring's time: the schedule says
    # "allreduce", not which.
    cltk = {"name": "cltk", "density": 0.01}
    tree_run, _ = run(work, cltk, 16, extra={"training": {"iterations": 2, "batch_per_worker": 64,
                                                          "allreduce": "tree"}}, out="cltk-tree")
    ring_run, _ = run(work, cltk, 16, out="cltk-ring")
    with open(os.path.join(work, "cltk-tree", "schedule.json")) as handle:
        kinds = {step["kind"] for it in json.load(handle)["iterations"] for step in it["steps"]}
    check(kinds == {"broadcast", "allreduce"}, f"cltk asks for a broadcast and an allreduce: {kinds}")
    tree_summary, ring_summary = tree_run["summary"], ring_run["summary"]
    check(tree_summary["communication_total_s"] < 0.8 * ring_summary["communication_total_s"],
          "cltk's allreduce follows training.allreduce: of 1.2 KB it pays latencies, "
          "2 log2 P of them in the tree against 2(P-1) in the ring: "
          f"{tree_summary['communication_total_s']} against {ring_summary['communication_total_s']} s")
    replayed, _ = run(work, cltk, 16, "--replay", os.path.join(work, "cltk-tree", "schedule.json"),
                      out="cltk-replay")
    check(replayed["summary"]["communication_total_s"] == ring_summary["communication_total_s"],
          "the tree run's schedule replayed on the ring cluster takes the ring run's time")
    # BF16's sums round in the order the run's allreduce adds: a ring adds
    # each share to a sum of up to 15 others, a tree or recursive doubling
    # adds partial sums of comparable size, four or five roundings deep.
    errors = {}
    for algorithm in ("ring", "tree", "recursive_doubling"):
        bf16, _ = run(work, {"name": "bf16"}, 16, out="bf16-" + algorithm,
                      extra={"training": {"iterations": 2, "batch_per_worker": 64,
                                          "allreduce": algorithm}})
        errors[algorithm] = bf16["summary"]["fidelity"]["rel_l2"]
    check(errors["tree"] < 0.85 * errors["ring"] and
          errors["recursive_doubling"] < 0.85 * errors["ring"],
          f"bf16 rounds its sums in the allreduce's order (relative L2 errors {errors})")
    # The scenario's own compressor is ignored by a replay: result.json's
    # scenario names the schedule's (it named the scenario file's), as the
    # recorded run's scenario wrote it (it had every parameter, so plot.py
    # took a run and its replay for two compressors), and its model the
    # parameters the run had.
    other, _ = run(work, {"name": "topk", "density": 0.05}, 16, "--replay",
                   os.path.join(work, "cltk-tree", "schedule.json"), out="cltk-replay-topk")
    with open(os.path.join(work, "cltk-tree", "schedule.json")) as handle:
        recorded = json.load(handle)
    check(other["scenario"]["compressor"] == tree_run["scenario"]["compressor"] == cltk
          and recorded["scenario_compressor"] == cltk
          and other["model"]["compressor_params"] == tree_run["model"]["compressor_params"]
          and dict(recorded["compressor"], name=None) == dict(tree_run["model"]["compressor_params"],
                                                              name=None)
          and other["summary"]["communication_total_s"] == ring_summary["communication_total_s"],
          f"a replay records the recorded run's compressor as written: {other['scenario']['compressor']}"
          f", and runs its parameters: {other['model']['compressor_params']}")
    # So plot.py draws a run and its replay as one compressor.
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import plot  # noqa: E402
    rows, params = plot.read_results([os.path.join(work, name, "result.json")
                                      for name in ("cltk-tree", "cltk-replay-topk")])
    check({row["compressor_name"] for row in rows} == {"cltk"}
          and not [param for param in params if param.startswith("compressor")],
          f"plot.py: a run and its replay are one compressor, no parameter of it differs: {params}")
    # A schedule of gcsim before it kept the scenario's compressor: the
    # full parameters stand for it. One edited (another name, another
    # value, a parameter the compressor has not, not an object) is refused:
    # the replay's result.json would name a run that never happened.
    for label, edit, expected in (
            ("old", None, recorded["compressor"]),
            ("renamed", {"name": "topk", "density": 0.01},
             '/scenario_compressor/name: names "topk", but the schedule\'s compressor is "cltk"'),
            ("denser", {"name": "cltk", "density": 0.5},
             '/scenario_compressor: {"density":0.5,"name":"cltk"} with its defaults is not the '
             "schedule's compressor"),
            ("unknown", {"name": "cltk", "density": 0.01, "bogus": 1}, "/scenario_compressor/bogus"),
            ("nameless", {"density": 0.01}, '/scenario_compressor: expected the compressor as the '
             'recorded scenario wrote it, an object with a "name"'),
            ("text", "cltk", "/scenario_compressor: expected the compressor as the recorded "
             "scenario wrote it, an object, got")):
        edited = dict(recorded)
        if edit is None:
            del edited["scenario_compressor"]
        else:
            edited["scenario_compressor"] = edit
        path = os.path.join(work, f"schedule-{label}.json")
        with open(path, "w") as handle:
            json.dump(edited, handle)
        done = subprocess.run([GCSIM, "run", scenario(work, cltk, 16, None), "--replay", path,
                               "--out", os.path.join(work, "replay-" + label), "--quiet"],
                              capture_output=True, text=True, timeout=600)
        if isinstance(expected, dict):
            with open(os.path.join(work, "replay-" + label, "result.json")) as handle:
                said = json.load(handle)["scenario"]["compressor"]
            check(done.returncode == 0 and said == expected,
                  f"a schedule without scenario_compressor replays, its scenario the full "
                  f"parameters: {done.returncode} {said}")
        else:
            check(done.returncode == 2 and done.stderr.count("\n") == 1 and expected in done.stderr
                  and not os.path.exists(os.path.join(work, "replay-" + label, "result.json")),
                  f"an edited scenario_compressor ({label}) is refused: {done.stderr.strip()}")
    # A kernel that selects more than its n was priced past anything a
    # compressor runs, without a word.
    edited = json.loads(json.dumps(recorded))
    # (A run on the whole model records one part, its kernels in the iteration.)
    where = next((i, w, k) for i, it in enumerate(edited["iterations"])
                 for w, worker in enumerate(it["kernels"])
                 for k, kernel in enumerate(worker) if kernel[0] == "topk_select")
    kernel = edited["iterations"][where[0]]["kernels"][where[1]][where[2]]
    kernel[3] = kernel[2] + 1

    def replay_edited(schedule, label):
        """Replays an edited schedule of the CLT-k run on its scenario."""
        path = os.path.join(work, f"schedule-{label}.json")
        with open(path, "w") as handle:
            json.dump(schedule, handle)
        return subprocess.run([GCSIM, "run", scenario(work, cltk, 16, None), "--replay", path,
                               "--out", os.path.join(work, f"replay-{label}"), "--quiet"],
                              capture_output=True, text=True, timeout=600)
    done = replay_edited(edited, "k-past-n")
    check(done.returncode == 2 and done.stderr.count("\n") == 1
          and "/iterations/%d/kernels/%d/%d/3: k " % where in done.stderr
          and "is more than the kernel's n" in done.stderr,
          f"a replayed kernel selecting more than its n is refused: {done.stderr.strip()}")
    # A kernel entry's fields are named when wrong (the path stopped at
    # /kernels), and a before_step written 1.0 is the integer it is.
    for value, refused in ((float(kernel[1]), False), ("x", True)):
        edited = json.loads(json.dumps(recorded))
        edited["iterations"][where[0]]["kernels"][where[1]][where[2]][1] = value
        done = replay_edited(edited, "before-step")
        check(done.returncode == 0 if not refused else
              done.returncode == 2 and "/iterations/%d/kernels/%d/%d/1: expected before_step" % where
              in done.stderr, f"a replayed kernel's before_step {value!r}: {done.stderr.strip()}")
    small = max_bytes({"name": "topk", "density": 0.01}, 4)
    large = max_bytes({"name": "topk", "density": 0.01}, 16)
    check(large / small >= 4.5, f"topk allgather grows with P-1: x{large / small:.2f} from P=4 to 16")

    # Gradients that are not all the trace's own are said, in the summary
    # and in result.json: 4 iterations captured, 6 simulated, 24 workers
    # from 16. Taken again without a word, the same gradients came back.
    path = scenario(work, {"name": "topk", "density": 0.01}, 24,
                    {"training": {"iterations": 6, "batch_per_worker": 64}})
    out = os.path.join(work, "in-turn")
    printed = subprocess.run([GCSIM, "run", path, "--out", out], capture_output=True, text=True,
                             timeout=600)
    with open(os.path.join(out, "result.json")) as handle:
        gradients = json.load(handle)["model"]["gradients"]
    check("  gradients: 8 of the 24 workers synthesized from the 16 captured "
          "(shrunk_mean_scaling); the trace's 4 captured iterations taken in turn for 6 simulated "
          "(iteration i is captured iteration i mod 4), so from iteration 4 on the residuals "
          "carried in were built on later captured iterations than the gradient they meet: "
          "density and fidelity there are not a training run's\n" in printed.stdout
          and gradients.get("iterations_taken_in_turn") is True,
          f"synthesized workers and reused iterations are said ({printed.stdout[:400]!r})")
    # (All 4 captured iterations: the boundary of "taken in turn".)
    fewer = subprocess.run([GCSIM, "run", scenario(work, {"name": "topk", "density": 0.01}, 16,
                                                   {"training": {"iterations": 4,
                                                                 "batch_per_worker": 64}}),
                            "--out", os.path.join(work, "all-captured")],
                           capture_output=True, text=True, timeout=600)
    with open(os.path.join(work, "all-captured", "result.json")) as handle:
        all_captured = json.load(handle)["model"]["gradients"]
    check("  gradients:" not in fewer.stdout and "iterations_taken_in_turn" not in all_captured,
          "a run on exactly the trace's workers and iterations says nothing of it")
    # Fewer workers than captured: which ones was said nowhere but in
    # result.json's counts, and a subset's union is smaller.
    subset = subprocess.run([GCSIM, "run", scenario(work, {"name": "topk", "density": 0.01}, 8),
                             "--out", os.path.join(work, "subset")],
                            capture_output=True, text=True, timeout=600)
    check("  gradients: the first 8 of the 16 captured workers\n" in subset.stdout,
          f"a run on some of the captured workers says which ({subset.stdout[:300]!r})")
    plain, _ = run(work, {"name": "topk", "density": 0.01}, 8, out="own")
    check("iterations_taken_in_turn" not in plain["model"]["gradients"],
          "a run within the trace's iterations does not say they were taken in turn")
    with open(os.path.join(TRACE, "manifest.json")) as handle:
        traced_tensors = len(json.load(handle)["layers"])
    check(plain["model"]["gradients"]["layers"] == traced_tensors,
          f"the compressors saw the trace's {traced_tensors} tensors as layers: "
          f"{plain['model']['gradients'].get('layers')}")
    # A layer spec's gradients are synthesized: its density and fidelity
    # lines are the synthesizer's, and the summary says so above them.
    synthetic = subprocess.run(
        [GCSIM, "run", os.path.join(ROOT, "workloads", "scenarios", "topk-resnet18-8x10g.json"),
         "--set", "training.iterations=2", "--out", os.path.join(work, "synthetic")],
        capture_output=True, text=True, timeout=600)
    lines = synthetic.stdout.splitlines()
    said = [i for i, line in enumerate(lines) if line.startswith("  gradients: synthetic")]
    fidelity = [i for i, line in enumerate(lines) if line.startswith("  fidelity")]
    check(synthetic.returncode == 0 and len(said) == 1 and fidelity and said[0] < fidelity[0]
          and not any(line.startswith("  gradients: synthetic") for line in printed.stdout
                      .splitlines()),
          f"synthetic gradients are said above their fidelity, a trace's are not: {lines[:3]}")
    # A spec's tensors are the compressors' layers (a layer spec's layer is a module).
    with open(os.path.join(ROOT, "workloads", "models", "resnet18-cifar10.json")) as handle:
        spec_layers = json.load(handle)["layers"]
    spec_tensors = sum(len(layer.get("tensors", [])) for layer in spec_layers)
    modules = sum(1 for layer in spec_layers if layer["parameters"] > 0)
    with open(os.path.join(work, "synthetic", "result.json")) as handle:
        seen = json.load(handle)["model"]["gradients"].get("layers")
    check(spec_tensors > modules and seen == spec_tensors,
          f"the compressors saw the spec's {spec_tensors} tensors as layers, not its "
          f"{modules} modules: {seen}")

    # IWP's dense warm-up inside the averaged iterations is said; it pulls
    # the means towards dense.
    for warmup, said in ((2, True), (5, False)):
        path = scenario(work, {"name": "iwp", "density": 0.01}, 8,
                        {"training": {"iterations": 6, "batch_per_worker": 64,
                                      "warmup_iterations": warmup}})
        printed = subprocess.run([GCSIM, "run", path, "--out", os.path.join(work, "iwp-note")],
                                 capture_output=True, text=True, timeout=600)
        note = ("  note: iterations 0 to 4 are iwp's dense warm-up, and 3 of them are in these "
                "means (training.warmup_iterations 5 leaves them out)\n")
        # Not said at all when training.warmup_iterations covers it.
        check((note in printed.stdout) == said == ("dense warm-up" in printed.stdout)
              and printed.returncode == 0,
              f"IWP's warm-up in the means is said with training.warmup_iterations {warmup}: "
              f"{said}")
    # DGC's and Sketched-SGD's momentum is in their update, not in the dense
    # average their fidelity is taken against: said where it is, per bucket
    # too; not where Sketched-SGD sends (and so clears) everything.
    for name, momentum, density, scope, said in (
            ("dgc", 0.9, 0.01, "model", True), ("dgc", 0.9, 0.01, "bucket", True),
            ("dgc", 0.0, 0.01, "model", False), ("sketched_sgd", 0.9, 0.01, "model", True),
            ("sketched_sgd", 0.9, 1.0, "model", False)):
        path = scenario(work, {"name": name, "density": density, "momentum": momentum}, 4,
                        {"training": {"iterations": 2, "batch_per_worker": 64,
                                      "compression_scope": scope, "bucket_size": "50kB"}})
        printed = subprocess.run([GCSIM, "run", path, "--out", os.path.join(work, "dgc-note")],
                                 capture_output=True, text=True, timeout=600)
        check(printed.returncode == 0
              and (f"  note: {name}'s update carries its momentum" in printed.stdout) == said,
              f"{name}'s momentum in its fidelity is said with momentum {momentum}, density "
              f"{density} ({scope}): {said} {printed.stderr[-200:]!r}")
    # PowerSGD's plain allreduces before start_iteration are one too, per
    # bucket (three here) as on the whole model.
    for scope in ("model", "bucket"):
        path = scenario(work, {"name": "powersgd", "start_iteration": 2}, 4,
                        {"training": {"iterations": 4, "batch_per_worker": 64,
                                      "compression_scope": scope, "bucket_size": "50kB"}})
        parts_timeline = os.path.join(work, f"psgd-{scope}.trace.json")
        printed = subprocess.run([GCSIM, "run", path, "--out", os.path.join(work, "psgd-note"),
                                  "--timeline", parts_timeline],
                                 capture_output=True, text=True, timeout=600)
        parts = None
        if printed.returncode == 0:
            with open(os.path.join(work, "psgd-note", "result.json")) as handle:
                parts = json.load(handle)["model"]["compression_parts"]
        check(parts == (1 if scope == "model" else 3)
              and "  note: iterations 0 to 1 are powersgd's dense warm-up, and 2 of them are in "
              "these means (training.warmup_iterations 2 leaves them out)\n" in printed.stdout,
              f"PowerSGD's iterations before start_iteration in the means are said ({scope}, "
              f"{parts} parts): {printed.stdout[:600]!r} {printed.stderr[-300:]!r}")
        # Each part's steps and kernels are named by their bucket in the
        # timeline, as dense buckets are (three "allreduce P factors" looked
        # alike); one part's need no number.
        with open(parts_timeline) as handle:
            named = {e["name"] for e in json.load(handle)["traceEvents"]
                     if e.get("ph") == "X" and e["pid"] == 2 and e["cat"] != "compute"}
        expected = ({f"allreduce P factors, bucket {b}" for b in range(3)}
                    if scope == "bucket" else {"allreduce P factors"})
        check(expected <= named and any(", bucket" in n for n in named) == (scope == "bucket"),
              f"a per-bucket run's timeline names the bucket of each step ({scope}): "
              f"{sorted(named)[:8]}")

    # Determinism and the timeline.
    timeline = os.path.join(work, "timeline.json")
    first, raw_a = run(work, {"name": "deft", "density": 0.01}, 8, "--timeline", timeline, out="t1")
    _, raw_b = run(work, {"name": "deft", "density": 0.01}, 8, out="t2")
    check(raw_a == raw_b, "a compressed run repeats byte for byte")
    with open(timeline) as handle:
        events = json.load(handle)["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    check({names[(2, e["tid"])] for e in spans if e["pid"] == 2}
          == {f"worker {w} {kind}" for w in range(8) for kind in ("compute", "kernel",
                                                                   "communication")}
          | {"iterations"},
          "the timeline has a track of iterations, and one per worker and kind of work")
    # Where an iteration ends was seen nowhere: the workers' spans of
    # neighbouring iterations overlap.
    for pid, key in ((1, "dense_iteration_time_s"), (2, "iteration_time_s")):
        marks = sorted((e for e in spans if e["pid"] == pid and e["cat"] == "iteration"),
                       key=lambda e: e["ts"])
        ends = [sum(it[key] for it in first["iterations"][:i + 1]) * 1e6
                for i in range(len(first["iterations"]))]
        check([e["name"] for e in marks] == [f"iteration {i}" for i in range(len(ends))]
              and all(abs(e["ts"] + e["dur"] - end) <= 1e-6 * end for e, end in zip(marks, ends))
              and marks[0]["ts"] == 0,
              f"run {pid}'s iterations track spans each iteration as result.json times it")
    check({"compute", "kernel", "communication"} <= {e["cat"] for e in spans},
          "the timeline shows compute, kernels and communication")
    # Listed by run and start, metadata first (spans were written as they ended).
    order = [(e["pid"], e["ts"], -e["dur"]) for e in events if e.get("ph") == "X"]
    first_span = next(i for i, e in enumerate(events) if e.get("ph") == "X")
    check(order == sorted(order) and all(e.get("ph") == "X" for e in events[first_span:]),
          "the timeline lists its spans by run and start time, after the metadata")
    check(all(e["dur"] >= 0 for e in spans), "timeline spans have non-negative durations")
    # Each run from 0, its spans over its own iterations: the compressed run
    # started where the dense baseline ended, not under it.
    for pid, key in ((1, "dense_iteration_time_s"), (2, "iteration_time_s")):
        own = [e for e in spans if e["pid"] == pid]
        length = sum(it[key] for it in first["iterations"]) * 1e6
        check(min(e["ts"] for e in own) == 0
              and abs(max(e["ts"] + e["dur"] for e in own) - length) <= 1e-6 * length,
              f"the timeline's run {pid} lasts its iterations from 0 ({length:.0f} us)")
    # Complete events on one track must nest: a bucket's allreduce that began
    # inside the backward pass and ended after it shared the worker's track.
    # The dense quickstart's bucket allreduces overlap its backward pass.
    dense_timeline = os.path.join(work, "dense-timeline.json")
    subprocess.run([GCSIM, "run", os.path.join(ROOT, "workloads", "scenarios", "quickstart.json"),
                    "--out", os.path.join(work, "dense"), "--quiet", "--timeline", dense_timeline],
                   check=True, timeout=120)
    with open(dense_timeline) as handle:
        dense_spans = [e for e in json.load(handle)["traceEvents"] if e.get("ph") == "X"]
    computing = [e for e in dense_spans if e["cat"] == "compute"]
    check(any((c["tid"] - 1) // 3 == (p["tid"] - 1) // 3 and p["ts"] < c["ts"] < p["ts"] + p["dur"]
              for c in dense_spans if c["cat"] == "communication" for p in computing),
          "a dense allreduce starts inside its worker's compute (what the track check is for)")
    # Each communication span's args say the iteration and the bytes its
    # worker sent: per iteration, their sum over a worker's spans is that
    # worker's bytes in result.json (mean and busiest); kernels have sizes.
    with open(os.path.join(work, "dense", "result.json")) as handle:
        dense_result = json.load(handle)
    for name, own, result in (("compressed", [e for e in spans if e["pid"] == 2], first),
                              ("dense", dense_spans, dense_result)):
        sent = {}
        for e in own:
            if e["cat"] == "communication":
                key = (e["args"]["iteration"], (e["tid"] - 1) // 3)
                sent[key] = sent.get(key, 0) + e["args"]["bytes_sent"]
        iterations = result["iterations"]
        per_iteration = [[sent.get((i, w), 0) for w in range(result["summary"]["workers"])]
                         for i in range(len(iterations))]
        check([(sum(b) / len(b), max(b)) for b in per_iteration]
              == [(it["bytes_sent_per_worker"], it["bytes_sent_max_worker"]) for it in iterations]
              and all(e["args"]["iteration"] in range(len(iterations)) for e in own
                      if e["cat"] != "iteration"),
              f"the {name} timeline's bytes_sent args add up to result.json's bytes per worker: "
              f"{[max(b) for b in per_iteration]}")
    check(all(isinstance(e["args"].get("n"), int) and e["args"]["n"] > 0
              for e in spans if e["cat"] == "kernel"),
          "every kernel span of the compressed run says its n")
    crossing = crossing_spans(spans) + crossing_spans(dense_spans)
    check(crossing == 0, f"spans on one track nest or follow each other ({crossing} cross)")
    for field in ("compression_s", "density_after_aggregation", "speedup_vs_dense"):
        check(field in first["summary"], f"summary.{field} present")
    check("cosine" in first["summary"]["fidelity"] and "rel_l2" in first["summary"]["fidelity"],
          "summary.fidelity has cosine and rel_l2")
    check(first["model"]["gradients"]["kind"] == "trace", "result.json says the gradients came from the trace")
    # The trace's own times are the compute, whatever the device profile, and
    # the result says so.
    check(first["model"]["compute_times"] == {"source": "trace capture", "device": "cpu",
                                              "micro_batch": 32, "scaled_to_batch": 64},
          f"result.json says the compute is the trace's capture times: {first['model'].get('compute_times')}")

    # A platform's float16_sum (gloo's float16 sum on CPUs) slows fp16's
    # allreduce, shared like compute on a machine's cores; dense and fp32
    # compressors do not sum float16 and keep their times.
    def on_cpus(sum_time):
        platform = {"name": "cpus", "topology": "star", "nodes": 4, "shared_cores": 2,
                    "link": {"bandwidth": "1Gbps", "latency": "50us"}}
        if sum_time:
            platform["float16_sum"] = sum_time
        return {"platform": platform}
    fp16_free, _ = run(work, {"name": "fp16"}, 4, extra=on_cpus(None), out="f16a")
    fp16_summed, _ = run(work, {"name": "fp16"}, 4, extra=on_cpus("20ns"), out="f16b")
    topk_summed, _ = run(work, {"name": "topk", "density": 0.01}, 4, extra=on_cpus("20ns"),
                         out="f16c")
    topk_free, _ = run(work, {"name": "topk", "density": 0.01}, 4, extra=on_cpus(None),
                       out="f16d")
    free, summed = fp16_free["summary"], fp16_summed["summary"]
    check(summed["iteration_time_s"] > free["iteration_time_s"]
          and summed["bytes_sent_per_worker"] == free["bytes_sent_per_worker"]
          and summed["dense_iteration_time_s"] == free["dense_iteration_time_s"]
          and topk_summed["summary"] == topk_free["summary"],
          f"float16_sum slows fp16 alone: {free['iteration_time_s']} -> "
          f"{summed['iteration_time_s']} s, dense and top-k as they were")

    # Timing-only replay: the schedule a compressed run writes, simulated
    # again without tensors, gives the same times on the same platform and
    # follows the network elsewhere; a worker-count mismatch is bad input.
    schedule = os.path.join(work, "t1", "schedule.json")
    check(os.path.exists(schedule), "a compressed run writes its schedule.json")
    replay, _ = run(work, {"name": "deft", "density": 0.01}, 8, "--replay", schedule, out="r1")
    for field in ("iteration_time_s", "compression_s", "communication_s", "bytes_sent_per_worker",
                  "density_after_aggregation"):
        check(replay["summary"][field] == first["summary"][field], f"replay reproduces summary.{field}")
    check(replay["model"]["gradients"]["kind"] == "replay", "result.json says the run was a replay")
    # A replay runs the schedule's iterations, not the scenario file's count
    # (result.json said 5 with 2 run), or the first N of a --set.
    longer, _ = run(work, {"name": "deft", "density": 0.01}, 8, "--replay", schedule,
                    extra={"training": {"iterations": 5, "batch_per_worker": 64}}, out="r4")
    check(len(longer["iterations"]) == longer["scenario"]["training"]["iterations"] == 2,
          "a replay's result.json says the schedule's 2 iterations ran: "
          f"{longer['scenario']['training']['iterations']}")
    # Nor is its warm-up checked against the file's count: 1 of the 2 replayed
    # was refused as "fewer than training.iterations (1)".
    warm, _ = run(work, {"name": "deft", "density": 0.01}, 8, "--replay", schedule,
                  extra={"training": {"iterations": 1, "warmup_iterations": 1}}, out="r8")
    check(len(warm["iterations"]) == 2 and warm["iterations"][0].get("warmup") is True
          and warm["summary"]["iteration_time_s"] == warm["iterations"][1]["iteration_time_s"],
          "a replay's warm-up counts against the schedule's iterations")
    shortened, _ = run(work, {"name": "deft", "density": 0.01}, 8, "--replay", schedule,
                       "--set", "training.iterations=1", out="r5")
    # (Times to rounding: the compressed run starts at another clock, after
    # one dense iteration instead of two.)
    check(len(shortened["iterations"]) == shortened["scenario"]["training"]["iterations"] == 1
          and shortened["iterations"][0]["bytes_sent_per_worker_by_step"]
          == replay["iterations"][0]["bytes_sent_per_worker_by_step"]
          and math.isclose(shortened["iterations"][0]["iteration_time_s"],
                           replay["iterations"][0]["iteration_time_s"], rel_tol=1e-12),
          "--set training.iterations=1 replays the schedule's first iteration")
    # As many iterations as recorded is all of them, not too many.
    exact, _ = run(work, {"name": "deft", "density": 0.01}, 8, "--replay", schedule,
                   "--set", "training.iterations=2", out="r9")
    check(len(exact["iterations"]) == 2, "--set training.iterations=2 replays both recorded")
    # A warm-up as long as the replayed schedule leaves nothing to average.
    all_warm = subprocess.run([GCSIM, "run", scenario(work, {"name": "deft", "density": 0.01}, 8,
                                                      {"training": {"iterations": 5,
                                                                    "warmup_iterations": 2,
                                                                    "batch_per_worker": 64}}),
                               "--out", os.path.join(work, "r10"), "--replay", schedule],
                              capture_output=True, text=True, timeout=60)
    check(all_warm.returncode == 2 and all_warm.stderr.startswith(schedule + ": /iterations: the "
                                                                  "schedule has 2 iterations"),
          f"a replay with as many warm-up iterations as recorded is refused: "
          f"{all_warm.stderr.strip()}")
    # The replayed schedule is an input: a timeline onto it is refused.
    schedule_before = open(schedule, "rb").read()
    onto = subprocess.run([GCSIM, "run", scenario(work, {"name": "deft", "density": 0.01}, 8),
                           "--out", os.path.join(work, "r11"), "--replay", schedule,
                           "--timeline", schedule], capture_output=True, text=True, timeout=60)
    check(onto.returncode == 2 and onto.stderr.startswith("--timeline:")
          and open(schedule, "rb").read() == schedule_before,
          f"--timeline onto the --replay schedule is refused: {onto.stderr.strip()}")
    whole, _ = run(work, {"name": "deft", "density": 0.01}, 8, "--replay", schedule,
                   "--set", 'training={"batch_per_worker": 64}', out="r7")
    check(len(whole["iterations"]) == 2,
          "a --set of the whole training object without a count replays every iteration")
    too_many = subprocess.run([GCSIM, "run", scenario(work, {"name": "deft", "density": 0.01}, 8),
                               "--out", os.path.join(work, "r6"), "--replay", schedule,
                               "--set", "training.iterations=3"],
                              capture_output=True, text=True, timeout=60)
    check(too_many.returncode == 2 and too_many.stderr.startswith(
              "--set training.iterations=3: /training/iterations: asks for 3 iterations, but the "
              "replayed schedule"), f"a replay of more iterations than recorded is refused: "
          f"{too_many.stderr.strip()}")
    slow, _ = run(work, {"name": "deft", "density": 0.01}, 8, "--replay", schedule,
                  "--set", "platform.link.bandwidth=100Mbps", out="r2")
    # (The CNN's messages are a few kB, so latency keeps the slow-down modest.)
    check(slow["summary"]["communication_total_s"] > 1.5 * first["summary"]["communication_total_s"],
          "a replay on a 100x slower link communicates longer")
    path = scenario(work, {"name": "deft"}, 4)
    mismatch = subprocess.run([GCSIM, "run", path, "--out", os.path.join(work, "r3"), "--replay", schedule],
                              capture_output=True, text=True, timeout=60)
    check(mismatch.returncode == 2 and "schedule.json: /workers" in mismatch.stderr,
          f"a replay for another worker count is refused: {mismatch.stderr.strip()}")

    # Per-bucket compression: top-k in four buckets of the CNN's layers
    # overlaps the backward pass; its schedule lists one part per bucket and
    # a replay reproduces it; DEFT needs the whole model and stays one part.
    buckets = {"training": {"iterations": 2, "batch_per_worker": 64, "bucket_size": "8KiB"}}
    per_bucket, _ = run(work, {"name": "topk", "density": 0.01}, 8, extra=buckets, out="b1")
    whole, _ = run(work, {"name": "topk", "density": 0.01}, 8,
                   extra={"training": dict(buckets["training"], compression_scope="model")}, out="b2")
    check(per_bucket["model"]["compression_scope"] == "bucket" and
          per_bucket["model"]["compression_parts"] == len(per_bucket["buckets"]) > 1,
          f"auto scope runs top-k per bucket: {per_bucket['model'].get('compression_parts')} parts")
    check(whole["model"]["compression_scope"] == "model" and whole["model"]["compression_parts"] == 1,
          "compression_scope=model runs top-k once on the whole model")
    check(per_bucket["summary"]["communication_s"] < whole["summary"]["communication_s"],
          "per-bucket top-k hides communication behind the backward pass: "
          f"{per_bucket['summary']['communication_s']} < {whole['summary']['communication_s']} s exposed")
    with open(os.path.join(work, "b1", "schedule.json")) as handle:
        parts = json.load(handle)["iterations"][0]["parts"]
    check([p["ready_layer"] for p in parts] == sorted((p["ready_layer"] for p in parts), reverse=True)
          and parts[-1]["ready_layer"] == 0 and parts[0]["ready_layer"] > 0,
          "schedule parts come in backward order, the first ready before the backward pass ends")
    replayed, _ = run(work, {"name": "topk", "density": 0.01}, 8, "--replay",
                      os.path.join(work, "b1", "schedule.json"), extra=buckets, out="b3")
    check(replayed["summary"]["iteration_time_s"] == per_bucket["summary"]["iteration_time_s"],
          "a replay of a per-bucket schedule reproduces its iteration time")
    def replay_of(schedule, out):
        """Replays an edited schedule on the per-bucket top-k scenario."""
        path = os.path.join(work, out + "-schedule.json")
        with open(path, "w") as handle:
            json.dump(schedule, handle)
        return subprocess.run([GCSIM, "run", scenario(work, {"name": "topk", "density": 0.01}, 8,
                                                      buckets),
                               "--out", os.path.join(work, out), "--replay", path],
                              capture_output=True, text=True, timeout=60)

    with open(os.path.join(work, "b1", "schedule.json")) as handle:
        recorded = json.load(handle)
    shuffled = copy.deepcopy(recorded)
    shuffled["iterations"][0]["parts"].reverse()
    refused = replay_of(shuffled, "b5")
    check(refused.returncode == 2 and "/iterations/0/parts/1/ready_layer" in refused.stderr
          and not os.path.exists(os.path.join(work, "b5", "result.json")),
          f"a schedule whose parts are out of backward order is refused: {refused.stderr.strip()}")
    nameless = dict(recorded, compressor={"name": 7})
    refused = replay_of(nameless, "b7")
    check(refused.returncode == 2 and ": /compressor: expected the compressor" in refused.stderr
          and len(refused.stderr.strip().splitlines()) == 1,
          f"a schedule whose compressor has no name is refused: {refused.stderr.strip()}")
    # The schedule's compressor goes into result.json as what ran: an unknown
    # name or a density of -1 went there unchecked, exit 0.
    for bad, field in (({"name": "topkk", "density": 0.01}, "/compressor/name: "),
                       ({"name": "topk", "density": -1}, "/compressor/density: ")):
        refused = replay_of(dict(recorded, compressor=bad), "b8")
        check(refused.returncode == 2 and field in refused.stderr
              and len(refused.stderr.strip().splitlines()) == 1
              and not os.path.exists(os.path.join(work, "b8", "result.json")),
              f"a schedule's compressor {bad} is refused, {field}: {refused.stderr.strip()}")
    # Kernels beside the backward pass: free by default, sharing the device
    # when asked, which costs time and shows in result.json.
    shared, _ = run(work, {"name": "topk", "density": 0.01}, 8,
                    extra={"training": dict(buckets["training"], kernels_share_device=True)},
                    out="b6")
    check(shared["model"].get("kernels_share_device") is True
          and "kernels_share_device" not in per_bucket["model"],
          "result.json says when kernels share the device")
    check(shared["summary"]["compute_s"] > per_bucket["summary"]["compute_s"]
          and shared["summary"]["iteration_time_s"] > per_bucket["summary"]["iteration_time_s"],
          "kernels that share the device slow the backward pass: compute "
          f"{shared['summary']['compute_s']} > {per_bucket['summary']['compute_s']} s")
    deft_auto, _ = run(work, {"name": "deft", "density": 0.01}, 8, extra=buckets, out="b4")
    check(deft_auto["model"]["compression_scope"] == "model",
          "auto scope keeps DEFT on the whole model")

    # Where the time goes, with stragglers, for every compressor: each
    # iteration's phases add up to it (communication is the rest; clamped
    # at 0 it would leave the parts above the iteration), whichever worker
    # leaves a collective first (a broadcast's root, CLT-k's leader).
    for name in ("topk", "gtopk", "dgc", "randomk", "cltk", "sketched_sgd", "gs_sgd", "deft",
                 "iwp"):
        varied, _ = run(work, {"name": name, "density": 0.01}, 8, out=f"v-{name}",
                        extra={"training": {"iterations": 6, "batch_per_worker": 64,
                                            "compute_variation": 0.5, "warmup_iterations": 0}})
        worst = max(abs(i["compute_s"] + i["straggler_wait_s"] + i["compression_exposed_s"]
                        + i["communication_s"] - i["iteration_time_s"]) / i["iteration_time_s"]
                    for i in varied["iterations"])
        check(worst < 1e-9 and all(i["straggler_wait_s"] > 0 for i in varied["iterations"]),
              f"{name} with stragglers: the phases add up to each iteration (worst {worst:.2e})")

    # result.json recorded the trace folder as resolved: relative from the
    # repository, absolute from elsewhere, so the same scenario gave two
    # results.
    path = scenario(work, {"name": "topk", "density": 0.01}, 4,
                    {"workload": "workloads/traces/fmnist-cnn-16w"})
    raws = []
    for cwd in (ROOT, work):
        out = os.path.join(work, f"cwd-{len(raws)}")
        done = subprocess.run([GCSIM, "run", path, "--out", out, "--quiet"], capture_output=True,
                              text=True, timeout=600, cwd=cwd)
        check(done.returncode == 0, f"the trace scenario runs from {cwd}: {done.stderr.strip()}")
        with open(os.path.join(out, "result.json"), "rb") as handle:
            raws.append(handle.read())
    check(raws[0] == raws[1]
          and json.loads(raws[0])["model"]["gradients"]["trace"]
          == "workloads/traces/fmnist-cnn-16w",
          "result.json is the same from any working directory, the trace named from the "
          "repository")

    # Topology: recursive doubling crosses leaf switches; 6:1 oversubscribed
    # uplinks must make it slower than the non-blocking fat-tree.
    times = {}
    for platform in ("fattree-96-1g", "tree-96-1g-oversubscribed"):
        out = os.path.join(work, platform)
        result = subprocess.run(
            [GCSIM, "run", os.path.join(ROOT, "workloads", "scenarios", "dense-resnet50-96x1g.json"),
             "--out", out, "--quiet", "--set", f"platform=platforms/{platform}.json",
             "--set", "training.iterations=1", "--set", "training.allreduce=recursive_doubling"],
            capture_output=True, text=True, timeout=600)
        check(result.returncode == 0, f"{platform} runs ({result.stderr.strip()[:200]})")
        with open(os.path.join(out, "result.json")) as handle:
            times[platform] = json.load(handle)["summary"]["communication_total_s"]
    check(times["tree-96-1g-oversubscribed"] > 1.5 * times["fattree-96-1g"],
          f"oversubscribed uplinks slow recursive doubling down: {times}")

    # PowerSGD on a layer spec: the tensors it sends as factors and those it
    # sends whole are the spec's (a layer's weight and its bias apart), as
    # the hook decides: a tensor as shape[0] rows of the rest, compressed
    # where (rows + cols) r times the rate is under rows x cols.
    spec_file = os.path.join(ROOT, "workloads", "models", "resnet18-cifar10.json")
    with open(spec_file) as handle:
        spec = json.load(handle)
    rank, rate = 2, 2.0
    matrices = compressed_elements = 0
    for layer in spec["layers"]:
        for tensor in layer["tensors"]:
            shape = tensor["shape"]
            rows = shape[0] if shape else 1
            cols = math.prod(shape) // rows
            if (rows + cols) * min(rows, cols, rank) * rate < rows * cols:
                matrices += 1
                compressed_elements += rows * cols
    out = os.path.join(work, "powersgd-spec")
    ran = subprocess.run(
        [GCSIM, "run", scenario(work, {"name": "powersgd", "rank": rank}, 4,
                                {"workload": spec_file,
                                 "training": {"iterations": 1, "batch_per_worker": 32}}),
         "--out", out, "--quiet"], capture_output=True, text=True, timeout=300)
    info = []
    if ran.returncode == 0:
        with open(os.path.join(out, "result.json")) as handle:
            info = json.load(handle)["iterations"][0]["compressor_info"]["buckets"]
    check(ran.returncode == 0 and len(info) > 1
          and sum(b["compressed_layers"] for b in info) == matrices
          and sum(b["uncompressed_elements"] for b in info)
          == spec["parameters"] - compressed_elements,
          f"powersgd on a layer spec compresses its {matrices} matrices and sends "
          f"{spec['parameters'] - compressed_elements} elements whole: {info} "
          f"({ran.stderr.strip()[:300]})")

check.finish()
