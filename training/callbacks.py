"""Keras callbacks for resumable, observable training runs."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import time
from pathlib import Path

import keras
import numpy as np

from zoo.training import rundir
from zoo.core import storage
from zoo.training.artifacts import ArtifactError, check_state, load_arrays

_log = logging.getLogger(__name__)


class ResumableEarlyStopping(keras.callbacks.EarlyStopping):
    """`keras.callbacks.EarlyStopping` whose state survives a kill: the counters go to
    ``state()`` and the best weights to ``save_files(folder)``, both inside the epoch's
    checkpoint (see `RunCheckpoint`), and ``load_state(state, folder)`` brings them back, so that
    a resumed run stops (and restores) exactly where an uninterrupted one would."""

    def __init__(self, **kwargs):
        super().__init__(restore_best_weights=True, **kwargs)
        self._resumed = None

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        if self._resumed:
            self.wait = self._resumed["wait"]
            self.best = self._resumed["best"]
            self.best_epoch = self._resumed["best_epoch"]
            self.best_weights = self._resumed["best_weights"]

    @property
    def resumed_best_weights(self):
        """The best weights of the checkpoint resumed from (None when not resumed)."""
        return self._resumed["best_weights"] if self._resumed else None

    def state(self) -> dict:
        best = None if self.best is None else float(self.best)
        return {"wait": self.wait, "best": best, "best_epoch": self.best_epoch,
                "stopped_epoch": int(self.stopped_epoch)}

    def summary(self, total_epochs: int, epochs_run: int) -> str | None:
        """One line saying what early stopping did to the run, or None when the final weights
        are the last epoch's: ``early stopping: no val_accuracy gain for 15 epochs, stopped
        after epoch 33/40; restored the weights of epoch 18 (val_accuracy 94.12%)``, or, when
        every epoch ran, which earlier epoch's weights were kept. Epochs count from 1, as the
        progress lines, ``history.csv`` and ``metrics.json``'s ``best_epoch`` do."""
        if self.best_weights is None or self.best is None:
            return None
        best = int(self.best_epoch) + 1
        restored = f"the weights of epoch {best} ({format_metric(self.monitor, self.best)})"
        if self.stopped_epoch > 0:
            stop = int(self.stopped_epoch) + 1
            return (f"early stopping: no {self.monitor} gain for {stop - best} epochs, stopped "
                    f"after epoch {stop}/{total_epochs}; restored {restored}")
        if best < epochs_run:
            return (f"early stopping: kept {restored}, the best {self.monitor} of the "
                    f"{epochs_run} epochs run")
        return None

    def save_files(self, folder: Path) -> None:
        if self.best_weights is not None:
            write_weights(self.best_weights, Path(folder) / "best_weights.npz")

    def load_state(self, state: dict, folder: Path) -> None:
        path = Path(folder) / "best_weights.npz"
        self._resumed = {**state, "best_weights": read_weights(path) if path.is_file() else None}
        # Also in place now, for a resumed run that has no epoch left to fit.
        self.wait, self.best, self.best_epoch = state["wait"], state["best"], state["best_epoch"]
        # Checkpoints from before it was kept: 0, as Keras's "did not stop".
        self.stopped_epoch = state.get("stopped_epoch", 0)
        self.best_weights = self._resumed["best_weights"]


class ResumableSwapEMAWeights(keras.callbacks.SwapEMAWeights):
    """`keras.callbacks.SwapEMAWeights` with ``swap_on_epoch=True`` (the optimizer built with
    ``use_ema=True``): at every epoch's end the model holds the moving average of its weights
    and the optimizer's average slots the raw ones, so every callback after it (early stopping
    and the best weights it keeps, `RunCheckpoint`) sees the average; the next epoch's start
    swaps the raw weights back in to train on. Place it before them.

    Two things Keras's callback leaves to its caller:

    * **resume**: a checkpoint is committed with the average in the model and the raw weights in
      the optimizer's slots (``state()`` says so), and a fresh callback would train on the
      average and average the raw weights; ``load_state`` remembers the swap, so the resumed
      run's first epoch swaps them back and carries on exactly as an uninterrupted one. A
      checkpoint without the state (written before it was kept: validation-only swapping) held
      the raw weights in the model, which is what a fresh callback assumes.
    * **a stop before the last epoch**: fit's ``finalize_variable_values`` copies the
      optimizer's slots into the model, the raw weights at that point; `keep_if_stopped` (a
      callback placed after every other) makes the slots equal to the model first. Keras's own
      callback does this only after the last epoch.
    """

    def __init__(self):
        super().__init__(swap_on_epoch=True)

    def state(self) -> dict:
        return {"average_in_model": bool(self._ema_weights_in_model)}

    def load_state(self, state: dict, folder: Path) -> None:
        self._ema_weights_in_model = bool(state.get("average_in_model"))

    def keep_if_stopped(self) -> keras.callbacks.Callback:
        """The callback, last in the list, that keeps the average when a callback stopped the
        run before its last epoch (early stopping's on_train_end restores its best epoch's
        average anyway; a stop without it, e.g. TerminateOnNaN or a search, would not)."""

        def on_epoch_end(epoch, logs=None):
            if self.model.stop_training and self._ema_weights_in_model:
                self._finalize_ema_values()

        return keras.callbacks.LambdaCallback(on_epoch_end=on_epoch_end)


def write_weights(weights, path: Path) -> None:
    # A plain array file: Keras's save_weights/load_weights also carry the optimizer's variables,
    # and loading those would roll the optimizer back to the best epoch on resume.
    np.savez(path, *weights)


def read_weights(path: Path) -> list:
    """The weights `write_weights` wrote (``arr_0`` ... ``arr_N``), read through
    `zoo.training.artifacts.load_arrays`: a pickle or a damaged file is refused, naming it."""
    saved = load_arrays(path, "best-weights file")
    names = [f"arr_{i}" for i in range(len(saved))]
    if sorted(saved) != sorted(names):
        raise ArtifactError(f"{path}: holds arrays {sorted(saved)[:5]}; valid: arr_0 ... "
                            f"arr_{len(saved) - 1}, as the zoo writes them")
    return [saved[name] for name in names]


CHECKPOINTS = "checkpoints"


class RunCheckpoint(keras.callbacks.Callback):
    """After every epoch, commit what a resume needs as one unit: the model with its optimizer
    state (``model.keras``), the history so far and the callbacks' state (``state.json``) and
    their files (the early-stopping best weights) go into ``checkpoints/.epoch-NNNN.partial/``,
    which is then renamed to ``checkpoints/epoch-NNNN/``: that rename is the commit, so a kill
    leaves the previous epoch's checkpoint or this one, never a mix (`latest_checkpoint`).
    ``history.csv`` is rewritten afterwards from the committed history.

    `keras.callbacks.BackupAndRestore` keeps weights and epoch only, not the early-stopping
    counters or the history, so a resumed run would diverge from an uninterrupted one;
    `keras.callbacks.CSVLogger` would duplicate rows written after the last checkpoint."""

    def __init__(self, run_dir: Path, history: list[dict], stateful_callbacks: dict):
        super().__init__()
        self.run_dir = Path(run_dir)
        self.history = history
        self.stateful_callbacks = stateful_callbacks
        self._epoch_start = None

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        row = {"epoch": epoch + 1, **{k: float(v) for k, v in (logs or {}).items()},
               "seconds": time.perf_counter() - self._epoch_start}
        self.history.append(row)
        state = {"epochs_done": epoch + 1, "stopped": bool(self.model.stop_training),
                 "callbacks": {name: cb.state() for name, cb in self.stateful_callbacks.items()},
                 "history": self.history}
        commit_checkpoint(self.run_dir, epoch + 1, self.model, state, self.stateful_callbacks)
        write_history_csv(self.history, rundir.RunDirectory(self.run_dir).history)


def commit_checkpoint(run_dir: Path, epochs_done: int, model, state: dict,
                      stateful_callbacks: dict) -> Path:
    """Write epoch ``epochs_done``'s checkpoint and commit it with one rename; older ones go."""
    root = Path(run_dir) / CHECKPOINTS
    root.mkdir(exist_ok=True)
    final = root / f"epoch-{epochs_done:04d}"
    partial = root / f".{final.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)  # left by a kill during an earlier try
    partial.mkdir()
    model.save(partial / rundir.RunDirectory(partial).model.name)
    for cb in stateful_callbacks.values():
        if hasattr(cb, "save_files"):
            cb.save_files(partial)
    (partial / "state.json").write_text(json.dumps(state, indent=2))
    _fsync_tree(partial)
    storage.crash_point(f"checkpoint {final.name}: written, not committed")
    os.rename(partial, final)
    storage.crash_point(f"checkpoint {final.name}: committed")
    _log.debug("committed %s", final)
    for old in root.iterdir():
        if old != final:
            shutil.rmtree(old, ignore_errors=True)
    storage.crash_point(f"checkpoint {final.name}: older ones removed")
    return final


def _fsync_tree(folder: Path) -> None:
    for path in [*folder.iterdir(), folder]:
        if path.is_file() or path == folder:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A committed checkpoint: its ``folder`` (``checkpoints/epoch-NNNN``, holding the model
    and the callbacks' files) and its ``state.json``, as `check_state` passed it."""

    folder: Path
    state: dict

    @property
    def epochs_done(self) -> int:
        return self.state["epochs_done"]

    @property
    def history(self) -> list[dict]:
        return self.state["history"]

    @property
    def callback_states(self) -> dict[str, dict]:
        return self.state["callbacks"]

    @property
    def stopped(self) -> bool:
        """Whether training had stopped (early stopping) when the checkpoint was committed."""
        return bool(self.state.get("stopped"))


def latest_checkpoint(run_dir: Path) -> Checkpoint | None:
    """The newest committed checkpoint of ``run_dir``, or None."""
    root = Path(run_dir) / CHECKPOINTS
    committed = sorted(p for p in root.glob("epoch-[0-9][0-9][0-9][0-9]") if p.is_dir()) \
        if root.is_dir() else []
    if not committed:
        return None
    folder = committed[-1]
    path = folder / "state.json"
    return Checkpoint(folder, check_state(storage.read_json(path, "checkpoint state"), path))


def write_history_csv(history: list[dict], path: Path) -> None:
    keys = list(dict.fromkeys(k for row in history for k in row))
    lines = [",".join(keys)]
    lines += [",".join("" if row.get(k) is None else f"{row[k]:.8g}" for k in keys)
              for row in history]
    storage.write_text_atomic(path, "\n".join(lines) + "\n")


class EpochProgress(keras.callbacks.Callback):
    """One line per epoch: loss, validation accuracy, epoch time and the time left for the run."""

    def __init__(self, total_epochs: int, initial_epoch: int = 0):
        super().__init__()
        self.total_epochs = total_epochs
        self.initial_epoch = initial_epoch
        self._times = []

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        seconds = time.perf_counter() - self._start
        self._times.append(seconds)
        left = (self.total_epochs - epoch - 1) * float(np.mean(self._times[-5:]))
        metrics = "  ".join(format_metric(k, v) for k, v in logs.items() if k != "learning_rate")
        _log.info(f"epoch {epoch + 1:>4}/{self.total_epochs}  {metrics}  "
                  f"{seconds:.1f}s  ~{_duration(left)} left")


def format_metric(name: str, value: float) -> str:
    """``accuracy 90.44%`` (as `zoo eval` prints it), other metrics as numbers."""
    if name.endswith("accuracy"):
        return f"{name} {100 * float(value):.2f}%"
    return f"{name} {float(value):.4f}"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


class HardThresholding(keras.callbacks.Callback):
    """FastGRNN's three training phases (paper Sec. 3.2.1; EdgeML ``fastTrainer.train``).

    Over the run's total batches: the first third trains dense; the second third hard-thresholds
    every W* (to density ``sparsity_w``) and U* (to ``sparsity_u``) every ``trim_every`` batches,
    keeping the top entries by magnitude; the last third freezes the support and re-applies it
    after every batch. Works from the batch counter alone, so it resumes exactly.
    """

    def __init__(self, cell, sparsity_w: float, sparsity_u: float, total_batches: int,
                 initial_batch: int = 0, trim_every: int = 15):
        super().__init__()
        if not hasattr(cell, "sparsifiable_weights"):
            raise ValueError(f"sparsity training needs a FastRNN/FastGRNN cell, got "
                             f"{type(cell).__name__}")
        self.cell = cell
        self.sparsity_w = sparsity_w
        self.sparsity_u = sparsity_u
        self.total_batches = total_batches
        self.batch_count = initial_batch
        self.trim_every = trim_every
        self._masks = None

    def _targets(self):
        kernels = list(self.cell.kernels)
        return ([(w, self.sparsity_w) for w in kernels]
                + [(u, self.sparsity_u) for u in self.cell.recurrent_kernels])

    def on_train_batch_end(self, batch, logs=None):
        self.batch_count += 1
        third = self.total_batches / 3
        if third <= self.batch_count < 2 * third:
            if self.batch_count % self.trim_every == 0:
                for var, density in self._targets():
                    var.assign(hard_threshold(self._read(var), density))
        elif self.batch_count >= 2 * third:
            if self._masks is None:
                # Entering (or resuming in) phase 3: threshold once more and freeze the support.
                for var, density in self._targets():
                    var.assign(hard_threshold(self._read(var), density))
                self._masks = [(var, self._read(var) != 0) for var, _ in self._targets()]
            for var, mask in self._masks:
                var.assign(np.where(mask, self._read(var), 0.0))

    def _read(self, var) -> np.ndarray:
        # Keras's JAX trainer keeps the weights outside the variables during an epoch (their
        # values are None until `jax_state_sync`); syncing first also makes the trainer take
        # the thresholded values back at the next batch. A no-op on TensorFlow.
        sync = getattr(self.model, "jax_state_sync", None)
        if sync is not None:
            sync()
        return keras.ops.convert_to_numpy(var)

    def state(self) -> dict:
        return {"batch_count": self.batch_count}


def hard_threshold(w: np.ndarray, density: float) -> np.ndarray:
    """Keep the ``ceil(density * size)`` largest-magnitude entries (EdgeML ``hardThreshold``:
    entries below the (1 - density)-quantile of |w|, ``interpolation='higher'``, are zeroed)."""
    if density >= 1.0:
        return w
    threshold = np.quantile(np.abs(w), 1.0 - density, method="higher")
    return np.where(np.abs(w) >= threshold, w, 0.0).astype(w.dtype)


def count_nonzero_fraction(w: np.ndarray) -> float:
    return float(np.count_nonzero(w)) / max(1, w.size)

