#!/usr/bin/python3
"""scripts/script_input.py reads unit strings as gcsim does: for each of a list
of link bandwidths and latencies (valid, at the edges of gcsim's ranges, and
malformed), its bandwidth_ok/latency_ok verdict must be gcsim's own, found by
running a one-iteration, two-node star scenario with that link. gcsim refuses a
value by exit 2 and one line naming /platform/link/bandwidth (or latency); any
other outcome is acceptance; where gcsim refuses, the hint it adds to that
line ("did you mean ...") must be spelling_hint's. Also: a few values in base units, the size and
FLOP-rate tables, open_input (a FIFO, a device, a folder refused in one
line, as gcsim does), the one-line Parser and its --help under python3
-OO, and run_script (how every script
ends).

Usage: script_input_test.py PATH/TO/gcsim
"""
import argparse
import contextlib
import fcntl
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from checks import Checks  # noqa: E402
import script_input  # noqa: E402

GCSIM = os.path.abspath(sys.argv[1])
QUICKSTART = os.path.join(ROOT, "workloads", "scenarios", "quickstart.json")
LINK = {"bandwidth": "10Gbps", "latency": "5us"}

BANDWIDTHS = ["10Gbps", "1.5 GiBps", " 100 Mbps ", "1 KiBps", "1kbps", "125Bps", "0.999kbps",
              "999bps", "1000Tbps", "1000.0001Tbps", "125TBps", "1e3bps", "1.e9bps", ".5TiBps",
              "-1Gbps", "+1Gbps", "1e300Tbps", "inf Gbps", "nan Gbps", "0Gbps", "10gbps",
              "10 Gb/s", "10Gbps\t", "1_0Gbps", "0x10Gbps", "10", "Gbps", "", "1e+Gbps",
              "1e9e3bps", "1..5Gbps", 10, "10Gb", "10Gb/s", "10Gbits", "10G", "10Gbs",
              "10Gb/sec", "2000Tb", "10Gib", "100mbit", "1e3 Kb", "10 GB/s", "10gb", "1KiB",
              "100MBPS", "0.5kb"]
LATENCIES = ["5us", "0s", "0", " 5 us ", "1ps", "0.5ps", "1e9s", "1.0000001e9s", "2min", "2m",
             "1h", "16666667min", "1e-310s", "1e-400s", "nan s", "3", "-1us", "+1us", "5US",
             "5 u s", ".5ms", ".ms", "1e+3ms", "1e-3", "1E-3s", "inf s", "1e400s", 0, "5Us",
             "2MIN", "1H", "2E9S", "5 MS", "5µs", "5μs", "5usec", "5 USECS", "2secs", "3 hours",
             "10mins", "1e9hours", "5µ", "5 fortnights", "1.5Msec"]


def scenario(workdir, link):
    with open(QUICKSTART) as handle:
        document = json.load(handle)
    document["platform"] = {"name": "tiny", "topology": "star", "nodes": 2, "link": link}
    for key in ("workload", "device"):
        document[key] = os.path.join(ROOT, document[key])
    document["training"]["iterations"] = 1
    path = os.path.join(workdir, "scenario.json")
    with open(path, "w") as handle:
        json.dump(document, handle)
    return path


def gcsim_accepts(workdir, field, value):
    """Whether gcsim takes `value` as the link's `field` (None if it
    crashed), and the line it refused it with."""
    path = scenario(workdir, dict(LINK, **{field: value}))
    done = subprocess.run([GCSIM, "run", path, "--set", "training.iterations=1", "--quiet",
                           "--out", os.path.join(workdir, "out")],
                          capture_output=True, text=True, timeout=60)
    if done.returncode not in (0, 2):
        return None, ""
    named = f"/platform/link/{field}:" in done.stderr
    return not (done.returncode == 2 and named), done.stderr.strip()


check = Checks()
with tempfile.TemporaryDirectory() as workdir:
    for field, values, ok in (("bandwidth", BANDWIDTHS, script_input.bandwidth_ok),
                              ("latency", LATENCIES, script_input.latency_ok)):
        hinted = 0
        for value in values:
            verdict, refusal = gcsim_accepts(workdir, field, value)
            mine = ok(value)
            check(verdict is not None and verdict == mine,
                  f"{field} {value!r}: gcsim {'crashed' if verdict is None else verdict}, "
                  f"script_input {mine}")
            if verdict is False:
                hint = script_input.spelling_hint(value, field)
                hinted += bool(hint)
                check(refusal.endswith(hint) if hint else not refusal.endswith('?)'),
                      f"{field} {value!r}: spelling_hint {hint!r} is gcsim's: {refusal}")
        check(hinted >= (12 if field == "bandwidth" else 10),
              f"{field}: {hinted} of the refused spellings get a hint")

# Values in base units.
for parse, text, expected in ((script_input.parse_bandwidth, "10Gbps", 1.25e9),
                              (script_input.parse_bandwidth, "1.5 GiBps", 1.5 * 2 ** 30),
                              (script_input.parse_bandwidth, "1kbps", 125.0),
                              (script_input.parse_duration, "2min", 120.0),
                              (script_input.parse_duration, "5 us", 5 * 1e-6),
                              (script_input.parse_duration, "1e-310s", 1e-310),
                              (script_input.checked_duration, "1e-310s", None),
                              (script_input.parse_size, "25MiB", 25 * 2 ** 20),
                              (script_input.checked_size, "8192TiB", 2.0 ** 53),
                              (script_input.checked_size, "8193TiB", None),
                              (script_input.parse_flop_rate, "10GFlops", 1e10),
                              (script_input.parse_flop_rate, "50.5Tflops", 50.5e12),
                              (script_input.parse_flop_rate, "5Mflops", None),
                              (script_input.checked_flop_rate, "0Tflops", None)):
    got = parse(text)
    check(got == expected, f"{parse.__name__}({text!r}) = {got!r}, expected {expected!r}")

# The unit tables are units.cpp's, unit for unit and factor for factor: the
# gcsim runs above see only accept or refuse, under which "Mbps" as 1e6
# bytes/s or "m" as a millisecond passed.
with open(os.path.join(ROOT, "sim", "input", "units.cpp")) as handle:
    units_cpp = handle.read()
for table, mine in (("kBandwidthUnits", script_input.BANDWIDTH_UNITS),
                    ("kDurationUnits", script_input.DURATION_UNITS),
                    ("kSizeUnits", script_input.SIZE_UNITS),
                    ("kFlopUnits", script_input.FLOP_RATE_UNITS)):
    body = units_cpp.split(f"{table}{{{{", 1)[1].split("}};", 1)[0]
    theirs = {}
    for unit, factor in re.findall(r'\{"([^"]+)",\s*([0-9.e+\-/ *]+)\}', body):
        numbers = [float(part) for part in factor.split("/")]
        theirs[unit] = numbers[0] / numbers[1] if len(numbers) == 2 else numbers[0]
    check(theirs and theirs == mine,
          f"{table}: script_input's table is units.cpp's "
          f"({sorted(set(theirs.items()) ^ set(mine.items()))[:6] or len(theirs)})")

# integer_in, bench_simulation.py's --repeat: both ends are in, no further.
repeat = script_input.integer_in(1, 1000)
verdicts = []
for text in ("1", "1000", "0", "1001", "2.5", "x"):
    try:
        verdicts.append(repeat(text))
    except argparse.ArgumentTypeError:
        verdicts.append(None)
check(verdicts == [1, 1000, None, None, None, None], f"integer_in(1, 1000): {verdicts}")

# A key twice in one object: gcsim refuses the file at that key, and the
# scripts' reader kept the last value without a word.
with tempfile.TemporaryDirectory() as workdir:
    twice = os.path.join(workdir, "twice.json")
    with open(twice, "w") as handle:
        handle.write('{"platform": {"name": "tiny", "topology": "star", "nodes": 2, "link": '
                     '{"bandwidth": "10Gbps", "latency": "5us", "latency": "6us"}}, '
                     '"list": [{"a/b": 1, "a/b": 2}]}')
    done = subprocess.run([GCSIM, "run", QUICKSTART, "--set", f"platform={twice}", "--quiet",
                           "--out", os.path.join(workdir, "out")],
                          capture_output=True, text=True, timeout=60)
    check(done.returncode == 2 and "/link/latency" in done.stderr and "twice" in done.stderr,
          f"gcsim refuses a key twice: {done.stderr.strip()!r}")
    try:
        script_input.read_json_object(twice)
        message = None
    except script_input.BadInput as error:
        message = str(error)
    check(message == f"{twice}: /platform/link/latency: this key appears twice in one object: "
          "keep one of them", f"read_json_object refuses it at the same key: {message!r}")
    with open(twice, "w") as handle:
        handle.write('{"list": [1, {"a/b": 1, "a~b": 2, "a/b": 3}], "x": {"y": 1}}')
    try:
        script_input.read_json_object(twice)
        message = None
    except script_input.BadInput as error:
        message = str(error)
    check(message is not None and message.startswith(f"{twice}: /list/1/a~1b: "),
          f"inside a list, a key's / escaped as in a JSON pointer: {message!r}")
    check(script_input.read_json_object(QUICKSTART) == json.load(open(QUICKSTART)),
          "a file without a key twice reads as json does")
    # NaN and Infinity are Python's json, not JSON: gcsim refuses them, and
    # the plots refused them only where a field was range-checked after.
    said = []
    for constant in ("NaN", "Infinity", "-Infinity"):
        with open(twice, "w") as handle:
            handle.write('{"name": "x", "seconds": %s}' % constant)
        try:
            script_input.read_json_object(twice)
            said.append(None)
        except script_input.BadInput as error:
            said.append(str(error))
    check(all(s and s.startswith(f"{twice}: not JSON: ") and c in s
              for s, c in zip(said, ("NaN", "Infinity", "-Infinity"))),
          f"read_json_object refuses NaN and infinities as not JSON: {said}")
    # An integer past any float: the plots' float() of it was a traceback.
    with open(twice, "w") as handle:
        handle.write('{"parameters": 1%s, "small": 12345678901234567890}' % ("0" * 400))
    try:
        script_input.read_json_object(twice)
        said = None
    except script_input.BadInput as error:
        said = str(error)
    check(said is not None and said.startswith(f"{twice}: not JSON: the integer 100000000000")
          and "(401 digits) is too large" in said,
          f"read_json_object refuses an integer too large for a float: {said!r}")

# open_input, every script's reader of an input file: a FIFO blocked the
# read for ever and /dev/zero never ended it; gcsim refuses both in the
# same words. A regular file reads as open() reads it, blocking again.
with tempfile.TemporaryDirectory() as workdir:
    fifo = os.path.join(workdir, "fifo.json")
    os.mkfifo(fifo)
    plain = os.path.join(workdir, "plain.json")
    with open(plain, "w") as handle:
        handle.write('{"a": "\u00e9"}')
    missing = os.path.join(workdir, "missing.json")
    wanted = {fifo: f"{fifo}: not a regular file", "/dev/zero": "/dev/zero: not a regular file",
              workdir: f"{workdir}: is a folder, not a file", missing: f"{missing}: no such file"}
    said = {}
    for path in wanted:
        for reader in (script_input.open_input, script_input.read_json_object):
            try:
                opened = reader(path)
                if reader is script_input.open_input:
                    opened.close()
                said[path, reader.__name__] = None
            except script_input.BadInput as error:
                said[path, reader.__name__] = str(error)
    check(all(said[path, name] == wanted[path] for path, name in said),
          f"open_input and read_json_object refuse a FIFO, a device, a folder, a missing file "
          f"in one line: {said}")
    done = subprocess.run([GCSIM, "run", fifo, "--quiet", "--out", os.path.join(workdir, "o")],
                          capture_output=True, text=True, timeout=60)
    check(done.returncode == 2 and done.stderr.strip() == wanted[fifo],
          f"gcsim refuses the FIFO in the same words: {done.stderr.strip()!r}")
    with script_input.open_input(plain) as text, script_input.open_input(plain, "rb") as raw:
        blocking = not fcntl.fcntl(text.fileno(), fcntl.F_GETFL) & os.O_NONBLOCK
        check(text.read() == '{"a": "\u00e9"}' and raw.read() == '{"a": "\u00e9"}'.encode()
              and blocking, "open_input reads a regular file as UTF-8 text or bytes, blocking")

# The Parser: one line, exit 2, the subcommand named.
parser = script_input.Parser(prog="tool.py")
parser.add_subparsers(dest="command").add_parser("sub").add_argument("--n", type=int)
for argv, line in ((["--bad"], "tool.py: unrecognized arguments: --bad\n"),
                   (["sub", "--n", "x"], "tool.py: sub: argument --n: invalid int value: 'x'\n"),
                   # argparse took -10 for an option: "expected one argument".
                   (["sub", "--n", "-10x"], "tool.py: sub: argument --n: invalid int value: "
                                            "'-10x'\n")):
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        try:
            parser.parse_args(argv)
            status = 0
        except SystemExit as exit_:
            status = exit_.code
    check(status == 2 and stderr.getvalue() == line,
          f"Parser on {argv}: exit {status}, {stderr.getvalue()!r}")

# summary_of: a script's --help under `python3 -OO` (docstrings stripped),
# where `__doc__.split(...)` was an AttributeError; with docstrings, the first
# paragraph of the module's.
for name in ("bench_simulation.py", "plot.py", "plot_profile.py",
             os.path.join("minicluster", "repeatability.py")):
    script = os.path.join(ROOT, "scripts", name)
    for flags in ([], ["-OO"]):
        done = subprocess.run(["/usr/bin/python3", *flags, script, "--help"],
                              capture_output=True, text=True)
        first = open(script).read().split('"""')[1].split("\n\n")[0].split("\n")[0]
        described = first in done.stdout
        check(done.returncode == 0 and not done.stderr and described == (not flags),
              f"{name} --help {flags}: exit {done.returncode}, {done.stderr.strip()!r}, "
              f"described: {described}")

# run_script, every script's end: a reader that goes away after one line
# (`| head -1`) ends the script with 141 and nothing on stderr, and its
# `finally` runs; BadInput is `demo.py: why` and exit 2, a WriteError and an
# exception of `failures` one line and exit 1; otherwise main's return.
PROGRAM = f"""
import errno, os, signal, sys, time
sys.path.insert(0, {os.path.join(ROOT, "scripts")!r})
from atomic_write import WriteError
from script_input import BadInput, run_script
def main(how):
    if how == "lines":
        try:
            for i in range(1000000):
                print("line", i)
        finally:
            print("cleaned up", file=sys.stderr)
    elif how == "bad":
        raise BadInput("in.json: /x: expected a number")
    elif how == "unwritable":
        raise WriteError("out.json", OSError(errno.ENOSPC, "No space left on device"))
    elif how == "failed":
        raise TimeoutError("rank 2 took more than 60 s")
    elif how == "three":
        return 3
    elif how == "name":  # a file name of bytes that are no UTF-8
        print("wrote", os.fsdecode(b"bad\\xff.json"))
    elif how == "interrupted":
        try:
            print("done before", flush=False)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(10)
        finally:
            print("cleaned up", file=sys.stderr)
run_script(main, sys.argv[1], failures=(TimeoutError,))
"""
with tempfile.TemporaryDirectory() as work:
    demo = os.path.join(work, "demo.py")
    with open(demo, "w") as handle:
        handle.write(PROGRAM)
    writer = subprocess.Popen(["/usr/bin/python3", demo, "lines"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    first = writer.stdout.readline()
    writer.stdout.close()
    status = writer.wait(timeout=60)
    errors = writer.stderr.read()
    writer.stderr.close()
    check(first == "line 0\n" and status == 141 and errors == "cleaned up\n",
          f"run_script into a closed pipe: exit {status}, stderr {errors!r}")
    for how, status, stderr in (
            ("bad", 2, "demo.py: in.json: /x: expected a number\n"),
            ("unwritable", 1, "demo.py: cannot write out.json: No space left on device\n"),
            ("failed", 1, "demo.py: rank 2 took more than 60 s\n"),
            ("three", 3, ""), ("none", 0, "")):
        done = subprocess.run(["/usr/bin/python3", demo, how], capture_output=True, text=True,
                              timeout=60)
        check(done.returncode == status and done.stderr == stderr and not done.stdout,
              f"run_script, main {how}: exit {done.returncode} (expected {status}), "
              f"stderr {done.stderr!r}")
    # Printing a table onto a full disk, or into a closed stdout: one line
    # (a traceback out of print(), or of flush() on None).
    with open("/dev/full", "w") as full:
        done = subprocess.run(["/usr/bin/python3", demo, "lines"], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    check(done.returncode == 1 and done.stderr == "cleaned up\ndemo.py: cannot write standard "
          "output: No space left on device\n",
          f"run_script printing to /dev/full: exit {done.returncode}, stderr {done.stderr!r}")
    done = subprocess.run(["/usr/bin/python3", demo, "three"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, timeout=60,
                          preexec_fn=lambda: os.close(1))
    check(done.returncode == 3 and not done.stderr,
          f"run_script with stdout closed: exit {done.returncode}, stderr {done.stderr!r}")
    # A UTF-8 locale other than C.UTF-8 encodes stdout strictly: a path of
    # other bytes was a UnicodeEncodeError after the file was written.
    done = subprocess.run(["/usr/bin/python3", demo, "name"], capture_output=True, timeout=60,
                          env=dict(os.environ, PYTHONIOENCODING="utf-8:strict"))
    check(done.returncode == 0 and done.stdout == b"wrote bad\\udcff.json\n" and not done.stderr,
          f"run_script printing a name of other bytes: exit {done.returncode}, "
          f"{done.stdout!r}, {done.stderr!r}")
    # Ctrl-C: the process ends by SIGINT, its cleanup run, what it printed
    # printed, no traceback.
    done = subprocess.run(["/usr/bin/python3", demo, "interrupted"], capture_output=True,
                          text=True, timeout=60,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    check(done.returncode == -signal.SIGINT and done.stdout == "done before\n"
          and done.stderr == "cleaned up\n",
          f"run_script on Ctrl-C: exit {done.returncode}, {done.stdout!r}, {done.stderr!r}")

# A layer's shape in a measured run: [] a scalar's (4 bytes), the elements at
# 4 bytes each its bytes, every extent a positive integer.
for shape, size, words in (([], 4, ""), ([2, 3], 24, ""), ([2, 3], 20, "6 elements"),
                           ([2, 0], 0, "positive integers"), ([2, True], 8, "positive integers"),
                           ("2x3", 24, "positive integers")):
    problem = script_input.tensor_shape_problem(shape, size)
    check(problem == "" if not words else words in problem,
          f"tensor_shape_problem({shape!r}, {size}): {problem!r}")
check.finish()
