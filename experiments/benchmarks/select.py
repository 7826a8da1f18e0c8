"""Pick each model's learning rate by validation accuracy across accuracy-benchmark runs.

    python -m zoo.experiments.benchmarks.select bench/accuracy:1e-2 bench/accuracy_lr3e-3:3e-3

Each argument is ``FOLDER:LABEL`` for a ``results.csv`` written by ``zoo.experiments.benchmarks.accuracy``.
Selection uses validation accuracy only (ties: lower validation loss is not recorded, so the
first folder wins); the test accuracy of the selected run is what the table reports.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="Pick each model's learning rate by validation "
                                            "accuracy across accuracy-benchmark runs.",
                                            allow_abbrev=False)
    p.add_argument("runs", nargs="+", metavar="FOLDER:LABEL",
                   help="a folder with the results.csv of zoo.experiments.benchmarks.accuracy, and the "
                        "label (its learning rate) to show for it")
    return p


def _results(arg: str) -> list[dict]:
    if ":" not in arg:
        raise SystemExit(f"error: {arg!r} is not FOLDER:LABEL (e.g. bench/accuracy:1e-2)")
    folder, _ = arg.rsplit(":", 1)
    path = Path(folder) / "results.csv"
    if not path.is_file():
        raise SystemExit(f"error: no such file: {path} (written by zoo.experiments.benchmarks.accuracy "
                         "--out FOLDER)")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    best: dict[tuple[str, str], dict] = {}
    order: list[tuple[str, str]] = []
    for arg in args.runs:
        label = arg.rsplit(":", 1)[-1]
        for row in _results(arg):
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
