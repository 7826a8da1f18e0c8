"""The sweep's tables, read back from the run directories (the only record of a result).

Cross-validation rows give mean ± standard deviation over the folds done (and say how many of
how many planned), the epoch count the CV chooses, and each variant against the first one fold
by fold (paired t-test: the folds share their subjects, so the fold-to-fold spread cancels).
"""

from __future__ import annotations

import statistics
from pathlib import Path

from zoo.experiments.benchmarks.realscale import T_975, mean_sd, paired_difference
from zoo.experiments.trials import Trial, result_of, summarise
from zoo.training.rundir import RunDirectory


def cv_epoch(curves: list[list[float]]) -> tuple[int, list[float]] | None:
    """The epoch (1-based) with the highest mean validation accuracy over the folds, over the
    epochs every fold ran, and each fold's accuracy there; None without curves. Choosing it on
    the same folds makes its CV figure slightly optimistic; the last-epoch column is not."""
    if not curves or not all(curves):
        return None
    n = min(len(c) for c in curves)
    means = [statistics.mean(c[e] for c in curves) for e in range(n)]
    best = max(range(n), key=lambda e: (means[e], -e))  # the earliest of equal means
    return best + 1, [c[best] for c in curves]


def group(trials: list[Trial]) -> dict[tuple, list[Trial]]:
    """CV trials by (task, label, variant), in the plan's order."""
    out: dict[tuple, list[Trial]] = {}
    for t in trials:
        if t.fold is not None:
            out.setdefault((t.task, t.label, t.variant), []).append(t)
    return out


def cv_rows(trials: list[Trial]) -> list[dict]:
    """One row per (task, label, variant) with its finished folds summarised."""
    rows = []
    for (task, label, variant), planned in group(trials).items():
        done = [(t.fold, s) for t in planned if (s := result_of(t)) is not None]
        chosen = cv_epoch([s["curve"] for _, s in done])
        rows.append({"task": task, "label": label, "variant": variant,
                     "planned": len(planned), "folds": [f for f, _ in done],
                     "runs": [s for _, s in done],
                     "epoch": chosen[0] if chosen else None,
                     "val_at_epoch": chosen[1] if chosen else []})
    return rows


def cv_table(rows: list[dict]) -> str:
    lines = ["| task | model | variant | folds done / planned | params | val % (model kept) | "
             "val % at the CV epoch | CV epoch | test % (visible) | train s / run |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        runs = r["runs"]
        if not runs:
            lines.append(f"| {r['task']} | {r['label']} | {r['variant']} | 0 / {r['planned']} "
                         "| - | - | - | - | - | - |")
            continue
        lines.append(
            f"| {r['task']} | {r['label']} | {r['variant']} | {len(runs)} / {r['planned']} "
            f"(folds {', '.join(map(str, r['folds']))}) | {runs[0]['parameters']:,} | "
            f"{mean_sd([s['val'] for s in runs if s['val'] is not None])} | "
            f"{mean_sd(r['val_at_epoch'])} | {r['epoch'] or '-'} | "
            f"{mean_sd([s['test'] for s in runs if s['test'] is not None])} | "
            f"{statistics.mean(s['seconds'] for s in runs):.0f} |")
    return "\n".join(lines) + "\n"


def paired_table(rows: list[dict]) -> str:
    """Every variant against the first variant of its (task, label), on the folds both have."""
    lines = ["| task | model | variant - first | paired folds | val (model kept) | "
             "beyond fold noise (paired t, 5 %) |", "|---|---|---|---|---|---|"]
    firsts: dict[tuple, dict] = {}
    for r in rows:
        key = (r["task"], r["label"])
        if key not in firsts:
            firsts[key] = r
            continue
        base = firsts[key]
        a = dict(zip(r["folds"], (s["val"] for s in r["runs"])))
        b = dict(zip(base["folds"], (s["val"] for s in base["runs"])))
        common = [f for f in a if f in b]
        if not common:
            lines.append(f"| {r['task']} | {r['label']} | {r['variant']} - {base['variant']} | "
                         "0 | - | - |")
            continue
        difference, beyond = paired_cells([a[f] for f in common], [b[f] for f in common])
        lines.append(f"| {r['task']} | {r['label']} | {r['variant']} - {base['variant']} | "
                     f"{len(common)} | {difference} | {beyond} |")
    return "\n".join(lines) + "\n" if len(lines) > 2 else ""


def paired_cells(x: list[float], y: list[float]) -> tuple[str, str]:
    """``x - y`` paired fold by fold, as two table cells: ``mean ± sd (t ...)``, and whether it
    is beyond fold noise (paired t, two-sided 5 %: ``yes`` / ``no``; ``-`` when untestable)."""
    mean, sd, t = paired_difference(x, y)
    n = len(x)
    beyond = "-" if t is None or n - 1 not in T_975 else ("yes" if abs(t) > T_975[n - 1] else "no")
    return f"{mean:+.2f} ± {sd:.2f}" + (f" (t {t:+.2f})" if t is not None else ""), beyond


def best_variants(rows: list[dict]) -> list[dict]:
    """Per (task, label), the variant with the highest mean CV validation accuracy at its CV
    epoch, among those with every planned fold done (the shipping protocol's choice)."""
    best: dict[tuple, dict] = {}
    for r in rows:
        if len(r["runs"]) < r["planned"] or r["epoch"] is None:
            continue
        key = (r["task"], r["label"])
        if key not in best or (statistics.mean(r["val_at_epoch"])
                               > statistics.mean(best[key]["val_at_epoch"])):
            best[key] = r
    return list(best.values())


def final_table(finals: list[tuple[dict, Trial]]) -> str:
    """The shipped retrains beside the CV estimate that chose them. A variant that fine-tunes
    another (``"init_from": "variant:NAME"``) comes after NAME's retrain, which it starts from:
    NAME's row is marked ``parent of ...`` (retrained to be started from, not itself the choice)
    and the choice's row names the run it starts from."""
    lines = ["| task | model | variant | starts from | epochs (CV) | CV estimate % (val at the "
             "CV epoch, folds) | test % (visible, retrained on all training subjects) | params "
             "| run |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row, trial in finals:
        done = RunDirectory(trial.run_dir).is_finished()
        test = summarise(trial.run_dir)["test"] if done else None  # None: no test split
        test = "not finished" if not done else "-" if test is None else f"{test:.2f}"
        variant = row["variant"] + (f" (parent of {row['child']})" if row.get("child")
                                    else "")
        lines.append(f"| {row['task']} | {row['label']} | {variant} | {_starts_from(trial)} | "
                     f"{row['epoch']} | {mean_sd(row['val_at_epoch'])} ({len(row['runs'])}) | "
                     f"{test} | {row['runs'][0]['parameters']:,} | `{trial.run_dir}` |")
    return "\n".join(lines) + "\n"


def _starts_from(trial: Trial) -> str:
    """A retrain's ``init_from`` as a cell: the parent variant's retrain (its folder name), a run
    from outside the sweep (its path), or ``-`` (trained from scratch)."""
    init = trial.settings.init_from
    if not init:
        return "-"
    return f"{trial.parent}: `{Path(init).name}`" if trial.parent else f"`{init}`"
