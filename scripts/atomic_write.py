"""Result files written whole or not at all: the one way the scripts write them.

Opening the target and writing into it leaves half a file when the disk fills
(or the process is stopped), and whatever reads the results next takes that
half for a result. Here the bytes go to a temporary file in the target's folder
(same file system, so the rename is atomic; named after the target plus
mkstemp's unique part, so concurrent writers never collide), are synced to
disk, and only then replace the target. On any failure the temporary is
removed and the target is as it was; an OSError comes back as WriteError (an
OSError, same errno and strerror, naming the target) whose str() is the one
line a script prints before exit 1 (script_input.run_script prints it:
"script.py: cannot write PATH: No space left on device").

SIGTERM and SIGHUP (a timeout, a closed terminal) end a process at once by
default, which would leave the temporary behind: while a temporary exists,
those whose action is the default raise instead, the temporary is removed,
and the process then ends by the same signal as it would have (a script's
own handler, run.py's, is left alone: its exception passes through the same
cleanup). SIGINT is Python's KeyboardInterrupt already.
"""
import contextlib
import errno
import io
import json
import os
import shutil
import signal
import stat
import tempfile
import threading

_UMASK = os.umask(0o022)
os.umask(_UMASK)


_ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class _Signalled(BaseException):
    """SIGTERM or SIGHUP arrived while a temporary existed."""

    def __init__(self, signum):
        super().__init__(f"signal {signum}")
        self.signum = signum


# Inside _deferred blocks (making a temporary, swapping folders), a signal
# is held until the block ends: raised in the middle, it would leave a
# temporary no cleanup knows of, or the old folder moved aside.
_deferring = 0
_pending = None


def _raise_signalled(signum, _frame):
    global _pending
    # A second signal during the cleanup would cut it short: ignored until
    # the process ends by the first.
    for ending in _ENDING_SIGNALS:
        if signal.getsignal(ending) is _raise_signalled:
            signal.signal(ending, signal.SIG_IGN)
    if _deferring:
        _pending = signum
        return
    raise _Signalled(signum)


@contextlib.contextmanager
def _deferred():
    """SIGTERM and SIGHUP (where _signals_clean_up set them) arriving in the
    block are raised when it ends, whether it ends well or not."""
    global _deferring, _pending
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
        if not _deferring and _pending is not None:
            signum, _pending = _pending, None
            raise _Signalled(signum)


@contextlib.contextmanager
def _signals_clean_up():
    """While the block runs, SIGTERM and SIGHUP (where their action is the
    default) raise _Signalled, so that the block's cleanup runs; then the
    process ends by that signal, as it would have at once. Nested (a file
    written inside atomic_folder's), the outermost block ends it."""
    previous = {}
    if threading.current_thread() is threading.main_thread():  # only it may set handlers
        for ending in _ENDING_SIGNALS:
            if signal.getsignal(ending) == signal.SIG_DFL:
                previous[ending] = signal.signal(ending, _raise_signalled)
    try:
        yield
    except _Signalled as signalled:
        if signalled.signum not in previous:
            raise  # an outer block set the handler: its cleanup comes first
        for ending in previous:
            signal.signal(ending, signal.SIG_DFL)
        previous = {}
        os.kill(os.getpid(), signalled.signum)
        raise  # only if the signal is blocked
    finally:
        for ending, handler in previous.items():
            signal.signal(ending, handler)


class WriteError(OSError):
    """Writing `filename` failed; the file is as it was and no temporary is left."""

    def __init__(self, path, error):
        super().__init__(error.errno, error.strerror or str(error), path)

    def __str__(self):
        return f"cannot write {self.filename}: {self.strerror}"


@contextlib.contextmanager
def atomic_output(path):
    """Yields a temporary path in path's folder to write (named after path, its
    extension kept); when the block ends without an exception it is synced and
    replaces path. The permission bits are the old file's, or a new file's under
    the umask (not mkstemp's 0600)."""
    target = os.path.realpath(path)  # through a symbolic link, as open() writes
    folder, name = os.path.split(target)
    # Replacing a device or a pipe (plot.py --out /dev/null, as root) would
    # leave a regular file in its place.
    try:
        mode = os.stat(target).st_mode
    except OSError:
        mode = stat.S_IFREG  # missing: made new
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise WriteError(path, OSError(errno.EINVAL, "not a regular file (a device or a pipe), "
                                       "which writing it whole would replace"))
    with _signals_clean_up():
        temporary = None
        try:
            try:
                with _deferred():
                    handle, temporary = tempfile.mkstemp(
                        prefix=f".{name}.", suffix=os.path.splitext(name)[1], dir=folder)
                    os.close(handle)
            except OSError as error:
                raise WriteError(path, error) from error
            yield temporary
            try:
                mode = stat.S_IMODE(os.stat(target).st_mode)
            except FileNotFoundError:
                mode = 0o666 & ~_UMASK
            os.chmod(temporary, mode)
            handle = os.open(temporary, os.O_RDONLY)
            try:
                os.fsync(handle)
            finally:
                os.close(handle)
            os.replace(temporary, target)
        except BaseException as error:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.remove(temporary)
            if isinstance(error, OSError) and not isinstance(error, WriteError):
                raise WriteError(path, error) from error
            raise


def write_atomically(path, data):
    """Writes data (str, as open(path, "w") would, or bytes) as path, whole or not at all."""
    with atomic_output(path) as temporary:
        with open(temporary, "wb" if isinstance(data, bytes) else "w") as stream:
            stream.write(data)


def write_json_atomically(path, value, indent=1, newline=True):
    """json.dump(value, file, indent=indent), then "\\n" if newline: the same bytes."""
    write_atomically(path, json.dumps(value, indent=indent) + ("\n" if newline else ""))


def write_figure_atomically(figure, path, **options):
    """figure.savefig(path, **options), the format from path's extension, through
    memory: matplotlib never writes the file (its PDF writer hides a full disk's
    OSError behind an AttributeError), and the bytes are the same. A PDF
    carries no creation date and a PNG no matplotlib version unless
    `metadata` gives them, so the same figure is the same PDF or PNG file
    (an SVG's clip-path ids are drawn at random)."""
    extension = os.path.splitext(path)[1][1:]
    unstamped = {"pdf": "CreationDate", "png": "Software"}.get(extension)
    if unstamped:
        options["metadata"] = {unstamped: None, **(options.get("metadata") or {})}
    data = io.BytesIO()
    figure.savefig(data, format=extension, **options)
    write_atomically(path, data.getvalue())


def nearest_existing(path):
    """The nearest of `path`'s folders (from its own, up) that exists: where
    its missing folders would be made. An output under a file can never be
    written, and is better refused before the work than after it."""
    existing = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    return existing


def longest_name(folder, extension):
    """The most bytes a file name ending in `extension` (".pdf") may have for
    write_atomically to write it in `folder` (or where its missing folders
    would be made): the file system's limit on a name (NAME_MAX, 255 bytes
    where it does not say) less what the temporary's name adds, "." before
    and mkstemp's ".XXXXXXXX" and the extension after."""
    try:
        limit = os.pathconf(nearest_existing(os.path.join(folder, "x")), "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    if limit < 0:  # no limit said
        limit = 255
    return limit - len(".") - len(".XXXXXXXX") - len(os.fsencode(extension))


def replace_folder(staging, out):
    """Renames the complete folder `staging` to `out`, whole or not at all: an
    old `out` is moved aside first and removed after (put back if the rename
    fails). `staging` must be on the same file system (next to `out`). A
    signal is held until the swap is done or undone."""
    old = None
    try:
        with _deferred():
            try:
                if os.path.lexists(out):
                    old = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.old.",
                                           dir=os.path.dirname(os.path.abspath(out)))
                    os.rename(out, os.path.join(old, "previous"))
                try:
                    os.rename(staging, out)
                except OSError:
                    if old:
                        os.rename(os.path.join(old, "previous"), out)
                    raise
            finally:
                if old and not os.path.lexists(os.path.join(old, "previous")):
                    shutil.rmtree(old, ignore_errors=True)
            if old:  # the swap done: the old folder goes
                shutil.rmtree(old, ignore_errors=True)
    except OSError as error:
        raise WriteError(out, error) from error


@contextlib.contextmanager
def atomic_folder(out):
    """Yields a new empty folder next to `out` (permission bits a new folder's
    under the umask, not mkdtemp's 0700) to fill; when the block ends without
    an exception it takes out's place (replace_folder), otherwise it is
    removed and `out` is as it was. Making or placing it fails as WriteError;
    what the block raises passes through."""
    out = os.path.abspath(out)
    parent = os.path.dirname(out)
    with _signals_clean_up():
        staging = None
        try:
            try:
                with _deferred():
                    os.makedirs(parent, exist_ok=True)
                    staging = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.", dir=parent)
                    os.chmod(staging, 0o777 & ~_UMASK)
            except OSError as error:
                raise WriteError(out, error) from error
            yield staging
            replace_folder(staging, out)
        finally:
            if staging is not None:  # gone already once it is `out`
                shutil.rmtree(staging, ignore_errors=True)
