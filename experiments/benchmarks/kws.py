"""Keyword-spotting sweep on ``google12_testset``: learning rate chosen on the validation speakers,
then 3 seeds of each model at that rate.

    python -m zoo.experiments.benchmarks.kws --data-dir ARCHIVE --out runs/kws [--epochs 40] [--jobs 6]

Phase 1 trains every model of `MODELS` at every ``--lrs`` value with seed 0; the rate with the best
validation accuracy (at the restored best epoch) is kept; phase 2 trains seeds 1 and 2 at that rate
(seed 0 is the phase-1 run); finished runs are not retrained. ``OUT/selection.json`` lists, per model, the validation accuracy of
each rate and the three run directories; ``experiments/kws_bench.py`` reads it.

Runs go through `zoo.training.trainer.train`, one process per run (``--jobs`` at a time); it also
runs where TensorFlow is not installed (a JAX-only accelerator machine), without TensorBoard logs.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

from zoo.core.flags import int_in, key_value, number_in
from zoo.training.rundir import RunDirectory

TASK = "google12_testset"
# The bounded state of the int8 recipe. eta needs no eta_constraint="non_neg": the iRNN's default
# eta_parametrization "sigmoid" keeps it in (0, 1), and the cell refuses the constraint with it.
_BOUNDED = {"state_clip": 1.0, "state_quant_bits": 8}
# name -> (registry model, model options). Sizes: the papers' Google-12 sizes where they give one
# (FastGRNN Table 11, iRNN Table 5), the zoo default 80 for the Keras baselines, DS-CNN-S.
MODELS = {
    "sirnn": ("sirnn", {"units": 80, "rank": 16, **_BOUNDED}),
    "irnn_k5": ("irnn", {"units": 80, "rank": 16, "k": 5, **_BOUNDED}),
    "fastgrnn": ("fastgrnn", {"units": 100, "w_rank": 16, "u_rank": 25}),
    "lstm": ("lstm", {"units": 80}),
    "gru": ("gru", {"units": 80}),
    "dscnn": ("dscnn", {"units": 64, "bn_momentum": 0.9}),  # see DSCNN's bn_momentum
}


def _train_one(job: dict) -> dict:
    """Train one run in this (fresh) process; returns the job with its validation accuracy
    (None for an unfinished run under ``--no-train``)."""
    if job["no_train"]:
        done = RunDirectory(job["out"]).is_finished()
        job["val_accuracy"] = best_val_accuracy(Path(job["out"])) if done else None
        return job
    import keras

    from zoo.core import logs
    from zoo.training.config import resolve
    from zoo.training.trainer import train

    logs.configure(job["log_level"])  # a spawned worker: the parent's handler and level

    overrides = {"epochs": job["epochs"], "batch_size": 100, "lr": job["lr"], "optimizer": "adam",
                 "seed": job["seed"], "early_stopping_patience": job["patience"],
                 "backend": keras.backend.backend(), "model_options": job["options"],
                 "task_options": job["task_options"], "augment": job["augment"]}
    config = resolve(TASK, job["model"], "none", overrides)
    out = Path(job["out"])
    if not RunDirectory(out).is_finished():
        t0 = time.time()
        train(config, out, data_dir=job["data_dir"])
        job["seconds"] = round(time.time() - t0, 1)
    job["val_accuracy"] = best_val_accuracy(out)
    print(f"done {out.name}: val {job['val_accuracy']:.4f}", flush=True)
    return job


def best_val_accuracy(run_dir: Path) -> float:
    """Validation accuracy at the run's best (restored) epoch."""
    best = RunDirectory(run_dir).record().metrics.required("best_epoch", "the KWS table")
    rows = list(csv.DictReader(open(RunDirectory(run_dir).history)))
    return float(rows[best - 1]["val_accuracy"])


def _pool_map(jobs: list[dict], workers: int) -> list[dict]:
    with mp.get_context("spawn").Pool(workers) as pool:
        return pool.map(_train_one, jobs, chunksize=1)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--out", default="runs/kws")
    p.add_argument("--epochs", type=int_in(1), default=40)
    p.add_argument("--patience", type=int_in(0), default=10)
    p.add_argument("--lrs", type=number_in(0, low_open=True), nargs="+", default=[1e-3, 3e-3])
    p.add_argument("--seeds", type=int_in(1), default=3)
    p.add_argument("--models", nargs="+", default=list(MODELS))
    p.add_argument("--jobs", type=int_in(1), default=6)
    p.add_argument("--task-option", type=key_value, action="append", default=[],
                   metavar="KEY=VALUE", help="a task option of every run, e.g. "
                   "--task-option features=int_logmel (the C app's integer front end)")
    p.add_argument("--augment", type=key_value, action="append", default=[],
                   metavar="KEY=VALUE", help="an augment option of every run, e.g. --augment "
                   "time_mask=10 (SpecAugment's masks, zoo.training.augment)")
    p.add_argument("--no-train", action="store_true",
                   help="train nothing: write the selection from the runs already finished")
    p.add_argument("--selection", default="selection.json",
                   help="file name (in --out) for the selection; experiments/kws_bench.py reads it")
    args = p.parse_args(argv)
    out = Path(args.out)
    from zoo.training.tasks import get_task

    task_options, augment = dict(args.task_option), dict(args.augment) or None
    # Featurise once, before the workers read the cache (an invalid option fails here).
    get_task(TASK, **task_options).load(args.data_dir)

    def job(name, lr, seed, folder):
        model, options = MODELS[name]
        return {"name": name, "model": model, "options": options, "lr": lr, "seed": seed,
                "epochs": args.epochs, "patience": args.patience, "data_dir": args.data_dir,
                "task_options": task_options, "augment": augment,
                "out": str(out / folder), "no_train": args.no_train,
                "log_level": logging.getLogger("training").getEffectiveLevel()}

    sweep = _pool_map([job(n, lr, 0, f"sweep/{n}-lr{lr:g}") for n in args.models
                       for lr in args.lrs], args.jobs)
    selection = {}
    for name in args.models:
        rows = [r for r in sweep if r["name"] == name and r["val_accuracy"] is not None]
        if not rows:
            continue
        best = max(rows, key=lambda r: r["val_accuracy"])
        selection[name] = {"model": best["model"], "options": best["options"], "lr": best["lr"],
                           "task_options": task_options, "augment": augment,
                           "val_accuracy_by_lr": {f"{r['lr']:g}": r["val_accuracy"] for r in rows},
                           "runs": [best["out"]]}
    seeds = _pool_map([job(n, sel["lr"], s, f"{n}-lr{sel['lr']:g}-s{s}")
                       for n, sel in selection.items() for s in range(1, args.seeds)], args.jobs)
    for r in seeds:
        if r["val_accuracy"] is not None:
            selection[r["name"]]["runs"].append(r["out"])
    (out / args.selection).write_text(json.dumps(selection, indent=1))
    print(json.dumps({n: (s["lr"], s["val_accuracy_by_lr"]) for n, s in selection.items()}))
    return 0


if __name__ == "__main__":
    from zoo.core import logs

    logs.configure()  # run as a script: print the library's messages as `zoo` does
    sys.exit(main())
