"""How the zoo keeps what it writes on disk whole and never touches what it did not write.

One module, below the trainer and the exporter, for both run and export directories (and any
other folder the zoo replaces):

* **Ownership.** A directory the zoo writes holds a marker file (``.zoo-run`` or
  ``.zoo-export``, a small JSON body). `owned` is the one test of "the zoo may replace or delete
  this path": a real directory (not a symlink) with a marker. Everything else, including
  folders with the zoo's own hidden names (``.X.old``, ``.X.new``, ``.X.creating``,
  ``.X.partial-PID``), is the user's and is never deleted or moved.
* **Lock** (`zoo.core.locking`, re-exported here). `exclusive` takes an ``fcntl.flock`` on
  ``.<name>.lock`` beside the *real* directory (symlinks resolved, so two spellings of one folder
  share one lock) for a writer; the error for a second process names the holder's pid, host and
  command. `shared` takes it shared for a reader of a run (export, eval, analyze, ship,
  ``--init-from``, a teacher), which a writer then cannot replace meanwhile; a reader is refused
  while a writer holds it. A lock file is the zoo's only when it carries its ``written_by``
  marker (or is empty): a user's file of that name is refused.
* **Atomic files.** `write_bytes_atomic` writes to a temporary name in the same folder, flushes
  it and renames it over the target, so a kill leaves the old file or the new one.
* **Staging and swap.** A replacement is built in a staging directory beside the target
  (`make_staging`) and exchanged for it at the end (`swap_in`); the old directory is moved
  aside under ``.<name>.old`` with an ``.zoo-aside`` tag first, so that `recover_swap` can tell
  an interrupted swap of its own from a user's folder of that name.
* **Removal.** `remove_owned` renames a directory of the zoo's to a per-process name
  (``.<name>.removing-PID``) before deleting it, and deletes its marker last, so a kill during
  the removal leaves a folder the next writer sweeps, never a half-deleted one under a name a
  user might use (which would then be refused as a user's).
* **Replacing.** `replacing` is the one way a writer (``zoo train --overwrite``, ``zoo
  export``, ``--form c``, ``zoo ship``) replaces a directory: lock, repair an interrupted swap,
  check the target (`check_out`), sweep the staging killed processes left, stage, swap in. A
  full disk inside it is one `StorageError` naming the path.

`crash_point` marks each write boundary; it does nothing, and the reliability tests replace it
to simulate a kill at every one of them.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

# The lock lives in its own module (this one would pass the project's 600 lines); it is part
# of this one.
from zoo.core import __version__
from zoo.core.locking import (WRITTEN_BY, BeingWrittenError, DirectoryInUseError,  # noqa: F401
                                  StorageError, exclusive, is_zoo_lock, lock_path, shared_lock)

RUN_MARKER = ".zoo-run"
EXPORT_MARKER = ".zoo-export"
# A shipped tag's folder while `zoo ship` builds or replaces it (a shipped tag carries none: a
# wheel drops hidden files; its card.json names it instead).
PRETRAINED_MARKER = ".zoo-pretrained"
MARKERS = (RUN_MARKER, EXPORT_MARKER, PRETRAINED_MARKER)
# Written into a directory just before `swap_in` moves it aside: only a ``.<name>.old`` with
# this tag (and a marker) is the zoo's, to be restored or deleted by `recover_swap`.
ASIDE_TAG = ".zoo-aside"


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
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except OSError:  # a full disk: the half-written temporary file goes, the old file stays
        tmp.unlink(missing_ok=True)
        raise
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
    write_json_atomic(Path(folder) / marker, {"written_by": WRITTEN_BY,
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
    names = {ASIDE_TAG, *(m for marker in MARKERS for m in (marker, f".{marker}.tmp"))}
    return (folder.is_dir() and not folder.is_symlink()
            and all(p.name in names for p in folder.iterdir()))


def _empty_dir(folder: Path) -> bool:
    return folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir())


def remove_owned(folder: Path) -> bool:
    """Delete ``folder`` if the zoo owns it (it holds a marker); True when it is gone. Anything
    else, an empty folder included (a user may have made it), is left as it is.

    A kill during the removal leaves nothing a later command would take for a user's folder:
    ``folder`` is first renamed to ``.<name>.removing-PID`` (unless its name is already one of
    the per-process names, `STAGING_PREFIXES`) and its marker is deleted last (`_delete`), so
    what a kill leaves is marked, or empty, under a name `remove_stale_partials` sweeps."""
    folder = Path(folder)
    if not os.path.lexists(folder):
        return True
    if owned(folder):
        _delete(_renamed_for_removal(folder))
        return True
    return False


def _base_name(folder: Path) -> str:
    """The directory ``folder`` is one of the zoo's hidden names of: ``X`` for ``.X.old``,
    ``.X.new`` and ``.X.creating``, else ``folder``'s own name."""
    name = folder.name
    for kind in ("old", "new", "creating"):
        if name.startswith(".") and name.endswith(f".{kind}") and len(name) > len(kind) + 2:
            return name[1:-len(kind) - 1]
    return name


def _per_process(folder: Path) -> bool:
    """Whether ``folder`` has a per-process staging name, ``.<name>.<prefix>PID``."""
    head, _, pid = folder.name.rpartition("-")
    return (folder.name.startswith(".") and pid.isdigit()
            and any(head.endswith("." + prefix[:-1]) for prefix in STAGING_PREFIXES))


def _renamed_for_removal(folder: Path) -> Path:
    """``folder``, renamed to ``.<X>.removing-PID`` beside it (X: `_base_name`) unless its
    name is per-process already; one this process left there (killed in a removal) goes
    first."""
    if _per_process(folder):
        return folder
    trash = folder.with_name(f".{_base_name(folder)}.removing-{os.getpid()}")
    if os.path.lexists(trash):
        if not _sweepable(trash):  # a user's folder, by chance named with this pid
            raise StorageError(foreign_message(trash))
        _delete(trash)
    os.rename(folder, trash)
    crash_point("removal: renamed")
    return trash


def _delete(folder: Path) -> None:
    """Delete the directory ``folder``, its markers (and swap tag) last: a kill on the way
    leaves it marked until nothing else is left in it."""
    keep = {ASIDE_TAG, *MARKERS}
    for child in list(folder.iterdir()):
        if child.name in keep:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
        crash_point("removal: one entry deleted")
    crash_point("removal: only the markers left")
    for name in (ASIDE_TAG, *MARKERS):
        (folder / name).unlink(missing_ok=True)
    folder.rmdir()


def _sweepable(folder: Path) -> bool:
    """A per-process folder the zoo may delete once its process is gone: marked, swap-tagged
    (a removal killed before its marker went) or an empty shell."""
    return owned(folder) or _empty_shell(folder) or (
        folder.is_dir() and not folder.is_symlink() and (folder / ASIDE_TAG).is_file())


def foreign_message(path: Path) -> str:
    """The error for a user's folder where the zoo needs one of its own hidden names."""
    return (f"{path} exists and was not left by the zoo (no {' / '.join(MARKERS)} marker); "
            "the zoo needs that name for its staging: move it away (nothing was changed)")


def shared(folder: Path, what: str = "run directory"):
    """The reader's lock on ``folder`` (`zoo.core.locking.shared_lock`, a context manager):
    refused while a writer holds it, a writer refused while it is held. Its lock file is made
    only for a directory a writer may replace, one of the zoo's (`owned`): no file appears
    beside a shipped tag or a folder of the user's, which no writer of the zoo's replaces."""
    return shared_lock(folder, what, create=owned(folder))


def check_not_being_written(folder: Path, what: str = "run directory") -> None:
    """`shared`'s refusal alone (the lock taken and let go at once): a command's cheap first
    check, so that a run being trained is not called "unfinished" while its writer runs."""
    with shared(folder, what):
        pass


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


# ----------------------------------------------------------------------------- staging


def staging_path(folder: Path, kind: str = "new") -> Path:
    """``.<name>.<kind>`` beside ``folder``: where its replacement is built (same filesystem,
    so the final rename is atomic)."""
    folder = Path(folder)
    return folder.with_name(f".{folder.name}.{kind}")


def make_staging(folder: Path, kind: str, marker: str) -> Path:
    """A new, empty staging directory ``.<name>.<kind>`` beside ``folder``, marked as the
    zoo's from the start (so a kill leaves something `remove_owned` may clear). One the zoo
    left there is replaced; a user's folder of that name (an empty one included) raises
    StorageError, untouched.

    The directory appears under its name with its marker already whole: it is made as
    ``.<name>.making-PID`` (a name `remove_stale_partials` sweeps once that pid is gone),
    marked, then renamed, so no kill leaves an unmarked folder under a name a user might use.
    """
    stage = staging_path(folder, kind)
    if not remove_owned(stage):
        raise StorageError(foreign_message(stage))
    remove_stale_partials(folder, ("making-",))  # ours included: a staging the zoo left
    making = staging_path(folder, f"making-{os.getpid()}")
    if os.path.lexists(making):  # a user's folder, by chance named with this pid
        raise StorageError(foreign_message(making))
    making.parent.mkdir(parents=True, exist_ok=True)
    making.mkdir()
    write_marker(making, marker)
    crash_point("staging: marked, not renamed")
    os.rename(making, stage)
    return stage


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


# The per-process staging names, ``.<name>.<prefix>PID``: the exporter's and every writer's
# through `replacing` (``partial-``), `make_staging`'s (``making-``), `remove_owned`'s
# (``removing-``) and the C export's before it used `replacing` (``c-partial-``, still swept).
STAGING_PREFIXES = ("partial-", "making-", "removing-", "c-partial-")


def remove_stale_partials(folder: Path, prefixes: tuple = STAGING_PREFIXES) -> list[Path]:
    """Delete the ``.<name>.<prefix>PID`` staging directories of ``folder`` (`STAGING_PREFIXES`)
    that a killed process left (its pid no longer runs, or it is ours), if the zoo owns them (or,
    pid-named, they are a shell it was killed in before its marker was whole). Call it holding
    ``folder``'s lock. Returns what was removed."""
    folder = Path(folder)
    removed = []
    for prefix in prefixes:
        for stage in folder.parent.glob(f".{folder.name}.{prefix}*"):
            pid = stage.name[len(f".{folder.name}.{prefix}"):]
            if not pid.isdigit() or (int(pid) != os.getpid() and _pid_alive(int(pid))):
                continue
            if _sweepable(stage):
                _delete(stage)
                removed.append(stage)
    return removed


# ----------------------------------------------------------------------------- swap


def _aside(folder: Path) -> Path:
    return staging_path(folder, "old")


def _is_our_aside(aside: Path) -> bool:
    return owned(aside) and (aside / ASIDE_TAG).is_file()


def _half_removed(aside: Path, folder: Path) -> bool:
    """A ``.<name>.old`` the zoo was deleting when it was killed, once ``folder`` was back in
    place: a real directory with the marker or the swap tag, not both (the removal of earlier
    versions deleted them in any order)."""
    return (os.path.lexists(folder) and aside.is_dir() and not aside.is_symlink()
            and (owned(aside) or (aside / ASIDE_TAG).is_file()))


def check_swap_free(folder: Path) -> None:
    """Raise StorageError if a user's folder holds the name `swap_in` needs (``.<name>.old``):
    a command checks this before its work, not after an hour of training."""
    aside = _aside(folder)
    if not os.path.lexists(aside) or _is_our_aside(aside) or _half_removed(aside, folder):
        return
    if owned(aside):  # marked, not tagged, and nothing in its place: the zoo cannot tell
        raise StorageError(f"{aside} holds the zoo's marker but not its swap tag "
                           f"({ASIDE_TAG}), and {folder} is missing: it is not a directory the "
                           "zoo moved aside, so it is not put back or deleted; move it away "
                           "(nothing was changed)")
    raise StorageError(foreign_message(aside))


def recover_swap(folder: Path) -> None:
    """Finish or undo a `swap_in` that a kill interrupted (call it holding the lock).

    The swap tags ``folder`` and renames it aside to ``.<name>.old``, renames the new directory
    into place, then deletes the aside copy (`remove_owned`'s way). If ``folder`` is missing but
    the aside copy exists, the kill came between the two renames: the old directory goes back.
    If both exist, the swap had finished: the aside copy (the replaced directory) goes, also
    when a kill inside an earlier version's removal left it half deleted (`_half_removed`). A
    ``.<name>.old`` without the zoo's marker and tag is a user's folder and is left alone.
    """
    folder = Path(folder)
    aside = _aside(folder)
    if _half_removed(aside, folder):
        _delete(_renamed_for_removal(aside))
    elif _is_our_aside(aside) and not os.path.lexists(folder):
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
    if _is_our_aside(aside):
        try:
            _delete(_renamed_for_removal(aside))
        except OSError:  # the swap is done; what is left is swept by the next writer
            pass


def missing_message(folder: Path) -> str | None:
    """For a reader that finds ``folder`` missing: how to repair an interrupted swap, when the
    previous directory waits aside (``.<name>.old`` with the zoo's tag), else None."""
    folder = Path(folder)
    aside = _aside(folder)
    if os.path.lexists(folder) or not _is_our_aside(aside):
        return None
    return (f"{folder} is missing because replacing it was interrupted (killed); the previous "
            f"directory is kept in {aside}. The next zoo command that writes {folder} puts it "
            f"back, or do it now: mv {aside} {folder}")


# ----------------------------------------------------------------------------- replacing


def check_out(out: Path, marker: str, overwrite: bool, *, writer: str, what: str,
              error: type = StorageError, ours=None, keep=None, option: str = "--out",
              foreign: str | None = None) -> None:
    """Refuse an ``out`` that may not be written, from what is on disk (reads only: run before
    the lock, so a refused ``out`` gets no lock file, and again holding it).

    Args:
        out: the (real) target directory.
        marker: the marker that makes an existing ``out`` the zoo's.
        overwrite: whether a non-empty ``out`` may be replaced.
        writer: the command, for messages (``"zoo export"``).
        what: what ``out`` is, for messages (``"export directory"``).
        error: the StorageError subclass raised.
        ours: ``ours(out)``: whether the zoo may replace it (default: it holds ``marker``).
        keep: ``keep(out)``, called for a non-empty ``out`` without ``overwrite`` (raising if
            it cannot be continued); None: refused as existing.
        option: the option that named ``out``, for messages.
        foreign: the message for a non-empty ``out`` the zoo may not replace (default: says
            that ``--overwrite`` replaces only the zoo's own ``what``).
    """
    out = Path(out)
    if os.path.lexists(out) and not out.is_dir():
        raise error(f"{option} {out} is a file, not a directory; choose another {option}")
    if not out.is_dir() or not any(out.iterdir()):
        return
    if not overwrite:
        if keep is None:
            raise error(f"{out} already exists; choose another {option} or pass --overwrite")
        keep(out)
        return
    if not (ours(out) if ours else owned(out, marker)):
        raise error(foreign or f"{out} was not written by `{writer}` (no {marker} marker); "
                    f"--overwrite replaces only the zoo's own {what}s. Choose another "
                    f"{option}, or move it away yourself.")
    check_swap_free(out)


class Replacement:
    """What `replacing` yields: the locked ``target``, a staging directory on demand
    (`stage`), and the swap (`swap_in`)."""

    def __init__(self, target: Path, marker: str):
        self.target, self.marker = Path(target), marker
        self.staging: Path | None = None

    def stage(self) -> Path:
        """A new, marked, empty ``.<name>.partial-PID`` beside the target: swept by the next
        writer once this process is gone, removed at once when the ``with`` block fails."""
        self.staging = make_staging(self.target, f"partial-{os.getpid()}", self.marker)
        return self.staging

    def swap_in(self, new: Path | None = None) -> None:
        """Replace the target by ``new`` (default: `stage`'s directory), old one deleted last."""
        swap_in(Path(new) if new else self.staging, self.target, self.marker)

    def discard(self) -> None:
        """Remove the staging directory, if it is still there (the block failed)."""
        if self.staging is not None and os.path.lexists(self.staging):
            remove_owned(self.staging)


@contextmanager
def replacing(target: Path, marker: str, what: str = "export directory", check=None,
              option: str = "--out"):
    """The one way a writer replaces (or creates) the directory ``target``.

    Before the lock, ``check(target)`` (if given) refuses what may not be written, from what is
    on disk, so a refused target gets no lock file. Then, holding ``target``'s lock (``option``:
    the flag that picks another target, named when it is held by another process): an
    interrupted swap is finished or undone (`recover_swap`), ``check`` runs again, the staging
    that killed processes left is swept (`remove_stale_partials`), and the block gets a
    `Replacement`. A failing block removes the staging it made; a full disk in it is one
    StorageError naming the path (the files written before stay as they were).

    Example:

    ```python
    with replacing(out, EXPORT_MARKER, check=check) as replacement:
        stage = replacement.stage()
        ...  # write the new directory into stage
        replacement.swap_in()
    ```
    """
    target = Path(target)
    if check is not None:
        check(target)
    with disk_full_is_one_line(target, what), exclusive(target, what, option):
        recover_swap(target)
        if check is not None:
            check(target)
        remove_stale_partials(target)
        replacement = Replacement(target, marker)
        try:
            yield replacement
        except BaseException:
            replacement.discard()
            raise


DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


@contextmanager
def disk_full_is_one_line(target: Path, what: str = "directory"):
    """A full disk (ENOSPC, or a quota) in the block becomes StorageError naming the file."""
    try:
        yield
    except OSError as err:
        if err.errno not in DISK_FULL:
            raise
        where = f" writing {err.filename}" if err.filename else ""
        raise StorageError(f"no space left on the device{where} ({what} {target}); free some "
                           "space and run the same command again (the files written before "
                           "stay as they were)") from None
