#!/usr/bin/python3
"""The mini-cluster's commands refuse a bad command line before anything
starts, and a refused run leaves nothing behind:

- run.py's --out: an existing folder, '', a path ending in '/', a device,
  are exit 2 with one line naming --out; a good --out is checked without
  touching the user's files (an OUT.partial of theirs stays as it was) and
  without making its missing folders (made only when the run is written);
  an option that is not a number is one line too.
- scheduling_check.py: collectives' --nodes, --rate, --gap (netns.Cluster's
  limits) and compute's --ranks are exit 2 with one line naming the
  subcommand and the option, before its probe namespace or any process.
- worker.py (internal, started by run.py): a bad command line is one usage
  line and exit 2, not a traceback.

Before, --out of a folder or '' passed the check and failed after the
measuring, the check truncated and deleted OUT.partial and made the
missing folders; scheduling_check.py raised ValueError or StatisticsError
tracebacks (collectives after making a probe namespace); worker.py --help
raised IndexError.

Never makes a namespace, even as root: every command runs with a PATH
without `ip`, so that a check that came too late fails (exit 1) instead
of building a cluster.

Usage: minicluster_args_test.py
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPTS = os.path.join(ROOT, "scripts", "minicluster")

sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from checks import Checks, refusal_problems  # noqa: E402

check = Checks()


def namespaces():
    # iproute2 is one of setup.sh's packages: without `ip` this fails rather
    # than comparing two empty lists.
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                          check=True).stdout


def script(name, args):
    """The finished command; one that outlives 120 s is killed and reads as
    exit status None (a failed check, not a crash of this test)."""
    with tempfile.TemporaryDirectory() as no_ip:  # PATH without `ip`: no namespace can be made
        try:
            return subprocess.run(["/usr/bin/python3", os.path.join(SCRIPTS, name), *args],
                                  capture_output=True, text=True, timeout=120,
                                  env=dict(os.environ, PATH=no_ip))
        except subprocess.TimeoutExpired as late:
            return subprocess.CompletedProcess(late.cmd, None, "", "still running after 120 s")


def refused(name, args, needles, status=2, result_file=None):
    done = script(name, args)
    problems = refusal_problems(done, needles, status, result_file)
    if "Traceback" in done.stderr:
        problems.append("a traceback")
    check(not problems, f"{name} {' '.join(map(repr, args))}: exit {status}, one line naming "
                        f"{needles} ({'; '.join(problems) or 'ok'})")
    return done


before = namespaces()

with tempfile.TemporaryDirectory() as tmp:
    folder = os.path.join(tmp, "results")
    os.mkdir(folder)
    out = os.path.join(folder, "run.json")
    # The user's own file beside the output, with the name the old check wrote.
    partial = out + ".partial"
    with open(partial, "w") as f:
        f.write("the user's notes\n")
    cases = [(folder, "is a folder"), ("", "empty"), (folder + "/", "names a folder"),
             (os.path.join(folder, ".."), "names a folder"), ("/dev/null", "not a regular file"),
             (os.path.join(partial, "run.json"), "is not a folder")]
    for value, why in cases:
        refused("run.py", ["--out", value], ["run.py: --out:", why])
    refused("run.py", ["--sizes", "", "--train", "", "--out", out], ["run.py: --sizes:"],
            result_file=out)
    # Past Fashion-MNIST's 60,000 training images a rank's batch is empty
    # (its gradient zero, in training and in the float16 benchmark).
    refused("run.py", ["--nodes", "16", "--batch", "4096", "--train", "", "--out", out],
            ["run.py: --batch: 4096 samples on each of 16 nodes need 65536 Fashion-MNIST images"],
            result_file=out)
    refused("run.py", ["--nodes", "8", "--batch", "256", "--iterations", "40", "--out", out],
            ["run.py: --batch: 256 samples on each of 8 nodes for 40 iterations need 81920"],
            result_file=out)
    # argparse's own refusals (not a number) are one line too, not its usage.
    refused("run.py", ["--nodes", "four", "--out", out], ["run.py: argument --nodes: ", "'four'"],
            result_file=out)
    # A good --out passes its check, and the run is refused after it (no
    # root, or no `ip` here): exit 1, one line; the user's OUT.partial as it
    # was, no file written, no missing folder made.
    later = os.path.join(tmp, "new", "sub", "run.json")
    for path in (out, later):
        done = script("run.py", ["--out", path])
        problems = refusal_problems(done, ["run.py:"], 1, path)
        check(not problems and "--out" not in done.stderr,
              f"run.py --out {os.path.relpath(path, tmp)}: passes the check, refused later with "
              f"exit 1 ({'; '.join(problems) or done.stderr.strip()})")
    kept = None
    if os.path.isfile(partial):
        with open(partial) as f:
            kept = f.read()
    check(kept == "the user's notes\n", f"the user's {os.path.basename(partial)} untouched ({kept!r})")
    check(sorted(os.listdir(tmp)) == ["results"] and sorted(os.listdir(folder)) == ["run.json.partial"],
          f"nothing left behind: {sorted(os.listdir(tmp))}, results/ {sorted(os.listdir(folder))}")

# scheduling_check.py: each subcommand's values before anything starts, one
# line naming the subcommand and the option.
for args, option in [(["collectives", "--nodes", "1"], "--nodes"),
                     (["collectives", "--nodes", "99"], "--nodes"),
                     (["collectives", "--rate", "0"], "--rate"),
                     (["collectives", "--rate", "2000"], "--rate"),
                     (["collectives", "--gap", "nan"], "--gap"),
                     (["compute", "--ranks", "a,b"], "--ranks"),
                     (["compute", "--ranks", "0"], "--ranks"),
                     (["compute", "--ranks=-2"], "--ranks"),
                     (["compute", "--ranks", "2,,4"], "--ranks"),
                     (["flows", "--rate", "0"], "--rate"),
                     (["float16", "--nodes", "1"], "--nodes"),
                     (["float16", "--rate", "2000"], "--rate"),
                     (["float16", "--python", "/nonexistent"], "--python")]:
    refused("scheduling_check.py", args, [f"scheduling_check.py: {args[0]}: {option}: "])
refused("scheduling_check.py", ["_rank", "0"], ["scheduling_check.py: usage (internal)"])
refused("scheduling_check.py", ["_float16_rank", "x", "4", "10.77.0.1", "out.json", "cnn"],
        ["scheduling_check.py: usage (internal)"])
refused("scheduling_check.py", ["_float16_rank", "0", "4", "10.77.0.1", "out.json", "resnet"],
        ["scheduling_check.py: usage (internal)"])
refused("scheduling_check.py", ["float16", "--model", "resnet"], ["--model: 'resnet'"])

# worker.py: internal, but never a traceback. (Only command lines that no
# version of it could start a rank's connection with.)
for args in (["--help"], [], ["bench", "0"], ["bench", "0", "two", "10.77.0.1", "o.json", "4K", "3"]):
    refused("worker.py", args, ["worker.py: usage"])
# The rest of its checks without starting it (a rank that got past them would connect).
sys.path.insert(0, SCRIPTS)
import run  # noqa: E402
import worker  # noqa: E402
# run.py does not import worker.py (torch): their lists of what is trained must agree.
check(worker.TRAINED_COMPRESSORS == run.TRAINING_RUNS and worker.TRAINED_MODELS == tuple(run.MODELS),
      f"worker.py trains {worker.TRAINED_COMPRESSORS} {worker.TRAINED_MODELS}, run.py asks for "
      f"{run.TRAINING_RUNS} {tuple(run.MODELS)}")
start = ["worker.py", "train", "0", "2", "10.77.0.1", "o.json", "dense", "10", "32", "0.01", "1", "cnn"]
for argv, good in [(start, True), (start + ["barrier"], True), (start + ["extra"], False),
                   (start[:2] + ["2"] + start[3:], False), (start[:-1] + ["x"], False),
                   (start[:-2] + ["x", "cnn"], False), (start[:-1] + ["wide-cnn"], True),
                   (["worker.py", "bench", "1", "2", "m", "o.json", "4096,65536", "3", "cnn", "32"],
                    True),
                   (["worker.py", "bench", "1", "2", "m", "o.json", "4096", "3", "wide-cnn", "8"],
                    True),
                   (["worker.py", "bench", "1", "2", "m", "o.json", "4096,65536", "3"], False),
                   (["worker.py", "bench", "1", "2", "m", "o.json", "4K", "3", "cnn", "32"], False),
                   (["worker.py", "bench", "1", "2", "m", "o.json", "4096", "3", "resnet", "32"],
                    False),
                   (["worker.py", "bench", "1", "2", "m", "o.json", "4096", "3", "cnn", "x"],
                    False),
                   (["worker.py", "bench", "1", "2", "m", "o.json", "4096", "3", "cnn", "32", "4"],
                    False),
                   # Values run.py never passes: no repetition, no batch, no size.
                   (["worker.py", "bench", "1", "2", "m", "o.json", "4096", "0", "cnn", "32"], False),
                   (["worker.py", "bench", "1", "2", "m", "o.json", "4096", "3", "cnn", "-1"], False),
                   (["worker.py", "bench", "1", "2", "m", "o.json", "0,4096", "3", "cnn", "32"], False),
                   (start[:6] + ["sketch"] + start[7:], False), (start[:7] + ["0"] + start[8:], False),
                   (start[:8] + ["-32"] + start[9:], False), (start[:9] + ["1.5"] + start[10:], False),
                   (start[:9] + ["nan"] + start[10:], False), (start[:10] + ["0"] + start[11:], False),
                   (start[:6] + ["powersgd"] + start[7:], True)]:
    parsed = worker.parse_command(argv)
    check((parsed is not None) == good,
          f"worker.py {' '.join(argv[1:])}: {'taken' if good else 'refused'} ({parsed})")

after = namespaces()
check(after == before, f"no namespace made or left ({before!r} before, {after!r} after)")
check.finish()
