"""Adding and copy-memory tasks: analytic baselines checked on generated data."""

import numpy as np
import pytest

from zoo.training.tasks import get_task


def test_adding_structure_and_constant_baseline():
    task = get_task("adding", timesteps=100, n_train=20000, n_val=10, n_test=10)
    d = task.load(seed=3)
    x, y = d.train.x, d.train.y
    assert x.shape == (20000, 100, 2) and y.dtype == np.float32 and task.num_classes == 1
    assert (x[:, :, 1].sum(1) == 2).all()
    assert (x[:, :50, 1].sum(1) == 1).all() and (x[:, 50:, 1].sum(1) == 1).all()
    np.testing.assert_allclose(y, (x[:, :, 0] * x[:, :, 1]).sum(1), rtol=1e-6)
    # Constant prediction 1: MSE = Var(u1 + u2) = 1/6; the best constant (the mean) too.
    assert np.mean((y - 1) ** 2) == pytest.approx(1 / 6, abs=0.006)
    assert np.mean((y - y.mean()) ** 2) == pytest.approx(0.167, abs=0.006)


@pytest.mark.parametrize("timesteps", [50, 200])
def test_copy_memoryless_baseline(timesteps):
    task = get_task("copy", timesteps=timesteps, n_train=500, n_val=10, n_test=10)
    d = task.load(seed=0)
    x, y = d.train.x, d.train.y
    L = timesteps + 20
    assert x.shape == (500, L, 10) and y.shape == (500, L) and y.dtype == np.int64
    seq = x.argmax(-1)
    assert (x.sum(-1) == 1).all()
    assert (seq[:, :10] < 8).all() and (seq[:, 10:timesteps + 9] == 8).all()
    assert (seq[:, timesteps + 9] == 9).all() and (seq[:, -10:] == 8).all()
    np.testing.assert_array_equal(y[:, -10:], seq[:, :10])
    assert (y[:, :-10] == 8).all()
    # Memoryless predictor: blank with certainty for T + 10 steps, uniform over 8 symbols after.
    probs = np.zeros((L, 10))
    probs[:-10, 8] = 1
    probs[-10:, :8] = 1 / 8
    with np.errstate(divide="ignore"):
        ce = -np.log(probs[np.arange(L)[None, :], y]).mean()
    assert ce == pytest.approx(10 * np.log(8) / (timesteps + 20), rel=1e-12)
    assert task.baseline_cross_entropy() == pytest.approx(ce)


def test_seeds_change_train_not_test():
    a = get_task("adding", timesteps=20, n_train=50, n_val=5, n_test=50)
    d0, d0b, d1 = a.load(seed=0), a.load(seed=0), a.load(seed=1)
    np.testing.assert_array_equal(d0.train.x, d0b.train.x)
    assert not np.array_equal(d0.train.x, d1.train.x)
    np.testing.assert_array_equal(d0.test.x, d1.test.x)
    assert not np.array_equal(d0.train.x, d0.test.x)
    assert d0.normalization.to_dict()["mean"] == [0.0, 0.0]
