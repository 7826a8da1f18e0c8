"""Real-scale accuracy: every model on the full HAR-2 / DSA-19 training data, several seeds, one table.

    zoo sweep realscale --har ../shared/data/archives/uci_har_train_full.zip \
        --dsa ../shared/data/archives/dsa19_train_full.zip --out bench/realscale --num-cpus 2
    python -m zoo.experiments.benchmarks.realscale --out bench/realscale            # the table again
    python -m zoo.experiments.benchmarks.realscale --out A --compare B   # A vs B, seed by seed

The runs are trained by ``zoo sweep realscale`` (`zoo.experiments.sweep`: Ray Tune trials, an
embedded local Ray or a cluster; it replaced this module's ``--shard I/N`` processes); this module
defines the table (models, folds, budget: `grid`, `run_config`, `run_dir_of`) and reports it.

Seed ``s`` trains on all training subjects but the ``s``-th validation fold (a fixed partition of
the training subjects: 5 folds of 4-5 subjects on HAR-2, one subject per fold on DSA-19), so the
seeds are also a subject-wise cross-validation: the validation accuracy of the selected epoch,
averaged over seeds, estimates accuracy on unseen subjects without touching the test split. Early
stopping selects the epoch on validation loss; the test split is read once per run, at the end.

Each run is an ordinary resumable ``zoo train`` run directory
(``<out>/<task>/<label>/seed<s>``): a killed sweep continues where it stopped, finished runs
are reused. A run whose validation accuracy falls to chance after having been above it is
reported as collapsed (with the epoch), never silently averaged in.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
from pathlib import Path

from zoo.training.config import MAX_UNITS
from zoo.core.flags import int_in, number_in
from zoo.training.rundir import RunDirectory

# label -> (model, model options). Hidden 80 everywhere (004 Table 5); the iRNN family with the
# bounded, 8-bit fake-quantized state that integer export needs (docs/export.md).
BOUNDED = {"state_clip": 1.0, "state_quant_bits": 8}
# In training order: the candidates for the shipped models first, the slow K = 5 cell last.
MODELS = {
    "sirnn clip+q8": ("sirnn", BOUNDED),
    "lstm": ("lstm", {}),
    "gru": ("gru", {}),
    "fastgrnn": ("fastgrnn", {}),
    "fastrnn": ("fastrnn", {}),
    "antisymmetric": ("antisymmetric", {}),
    "stablernn": ("stablernn", {}),
    "simple_rnn": ("simple_rnn", {}),
    "gated_antisymmetric": ("gated_antisymmetric", {}),
    "sirnn (paper, unbounded)": ("sirnn", {}),
    "irnn K=5 clip+q8": ("irnn", {"k": 5, **BOUNDED}),
}
# The training subjects of each task (UCI HAR's 21 official training subjects; DSA-19's p1-p4)
# and the number of validation folds they are dealt into.
TRAIN_SUBJECTS = {
    "har2": [1, 3, 5, 6, 7, 8, 11, 14, 15, 16, 17, 19, 21, 22, 23, 25, 26, 27, 28, 29, 30],
    "dsa19": [1, 2, 3, 4],
}
FOLDS = {"har2": 5, "dsa19": 4}


def validation_fold(task: str, fold: int) -> list[int]:
    """The training subjects held out for validation in ``fold``: the task option
    ``val_fold=[fold, n]`` on the full data."""
    from zoo.training.tasks.base import fold_subjects

    n = FOLDS[task]
    return fold_subjects(TRAIN_SUBJECTS[task], [fold % n, n])


def run_config(task: str, label: str, seed: int, args):
    from zoo.training.config import TrainConfig

    model, options = MODELS[label]
    return TrainConfig(task=task, model=model, seed=seed,
                       model_options={"units": args.units, **options},
                       task_options={"val_subjects": validation_fold(task, seed)},
                       epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                       lr_decay_epochs=args.lr_decay_epochs, lr_decay_factor=0.1,
                       early_stopping_patience=args.patience, clipnorm=args.clipnorm,
                       backend=args.backend)


# Trained with every seed first: the candidates for the shipped models; the other models get
# seed 0 on both tasks before any of them gets a second seed.
FIRST = ("sirnn clip+q8", "lstm", "gru")


def grid(args) -> list[tuple[str, str, int]]:
    first = [m for m in args.models if m in FIRST]
    rest = [m for m in args.models if m not in FIRST]
    order = [(label, seed) for label in first for seed in range(args.seeds)]
    order += [(label, 0) for label in rest]
    order += [(label, seed) for seed in range(1, args.seeds) for label in rest]
    return [(task, label, seed) for label, seed in order for task in args.tasks]


def run_dir_of(out: Path, task: str, label: str, seed: int) -> Path:
    slug = label.replace(" ", "_").replace("=", "").replace("+", "_").replace("(", "").replace(
        ")", "").replace(",", "")
    return out / task / slug / f"seed{seed}"


def collapse_epoch(history: list[dict], chance: float) -> int | None:
    """The first epoch whose validation accuracy is within 2 points of chance after an earlier
    epoch was 10 points above it (None when the run never collapsed)."""
    above = False
    for row in history:
        acc = float(row["val_accuracy"])
        above = above or acc > chance + 0.10
        if above and acc < chance + 0.02:
            return int(float(row["epoch"]))
    return None


def summarise(run_dir: Path, task: str) -> dict:
    metrics = RunDirectory(run_dir).record().metrics
    history = list(csv.DictReader(open(RunDirectory(run_dir).history)))
    classes = {"har2": 2, "dsa19": 19}[task]
    needed = {name: metrics.required(name, "the real-scale table")
              for name in ("best_epoch", "test_accuracy", "parameters", "training_seconds",
                           "epochs_run")}
    best = history[needed["best_epoch"] - 1]
    return {"val": 100 * float(best["val_accuracy"]), "test": 100 * needed["test_accuracy"],
            "parameters": needed["parameters"], "seconds": needed["training_seconds"],
            "epochs": needed["epochs_run"], "best_epoch": needed["best_epoch"],
            "collapsed": collapse_epoch(history, 1.0 / classes)}


def mean_sd(values: list[float]) -> str:
    """'mean ± sd' (2 decimals) of a table cell; the value alone for one run, '-' for none."""
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"


def report(args) -> str:
    out = Path(args.out)
    lines = ["| task | model | params | val % (subject CV) | test % | seeds | collapsed | "
             "epochs (best) | train s / run |", "|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for task in args.tasks:
        for label in args.models:
            runs = [summarise(run_dir_of(out, task, label, s), task) for s in range(args.seeds)
                    if RunDirectory(run_dir_of(out, task, label, s)).is_finished()]
            if not runs:
                continue
            collapsed = [f"seed {i}: epoch {r['collapsed']}" for i, r in enumerate(runs)
                         if r["collapsed"]]
            rows.append({"task": task, "model": label, **{k: [r[k] for r in runs] for k in runs[0]}})
            lines.append(
                f"| {task} | {label} | {runs[0]['parameters']:,} | "
                f"{mean_sd([r['val'] for r in runs])} | "
                f"{mean_sd([r['test'] for r in runs])} | {len(runs)} | "
                f"{'; '.join(collapsed) or 'none'} | "
                f"{'/'.join(str(r['epochs']) for r in runs)} "
                f"({'/'.join(str(r['best_epoch']) for r in runs)}) | "
                f"{statistics.mean(r['seconds'] for r in runs):.0f} |")
    (out / "results.json").write_text(json.dumps(rows, indent=2))
    table = "\n".join(lines) + "\n"
    (out / "results.md").write_text(table)
    return table


# Two-sided 95 % quantile of Student's t by degrees of freedom (n seeds - 1).
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def paired_difference(a: list[float], b: list[float]) -> tuple[float, float, float | None]:
    """Mean and standard deviation of a - b over seeds, and the paired t statistic (None with
    fewer than 2 pairs or no spread). Seed s of both runs used the same validation fold, so the
    pairs share their subjects and the fold-to-fold spread cancels."""
    diffs = [x - y for x, y in zip(a, b)]
    if len(diffs) < 2:
        return diffs[0] if diffs else float("nan"), float("nan"), None
    mean, sd = statistics.mean(diffs), statistics.stdev(diffs)
    return mean, sd, (mean / (sd / len(diffs) ** 0.5) if sd > 0 else None)


def compare(out: Path, other: Path) -> str:
    """Seed-by-seed comparison of two benchmark outputs (e.g. GPU and CPU) from their
    results.json: the mean difference of validation and test accuracy, its spread, and whether it
    is beyond seed noise (paired t-test at 5 %; with many rows some pass by chance alone)."""
    rows = {(r["task"], r["model"]): r for r in json.loads((other / "results.json").read_text())}
    lines = [f"A = {out}, B = {other}", "",
             "| task | model | seeds | val A - B | test A - B | beyond seed noise (paired t, 5 %) |",
             "|---|---|---|---|---|---|"]
    tested = flagged = 0
    for a in json.loads((out / "results.json").read_text()):
        b = rows.get((a["task"], a["model"]))
        if b is None:
            continue
        n = min(len(a["val"]), len(b["val"]))
        cells, beyond = [], []
        for metric in ("val", "test"):
            mean, sd, t = paired_difference(a[metric][:n], b[metric][:n])
            cells.append(f"{mean:+.2f} ± {sd:.2f}" + (f" (t {t:+.1f})" if t is not None else ""))
            if t is not None and n - 1 in T_975:
                tested += 1
                if abs(t) > T_975[n - 1]:
                    beyond.append(metric)
        flagged += len(beyond)
        lines.append(f"| {a['task']} | {a['model']} | {n} | {cells[0]} | {cells[1]} | "
                     f"{', '.join(beyond) or 'no'} |")
    lines += ["", f"{flagged} of {tested} tests beyond seed noise at 5 %; about "
              f"{0.05 * tested:.1f} are expected by chance alone."]
    return "\n".join(lines) + "\n"


def add_table_arguments(parser: argparse.ArgumentParser) -> None:
    """The table's options (data, models, seeds, budget, output), shared with ``zoo sweep
    realscale``, which trains it."""
    parser.add_argument("--har", help="UCI HAR folder or zip (the full training split)")
    parser.add_argument("--dsa", help="DSA-19 folder or zip")
    parser.add_argument("--tasks", nargs="+", default=["har2", "dsa19"], choices=list(TRAIN_SUBJECTS),
                        help="the tasks of the table (default: har2 dsa19)")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS),
                        help="the models of the table (default: all of them)")
    parser.add_argument("--seeds", type=int_in(1), default=3,
                        help="seeds per model and task, each holding out another subject fold "
                             "(default 3)")
    parser.add_argument("--units", type=int_in(1, MAX_UNITS), default=80,
                        help="hidden size of every model (default 80)")
    parser.add_argument("--epochs", type=int_in(1), default=40,
                        help="epochs of every run (default 40)")
    parser.add_argument("--batch-size", type=int_in(1), default=128,
                        help="batch size of every run (default 128)")
    parser.add_argument("--lr", type=number_in(0, low_open=True), default=1e-2,
                        help="learning rate of every run (default 0.01)")
    parser.add_argument("--lr-decay-epochs", type=int_in(1), default=20,
                        help="learning rate x0.1 every this many epochs")
    parser.add_argument("--patience", type=int_in(0), default=15,
                        help="early-stopping patience in epochs (default 15)")
    parser.add_argument("--clipnorm", type=number_in(0, low_open=True), default=1.0,
                        help="gradient norm clipping (default 1.0)")
    parser.add_argument("--out", default="bench/realscale",
                        help="output folder (default bench/realscale)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    add_table_arguments(parser)
    parser.add_argument("--report", action="store_true",
                        help="accepted for old command lines: this module only reports; "
                             "`zoo sweep realscale` trains")
    parser.add_argument("--compare", metavar="OTHER_OUT",
                        help="compare this output with another one, seed by seed")
    for retired in ("--shard", "--threads"):  # named, so an old command line is told where to go
        parser.add_argument(retired, help="retired: `zoo sweep realscale` trains the table on "
                            "Ray (--num-cpus, --cpus-per-trial, --address)")
    args = parser.parse_args(argv)
    if args.shard or args.threads:
        parser.error("--shard and --threads are retired: train the table with `zoo sweep "
                     "realscale` and the same table options (one Ray trial per run, e.g. "
                     "--num-cpus 2 --cpus-per-trial 1); this module now only reports it")
    print(report(args))
    if args.compare:
        print(compare(Path(args.out), Path(args.compare)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
