"""The real-scale benchmark's bookkeeping: its folds, collapse detection and the seed-by-seed
comparison of two outputs (GPU vs CPU), the statistics checked against SciPy."""

import json

import numpy as np
import pytest
from scipy import stats

from zoo.experiments.benchmarks import realscale


@pytest.mark.parametrize("task", ["har2", "dsa19"])
def test_validation_folds_partition_the_training_subjects(task):
    folds = [realscale.validation_fold(task, f) for f in range(realscale.FOLDS[task])]
    seen = [s for fold in folds for s in fold]
    assert sorted(seen) == sorted(realscale.TRAIN_SUBJECTS[task])  # each subject exactly once
    assert all(folds)


def test_collapse_is_a_fall_to_chance_after_learning():
    history = [{"epoch": e, "val_accuracy": a} for e, a in enumerate([0.6, 0.9, 0.93, 0.51], 1)]
    assert realscale.collapse_epoch(history, chance=0.5) == 4
    never_learned = [{"epoch": e, "val_accuracy": 0.5} for e in range(1, 5)]
    assert realscale.collapse_epoch(never_learned, chance=0.5) is None


def test_paired_difference_is_scipys_paired_t_test():
    rng = np.random.default_rng(0)
    a, b = list(rng.normal(90, 3, 5)), list(rng.normal(89, 3, 5))
    mean, sd, t = realscale.paired_difference(a, b)
    assert mean == pytest.approx(np.mean(np.subtract(a, b)))
    assert sd == pytest.approx(np.std(np.subtract(a, b), ddof=1))
    assert t == pytest.approx(stats.ttest_rel(a, b).statistic)


@pytest.mark.parametrize("df", sorted(realscale.T_975))
def test_t_quantiles_are_students(df):
    assert realscale.T_975[df] == pytest.approx(stats.t.ppf(0.975, df), abs=1e-3)


def test_compare_flags_exactly_the_rows_scipy_rejects(tmp_path):
    rng = np.random.default_rng(1)
    rows_a, rows_b, expected = [], [], {}
    for i, shift in enumerate([0.0, 0.1, 3.0, 5.0]):
        base = list(rng.normal(90, 4, 3))
        other = [x + shift + rng.normal(0, 0.5) for x in base]
        same_test = list(rng.normal(95, 1, 3))
        rows_a.append({"task": "har2", "model": f"m{i}", "val": other, "test": same_test})
        rows_b.append({"task": "har2", "model": f"m{i}", "val": base, "test": same_test[::-1]})
        expected[f"m{i}"] = stats.ttest_rel(other, base).pvalue < 0.05
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    (tmp_path / "a" / "results.json").write_text(json.dumps(rows_a))
    (tmp_path / "b" / "results.json").write_text(json.dumps(rows_b))
    table = realscale.compare(tmp_path / "a", tmp_path / "b")
    for name, rejected in expected.items():
        line = next(ln for ln in table.splitlines() if f"| {name} |" in ln)
        assert line.rstrip(" |").endswith("val") == rejected, line
    assert any(expected.values()) and not all(expected.values())  # the test can fail both ways
