"""Sensors found from channel names (`zoo.training.data.sensor_names`, the windows task's
``sensors: auto``): checked against the layouts the zoo's own tasks declare by hand (UCI HAR's
one phone, DSA-19's five units), names that are not motion sensors left alone, and the windows
task turning what it found, or warning and training without the rotation when it found none."""

import logging

import numpy as np
import pytest

from zoo.experiments.user_windows import DSA_CHANNELS
from zoo.training import trainer
from zoo.training.config import TrainConfig
from zoo.training.data.sensor_names import sensors_from_channel_names, stem_tokens
from zoo.training.tasks import get_task
from zoo.training.tasks.dsa import DSA19
from zoo.training.tasks.har import CHANNELS as HAR_CHANNELS
from zoo.training.tasks.har import HAR2


def _as_tuples(devices):
    return tuple(tuple(tuple(t) for t in d) for d in devices)


def test_har_and_dsa19_names_give_the_sensors_their_tasks_declare():
    assert _as_tuples(sensors_from_channel_names(HAR_CHANNELS)) == HAR2.window_sensors
    assert _as_tuples(sensors_from_channel_names(DSA_CHANNELS)) == DSA19.window_sensors


@pytest.mark.parametrize("names, sensors", [
    (["accX", "accY", "accZ", "temp", "gyroX", "gyroY", "gyroZ"], [[[0, 1, 2], [4, 5, 6]]]),
    (["wrist_acc_x", "wrist_acc_y", "wrist_acc_z", "ankle_acc_x", "ankle_acc_y", "ankle_acc_z"],
     [[[0, 1, 2]], [[3, 4, 5]]]),
    (["acc z", "acc y", "acc x"], [[[2, 1, 0]]]),   # the triple in x, y, z order
    (["grid_x", "grid_y", "grid_z", "ecg"], []),     # xyz, but not a motion sensor
    (["acc_x", "acc_y"], []),                        # an axis missing
    (["acc_x", "acc_y", "acc_z", "acc_x"], []),      # an axis twice
    (["0", "1", "2"], []),
])
def test_other_names(names, sensors):
    assert sensors_from_channel_names(names) == sensors


def test_stems_split_at_separators_and_camel_case():
    assert stem_tokens("T_acc") == ["t", "acc"]
    assert stem_tokens("leftWristGyro2") == ["left", "wrist", "gyro", "2"]


def _windows_file(path, channels):
    rng = np.random.default_rng(0)
    np.savez(path, X=rng.normal(size=(24, 8, len(channels))).astype(np.float32),
             y=np.repeat(["a", "b"], 12), groups=np.tile(np.arange(6), 4),
             channels=np.array(channels))
    return path


def test_the_windows_task_turns_the_sensors_its_channel_names_show(tmp_path):
    path = _windows_file(tmp_path / "w.npz", ["temp", "acc_x", "acc_y", "acc_z"])
    task = get_task("windows", val_fold=[0, 3])
    task.load(path)
    assert task.sensors == (((1, 2, 3),),)
    explicit = get_task("windows", val_fold=[0, 3], sensors=[])
    explicit.load(path)
    assert explicit.sensors == () and not explicit.sensors_optional


def test_a_rotation_without_named_sensors_is_skipped_with_a_warning(tmp_path, caplog):
    path = _windows_file(tmp_path / "u.npz", ["a", "b", "c"])
    task = get_task("windows", val_fold=[0, 3])
    data = task.load(path)
    config = TrainConfig(task="windows", model="sirnn", augment={"rotation": 45.0})
    with caplog.at_level(logging.WARNING):
        augmenter = trainer.augmenter(config, task, data.normalization)
    assert augmenter.options["rotation"] == 0
    assert "augment rotation 45.0 skipped: the data names no acc/gyro/mag" in caplog.text
    named = get_task("windows", val_fold=[0, 3], sensors=[[0, 1, 2]])
    named.load(path)
    assert trainer.augmenter(config, named, data.normalization).options["rotation"] == 45.0
    refused = get_task("windows", val_fold=[0, 3], sensors=[])  # the user said: none
    refused.load(path)
    with pytest.raises(ValueError, match="augment rotation needs a task whose channels"):
        trainer.augmenter(config, refused, data.normalization)
