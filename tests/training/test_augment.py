"""IMU augmentation (zoo.training.augment): each transform checked against the property it is
published with (Um et al. 2017), not against its own code."""

import numpy as np
import pytest

from zoo.training import augment
from zoo.training.augment import Augmenter
from zoo.training.config import TrainConfig
from zoo.training.tasks import get_task
from zoo.training.trainer import epoch_batches

HAR_SENSORS = get_task("har2").sensors


def test_rotations_are_proper_orthogonal_within_the_angle():
    r = augment.random_rotations(np.random.default_rng(0), 2000, 30.0)
    assert np.allclose(r @ r.transpose(0, 2, 1), np.eye(3), atol=1e-12)
    assert np.allclose(np.linalg.det(r), 1.0)
    # The rotation angle, read off the trace (tr R = 1 + 2 cos theta), is within +-30 degrees
    # and uses the range (not all near 0).
    angle = np.degrees(np.arccos(np.clip((np.trace(r, axis1=1, axis2=2) - 1) / 2, -1, 1)))
    assert angle.max() <= 30.0 + 1e-6 and angle.max() > 25.0


def test_rotation_keeps_every_triples_norm_and_turns_a_sensor_rigidly():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16, 128, 9))
    y = augment.rotate(x, HAR_SENSORS, rng, 180.0)
    for triple in ((0, 1, 2), (3, 4, 5), (6, 7, 8)):
        assert np.allclose(np.linalg.norm(y[..., triple], axis=-1),
                           np.linalg.norm(x[..., triple], axis=-1))
    # The phone turns as one body: the angle between its accelerometer and gyroscope vectors
    # (their dot product) is unchanged, while the vectors themselves did move.
    assert np.allclose(np.sum(y[..., 0:3] * y[..., 3:6], -1), np.sum(x[..., 0:3] * x[..., 3:6], -1))
    assert not np.allclose(y, x)


def test_dsa19_has_five_sensors_of_three_triples_covering_all_channels():
    sensors = get_task("dsa19").sensors
    assert len(sensors) == 5 and all(len(s) == 3 for s in sensors)
    assert sorted(i for s in sensors for t in s for i in t) == list(range(45))


def test_jitter_has_the_requested_std_in_normalised_units():
    rng = np.random.default_rng(2)
    mean, std = rng.normal(size=9), rng.uniform(0.1, 3.0, size=9)
    x = rng.normal(size=(256, 128, 9)).astype(np.float32)
    y = Augmenter({"jitter": 0.05}, HAR_SENSORS, mean, std)(x, np.random.default_rng(3))
    noise = (y - x).reshape(-1, 9)
    assert np.allclose(noise.std(axis=0), 0.05, rtol=0.02)
    assert np.allclose(noise.mean(axis=0), 0.0, atol=0.002)


def test_scale_draws_one_factor_per_window_and_channel_with_the_requested_spread():
    x = np.ones((4000, 8, 9))
    a = Augmenter({"scale": 0.1}, HAR_SENSORS, np.zeros(9), np.ones(9))
    y = a(x.astype(np.float32), np.random.default_rng(4))
    assert np.allclose(y, y[:, :1, :])  # constant over time
    assert y[:, 0, :].std() == pytest.approx(0.1, rel=0.05)
    assert y.mean() == pytest.approx(1.0, abs=0.01)


def test_time_warp_keeps_the_window_ends_and_is_the_identity_at_zero_sigma():
    rng = np.random.default_rng(5)
    x = np.cumsum(rng.normal(size=(8, 128, 9)), axis=1)
    same = augment.time_warp(x, rng, 1e-9, 4)
    assert np.allclose(same, x, atol=1e-6)
    warped = augment.time_warp(x, rng, 0.3, 4)
    assert np.allclose(warped[:, 0], x[:, 0]) and np.allclose(warped[:, -1], x[:, -1])
    assert not np.allclose(warped, x)
    # A resampling of a ramp by a monotone map stays monotone.
    ramp = np.broadcast_to(np.arange(128.0)[None, :, None], (8, 128, 1))
    assert np.all(np.diff(augment.time_warp(ramp, rng, 0.3, 4), axis=1) >= 0)


def test_magnitude_warp_curves_are_smooth_around_one():
    curves = augment.smooth_curves(np.random.default_rng(6), (2000,), 128, 4, 0.2)
    assert curves.mean() == pytest.approx(1.0, abs=0.01)
    assert np.abs(np.diff(curves, axis=-1)).max() < 0.2 * 8 * 5 / 127 * 2  # piecewise linear


def test_off_is_the_identity_up_to_float_rounding():
    x = np.random.default_rng(7).normal(size=(4, 128, 9)).astype(np.float32)
    a = Augmenter({}, HAR_SENSORS, np.full(9, 0.3), np.full(9, 2.0))
    assert np.allclose(a(x, np.random.default_rng(0)), x, atol=1e-6)


def test_batches_are_the_same_for_a_resumed_run():
    x = np.random.default_rng(8).normal(size=(300, 128, 9)).astype(np.float32)
    y = np.arange(300)
    a = Augmenter({"rotation": 20, "jitter": 0.05, "time_warp": 0.2}, HAR_SENSORS,
                  np.zeros(9), np.ones(9))
    whole = list(epoch_batches(x, y, 128, 3, 0, 3, a))
    resumed = list(epoch_batches(x, y, 128, 3, 2, 3, a))
    assert len(resumed) == 3
    for (xa, ya), (xb, yb) in zip(whole[-3:], resumed):
        assert np.array_equal(ya, yb) and np.array_equal(xa, xb)


@pytest.mark.parametrize("bad", [{"rotate": 10}, {"rotation": 200}, {"jitter": -1},
                                 {"knots": 0}, {"scale": True}, "jitter"])
def test_invalid_options_are_refused_naming_them(bad):
    with pytest.raises(ValueError, match="augment"):
        TrainConfig(task="har2", model="sirnn", augment=bad)


def test_rotation_on_a_task_without_sensors_is_refused():
    with pytest.raises(ValueError, match="sensor"):
        Augmenter({"rotation": 10}, (), np.zeros(1), np.ones(1))


# ------------------------------------------------------------------ SpecAugment (Park et al. 2019)


def test_spec_masks_are_bands_of_the_mean_within_the_widths_at_uniform_positions():
    """Each window gets `masks` contiguous bands per axis, set to the training mean (0 after
    normalisation), each at most T (F) wide; what is not masked is untouched; over many windows
    the widths cover 0..T and every position is masked about as often (uniform starts)."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4000, 99, 32)).astype(np.float32) + 5.0  # no zeros of its own
    mean, std = np.full(32, 1.5), np.full(32, 0.5)
    a = Augmenter({"time_mask": 10, "feature_mask": 4, "masks": 2}, (), mean, std)
    y = a(x, np.random.default_rng(0))
    zero = y == 0
    assert np.array_equal(y[~zero], x[~zero])  # the rest untouched (the identity transform)
    time_rows = zero.all(axis=2)  # (N, T): whole time steps masked
    feature_cols = zero.all(axis=1)  # (N, C): whole channels masked
    assert np.array_equal(zero, time_rows[:, :, None] | feature_cols[:, None, :])  # bands only
    assert time_rows.sum(axis=1).max() <= 2 * 10 and feature_cols.sum(axis=1).max() <= 2 * 4
    single = Augmenter({"time_mask": 10, "masks": 1}, (), mean, std)(x, np.random.default_rng(1))
    rows = (single == 0).all(axis=2)
    widths = rows.sum(axis=1)
    assert sorted(set(widths.tolist())) == list(range(11))  # every width 0..10
    starts = rows.argmax(axis=1)[widths > 0]
    assert np.all(np.diff(rows.astype(int), axis=1).clip(0).sum(axis=1) <= 1)  # one band
    counts = np.bincount(starts, minlength=99)
    assert counts[:89].min() > 0.4 * counts[:89].mean()  # positions where any width fits


def test_spec_masks_off_by_default_and_checked():
    assert augment.check_options({})["time_mask"] == 0
    with pytest.raises(ValueError, match="time_mask"):
        augment.check_options({"time_mask": 2.5})
    with pytest.raises(ValueError, match="masks"):
        augment.check_options({"masks": 0})


def test_time_shift_moves_each_window_whole_by_at_most_s_steps_edges_repeated():
    """Each shifted window is its original moved by one integer k in [-S, S] (found by search,
    not by the code's own draw), the gap filled with the edge step; all shifts occur about
    equally often; S = 0 is the identity."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3000, 20, 3)).astype(np.float32)
    mean, std = np.zeros(3), np.ones(3)
    y = Augmenter({"time_shift": 4}, (), mean, std)(x, np.random.default_rng(0))

    def shifted(window, k):  # written from the definition: out[t] = window[clip(t - k)]
        return np.stack([window[min(max(t - k, 0), len(window) - 1)] for t in range(len(window))])

    found = []
    for window, out in zip(x[:400], y[:400]):
        (k,) = [k for k in range(-4, 5) if np.allclose(shifted(window, k), out, atol=1e-6)]
        found.append(k)
    counts = np.bincount(np.array(found) + 4, minlength=9)
    assert counts.min() > 0.5 * counts.mean()  # every shift in [-4, 4], none favoured
    unchanged = Augmenter({"time_shift": 0}, (), mean, std)(x, np.random.default_rng(0))
    np.testing.assert_allclose(unchanged, x, atol=1e-6)
    with pytest.raises(ValueError, match="time_shift"):
        augment.check_options({"time_shift": -1})
