"""Per-window normalization, a lever of issue 29, in the HAR-2 subject CV: each fold of a base
variant (``f4_eta04`` by default: rotation 35, 4 samples per step) trained again with its
recorded settings, the task's windows normalised one window at a time first:

- ``center``: each window's per-channel mean (over its 128 samples) subtracted, in sensor
  units; then the usual z-score with training statistics;
- ``zscore``: each window's channels to mean 0 and standard deviation 1 (a channel that does not
  move in the window, std below 1e-6, is only centred).

    KERAS_BACKEND=jax python -m zoo.experiments.campaigns.window_norm_cv --data-dir ARCHIVE \\
        --mode center   # and --mode zscore; then zoo.experiments.campaigns.paired, sirnn/f4_wcenter

Each fold's result lands beside the campaign's (``results/har2-campaign/har2/sirnn/
<base without its eta>_w<mode>/fold<k>.json``, the layout `zoo.experiments.campaigns.paired`
reads); finished runs are reused. The lever is measured, not a task option: both modes lose
2.5-3.6 points beyond fold noise (docs/realscale.md §15), and neither streams (a device would
need the whole window before the first step).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from zoo.core.cv_results import CvResult, FoldSummary, cv_result_files, read_cv_result
from zoo.experiments.trials import results_root, summarise
from zoo.core.storage import write_json_atomic
from zoo.training.tasks.base import (STD_FLOOR, Normalization, Split, TaskData, list_tasks,
                                 register_task)
from zoo.training.tasks.har import HAR2

MODES = ("center", "zscore")
RESULTS = results_root() / "har2-campaign" / "har2" / "sirnn"


def normalize_windows(x: np.ndarray, mode: str) -> np.ndarray:
    """``x`` (N, T, C) with each window's channels centred (``center``), or z-scored over the
    window's T samples (``zscore``)."""
    x = x - x.mean(axis=1, keepdims=True)
    if mode == "zscore":
        std = x.std(axis=1, keepdims=True)
        x = x / np.where(std < STD_FLOOR, 1.0, std)
    return x.astype(np.float32)


def window_task(mode: str) -> str:
    """Register (once) HAR-2 with per-window ``mode`` normalization; its task name."""
    name = f"har2_window_{mode}"

    class WindowNormalized(HAR2):
        def _load(self, data_dir, *, seed: int) -> TaskData:
            data = super()._load(data_dir, seed=seed)
            train, val, test = (Split(normalize_windows(s.x, mode), s.y)
                                for s in (data.train, data.val, data.test))
            return TaskData(train, val, test, Normalization.fit(train.x), data.source,
                            {**data.info, "window_normalization": mode})

    if name not in list_tasks():
        register_task(name)(WindowNormalized)
    return name


def run_fold(base: str, mode: str, fold: int, data_dir: str, out: Path) -> CvResult:
    """Train (or reuse) fold ``fold`` of ``base`` on the per-window task; its results record."""
    from zoo.training.config import TrainConfig
    from zoo.training.runs import train_or_reuse

    recorded = read_cv_result(RESULTS / base / f"fold{fold}.json")
    settings = {**recorded.config, "task": window_task(mode), "recipe": None}
    run_dir = train_or_reuse(TrainConfig(**settings), out / f"fold{fold}", data_dir=data_dir)
    return CvResult(task=recorded.task, label=recorded.label,
                    variant=variant_name(base, mode), fold=recorded.fold, folds=recorded.folds,
                    config=settings, summary=FoldSummary.from_dict(summarise(run_dir), run_dir))


def variant_name(base: str, mode: str) -> str:
    return f"{base.split('_eta')[0]}_w{mode}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--data-dir", required=True, help="the UCI HAR archive or folder")
    parser.add_argument("--mode", choices=MODES, required=True)
    parser.add_argument("--base", default="f4_eta04", help="the CV variant whose settings are "
                        "reused (its results files in results/har2-campaign)")
    parser.add_argument("--out", type=Path, default=Path("bench/sweeps/har2-window-norm"))
    args = parser.parse_args(argv)
    folds = sorted(int(p.stem[4:]) for p in cv_result_files(RESULTS / args.base))
    if not folds:
        raise SystemExit(f"{RESULTS / args.base}: no results files (fold*.json)")
    variant = variant_name(args.base, args.mode)
    (RESULTS / variant).mkdir(parents=True, exist_ok=True)
    for fold in folds:
        record = run_fold(args.base, args.mode, fold, args.data_dir, args.out / variant)
        write_json_atomic(RESULTS / variant / f"fold{fold}.json", record.to_dict())
        print(f"{variant} fold {fold}: val {record.summary.val:.2f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
