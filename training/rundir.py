"""The run directory ``zoo train`` writes: the one place its file names are used (`RunDirectory`).

How it is kept whole (marker, lock, atomic files, staging and swap) is `zoo.core.storage`,
shared with export directories; reading a finished run's model is `zoo.training.runs`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.core import storage
from zoo.core.storage import RUN_MARKER, StorageError, owned

if TYPE_CHECKING:
    from zoo.training.run_record import RunRecord

__all__ = ["RunDirectory", "RunDirError", "RUN_MARKER", "check_out", "check_out_argument",
           "check_run_dir_argument"]


class RunDirError(StorageError):
    """The run directory cannot be used as asked (finished, different settings, not a run)."""


@dataclass(frozen=True)
class RunDirectory:
    """The files of a ``zoo train`` run directory: the one place their names are written.

    ::

        config.yaml          fully resolved settings (model and task options included); its
                             ``data_source_resolved`` says where the run found its data
        normalization.json   per-feature mean / std of the training split
        history.csv          one row per epoch
        model.keras          the final model (best validation epoch when early stopping is on)
        metrics.json         test accuracy and loss, parameters, time, epochs, hardware, versions
                             (written last: its presence marks the run finished)
        checkpoints/         only while the run is unfinished
        tensorboard/         Keras's TensorBoard logs

    Example:
        >>> run = RunDirectory("runs/har2-sirnn")
        >>> run.metrics.name
        'metrics.json'
    """

    root: Path

    def __post_init__(self):
        object.__setattr__(self, "root", Path(self.root))

    config = property(lambda self: self.root / "config.yaml")
    normalization = property(lambda self: self.root / "normalization.json")
    history = property(lambda self: self.root / "history.csv")
    model = property(lambda self: self.root / "model.keras")
    metrics = property(lambda self: self.root / "metrics.json")
    checkpoints = property(lambda self: self.root / "checkpoints")
    tensorboard = property(lambda self: self.root / "tensorboard")

    FINAL_FILES = ("config.yaml", "normalization.json", "history.csv", "model.keras",
                   "metrics.json")

    def is_finished(self) -> bool:
        return self.metrics.is_file()

    def check_finished(self) -> None:
        """Raise FileNotFoundError (a file is missing) or ValueError (the run is unfinished, or
        `storage.BeingWrittenError`: ``zoo train`` is writing it now) unless this is a finished
        run; cheap (no file is parsed), for a command's first check."""
        if not self.root.is_dir():
            raise FileNotFoundError(storage.missing_message(self.root)
                                    or f"{self.root} is not a finished run: no such directory")
        # A run `zoo train` is training or replacing is named so, not called unfinished.
        storage.check_not_being_written(self.root)
        missing = [p.name for p in (self.config, self.model, self.normalization)
                   if not p.is_file()]
        if missing:
            raise FileNotFoundError(f"{self.root} is not a finished run: missing "
                                    f"{', '.join(missing)}")
        if not self.is_finished():
            raise ValueError(f"{self.root} is an unfinished run (no {self.metrics.name}): finish "
                             "it with the same `zoo train` command first")

    def record(self) -> "RunRecord":
        """The run's record (`zoo.training.run_record.RunRecord`): ``config.yaml`` and, once
        the run is finished, ``metrics.json``, typed and checked. The one reader of both files:
        a command reads it once and passes it on. A damaged or foreign file raises ValueError
        naming it and the key at fault; a missing config.yaml, FileNotFoundError."""
        from zoo.training.run_record import read_run_record

        return read_run_record(self.root, self.config,
                               self.metrics if self.is_finished() else None)

    def recorded_data_source(self, record: "RunRecord | None" = None) -> str | None:
        """Where the run found its data, as recorded (``config.yaml``'s ``data_source_resolved``;
        runs from before it recorded the place only in ``metrics.json``). Generated tasks record
        ``generated ...``. ``record``: the run's record when the caller has read it already."""
        if record is None and not self.config.is_file():
            return None
        record = record or self.record()
        source = record.config.data_source
        if source is None and record.metrics is not None:
            source = record.metrics.data.source
        return None if source is None else str(source)

    def data_source(self, record: "RunRecord | None" = None) -> str | None:
        """The recorded data location if it still exists (else None: the task's default
        location, ``$ZOO_DATA_DIR``, or its download)."""
        source = self.recorded_data_source(record)
        return source if source and Path(source).exists() else None


# ----------------------------------------------------------------------------- arguments


def check_run_dir_argument(args) -> None:
    """A subcommand's ``run_dir`` argument must be a finished run: the check `zoo eval`, `zoo
    export` and `zoo analyze` run before Keras loads (`RunDirectory.check_finished`)."""
    RunDirectory(args.run_dir).check_finished()


def check_out(run_dir: Path, overwrite: bool) -> None:
    """Refuse a ``run_dir`` ``zoo train --out`` may not use, from what is on disk (reads only:
    run before the lock, so a refused ``--out`` leaves no lock file, and again holding it). Needs
    no Keras, so a command can run it before loading TensorFlow. `storage.check_out`, where a
    run directory without ``overwrite`` may also be an unfinished run to resume."""
    storage.check_out(Path(run_dir), RUN_MARKER, overwrite, writer="zoo train",
                      what="run directory", error=RunDirError, keep=_check_resumable)


def _check_resumable(run_dir: Path) -> None:
    """A non-empty ``--out`` without ``--overwrite`` must hold an unfinished run to resume."""
    ours = owned(run_dir, RUN_MARKER)
    legacy = not ours and RunDirectory(run_dir).config.is_file()  # from before the marker
    if not (ours or legacy):
        raise RunDirError(f"{run_dir} is not empty and holds no run; choose another --out.")
    if RunDirectory(run_dir).is_finished():
        raise RunDirError(f"{run_dir} holds a finished run; choose another --out, or pass "
                          "--overwrite to replace it (only once the new run has finished).")


def check_out_argument(out, overwrite: bool) -> None:
    """`check_out` for a command's usage check (``zoo train``'s ``check_train``, run before Keras
    loads): the refusal of a finished run or a user's folder as ValueError, which the dispatcher
    answers in one line, in well under a second instead of after TensorFlow's import."""
    from zoo.core.storage import real_target

    check_no_dangling_link(Path(out))
    try:
        check_out(real_target(Path(out)), overwrite)
    except StorageError as err:
        raise ValueError(str(err)) from None


def move_aside_extras(run_dir: Path) -> tuple[Path, list[str]] | None:
    """Before ``zoo train --overwrite`` swaps a new run in: whatever ``run_dir`` holds besides
    the run itself (its exports, such as the default ``export-step-int8``, and any file of the
    user's) is moved to a new folder ``RUN.before-overwrite`` beside it (``-2``, ``-3``...
    when taken), so that the swap deletes only the run's own files and no export made from the
    old model sits beside the new one. Returns (that folder, the names moved), or None."""
    run_dir = Path(run_dir)
    own = {*RunDirectory.FINAL_FILES, "checkpoints", "tensorboard", RUN_MARKER, storage.ASIDE_TAG}
    extras = sorted(p.name for p in run_dir.iterdir() if p.name not in own
                    and not (p.name.startswith(".") and p.name.endswith(".tmp"))
                    and not storage.is_zoo_lock(p))  # the zoo's bookkeeping goes with the run
    if not extras:
        return None
    aside = run_dir.with_name(f"{run_dir.name}.before-overwrite")
    n = 1
    while os.path.lexists(aside):
        n += 1
        aside = run_dir.with_name(f"{run_dir.name}.before-overwrite-{n}")
    aside.mkdir()
    for name in extras:
        os.rename(run_dir / name, aside / name)
        storage.crash_point(f"before-overwrite: {name} moved")
    return aside, extras


def check_no_dangling_link(out: Path, option: str = "--out") -> None:
    """ValueError when ``out`` or a folder above it is a symlink to nothing: following it would
    create the link's target and its parents, somewhere the user never named."""
    for path in (out, *out.parents):
        if path.is_symlink() and not path.exists():
            raise ValueError(f"{option} {out}: {path} is a symlink to {os.readlink(path)}, which "
                             f"does not exist; create that folder yourself, or choose another "
                             f"{option}")


def check_out_not_in_data(run_dir: Path, data_dir) -> None:
    """A run directory inside the data folder would be read as data (a CSV task took it for an
    empty class folder): refused, naming both."""
    if data_dir is None or not Path(data_dir).expanduser().is_dir():
        return
    data = Path(data_dir).expanduser().resolve()
    if run_dir.resolve() == data or data in run_dir.resolve().parents:
        raise ValueError(f"--out {run_dir} is inside the data folder {data}, where the run's "
                         "files would be read as data; choose an --out outside it")
