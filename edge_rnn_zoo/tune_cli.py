"""``zoo tune``: the most accurate model that fits a device budget, searched on your data
(`zoo.experiments.tune`). Nothing heavy is imported before `run_tune`."""

from __future__ import annotations

import argparse
from pathlib import Path

from zoo.export.profile.targets import TARGETS as PROFILE_TARGETS
from zoo.training.flags import int_in, number_in

BUDGET_HELP = ("the device budget, KEY=VALUE[,KEY=VALUE...], KEY one of flash_bytes, ram_bytes, "
               "instructions_per_second, instructions_per_window, e.g. "
               "instructions_per_window=250000,flash_bytes=32768")


def add_tune_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", required=True, choices=("windows", "audio_folder"),
                        help="windows: your .npz / CSV sensor windows; audio_folder: your "
                             "folder of labelled clips")
    parser.add_argument("--data-dir", required=True, help="your data (the task's --data-dir)")
    parser.add_argument("--budget", required=True, help=BUDGET_HELP)
    parser.add_argument("--target", default="cortex-m4", choices=tuple(PROFILE_TARGETS),
                        help="the core the budget is for, one of zoo profile's (default "
                             "cortex-m4: the cost model's own fit; the others scale it by "
                             "ratios fitted to the shipped tags' figures, and one whose "
                             "leave-one-out error is over 15 %% is refused)")
    parser.add_argument("--time-budget", type=number_in(0, low_open=True), default=60,
                        metavar="MINUTES", help="minutes the whole command may take (default 60): "
                        "the search trains for nine tenths (at least 2 minutes are kept) and "
                        "the rest retrains, exports and measures the best")
    parser.add_argument("--out", default="runs/tune", help="a new folder for the search and "
                        "its results (default runs/tune)")
    parser.add_argument("--address", help="join this Ray cluster ('auto' or HOST:PORT) "
                        "instead of an embedded local Ray")
    parser.add_argument("--resume", action="store_true",
                        help="continue the search in --out (finished trials are not rerun)")
    parser.add_argument("--epochs", type=int_in(1), default=20,
                        help="epochs of a trial that is not stopped early (default 20)")
    parser.add_argument("--models", nargs="+", choices=("sirnn", "fastgrnn", "gru"),
                        help="the cells to search (default all three)")
    parser.add_argument("--sampling-rate", type=number_in(0, low_open=True), metavar="HZ",
                        help="samples per second of your windows (for an "
                             "instructions_per_second budget)")
    parser.add_argument("--cpus-per-trial", type=number_in(0, low_open=True), default=1,
                        help="CPUs each trial reserves and trains with (default 1)")
    parser.add_argument("--max-concurrent", type=int_in(1), help="at most this many trials "
                        "at once")
    parser.add_argument("--seed", type=int_in(0), default=0, help="seed of the trials' order")
    parser.add_argument("--no-best", action="store_true",
                        help="stop after the frontier: no retrain, export or measurement")


def check_tune(args) -> None:
    """The budget's keys and values and --out, before Keras or Ray load."""
    from zoo.experiments.tune import parse_budget

    if not args.resume:
        parse_budget(args.budget)
    if not Path(args.data_dir).exists():
        raise FileNotFoundError(f"--data-dir {args.data_dir}: no such file or folder")


def run_tune(args) -> int:
    from zoo.experiments.tune import run_tune as run

    return run(args)
