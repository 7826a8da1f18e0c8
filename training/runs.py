"""Finished runs, read and reused: a run's checked files loaded (`read_finished_run`,
`load_keras_model`, `load_normalization`, `check_model_fits_task`) and train-or-reuse, the
driver the benchmark and study scripts share (``zoo bench``, ``zoo.experiments.quality``,
``zoo.experiments.device_latency``, ``zoo.experiments.benchmarks.accuracy``).

It lives in ``training`` so that the training benchmarks can use it without importing ``export``
(training is the lower layer); eval, export and the export scripts import it from here.
"""

from __future__ import annotations

from pathlib import Path

from zoo.core import storage
from zoo.training.artifacts import load_keras_model, load_normalization
from zoo.training.rundir import RunDirectory

__all__ = ["train_or_reuse", "read_finished_run", "load_keras_model", "load_normalization",
           "check_model_fits_task"]


def train_or_reuse(config, run_dir, *, data_dir=None, verbose: int | None = None,
                   callbacks=()) -> Path:
    """``run_dir`` after making sure it holds a finished run of ``config``.

    A finished run there is reused as it is (its settings are not compared: the caller names run
    directories by their settings); otherwise ``config`` is trained into it, and an unfinished
    run of the same settings resumes from its last checkpoint (`zoo.training.trainer.train`).

    Args:
        config: a `zoo.training.config.TrainConfig`.
        run_dir: the run directory.
        data_dir: the dataset folder or archive (None: the task's default location).
        verbose: passed to `zoo.training.trainer.train` (which logs its progress at INFO:
            `zoo.core.logs`).
        callbacks: more Keras callbacks for the training (`zoo.training.trainer.train`).

    Returns:
        ``run_dir`` as a Path.

    Example:

    ```python
    run = train_or_reuse(TrainConfig(task="har2", model="sirnn", epochs=30), "bench/runs/sirnn")
    ```
    """
    run = RunDirectory(run_dir)
    if not run.is_finished():
        from zoo.training.trainer import train

        train(config, run.root, data_dir=data_dir, verbose=verbose, callbacks=callbacks)
    return run.root


def read_finished_run(run_dir: Path):
    """(`zoo.training.run_record.RunRecord`, Keras model, Normalization) of a finished run, each
    file checked: the record is its config.yaml and metrics.json, read once, for the caller to
    pass on.

    The run's files are read holding its lock shared (`zoo.core.storage.shared`): a
    command that goes on using the run (``zoo export`` writing ``RUN/export-...``) holds it
    itself for as long.

    Raises:
        FileNotFoundError: a file of a finished run is missing.
        ValueError: the run is unfinished (no ``metrics.json``), or a file is damaged; the
            message names the file. `zoo.core.storage.BeingWrittenError` (a ValueError):
            ``zoo train`` is training or replacing the run now.
    """
    run = RunDirectory(run_dir)
    with storage.shared(run.root):  # one run's files, not half the old run and half a new one
        run.check_finished()
        # A damaged metrics.json is a damaged run too: `zoo eval` and `zoo export` refuse it
        # alike, naming it, though neither scores anything from it.
        record = run.record()
        model = load_keras_model(run.model)
        features = model.inputs[0].shape[-1]
        norm = load_normalization(run.normalization, None if features is None else int(features))
    return record, model, norm


def check_model_fits_task(model, task, run_dir: Path) -> None:
    """The model's output width and input features must be the task's: an edited
    ``config.yaml`` (say har2 -> har6) must not score a 2-logit model as 6 classes."""
    out_width = int(model.outputs[0].shape[-1])
    features = model.inputs[0].shape[-1]
    if out_width != task.num_classes or (features is not None
                                         and int(features) != task.input_shape[-1]):
        raise ValueError(
            f"{RunDirectory(run_dir).config}: task {task.name} has {task.num_classes} classes "
            f"and {task.input_shape[-1]} features, but model.keras outputs {out_width} and takes "
            f"{features}: the config does not belong to this model (edited?)")
