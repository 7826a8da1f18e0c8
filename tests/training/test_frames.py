"""The ``frames_per_step`` task option (`zoo.training.tasks.frames`), against the windows of the task
without it, reshaped by NumPy."""

import numpy as np
import pytest

from zoo.training.augment import Augmenter
from zoo.training.tasks import get_task
from zoo.training.tasks.frames import frames_per_step_of

HAR = "har/UCI HAR Dataset"


@pytest.fixture(scope="module")
def har2_pair(shared_data):
    plain = get_task("har2", val_fold=[0, 4]).load(shared_data / HAR)
    return plain, get_task("har2", val_fold=[0, 4], frames_per_step=4).load(shared_data / HAR)


def test_each_step_holds_k_consecutive_samples(har2_pair):
    plain, stacked = har2_pair
    for name in ("train", "val", "test"):
        x, xs = getattr(plain, name).x, getattr(stacked, name).x
        assert xs.shape == (len(x), 32, 36)
        # step t, frame j, channel c is sample 4 t + j of channel c
        np.testing.assert_array_equal(xs[:, 5, 2 * 9 + 7], x[:, 4 * 5 + 2, 7])
        np.testing.assert_array_equal(getattr(stacked, name).y, getattr(plain, name).y)
    assert stacked.info["frames_per_step"] == 4
    assert stacked.info["val_subjects"] == plain.info["val_subjects"]


def test_normalization_is_the_samples_per_channel_in_every_frame(har2_pair):
    plain, stacked = har2_pair
    n = len(plain.test.x)
    np.testing.assert_array_equal(stacked.normalization.apply(stacked.test.x),
                                  plain.normalization.apply(plain.test.x).reshape(n, 32, 36))


def test_input_shape_and_sensors_follow_the_option():
    task = get_task("har2", frames_per_step=2)
    assert task.input_shape == (64, 18)
    assert task.sensors == (((0, 1, 2), (3, 4, 5), (6, 7, 8), (9, 10, 11), (12, 13, 14),
                             (15, 16, 17)),)
    assert get_task("har6").input_shape == (128, 9)
    assert get_task("har6").sensors == (((0, 1, 2), (3, 4, 5), (6, 7, 8)),)


def test_a_rotation_turns_every_frame_of_a_window_alike(har2_pair):
    """The augmentation of stacked windows is the augmentation of the samples, stacked: one
    rotation per window for all its frames (same random numbers)."""
    plain, stacked = har2_pair
    x = plain.normalization.apply(plain.train.x[:16])
    xs = stacked.normalization.apply(stacked.train.x[:16])
    norm, norms = plain.normalization, stacked.normalization
    turned = Augmenter({"rotation": 35}, get_task("har2").sensors, norm.mean, norm.std)(
        x, np.random.default_rng(3))
    turned_stacked = Augmenter({"rotation": 35}, get_task("har2", frames_per_step=4).sensors,
                               norms.mean, norms.std)(xs, np.random.default_rng(3))
    np.testing.assert_allclose(turned_stacked, turned.reshape(16, 32, 36), atol=1e-6)
    assert not np.allclose(turned, x, atol=1e-2)


@pytest.mark.parametrize("value", [3, 0, 256, 2.0, True, "4"])
def test_a_k_that_does_not_divide_the_window_names_the_valid_ones(value):
    with pytest.raises(ValueError, match=r"frames_per_step must be a whole divisor of the "
                                         r"window's 128 samples \(1, 2, 4, 8, 16, 32, 64, 128\)"):
        get_task("har2", frames_per_step=value)


def test_a_stacked_run_trains_and_its_step_exports(shared_data, tmp_path):
    """The model and the streaming step export take k samples per step: the float step model
    of a run on stacked windows scores what the Keras model does on the same windows."""
    from edge_rnn_zoo.cli import main
    from zoo.export.exporter import export_run

    run = tmp_path / "run"
    assert main(["train", "--task", "har2", "--model", "sirnn", "--units", "16", "--epochs", "2",
                 "--task-option", "frames_per_step=4", "--option", "eta_init=0.04",
                 "--data-dir", str(shared_data / HAR), "--out", str(run), "-q"]) == 0
    card = export_run(run, tmp_path / "step", quantize="none", form="step")
    assert (card.timesteps, card.features) == (32, 36)
    assert card.accuracy.tflite == pytest.approx(card.accuracy.keras_float, abs=1e-9)


def test_dsa19_stacks_its_125_samples_and_five_units(shared_data):
    plain = get_task("dsa19").load(shared_data / "dsa19" / "data")
    task = get_task("dsa19", frames_per_step=5)
    stacked = task.load(shared_data / "dsa19" / "data")
    assert task.input_shape == (25, 225) and len(task.sensors) == 5
    assert task.sensors[4][3] == (45 + 36, 45 + 37, 45 + 38)  # unit 5's first triple, frame 2
    np.testing.assert_array_equal(stacked.train.x, plain.train.x.reshape(-1, 25, 225))
    with pytest.raises(ValueError, match=r"divisor of the window's 125 samples \(1, 5, 25, 125\)"):
        get_task("dsa19", frames_per_step=4)


def _auto_by_enumeration(steps: int) -> int:
    """``frames_per_step=auto`` by its definition: among every k that divides the window, the
    smallest that leaves at most 32 steps, unless that leaves fewer than 16."""
    fits = [k for k in range(1, steps + 1) if steps % k == 0 and steps / k <= 32]
    return fits[0] if steps / fits[0] >= 16 else 1


@pytest.mark.parametrize("steps, k", [(128, 4), (125, 5), (50, 2), (200, 8), (32, 1), (10, 1),
                                      (127, 1), (33, 1), (40, 2)])
def test_auto_takes_the_fewest_samples_per_step_that_leave_at_most_32_steps(steps, k):
    from zoo.training.tasks.frames import auto_frames_per_step

    assert auto_frames_per_step(steps) == k == _auto_by_enumeration(steps)
    assert all(auto_frames_per_step(t) == _auto_by_enumeration(t) for t in range(1, 400))


def test_auto_resolves_on_the_users_windows_and_the_run_records_the_number(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "w.npz"
    np.savez(path, X=rng.normal(size=(40, 125, 6)), y=np.repeat(["a", "b"], 20),
             groups=np.tile(np.arange(5), 8), channels=["acc_x", "acc_y", "acc_z", "g_x", "g_y",
                                                        "g_z"])
    task = get_task("windows", frames_per_step="auto")
    data = task.load(path)
    assert task.options()["frames_per_step"] == 5 == data.info["frames_per_step"]
    assert task.input_shape == (25, 30) and data.train.x.shape[1:] == (25, 30)
    assert task.sensors[0][1] == (6, 7, 8)  # the first triple of the second frame
    with pytest.raises(ValueError, match="task_options_resolved"):
        frames_per_step_of({"frames_per_step": "auto"})
