"""``zoo ship --cv-results FOLDER``: a tag's card takes its CV from the committed results files of
the recipe's subject CV when the folds' run folders are gone (they are not committed)."""

import json
import statistics
from pathlib import Path

import pytest

from zoo.export.ship import cv_summaries, ship

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "models" / "pretrained" / "sirnn.dsa19_tiny" / "card.json"
ITS_CV = REPO / "results" / "dsa19-campaign" / "dsa19" / "sirnn" / "p5_u40_r8_qat_lr1e-4"


def test_the_results_files_give_the_cv_the_fold_runs_gave():
    """sirnn.dsa19_tiny was shipped from its four fold runs (--seed-runs: each run's history at
    its kept epoch); the sweep's results files of the same folds must give the same CV."""
    card = json.loads(TINY.read_text())
    seeds = cv_summaries(ITS_CV)
    assert [round(s.val_accuracy, 2) for s in seeds] == \
        [s["val_accuracy"] for s in card["data"]["seeds"]]
    assert round(statistics.mean(s.val_accuracy for s in seeds), 2) == \
        card["metrics"]["val_accuracy_subject_cv_mean"]


def test_a_folder_without_results_or_a_foreign_file_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="no fold"):
        cv_summaries(tmp_path)
    (tmp_path / "fold0.json").write_text(json.dumps({"summary": {"val": 90.0}}))
    with pytest.raises(ValueError, match="fold0.json"):
        cv_summaries(tmp_path)


def test_seed_runs_and_cv_results_together_are_refused_before_anything(tmp_path):
    with pytest.raises(ValueError, match="give one"):
        ship(tmp_path / "run", "sirnn.x", seed_runs=[tmp_path / "s0"], command="c",
             dest=tmp_path / "dest", cv_results=ITS_CV)
    assert not (tmp_path / "dest").exists()
