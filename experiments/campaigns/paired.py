"""Paired fold-by-fold comparisons across models and sweeps, read from the committed CV results
files alone (``zoo sweep cv`` tables pair variants only within one model's sweep).

    python -m zoo.experiments.campaigns.paired results/har2-campaign har2 \\
        sirnn/rot15_e30:gru/rot15 sirnn/rot25_e30:gru/rot15 sirnn/rot15_e30:lstm/rot15

Each ``LABEL/VARIANT:LABEL/VARIANT`` pair is compared on the folds both have (the same fold holds
out the same subjects, with the same seed, in every sweep of a campaign): the mean ± sd of the
difference of the validation accuracy of the model kept, the paired t statistic, and whether it
is beyond fold noise (two-sided, 5 %).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from zoo.core.cv_results import CvResultError, cv_result_files, read_cv_result
from zoo.experiments.benchmarks.realscale import mean_sd
from zoo.experiments.tables import paired_cells


def fold_values(results: Path, task: str, name: str) -> dict[int, float]:
    """``{fold: validation accuracy}`` of ``LABEL/VARIANT`` in ``results``; a clear error when
    it has no results files or a damaged one (`zoo.core.cv_results`)."""
    files = cv_result_files(results / task / name)
    if not files:
        raise SystemExit(f"{results / task / name}: no results files (fold*.json)")
    try:
        values = {r.fold: r.summary.val for r in map(read_cv_result, files)}
    except CvResultError as err:
        raise SystemExit(str(err)) from None
    return values


def pair_row(results: Path, task: str, pair: str) -> str:
    a_name, sep, b_name = pair.partition(":")
    if not sep:
        raise SystemExit(f"{pair!r}: expected LABEL/VARIANT:LABEL/VARIANT")
    a, b = fold_values(results, task, a_name), fold_values(results, task, b_name)
    common = sorted(set(a) & set(b))
    if len(common) < 2:
        return f"| {a_name} | {b_name} | {len(common)} | - | - | - | - |"
    x, y = [a[f] for f in common], [b[f] for f in common]
    difference, beyond = paired_cells(x, y)
    return (f"| {a_name} | {b_name} | {len(common)} | {mean_sd(x)} | {mean_sd(y)} | "
            f"{difference} | {beyond} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m zoo.experiments.campaigns.paired", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    parser.add_argument("results", type=Path, help="a CV results folder, e.g. "
                        "results/har2-campaign")
    parser.add_argument("task", help="the task folder in it, e.g. har2")
    parser.add_argument("pairs", nargs="+", metavar="LABEL/VARIANT:LABEL/VARIANT",
                        help="A:B, compared fold by fold (A - B)")
    args = parser.parse_args(argv)
    print("| A | B | paired folds | A val % | B val % | A - B | beyond fold noise (paired t, 5 %) |")
    print("|---|---|---|---|---|---|---|")
    for pair in args.pairs:
        print(pair_row(args.results, args.task, pair))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
