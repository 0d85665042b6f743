#!/usr/bin/python3
"""scripts/import_torch_profile.py end to end.

- A real run: two gloo ranks on 127.0.0.1 train a small CNN under PyTorch's
  profiler (tests/validation/profiled_training.py); the import must give,
  iteration by iteration, the mean over the two traces of the iteration's
  range and of its allreduce (read here from the raw traces), and `gcsim
  validate` must take the file and simulate the measured compute exactly.
- Traces in torch.profiler's (Kineto's) form, written here with known
  figures: ProfilerStep ranges and their GPU copies, collectives that
  overlap each other and cross an iteration's end, an NCCL kernel, ranks
  that differ; the expected means are worked out by hand. Collectives during
  the backward pass mark the run as overlapped.
- Traces with the GPU's kernels linked to their launches: phases on the
  GPU's clock (what each range launched, from any thread), NCCL's kernels
  as the communication and c10d's nccl ranges not, the GPU's busy share
  and the note where it idled; the same traces without the loop's phase
  ranges, read by PyTorch's own (autograd's functions, the optimizer's
  step); --clock cpu; four refusals.
- --into adds the run to a measured run of collectives.
- Each DDP bucket's share of backward, from its data's readiness, the last
  bucket taking what backward did after it.
- Bad input: exit 2, one line naming the file or option, nothing written;
  never a traceback (a corrupt gzip stream, JSON nested too deeply, bytes
  that are not UTF-8), a hang (a FIFO), nor a measured run gcsim validate
  would refuse (a bandwidth, latency, --batch, --ranks or cluster out of
  its range).

Usage: import_torch_profile_test.py PATH/TO/gcsim
"""
import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import types

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
IMPORT = os.path.join(ROOT, "scripts", "import_torch_profile.py")
TRAINING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiled_training.py")
PYTHON = "/usr/bin/python3"
ITERATIONS = 4

sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from checks import Checks, refusal_problems  # noqa: E402
import import_torch_profile  # noqa: E402

check = Checks()


def run_import(*args):
    return subprocess.run([PYTHON, IMPORT, *args], capture_output=True, text=True, timeout=120)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ranges(trace_file, name):
    with open(trace_file) as f:
        events = json.load(f)
    return sorted((e["ts"] * 1e-6, (e["ts"] + e["dur"]) * 1e-6) for e in events
                  if e.get("ph") == "X" and e.get("name") == name)


def close(a, b, tolerance=2e-9):
    return abs(a - b) <= tolerance


def real_run(tmp):
    port = free_port()
    # gloo would otherwise take the interface the host name resolves to.
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo")
    ranks = [subprocess.Popen([PYTHON, TRAINING, str(r), "2", str(port), tmp, str(ITERATIONS)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env)
             for r in range(2)]
    outputs = [p.communicate(timeout=300)[0] for p in ranks]
    if not check(all(p.returncode == 0 for p in ranks), "the profiled two-rank training ran"):
        print("\n".join(outputs)[-2000:])
        return
    traces = [os.path.join(tmp, f"trace-rank{r}.json") for r in range(2)]
    out = os.path.join(tmp, "real.json")
    result = run_import(*traces, "--step", "iteration", "--layers", os.path.join(tmp, "layers.json"),
                        "--batch", "16", "--bandwidth", "10Gbps", "--latency", "10us",
                        "--out", out)
    if not check(result.returncode == 0, f"import of the real traces: {result.stderr.strip()}"):
        return
    run = json.load(open(out))
    entry = run["training"][0]
    iterations = entry["iterations"]
    check(len(iterations) == ITERATIONS and entry["ranks"] == 2 and run["cluster"]["nodes"] == 2,
          f"{ITERATIONS} iterations of 2 ranks on 2 nodes")
    steps = [ranges(t, "iteration") for t in traces]
    reduces = [ranges(t, "gloo:all_reduce") for t in traces]
    check(all(len(s) == ITERATIONS and len(r) == ITERATIONS for s, r in zip(steps, reduces)),
          "each trace holds an iteration range and an allreduce per iteration")
    for i, it in enumerate(iterations):
        want = sum(s[i][1] - s[i][0] for s in steps) / 2
        allreduce = sum(r[i][1] - r[i][0] for r in reduces) / 2
        check(close(it["iteration_s"], want) and close(it["communication_s"], allreduce),
              f"iteration {i}: {it['iteration_s']:.6f} s with {it['communication_s']:.6f} s of "
              f"allreduce, the traces' means ({want:.6f}, {allreduce:.6f})")
        check(it["forward_s"] > 0 and it["backward_s"] > 0 and
              it["forward_s"] + it["backward_s"] + it["optimizer_s"] + it["communication_s"]
              <= it["iteration_s"] + 1e-9, f"iteration {i}: the phases fit in the iteration")
    check(entry["overlap"] is False, "the allreduce after backward is not an overlap")
    layer_bytes = sum(layer["bytes"] for layer in entry["workload"]["layers"])
    check(layer_bytes == 4 * (8 * 25 + 8 + 8 * 144 * 10 + 10), f"the layers hold {layer_bytes} "
          "bytes, the model's parameters")
    report = os.path.join(tmp, "real-report.json")
    validate = subprocess.run([GCSIM, "validate", out, "--json", report], capture_output=True,
                              text=True, timeout=120)
    if not check(validate.returncode == 0, f"gcsim validate takes it: {validate.stderr.strip()}"):
        return
    training = json.load(open(report))["training"][0]
    measured, simulated = training["measured"], training["simulated"]
    steady = iterations[1:]
    want = sum(i["iteration_s"] for i in steady) / len(steady)
    check(close(measured["iteration_s"], want, 1e-9),
          f"validate compares the iterations after the warm-up ({measured['iteration_s']:.6f} s)")
    scenario_run(tmp, traces)
    # The comparison's measured compute_s leaves the optimizer apart.
    compute = measured["compute_s"] + measured["optimizer_s"]
    check(abs(simulated["compute_s"] / compute - 1) < 1e-6,
          f"simulated compute {simulated['compute_s']:.6f} s is the measured forward, backward "
          f"and optimizer, {compute:.6f} s (a processor per rank)")


def scenario_run(tmp, traces):
    """--scenario: the entry names the scenario (relative to the output) and
    nothing it describes; validate simulates it (scenario_training_test.py
    checks what it simulates)."""
    quickstart = os.path.join(ROOT, "workloads", "scenarios", "quickstart.json")
    out = os.path.join(tmp, "sub", "scenario.json")
    os.makedirs(os.path.dirname(out))
    result = run_import(*traces, "--step", "iteration", "--scenario", quickstart, "--bandwidth",
                        "10Gbps", "--latency", "10us", "--out", out)
    if not check(result.returncode == 0, f"import with --scenario: {result.stderr.strip()}"):
        return
    entry = json.load(open(out))["training"][0]
    written = entry["scenario"]
    check(not os.path.isabs(written) and os.path.samefile(os.path.join(tmp, "sub", written),
                                                          quickstart)
          and not {"compressor", "workload", "overlap"} & set(entry) and entry["name"] == "quickstart",
          f"the run names the scenario relative to its file ({written}) and nothing it describes")
    report = os.path.join(tmp, "scenario-report.json")
    validate = subprocess.run([GCSIM, "validate", out, "--json", report, "--quiet"],
                              capture_output=True, text=True, timeout=300)
    if check(validate.returncode == 0, f"validate simulates the scenario: {validate.stderr.strip()}"):
        t = json.load(open(report))["training"][0]
        check(t["scenario"].endswith("quickstart.json") and t["simulated"]["compute_s"] > 0,
              f"its compute comes from the scenario's model ({t['simulated']['compute_s']:.4f} s)")


def event(name, start, end, cat="user_annotation", tid=1):
    return {"ph": "X", "cat": cat, "name": name, "ts": start, "dur": end - start, "pid": 0,
            "tid": tid}


def kineto_rank(forward_3, comm_3, backward_end_3=700):
    """One rank's torch.profiler trace (us): steps 3 and 4."""
    return {"schemaVersion": 1, "traceEvents": [
        {"ph": "i", "name": "an instant event", "ts": 5},
        event("ProfilerStep#3", 0, 1000),
        event("ProfilerStep#3", 10, 990, cat="gpu_user_annotation", tid=7),  # not a step
        event("forward", 0, forward_3),
        event("backward", forward_3, backward_end_3),
        event("backward", 20, 900, cat="gpu_user_annotation", tid=7),  # not the CPU's phase
        *[event("gloo:all_reduce", a, b, cat="cpu_op", tid=2) for a, b in comm_3],
        event("ProfilerStep#4", 1000, 2500),
        event("forward", 1000, 1300),
        event("aten::conv2d", 1010, 1200, cat="cpu_op"),
        event("backward", 1300, 2000),
        event("optimizer", 2300, 2400),
        event("nccl:all_reduce", 2440, 2445, cat="cpu_op"),
        event("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 2450, 2600, cat="kernel", tid=7),
    ]}


def kineto_traces(tmp):
    layers = os.path.join(tmp, "layers.json")
    json.dump({"layers": [{"name": "w", "parameters": 1000}, {"name": "b", "bytes": 40}]},
              open(layers, "w"))
    # Rank 0: step 3's collectives [700, 900) and [800, 950) overlap: 250 us;
    # step 4: the enqueue [2440, 2445) and the kernel clipped at the step's end
    # [2450, 2500): 55 us. Rank 1: step 3's [700, 1100) is 300 us of step 3
    # and 100 of step 4, which adds the enqueue: 105 us.
    ranks = [kineto_rank(200, [(700, 900), (800, 950)]), kineto_rank(300, [(700, 1100)])]
    # Rank 1 has no NCCL in step 4.
    ranks[1]["traceEvents"] = [e for e in ranks[1]["traceEvents"] if "ncclDev" not in e["name"]]
    files = []
    for r, trace in enumerate(ranks):
        files.append(os.path.join(tmp, f"kineto-{r}.json"))
        json.dump(trace, open(files[-1], "w"))
    return files, layers


def kineto(tmp):
    files, layers = kineto_traces(tmp)
    out = os.path.join(tmp, "kineto.json")
    result = run_import(*files, "--layers", layers, "--warmup", "0", "--compressor", "topk",
                        "--density", "0.01", "--nodes", "2", "--bandwidth", "1Gbps",
                        "--latency", "5us", "--name", "mine", "--out", out)
    if not check(result.returncode == 0, f"import of torch.profiler traces: {result.stderr}"):
        return
    entry = json.load(open(out))["training"][0]
    first, second = entry["iterations"]
    expected_first = dict(iteration_s=1000e-6, forward_s=250e-6, backward_s=450e-6,
                          compute_s=700e-6, optimizer_s=0, compression_s=0,
                          communication_s=275e-6)
    expected_second = dict(iteration_s=1500e-6, forward_s=300e-6, backward_s=700e-6,
                           compute_s=1000e-6, optimizer_s=100e-6, compression_s=0,
                           communication_s=(55e-6 + 105e-6) / 2)
    for got, want, which in ((first, expected_first, "ProfilerStep#3"),
                             (second, expected_second, "ProfilerStep#4")):
        wrong = {k: (got.get(k), v) for k, v in want.items() if not close(got.get(k, -1), v)}
        check(not wrong, f"{which}: the ranks' means as worked out by hand ({wrong or 'all'})")
    check(entry["overlap"] is False and "note:" not in result.stdout,
          "collectives after the backward pass: no overlap")
    check(entry["compressor"] == {"name": "topk", "density": 0.01} and entry["name"] == "mine"
          and entry["warmup_iterations"] == 0, "compressor, name and warm-up as given")
    check([layer["bytes"] for layer in entry["workload"]["layers"]] == [4000, 40],
          "layers from parameters (4 bytes each) and from bytes")
    # A layers file is typed by hand: a key twice was taken as its second
    # ({"parameters": 1000, "parameters": 5}: 20 bytes); refused now, as
    # gcsim refuses it. A byte-order mark is skipped, as gcsim skips it, in
    # the layers file and in a trace.
    twice = os.path.join(tmp, "layers-twice.json")
    with open(twice, "w") as handle:
        handle.write('{"layers": [{"name": "w", "parameters": 1000, "parameters": 5}]}')
    refused = run_import(*files, "--layers", twice, "--warmup", "0", "--nodes", "2",
                         "--bandwidth", "1Gbps", "--latency", "5us",
                         "--out", os.path.join(tmp, "twice.json"))
    check(refused.returncode == 2 and refused.stderr.strip() ==
          f"import_torch_profile.py: {twice}: /layers/0/parameters: this key appears twice in "
          "one object: keep one of them", f"a layers file with a key twice: {refused.stderr!r}")
    marked = []
    for path in (layers, files[0]):
        marked.append(os.path.join(tmp, "bom-" + os.path.basename(path)))
        with open(path, encoding="utf-8") as source, \
                open(marked[-1], "w", encoding="utf-8-sig") as target:
            target.write(source.read())
    again = os.path.join(tmp, "kineto-bom.json")
    result = run_import(marked[1], files[1], "--layers", marked[0], "--warmup", "0",
                        "--compressor", "topk", "--density", "0.01", "--nodes", "2",
                        "--bandwidth", "1Gbps", "--latency", "5us", "--name", "mine",
                        "--out", again)
    bom_entry = json.load(open(again))["training"][0] if result.returncode == 0 else {}
    check(bom_entry.get("iterations") == entry["iterations"]
          and bom_entry.get("workload") == entry["workload"],
          f"a byte-order mark before a layers file or a trace is skipped: {result.stderr!r}")

    # DDP's PowerSGD hook: its settings, the layers' shapes carried, gcsim reads it.
    shaped = os.path.join(tmp, "shaped-layers.json")
    json.dump([{"name": "w", "parameters": 1000, "shape": [10, 100]},
               {"name": "b", "bytes": 40, "shape": [10]}], open(shaped, "w"))
    hooked = os.path.join(tmp, "powersgd.json")
    result = run_import(*files, "--layers", shaped, "--warmup", "0", "--compressor", "powersgd",
                        "--matrix-rank", "2", "--nodes", "2", "--bandwidth", "1Gbps",
                        "--latency", "5us", "--out", hooked)
    entry = json.load(open(hooked))["training"][0] if result.returncode == 0 else {}
    check(entry.get("compressor") == {"name": "powersgd", "rank": 2, "start_iteration": 1000}
          and [layer.get("shape") for layer in entry["workload"]["layers"]] == [[10, 100], [10]],
          f"powersgd: rank 2, DDP's start_powerSGD_iter by default, the shapes kept "
          f"({result.stderr.strip() or entry.get('compressor')})")
    refused = subprocess.run([GCSIM, "validate", hooked, "--quiet"], capture_output=True,
                             text=True)
    check(refused.returncode == 2 and "/training/0/workload/layers: the compressors run on"
          in refused.stderr,
          f"gcsim reads the powersgd run and compares its layers with the trace's: "
          f"{refused.stderr.strip()}")

    # Backward until 800 in step 3 on rank 0: 100 of its 250 us of collectives.
    json.dump(kineto_rank(200, [(700, 900), (800, 950)], backward_end_3=800), open(files[0], "w"))
    result = run_import(*files, "--layers", layers, "--out", out, "--bandwidth", "1Gbps",
                        "--latency", "5us")
    check(result.returncode == 0 and json.load(open(out))["training"][0]["overlap"] is True
          and "note:" in result.stdout, "collectives during the backward pass mark an overlap")


def launch(correlation, at, tid=1):
    """A CUDA launch on the CPU's timeline (us) and its kernel's correlation."""
    return {**event("cudaLaunchKernel", at, at + 4, cat="cuda_runtime", tid=tid),
            "args": {"correlation": correlation}}


def on_gpu(correlation, start, end, name="void conv_kernel<float>()", cat="kernel", stream=7,
           **details):
    return {**event(name, start, end, cat=cat, tid=stream),
            "args": {"correlation": correlation, **details}}


def message(collective, elements, dtype):
    """What PyTorch records of an NCCL kernel's message."""
    return {"Collective name": collective, "In msg nelems": elements, "dtype": dtype,
            "Group size": 2}


def gpu_rank(nccl_end):
    """One rank's trace with the GPU's activity (us): two iterations whose
    kernels run after their launches, one past its iteration's end."""
    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    return {"traceEvents": [
        event("ProfilerStep#1", 0, 1000),
        event("forward", 0, 100),
        launch(1, 10), launch(2, 20),
        on_gpu(1, 30, 230), on_gpu(2, 230, 250, "Memcpy HtoD (Pageable -> Device)", "gpu_memcpy"),
        event("backward", 100, 200),
        # autograd launches the backward's kernels from a thread of its own,
        # DDP the allreduce of a bucket while backward runs on.
        launch(3, 110, tid=3), launch(4, 150, tid=3), launch(5, 190, tid=3),
        # DDP's copy into a bucket, launched between autograd's functions.
        launch(8, 160, tid=3), on_gpu(8, 650, 700, "Memcpy DtoD (Device -> Device)", "gpu_memcpy"),
        event("nccl:all_reduce", 150, 152, cat="user_annotation", tid=3),  # only enqueues
        on_gpu(3, 250, 450), on_gpu(5, 450, 650, "void cudnn::bn_bw_1C11_kernel_new<float>()"),
        on_gpu(4, 300, nccl_end, nccl, stream=20, **message("allreduce", 1000, "Float")),
        on_gpu(7, 650, 660, nccl, stream=20, **message("allreduce", 10, "Half")),
        launch(7, 195, tid=3),
        event("optimizer", 200, 250),
        launch(6, 210), on_gpu(6, 900, 1050),  # runs past the iteration's end
        on_gpu(99, 0, 2000),  # its launch is not in the trace: not counted
        event("ProfilerStep#2", 1000, 2000),
        event("forward", 1000, 1100), launch(11, 1010), on_gpu(11, 1060, 1160),
        event("backward", 1100, 1200), launch(12, 1120, tid=3), on_gpu(12, 1160, 1360),
        event("backward", 1160, 1360, cat="gpu_user_annotation", tid=7),
        event("nccl:all_reduce", 1210, 1215, tid=3),  # an enqueue with no kernel
        launch(13, 1250), on_gpu(13, 1360, 1400),  # outside every range, after backward
        event("gloo:all_reduce", 1500, 1600, cat="cpu_op", tid=2),  # gloo's is the collective
    ]}


def unnamed(trace, autograd=True):
    """The trace without the loop's phase ranges, with what PyTorch's profiler
    names by itself around the same launches: autograd's functions, the
    optimizer's step."""
    events = [e for e in trace["traceEvents"]
              if e["name"] not in ("forward", "backward", "optimizer")]
    own = [event("Optimizer.step#SGD.step", 200, 250)]
    if autograd:
        own += [event("autograd::engine::evaluate_function: ConvolutionBackward0", a, b, tid=3)
                for a, b in ((105, 115), (185, 195), (1115, 1125))]
    return {"traceEvents": events + own}


def simulated(measured):
    report = measured + ".report.json"
    result = subprocess.run([GCSIM, "validate", measured, "--json", report, "--quiet"],
                            capture_output=True, text=True, timeout=120)
    if not check(result.returncode == 0, f"validate {os.path.basename(measured)}: "
                                         f"{result.stderr.strip()}"):
        return None
    return json.load(open(report))["training"][0]["simulated"]


def overlapped_buckets(tmp, imported):
    """validate reduces each timed bucket as backward reaches it: less of the
    communication is left after compute than with one allreduce after it."""
    run = json.load(open(imported))
    # A gradient worth overlapping: 25 MB at 100 Gbps is 2 ms, backward 5 ms.
    layers = run["training"][0]["workload"]["layers"]
    layers[0]["bytes"], layers[1]["bytes"] = 5 << 20, 20 << 20
    for iteration in run["training"][0]["iterations"]:
        iteration["backward_s"], iteration["compute_s"] = 5e-3, 5e-3 + iteration["forward_s"]
    timed = os.path.join(tmp, "timed.json")
    json.dump(run, open(timed, "w"))
    # The 20 MiB bucket's layers take nearly all of backward: it is ready
    # near its end, and its allreduce is left after it.
    shares = [layer["backward_s"] for layer in layers]
    layers[0]["backward_s"], layers[1]["backward_s"] = 10e-6, 440e-6
    late = os.path.join(tmp, "late.json")
    json.dump(run, open(late, "w"))
    layers[0]["backward_s"], layers[1]["backward_s"] = shares
    for layer in layers:
        del layer["backward_s"]
    flat = os.path.join(tmp, "flat.json")
    json.dump(run, open(flat, "w"))
    with_buckets, without, late_bucket = simulated(timed), simulated(flat), simulated(late)
    if with_buckets and late_bucket:
        check(late_bucket["communication_s"] > with_buckets["communication_s"] + 1e-3,
              f"backward is shared among the buckets as measured: the large bucket ready near "
              f"its end leaves {late_bucket['communication_s']:.6f} s after it, against "
              f"{with_buckets['communication_s']:.6f} s ready halfway")
    if with_buckets and without:
        # The 20 MiB bucket (1.7 ms) hides in the last 2.5 ms of backward;
        # only the 5 MiB one (0.4 ms) is left after it.
        check(close(with_buckets["compute_s"], without["compute_s"], 1e-12)
              and with_buckets["communication_s"] < 0.25 * without["communication_s"],
              f"buckets reduced during backward leave less communication after it "
              f"({with_buckets['communication_s']:.6f} against {without['communication_s']:.6f} s)")


def gpu_clock(tmp):
    """Phases as the GPU's busy time in what each range launched; NCCL's
    kernels are the communication, c10d's nccl ranges are not."""
    _, layers = kineto_traces(tmp)
    files = []
    for r, nccl_end in enumerate((700, 500)):
        files.append(os.path.join(tmp, f"gpu-{r}.json"))
        json.dump(gpu_rank(nccl_end), open(files[-1], "w"))
    out = os.path.join(tmp, "gpu.json")
    star = ["--layers", layers, "--bandwidth", "100Gbps", "--latency", "5us", "--out", out]
    # tensorboard_trace_handler(use_gzip=True) writes *.pt.trace.json.gz: the
    # second rank's trace so.
    with open(files[1], "rb") as plain, gzip.open(files[1] + ".gz", "wb") as packed:
        packed.write(plain.read())
    files[1] += ".gz"
    result = run_import(*files, "--warmup", "0", *star)
    if not check(result.returncode == 0, f"import of traces with GPU kernels, one gzipped: "
                                         f"{result.stderr}"):
        return
    run = json.load(open(out))
    # The same launches found by PyTorch's own ranges: the same phases.
    bare = []
    for r, nccl_end in enumerate((700, 500)):
        bare.append(os.path.join(tmp, f"gpu-unnamed-{r}.json"))
        json.dump(unnamed(gpu_rank(nccl_end)), open(bare[-1], "w"))
    result_bare = run_import(*bare, "--warmup", "0", *star)
    if check(result_bare.returncode == 0 and "autograd" in result_bare.stdout,
             f"traces without phase ranges: autograd's and the optimizer's ranges "
             f"({result_bare.stderr.strip()})"):
        check(json.load(open(out))["training"][0]["iterations"] == run["training"][0]["iterations"],
              "and give the phases the named ranges give")
    first, second = run["training"][0]["iterations"]
    # Forward: 200 of kernel + 20 of copy; backward 400 of kernels + 50 of
    # copy; the optimizer's kernel all 150 us; the allreduce kernels
    # [300, 700) and [650, 660): 400 us, and [300, 500) and [650, 660): 210 us.
    expected_first = dict(iteration_s=1000e-6, forward_s=220e-6, backward_s=450e-6,
                          compute_s=670e-6, optimizer_s=150e-6, compression_s=0,
                          communication_s=305e-6)
    # Iteration 2: the kernel launched after backward's range, in no range,
    # is the optimizer's 40 us.
    expected_second = dict(iteration_s=1000e-6, forward_s=100e-6, backward_s=200e-6,
                           compute_s=300e-6, optimizer_s=40e-6, compression_s=0,
                           communication_s=100e-6)
    for got, want, which in ((first, expected_first, "iteration 1"),
                             (second, expected_second, "iteration 2")):
        wrong = {k: (got.get(k), v) for k, v in want.items() if not close(got.get(k, -1), v)}
        check(not wrong, f"GPU clock, {which}: as worked out by hand ({wrong or 'all'})")
    check(run["training"][0]["overlap"] is True and "GPU's clock" in run["source"],
          "the allreduce kernels ran beside backward's: overlap; the source names the clock")
    # Busy: iteration 1 820 us of 1000 on either rank, iteration 2 340.
    check("busy 58%" in result.stdout and "idled" not in result.stdout,
          f"the GPU's busy share is printed ({result.stdout.strip()})")
    # By kind, means of the two iterations (us): forward 200 and 100 of
    # convolution, 20 and 0 of copy; backward 200 and 200 of convolution, 200
    # and 0 of batch norm (a cuDNN kernel, yet a norm), 50 and 0 of copy.
    result = run_import(*files, "--warmup", "0", "--by-kernel", *star)
    check("forward: conv/gemm 0.150, copy 0.010" in result.stdout
          and "backward: conv/gemm 0.200, norm 0.100, copy 0.025" in result.stdout,
          f"--by-kernel: each phase's GPU time by kind of kernel ({result.stdout.strip()})")
    result = run_import(*files, "--warmup", "1", *star)
    check(result.returncode == 0 and "busy 34%" in result.stdout and "idled" in result.stdout,
          f"a GPU busy 34% of the compared iterations: a note says the CPU held it back "
          f"({result.stdout.strip()})")
    # After a warm-up iteration, the means of iteration 2 alone: forward 100
    # us of convolution, backward 200, the optimizer's 40.
    result = run_import(*files, "--warmup", "1", "--by-kernel", *star)
    check("forward: conv/gemm 0.100\n" in result.stdout
          and "backward: conv/gemm 0.200\n" in result.stdout
          and "optimizer: conv/gemm 0.040\n" in result.stdout,
          f"--by-kernel --warmup 1: the means of the compared iteration ({result.stdout.strip()})")
    # No --layers: the gradient is the first iteration's allreduces, 1000
    # floats and then 10 halves, listed in forward order. The first was
    # launched after the kernels up to 450 us, 200 us into backward's
    # [250, 700); the second after those up to 700, the other 250 us.
    cluster = ["--bandwidth", "100Gbps", "--latency", "5us", "--out", out]
    result = run_import(*files, "--warmup", "0", *cluster)
    layers_found = json.load(open(out))["training"][0]["workload"]["layers"] \
        if result.returncode == 0 else result.stderr
    check(layers_found == [{"name": "bucket1", "bytes": 20, "backward_s": 250e-6},
                           {"name": "bucket0", "bytes": 4000, "backward_s": 200e-6}]
          and "2 NCCL allreduces" in result.stdout,
          f"without --layers, the NCCL allreduces' messages are the gradient, each bucket with "
          f"the backward time it waited for ({layers_found})")
    if result.returncode == 0:
        overlapped_buckets(tmp, out)
    result = run_import(*files, "--warmup", "0", "--clock", "cpu", *star)
    got = json.load(open(out))["training"][0]["iterations"][0] if result.returncode == 0 else {}
    check(close(got.get("forward_s", -1), 100e-6) and close(got.get("optimizer_s", -1), 50e-6),
          f"--clock cpu times the ranges themselves ({got})")

    def write(name, trace):
        path = os.path.join(tmp, name)
        json.dump(trace, open(path, "w"))
        return path

    nothing_launched = gpu_rank(700)
    nothing_launched["traceEvents"] = [e for e in nothing_launched["traceEvents"]
                                       if e.get("args", {}).get("correlation") != 11]
    odd_type = gpu_rank(700)
    for e in odd_type["traceEvents"]:
        if e.get("args", {}).get("dtype") == "Half":
            e["args"]["dtype"] = "ComplexFloat"
    # Kineto records the rank and the run's size: one rank's trace is then
    # enough to know the run's ranks.
    placed = []
    for rank in (0, 0):
        trace = gpu_rank(700)
        trace["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 2}
        placed.append(write(f"placed-{len(placed)}.json", trace))
    # A rank or size of another type or out of range: the message said "rank 0
    # of world_size 2" for a rank "0", which reads like a valid one.
    misplaced = []
    for rank, world in (("0", 2), (2, 2), (0, 2.0)):
        trace = gpu_rank(700)
        trace["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": world}
        misplaced.append(write(f"misplaced-{len(misplaced)}.json", trace))
    # A multi_gpu platform's workers are its GPUs: 2 machines of 8 for 16 ranks.
    result = run_import(files[0], "--ranks", "16", "--layers", layers, "--cluster",
                        os.path.join(ROOT, "platforms", "dgx-2x8-v100.json"), "--out", out)
    check(result.returncode == 0, f"16 ranks on 2 machines of 8 GPUs: {result.stderr.strip()}")
    result = run_import(placed[0], *star)
    entry = json.load(open(out))["training"][0] if result.returncode == 0 else {}
    check(entry.get("ranks") == 2 and "(1 traced)" in result.stdout,
          f"one trace of a two-rank run: two ranks from its distributedInfo "
          f"({result.stdout.strip() or result.stderr.strip()})")
    cpu_files, _ = kineto_traces(tmp)
    os.remove(out)
    for what, args, needles in [
            ("--clock gpu on a trace without GPU kernels", [cpu_files[0], "--clock", "gpu"],
             ["kineto-0.json", "--clock gpu"]),
            ("a forward that launched nothing on the GPU", [write("idle.json", nothing_launched)],
             ["idle.json", "iteration 2", "'forward'"]),
            ("ranks on different clocks", [files[0], cpu_files[1]], ["read differently"]),
            ("one rank's trace twice", placed, ["placed-1.json", "rank 0 again"]),
            ("a rank given as a string", [misplaced[0]],
             ["misplaced-0.json: /distributedInfo/rank: expected an integer, got \"0\""]),
            ("a rank past the run's size", [misplaced[1]],
             ["/distributedInfo/rank: expected an integer in [0, world_size 2), got 2"]),
            ("a fractional run size", [misplaced[2]],
             ["/distributedInfo/world_size: expected an integer, got 2.0"]),
            ("--ranks other than the traces' world size", [placed[0], "--ranks", "4"],
             ["--ranks 4", "2 ranks"]),
            ("more traces than ranks", [*files, "--ranks", "1"], ["2 traces", "1 ranks"]),
            ("a compressed run without --layers", [files[0], "--compressor", "topk",
                                                   "--density", "0.01"], ["--layers"]),
            ("an allreduce of a type without a size, without --layers",
             [write("odd.json", odd_type), "--compressor", "dense", "--warmup", "0"],
             ["odd.json", "ComplexFloat", "--layers"]),
            ("no phase ranges and no autograd", [write("bare.json", unnamed(gpu_rank(700),
                                                                           autograd=False))],
             ["bare.json", "iteration 1", "autograd"])]:
        # The runs that name their compressor go without --layers.
        tail = cluster if "--compressor" in args else star
        problems = refusal_problems(run_import(*args, *tail), needles, result_file=out)
        check(not problems, f"{what}: exit 2, one line{'; ' + '; '.join(problems) if problems else ''}")


def warmed_up(compared, warm_messages):
    """A warm-up iteration [0, 1000) us whose NCCL allreduces send
    `warm_messages` ((elements, dtype) each, launched during backward, the
    first ready 100 us into backward, the last 500 us), then `compared`'s
    iterations 1000 us later."""
    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    events = [event("ProfilerStep#0", 0, 1000), event("forward", 0, 100),
              launch(21, 10), on_gpu(21, 30, 130), event("backward", 100, 200),
              launch(22, 110, tid=3), on_gpu(22, 150, 250),
              launch(24, 130, tid=3), on_gpu(24, 300, 700)]
    for (elements, dtype), (correlation, at, start) in zip(warm_messages,
                                                          ((23, 120, 260), (25, 190, 700))):
        events += [launch(correlation, at, tid=3),
                   on_gpu(correlation, start, start + 10, nccl, stream=20,
                          **message("allreduce", elements, dtype))]
    for e in compared["traceEvents"]:
        events.append({**e, "ts": e["ts"] + 1000})
    return {"traceEvents": events}


def readings(tmp):
    """What a wrong reading of the traces would get wrong while the figures
    above still come out: a collective that touches backward's end, events
    out of order, a phase range past its iteration's end, kernels of one
    phase side by side, a collective in a gap of backward's kernels, the
    gradient from the first compared iteration (not the warm-up's), NCCL
    collectives that are not allreduces, zero_grad at the iteration's start,
    older traces' capitalized categories."""
    files, layers = kineto_traces(tmp)
    out = os.path.join(tmp, "read.json")
    star = ["--bandwidth", "1Gbps", "--latency", "5us", "--out", out]

    def imported(*args):
        result = run_import(*args, *star)
        if not check(result.returncode == 0, f"import {' '.join(map(os.path.basename, args))}: "
                                             f"{result.stderr.strip()}"):
            return None
        return json.load(open(out))["training"][0]

    def write(name, trace):
        path = os.path.join(tmp, name)
        json.dump(trace, open(path, "w"))
        return path

    # Backward ends 5 us into rank 0's 250 us of collectives: 2.5 us of the
    # ranks' mean 275 us, under OVERLAP_SHARE: not an overlapped run.
    touching = write("touching.json", kineto_rank(200, [(700, 900), (800, 950)],
                                                  backward_end_3=705))
    entry = imported(touching, files[1], "--layers", layers, "--warmup", "0")
    check(entry is not None and entry["overlap"] is False,
          "collectives that touch backward's end for 1% of their time: no overlap")
    # Kineto does not promise its events in time order: the same traces
    # reversed give the same iterations, in order.
    reference = imported(*files, "--layers", layers, "--warmup", "0")
    reversed_files = []
    for r, path in enumerate(files):
        trace = json.load(open(path))
        trace["traceEvents"].reverse()
        reversed_files.append(write(f"reversed-{r}.json", trace))
    entry = imported(*reversed_files, "--layers", layers, "--warmup", "0")
    check(entry is not None and reference is not None
          and entry["iterations"] == reference["iterations"],
          "the traces' events in reverse order: the same iterations, in order")
    # An optimizer range that runs past its iteration's end counts up to it:
    # step 4 ends at 2500 us, the range [2300, 2600) gives 200 us.
    late = []
    for r, trace in enumerate(json.load(open(path)) for path in files):
        for e in trace["traceEvents"]:
            if e["name"] == "optimizer":
                e["dur"] = 300
        late.append(write(f"late-optimizer-{r}.json", trace))
    entry = imported(*late, "--layers", layers, "--warmup", "0")
    check(entry is not None and close(entry["iterations"][1]["optimizer_s"], 200e-6),
          f"a phase range past its iteration's end counts up to it "
          f"({entry and entry['iterations'][1]['optimizer_s']})")

    # A backward kernel on a second stream beside kernel 12 ([1160, 1360) us):
    # backward is still 200 us of the GPU's busy time, not 300.
    side = gpu_rank(700)
    side["traceEvents"] += [launch(14, 1130, tid=3),
                            on_gpu(14, 1200, 1300, "void gemm_kernel<float>()", stream=8)]
    entry = imported(write("side-streams.json", side), "--layers", layers, "--warmup", "0")
    check(entry is not None and close(entry["iterations"][1]["backward_s"], 200e-6),
          f"kernels of backward side by side: their union "
          f"({entry and entry['iterations'][1]['backward_s']})")
    # An allreduce kernel that runs while backward's stream waits between
    # its kernels ([120, 200) and [500, 550)): during the backward pass.
    gap = {"traceEvents": [
        event("ProfilerStep#1", 0, 1000), event("forward", 0, 100), launch(1, 10),
        on_gpu(1, 20, 100), event("backward", 100, 200), launch(2, 110, tid=3),
        on_gpu(2, 120, 200), launch(3, 150, tid=3),
        on_gpu(3, 200, 500, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", stream=20,
               **message("allreduce", 1000, "Float")),
        launch(4, 190, tid=3), on_gpu(4, 500, 550)]}
    entry = imported(write("gap.json", gap), "--layers", layers, "--warmup", "0")
    check(entry is not None and entry["overlap"] is True,
          "an allreduce in a gap between backward's kernels: overlap")

    # The gradient without --layers is what the first compared iteration
    # allreduced, each bucket's backward time from the compared iterations:
    # a warm-up that allreduced the same buckets at other times, other
    # buckets (DDP rebuilds them after its first iteration), or none, changes
    # nothing. Iteration 1 of gpu_rank, with an allgather that is no bucket.
    compared = gpu_rank(700)
    compared["traceEvents"] += [
        launch(16, 170, tid=3),
        on_gpu(16, 700, 705, "ncclDevKernel_AllGather_RING_LL", stream=20,
               **message("allgather", 50, "Float"))]
    want = [{"name": "bucket1", "bytes": 20, "backward_s": 250e-6},
            {"name": "bucket0", "bytes": 4000, "backward_s": 200e-6}]
    for label, warm in (("the same buckets", [(1000, "Float"), (10, "Half")]),
                        ("another bucket", [(2000, "Float")]), ("no allreduce", [])):
        name = f"warm-{len(warm)}.json"
        result = run_import(write(name, warmed_up(compared, warm)), "--warmup", "1", *star)
        found = json.load(open(out))["training"][0]["workload"]["layers"] \
            if result.returncode == 0 else result.stderr.strip()
        check(found == want, f"a warm-up iteration with {label}: the buckets of the compared "
                             f"iteration's allreduces ({found})")

    # Optimizer.zero_grad at the iteration's start (before forward): its
    # memset is the optimizer's, not forward's.
    bare = unnamed(gpu_rank(700))
    bare["traceEvents"] += [event("Optimizer.zero_grad#SGD.zero_grad", 1, 8), launch(17, 2),
                            on_gpu(17, 3, 9, "Memset (Device)", "gpu_memset")]
    entry = imported(write("zero-grad.json", bare), "--layers", layers, "--warmup", "0")
    first = entry["iterations"][0] if entry else {}
    check(close(first.get("optimizer_s", -1), 156e-6) and close(first.get("forward_s", -1),
                                                                 220e-6),
          f"zero_grad's memset before forward is the optimizer's ({first})")

    # Older traces capitalize the categories ("Kernel", "Runtime"): the same
    # phases on the GPU's clock.
    reference = imported(write("lower.json", gpu_rank(700)), "--layers", layers, "--warmup", "0")
    old = gpu_rank(700)
    for e in old["traceEvents"]:
        e["cat"] = {"kernel": "Kernel", "cuda_runtime": "Runtime",
                    "gpu_memcpy": "Memcpy"}.get(e["cat"], e["cat"])
    entry = imported(write("capitalized.json", old), "--layers", layers, "--warmup", "0")
    check(entry is not None and reference is not None
          and entry["iterations"] == reference["iterations"] and "GPU's clock" in open(out).read(),
          "capitalized categories: the same phases on the GPU's clock")

    # torch.profiler without a schedule ends with a ProfilerStep that holds
    # no work (after the loop's last prof.step()): left out, and said. It
    # failed the whole import ("autograd launched no GPU work").
    for label, trace in (("named phases", gpu_rank(700)), ("autograd's", unnamed(gpu_rank(700)))):
        trace["traceEvents"].append(event("ProfilerStep#3", 2000, 2049))
        result = run_import(write("trailing.json", trace), "--layers", layers, "--warmup", "0",
                            *star)
        entry = json.load(open(out))["training"][0] if result.returncode == 0 else None
        check(entry is not None and len(entry["iterations"]) == 2
              and "its last ProfilerStep (49 us) holds no forward or backward pass"
              in result.stdout,
              f"an empty last ProfilerStep with {label} is left out, and said "
              f"({result.returncode}: {result.stderr.strip()[-200:]})")
    # Steps without any pass: the phases are missing, and no note says the
    # last step was left out for holding none.
    bare_steps = {"traceEvents": [event("ProfilerStep#1", 0, 1000),
                                  event("ProfilerStep#2", 1000, 2000)]}
    result = run_import(write("no-phases.json", bare_steps), "--layers", layers, "--warmup", "0",
                        *star)
    check(result.returncode == 2 and "note:" not in result.stdout
          and "iteration 1 has no 'forward' range" in result.stderr,
          f"steps without passes: the missing range said, no note "
          f"({result.returncode}: {result.stdout.strip()[:100]!r} {result.stderr.strip()})")
    # An operator named "forward" (a scripted module's) is not the loop's
    # range of that name: beside the user's ranges it changes nothing, and
    # without them autograd's ranges still find the phases (it took it for
    # the user's and asked for a 'backward' range).
    operator = gpu_rank(700)
    operator["traceEvents"].append(event("forward", 20, 60, cat="cpu_op"))
    entry = imported(write("operator.json", operator), "--layers", layers, "--warmup", "0")
    check(entry is not None and reference is not None
          and entry["iterations"] == reference["iterations"],
          "a cpu_op named forward beside the loop's ranges changes nothing")
    operator = unnamed(gpu_rank(700))
    plain_autograd = imported(write("autograd.json", operator), "--layers", layers, "--warmup", "0")
    operator["traceEvents"].append(event("forward", 20, 60, cat="cpu_op"))
    entry = imported(write("operator-autograd.json", operator), "--layers", layers, "--warmup", "0")
    check(entry is not None and plain_autograd is not None
          and entry["iterations"] == plain_autograd["iterations"],
          "a cpu_op named forward in a trace without the loop's ranges: autograd's phases")


def data_ready():
    """A bucket's data is ready when all the GPU work launched before its
    allreduce has ended, the latest end, not the last launched's: here a
    kernel launched second ends first."""
    def kernel(name, start, end, message=None):
        return import_torch_profile.Event(name, "kernel", start, end, None, message)
    reduce = ("allreduce", 10, "float")
    launched = list(enumerate([kernel("conv", 0, 300e-6), kernel("gemm", 100e-6, 200e-6),
                               kernel("ncclDevKernel_AllReduce", 300e-6, 400e-6, reduce),
                               kernel("conv", 400e-6, 500e-6),
                               kernel("ncclDevKernel_AllReduce", 500e-6, 600e-6, reduce)]))
    backward = [(0, 300e-6), (100e-6, 200e-6), (400e-6, 500e-6)]
    out = import_torch_profile.allreduces(launched, backward, 0)
    check([m for m, _ in out] == [reduce, reduce] and close(out[0][1], 300e-6)
          and close(out[1][1], 400e-6),
          f"each allreduce's data ready after all that was launched before it: {out}")
    # What PyTorch records as an NCCL message's dtype (c10's type names).
    sizes = {"Float": 4, "Half": 2, "BFloat16": 2, "Double": 8, "Int": 4, "Long": 8, "Short": 2,
             "Byte": 1, "Char": 1, "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1}
    got = {dtype: import_torch_profile.buckets_of("trace", [("allreduce", 3, dtype)])[0]["bytes"]
           for dtype in sizes}
    check(got == {dtype: 3 * size for dtype, size in sizes.items()},
          f"3 elements of each type PyTorch records, in bytes: {got}")


def into(tmp):
    files, layers = kineto_traces(tmp)
    collectives = {"format": "gcsim-measured-run/1", "name": "cluster", "source": "nccl-tests",
                   "cluster": {"topology": "star", "nodes": 2,
                               "link": {"bandwidth": "1Gbps", "latency": "5us"}},
                   "collectives": [{"collective": "allreduce", "ranks": 2, "bytes": 1 << 20,
                                    "seconds": 0.01, "repetitions": 5}]}
    base = os.path.join(tmp, "cluster.json")
    json.dump(collectives, open(base, "w"))
    out = os.path.join(tmp, "both.json")
    result = run_import(*files, "--layers", layers, "--into", base, "--out", out)
    if not check(result.returncode == 0, f"--into: {result.stderr.strip()}"):
        return
    both = json.load(open(out))
    check(both["collectives"] == collectives["collectives"] and len(both["training"]) == 1
          and both["cluster"] == collectives["cluster"],
          "--into keeps the collectives and the cluster and adds the training run")
    report = os.path.join(tmp, "both-report.json")
    validate = subprocess.run([GCSIM, "validate", out, "--json", report, "--quiet"],
                              capture_output=True, text=True, timeout=120)
    if check(validate.returncode == 0, f"validate takes the merged file: {validate.stderr.strip()}"):
        compared = json.load(open(report))
        check(len(compared["collectives"]) == 1 and len(compared["training"]) == 1,
              "and compares its collective and its training run")
    # A SimGrid XML cluster in another folder: its "xml" is written relative
    # to the output, where gcsim validate looks for it.
    os.makedirs(os.path.join(tmp, "elsewhere"))
    shutil.copy(os.path.join(ROOT, "platforms", "small-cluster.xml"),
                os.path.join(tmp, "elsewhere"))
    xml_base = os.path.join(tmp, "elsewhere", "xml-run.json")
    json.dump({**collectives, "cluster": {"topology": "simgrid_xml", "xml": "small-cluster.xml",
                                          "nodes": 2}}, open(xml_base, "w"))
    result = run_import(*files, "--layers", layers, "--into", xml_base, "--out", out)
    validate = subprocess.run([GCSIM, "validate", out, "--quiet"], capture_output=True,
                              text=True, timeout=120) if result.returncode == 0 else result
    check(validate.returncode == 0, f"--into a simgrid_xml cluster of another folder: its xml "
                                    f"found from the output ({validate.stderr.strip()})")


def refusals(tmp):
    files, layers = kineto_traces(tmp)
    out = os.path.join(tmp, "refused.json")
    star = ["--bandwidth", "1Gbps", "--latency", "5us", "--out", out]

    def write(name, content):
        path = os.path.join(tmp, name)
        with open(path, "wb" if isinstance(content, bytes) else "w") as f:
            f.write(content if isinstance(content, (str, bytes)) else json.dumps(content))
        return path

    no_steps = {"traceEvents": [event("forward", 0, 10), event("backward", 10, 20)]}
    no_backward = kineto_rank(200, [(700, 900)])
    no_backward["traceEvents"] = [e for e in no_backward["traceEvents"]
                                  if not (e["name"] == "backward" and e["ts"] >= 1000)]
    one_step = {"traceEvents": [e for e in kineto_rank(200, [])["traceEvents"]
                                if e["ts"] < 1000]}
    instant = kineto_rank(200, [(700, 900)])
    instant["traceEvents"][1]["dur"] = 0  # ProfilerStep#3
    negative = kineto_rank(200, [(700, 900)])
    negative["traceEvents"].append(event("gloo:all_reduce", 10, 5))
    # An event of a string time was left out without a word (an optimizer
    # range, say, and the iteration priced without it).
    string_time = kineto_rank(200, [(700, 900)])
    string_time["traceEvents"][2]["ts"] = "x"
    fifo = os.path.join(tmp, "fifo.json")
    os.mkfifo(fifo)
    with open(layers) as f:
        unnamed = json.load(f)
    (unnamed["layers"] if isinstance(unnamed, dict) else unnamed)[0]["name"] = None
    cases = [
        # A file named twice was two ranks; a layer named null was "None".
        ("a trace given twice", [files[0], files[0], "--layers", layers], ["given twice"]),
        ("a layer named null", [files[0], "--layers", write("unnamed.json", unnamed)],
         ["unnamed.json: layer 0: name is null"]),
        ("an event of a string time", [write("string-time.json", string_time), "--layers",
                                       layers], ["string-time.json: event '", "ts is a string"]),
        ("not JSON", [write("bad.json", "{ nope"), files[1], "--layers", layers], ["bad.json"]),
        ("a gzip stream cut short", [write("cut.json.gz", gzip.compress(b'{"traceEvents": []}')[:12]),
                                     "--layers", layers], ["cut.json.gz", "gzip"]),
        ("not a trace", [write("obj.json", {"events": []}), "--layers", layers], ["obj.json"]),
        ("a trace of no events", [write("empty.json", []), "--layers", layers],
         ["empty.json", "no events: nothing was profiled"]),
        ("no iterations", [write("nosteps.json", no_steps), "--layers", layers],
         ["nosteps.json", "ProfilerStep"]),
        ("an unknown --step", [files[0], "--step", "iteration", "--layers", layers],
         ["kineto-0.json", "'iteration'"]),
        ("an iteration without backward", [write("nobwd.json", no_backward), "--layers", layers],
         ["nobwd.json", "iteration 2", "'backward'"]),
        ("a negative duration", [write("neg.json", negative), "--layers", layers], ["neg.json"]),
        ("an iteration of no time", [write("zero.json", instant), "--layers", layers],
         ["zero.json", "iteration 1 lasts 0"]),
        ("ranks with different iterations", [files[0], write("one.json", one_step), "--layers",
                                             layers], ["different numbers of iterations"]),
        ("a warm-up of every iteration", [files[0], "--warmup", "2", "--layers", layers],
         ["--warmup 2"]),
        ("neither --layers nor --scenario", [files[0]], ["--layers", "--scenario"]),
        ("a --scenario that is not there", [files[0], "--scenario", os.path.join(tmp, "no.json")],
         ["no.json: no such file"]),
        # A folder was "no such file".
        ("a --scenario that is a folder", [files[0], "--scenario", tmp],
         [f"--scenario {tmp}: is a folder, not a file"]),
        ("topk without a density", [files[0], "--compressor", "topk", "--layers", layers],
         ["--density"]),
        ("a density for fp16", [files[0], "--compressor", "fp16", "--density", "0.01",
                                "--layers", layers], ["--density", "fp16"]),
        ("a matrix rank for topk", [files[0], "--compressor", "topk", "--density", "0.01",
                                    "--matrix-rank", "2", "--layers", layers],
         ["--matrix-rank", "topk"]),
        ("powersgd without shapes", [files[0], "--compressor", "powersgd", "--layers", layers],
         ["layers.json", "shape"]),
        ("a matrix rank beside a scenario (it was dropped without a word)",
         [files[0], "--matrix-rank", "2", "--scenario",
          os.path.join(ROOT, "workloads", "scenarios", "quickstart.json")],
         ["--matrix-rank", "--scenario"]),
        ("a shape that is not the layer's bytes",
         [files[0], "--layers", write("badshape.json", [{"name": "w", "bytes": 40,
                                                         "shape": [3, 3]}])],
         ["badshape.json", "layer 0", "9 elements"]),
        ("a density for dense (it was dropped without a word)",
         [files[0], "--density", "0.01", "--layers", layers], ["--density", "dense"]),
        ("a layer of true parameters (it was 1 parameter)",
         [files[0], "--layers", write("true.json", [{"name": "w", "parameters": True}])],
         ["true.json", "layer 0"]),
        ("layers that are not", [files[0], "--layers", write("l.json", [{"name": "w",
                                                                        "bytes": -4}])],
         ["l.json", "layer 0"]),
        ("a cluster of other size", [*files, "--nodes", "3", "--layers", layers], ["3 workers"]),
        ("a multi-GPU cluster of other size",
         [*files, "--cluster", os.path.join(ROOT, "platforms", "dgx-2x8-v100.json"), "--layers",
          layers], ["dgx-2x8-v100.json", "16 workers"]),
        ("--into a file that is not a measured run",
         [files[0], "--layers", layers, "--into", layers], ["layers.json"]),
        # Written through, these made a file gcsim validate refused.
        ("--into a measured run holding NaN",
         [files[0], "--layers", layers, "--into", write(
             "nan-into.json", '{"format": "gcsim-measured-run/1", "collectives": '
                              '[{"seconds": NaN}]}')], ["nan-into.json", "NaN"]),
        ("--into a measured run whose training holds a number",
         [files[0], "--layers", layers, "--into", write("number-into.json", {
             "format": "gcsim-measured-run/1", "training": [7]})],
         ["number-into.json", "/training/0"]),
        # A corrupt stream, deep nesting, bytes that are not UTF-8: one line,
        # never zlib's, the JSON decoder's or the codec's traceback.
        ("a corrupt gzip stream", [write("corrupt.json.gz", gzip.compress(
            json.dumps(kineto_rank(200, [])).encode())[:10] + b"not deflate" * 8), "--layers",
            layers], ["corrupt.json.gz", "gzip"]),
        ("a trace nested too deeply", [write("deep.json", "[" * 100000 + "]" * 100000),
                                       "--layers", layers], ["deep.json", "nested"]),
        ("--layers nested too deeply", [files[0], "--layers", write(
            "deep-layers.json", '{"layers": ' + "[" * 100000 + "]" * 100000 + "}")],
         ["deep-layers.json", "nested"]),
        ("a trace that is not UTF-8", [write("binary.json", b"\xff\xfe{}"), "--layers", layers],
         ["binary.json", "UTF-8"]),
        # A FIFO blocked the import for ever, and /dev/zero filled the memory.
        ("a trace that is a FIFO", [fifo, "--layers", layers], [f"{fifo}: not a regular file"]),
        # Figures gcsim validate would refuse: refused here, nothing written.
        ("--bandwidth garbage", [files[0], "--layers", layers, "--bandwidth", "garbage",
                                 "--latency", "5us"], ["--bandwidth", "garbage"]),
        ("--latency=-5s", [files[0], "--layers", layers, "--bandwidth", "1Gbps",
                           "--latency=-5s"], ["--latency", "-5s"]),
        ("--batch 10**21", [files[0], "--layers", layers, "--batch", str(10 ** 21)],
         ["--batch", str(10 ** 21)]),
        ("--ranks 99999999", [files[0], "--layers", layers, "--ranks", "99999999"],
         ["--ranks", "99999999"]),
        ("--nodes=-3", [files[0], "--layers", layers, "--nodes=-3"], ["--nodes", "-3"]),
        ("--warmup -1", [files[0], "--layers", layers, "--warmup=-1"], ["--warmup", "-1"]),
        ("an unknown option", [files[0], "--layers", layers, "--bogus"], ["--bogus"]),
        ("a --cluster without a topology",
         [files[0], "--layers", layers, "--cluster", write("no-topology.json", {
             "nodes": 1, "link": {"bandwidth": "1Gbps", "latency": "5us"}})],
         ["no-topology.json", "/topology"]),
        ("--into a measured run whose cluster has a bad bandwidth",
         [files[0], "--layers", layers, "--into", write("bad-into.json", {
             "format": "gcsim-measured-run/1", "cluster": {
                 "topology": "star", "nodes": 1, "link": {"bandwidth": "fast",
                                                          "latency": "5us"}}})],
         ["bad-into.json", "/cluster/link/bandwidth", "fast"]),
        ("a fat_tree cluster of other size", [files[0], "--layers", layers, "--cluster",
                                              os.path.join(ROOT, "platforms",
                                                           "fattree-96-1g.json")],
         ["fattree-96-1g.json", "96 workers"]),
    ]
    for what, args, needles in cases:
        if os.path.exists(out):
            os.remove(out)
        # --into takes its measured run's cluster, no cluster options.
        # So do the cases that give their own cluster options.
        if {"--into", "--cluster", "--bandwidth"} & set(args):
            result = run_import(*args, "--out", out)
        else:
            result = run_import(*args, *star)
        problems = refusal_problems(result, ["import_torch_profile.py: ", *needles],
                                    result_file=out)
        if "Traceback" in result.stderr:
            problems.append("a traceback")
        check(not problems, f"{what}: exit 2, one line{'; ' + '; '.join(problems) if problems else ''}")
    # An --out that cannot be written: scripts/atomic_write.py's one line, exit 1.
    blocked = os.path.join(layers, "run.json")
    result = run_import(files[0], "--layers", layers, "--bandwidth", "1Gbps", "--latency", "5us",
                        "--out", blocked)
    problems = refusal_problems(result, [f"import_torch_profile.py: cannot write {blocked}"],
                                status=1)
    check(not problems, f"an --out under a file: exit 1, one line{'; '.join(problems)}")
    # An --out naming an input wrote the measured run over it.
    for option, path in (("a trace", files[0]), ("--layers", layers)):
        before = open(path, "rb").read()
        result = run_import(files[0], "--layers", layers, "--bandwidth", "1Gbps", "--latency",
                            "5us", "--out", path)
        problems = refusal_problems(result, ["--out", "is also an input", path])
        check(not problems and open(path, "rb").read() == before,
              f"an --out that is {option}: exit 2, one line, the file kept"
              f"{'; ' + '; '.join(problems) if problems else ''}")


def bucket_shares():
    """Each bucket's share of backward: up to its data's readiness from the
    previous one's, the last bucket also taking what backward did after it
    (here 200 us of a 500 us backward; two ranks, one iteration each)."""
    messages = [("allreduce", 10, "float"), ("allreduce", 20, "float")]
    rank = [types.SimpleNamespace(allreduced=list(zip(messages, (100e-6, 300e-6))),
                                  times={"backward_s": 500e-6})]
    spans = import_torch_profile.bucket_backward_times([rank, rank], 0, messages)
    check(len(spans) == 2 and close(spans[0], 100e-6) and close(spans[1], 400e-6),
          f"bucket shares of a 500 us backward, data ready at 100 and 300 us: {spans}, "
          f"want 100 and 400 us")


def main():
    bucket_shares()
    data_ready()
    with tempfile.TemporaryDirectory() as tmp:
        real_run(tmp)
    for part in (kineto, gpu_clock, readings, into, refusals):
        with tempfile.TemporaryDirectory() as tmp:
            part(tmp)
    check.finish()


if __name__ == "__main__":
    main()
