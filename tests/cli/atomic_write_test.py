#!/usr/bin/python3
"""Result files are written whole or not at all (scripts/atomic_write.py), and a
full disk is one line and exit status 1.

A full disk is simulated without root: an RLIMIT_FSIZE below the output's
size makes a write past it fail with EFBIG (Python ignores SIGXFSZ, so the
process is not killed). Checked:
- write_atomically, write_json_atomically and atomic_output themselves: the
  bytes json.dump writes; a new file gets a plain open()'s permissions and an
  old one keeps its own; a write that fails midway (the size limit, a string
  that cannot be encoded, an exception inside atomic_output) leaves the old
  file byte for byte and no temporary; a target that cannot be made is a
  WriteError naming it;
- scripts/import_benchmarks.py and scripts/plot.py under the limit: exit 1,
  exactly the line "SCRIPT: cannot write PATH: File too large" (no
  traceback), the target absent or, if it was there, unchanged, and nothing
  else left in its folder; a folder that is a file is the same one line;
- SIGTERM or SIGHUP while atomic_output or atomic_folder holds a temporary:
  the temporary is removed, an old target is as it was, and the process
  still ends by that signal; a script's own SIGTERM handler is left alone
  (its exception passes through the same cleanup); the handlers are the
  default again once the block is over.

Usage: atomic_write_test.py
"""
import contextlib
import errno
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SCRIPTS = os.path.join(ROOT, "scripts")
PYTHON = "/usr/bin/python3"
TOO_LARGE = os.strerror(errno.EFBIG)

sys.path.insert(0, HERE)
sys.path.insert(0, SCRIPTS)
from checks import Checks  # noqa: E402
import atomic_write  # noqa: E402
from atomic_write import (WriteError, atomic_folder, atomic_output, write_atomically,  # noqa: E402
                          write_json_atomically)

check = Checks()
UMASK = os.umask(0o022)
os.umask(UMASK)


@contextlib.contextmanager
def file_size_limit(size):
    """This process's writes past `size` bytes fail with EFBIG while the block runs."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def read(path):
    with open(path, "rb") as f:
        return f.read()


def outcome(action):
    """The exception `action()` raises, or None."""
    try:
        action()
    except Exception as error:  # noqa: BLE001 - the test looks at which
        return error
    return None


def helper_checks(tmp):
    folder = os.path.join(tmp, "helper")
    os.makedirs(folder)
    path = os.path.join(folder, "result.json")

    write_atomically(path, "hello\n")
    check(read(path) == b"hello\n" and os.listdir(folder) == ["result.json"],
          "write_atomically writes a new file, and nothing else")
    mode = os.stat(path).st_mode & 0o777
    check(mode == 0o666 & ~UMASK,
          f"a new file's permissions are a plain open()'s under the umask: {oct(mode)}")
    os.chmod(path, 0o640)
    write_atomically(path, b"old bytes\n")
    check(read(path) == b"old bytes\n" and os.stat(path).st_mode & 0o777 == 0o640,
          "bytes replace an old file, which keeps its permissions (0640)")

    value = {"b": [1, 2.5, "x"], "a": {"nested": None}}
    write_json_atomically(path, value, indent=1)
    check(read(path) == (json.dumps(value, indent=1) + "\n").encode(),
          "write_json_atomically(indent=1): json.dump's bytes and a newline")
    write_json_atomically(path, value, indent=None, newline=False)
    check(read(path) == json.dumps(value).encode(), "indent=None, newline=False: json.dump's bytes")

    old = b"the old result\n"

    def put_old():
        with open(path, "wb") as f:
            f.write(old)

    put_old()
    check(signal.getsignal(signal.SIGXFSZ) == signal.SIG_IGN,
          "Python ignores SIGXFSZ: a write past RLIMIT_FSIZE fails instead of killing")
    with file_size_limit(1024):
        error = outcome(lambda: write_atomically(path, "x" * 8192))
    check(isinstance(error, WriteError) and isinstance(error, OSError)
          and error.errno == errno.EFBIG and error.filename == path
          and str(error) == f"cannot write {path}: {TOO_LARGE}",
          f"past the file-size limit: a WriteError naming the target ({error!r}: {error})")
    check(read(path) == old and os.listdir(folder) == ["result.json"],
          "a write that fails midway (file-size limit) leaves the old file and no temporary")

    put_old()
    error = outcome(lambda: write_atomically(path, "ok" * 4096 + "\udc80"))
    check(isinstance(error, UnicodeEncodeError),
          f"a string that cannot be encoded: its own error, not a WriteError "
          f"({type(error).__name__})")
    check(read(path) == old and os.listdir(folder) == ["result.json"],
          "an encoding failure leaves the old file and no temporary")

    put_old()
    error = outcome(lambda: write_json_atomically(path, {"a": object()}))
    check(isinstance(error, TypeError) and read(path) == old
          and os.listdir(folder) == ["result.json"],
          f"a value json cannot serialize: TypeError ({error!r}), the old file, no temporary")

    seen = {}

    def fail_inside():
        with atomic_output(path) as temporary:
            seen["temporary"] = temporary
            with open(temporary, "w") as f:
                f.write("half a resu")
            raise RuntimeError("stopped midway")

    put_old()
    error = outcome(fail_inside)
    temporary = seen.get("temporary", "")
    check(isinstance(error, RuntimeError) and str(error) == "stopped midway",
          f"an exception inside atomic_output comes out unchanged ({error!r})")
    check(os.path.dirname(temporary) == folder
          and os.path.basename(temporary).startswith(".result.json.")
          and temporary.endswith(".json") and not os.path.exists(temporary),
          f"its temporary was in the target's folder, named after it, and is gone ({temporary})")
    check(read(path) == old and os.listdir(folder) == ["result.json"],
          "an exception inside atomic_output leaves the old file and no temporary")

    blocker = os.path.join(tmp, "a-file")
    with open(blocker, "w"):
        pass
    nowhere = os.path.join(blocker, "result.json")
    error = outcome(lambda: write_atomically(nowhere, "x"))
    check(isinstance(error, WriteError) and error.errno == errno.ENOTDIR
          and str(error) == f"cannot write {nowhere}: {os.strerror(errno.ENOTDIR)}",
          f"a target in a folder that is a file: a WriteError naming it ({error})")

    # A device or a pipe was replaced by a regular file (--out /dev/null as root).
    pipe = os.path.join(tmp, "pipe")
    os.mkfifo(pipe)
    error = outcome(lambda: write_atomically(pipe, "x"))
    check(isinstance(error, WriteError) and "not a regular file" in str(error)
          and stat.S_ISFIFO(os.lstat(pipe).st_mode),
          f"a pipe as the target: a WriteError, the pipe kept ({error})")

    # The bytes are on disk before they replace the target: fsync'd while
    # the target still held the old ones (a crash after the rename kept an
    # empty file where the sync was left out).
    synced = []
    real_fsync = os.fsync

    def fsync(handle):
        synced.append(read(path))
        real_fsync(handle)

    put_old()
    os.fsync = fsync
    try:
        write_atomically(path, "synced\n")
    finally:
        os.fsync = real_fsync
    # The first fsync is the temporary's (one of the folder may follow the rename).
    check(synced[:1] == [old] and read(path) == b"synced\n",
          f"the temporary is synced before it replaces the target: {synced}")

    # Through a symbolic link, as open() writes: the link stays, its file changes.
    link = os.path.join(tmp, "link.json")
    os.symlink(path, link)
    write_atomically(link, "through the link\n")
    check(os.path.islink(link) and read(path) == b"through the link\n"
          and os.listdir(folder) == ["result.json"],
          "a target that is a symbolic link: its file is written, the link kept")
    os.remove(link)

    # Two writers of one folder never share a temporary.
    with atomic_output(path) as first, atomic_output(path) as second:
        check(first != second and os.path.exists(first) and os.path.exists(second),
              "two writers of one file get different temporaries")
    check(os.listdir(folder) == ["result.json"], "both temporaries are gone after the blocks")
    folder_checks(tmp)


def folder_checks(tmp):
    """atomic_folder: a block that ends well replaces the folder whole; one that
    raises leaves the old folder and no staging folder beside it."""
    parent = os.path.join(tmp, "traces")
    out = os.path.join(parent, "trace")
    os.makedirs(out)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        f.write("old")

    def fill(text, fail=False):
        with atomic_folder(out) as staging:
            check(os.path.dirname(staging) == parent and stat.S_IMODE(os.stat(staging).st_mode)
                  == 0o777 & ~UMASK, "the folder to fill is beside out, with a new folder's mode")
            with open(os.path.join(staging, "manifest.json"), "w") as f:
                f.write(text)
            if fail:
                raise RuntimeError("capture failed")

    error = outcome(lambda: fill("half", fail=True))
    check(isinstance(error, RuntimeError) and read(os.path.join(out, "manifest.json")) == b"old"
          and os.listdir(parent) == ["trace"],
          f"an exception inside atomic_folder ({error!r}) leaves the old folder, nothing beside")
    fill("new")
    check(read(os.path.join(out, "manifest.json")) == b"new" and os.listdir(parent) == ["trace"],
          "a block that ends well replaces the folder, nothing left beside it")


def run_limited(argv, limit):
    """argv under RLIMIT_FSIZE = limit bytes (soft and hard), as a full disk would."""
    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return subprocess.run([PYTHON] + argv, capture_output=True, text=True, timeout=300,
                          preexec_fn=limited if limit else None,
                          env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))


def check_failed_write(done, script, path, why=TOO_LARGE):
    said = done.stderr.splitlines()
    return check(done.returncode == 1 and said == [f"{script}: cannot write {path}: {why}"],
                 f"{script}: exit 1 and the one line 'cannot write {os.path.basename(path)}: "
                 f"{why}' (got {done.returncode}: {said})")


NCCL_LOG = """\
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20
#  Rank  0 Group  0 Pid   4100 on     node00 device  0 [0x07] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid   4101 on     node01 device  0 [0x07] NVIDIA A100-SXM4-80GB
#       size         count      type   redop    root     time   algbw   busbw #wrong     time
     1048576        262144     float     sum      -1    900.0    1.00    1.00      0    900.0
     2097152        524288     float     sum      -1   1700.0    1.00    1.00      0   1700.0
     4194304       1048576     float     sum      -1   3300.0    1.00    1.00      0   3300.0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 1.00
"""


def import_checks(tmp):
    folder = os.path.join(tmp, "import")
    os.makedirs(folder)
    log = os.path.join(folder, "allreduce.log")
    with open(log, "w") as f:
        f.write(NCCL_LOG)

    def run(out, limit, name="first"):
        return run_limited([os.path.join(SCRIPTS, "import_benchmarks.py"), "nccl-tests",
                            f"allreduce={log}", "--bandwidth", "10Gbps", "--latency", "15us",
                            "--name", name, "--out", out], limit)

    out = os.path.join(folder, "measured.json")
    done = run(out, None)
    check(done.returncode == 0 and len(json.load(open(out))["collectives"]) == 3,
          f"import_benchmarks.py without a limit: exit 0, 3 points ({done.stderr.strip()})")
    old = read(out)
    limit = 256
    check(len(old) > 2 * limit, f"its output ({len(old)} bytes) is larger than the limit")

    fresh = os.path.join(folder, "fresh.json")
    done = run(fresh, limit)
    check_failed_write(done, "import_benchmarks.py", fresh)
    check("Traceback" not in done.stderr and not os.path.exists(fresh)
          and sorted(os.listdir(folder)) == ["allreduce.log", "measured.json"],
          "a full disk: no traceback, no file, no temporary")

    done = run(out, limit, name="second")
    check_failed_write(done, "import_benchmarks.py", out)
    check(read(out) == old and sorted(os.listdir(folder)) == ["allreduce.log", "measured.json"],
          "a full disk over an old result: the old file byte for byte, no temporary")

    blocker = os.path.join(folder, "allreduce.log", "measured.json")
    done = run(blocker, None)
    check_failed_write(done, "import_benchmarks.py", blocker, os.strerror(errno.ENOTDIR))


# A writer that holds a temporary (file or folder) and waits to be signalled.
SIGNALLED_WRITER = """
import os, signal, sys, time
sys.path.insert(0, sys.argv[1])
import atomic_write
from atomic_write import atomic_folder, atomic_output
kind, target, own_handler = sys.argv[2], sys.argv[3], sys.argv[4] == "own"
def wait_for_the_signal():
    # In slices: a signal arriving between the last check of pending signals
    # and one long sleep's system call would not interrupt it (CPython runs
    # handlers between bytecodes), and the test would wait out its timeout.
    for _ in range(600):
        time.sleep(0.1)
# Whatever the caller ignored (nohup's SIGHUP), this writer starts from the default.
for ending in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(ending, signal.SIG_DFL)
if own_handler:
    def stop(signum, frame):
        raise SystemExit(3)
    signal.signal(signal.SIGTERM, stop)
if kind == "nested":  # a file written inside a folder being written
    with atomic_folder(target) as folder, atomic_output(os.path.join(folder, "part.json")) as part:
        print("ready", flush=True)
        wait_for_the_signal()
if kind == "held":  # a signal while the temporary is made: held, then the cleanup
    with atomic_output(target) as temporary:
        with atomic_write._deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            print("ready", flush=True)  # still running: the signal is held
        wait_for_the_signal()
if kind == "swap":  # a signal between the swap's two renames: the swap completes
    rename = os.rename
    def rename_then_signal(source, destination):
        rename(source, destination)
        if os.path.basename(destination) == "previous":
            os.kill(os.getpid(), signal.SIGTERM)
    os.rename = rename_then_signal
    with atomic_folder(target) as staging:
        with open(os.path.join(staging, "part.json"), "w") as f:
            f.write("the new result")
        print("ready", flush=True)
with (atomic_output if kind == "file" else atomic_folder)(target) as temporary:
    with open(temporary if kind == "file" else os.path.join(temporary, "part.json"), "w") as f:
        f.write("half a result")
    print("ready", flush=True)
    wait_for_the_signal()
"""


def signal_checks(tmp):
    folder = os.path.join(tmp, "signalled")
    os.makedirs(folder)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    for kind, signum, handler, old in (("file", signal.SIGTERM, "default", None),
                                       ("file", signal.SIGHUP, "default", b"old\n"),
                                       ("folder", signal.SIGTERM, "default", b"old\n"),
                                       ("folder", signal.SIGHUP, "default", None),
                                       ("nested", signal.SIGTERM, "default", b"old\n"),
                                       ("held", signal.SIGTERM, "default", b"old\n"),
                                       ("file", signal.SIGTERM, "own", b"old\n")):
        shape = "file" if kind in ("file", "held") else "folder"
        target = os.path.join(folder, "result.json" if shape == "file" else "traces")
        if old is not None:  # an old result to keep: a file, or a folder holding one
            os.makedirs(target if shape == "folder" else folder, exist_ok=True)
            with open(target if shape == "file" else os.path.join(target, "old.json"), "wb") as f:
                f.write(old)
        before = sorted(os.listdir(folder))
        writer = subprocess.Popen([PYTHON, "-c", SIGNALLED_WRITER, SCRIPTS, kind, target, handler],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready = writer.stdout.readline()
        if kind != "held":  # that one signals itself
            writer.send_signal(signum)
        try:
            _, stderr = writer.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            writer.kill()
            _, stderr = writer.communicate()
        expected = 3 if handler == "own" else -signum
        kept = (old is None or read(target if shape == "file" else os.path.join(target, "old.json"))
                == old)
        check(ready == "ready\n" and writer.returncode == expected and not stderr
              and sorted(os.listdir(folder)) == before and kept
              and (shape == "file" or old is None or os.listdir(target) == ["old.json"]),
              f"{signal.Signals(signum).name} ({handler} handler) during a {shape}'s write"
              f"{' with a file written in it' if kind == 'nested' else ''}"
              f"{', held while its temporary is made' if kind == 'held' else ''}: "
              f"exit {writer.returncode} (expected {expected}), {sorted(os.listdir(folder))} "
              f"left (before: {before}), old result kept: {kept} ({stderr.strip()!r})")
        shutil.rmtree(folder)
        os.makedirs(folder)
    # Between moving the old folder aside and renaming the new one in: the
    # swap completes (the result whole), nothing is left beside it, and the
    # process ends by the signal. Raised there, it left no `out` at all.
    target = os.path.join(folder, "traces")
    os.makedirs(target)
    with open(os.path.join(target, "old.json"), "w") as f:
        f.write("the old result")
    writer = subprocess.run([PYTHON, "-c", SIGNALLED_WRITER, SCRIPTS, "swap", target, "default"],
                            capture_output=True, text=True, timeout=30)
    check(writer.returncode == -signal.SIGTERM and os.listdir(folder) == ["traces"]
          and os.listdir(target) == ["part.json"],
          f"SIGTERM between the swap's renames: exit {writer.returncode}, {os.listdir(folder)} "
          f"beside, {os.listdir(target) if os.path.isdir(target) else None} in the folder "
          f"({writer.stderr.strip()[-300:]!r})")
    write_atomically(os.path.join(folder, "result.json"), "done\n")
    with atomic_folder(os.path.join(folder, "traces")):
        pass
    check(all(signal.getsignal(s) == h for s, h in handlers.items()),
          "after a write, SIGTERM and SIGHUP are as they were")


def plot_checks(tmp):
    folder = os.path.join(tmp, "plot")
    os.makedirs(folder)
    table = os.path.join(folder, "sweep.csv")
    with open(table, "w") as f:
        f.write("compressor_name,workers,throughput_samples_per_s\ndense,2,100\ndense,4,180\n")
    plot = os.path.join(SCRIPTS, "plot.py")

    # Unlimited first: matplotlib's font cache is then there to read, not to write.
    figures = os.path.join(folder, "figures")
    done = run_limited([plot, table, "--out", figures], None)
    check(done.returncode == 0
          and sorted(os.listdir(figures)) == ["throughput.pdf", "throughput.png"],
          f"plot.py without a limit: exit 0, throughput.pdf and .png ({done.stderr.strip()})")
    old = {name: read(os.path.join(figures, name)) for name in os.listdir(figures)}
    limit = 4096
    check(min(len(data) for data in old.values()) > 2 * limit,
          "its figures are larger than the limit")

    fresh = os.path.join(folder, "fresh")
    done = run_limited([plot, table, "--out", fresh], limit)
    check_failed_write(done, "plot.py", os.path.join(fresh, "throughput.pdf"))
    # The folder plot.py made for them goes too, as nothing was written.
    check("Traceback" not in done.stderr and not os.path.exists(fresh),
          "a full disk: no traceback, no figure, no temporary, not the folder made for them "
          f"({os.listdir(fresh) if os.path.exists(fresh) else 'gone'})")

    done = run_limited([plot, table, "--out", figures], limit)
    check_failed_write(done, "plot.py", os.path.join(figures, "throughput.pdf"))
    check({name: read(os.path.join(figures, name)) for name in os.listdir(figures)} == old,
          "a full disk over old figures: both byte for byte, no temporary")


with tempfile.TemporaryDirectory() as tmp:
    check(os.path.dirname(atomic_write.__file__) == SCRIPTS, "the helper tested is scripts/'s")
    helper_checks(tmp)
    import_checks(tmp)
    plot_checks(tmp)
    signal_checks(tmp)
check.finish()
