#!/usr/bin/python3
"""--spill and --scratch-dir: DGC's and Sketched-SGD's local momenta kept in
a scratch file give byte-identical result.json and schedule.json to the
in-memory run (per bucket and on the whole model, on the shipped real trace,
with momentum masking at work over several iterations); the file leaves
nothing behind; a directory that cannot hold it is bad input (exit 2, one
line naming --scratch-dir), one without room for it exit 1 naming the
folder and what helps; out of memory is exit 1 and one line, and --spill
never with state past the memory and swap says so before it allocates.

Usage: spill_test.py PATH/TO/gcsim
"""
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TRACE = os.path.join(ROOT, "workloads", "traces", "fmnist-cnn-16w")
NOTE = "scratch files in"

check = Checks()


def scenario(work, compressor, scope, file_name="scenario.json"):
    document = {
        "name": "spill-test",
        "platform": {"name": "star", "topology": "star", "nodes": 4,
                     "link": {"bandwidth": "10Gbps", "latency": "10us"}},
        "workload": TRACE,
        "device": os.path.join(ROOT, "platforms", "devices", "v100.json"),
        # Small buckets: DGC runs one compressor (and one momentum file) per bucket.
        "training": {"iterations": 4, "batch_per_worker": 64, "bucket_size": "100kB",
                     "compression_scope": scope},
        "compressor": compressor,
        "seed": 3,
    }
    path = os.path.join(work, file_name)
    with open(path, "w") as handle:
        json.dump(document, handle)
    return path


def run(path, out, *args):
    return subprocess.run([GCSIM, "run", path, "--out", out, *args],
                          capture_output=True, text=True, timeout=600)


def memory_and_swap():
    """The machine's memory and swap, in bytes, as gcsim's --spill never counts them."""
    with open("/proc/meminfo") as meminfo:
        kib = {line.split(":")[0]: int(line.split()[1]) for line in meminfo}
    return (kib["MemTotal"] + kib.get("SwapTotal", 0)) * 1024


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


with tempfile.TemporaryDirectory() as work:
    scratch = os.path.join(work, "scratch")
    os.mkdir(scratch)
    # dgc and sketched_sgd keep momenta and residuals; iwp and gtopk
    # residuals only (iwp reads a leader's, gtopk merges in a tree).
    cases = [({"name": "dgc", "density": 0.01}, "bucket"),
             ({"name": "dgc", "density": 0.01}, "model"),
             ({"name": "sketched_sgd", "density": 0.01}, "model"),
             ({"name": "iwp", "density": 0.01, "warmup_iterations": 1}, "model"),
             ({"name": "gtopk", "density": 0.01}, "model")]
    for compressor, scope in cases:
        label = f"{compressor['name']} ({scope})"
        path = scenario(work, compressor, scope)
        outs = {}
        for mode in ("never", "always"):
            out = os.path.join(work, mode)
            result = run(path, out, "--spill", mode, "--scratch-dir", scratch)
            if not check(result.returncode == 0, f"{label}: --spill {mode} runs"):
                print(result.stderr)
                continue
            outs[mode] = out
            check((NOTE in result.stdout) == (mode == "always"),
                  f"{label}: the summary names the scratch files only when used ({mode})")
            if mode == "always" and compressor["name"] in ("dgc", "sketched_sgd"):
                check("local momenta, residuals" in result.stdout,
                      f"{label}: --spill always spills momenta and residuals")
        if len(outs) == 2:
            for name in ("result.json", "schedule.json"):
                check(read(os.path.join(outs["never"], name)) ==
                      read(os.path.join(outs["always"], name)),
                      f"{label}: {name} is byte-identical with the momenta in a scratch file")
            parts = json.loads(read(os.path.join(outs["always"], "result.json")))
            check(parts["model"]["compression_parts"] > 1 if scope == "bucket" else True,
                  f"{label}: the run has the compression parts it should")
        check(os.listdir(scratch) == [], f"{label}: nothing is left in the scratch directory")

    # A small run in "auto" (the default) keeps its momenta in memory.
    path = scenario(work, {"name": "dgc", "density": 0.01}, "model")
    result = run(path, os.path.join(work, "auto"), "--scratch-dir", scratch)
    check(result.returncode == 0 and NOTE not in result.stdout,
          "auto: a small run keeps its momenta in memory")

    # Bad scratch directories: exit 2, one line that names the flag and the directory.
    a_file = os.path.join(work, "a-file")
    with open(a_file, "w") as handle:
        handle.write("x")
    for bad in (os.path.join(work, "missing", "dir"), a_file):
        out = os.path.join(work, "bad")
        result = run(path, out, "--spill", "always", "--scratch-dir", bad)
        lines = result.stderr.strip().splitlines()
        check(result.returncode == 2 and len(lines) == 1
              and lines[0].startswith("--scratch-dir: " + bad + ": cannot create a scratch file"),
              f"--scratch-dir {bad}: exit 2 with one line naming it (got {result.returncode}: "
              f"{result.stderr.strip()!r})")
        check(not os.path.exists(os.path.join(out, "result.json")),
              f"--scratch-dir {bad}: no result.json written")
    # The default, from $TMPDIR, was said to be --scratch-dir's fault.
    result = subprocess.run([GCSIM, "run", path, "--out", os.path.join(work, "bad"), "--spill",
                             "always"], capture_output=True, text=True, timeout=600,
                            env=dict(os.environ, TMPDIR=a_file))
    check(result.returncode == 2 and result.stderr.startswith(
              f"the default --scratch-dir ($TMPDIR or /tmp): {a_file}: cannot create a scratch "
              f"file"),
          f"a bad $TMPDIR: exit 2 naming it (got {result.returncode}: {result.stderr.strip()!r})")
    result = run(path, os.path.join(work, "bad"), "--spill", "always", "--scratch-dir", "")
    check(result.returncode == 2 and result.stderr.startswith("--scratch-dir: empty"),
          f"--scratch-dir '': exit 2 naming it (got {result.returncode}: {result.stderr.strip()!r})")
    result = run(path, os.path.join(work, "bad"), "--spill", "sometimes")
    check(result.returncode == 2 and "--spill" in result.stderr,
          f"--spill sometimes: exit 2 naming --spill (got {result.returncode})")
    for share in ("0", "1.5", "half"):
        result = run(path, os.path.join(work, "bad"), "--memory-share", share)
        check(result.returncode == 2 and "--memory-share" in result.stderr,
              f"--memory-share {share}: exit 2 naming --memory-share (got {result.returncode})")
    # A directory named is checked even where nothing would spill (as gcsim
    # sweep does): a typo should not wait for the run that needs it.
    missing = os.path.join(work, "missing")
    dense = scenario(work, {"name": "dense"}, "model", "dense.json")
    for label, args in (("--spill never", (path, "--spill", "never")),
                        ("a dense run", (dense,))):
        out = os.path.join(work, "unspilled")
        result = run(args[0], out, *args[1:], "--scratch-dir", missing)
        check(result.returncode == 2 and result.stderr.startswith("--scratch-dir: " + missing),
              f"{label}: a missing --scratch-dir is refused though nothing spills "
              f"(got {result.returncode}: {result.stderr.strip()!r})")
        check(not os.path.exists(os.path.join(out, "result.json")),
              f"{label}: no result.json written")
    result = run(path, os.path.join(work, "never"), "--spill", "never")
    check(result.returncode == 0 and NOTE not in result.stdout,
          "--spill never: the momenta stay in memory")

    # gcsim sweep passes --spill and --scratch-dir to every point, and into the
    # command printed to rerun it; the points' results are the unspilled ones.
    sweep_file = os.path.join(work, "spill.sweep.json")
    with open(sweep_file, "w") as handle:
        json.dump({"name": "spill-sweep", "scenario": scenario(work, {"name": "dgc", "density": 0.01},
                                                                "model"),
                   "grid": {"platform.nodes": [2, 4]}}, handle)
    outs = {}
    for mode in ("never", "always"):
        out = os.path.join(work, "sweep-" + mode)
        result = subprocess.run([GCSIM, "sweep", sweep_file, "--out", out, "--jobs", "2",
                                 "--spill", mode, "--scratch-dir", scratch],
                                capture_output=True, text=True, timeout=600)
        if not check(result.returncode == 0, f"sweep --spill {mode} runs ({result.stderr.strip()[-200:]})"):
            continue
        outs[mode] = out
        points = sorted(os.listdir(os.path.join(out, "points")))
        commands = [read(os.path.join(out, "points", p, "command.txt")).decode() for p in points]
        check(len(commands) == 2 and all(f"--spill {mode} --scratch-dir {scratch}" in c
                                         for c in commands),
              f"sweep --spill {mode}: every point's command carries the flags")
        # Two points at once share the memory "auto" judges by; a point's
        # command, run alone, has all of it.
        headers = [read(os.path.join(out, "points", p, "log.txt")).decode().splitlines()[0]
                   for p in points]
        check("each runs with --memory-share 0.5" in result.stdout
              and all(h.startswith("# run as: ") and h.endswith("--memory-share 0.5")
                      for h in headers)
              and not any("--memory-share" in c for c in commands),
              f"sweep --jobs 2 --spill {mode}: points run with --memory-share 0.5 (their logs' "
              f"first line), their commands without it")
    if len(outs) == 2:
        for p in sorted(os.listdir(os.path.join(outs["never"], "points"))):
            check(read(os.path.join(outs["never"], "points", p, "result.json")) ==
                  read(os.path.join(outs["always"], "points", p, "result.json")),
                  f"sweep point {p}: the same result.json spilled or not")
    plain = subprocess.run([GCSIM, "sweep", sweep_file, "--out", os.path.join(work, "sweep-plain"),
                            "--dry-run"], capture_output=True, text=True, timeout=60)
    check(plain.returncode == 0 and "--spill" not in plain.stdout,
          "sweep without the flags leaves the points' commands as they were")
    bad = subprocess.run([GCSIM, "sweep", sweep_file, "--dry-run", "--spill", "sometimes"],
                         capture_output=True, text=True, timeout=60)
    check(bad.returncode == 2 and "--spill" in bad.stderr,
          f"sweep --spill sometimes: exit 2 naming --spill (got {bad.returncode})")

    # Out of memory (here under a 1 GB address-space limit, 48 workers' top-k
    # residuals, 2.1 GB, held in memory): one line that says so and what
    # helps, exit 1 (the machine's fault, not the input's), no result. It was
    # "internal error: std::bad_alloc". (Few enough workers that no machine
    # refuses them up front, as below.)
    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    # An AddressSanitizer build (GCSIM_SANITIZE) reserves terabytes of
    # shadow memory at start, which no address-space limit leaves room for.
    linked = subprocess.run(["ldd", GCSIM], capture_output=True, text=True).stdout
    if "libasan" in linked:
        print("skipped: a run out of memory (an AddressSanitizer build cannot start under "
              "an address-space limit)")
    else:
        # Where 48 workers' residuals pass this machine's memory and swap (or
        # its cgroup's limit), gcsim refuses them up front instead (below).
        limits = [memory_and_swap()]
        for limit_file in ("/sys/fs/cgroup/memory.max",
                           "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
            if os.path.exists(limit_file):
                text = open(limit_file).read().strip()
                limits += [int(text)] if text.isdigit() else []
        expected = ("gcsim: out of memory: this run needs more than the process may take"
                    if 48 * 11173962 * 4 <= min(limits) else
                    "gcsim: out of memory: --spill never keeps 2.1 GB")
        out = os.path.join(work, "oom")
        starved = subprocess.run([GCSIM, "run", os.path.join(ROOT, "workloads", "scenarios",
                                                             "topk-resnet18-8x10g.json"),
                                  "--out", out, "--quiet", "--set", "platform.nodes=48",
                                  "--spill", "never"], capture_output=True, text=True,
                                 timeout=120, preexec_fn=limited)
        lines = starved.stderr.strip().splitlines()
        check(starved.returncode == 1 and len(lines) == 1
              and lines[0].startswith(expected) and "--spill always" in lines[0]
              and not os.path.exists(os.path.join(out, "result.json")),
              f"a run out of memory: exit {starved.returncode}: {starved.stderr.strip()}")

    # --spill never, and residuals past the machine's memory and swap: Linux
    # overcommits, so nothing failed until the kernel killed gcsim (exit 137,
    # not a word). Refused before anything is allocated, saying how much
    # against what. (A 4 GB address-space limit guards this machine should
    # the check ever go: then it reads as the plain out-of-memory line.)
    room = memory_and_swap()
    resnet18 = 11173962 * 4  # top-k's residual per worker, in bytes
    workers = room // resnet18 + 100
    if workers > 65536:
        print(f"skipped: --spill never past memory ({room / 1e9:.0f} GB here is more than "
              f"65536 workers' residuals)")
    else:
        def guarded():
            resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        out = os.path.join(work, "never-past-memory")
        refused = subprocess.run([GCSIM, "run", os.path.join(ROOT, "workloads", "scenarios",
                                                             "topk-resnet18-8x10g.json"),
                                  "--out", out, "--quiet", "--set", f"platform.nodes={workers}",
                                  "--set", "training.iterations=1", "--spill", "never"],
                                 capture_output=True, text=True, timeout=120,
                                 preexec_fn=None if "libasan" in linked else guarded)
        lines = refused.stderr.strip().splitlines()
        expected = f"gcsim: out of memory: --spill never keeps {workers * resnet18 / 1e9:.1f} GB"
        check(refused.returncode == 1 and len(lines) == 1 and lines[0].startswith(expected)
              and "GB of per-worker state in memory, more than " in lines[0]
              and "--spill always" in lines[0]
              and not os.path.exists(out),
              f"--spill never past memory and swap: exit {refused.returncode}, "
              f"{refused.stderr.strip()!r} (expected {expected!r}...)")

    # A scratch folder without room (here a 64 kB file-size limit, SIGXFSZ
    # ignored so that the reservation fails with EFBIG): one line naming the
    # folder and what helps, exit 1. It was "gcsim: internal error: ...".
    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    scratch = os.path.join(work, "small-scratch")
    os.makedirs(scratch)
    out = os.path.join(work, "no-room")
    full = subprocess.run([GCSIM, "run", scenario(work, {"name": "topk", "density": 0.01},
                                                  "model"),
                           "--out", out, "--quiet", "--spill", "always", "--scratch-dir", scratch],
                          capture_output=True, text=True, timeout=120, preexec_fn=small_files)
    lines = full.stderr.strip().splitlines()
    check(full.returncode == 1 and len(lines) == 1
          and lines[0].startswith(f"gcsim: {scratch}: cannot reserve ")
          and "--scratch-dir" in lines[0] and "internal error" not in lines[0]
          and not os.path.exists(os.path.join(out, "result.json"))
          and os.listdir(scratch) == [],
          f"a scratch folder without room: exit {full.returncode}, {full.stderr.strip()!r}")

check.finish()
