"""The lock beside a directory the zoo writes: one writer at a time.

Part of `zoo.training.storage` (which re-exports every name here; import them from there): the
lock is an ``fcntl.flock`` on ``.<name>.lock`` beside the *real* directory (symlinks resolved, so
two spellings of one folder share one lock), in its parent, so it survives the directory being
swapped. The kernel drops it when the holder exits, killed or not, so no stale lock ever blocks
a command.

A writer (``zoo train``, ``zoo export``, ``--form c``, ``zoo ship``) holds it exclusively for
the whole command (`exclusive`) and writes who it is into the file.

A lock file is the zoo's only when it carries ``"written_by": "edge-rnn-zoo"`` (or is empty): a
writer refuses a user's file, folder or link of that name.
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
        DirectoryInUseError: another process holds the lock; the message names it.
        StorageError: the lock file's name is taken by a file, folder or link of the user's.

    Example:

    ```python
    with exclusive(Path("runs/har2-irnn")):
        ...  # nobody else writes runs/har2-irnn meanwhile
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
                f"{what} {folder} is in use by {_writer(fd)}; wait for it to finish or "
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


def _writer(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict) or not info:
        return "another process"
    return (f"pid {info.get('pid')} on {info.get('host')} since {info.get('since')} "
            f"(command: {info.get('command')})")


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
