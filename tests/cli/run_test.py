#!/usr/bin/python3
"""End-to-end checks of `gcsim run`: the result contract, determinism,
overrides, the default output folder, --help and --version.

Usage: run_test.py PATH/TO/gcsim
"""
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
QUICKSTART = os.path.join(ROOT, "workloads", "scenarios", "quickstart.json")
FIELDS = ["iteration_time_s", "throughput_samples_per_s", "compute_s", "compression_s",
          "communication_s", "bytes_sent_per_worker"]

check = Checks()


def gcsim(*args, cwd=None):
    return subprocess.run([GCSIM, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def run(out, *extra):
    result = gcsim("run", QUICKSTART, "--out", out, *extra)
    if result.returncode != 0:
        raise SystemExit(f"gcsim run failed ({result.returncode}): {result.stderr}")
    with open(os.path.join(out, "result.json"), "rb") as handle:
        raw = handle.read()
    return result.stdout, raw, json.loads(raw)


with tempfile.TemporaryDirectory() as work:
    stdout, raw_a, result = run(os.path.join(work, "a"))
    _, raw_b, _ = run(os.path.join(work, "b"))
    check(raw_a == raw_b, "the same scenario and seed give a byte-identical result.json")

    for field in FIELDS:
        check(field in result["summary"], f"summary.{field} present")
        check(all(field in it for it in result["iterations"]), f"iterations[].{field} present")
    check(len(result["iterations"]) == 5, "one record per simulated iteration")
    # The training loop as run, defaults included: the quickstart's file
    # gives iterations and batch_per_worker, the rest are the defaults.
    check(result["model"].get("training") == {
        "iterations": 5, "warmup_iterations": 0, "batch_per_worker": 128,
        "bucket_size_bytes": 25 * 1048576, "first_bucket_size_bytes": 1048576, "overlap": True,
        "allreduce": "ring", "broadcast": "binomial", "kernels_share_device": False,
        "compute_variation": 0.0},
        f"model.training holds the training loop as run, defaults too: "
        f"{result['model'].get('training')}")
    _, _, set_training = run(os.path.join(work, "set-training"), "--set", "training.bucket_size=4MiB",
                             "--set", "training.overlap=false", "--set", "training.iterations=2")
    trained = set_training["model"].get("training", {})
    check((trained.get("bucket_size_bytes"), trained.get("first_bucket_size_bytes"),
           trained.get("overlap"), trained.get("iterations")) == (4 << 20, 1 << 20, False, 2),
          f"model.training says what the --sets gave: {trained}")
    # The bucket sizes as run: DDP drops a fraction of a byte, and so did the
    # simulation, while result.json recorded the fraction.
    _, _, fraction = run(os.path.join(work, "fraction"), "--set", "training.bucket_size=0.1MiB",
                         "--set", "training.first_bucket_size=0.3KiB", "--set",
                         "training.iterations=1")
    trained = fraction["model"].get("training", {})
    check((trained.get("bucket_size_bytes"), trained.get("first_bucket_size_bytes"))
          == (104857, 307), f"model.training's bucket sizes in whole bytes, as run: {trained}")
    # README, "What result.json holds": the version that wrote it and the
    # unit of each kind of figure.
    # --version: "gcsim VERSION (commit COMMIT)".
    said = gcsim("--version").stdout.split()
    commit = said[3].rstrip(")") if len(said) == 4 and said[2] == "(commit" else None
    check(result.get("gcsim_version") == said[1] and commit and result.get("gcsim_commit") == commit
          and result.get("units") == {"time": "seconds", "data": "bytes",
                                      "throughput": "samples per second"},
          f"result.json names its gcsim version, commit and units as --version does ({said}): "
          f"{result.get('gcsim_version')!r}, {result.get('gcsim_commit')!r}, {result.get('units')}")
    summary = result["summary"]
    check(summary["workers"] == 8, "the quickstart platform has 8 workers")
    # Every dense iteration sends the same bytes: the mean is that number
    # (a sum of value/count made 44695848 bytes 44695847.99999999 over 10).
    _, _, ten = run(os.path.join(work, "ten"), "--set", "platform.nodes=2", "--set",
                    "training.iterations=10")
    sent = {it["bytes_sent_per_worker"] for it in ten["iterations"]}
    check(len(sent) == 1 and ten["summary"]["bytes_sent_per_worker"] in sent,
          f"the mean of equal iterations is their value: "
          f"{ten['summary']['bytes_sent_per_worker']!r} of {sent}")
    check(abs(summary["iteration_time_s"] - summary["compute_s"]
              - summary["compression_exposed_s"] - summary["communication_s"])
          < 1e-9 * summary["iteration_time_s"],
          "iteration time = compute + compression + exposed communication")
    # communication_s is the iteration's remainder, so the sum above holds
    # whatever compute_s is; the collectives' own times are measured apart.
    # Without overlap nothing hides them, and with it the buckets do.
    no_overlap = run(os.path.join(work, "no-overlap"), "--set", "training.overlap=false")[2][
        "summary"]
    check(abs(no_overlap["communication_s"] - no_overlap["communication_total_s"])
          < 1e-9 * no_overlap["iteration_time_s"]
          and abs(no_overlap["compute_s"] - summary["compute_s"]) < 1e-12,
          "without overlap the exposed communication is the collectives' own time, the compute "
          "the same")
    check(summary["communication_s"] < 0.6 * summary["communication_total_s"],
          f"with overlap the buckets hide part of it: {summary['communication_s']:.4f} of "
          f"{summary['communication_total_s']:.4f} s")
    samples = summary["workers"] * result["scenario"]["training"]["batch_per_worker"]
    check(abs(summary["throughput_samples_per_s"] * summary["iteration_time_s"] - samples) < 1e-6 * samples,
          "throughput = samples per iteration / iteration time")
    # Ring allreduce sends 2(P-1)/P of the gradient per worker.
    gradient = summary["gradient_bytes"]
    check(abs(summary["bytes_sent_per_worker"] - 2 * 7 / 8 * gradient) < 64,
          "a dense ring allreduce sends 2(P-1)/P of the gradient per worker")
    check("iteration time" in stdout and "ms" in stdout and "samples/s" in stdout,
          "the summary table shows times with units")
    check(result["model"]["compute_times"] == {"source": "device profile"},
          "a layer spec's compute comes from the device profile, and result.json says so")
    check("compute times measured" not in stdout, "no capture-times line without a trace")

    # The run's facts count every iteration, the warm-up ones too.
    _, _, warmed = run(os.path.join(work, "warm"), "--set", "training.warmup_iterations=2")
    check(warmed["summary"]["iterations"] == 5 and warmed["summary"]["warmup_iterations"] == 2
          and [it.get("warmup", False) for it in warmed["iterations"]] == [True] * 2 + [False] * 3,
          f"summary.iterations counts the warm-up: {warmed['summary']['iterations']}")

    _, _, four = run(os.path.join(work, "c"), "--set", "platform.nodes=4")
    check(four["summary"]["workers"] == 4, "--set platform.nodes=4 gives 4 workers")
    check(four["scenario"]["platform"]["nodes"] == 4, "the resolved scenario records the override")
    _, _, slow = run(os.path.join(work, "d"), "--set", "platform.link.bandwidth=1Gbps")
    check(slow["summary"]["communication_total_s"] > 5 * result["summary"]["communication_total_s"],
          "a 10x slower link makes communication much slower")
    _, _, other_seed = run(os.path.join(work, "e"), "--seed", "9")
    check(other_seed["scenario"]["seed"] == 9 and other_seed["model"]["seed"] == 9,
          "--seed overrides the scenario seed")
    _, _, largest_seed = run(os.path.join(work, "e-max"), "--seed", "9223372036854775807")
    check(largest_seed["scenario"]["seed"] == 2 ** 63 - 1, "--seed takes 2^63 - 1, the largest")

    # DDP's first bucket: the last layers up to 1 MiB (here the 9.4 MB conv
    # that crosses it) go out on their own, then 25 MiB buckets.
    first, *rest = result["buckets"]
    check(first["last_layer"] == "linear" and (1 << 20) <= first["bytes"] < 10e6 and len(rest) == 2,
          f"DDP's first bucket closes past 1 MiB: {[b['bytes'] for b in result['buckets']]}")
    _, _, even = run(os.path.join(work, "f"), "--set", "training.first_bucket_size=25MiB")
    check([b["bytes"] >= 25 << 20 for b in even["buckets"]] == [True, False],
          f"first_bucket_size = bucket_size gives 25 MiB buckets: {[b['bytes'] for b in even['buckets']]}")

    # ResNet-50 as PyTorch's DDP bucketed it in a real run: the five NCCL
    # allreduces of an iteration of a public Kineto trace (two A100s, NCCL
    # 2.17; results/validation/README.md, "Your own training run"), in the
    # order DDP sent them.
    resnet50 = gcsim("run", os.path.join(ROOT, "workloads", "scenarios",
                                         "dense-resnet50-96x1g.json"),
                     "--set", "platform.nodes=2", "--set", "training.iterations=1",
                     "--out", os.path.join(work, "r50"), "--quiet")
    if check(resnet50.returncode == 0, f"ResNet-50 on two workers: {resnet50.stderr.strip()}"):
        with open(os.path.join(work, "r50", "result.json")) as handle:
            sent = [b["bytes"] for b in json.load(handle)["buckets"]]
        check(sent == [8196000, 31502336, 26255360, 26550272, 9724160],
              f"ResNet-50's buckets are those DDP allreduced in a real run: {sent}")

    # Stragglers: their wait is a phase of its own, the phases still add up
    # to the iteration, and the same seed gives the same stragglers.
    varied = ("--set", "training.compute_variation=0.2")
    varied_out, raw_v1, varied_run = run(os.path.join(work, "f"), *varied)
    _, raw_v2, _ = run(os.path.join(work, "g"), *varied)
    _, _, varied_seed = run(os.path.join(work, "h"), *varied, "--seed", "9")
    v = varied_run["summary"]
    check(raw_v1 == raw_v2, "with stragglers the same seed gives a byte-identical result.json")
    check("straggler_wait_s" not in summary and "waiting for the slowest" not in stdout,
          "without compute_variation results and summaries have no straggler field or line")
    check(v["straggler_wait_s"] > 0 and "waiting for the slowest worker" in varied_out,
          "compute_variation: the wait for the slowest worker is reported")
    check(abs(v["iteration_time_s"] - v["compute_s"] - v["straggler_wait_s"]
              - v["compression_exposed_s"] - v["communication_s"]) < 1e-9 * v["iteration_time_s"],
          "with stragglers, iteration = compute + wait + compression + exposed communication")
    check(v["iteration_time_s"] > summary["iteration_time_s"], "stragglers make iterations longer")
    check(varied_seed["summary"]["straggler_wait_s"] != v["straggler_wait_s"],
          "another seed draws other stragglers")
    # The range's end, 1, is a variation like any other.
    _, _, widest = run(os.path.join(work, "i"), "--set", "training.compute_variation=1")
    check(widest["summary"]["straggler_wait_s"] > v["straggler_wait_s"],
          "a compute_variation of 1 runs, with longer waits than 0.2")

    # The README's sample output is what the first Quick start command prints
    # (its "..." stands for lines left out), in the same order.
    with open(os.path.join(ROOT, "README.md")) as handle:
        readme = handle.read()
    sample = readme.split("The first prints:", 1)[1].split("```", 2)[1].strip("\n").splitlines()
    printed = gcsim("run", QUICKSTART, cwd=work).stdout.splitlines()
    shown = [line for line in sample if line.strip() != "..."]
    positions = [printed.index(line) if line in printed else -1 for line in shown]
    check(len(shown) > 5 and -1 not in positions and positions == sorted(positions),
          "the README's Quick start output is what gcsim prints: "
          f"{[line for line, at in zip(shown, positions) if at < 0]}")

    # NCCL's double binary tree: every link of each tree carries its half of
    # the gradient up once and down once, so the mean worker sends what the
    # ring's does, 2(P-1)/P of it; the ranks interior in a tree send more.
    _, _, tree = run(os.path.join(work, "tree"), "--set", "training.allreduce=tree")
    check(tree["model"]["allreduce"] == "tree"
          and abs(tree["summary"]["bytes_sent_per_worker"] - 2 * 7 / 8 * gradient)
          < 8 * len(tree["buckets"])
          and tree["summary"]["bytes_sent_max_worker"] > 1.1 * tree["summary"]["bytes_sent_per_worker"],
          "a tree allreduce sends 2(P-1)/P of the gradient per worker on average, more on interior ranks")
    # SimGrid's full sharing solver, asked for, times the tree's streams as
    # the lazy one that gcsim picks does, within a percent.
    _, _, full_tree = run(os.path.join(work, "tree-full"), "--set", "training.allreduce=tree",
                          "--set", "platform.network.solver=full")
    check(result["model"]["network_solver"] == "lazy" and tree["model"]["network_solver"] == "lazy"
          and full_tree["model"]["network_solver"] == "full",
          f"result.json names the solver: {result['model']['network_solver']} for the ring, "
          f"{tree['model']['network_solver']} for the tree, "
          f"{full_tree['model']['network_solver']} when the platform asks for full")
    check(full_tree["summary"]["bytes_sent_per_worker"] == tree["summary"]["bytes_sent_per_worker"]
          and abs(full_tree["summary"]["iteration_time_s"] / tree["summary"]["iteration_time_s"] - 1) < 0.01,
          "the two solvers time the tree within 1%: "
          f"{full_tree['summary']['iteration_time_s']} against {tree['summary']['iteration_time_s']} s")

    default = gcsim("run", QUICKSTART, "--quiet", cwd=work)
    check(default.returncode == 0 and default.stdout == "", "--quiet prints nothing")
    check(os.path.exists(os.path.join(work, "results", "quickstart", "result.json")),
          "the default output folder is results/<scenario name>/")
    # Without a name the run goes by its file's: the title line and
    # result.json said none.
    with open(QUICKSTART) as handle:
        nameless = json.load(handle)
    del nameless["name"]
    for key in ("platform", "workload", "device"):
        nameless[key] = os.path.join(ROOT, nameless[key])
    with open(os.path.join(work, "nameless.json"), "w") as handle:
        json.dump(nameless, handle)
    titled = gcsim("run", "nameless.json", "--set", "training.iterations=1", cwd=work)
    with open(os.path.join(work, "results", "nameless", "result.json")) as handle:
        named = json.load(handle)["scenario"].get("name")
    check(titled.returncode == 0 and titled.stdout.startswith("gcsim: nameless | ")
          and named == "nameless",
          f"a scenario without a name goes by its file's: {titled.stdout[:40]!r}, {named!r}")

    # A --set inside an object another --set replaces applies in either
    # order: the platform file given second silently undid platform.nodes.
    _, _, nodes_first = run(os.path.join(work, "nodes-first"), "--set", "platform.nodes=2",
                            "--set", "platform=platforms/ring-16x10g.json",
                            "--set", "compressor.density=0.05",
                            "--set", 'compressor={"name": "topk"}', "--set", "training.iterations=1")
    check(nodes_first["summary"]["workers"] == 2
          and nodes_first["model"]["compressor_params"]["density"] == 0.05,
          "--set platform.nodes and compressor.density hold under a later --set of their object: "
          f"{nodes_first['summary']['workers']} workers, density "
          f"{nodes_first['model']['compressor_params']['density']}")

    # Sizes past a profile's fitted range are extrapolated, and said: a quick
    # CPU calibration (to 2^22) priced ResNet-18's 6.6M-element top-k 27-36%
    # short without a word.
    with open(os.path.join(ROOT, "platforms", "devices", "v100.json")) as handle:
        narrow = json.load(handle)
    narrow["kernels"]["sgd_momentum"]["fit"]["range"]["n"] = [1024, 4194304]
    narrow_path = os.path.join(work, "narrow-v100.json")
    with open(narrow_path, "w") as handle:
        json.dump(narrow, handle)
    narrow_text, _, narrow_run = run(os.path.join(work, "narrow"), "--set", f"device={narrow_path}",
                                     "--set", "training.iterations=1")
    check(narrow_run["model"].get("extrapolated_kernels")
          == [{"kernel": "sgd_momentum", "largest_n": float(narrow_run["summary"]["parameters"]),
               "profile_n_max": 4194304.0}]
          and "note: priced past the sizes the device profile was fitted on, so extrapolated: "
              "sgd_momentum at n up to 11.2M (fitted to 4.2M)" in narrow_text,
          f"a kernel priced past its fitted range is said: "
          f"{narrow_run['model'].get('extrapolated_kernels')}")
    # One element past the fitted range is past it.
    parameters = narrow_run["summary"]["parameters"]
    narrow["kernels"]["sgd_momentum"]["fit"]["range"]["n"] = [1024, parameters - 1]
    with open(narrow_path, "w") as handle:
        json.dump(narrow, handle)
    _, _, just_past = run(os.path.join(work, "just-past"), "--set", f"device={narrow_path}",
                          "--set", "training.iterations=1")
    check(just_past["model"].get("extrapolated_kernels")
          == [{"kernel": "sgd_momentum", "largest_n": float(parameters),
               "profile_n_max": float(parameters - 1)}],
          f"a kernel priced one element past its fitted range is said: "
          f"{just_past['model'].get('extrapolated_kernels')}")
    _, _, within = run(os.path.join(work, "within"), "--set", "training.iterations=1")
    check("extrapolated_kernels" not in within["model"], "the shipped V100 profile covers ResNet-18")
    # So is a k past the fitted ones: a quick calibration selects at most
    # 10% of a size, and top-k at density 0.5 went unsaid.
    narrow["kernels"]["sgd_momentum"]["fit"]["range"]["n"] = [1024, 268435456]
    narrow["kernels"]["topk_select"]["fit"]["range"]["k"] = [1, 26214]
    with open(narrow_path, "w") as handle:
        json.dump(narrow, handle)
    selecting_text, _, selecting = run(
        os.path.join(work, "past-k"), "--set", f"device={narrow_path}", "--set",
        "training.iterations=1", "--set", "workload=workloads/models/one-tensor-1mib.json",
        "--set", 'compressor={"name": "topk", "density": 0.5}')
    check({"kernel": "topk_select", "largest_n": 262144.0, "profile_n_max": 268435456.0,
           "k": [131072.0, 131072.0], "profile_k": [1.0, 26214.0]}
          in selecting["model"].get("extrapolated_kernels", [])
          and "topk_select at k = 131072 (fitted at k = 1-26214)" in selecting_text,
          f"a kernel priced at a k past its fit is said: "
          f"{selecting['model'].get('extrapolated_kernels')}")
    # A k below the fitted ones is the first piece's, as a small n is: DGC
    # samples 20 of a layer at density 0.1, the H200's fit starts at 64.
    _, _, sampling = run(os.path.join(work, "below-k"), "--set",
                         "device=platforms/devices/h200.json", "--set", "training.iterations=1",
                         "--set", 'compressor={"name": "dgc", "density": 0.1}')
    check(sampling["summary"]["compression_kernels_s"].get("sample_threshold", 0) > 0
          and not any("k" in past for past in sampling["model"].get("extrapolated_kernels", [])),
          f"a k below the fitted ones is no extrapolation: "
          f"{sampling['model'].get('extrapolated_kernels')}")
    # A sketch's rows are a size too: the H200's sketch curves were fitted
    # at 5 rows, and their pieces crossed at 64, where 23,400 elements cost
    # 60% less than 23,000 did, without a word.
    def h200_sketch(out, spec_path, compressor):
        """(summary text, result) of one gs-SGD iteration of a one-tensor spec on the H200."""
        text, _, result = run(os.path.join(work, out), "--set", f"workload={spec_path}", "--set",
                              "device=platforms/devices/h200.json", "--set", "platform.nodes=2",
                              "--set", "training.iterations=1", "--set", f"compressor={compressor}")
        return text, result

    sketch_times = {}
    for parameters in [23000, 23400]:
        with open(os.path.join(ROOT, "workloads", "models", "one-tensor-1mib.json")) as handle:
            spec = json.load(handle)
        spec["name"] = f"tensor-{parameters}"
        spec["parameters"] = spec["layers"][0]["parameters"] = parameters
        spec["layers"][0]["tensors"][0]["shape"] = [parameters]
        spec_path = os.path.join(work, f"tensor-{parameters}.json")
        with open(spec_path, "w") as handle:
            json.dump(spec, handle)
        rows_text, rows_run = h200_sketch(f"rows-{parameters}", spec_path,
                                          '{"name":"gs_sgd","density":0.01,"rows":64}')
        sketch_times[parameters] = rows_run["summary"]["compression_kernels_s"]["sketch_insert"]
    check(sketch_times[23400] >= sketch_times[23000],
          f"more elements never cost less, at rows the profile did not measure: {sketch_times}")
    # So is a table wider than any the curve was fitted on (the H200's up to
    # 2.7M columns), whose per-(rows x columns) cost the pieces disagree on.
    wide = h200_sketch("wide", spec_path, '{"name":"gs_sgd","density":0.01,"columns":3000000}')
    for what, (text, result), sizes, said in (
            ("rows", (rows_text, rows_run), {"rows": [64.0, 64.0], "profile_rows": [5.0, 5.0]},
             "sketch_insert at 64 rows (fitted at 5)"),
            ("columns", wide, {"cols": [3e6, 3e6], "profile_cols": [256.0, 2684354.0]},
             "sketch_insert at 3.0M columns (fitted at 256-2.7M)")):
        check({"kernel": "sketch_insert", "largest_n": 23400.0, "profile_n_max": 268435456.0,
               **sizes} in result["model"].get("extrapolated_kernels", []) and said in text,
              f"a sketch priced at {what} outside its fit is said: "
              f"{result['model'].get('extrapolated_kernels')}")

    # One worker sends nothing, compressed or not: no ratio, not 0.
    alone_text, _, alone = run(os.path.join(work, "alone"), "--set", "platform.nodes=1",
                               "--set", 'compressor={"name": "topk", "density": 0.01}',
                               "--set", "training.iterations=1")
    check(alone["summary"]["communication_s"] == 0,
          f"one worker: no communication, not a rounding remainder "
          f"({alone['summary']['communication_s']!r})")
    check(alone["summary"]["compression_ratio"] is None
          and "(star, 1 worker, " in alone_text and "- (nothing sent)" in alone_text,
          f"one worker: compression_ratio {alone['summary']['compression_ratio']}, "
          f"{alone_text.splitlines()[0]}")

    # Every platform kind runs, with the worker count it promises.
    for platform, workers in (("ring-16x10g", 16), ("ps-4s-32w-10g", 32), ("dgx-2x8-v100", 16),
                              ("xml-cluster", 4), ("fattree-96-1g", 96), ("cluster96-1g", 96)):
        other_text, _, other = run(os.path.join(work, platform), "--set",
                                   f"platform=platforms/{platform}.json", "--set",
                                   "training.iterations=1")
        check(other["summary"]["workers"] == workers and other["model"]["platform"] == platform,
              f"{platform} runs with {workers} workers")
        if platform == "ps-4s-32w-10g":
            # A worker's bytes are its pushes, not an allreduce's.
            by_step = other["summary"]["bytes_sent_per_worker_by_step"]
            check(list(by_step) == ["push/pull gradient buckets"],
                  f"parameter servers: the bytes are labelled push/pull ({list(by_step)})")
            # The servers' pulls went nowhere in the result: each of the 4
            # sends its quarter of the gradient to each of the 32 workers.
            served = [it.get("bytes_sent_per_server") for it in other["iterations"]]
            expected = 32 * other["summary"]["gradient_bytes"] / 4
            check(served == [expected] and other["summary"]["bytes_sent_per_server"] == expected
                  and "bytes sent per parameter server" in other_text,
                  f"parameter servers: each sends workers x gradient / servers ({served}, "
                  f"expected {expected})")
        elif "bytes_sent_per_server" in other["summary"]:
            check(False, f"{platform}: bytes_sent_per_server without parameter servers")
        if platform == "xml-cluster":
            check(other["model"].get("worker_hosts") == [f"node-{n}" for n in range(4)],
                  f"result.json names the XML platform's hosts: {other['model'].get('worker_hosts')}")
        if platform == "ring-16x10g":
            # Ring neighbours are one cable apart on a physical ring: each
            # bucket's allreduce costs 2(P-1)(alpha + ceil(b/P) beta) with the
            # cable's latency and bandwidth, and nothing else is on the network.
            alpha, beta, p = 5e-6, 1 / 1.25e9, workers
            expected = sum(2 * (p - 1) * (alpha + math.ceil(b["bytes"] / p) * beta)
                           for b in other["buckets"])
            check(abs(other["summary"]["communication_total_s"] - expected) < 1e-6 * expected,
                  "ring allreduce on the physical ring costs the one-hop alpha-beta time")
        if platform == "dgx-2x8-v100":
            # The machines' inside showed only in the inlined platform.
            check("(multi_gpu, 16 workers, 2 machines x 8 GPUs, 1.2 Tbit/s GPU links, 100 Gbit/s "
                  "NICs," in other_text and other["model"].get("gpus_per_node") == 8
                  and other["model"].get("gpu_link_bandwidth_bps") == 1.2e12,
                  f"a multi-GPU run names its machines and GPU links: {other_text.splitlines()[0]}")
            one_text, _, _ = run(os.path.join(work, "one-machine"), "--set",
                                 f"platform=platforms/{platform}.json", "--set",
                                 "platform.nodes=1", "--set", "training.iterations=1")
            check("(multi_gpu, 8 workers, 1 machine x 8 GPUs," in one_text,
                  f"one machine is not 'machines': {one_text.splitlines()[0]}")
            # Hierarchical: three rings per bucket, the middle one between the
            # machines with all 8 GPUs of a machine sharing its NIC; a worker
            # sends as much as in the flat ring, 2(P-1)/P of the gradient.
            _, _, hier = run(os.path.join(work, "hierarchical"), "--set",
                             f"platform=platforms/{platform}.json", "--set", "training.iterations=1",
                             "--set", "training.allreduce=hierarchical")
            g, n = 8, 2
            intra = (4e-6, 1 / 150e9)  # two GPU links of 150 GBps, 2 us
            inter = (14e-6, g / 12.5e9)  # and two NICs of 100 Gbps, 5 us, each carrying g flows

            def ring_steps(cost, steps, size):
                return steps * (cost[0] + size * cost[1])

            expected = 0
            for bucket in hier["buckets"]:
                chunk = math.ceil(bucket["bytes"] / g)
                expected += (ring_steps(intra, 2 * (g - 1), chunk)
                             + ring_steps(inter, 2 * (n - 1), math.ceil(chunk / n)))
            check(hier["model"]["allreduce"] == "hierarchical"
                  and abs(hier["summary"]["communication_total_s"] - expected) < 1e-6 * expected,
                  "hierarchical allreduce on 2 machines of 8 GPUs costs its three rings' alpha-beta "
                  f"time ({hier['summary']['communication_total_s']} s, expected {expected} s)")
            check(abs(hier["summary"]["bytes_sent_per_worker"]
                      - other["summary"]["bytes_sent_per_worker"]) <= 4 * len(hier["buckets"]),
                  "a hierarchical allreduce sends what a flat ring sends per worker")
        if platform == "ps-4s-32w-10g":
            check(other["model"]["allreduce"] == "parameter_server",
                  "a parameter-server platform trains through its servers")
            # A worker sends its gradient once (the push); the pull is the servers'.
            check(abs(other["summary"]["bytes_sent_per_worker"] - other["summary"]["gradient_bytes"])
                  <= 4 * len(other["buckets"]), "a worker pushes its whole gradient once per iteration")

# The route effects platforms/README.md quotes, with the one-tensor workload
# (an iteration is one 1 MiB recursive-doubling allreduce, timed by its
# communication total, and no FLOPs): on a
# 4-node ring SimGrid's Dijkstra sends both pairs half the ring apart the same
# way, so the second round crosses each cable of that direction twice (three
# transfer times in all, where a switch takes two); on the fat-tree, flows
# from one leaf meet on one spine uplink. These pin SimGrid's routing: a
# change there must change the README too.
with tempfile.TemporaryDirectory() as work:
    def one_tensor(platform, *extra):
        out = os.path.join(work, str(len(os.listdir(work))))
        _, _, result = run(out, "--set", "workload=workloads/models/one-tensor-1mib.json",
                           "--set", f"platform=platforms/{platform}.json",
                           "--set", "training.allreduce=recursive_doubling",
                           "--set", "training.iterations=1", *extra)
        # The collective alone: the device's layer latency and optimizer
        # step still cost a tensor without FLOPs some 0.1 ms.
        return result["summary"]["communication_total_s"]

    transfer = (1 << 20) * 8 / 1e9  # 1 MiB at 1 Gbit/s
    four_nodes = ("--set", "platform.nodes=4", "--set", "platform.link.bandwidth=1Gbps")
    ring = one_tensor("ring-16x10g", *four_nodes)
    star = one_tensor("star-8x10g", *four_nodes)
    check(abs(ring - 3 * transfer) < 0.01 * ring and abs(star - 2 * transfer) < 0.01 * star,
          f"recursive doubling on 4 nodes: 3 transfers on a ring ({ring * 1e3:.1f} ms, README "
          f"25.2), 2 on a switch ({star * 1e3:.1f} ms, README 16.8)")
    for nodes, tree_ms, switch_ms in ((32, 58.9, 42.2), (64, 75.7, 50.6)):
        tree = one_tensor("fattree-96-1g", "--set", f"platform.nodes={nodes}")
        switch = one_tensor("cluster96-1g", "--set", f"platform.nodes={nodes}")
        check(abs(tree * 1e3 - tree_ms) < 0.05 and abs(switch * 1e3 - switch_ms) < 0.05,
              f"recursive doubling on {nodes} nodes: {tree * 1e3:.1f} ms on the fat-tree, "
              f"{switch * 1e3:.1f} on the switch (README {tree_ms} and {switch_ms})")

    # Recursive doubling on 6 workers folds 2 in: each sends 2N on average.
    # The per-step bytes were summed as bytes * (1/6): 2097151.9999999998.
    _, _, six = run(os.path.join(work, "six"), "--set",
                    "workload=workloads/models/one-tensor-1mib.json", "--set",
                    "platform=platforms/star-8x10g.json", "--set", "platform.nodes=6",
                    "--set", "training.allreduce=recursive_doubling",
                    "--set", "training.iterations=1")
    sent = six["iterations"][0]["bytes_sent_per_worker"]
    by_step = six["iterations"][0]["bytes_sent_per_worker_by_step"]
    check(sent == 2 << 20 and list(by_step.values()) == [sent],
          f"recursive doubling on 6 workers: 2N per worker, the same by step ({sent}, {by_step})")

    # A compressor's broadcast: a binomial tree by default, NCCL's pipelined
    # ring with training.broadcast "ring". CLT-k's leader broadcasts k = 26214
    # indices (104856 bytes, one piece under 512 KiB) to 7 others: 3 hops in
    # a row on the tree, 7 on the chain, each 2 x 10 us + bytes / 10 Gbit/s
    # on the star under CM02; and no rank sends it more than once on the chain.
    def cltk(broadcast):
        _, _, result = run(os.path.join(work, "cltk-" + broadcast), "--set",
                           "workload=workloads/models/one-tensor-1mib.json", "--set",
                           "platform=platforms/star-8x10g.json", "--set",
                           'compressor={"name":"cltk","density":0.1}', "--set",
                           "training.iterations=2", "--set", "training.broadcast=" + broadcast)
        return result["iterations"][1], result["model"].get("broadcast")
    (tree, tree_named), (chain, chain_named) = cltk("binomial"), cltk("ring")
    hop = 20e-6 + 104856 * 8 / 10e9
    extra = chain["communication_total_s"] - tree["communication_total_s"]
    allreduce = chain["bytes_sent_per_worker_by_step"]["allreduce k values"]
    check(abs(extra - 4 * hop) < 1e-9 and chain["bytes_sent_max_worker"] == 104856 + allreduce
          and tree["bytes_sent_max_worker"] == 3 * 104856 + allreduce
          and (tree_named, chain_named) == (None, "ring"),
          f"training.broadcast ring: 4 more hops of {hop * 1e6:.3f} us than the binomial tree "
          f"({extra * 1e6:.3f} us more), a rank sends the indices once "
          f"({chain['bytes_sent_max_worker']} vs {tree['bytes_sent_max_worker']} bytes), and "
          f"the model names it ({tree_named}, {chain_named})")

    # SMPI reads its own table of factors per message size, never
    # network/latency-factor or bandwidth-factor: a platform's factors did
    # nothing under it. Given, they now replace the table.
    def on_star(network):
        return one_tensor("star-8x10g", *four_nodes, "--set", f"platform.network={network}")

    smpi_table = on_star('{"model": "SMPI"}')
    smpi_given = on_star('{"model": "SMPI", "latency_factor": 2, "bandwidth_factor": 0.5}')
    cm02_given = on_star('{"model": "CM02", "latency_factor": 2, "bandwidth_factor": 0.5}')
    check(abs(smpi_given - cm02_given) < 1e-9 * cm02_given
          and abs(smpi_table - star) > 0.01 * star,
          f"SMPI takes the platform's factors ({smpi_given * 1e3:.3f} ms, CM02 "
          f"{cm02_given * 1e3:.3f}) and its own table without them ({smpi_table * 1e3:.3f} ms)")

    # A TCP window bounds a flow at bandwidth_factor x window / (2 x the
    # route's latency before latency_factor): platforms/README.md's figures,
    # one 1 GiB transfer between two nodes on 1 ms links, 1 MiB window.
    def windowed(network):
        measured = os.path.join(work, "windowed.json")
        report = os.path.join(work, "windowed-report.json")
        with open(measured, "w") as handle:
            json.dump({"format": "gcsim-measured-run/1",
                       "cluster": {"name": "two", "topology": "star", "nodes": 2,
                                   "link": {"bandwidth": "10Gbps", "latency": "1ms"},
                                   "network": dict(network, tcp_window="1MiB")},
                       "collectives": [{"collective": "broadcast", "algorithm": "binomial_tree",
                                        "ranks": 2, "bytes": 1 << 30, "seconds": 1.0}]}, handle)
        done = gcsim("validate", measured, "--json", report, "--quiet")
        if done.returncode != 0:
            return math.nan
        with open(report) as handle:
            return json.load(handle)["collectives"][0]["simulated_s"]

    route = 2e-3  # two 1 ms links
    for network, latency_factor, bandwidth_factor, readme in (
            ({"model": "CM02"}, 1, 1, 4.098), ({"model": "LV08"}, 13.01, 0.97, 4.2487),
            ({"model": "CM02", "bandwidth_factor": 0.5, "latency_factor": 3}, 3, 0.5, 8.198)):
        expected = latency_factor * route + (1 << 30) / (bandwidth_factor * (1 << 20) / (2 * route))
        got = windowed(network)
        check(abs(got - expected) < 1e-6 * expected and abs(got - readme) < 1e-4 * readme,
              f"a 1 MiB window under {network}: {got} s, closed form {expected:.6f} "
              f"(README {readme})")

# A scenario named on the command line is read from the working directory
# only; when it is not there, the message says where the shipped one is, or
# names a near file.
with tempfile.TemporaryDirectory() as work:
    shipped = gcsim("run", "quickstart.json", cwd=work)
    check(shipped.returncode == 2 and shipped.stderr.strip() ==
          f"quickstart.json: file not found; gcsim's source tree has {QUICKSTART} (a path on the "
          "command line is read from the working directory)",
          f"a shipped scenario's name elsewhere: {shipped.stderr.strip()}")
    with open(os.path.join(work, "mine.json"), "w") as handle:
        handle.write("{}")
    slip = gcsim("run", "mime.json", cwd=work)
    check(slip.returncode == 2 and slip.stderr.strip() ==
          'mime.json: file not found; did you mean "mine.json"?',
          f"a slip in a scenario's name: {slip.stderr.strip()}")

# A path recorded as given that is not UTF-8 (here the trace folder gcsim
# inspect names in its JSON) gets U+FFFD for its bad bytes; a strict dump
# failed as an internal error after the work was done.
with tempfile.TemporaryDirectory() as work:
    # A folder of its own (a link to the shipped trace is recorded by where
    # it points), its files linked to the shipped trace's.
    odd = os.path.join(work.encode(), b"trace\xff")
    os.mkdir(odd)
    for name in ["manifest.json", "iterations"]:
        os.symlink(os.path.join(ROOT, "workloads", "traces", "fmnist-cnn-16w", name),
                   os.path.join(odd, name.encode()))
    report = os.path.join(work, "inspect.json")
    inspected = subprocess.run([GCSIM.encode(), b"inspect", odd, b"--json", report.encode()],
                               capture_output=True, timeout=120)
    recorded = None
    if os.path.exists(report):
        with open(report) as written:
            recorded = json.load(written)["trace"]
    check(inspected.returncode == 0 and recorded == work + "/trace\ufffd",
          f"a path that is not UTF-8 is recorded with U+FFFD: {inspected.returncode} {recorded!r} "
          f"{inspected.stderr.strip()[:200]!r}")
    # From another folder, the shipped trace by its absolute path: recorded
    # relative to the source tree as `gcsim run` records it (it said the
    # path as typed, so one trace read two ways).
    shipped = subprocess.run([GCSIM, "inspect", os.path.join(ROOT, "workloads", "traces",
                                                             "fmnist-cnn-16w"), "--json", report],
                             capture_output=True, timeout=120, cwd=work)
    recorded = json.load(open(report))["trace"] if shipped.returncode == 0 else None
    check(recorded == "workloads/traces/fmnist-cnn-16w",
          f"inspect records a trace relative to the source tree: {recorded!r}")
    # The capture's setting and how its times were taken are shown, and the
    # whole passes beside the modules' sum that gcsim charges (the manifest's
    # own figures: 64 passes, 10.870720578 ms and 22.133995640 ms whole).
    timing = json.load(open(report)).get("timing", {}) if shipped.returncode == 0 else {}
    check(timing.get("samples") == 64 and abs(timing.get("whole_forward_s", 0) - 0.0108707) < 1e-7
          and abs(timing.get("whole_backward_s", 0) - 0.0221340) < 1e-7
          and timing.get("whole_forward_s", 0) > timing.get("forward_s", 1)
          and timing.get("cpu") == "AMD EPYC" and timing.get("threads") == 2,
          f"inspect reports the whole passes beside the modules' times, and where they were "
          f"taken, as its text does: {timing}")
    text = shipped.stdout.decode()
    whole = [line.split()[2:] for line in text.splitlines() if line.startswith("whole passes ")]
    check("sgd lr 0.05, seed 1" in text and "(input 1x28x28)" in text
          and "mean of 64 passes" in text and whole == [["10.871", "22.134"]],
          f"inspect's text shows the capture's setting and the whole passes: {text[:400]!r}")

help_text = gcsim("--help")
check(help_text.returncode == 0 and "run" in help_text.stdout, "gcsim --help lists the commands")
run_help = gcsim("run", "--help")
check(run_help.returncode == 0 and "--set" in run_help.stdout, "gcsim run --help documents --set")
version = gcsim("--version")
check(version.returncode == 0 and version.stdout.startswith("gcsim "), "gcsim --version")
# The commit it names is one of this checkout's (the build's; HEAD may have
# moved since), less a "-dirty" the tree may have had at build time.
named = version.stdout.split()[-1].rstrip(")").removesuffix("-dirty")
if subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True).returncode == 0:
    known = subprocess.run(["git", "-C", ROOT, "cat-file", "-e", named + "^{commit}"],
                           capture_output=True)
    check(len(named) >= 12 and known.returncode == 0,
          f"gcsim --version names a commit of this checkout: {version.stdout!r}")

# A scenario names its device profile and layer spec by path, and a file of
# that path in the working directory comes before the source tree's
# (paths.hpp): result.json said the same path either way, whatever ran.
with tempfile.TemporaryDirectory() as work:
    def fnv1a64(path):
        value = 14695981039346656037
        for byte in open(path, "rb").read():
            value = ((value ^ byte) * 1099511628211) % 2 ** 64
        return f"fnv1a64:{value:016x}"

    shipped = os.path.join(ROOT, "platforms", "devices", "v100.json")
    shadow = os.path.join(work, "elsewhere", "platforms", "devices", "v100.json")
    os.makedirs(os.path.dirname(shadow))
    profile = json.load(open(shipped))
    profile["compute"]["forward_flop_rate"] = "4.903Tflops"
    json.dump(profile, open(shadow, "w"))
    plain = gcsim("run", QUICKSTART, "--out", os.path.join(work, "plain"), "--quiet", cwd=work)
    shadowed = gcsim("run", QUICKSTART, "--out", os.path.join(work, "shadowed"), "--quiet",
                     cwd=os.path.dirname(os.path.dirname(os.path.dirname(shadow))))
    digests = [json.load(open(os.path.join(work, name, "result.json")))["model"]["input_digests"]
               for name in ("plain", "shadowed")]
    spec = os.path.join(ROOT, "workloads", "models", "resnet18-cifar10.json")
    check(plain.returncode == 0 and shadowed.returncode == 0
          and digests[0] == {"device": fnv1a64(shipped), "workload": fnv1a64(spec)}
          and digests[1]["device"] == fnv1a64(shadow)
          and digests[1]["workload"] == digests[0]["workload"],
          f"result.json says which device profile and layer spec ran: {digests}")
check.finish()
