"""Train-or-reuse: the driver the benchmark and study scripts share (``zoo bench``,
``export.quality``, ``export.device_latency``, ``training.benchmarks.accuracy``).

It lives in ``training`` so that the training benchmarks can use it without importing ``export``
(training is the lower layer); the export scripts import it from here.
"""

from __future__ import annotations

from pathlib import Path

from training.rundir import RunDirectory

__all__ = ["train_or_reuse"]


def train_or_reuse(config, run_dir, *, data_dir=None, verbose: int | None = None,
                   print_fn=print) -> Path:
    """``run_dir`` after making sure it holds a finished run of ``config``.

    A finished run there is reused as it is (its settings are not compared: the caller names run
    directories by their settings); otherwise ``config`` is trained into it, and an unfinished
    run of the same settings resumes from its last checkpoint (`training.trainer.train`).

    Args:
        config: a `training.config.TrainConfig`.
        run_dir: the run directory.
        data_dir: the dataset folder or archive (None: the task's default location).
        verbose, print_fn: passed to `training.trainer.train`.

    Returns:
        ``run_dir`` as a Path.

    Example:

    ```python
    run = train_or_reuse(TrainConfig(task="har2", model="sirnn", epochs=30), "bench/runs/sirnn")
    ```
    """
    run = RunDirectory(run_dir)
    if not run.is_finished():
        from training.trainer import train

        train(config, run.root, data_dir=data_dir, verbose=verbose, print_fn=print_fn)
    return run.root
