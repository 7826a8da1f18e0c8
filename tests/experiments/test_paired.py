"""experiments/campaigns/paired.py: fold-paired comparisons across models, checked against
SciPy's paired t-test on the same numbers."""

import json
import runpy
import sys
from pathlib import Path

import pytest
from scipy import stats

from tests.conftest import cv_results_record

REPO = Path(__file__).resolve().parents[2]


def _results(root: Path, name: str, values: dict[int, float]) -> None:
    folder = root / "har2" / name
    folder.mkdir(parents=True)
    for fold, val in values.items():
        (folder / f"fold{fold}.json").write_text(json.dumps(cv_results_record(fold, val)))


def test_pairs_only_common_folds_and_gives_scipys_t(tmp_path, capsys, monkeypatch):
    a = {0: 95.0, 1: 93.5, 2: 91.0, 3: 96.2, 4: 90.1}
    b = {0: 94.0, 1: 93.9, 2: 89.2, 3: 95.0}  # fold 4 not done: paired on folds 0-3
    _results(tmp_path, "sirnn/x", a)
    _results(tmp_path, "gru/y", b)
    monkeypatch.setattr(sys, "argv", ["paired.py", str(tmp_path), "har2", "sirnn/x:gru/y"])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(REPO / "experiments" / "campaigns" / "paired.py"), run_name="__main__")
    assert done.value.code == 0
    row = capsys.readouterr().out.strip().splitlines()[-1]
    t = stats.ttest_rel([a[f] for f in b], list(b.values())).statistic
    assert f"(t {t:+.2f})" in row and "| 4 |" in row
    diffs = [a[f] - b[f] for f in b]
    assert f"{sum(diffs) / 4:+.2f}" in row
