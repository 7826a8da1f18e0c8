"""Evaluate a finished run on its task's test split: accuracy, per-class accuracy, confusion."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def load_run(run_dir: str | Path):
    """(`zoo.training.run_record.RunRecord`, keras model, Normalization) of a finished run (see
    `zoo.training.runs.read_finished_run`: each file checked, damage named)."""
    from zoo.training.runs import read_finished_run

    return read_finished_run(Path(run_dir))


def load_run_with_data(run_dir: str | Path, data_dir=None, *, need_val: bool = False):
    """(`zoo.training.run_record.RunRecord`, keras model, Normalization, task, data) of a finished
    run, its data split as
    the run split it (``data_dir`` defaults to where the run found its data). ``need_val``:
    refuse a run with no validation split (a final retrain)."""
    from zoo.training.rundir import RunDirectory
    from zoo.core.storage import shared

    with shared(run_dir):  # its files and its data's place, from one run (docs/reliability.md)
        record, model, norm = load_run(run_dir)
        data_dir = data_dir or RunDirectory(run_dir).data_source(record)
    task = record.config.make_task()
    data = task.load(data_dir, seed=record.config.seed)
    if need_val and len(data.val.x) == 0:
        raise ValueError(f"{run_dir}: the run has no validation split (a final retrain?)")
    return record, model, norm, task, data


def confusion_matrix(y_true: np.ndarray, y_pred: np.ndarray, num_classes: int) -> np.ndarray:
    cm = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(cm, (y_true.ravel(), y_pred.ravel()), 1)
    return cm


def evaluation_split(task, data_dir, seed: int = 0):
    """The windows ``zoo eval`` scores in ``data_dir``: what the task's ``evaluation_split`` says
    it holds where it has one (google12 on the official Speech Commands test-set archive; the
    user-data tasks on the user's own test data), else the task's test split."""
    evaluation = getattr(task, "evaluation_split", None)
    if evaluation is not None:
        return evaluation(data_dir, seed=seed)
    return task.load(data_dir, seed=seed).test


def check_not_empty(split, scored, data_dir) -> None:
    """No window to score (a run whose test split is empty: one group, two speakers) is said
    in one line, not left to Keras's predict (an UnboundLocalError on no batch)."""
    if not len(split.x):
        raise ValueError(f"{scored}: no test windows in {data_dir or 'its data'} (the run held "
                         "out no test split: too few groups or speakers); pass --data-dir "
                         "with your own test data")


def classification_report(y_true: np.ndarray, y_pred: np.ndarray, class_names) -> dict:
    """Accuracy, per-class accuracy and the confusion matrix of predictions ``y_pred``."""
    cm = confusion_matrix(np.asarray(y_true), np.asarray(y_pred), len(class_names))
    counts = cm.sum(axis=1)
    # A class with no test window has no accuracy (None, "-" in the table), not 0 %.
    per_class = [float(cm[i, i] / n) if n else None for i, n in enumerate(counts)]
    return {"accuracy": float(np.mean(np.asarray(y_pred) == np.asarray(y_true))),
            "per_class_accuracy": {str(name): a for name, a in zip(class_names, per_class)},
            "per_class_windows": {str(name): int(n) for name, n in zip(class_names, counts)},
            "class_names": [str(name) for name in class_names],
            "confusion_matrix": cm.tolist()}


def evaluate_run(run_dir: str | Path, data_dir=None, *, task_options: dict | None = None) -> dict:
    """Score a finished run; ``task_options`` override the run's (e.g. ``evaluate_on="all"``).
    ``data_dir`` defaults to where the run found its data (if that still exists)."""
    from zoo.training.rundir import RunDirectory
    from zoo.training.runs import check_model_fits_task
    from zoo.core.storage import shared
    from zoo.training.tasks import get_task

    with shared(run_dir):  # its files and its data's place, from one run (docs/reliability.md)
        record, model, norm = load_run(run_dir)
        own_data = data_dir is None
        if own_data:
            data_dir = RunDirectory(run_dir).data_source(record)
    config = record.config
    options = {**config.settings.task_options, **(task_options or {})}
    if own_data and data_dir and "train_data" in getattr(get_task(config.task), "DEFAULTS", {}) \
            and not options.get("train_data"):
        # A run from before the task recorded its training file: its own data is that file,
        # whose held-out split (not every window) is what it may be scored on.
        options["train_data"] = str(Path(data_dir).expanduser().resolve())
    task = get_task(config.task, **options)
    check_model_fits_task(model, task, run_dir)
    test = evaluation_split(task, data_dir, seed=config.seed)
    check_not_empty(test, run_dir, data_dir)
    outputs = model.predict(norm.apply(test.x).astype("float32"), batch_size=256, verbose=0)
    report = {"run_dir": str(run_dir), "task": task.name, "model": config.model,
              "test_sequences": len(test.x)}
    if task.kind == "regression":
        report["mse"] = float(np.mean((outputs.reshape(-1) - test.y) ** 2))
        return report
    report.update(classification_report(test.y, outputs.argmax(-1), task.class_names))
    return report


def format_report(report: dict) -> str:
    scored = (f"{report['run_dir']}" if "runtime" not in report else
              f"{report['run_dir']}: {report['quantize']} {report['form']} export, "
              f"{report['runtime']}")
    lines = [f"{report['model']} on {report['task']} ({scored}), "
             f"{report['test_sequences']} test sequences"]
    if "mse" in report:
        return "\n".join(lines + [f"test MSE: {report['mse']:.5f}"])
    lines.append(f"test accuracy: {100 * report['accuracy']:.2f}%")
    lines.append("per-class accuracy:")
    width = max(len(n) for n in report["class_names"])
    counts = report.get("per_class_windows", {})
    for name, acc in report["per_class_accuracy"].items():
        n = f"  (n={counts[name]})" if name in counts else ""
        lines.append(f"  {name:<{width}}  {'-':>7}{n}" if acc is None
                     else f"  {name:<{width}}  {100 * acc:6.2f}%{n}")
    cm = np.array(report["confusion_matrix"])
    if len(cm) <= 30:
        lines.append("confusion matrix (rows: true, columns: predicted):")
        cell = max(4, len(str(cm.max())) + 1)
        lines.append(" " * (width + 2) + "".join(f"{i:>{cell}}" for i in range(len(cm))))
        for i, (name, row) in enumerate(zip(report["class_names"], cm)):
            lines.append(f"  {name:<{width}}" + "".join(f"{v:>{cell}}" for v in row) + f"   ({i})")
    return "\n".join(lines)
