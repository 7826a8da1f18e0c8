"""How the zoo keeps what it writes on disk whole and never touches what it did not write.

One module, below the trainer and the exporter, for both run and export directories (and any
other folder the zoo replaces):

* **Ownership.** A directory the zoo writes holds a marker file (``.zoo-run`` or
  ``.zoo-export``, a small JSON body). `owned` is the one test of "the zoo may replace or delete
  this path": a real directory (not a symlink) with a marker. Everything else, including
  folders with the zoo's own hidden names (``.X.old``, ``.X.new``, ``.X.creating``,
  ``.X.partial-PID``), is the user's and is never deleted or moved.
* **Exclusive lock.** `exclusive` takes an ``fcntl.flock`` on ``.<name>.lock`` beside the
  *real* directory (symlinks resolved, so two spellings of one folder share one lock); the error
  for a second process names the holder's pid, host and command.
* **Atomic files.** `write_bytes_atomic` writes to a temporary name in the same folder, flushes
  it and renames it over the target, so a kill leaves the old file or the new one.
* **Staging and swap.** A replacement is built in a staging directory beside the target
  (`make_staging`) and exchanged for it at the end (`swap_in`); the old directory is moved
  aside under ``.<name>.old`` with an ``.zoo-aside`` tag first, so that `recover_swap` can tell
  an interrupted swap of its own from a user's folder of that name.

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
MARKERS = (RUN_MARKER, EXPORT_MARKER)
# Written into a directory just before `swap_in` moves it aside: only a ``.<name>.old`` with
# this tag (and a marker) is the zoo's, to be restored or deleted by `recover_swap`.
ASIDE_TAG = ".zoo-aside"


class StorageError(RuntimeError):
    """A directory cannot be used as asked (in use, not the zoo's, a name it cannot take)."""


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


# ----------------------------------------------------------------------------- ownership


def write_marker(folder: Path, marker: str) -> None:
    """Mark ``folder`` as written by the zoo (atomically: a kill leaves no half marker).

    Args:
        folder: the directory.
        marker: `RUN_MARKER` or `EXPORT_MARKER`.
    """
    from zoo import __version__

    write_json_atomic(Path(folder) / marker, {"written_by": "edge-rnn-zoo",
                                              "version": __version__}, label=marker)


def has_marker(folder: Path, marker: str) -> bool:
    return (Path(folder) / marker).is_file()


def owned(folder: Path, marker: str | None = None) -> bool:
    """Whether the zoo may replace or delete ``folder``: a real directory (a symlink is the
    user's, whatever it points to) holding ``marker`` (any zoo marker when None)."""
    folder = Path(folder)
    if folder.is_symlink() or not folder.is_dir():
        return False
    return any(has_marker(folder, m) for m in ((marker,) if marker else MARKERS))


def _empty_shell(folder: Path) -> bool:
    """A directory the zoo made and was killed in before its marker was whole: empty, or only
    a marker (or its temporary file). Removing it loses nothing."""
    names = {m for marker in MARKERS for m in (marker, f".{marker}.tmp")}
    return (folder.is_dir() and not folder.is_symlink()
            and all(p.name in names for p in folder.iterdir()))


def _empty_dir(folder: Path) -> bool:
    return folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir())


def remove_owned(folder: Path) -> bool:
    """Delete ``folder`` if the zoo owns it (or it is an empty shell); True when it is gone.
    Anything else is left as it is."""
    folder = Path(folder)
    if not os.path.lexists(folder):
        return True
    if owned(folder) or _empty_shell(folder):
        shutil.rmtree(folder)
        return True
    return False


def foreign_message(path: Path) -> str:
    """The error for a user's folder where the zoo needs one of its own hidden names."""
    return (f"{path} exists and was not left by the zoo (no {' / '.join(MARKERS)} marker); "
            "the zoo needs that name for its staging: move it away (nothing was changed)")


# ----------------------------------------------------------------------------- where


def real_target(folder: Path, option: str = "--out") -> Path:
    """``folder`` with symlinks resolved: the directory the zoo locks, builds beside and swaps.

    A directory the zoo creates or replaces is renamed into place, so it needs a name of its
    own: ``.``, ``..``, the filesystem root and any folder that holds the current directory are
    refused (StorageError naming ``option``).
    """
    given = Path(folder)
    real = given.resolve()
    cwd = Path.cwd().resolve()
    if given.name in ("", ".", "..") or real == cwd or real in cwd.parents:
        raise StorageError(f"{option} {given}: the current directory (or one holding it) cannot "
                           "be an output directory, because the zoo creates and replaces it by "
                           f"renaming; name a folder instead, e.g. {option} runs/my-run")
    return real


# ----------------------------------------------------------------------------- lock


def lock_path(folder: Path) -> Path:
    folder = Path(folder).resolve()
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

    The lock is an ``fcntl.flock`` on ``.<name>.lock`` beside the real ``folder`` (symlinks
    resolved: ``alias -> runs/x`` and ``runs/x`` are one directory and get one lock); the kernel
    drops it when the process ends, killed or not, so a stale lock never blocks the next command.

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

    path = lock_path(folder)
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


# ----------------------------------------------------------------------------- staging


def staging_path(folder: Path, kind: str = "new") -> Path:
    """``.<name>.<kind>`` beside ``folder``: where its replacement is built (same filesystem,
    so the final rename is atomic)."""
    folder = Path(folder)
    return folder.with_name(f".{folder.name}.{kind}")


def make_staging(folder: Path, kind: str, marker: str) -> Path:
    """A new, empty staging directory ``.<name>.<kind>`` beside ``folder``, marked as the
    zoo's from the start (so a kill leaves something `remove_owned` may clear). One the zoo
    left there is replaced; a user's folder of that name raises StorageError, untouched."""
    stage = staging_path(folder, kind)
    if not remove_owned(stage):
        raise StorageError(foreign_message(stage))
    stage.parent.mkdir(parents=True, exist_ok=True)
    stage.mkdir()
    write_marker(stage, marker)
    return stage


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def remove_stale_partials(folder: Path, prefix: str = "partial-") -> list[Path]:
    """Delete the ``.<name>.<prefix>PID`` staging directories of ``folder`` that a killed
    process left (its pid no longer runs, or it is ours), if the zoo owns them. Call it holding
    ``folder``'s lock. Returns what was removed."""
    folder = Path(folder)
    removed = []
    for stage in folder.parent.glob(f".{folder.name}.{prefix}*"):
        pid = stage.name.rsplit(prefix, 1)[-1]
        if not pid.isdigit() or (int(pid) != os.getpid() and _pid_alive(int(pid))):
            continue
        if (owned(stage) or _empty_shell(stage)) and remove_owned(stage):
            removed.append(stage)
    return removed


# ----------------------------------------------------------------------------- swap


def _aside(folder: Path) -> Path:
    return staging_path(folder, "old")


def _is_our_aside(aside: Path) -> bool:
    return owned(aside) and (aside / ASIDE_TAG).is_file()


def check_swap_free(folder: Path) -> None:
    """Raise StorageError if a user's folder holds the name `swap_in` needs (``.<name>.old``):
    a command checks this before its work, not after an hour of training."""
    aside = _aside(folder)
    if os.path.lexists(aside) and not _is_our_aside(aside):
        raise StorageError(foreign_message(aside))


def recover_swap(folder: Path) -> None:
    """Finish or undo a `swap_in` that a kill interrupted (call it holding the lock).

    The swap tags ``folder`` and renames it aside to ``.<name>.old``, renames the new directory
    into place, then deletes the aside copy. If ``folder`` is missing but the aside copy exists,
    the kill came between the two renames: the old directory goes back. If both exist, the swap
    had finished: the aside copy (the replaced directory) goes. A ``.<name>.old`` without the
    zoo's marker and tag is a user's folder and is left alone.
    """
    folder = Path(folder)
    aside = _aside(folder)
    if not _is_our_aside(aside):
        return
    if os.path.lexists(folder):
        shutil.rmtree(aside)
    else:
        os.rename(aside, folder)
        (folder / ASIDE_TAG).unlink(missing_ok=True)


def swap_in(new: Path, folder: Path, marker: str | None = None) -> None:
    """Replace ``folder`` by ``new`` (both in the same parent directory), old one deleted last.

    ``folder``, when it exists, must be the zoo's (holding ``marker``; any zoo marker when
    None) or empty; callers check that before their work. Otherwise, or when a user's
    ``.<name>.old`` is in the way, StorageError is raised and nothing moves.
    """
    new, folder = Path(new), Path(folder)
    aside = _aside(folder)
    recover_swap(folder)
    check_swap_free(folder)
    if owned(folder, marker):
        write_text_atomic(folder / ASIDE_TAG, f"{os.getpid()}\n", label="swap tag")
        os.rename(folder, aside)
        crash_point("swap: old directory moved aside")
    elif os.path.lexists(folder) and not _empty_dir(folder):
        raise StorageError(f"{folder} was not written by the zoo; it is not replaced")
    os.rename(new, folder)  # over an empty directory, if one is there: atomic as well
    crash_point("swap: new directory in place")
    shutil.rmtree(aside, ignore_errors=True)
