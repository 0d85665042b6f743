"""What the scripts share about their input: a one-line command-line error, the
bad-input exception, how an input file is opened (open_input: a regular file
only, as gcsim reads them) and a JSON one read (read_json_object), and gcsim's
unit strings; and how they end (run_script).

Command lines: Parser is argparse's, except that a bad command line is one line
and exit 2 (`script.py: message`, or `script.py: subcommand: message`), not
argparse's usage and message. BadInput is what a script raises for input it
refuses. Every script's __main__ is `run_script(main, sys.argv[1:])`: for
BadInput it prints `script.py: <the exception>` and exits 2, for a result it
could not write (atomic_write.WriteError) `script.py: cannot write ...` and
exit 1, and when the reader of a printed table goes away (`| head`) exit 141
without a traceback.

Units, exactly as gcsim reads them (sim/input/units.cpp): spaces around the
text, a number without a sign (digits with at most one '.', then an optional
exponent), optional spaces, then a unit from the table, matched exactly. No
sign, NaN, infinity or empty number; a finite number whose value in base units
overflows ("1e300Tbps") is refused. parse_bandwidth (bytes/s), parse_duration
(seconds), parse_size (bytes) and parse_flop_rate (FLOP/s) return that value or
None. The checked_* functions also apply the ranges gcsim's JSON inputs accept
(sim/input/json_reader.cpp) and return None outside them:

    from script_input import BadInput, Parser, checked_bandwidth, parse_duration
"""
import argparse
import atexit
import contextlib
import fcntl
import json
import math
import os
import re
import shutil
import signal
import stat
import sys
import tempfile

from atomic_write import WriteError, nearest_existing  # beside this file, on the scripts' path


class BadInput(Exception):
    """Input a script refuses: it prints `script.py: <this>` and exits 2."""


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, summary_of=None, **kwargs):
        """summary_of: a module docstring whose first paragraph describes the
        script; None (python -OO strips docstrings) leaves no description."""
        if summary_of is not None:
            kwargs["description"] = summary_of.split("\n\n")[0]
        super().__init__(*args, **kwargs)
        # A value that starts with a minus and a digit (--bandwidth -10Gbps) is
        # a value for its option to refuse, not an option "expected one
        # argument" was said of; argparse takes only plain numbers so.
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message):
        """One line and exit 2, not argparse's usage and message: `script.py:
        message`, or `script.py: subcommand: message`."""
        self.exit(2, ": ".join(self.prog.split(" ", 1) + [message]) + "\n")


def run_script(main, *args, failures=()):
    """Exits with what main(*args) returns (None: 0). BadInput: one line
    `script.py: why` on stderr, exit 2; WriteError: `script.py: cannot write
    PATH: why`, exit 1 (the file as it was), and so for the exceptions in
    `failures` (a job that failed); the reader of stdout gone (`|
    head`): exit 141, as a shell reports a command a SIGPIPE ended, and no
    traceback; stdout that cannot be written (a full disk, /dev/full): one
    line, exit 1; Ctrl-C: the process ends by SIGINT, without a traceback
    (where SIGINT has Python's handler: a script's own KeyboardInterrupt passes).
    `with` blocks and `finally` clauses still run, which restoring a signal's
    default action would skip. A path printed that is no text in the
    locale's encoding (a file name of other bytes) is printed escaped."""
    script = os.path.basename(sys.argv[0])
    if sys.stdout is not None:  # None: started with stdout closed, and print() prints nothing
        sys.stdout.reconfigure(errors="backslashreplace")
    try:
        status = main(*args)
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        _drop_stdout()
        sys.exit(141)
    except BadInput as why:
        print(f"{script}: {why}", file=sys.stderr)
        sys.exit(2)
    except (WriteError, *failures) as error:
        sys.exit(f"{script}: {error}")
    except KeyboardInterrupt:
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            raise  # the script's own (netns.stop_signals_raise): its caller reports it
        with contextlib.suppress(OSError, AttributeError):
            sys.stdout.flush()  # what was done is said
        _drop_stdout()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        sys.exit(130)  # only if SIGINT is blocked
    except OSError as error:
        if error.filename is not None:  # a file's, not a write to stdout
            raise
        _drop_stdout()
        sys.exit(f"{script}: cannot write standard output: {error.strerror or error}")
    sys.exit(status)


def _drop_stdout():
    """Python flushes stdout again at exit: what it still holds goes nowhere
    (the reader gone, the disk full) instead of into a second error."""
    if sys.stdout is not None:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def use_plain_matplotlib():
    """Imports matplotlib for the figure scripts and returns it, drawing the
    same figures whatever the environment: the Agg backend ($MPLBACKEND is
    read as matplotlib loads, and a wrong one was a traceback), matplotlib's
    own defaults (a matplotlibrc in the working or the home folder, or
    $MATPLOTLIBRC, changed every figure) and no $SOURCE_DATE_EPOCH (the
    figures carry no date; one that is no number was a traceback as a PDF
    was written). Where the home folder cannot hold matplotlib's settings
    folder, a temporary one, removed at exit, without matplotlib's warning
    of five lines on stderr."""
    os.environ["MPLBACKEND"] = "Agg"
    os.environ.pop("SOURCE_DATE_EPOCH", None)
    if "MPLCONFIGDIR" not in os.environ:
        config = os.path.join(os.environ.get("XDG_CONFIG_HOME") or
                              os.path.join(os.path.expanduser("~"), ".config"), "matplotlib")
        try:
            os.makedirs(config, exist_ok=True)
            writable = os.access(config, os.W_OK)
        except OSError:
            writable = False
        if not writable:
            os.environ["MPLCONFIGDIR"] = tempfile.mkdtemp(prefix="matplotlib-")
            atexit.register(shutil.rmtree, os.environ["MPLCONFIGDIR"], ignore_errors=True)
    import matplotlib
    matplotlib.rcdefaults()
    return matplotlib


def integer_in(low, high):
    """An argparse type: an integer in [low, high]."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected an integer in [{low}, {high}], got "
                                             f"{text!r}")
        return value
    return parse


def is_json_number(value):
    """A JSON number as json.loads gives it: an int or a float, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def tensor_shape_problem(shape, size):
    """Why `shape` (a layer's "shape" in a measured run) is not that of a
    float32 tensor of `size` bytes, or "" where it is ([] is a scalar's)."""
    if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 < d <= 1 << 50 for d in shape):
        return f"{json.dumps(shape)[:80]} is not a list of positive integers"
    elements = math.prod(shape)
    if 4 * elements != size:
        return (f"{json.dumps(shape)} holds {elements} elements, {4 * elements} bytes as float32, "
                f"not the layer's {size}")
    return ""


def json_kind(value):
    """A JSON value's type as a message names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def check_output_file(out, option="--out"):
    """Refuses `out` now, before minutes of work, unless it can be written as
    write_json_atomically writes it, without touching anything of the user's
    or leaving anything behind: a file name (not a folder, not a device; else
    BadInput), in a folder this process can write, or can make (its nearest
    existing folder writable; the missing ones are made only when the result
    is written; else WriteError, as writing it would have failed). Probed with
    a temporary of a name nothing else has, removed at once."""
    if not out:
        raise BadInput(f"{option}: empty: give the file to write")
    refuse_folder_output(out, option)
    target = os.path.realpath(out)  # where write_json_atomically writes
    if os.path.lexists(target) and not os.path.isfile(target):
        raise BadInput(f"{option}: {out} exists and is not a regular file")
    folder = os.path.dirname(target)
    existing = nearest_existing(target)
    if not os.path.isdir(existing):
        raise BadInput(f"{option}: cannot write {out}: {existing} is not a folder")
    try:
        if existing == folder:
            handle, probe = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", dir=folder)
            os.close(handle)
            os.remove(probe)
        else:  # the folder is made later: may one be made here?
            os.rmdir(tempfile.mkdtemp(prefix=".out.", dir=existing))
    except OSError as error:
        raise WriteError(out, error) from error


def refuse_folder_output(out, option="--out"):
    """BadInput when the file `out` names a folder (one that is, or a path
    ending in "/", ".", ".."): the user's mistake, where a file the folder
    cannot be made under is the place's (WriteError, exit 1, when written)."""
    if out.endswith(("/", os.sep)) or os.path.basename(out) in (".", ".."):
        raise BadInput(f"{option}: {out} names a folder; give the file to write in it")
    if os.path.isdir(os.path.realpath(out)):
        raise BadInput(f"{option}: {out} is a folder; give the file to write in it")


def refuse_output_over_inputs(out, inputs, option="--out"):
    """BadInput when the file `out` is one of the files `inputs` (links
    followed): writing it would destroy that input."""
    for path in inputs:
        if path and os.path.exists(path) and os.path.exists(out) and os.path.samefile(path, out):
            raise BadInput(f"{option}: {out} is also an input ({path}): writing it would "
                           f"destroy that file; choose another path")


def _token(key):
    """A key as a JSON pointer writes it."""
    return key.replace("~", "~0").replace("/", "~1")


class _Object(dict):
    """A JSON object that remembers the first key it was given twice: json
    keeps the last value without a word, where gcsim refuses the file."""
    twice = None


def _key_twice(value):
    """The JSON path of a key given twice in one object of `value`, or None;
    walked only once the parse has seen one (`_Object.twice`)."""
    pending = [("", value)]
    while pending:
        at, item = pending.pop()
        if isinstance(item, dict):
            if item.twice is not None:
                return f"{at}/{_token(item.twice)}"
            pending.extend((f"{at}/{_token(key)}", child)
                           for key, child in reversed(list(item.items())))
        elif isinstance(item, list):
            pending.extend((f"{at}/{index}", child)
                           for index, child in reversed(list(enumerate(item))))
    return None


def open_input(path, mode="r", **text_options):
    """The input file `path` open to read: mode "r" (text, UTF-8 unless
    text_options say otherwise; they are open()'s) or "rb". BadInput naming it
    when it is missing, unreadable, a folder, or anything else that is not a
    regular file (`PATH: not a regular file`, as gcsim says): a FIFO blocked
    the read forever and /dev/zero never ended it. Opened without blocking,
    so that a FIFO with no writer opens at once to be refused, then blocking
    again for the read."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file")
    except OSError as error:
        raise BadInput(f"{path}: cannot read: {error.strerror or error}")
    try:
        kind = os.fstat(handle).st_mode
        if stat.S_ISDIR(kind):
            raise BadInput(f"{path}: is a folder, not a file")
        if not stat.S_ISREG(kind):
            raise BadInput(f"{path}: not a regular file")
        fcntl.fcntl(handle, fcntl.F_SETFL, fcntl.fcntl(handle, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        if "b" in mode:
            return os.fdopen(handle, "rb")
        return os.fdopen(handle, "r", **{"encoding": "utf-8", **text_options})
    except BaseException:
        with contextlib.suppress(OSError):  # fdopen may have closed it already
            os.close(handle)
        raise


def read_json_object(path, what="a JSON object"):
    """The JSON object in the file `path`; BadInput naming the file for anything
    else (missing, unreadable, not a regular file, not UTF-8, empty, not JSON,
    NaN, nested too deep, not an object: `what` says what was expected, a key
    twice in one object)."""
    try:
        with open_input(path) as handle:
            text = handle.read()
    except OSError as error:
        raise BadInput(f"{path}: cannot read: {error.strerror or error}")
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not UTF-8 text")
    value = parse_json(text, path)
    if not isinstance(value, dict):
        raise BadInput(f"{path}: expected {what}, got {json_kind(value)}")
    return value


def parse_json(text, path):
    """The JSON value of `text`, read from the file `path`, as gcsim reads its
    inputs: BadInput naming the file when it is empty, not JSON, NaN, nested
    too deep, or gives a key twice in one object. A UTF-8 byte-order mark
    at its start is skipped, as gcsim skips it."""
    text = text[1:] if text.startswith("\ufeff") else text
    if not text.strip():
        raise BadInput(f"{path}: empty file")

    def no_constant(name):
        raise ValueError(f"{name} is not a JSON number")

    def finite_integer(digits):
        # A float() of it later would raise OverflowError, past the checks.
        value = int(digits)
        if abs(value) > sys.float_info.max:
            raise ValueError(f"the integer {digits[:12]}... ({len(digits)} digits) is too large "
                             "for any field")
        return value

    seen_twice = []

    def object_of(pairs):
        value = _Object()
        for key, item in pairs:
            if key in value and value.twice is None:
                value.twice = key
                seen_twice.append(key)
            value[key] = item
        return value

    try:
        value = json.loads(text, parse_constant=no_constant, parse_int=finite_integer,
                           object_pairs_hook=object_of)
    except RecursionError:
        raise BadInput(f"{path}: not JSON: nested too deeply")
    except ValueError as error:
        raise BadInput(f"{path}: not JSON: {error}")
    if seen_twice:
        raise BadInput(f"{path}: {_key_twice(value)}: this key appears twice in one object: "
                       "keep one of them")
    return value


# sim/input/units.cpp's tables: unit -> factor to the base unit.
BANDWIDTH_UNITS = {"bps": 1.0 / 8, "kbps": 1e3 / 8, "Kbps": 1e3 / 8, "Mbps": 1e6 / 8,
                   "Gbps": 1e9 / 8, "Tbps": 1e12 / 8, "Bps": 1.0, "kBps": 1e3, "KBps": 1e3,
                   "MBps": 1e6, "GBps": 1e9, "TBps": 1e12, "KiBps": 1024.0,
                   "MiBps": 1048576.0, "GiBps": 1073741824.0, "TiBps": 1099511627776.0,
                   "bit/s": 1.0 / 8, "kbit/s": 1e3 / 8, "Kbit/s": 1e3 / 8, "Mbit/s": 1e6 / 8,
                   "Gbit/s": 1e9 / 8, "Tbit/s": 1e12 / 8}
DURATION_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "min": 60.0,
                  "h": 3600.0}
SIZE_UNITS = {"B": 1.0, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
              "KiB": 1024.0, "MiB": 1048576.0, "GiB": 1073741824.0, "TiB": 1099511627776.0}
FLOP_RATE_UNITS = {"flops": 1.0, "Flops": 1.0, "Gflops": 1e9, "GFlops": 1e9, "Tflops": 1e12,
                   "TFlops": 1e12, "Pflops": 1e15, "PFlops": 1e15, "f": 1.0, "Gf": 1e9,
                   "Tf": 1e12, "Pf": 1e15}

# sim/input/json_reader.cpp's ranges (json_reader.hpp's kLongestSeconds, kLargestBytes).
SLOWEST_BANDWIDTH = 1e3 / 8      # 1kbps, in bytes/s
FASTEST_BANDWIDTH = 1e15 / 8     # 1000Tbps
# The measured-run format's name (README, results/validation/README.md), as
# gcsim validate reads it and the scripts write it.
MEASURED_RUN_FORMAT = "gcsim-measured-run/1"
SHORTEST_SECONDS = 1e-12         # the shortest nonzero duration: 1ps
LONGEST_SECONDS = 1e9
LARGEST_BYTES = 9007199254740992.0  # 2^53


def split_number(text):
    """(number, unit text) of "12.5 Gbps", or None: units.cpp's split_number."""
    if not isinstance(text, str):
        return None
    text = text.strip(" ")
    end, seen_digit, seen_dot, seen_exp = 0, False, False, False
    while end < len(text):
        c = text[end]
        if "0" <= c <= "9":
            seen_digit = True
        elif c == "." and not seen_dot and not seen_exp:
            seen_dot = True
        elif (c in "eE" and seen_digit and not seen_exp and end + 1 < len(text)
              and ("0" <= text[end + 1] <= "9" or text[end + 1] in "+-")):
            seen_exp = True
            if text[end + 1] in "+-":
                end += 1
        else:
            break
        end += 1
    if not seen_digit:
        return None
    try:  # only [0-9.eE+-] here, which float() reads as strtod does, or not at all ("1e+")
        value = float(text[:end])
    except ValueError:
        return None
    if not math.isfinite(value) or value < 0:
        return None
    # "1e-400s" reads as 0, which a duration may be: a figure written nonzero
    # is not taken for one.
    if value == 0 and any(c in "123456789" for c in text[:end].lower().split("e")[0]):
        return None
    return value, text[end:].lstrip(" ")


def parse_with(text, units):
    """text's value in base units with a unit from `units`, or None."""
    split = split_number(text)
    if split is None or split[1] not in units:
        return None
    value = split[0] * units[split[1]]
    return value if math.isfinite(value) else None


def parse_bandwidth(text):
    """Bytes per second of "10Gbps", "1.5 GiBps", or None."""
    return parse_with(text, BANDWIDTH_UNITS)


def parse_duration(text):
    """Seconds of "5us", "2min", or None."""
    return parse_with(text, DURATION_UNITS)


def parse_size(text):
    """Bytes of "25MiB", or None."""
    return parse_with(text, SIZE_UNITS)


def parse_flop_rate(text):
    """FLOP/s of "10Tflops", or None."""
    return parse_with(text, FLOP_RATE_UNITS)


def checked_bandwidth(text):
    """A link bandwidth gcsim accepts, in bytes/s ([1kbps, 1000Tbps]), or None."""
    value = parse_bandwidth(text)
    return value if value is not None and SLOWEST_BANDWIDTH <= value <= FASTEST_BANDWIDTH else None


def checked_duration(text):
    """A duration gcsim accepts (a link latency, a layer latency), in seconds:
    0 or in [1ps, 1e9s]; or None."""
    value = parse_duration(text)
    if value is not None and (value == 0 or SHORTEST_SECONDS <= value <= LONGEST_SECONDS):
        return value
    return None


def checked_size(text):
    """A size gcsim accepts, in bytes ([1B, 2^53B]), or None."""
    value = parse_size(text)
    return value if value is not None and 1.0 <= value <= LARGEST_BYTES else None


def checked_flop_rate(text):
    """A FLOP rate gcsim accepts (positive and finite), in FLOP/s, or None."""
    value = parse_flop_rate(text)
    return value if value is not None and value > 0 else None


def _number_as_written(text, unit):
    """The number before `unit` as the text spells it ("1e3" stays "1e3")."""
    return text[:text.rfind(unit)].strip(" ")


def _case_spellings(text, units, bits_apart):
    """Spellings of text with a unit of `units` that differs only in case,
    those with the fewest changes; none when the unit is known as written.
    `bits_apart`: changing the case of the letter before "ps" (bits or
    bytes) changes the rate eightfold, so it is no spelling. units.cpp's
    case_insensitive, letter for letter (ASCII only, as its tolower)."""
    split = split_number(text)
    if split is None:
        return []
    unit = split[1]

    def lower(letter):
        return letter.lower() if letter.isascii() else letter

    def changes(suffix):
        if len(suffix) != len(unit):
            return None
        count = 0
        for i, (known, written) in enumerate(zip(suffix, unit)):
            if lower(known) != lower(written):
                return None
            if bits_apart and known != written and suffix[i + 1:] == "ps":
                return None
            count += known != written
        return count

    matches = [(count, suffix) for suffix in units
               if (count := changes(suffix)) is not None]
    if not matches or min(count for count, _ in matches) == 0:
        return []
    fewest = min(count for count, _ in matches)
    number = _number_as_written(text, unit)
    return [number + suffix for count, suffix in matches if count == fewest]


def _rate_spellings(text):
    """Bandwidths text may mean in another way of writing a rate: "10Gb",
    "10Gb/s", "10Gbs" -> "10Gbps"; "10Gbits" -> "10Gbit/s"; "10G" -> bits
    or bytes. units.cpp's rate_spellings."""
    split = split_number(text)
    if split is None or parse_bandwidth(text) is not None:
        return []
    unit = split[1]
    if unit.endswith("bits/s"):
        forms = [unit[:-6] + "bit/s"]
    elif unit.endswith("bits"):
        forms = [unit[:-4] + "bit/s"]
    elif unit.endswith("bit"):
        forms = [unit[:-3] + "bit/s"]
    elif unit.endswith("/sec"):
        forms = [unit[:-4] + "ps"]
    elif unit.endswith("/s"):
        forms = [unit[:-2] + "ps"]
    elif unit.endswith(("bs", "Bs")):
        forms = [unit[:-1] + "ps"]
    elif unit.endswith(("b", "B")):
        forms = [unit + "ps"]
    elif len(unit) == 1 and unit in "kKMGT":
        forms = [unit + "bps", unit + "Bps"]
    else:
        forms = []
    number = _number_as_written(text, unit)
    spellings = []
    for form in forms:
        spelled = number + form
        if parse_bandwidth(spelled) is not None:
            spellings.append(spelled)
        else:
            spellings += _case_spellings(spelled, BANDWIDTH_UNITS, True)
    return spellings


# Other names of the duration units; no bare "m" or "u" (minutes and
# milliseconds are both written "m"). units.cpp's duration_spellings.
_DURATION_NAMES = {"sec": "s", "second": "s", "msec": "ms", "millisecond": "ms",
                   "usec": "us", "microsecond": "us", "nsec": "ns", "nanosecond": "ns",
                   "psec": "ps", "minute": "min", "hr": "h", "hour": "h"}


def _duration_spellings(text):
    """Durations text may mean in another way of writing the unit: "5µs",
    "5usec" -> "5us"; "2secs" -> "2s"; "3 hours" -> "3h". units.cpp's
    duration_spellings."""
    split = split_number(text)
    if split is None or parse_duration(text) is not None:
        return []
    written = split[1]
    unit = written
    for micro in ("\u00b5", "\u03bc"):
        if unit.startswith(micro):
            unit = "u" + unit[1:]
    unit = "".join(c.lower() if c.isascii() else c for c in unit)
    if len(unit) > 1 and unit.endswith("s") and unit not in ("ms", "us", "ns", "ps"):
        unit = unit[:-1]  # "secs", "usecs", "hrs", "minutes"
    meant = _DURATION_NAMES.get(unit, unit if unit in DURATION_UNITS else None)
    return [] if meant is None else [_number_as_written(text, written) + meant]


def spelling_hint(text, quantity):
    """What gcsim adds after refusing `text` as a link's "bandwidth" or
    "latency" (`quantity`): ' (did you mean "10Gbps"?)' for a unit it knows
    in another case or way of writing a rate or a duration, naming only
    values it would take; "" otherwise (json_reader.cpp's parse_unit_field)."""
    if quantity not in ("bandwidth", "latency"):
        raise ValueError(f"no spelling hints for {quantity!r}")
    if not isinstance(text, str):
        return ""
    bandwidth = quantity == "bandwidth"
    accepted = checked_bandwidth if bandwidth else checked_duration
    units = BANDWIDTH_UNITS if bandwidth else DURATION_UNITS

    def taken(spellings):
        return [spelled for spelled in spellings if accepted(spelled) is not None]

    meant = taken(_case_spellings(text, units, bits_apart=bandwidth))
    if meant:
        return ' (units are case-sensitive: did you mean "' + '" or "'.join(meant) + '"?)'
    others = taken(_rate_spellings(text) if bandwidth else _duration_spellings(text))
    if others:
        return ' (did you mean "' + '" or "'.join(others) + '"?)'
    return ""


def bandwidth_ok(text):
    """Whether gcsim accepts text as a link bandwidth."""
    return checked_bandwidth(text) is not None


def latency_ok(text):
    """Whether gcsim accepts text as a link latency."""
    return checked_duration(text) is not None
