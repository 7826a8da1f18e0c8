"""One candidate against another over several data sets' CVs at once, seeds averaged per fold:
how the windows defaults were chosen (issue 49, docs/your-data.md).

    python -m zoo.experiments.campaigns.pooled windows \\
        results/windows-cv-har6 sirnn/lean60k4_e40,sirnn/lean60k4_e40_s1 sirnn/base,sirnn/base_s1 \\
        results/windows-cv-dsa19 sirnn/lean60k5_e40,sirnn/lean60k5_e40_s1 sirnn/base,sirnn/base_s1

Each data set is RESULTS A_RUNS B_RUNS, a run list being ``LABEL/VARIANT`` names separated by
commas (one per seed). Per fold the seeds of A are averaged, likewise B's, and A - B taken; each
data set's folds give a mean ± sd and a paired t (`paired`'s rule), then every data set's folds
together give the pooled mean ± sd, the one-sample t test and the Wilcoxon signed-rank test
(scipy, two-sided), and how many folds moved which way. A fold is one held-out group of people,
so the pooled test is over people, not over seeds.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from scipy import stats

from zoo.experiments.campaigns.paired import fold_values
from zoo.experiments.tables import paired_cells


def seed_mean(results: Path, task: str, runs: str) -> dict[int, float]:
    """``{fold: mean over the runs}`` on the folds every run of the comma list has."""
    per_run = [fold_values(results, task, name) for name in runs.split(",")]
    folds = sorted(set.intersection(*(set(values) for values in per_run)))
    return {f: statistics.mean(values[f] for values in per_run) for f in folds}


def differences(results: Path, task: str, a_runs: str, b_runs: str) -> list[float]:
    """A - B per fold both have (seeds averaged)."""
    a, b = seed_mean(results, task, a_runs), seed_mean(results, task, b_runs)
    return [a[f] - b[f] for f in sorted(set(a) & set(b))]


def pooled_lines(task: str, groups: list[tuple[Path, str, str]]) -> list[str]:
    lines = ["| data | folds | A - B per fold | A - B | beyond fold noise (paired t, 5 %) |",
             "|---|---|---|---|---|"]
    pooled = []
    for results, a_runs, b_runs in groups:
        d = differences(results, task, a_runs, b_runs)
        pooled += d
        cell, beyond = paired_cells(d, [0.0] * len(d))
        shown = " / ".join(f"{x:+.2f}" for x in d)
        lines.append(f"| {results.name} | {len(d)} | {shown} | {cell} | {beyond} |")
    if len(pooled) < 3:
        return lines
    t = stats.ttest_1samp(pooled, 0.0)
    wilcoxon = stats.wilcoxon(pooled)
    up = sum(x > 0 for x in pooled)
    lines.append(f"\npooled over {len(pooled)} folds: {statistics.mean(pooled):+.2f} ± "
                 f"{statistics.stdev(pooled):.2f}, t {t.statistic:+.2f} (p {t.pvalue:.3f}), "
                 f"Wilcoxon p {wilcoxon.pvalue:.3f}; A above B on {up} of {len(pooled)} folds")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m zoo.experiments.campaigns.pooled", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    parser.add_argument("task", help="the task folder in each results folder, e.g. windows")
    parser.add_argument("groups", nargs="+", metavar="RESULTS A_RUNS B_RUNS",
                        help="per data set: a CV results folder, then A's and B's runs "
                             "(LABEL/VARIANT[,LABEL/VARIANT...], one per seed)")
    args = parser.parse_args(argv)
    if len(args.groups) % 3:
        parser.error(f"groups come in threes (RESULTS A_RUNS B_RUNS); got {len(args.groups)} "
                     "arguments")
    groups = [(Path(args.groups[i]), args.groups[i + 1], args.groups[i + 2])
              for i in range(0, len(args.groups), 3)]
    print("\n".join(pooled_lines(args.task, groups)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
