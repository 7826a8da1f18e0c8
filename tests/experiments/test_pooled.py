"""experiments/campaigns/pooled.py: candidates compared over several data sets' CVs, seeds
averaged per fold, checked against the same numbers worked by hand and through SciPy."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from tests.conftest import cv_results_record
from zoo.experiments.campaigns.pooled import main


def _results(root: Path, name: str, values: dict[int, float]) -> None:
    folder = root / "har2" / name
    folder.mkdir(parents=True)
    for fold, val in values.items():
        (folder / f"fold{fold}.json").write_text(json.dumps(cv_results_record(fold, val)))


def test_seeds_average_per_fold_and_every_data_sets_folds_pool(tmp_path, capsys):
    one, two = tmp_path / "one", tmp_path / "two"
    _results(one, "sirnn/a", {0: 90.0, 1: 80.0, 2: 70.0})
    _results(one, "sirnn/a_s1", {0: 92.0, 1: 84.0})  # fold 2 not done: folds 0-1 only
    _results(one, "sirnn/b", {0: 89.0, 1: 83.0, 2: 60.0})
    _results(two, "sirnn/a", {0: 50.0, 1: 60.0, 2: 65.0})
    _results(two, "sirnn/b", {0: 40.0, 1: 61.0, 2: 55.0})
    assert main(["har2", str(one), "sirnn/a,sirnn/a_s1", "sirnn/b",
                 str(two), "sirnn/a", "sirnn/b"]) == 0
    out = capsys.readouterr().out
    by_hand = [91.0 - 89.0, 82.0 - 83.0, 10.0, -1.0, 10.0]  # (90+92)/2 - 89, (80+84)/2 - 83, ...
    assert "| one | 2 | +2.00 / -1.00 |" in out and "| two | 3 | +10.00 / -1.00 / +10.00 |" in out
    t = stats.ttest_1samp(by_hand, 0.0)
    wilcoxon = stats.wilcoxon(by_hand)
    line = re.search(r"pooled over 5 folds: ([+-][\d.]+) ± ([\d.]+), t ([+-][\d.]+) \(p ([\d.]+)\), "
                     r"Wilcoxon p ([\d.]+); A above B on 3 of 5 folds", out)
    assert line, out
    mean, sd, t_value, p, w = map(float, line.groups())
    assert mean == pytest.approx(np.mean(by_hand), abs=0.005)
    assert sd == pytest.approx(np.std(by_hand, ddof=1), abs=0.005)
    assert t_value == pytest.approx(t.statistic, abs=0.005)
    # printed with 3 decimals
    assert p == pytest.approx(t.pvalue, abs=1e-3) and w == pytest.approx(wilcoxon.pvalue, abs=1e-3)


def test_arguments_come_in_threes(tmp_path):
    with pytest.raises(SystemExit):
        main(["har2", str(tmp_path), "sirnn/a"])
