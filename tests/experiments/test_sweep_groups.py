"""``zoo sweep cv`` on the ``windows`` task folds whole groups (subjects, recordings) as it folds
HAR's subjects: fold k of n holds out every n-th sorted group from the k-th, each group once."""

import argparse

import numpy as np
import pytest

from zoo.experiments import sweep, trials
from zoo.training.tasks import get_task


@pytest.fixture(scope="module")
def grouped_npz(tmp_path_factory):
    rng = np.random.default_rng(0)
    groups = np.repeat(["anna", "ben", "carl", "dora", "eve"], 12)
    path = tmp_path_factory.mktemp("sweep") / "mine.npz"
    np.savez(path, X=rng.normal(size=(60, 16, 3)), y=np.tile(["rest", "walk"], 30),
             groups=groups)
    return path


def _args(path, folds):
    return argparse.Namespace(report=False, task="windows", data_dir=str(path), dry_run=False,
                              address=None, folds=folds)


def test_cv_trials_hold_out_each_group_once(grouped_npz, tmp_path):
    base = trials.base_config("windows", "sirnn", None, {"epochs": 2})
    sweep.check_folds(_args(grouped_npz, 3), base)  # 5 groups, 3 folds: accepted
    planned = trials.cv_trials("windows", "sirnn", base, {"a": {}}, 3, tmp_path, grouped_npz)
    held = [get_task("windows", **t.config["task_options"]).load(grouped_npz).info["val_groups"]
            for t in planned]
    assert held == [["anna", "dora"], ["ben", "eve"], ["carl"]]
    final = trials.final_trial(planned[0], 4, tmp_path)
    data = get_task("windows", **final.config["task_options"]).load(grouped_npz)
    assert data.info["val_groups"] == [] and len(data.train) == 60


def test_more_folds_than_groups_is_refused_before_any_trial(grouped_npz):
    base = trials.base_config("windows", "sirnn", None, {"epochs": 2})
    with pytest.raises(ValueError, match=r"mine.npz: option val_fold=\[0, 6\] asks for 6 folds "
                                         r"of 5 group\(s\) \['anna', 'ben', 'carl', 'dora', "
                                         r"'eve'\]; at most 5 folds"):
        sweep.check_folds(_args(grouped_npz, 6), base)


def test_preflight_builds_each_variant_with_the_shape_and_classes_of_the_data(grouped_npz,
                                                                             tmp_path):
    """The windows task knows its window shape only from the data: the preflight reads it as
    ``zoo train`` does (it refused every windows CV before), and still refuses a bad variant."""
    base = trials.base_config("windows", "sirnn", None, {"epochs": 2})
    planned = trials.cv_trials("windows", "sirnn", base, {"a": {}}, 3, tmp_path, grouped_npz)
    sweep.preflight(planned)
    unbuildable = {"b": {"model_options": {"state_clip": None}}}  # an 8-bit state, unbounded
    bad = trials.cv_trials("windows", "sirnn", base, unbuildable, 3, tmp_path, grouped_npz)
    with pytest.raises(ValueError, match=r"windows / sirnn / b / fold 0: "):
        sweep.preflight(bad)
