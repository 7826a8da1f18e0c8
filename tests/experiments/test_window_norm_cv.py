"""The per-window normalization lever (`zoo.experiments.campaigns.window_norm_cv`): the transform
against its definition, and the task it registers against the plain HAR-2 task's windows."""

import numpy as np
import pytest

from zoo.experiments.campaigns.window_norm_cv import normalize_windows, window_task
from zoo.training.tasks import get_task


def test_center_removes_each_windows_channel_means_and_keeps_the_rest():
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 2.0, size=(4, 16, 3)).astype(np.float32)
    out = normalize_windows(x, "center")
    np.testing.assert_allclose(out.mean(axis=1), 0.0, atol=1e-5)
    np.testing.assert_allclose(np.diff(out, axis=1), np.diff(x, axis=1), atol=1e-5)


def test_zscore_gives_unit_spread_and_only_centres_a_still_channel():
    rng = np.random.default_rng(1)
    x = rng.normal(0.5, 4.0, size=(3, 32, 2)).astype(np.float32)
    x[1, :, 1] = 7.0  # a channel that does not move in window 1
    out = normalize_windows(x, "zscore")
    np.testing.assert_allclose(out.mean(axis=1), 0.0, atol=1e-5)
    moving = np.ones((3, 2), bool)
    moving[1, 1] = False
    np.testing.assert_allclose(out.std(axis=1)[moving], 1.0, rtol=1e-4)
    assert np.all(out[1, :, 1] == 0.0)


@pytest.fixture
def registry(monkeypatch):
    """The task registry as it was after the test: the tasks it registers stay out of the
    others' lists (`tests/training/test_tasks_registry.py`)."""
    from zoo.training.tasks import base

    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))


@pytest.mark.parametrize("mode", ["center", "zscore"])
def test_the_registered_task_is_har2_with_each_window_normalised(mode, shared_data, registry):
    plain = get_task("har2", val_fold=[0, 5]).load(shared_data / "har")
    ours = get_task(window_task(mode), val_fold=[0, 5]).load(shared_data / "har")
    assert window_task(mode) == f"har2_window_{mode}"  # registering twice is harmless
    assert ours.info["window_normalization"] == mode
    for a, b in ((plain.train, ours.train), (plain.val, ours.val), (plain.test, ours.test)):
        np.testing.assert_array_equal(a.y, b.y)
        np.testing.assert_allclose(b.x, normalize_windows(a.x, mode), atol=1e-6)
    np.testing.assert_allclose(ours.normalization.mean, ours.train.x.reshape(-1, 9).mean(0),
                               atol=1e-4)
