"""``zoo eval EXPORT``: an export folder's TFLite model(s) scored on data of the kind it was made
for, as a device runs them: a step export (also the C export's folder, whose step and head models
the C code equals bit for bit) streamed window by window with the state fed back
(`zoo.export.device_runtime.StepModel`), a sequence export invoked once per window, under LiteRT
or the tflite-micro interpreter.

What ``data_dir`` holds is the export's task's to say (`zoo.training.evaluate.evaluation_split`:
the task's ``evaluation_split`` where it has one, else its test split), read with the task
options the export was made with. An export of a Keras model (no task) takes an ``.npz`` holding
raw windows ``X`` (N, T, C) and integer labels ``y``. Raw windows are normalised with the
export's ``normalization.json``, as device code does.

Example:
    >>> report = evaluate_export("runs/har2-sirnn/export-step-int8", "../shared/data/har")
    >>> report["accuracy"], report["per_class_accuracy"]
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from zoo.export import device_runtime
from zoo.export.card_schema import CARD_FILE, ExportFolderError, read_export_card

__all__ = ["is_export", "evaluate_export", "EVAL_RUNTIMES"]
EVAL_RUNTIMES = ("litert", "tflite-micro")


def is_export(path) -> bool:
    """Whether ``path`` is an export folder (it holds a model card)."""
    return (Path(path) / CARD_FILE).is_file()


def evaluate_export(export_dir, data_dir=None, *, runtime: str = "litert",
                    limit: int | None = None) -> dict:
    """Accuracy, per-class accuracy and confusion matrix of the export in ``export_dir`` on the
    windows of ``data_dir`` (see the module docstring; None: where the export's data came from,
    else the task's default location). ``limit``: the first windows only."""
    from zoo.training.artifacts import load_normalization
    from zoo.training.evaluate import classification_report

    if runtime not in EVAL_RUNTIMES:
        raise ValueError(f"unknown runtime {runtime!r}; valid: {', '.join(EVAL_RUNTIMES)}")
    export_dir = Path(export_dir)
    try:
        card = read_export_card(str(export_dir))
    except ExportFolderError as err:
        raise ValueError(str(err)) from None
    raw, y, source = raw_windows(export_dir, card, data_dir)
    raw, y = (raw[:limit], y[:limit]) if limit else (raw, y)
    if not len(raw):
        raise ValueError(f"{export_dir}: no test windows in {source} (the run held out no test "
                         "split: too few groups or speakers); pass --data-dir with your own "
                         "test data")
    norm = load_normalization(export_dir / card.normalization, card.features) \
        if card.normalization else None
    x = norm.apply(raw) if norm is not None else np.asarray(raw, np.float32)
    model = device_runtime.open_export(str(export_dir), card, runtime, 1)
    pred = np.array([int(np.argmax(model.predict(window))) for window in x], np.int64)
    names = card.class_names or [str(i) for i in range(card.classes)]
    report = {"run_dir": str(export_dir), "task": card.task or "your data", "model": card.model,
              "form": card.form, "quantize": card.quantize, "runtime": runtime, "data": source,
              "test_sequences": len(x)}
    report.update(classification_report(y, pred, names))
    return report


def raw_windows(export_dir: Path, card, data_dir, *, need_labels: bool = True):
    """(raw windows, labels, where they came from): what ``zoo eval EXPORT --data-dir`` scores,
    the windows of the export's task in ``data_dir`` (its ``evaluation_split``), or an .npz of
    X and y for an export of a Keras model (``need_labels`` False: y may be missing, the
    labels are then None)."""
    timesteps = card.timesteps if card.form == "sequence" else None  # a step model streams any T
    if card.task is None:
        return _npz_windows(data_dir, card, timesteps, need_labels)
    from zoo.training.evaluate import evaluation_split
    from zoo.training.tasks import get_task

    task = get_task(card.task, **(card.task_options or {}))
    if data_dir is None:
        source = card.data.source if card.data else None
        data_dir = source if source and Path(source).exists() else None
    split = evaluation_split(task, data_dir, seed=_run_seed(card))
    x, y = np.asarray(split.x), np.asarray(split.y)
    if x.ndim != 3 or x.shape[2] != card.features or (timesteps and x.shape[1] != timesteps):
        raise ValueError(f"{data_dir}: the {card.task} windows here are {x.shape[1:]}; "
                         f"{export_dir} takes ({timesteps or 'T'}, {card.features})")
    return x, y, str(data_dir) if data_dir else f"the {card.task} data's default location"


def _npz_windows(data_dir, card, timesteps, need_labels: bool = True):
    from zoo.export.sources import read_windows

    if data_dir is None or not str(data_dir).endswith(".npz"):
        raise ValueError(f"this export is of a Keras model (no task): --data-dir "
                         f"takes an .npz holding its raw windows X (N, {timesteps or 'T'}, "
                         f"{card.features}) and their labels y; got {data_dir}")
    x, y, where = read_windows(data_dir, None, card.features, timesteps, classes=card.classes,
                               min_windows=1, class_names=card.class_names)
    if y is None and need_labels:
        raise ValueError(f"{where}: no labels y to score against; valid: an .npz holding X and "
                         "y (class indices or names)")
    return x, y, where


def _run_seed(card) -> int:
    """The seed of the run the export came from (it may pick a task's split), else 0."""
    from zoo.training.rundir import RunDirectory

    run = RunDirectory(card.run_dir or "")
    if card.run_dir and run.config.is_file():
        try:
            return run.record().config.seed
        except ValueError:  # a damaged run's seed is unknown: the default split's
            return 0
    return 0
