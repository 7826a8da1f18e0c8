"""Where `zoo.training.trainer.train` trains: the run directory, or its staging twin with
``--overwrite``, and the checkpoint of an unfinished run of the same settings to resume."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from zoo.training import callbacks as cb
from zoo.training import qat_stage, rundir
from zoo.core import storage
from zoo.training.config import TrainConfig
from zoo.training.rundir import RunDirError
from zoo.core.storage import RUN_MARKER

@dataclasses.dataclass(frozen=True)
class WorkDir:
    """Where `prepare_run_dir` says to train: ``path`` (the run directory or its staging twin),
    the checkpoint to resume (`callbacks.Checkpoint`) or None, whether this call ``created`` the
    directory (then a failure before any epoch is committed undoes that), whether an empty
    folder was there before (``found_empty``: the undo leaves it empty, not gone) and, for a run
    resumed, what its config.yaml recorded when it started (``saved``, its
    `zoo.training.run_record.RunConfig`, read once here for the trainer's resume checks)."""

    path: Path
    checkpoint: cb.Checkpoint | None = None
    created: bool = False
    found_empty: bool = False
    saved: Any = None


def prepare_run_dir(run_dir: Path, config: TrainConfig, overwrite: bool) -> WorkDir:
    """Where to train and what to resume (`WorkDir`). Call it inside `storage.replacing`
    (which holds the lock, repaired an interrupted swap and ran `check_out`).

    The work directory is ``run_dir`` itself, or with ``overwrite`` a staging directory beside
    it that replaces ``run_dir`` only once the new run has finished (`storage.swap_in`). The
    checkpoint is the newest committed one of an unfinished run with the same settings. Nothing
    of the user's is deleted or moved: ``overwrite`` is refused for a directory without the
    zoo's marker (``.zoo-run``), and the zoo's hidden names are used only when free or its own.
    """
    run_dir = Path(run_dir)
    if not run_dir.exists() or not any(run_dir.iterdir()):
        found_empty = run_dir.is_dir()
        return WorkDir(_fresh(run_dir), created=True, found_empty=found_empty)
    if overwrite:
        return _staging(run_dir, config)
    saved = _same_settings(run_dir, config, refuse=True)
    if saved is None:
        return WorkDir(run_dir)  # killed before its config was written: start afresh in place
    checkpoint = cb.latest_checkpoint(run_dir)
    _check_epochs(run_dir, config, checkpoint)
    return WorkDir(run_dir, checkpoint, saved=saved)


def _check_epochs(run_dir: Path, config: TrainConfig, checkpoint) -> None:
    """A run cannot be resumed to fewer epochs than it has trained: its config would say one
    budget and its metrics and history another. In its QAT stage the float epochs it trained
    count (the stage's own come on top of ``epochs``)."""
    if checkpoint is None:
        return
    stage = qat_stage.resumed(checkpoint)
    done = stage["start_epoch"] if stage else checkpoint.epochs_done
    if done > config.epochs:
        raise RunDirError(f"{run_dir} holds an unfinished run that has already trained {done} "
                          f"epochs; --epochs {config.epochs} is fewer. Resume it with --epochs "
                          f"{done} or more, choose another --out, or pass --overwrite to start "
                          "a new run there.")


def _fresh(folder: Path) -> Path:
    """``folder`` created with the zoo's marker in it, atomically: built under a temporary name
    beside it (``.<name>.creating``: one the zoo left is replaced, a user's folder of that name
    is refused) and renamed (over an empty ``folder`` if one exists)."""
    creating = storage.make_staging(folder, "creating", RUN_MARKER)
    os.rename(creating, folder)
    storage.crash_point("run directory created")
    return folder


def _staging(run_dir: Path, config: TrainConfig) -> WorkDir:
    """The replacement's directory: an unfinished one of the same settings is resumed (unless
    it has trained more epochs than asked), any other of the zoo's is started afresh."""
    stage = storage.staging_path(run_dir)
    saved = None
    if storage.owned(stage, RUN_MARKER) and not rundir.RunDirectory(stage).is_finished():
        saved = _same_settings(stage, config, refuse=False)
    if saved is not None:
        checkpoint = cb.latest_checkpoint(stage)
        if not (checkpoint and checkpoint.epochs_done > config.epochs):
            return WorkDir(stage, checkpoint, saved=saved)
    if not storage.remove_owned(stage):
        raise RunDirError(storage.foreign_message(stage))
    return WorkDir(_fresh(stage), created=True)


def _same_settings(folder: Path, config: TrainConfig, refuse: bool):
    """``folder/config.yaml`` (its `zoo.training.run_record.RunConfig`) when it has ``config``'s
    training identity, else None (None too when there is no config yet). A different one raises
    RunDirError when ``refuse``, else returns None."""
    run = rundir.RunDirectory(folder)
    if not run.config.is_file():
        return None
    try:
        saved = run.record().config  # names the file and the setting at fault
    except ValueError as err:
        raise RunDirError(f"{err}; choose another --out") from None
    if saved.unknown_settings:  # a run of another zoo version: read, but not resumed
        raise RunDirError(f"{run.config} is not a valid zoo run config (unknown training "
                          f"setting(s) {saved.unknown_settings}); choose another --out")
    ours, theirs = config.training_identity(), saved.settings.training_identity()
    diff = {k: (v, ours[k]) for k, v in theirs.items() if ours[k] != v}
    if diff and refuse:
        raise RunDirError(f"{folder} holds an unfinished run with other settings "
                          f"(saved vs asked: {diff}); resume it with the same command, "
                          "choose another --out, or pass --overwrite.")
    return None if diff else saved
