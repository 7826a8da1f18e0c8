"""``zoo.experiments.user_windows``: the UCI HAR windows written as a user's ``.npz`` files
(HAR-6 names, subject groups), which the windows task reads back as the har6 task reads HAR."""

import numpy as np
import pytest

from zoo.experiments import user_windows
from zoo.training.tasks import get_task


def test_the_user_files_are_har6_as_a_user_would_save_it(shared_data, tmp_path):
    counts = user_windows.write_user_files(shared_data / "har", tmp_path / "har6")
    assert counts == {"train": 1505, "test": 701}
    har6 = get_task("har6", val_fold=[0, 2]).load(shared_data / "har")
    mine = get_task("windows", val_fold=[0, 2]).load(tmp_path / "har6" / "train.npz")
    np.testing.assert_array_equal(mine.train.x, har6.train.x)
    assert mine.info["val_groups"] == har6.info["val_subjects"]
    activities = np.array(get_task("har6").class_names)  # UCI's order; the windows task sorts
    np.testing.assert_array_equal(np.array(sorted(activities))[mine.train.y],
                                  activities[har6.train.y])
    with np.load(tmp_path / "har6" / "test.npz") as test:
        assert sorted(set(test["groups"].tolist())) == [12, 24] and len(test["X"]) == 701


def test_the_command_refuses_an_existing_out_and_a_score_without_test(tmp_path, capsys):
    with pytest.raises(SystemExit):
        user_windows.main(["--data-dir", "x", "--out", str(tmp_path)])
    assert "exists; give a new folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        user_windows.main(["--score", str(tmp_path)])
    assert "--score needs --test" in capsys.readouterr().err


def test_dsa19_written_as_a_user_would_is_the_dsa19_task_with_its_sensors(shared_data, tmp_path):
    counts = user_windows.write_dsa_files(shared_data / "dsa19" / "data", tmp_path / "dsa")
    assert counts == {"train": 380, "test": 380}
    dsa = get_task("dsa19", val_fold=[0, 4]).load(shared_data / "dsa19" / "data")
    task = get_task("windows", val_fold=[0, 4])
    mine = task.load(tmp_path / "dsa" / "train.npz")
    assert mine.info["val_groups"] == dsa.info["val_subjects"] == [1]
    np.testing.assert_array_equal(mine.train.x, dsa.train.x)
    activities = np.array(get_task("dsa19").class_names)
    np.testing.assert_array_equal(np.array(sorted(activities))[mine.train.y],
                                  activities[dsa.train.y])
    # The channel names say what dsa19 declares: five units, each its own rotation.
    assert task.sensors == get_task("dsa19").sensors
    with np.load(tmp_path / "dsa" / "test.npz") as test:
        assert sorted(set(test["groups"].tolist())) == [5, 6, 7, 8]
        assert test["channels"][0] == "T_acc_x" and test["channels"][-1] == "LL_mag_z"
