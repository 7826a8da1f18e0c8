"""The lock beside a directory the zoo writes: one writer at a time, and no reader meanwhile.

Part of `zoo.core.storage` (which re-exports every name here; import them from there): the
lock is an ``fcntl.flock`` on ``.<name>.lock`` beside the *real* directory (symlinks resolved, so
two spellings of one folder share one lock), in its parent, so it survives the directory being
swapped. The kernel drops it when the holder exits, killed or not, so no stale lock ever blocks
a command.

* A **writer** (``zoo train``, ``zoo export``, ``--form c``, ``zoo ship``) holds it exclusively
  for the whole command (`exclusive`) and writes who it is into the file.
* A **reader** of a run (``zoo export``, ``eval``, ``analyze``, ``ship``, ``--init-from``, a
  distillation teacher) holds it shared while it reads and writes beside the run
  (`shared_lock`; `zoo.core.storage.shared` for the zoo's own directories): a
  writer cannot start meanwhile (``zoo train --overwrite`` would replace the model under it),
  and a reader started while a writer holds it is refused at once, naming the writer
  (`BeingWrittenError`), instead of reading the old model and writing into the new run.

A lock file is the zoo's only when it carries ``"written_by": "edge-rnn-zoo"`` (or is empty): a
writer refuses a user's file, folder or link of that name. A reader does not need one: where the
name is a user's, no writer of the zoo's can take the lock either, so nothing can replace the
directory while it is read.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
import time
from contextlib import contextmanager
from pathlib import Path

WRITTEN_BY = "edge-rnn-zoo"  # the ``written_by`` of every marker and lock file the zoo writes
_HELD = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)  # flock's "someone else holds it"


class StorageError(RuntimeError):
    """A directory cannot be used as asked (in use, not the zoo's, a name it cannot take)."""


class DirectoryInUseError(StorageError):
    """Another process holds the directory's lock."""


class BeingWrittenError(DirectoryInUseError, ValueError):
    """A reader's refusal: a writer holds the directory's lock. Also a ValueError, so that
    every command that reports a bad run in one line reports this one the same way."""


def lock_path(folder: Path) -> Path:
    folder = Path(folder).resolve()
    return folder.parent / f".{folder.name}.lock"


# ----------------------------------------------------------------------------- writers


@contextmanager
def exclusive(folder: Path, what: str = "run directory", option: str = "--out"):
    """Hold an exclusive lock on ``folder`` (which need not exist yet) for the ``with`` block.

    Args:
        folder: the directory to lock.
        what: how the error message names it (``"run directory"``, ``"export directory"``).
        option: the command's option that picks another folder, which the message suggests
            (``zoo ship`` has ``--dest``, not ``--out``).

    Raises:
        DirectoryInUseError: another process holds the lock (a writer, or readers:
            `shared_lock`); the message names it.
        StorageError: the lock file's name is taken by a file, folder or link of the user's.

    Example:

    ```python
    with exclusive(Path("runs/har2-irnn")):
        ...  # nobody else writes or reads runs/har2-irnn meanwhile
    ```
    """
    import fcntl

    path = lock_path(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = _open_lock(path, folder)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            if err.errno not in _HELD:
                raise
            raise DirectoryInUseError(
                f"{what} {folder} is in use by {_holders(fd, path)}; wait for it to finish or "
                f"choose another {option} (lock file {path})") from None
        if not _zoo_lock_content(os.pread(fd, 1 << 16, 0)):  # read only once we hold it
            raise StorageError(_foreign_lock_message(path, folder))
        info = {"written_by": WRITTEN_BY, "pid": os.getpid(), "host": socket.gethostname(),
                "since": time.strftime("%Y-%m-%d %H:%M:%S"), "command": " ".join(sys.argv)}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _holders(fd: int, path: Path) -> str:
    """Who holds the lock ``fd`` could not take: the writer its file names, or, when the lock
    is shared (readers hold it), the readers' processes."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return _writer(fd)  # held exclusively: a writer, who wrote its name in the file
    fcntl.flock(fd, fcntl.LOCK_UN)
    return "a command reading it (" + (", ".join(_readers(path)) or "zoo export, eval, analyze, "
                                       "ship, or a run that starts from it") + ")"


def _writer(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict) or not info:
        return "another process"
    return (f"pid {info.get('pid')} on {info.get('host')} since {info.get('since')} "
            f"(command: {info.get('command')})")


def _readers(path: Path) -> list[str]:
    """``pid N (command: ...)`` of each process holding a shared flock on ``path``, from Linux's
    ``/proc/locks`` (empty elsewhere, or when it cannot be read)."""
    try:
        inode = os.stat(path).st_ino
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split()
        if len(fields) > 5 and "FLOCK" in fields and "READ" in fields \
                and fields[5].endswith(f":{inode}") and "->" not in fields:
            pid = fields[4]
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                found.append(f"pid {pid} (command: {command.decode(errors='replace').strip()})")
            except OSError:
                found.append(f"pid {pid}")
    return found


def _open_lock(path: Path, folder: Path) -> int:
    """A descriptor on the lock file, created if missing; a directory, symlink or other
    non-file of the user's under that name is a StorageError (nothing opened or changed)."""
    import stat

    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as err:
        if err.errno in (errno.EISDIR, errno.ELOOP, errno.ENXIO, errno.ENOTDIR):
            raise StorageError(_foreign_lock_message(path, folder)) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise StorageError(_foreign_lock_message(path, folder))
    return fd


# The keys of a lock file from before the ``written_by`` marker (read as the zoo's as well).
_LEGACY_LOCK_KEYS = {"pid", "host", "since", "command"}


def _zoo_lock_content(data: bytes) -> bool:
    """Whether a lock file's bytes are the zoo's: empty (just made, or a kill between truncating
    and writing it), or its JSON with the marker (or the four keys it had before the marker)."""
    if not data.strip():
        return True
    try:
        info = json.loads(data.decode())
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(info, dict) and (info.get("written_by") == WRITTEN_BY
                                       or set(info) == _LEGACY_LOCK_KEYS)


def is_zoo_lock(path: Path) -> bool:
    """Whether ``path`` is a lock file the zoo wrote: ``.<name>.lock``, a regular file with its
    marker (or empty)."""
    path = Path(path)
    if not (path.name.startswith(".") and path.name.endswith(".lock")) \
            or path.is_symlink() or not path.is_file():
        return False
    try:
        return _zoo_lock_content(path.read_bytes())
    except OSError:
        return False


def _foreign_lock_message(path: Path, folder: Path) -> str:
    return (f"{path} exists and is not a lock file of the zoo's (no \"written_by\": "
            f"\"{WRITTEN_BY}\"); the zoo needs that name to lock {folder}: move it away "
            "(nothing was changed)")


# ----------------------------------------------------------------------------- readers


@contextmanager
def shared_lock(folder: Path, what: str = "run directory", create: bool = True):
    """Hold a shared lock on ``folder`` while the ``with`` block reads it (and writes beside
    it, as ``zoo export`` writes ``RUN/export-...``): readers share it, a writer cannot take it
    meanwhile, and a writer that holds it now refuses this reader (nothing is read).
    `zoo.core.storage.shared` is this lock for the directories of the zoo's.

    A folder that does not exist is not locked (its reader says it is missing), and no lock
    file is made where none can be (a read-only parent, the name taken by a folder or link of
    the user's: no writer of the zoo's can lock it either) or, without ``create``, where there
    is none yet.

    Args:
        folder: the directory read.
        what: how the error message names it (``"run directory"``, ``"distill teacher"``).
        create: make the lock file if it is missing (for a directory a writer may replace).

    Raises:
        BeingWrittenError: a writer holds the lock (``zoo train`` trains or replaces the run);
            the message names it.

    Example:

    ```python
    with shared_lock(Path("runs/har2-irnn")):
        config, model, norm = read_finished_run("runs/har2-irnn")
        ...  # `zoo train --overwrite runs/har2-irnn` is refused until the block ends
    ```
    """
    import fcntl

    fd = _open_for_reading(Path(folder), create)
    try:
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError as err:
                if err.errno not in _HELD:
                    raise
                raise BeingWrittenError(being_written_message(folder, what, _writer(fd))) \
                    from None
        yield
    finally:
        if fd is not None:
            os.close(fd)


def being_written_message(folder: Path, what: str, writer: str) -> str:
    return (f"{what} {folder} is being written by {writer}: `zoo train` trains it, or replaces "
            "it (--overwrite), and what it holds is not settled until that ends; run this again "
            "once it has finished (nothing was read or written)")


def _open_for_reading(folder: Path, create: bool) -> int | None:
    """A descriptor on ``folder``'s lock file (made if missing and ``create``), or None where
    there is no lock: no such folder, no file and not ``create``, a read-only parent, the name
    taken by a non-file of the user's."""
    import stat

    if not folder.is_dir():
        return None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | (os.O_CREAT if create else 0)
    try:
        fd = os.open(lock_path(folder), flags, 0o644)
    except OSError as err:
        if err.errno in (errno.ENOENT, errno.EISDIR, errno.ELOOP, errno.ENXIO, errno.ENOTDIR,
                         errno.EACCES, errno.EPERM, errno.EROFS):
            return None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd
