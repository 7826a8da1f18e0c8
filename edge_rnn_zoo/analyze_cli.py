"""``zoo analyze RUN_DIR``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from zoo.core.flags import int_in
from zoo.training.rundir import check_no_dangling_link, check_run_dir_argument


def add_analyze_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", help="a run directory written by `zoo train`")
    parser.add_argument("--out", help="report folder (default: RUN_DIR/analysis)")
    parser.add_argument("--data-dir", help="dataset (default: where the run found its data)")
    parser.add_argument("--jacobian-sequences", type=int_in(1), default=16,
                        help="validation sequences whose every step gets a Jacobian (default 16)")
    # The memory probe scores a ridge regression by 5-fold cross-validation: 2 sequences a fold.
    parser.add_argument("--max-sequences", type=int_in(10), default=2000,
                        help="cap on sequences for truncation and the memory probe (at least "
                             "10; default 2000)")
    parser.add_argument("--seed", type=int_in(0), default=0, help="subsampling seed")


def check_analyze(args) -> None:
    """A finished run, and an --out that is not through a dangling symlink (before Keras)."""
    if args.out:
        check_no_dangling_link(Path(args.out))
    check_run_dir_argument(args)


def run_analyze(args) -> int:
    from zoo.experiments.analysis import analyze_run

    try:
        analyze_run(args.run_dir, out_dir=args.out, data_dir=args.data_dir,
                    jacobian_sequences=args.jacobian_sequences,
                    max_sequences=args.max_sequences, seed=args.seed)
    except (ValueError, FileNotFoundError, FileExistsError) as err:
        print(f"zoo analyze: error: {err}", file=sys.stderr)
        return 2
    return 0
