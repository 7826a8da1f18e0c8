"""Pick each model's learning rate by validation accuracy across accuracy-benchmark runs.

    python -m training.benchmarks.select bench/accuracy:1e-2 bench/accuracy_lr3e-3:3e-3

Each argument is ``FOLDER:LABEL`` for a ``results.csv`` written by ``training.benchmarks.accuracy``.
Selection uses validation accuracy only (ties: lower validation loss is not recorded, so the
first folder wins); the test accuracy of the selected run is what the table reports.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path


def main(argv=None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    best: dict[tuple[str, str], dict] = {}
    order: list[tuple[str, str]] = []
    for arg in args:
        folder, label = arg.rsplit(":", 1)
        for row in csv.DictReader(open(Path(folder) / "results.csv")):
            key = (row["task"], row["model"])
            row = {**row, "lr": label}
            if key not in best:
                order.append(key)
                best[key] = row
            elif float(row["val_accuracy"]) > float(best[key]["val_accuracy"]):
                best[key] = row
    print("| task | model | lr (by val) | val acc % | test acc % | parameters | train s |")
    print("|---|---|---|---|---|---|---|")
    for key in order:
        r = best[key]
        print(f"| {r['task']} | {r['model']} | {r['lr']} | {float(r['val_accuracy']):.2f} | "
              f"{float(r['test_accuracy']):.2f} | {int(r['parameters']):,} | "
              f"{float(r['train_seconds']):.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
