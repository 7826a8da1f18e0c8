"""What keeps a run directory (and an export directory) from being lost or silently wrong: one
storage module, below the trainer and the exporter, used by both.

* **Ownership marker.** A directory the zoo writes holds a marker file (``.zoo-run`` or
  ``.zoo-export``) with a JSON body. Only a directory with the marker is ever replaced by
  ``--overwrite``; a user's folder that merely holds a ``config.yaml`` is never touched.
* **Exclusive lock.** One process at a time works on a directory: `exclusive` takes an
  ``fcntl.flock`` on a lock file beside it (``.<name>.lock``, in the parent, so it survives the
  swap below) and the error for a second process names the holder's pid, host and command.
* **Atomic files.** Every file is written to a temporary name in the same folder, flushed to
  disk and renamed over the target (`write_bytes_atomic`), so a kill leaves the old file or the
  new one, never half of one.
* **Replace only after success.** `--overwrite` builds the new directory beside the old one and
  `swap_in` exchanges them at the end; a kill in the middle of the swap is repaired by
  `recover_swap` the next time the directory is used, so the old or the new directory is there.

`crash_point` marks each write boundary; it does nothing, and the reliability tests replace it
to simulate a kill at every one of them.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import sys
import time
from contextlib import contextmanager
from pathlib import Path

RUN_MARKER = ".zoo-run"
EXPORT_MARKER = ".zoo-export"


class StorageError(RuntimeError):
    """A directory cannot be used as asked (in use, not the zoo's)."""


class DirectoryInUseError(StorageError):
    """Another process holds the directory's lock."""


def crash_point(label: str) -> None:
    """A write boundary (``label`` says which). Does nothing; tests patch it to inject a kill."""


# ----------------------------------------------------------------------------- atomic files


def write_bytes_atomic(path: Path, data: bytes, label: str | None = None) -> None:
    """Write ``data`` to ``path`` so that a kill leaves either the old file or the new one.

    Args:
        path: the target file.
        data: its new content.
        label: the write boundary's name for `crash_point` (default: the file name).
    """
    path = Path(path)
    label = label or path.name
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    crash_point(f"{label}: written, not renamed")
    os.replace(tmp, path)
    crash_point(f"{label}: renamed")


def write_text_atomic(path: Path, text: str, label: str | None = None) -> None:
    """`write_bytes_atomic` for text (UTF-8)."""
    write_bytes_atomic(path, text.encode(), label)


def write_json_atomic(path: Path, data, label: str | None = None) -> None:
    """`write_bytes_atomic` for a JSON document (indented)."""
    write_text_atomic(path, json.dumps(data, indent=2) + "\n", label)


def read_json(path: Path, what: str = "file") -> dict:
    """A JSON object from ``path``; a damaged or non-object file is a ValueError naming it."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a valid {what} (JSON error: {err})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a valid {what} (expected a JSON object, got "
                         f"{type(data).__name__})")
    return data


# ----------------------------------------------------------------------------- marker


def write_marker(folder: Path, marker: str, atomic: bool = True) -> None:
    """Mark ``folder`` as written by the zoo.

    Args:
        folder: the directory.
        marker: `RUN_MARKER` or `EXPORT_MARKER`.
        atomic: False for a directory not yet in place (its rename is the commit).
    """
    from zoo import __version__

    body = {"written_by": "edge-rnn-zoo", "version": __version__}
    if atomic:
        write_json_atomic(Path(folder) / marker, body)
    else:
        (Path(folder) / marker).write_text(json.dumps(body) + "\n")


def has_marker(folder: Path, marker: str) -> bool:
    return (Path(folder) / marker).is_file()


# ----------------------------------------------------------------------------- lock


def _lock_path(folder: Path) -> Path:
    folder = Path(folder).absolute()
    return folder.parent / f".{folder.name}.lock"


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (OSError, ValueError):
        info = {}
    if not info:
        return "another process"
    return (f"pid {info.get('pid')} on {info.get('host')} since {info.get('since')} "
            f"(command: {info.get('command')})")


@contextmanager
def exclusive(folder: Path, what: str = "run directory"):
    """Hold an exclusive lock on ``folder`` (which need not exist yet) for the ``with`` block.

    The lock is an ``fcntl.flock`` on ``.<name>.lock`` beside ``folder``; the kernel drops it when
    the process ends, killed or not, so a stale lock never blocks the next command.

    Args:
        folder: the directory to lock.
        what: how the error message names it (``"run directory"``, ``"export directory"``).

    Raises:
        DirectoryInUseError: another process holds the lock; the message names it.

    Example:

    ```python
    with exclusive(Path("runs/har2-irnn")):
        ...  # nobody else writes runs/har2-irnn meanwhile
    ```
    """
    import fcntl

    path = _lock_path(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise DirectoryInUseError(
                f"{what} {folder} is in use by {_holder(fd)}; wait for it to finish or choose "
                f"another --out (lock file {path})") from None
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "since": time.strftime("%Y-%m-%d %H:%M:%S"), "command": " ".join(sys.argv)}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


# ----------------------------------------------------------------------------- replace


def staging_path(folder: Path, kind: str = "new") -> Path:
    folder = Path(folder)
    return folder.with_name(f".{folder.name}.{kind}")


def recover_swap(folder: Path) -> None:
    """Finish or undo a `swap_in` that a kill interrupted (call it holding the lock).

    The swap renames ``folder`` aside to ``.<name>.old``, then the new directory into place,
    then deletes the aside copy. If ``folder`` is missing but the aside copy exists, the kill
    came between the two renames: the old directory goes back. If both exist, the swap had
    finished: the aside copy (the replaced directory) goes.
    """
    folder = Path(folder)
    aside = staging_path(folder, "old")
    if not aside.exists():
        return
    if folder.exists():
        shutil.rmtree(aside)
    else:
        os.rename(aside, folder)


def swap_in(new: Path, folder: Path) -> None:
    """Replace ``folder`` by ``new`` (both in the same parent directory), old one deleted last."""
    new, folder = Path(new), Path(folder)
    aside = staging_path(folder, "old")
    if folder.exists():
        os.rename(folder, aside)
        crash_point("swap: old directory moved aside")
    os.rename(new, folder)
    crash_point("swap: new directory in place")
    shutil.rmtree(aside, ignore_errors=True)
