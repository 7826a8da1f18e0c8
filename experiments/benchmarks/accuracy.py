"""Train every zoo cell and the Keras baselines on real data, same budget, one table.

    python -m zoo.experiments.benchmarks.accuracy --tasks har2 dsa19 --data-root ../shared/data \
        --epochs 60 --out bench/accuracy

Every model gets the same optimiser (Adam), learning rate, gradient clipping, batch, epoch budget,
early stopping on the validation split (whole held-out subjects) and seed; test accuracy is
reported once, at the end.
Writes ``results.csv`` and ``results.md`` in ``--out`` and one run directory per model.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from zoo.training.config import MAX_UNITS
from zoo.core.flags import int_in, number_in

# name -> model options; hidden size 80 everywhere (004 Table 5 for HAR-2).
MODELS = {
    "irnn K=1": ("irnn", {"k": 1}),
    "irnn K=5": ("irnn", {"k": 5}),
    "irnn K=1 full-rank": ("irnn", {"k": 1, "rank": None, "premultiply": False}),
    "irnn K=5 full-rank": ("irnn", {"k": 5, "rank": None, "premultiply": False}),
    # The bounded state that integer export needs (docs/export.md): clip to [0, 1], and 8-bit
    # straight-through fake quantization of the state.
    "irnn K=1 clip": ("irnn", {"k": 1, "state_clip": 1.0}),
    "irnn K=1 clip+q8": ("irnn", {"k": 1, "state_clip": 1.0, "state_quant_bits": 8}),
    "irnn K=5 clip+q8": ("irnn", {"k": 5, "state_clip": 1.0, "state_quant_bits": 8}),
    "sirnn": ("sirnn", {}),
    "fastrnn": ("fastrnn", {}),
    "fastgrnn": ("fastgrnn", {}),
    "antisymmetric": ("antisymmetric", {}),
    "gated_antisymmetric": ("gated_antisymmetric", {}),
    "stablernn": ("stablernn", {}),
    "simple_rnn": ("simple_rnn", {}),
    "lstm": ("lstm", {}),
    "gru": ("gru", {}),
}
DATA_FOLDERS = {"har2": "har", "har6": "har", "dsa19": "dsa19"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("--tasks", nargs="+", default=["har2", "dsa19"])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--data-root", required=True, help="folder holding har/ and dsa19/")
    parser.add_argument("--units", type=int_in(1, MAX_UNITS), default=80)
    parser.add_argument("--epochs", type=int_in(1), default=60)
    parser.add_argument("--batch-size", type=int_in(1), default=64)
    parser.add_argument("--lr", type=number_in(0, low_open=True), default=1e-2)
    parser.add_argument("--patience", type=int_in(0), default=15)
    parser.add_argument("--clipnorm", type=number_in(0, low_open=True), default=1.0,
                        help="gradient-norm clipping, the same for every model")
    parser.add_argument("--seed", type=int_in(0), default=0)
    parser.add_argument("--out", default="bench/accuracy")
    args = parser.parse_args(argv)

    from zoo.training.config import TrainConfig
    from zoo.training.rundir import RunDirectory
    from zoo.training.runs import train_or_reuse

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for task in args.tasks:
        for label in args.models:
            model, options = MODELS[label]
            config = TrainConfig(task=task, model=model, seed=args.seed,
                                 model_options={"units": args.units, **options},
                                 epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                                 early_stopping_patience=args.patience, clipnorm=args.clipnorm)
            # Finished runs are reused; unfinished ones resume.
            run = RunDirectory(train_or_reuse(
                config, out / f"{task}-{label.replace(' ', '').replace('=', '')}",
                data_dir=Path(args.data_root) / DATA_FOLDERS[task]))
            m = run.record().metrics
            with open(run.history, newline="") as f:
                history = list(csv.DictReader(f))
            needed = {name: m.required(name, "the accuracy table")
                      for name in ("best_epoch", "test_accuracy", "parameters",
                                   "training_seconds", "epochs_run")}
            val = float(history[needed["best_epoch"] - 1]["val_accuracy"])
            rows.append({"task": task, "model": label, "val_accuracy": 100 * val,
                         "test_accuracy": 100 * needed["test_accuracy"],
                         "parameters": needed["parameters"],
                         "train_seconds": needed["training_seconds"],
                         "epochs": needed["epochs_run"], "best_epoch": needed["best_epoch"]})
            print(f"RESULT {task} {label}: {rows[-1]['test_accuracy']:.2f}% "
                  f"{rows[-1]['parameters']} params {rows[-1]['train_seconds']:.0f}s", flush=True)
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = ["| task | model | val acc % | test acc % | parameters | train s | epochs (best) |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['task']} | {r['model']} | {r['val_accuracy']:.2f} | {r['test_accuracy']:.2f} | "
              f"{r['parameters']:,} | "
              f"{r['train_seconds']:.0f} | {r['epochs']} ({r['best_epoch']}) |" for r in rows]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    from zoo.core import logs

    logs.configure()  # run as a script: print the library's messages as `zoo` does
    raise SystemExit(main())
