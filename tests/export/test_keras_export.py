"""``zoo export MODEL.keras --calibration FILE`` (issue 42), from the command line: calibration
files that cannot be used, refused in one line naming them."""

from __future__ import annotations

import subprocess

import keras
import numpy as np
import pytest

from edge_rnn_zoo import cli
from zoo.export.sources import CalibrationError, read_windows

T, F = 32, 9


def _error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


# ------------------------------------------------------------------------ calibration files
@pytest.fixture
def good(tmp_path):
    rng = np.random.default_rng(0)
    return rng.normal(size=(12, T, F)).astype(np.float32), rng.integers(0, 3, 12), tmp_path


@pytest.mark.parametrize("case, words", [
    ("shape", "windows of shape (12, 32, 8); the model takes (N, 32, 9) raw inputs"),
    ("nan", "window 3, step 5, feature 2 is nan; valid: finite numbers"),
    ("few", "4 windows; at least 10 are needed"),
    ("labels length", "11 labels for 12 windows"),
    ("string labels", "labels of dtype <U"),
    ("no X", "no array X in it"),
])
def test_bad_calibration_is_refused_naming_the_file(good, case, words):
    x, y, tmp = good
    path = tmp / ("c.npz" if case in ("labels length", "string labels", "no X") else "c.npy")
    if case == "shape":
        np.save(path, x[..., :8])
    elif case == "nan":
        x[3, 5, 2] = np.nan
        np.save(path, x)
    elif case == "few":
        np.save(path, x[:4])
    elif case == "labels length":
        np.savez(path, X=x, y=y[:11])
    elif case == "string labels":
        np.savez(path, X=x, y=np.array(["walk"] * 12))
    else:
        np.savez(path, windows=x)
    with pytest.raises(CalibrationError) as err:
        read_windows(path, None, F, T)
    assert str(err.value).startswith(str(path)) and words in str(err.value)


def test_labels_from_their_own_file(good):
    x, y, tmp = good
    np.save(tmp / "x.npy", x)
    np.save(tmp / "y.npy", y)
    got_x, got_y, where = read_windows(tmp / "x.npy", tmp / "y.npy", F, None)
    np.testing.assert_array_equal(got_x, x)
    np.testing.assert_array_equal(got_y, y)
    np.savez(tmp / "xy.npz", X=x, y=y)
    with pytest.raises(CalibrationError, match="holds labels y and labels were given too"):
        read_windows(tmp / "xy.npz", tmp / "y.npy", F, None)


@pytest.fixture(scope="module")
def tiny_keras(tmp_path_factory):
    """An untrained GRU classifier saved as .keras, and 12 random windows for it."""
    folder = tmp_path_factory.mktemp("tiny")
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((T, F)), keras.layers.GRU(4), keras.layers.Dense(3)])
    model.save(folder / "tiny.keras")
    np.save(folder / "x.npy", np.random.default_rng(0).normal(size=(12, T, F)).astype("f4"))
    return folder


def test_cli_refuses_usage_before_keras(tiny_keras, capsys):
    path = str(tiny_keras / "tiny.keras")
    assert cli.main(["export", path, "--form", "c"]) == 2
    assert "needs --calibration FILE" in _error_line(capsys)
    assert cli.main(["export", path, "--calibration", str(tiny_keras / "none.npy")]) == 2
    assert "--calibration" in _error_line(capsys)
    assert cli.main(["export", str(tiny_keras), "--calibration", path]) == 2  # a folder, no run
    capsys.readouterr()


def test_cli_refuses_labels_beyond_the_classes_and_a_bidirectional_layer(tiny_keras, capsys):
    path, x = str(tiny_keras / "tiny.keras"), str(tiny_keras / "x.npy")
    np.save(tiny_keras / "y.npy", np.full(12, 3))
    out = tiny_keras / "out"
    assert cli.main(["export", path, "--calibration", x, "--labels", str(tiny_keras / "y.npy"),
                     "--out", str(out)]) == 2
    assert f"{tiny_keras / 'y.npy'}: label 3 at index 0; the model has 3 classes" \
        in _error_line(capsys)
    bi = keras.Sequential([keras.Input((T, F)), keras.layers.Bidirectional(keras.layers.GRU(2)),
                           keras.layers.Dense(3)])
    bi.save(tiny_keras / "bi.keras")
    assert cli.main(["export", str(tiny_keras / "bi.keras"), "--calibration", x,
                     "--out", str(out)]) == 2
    line = _error_line(capsys)
    assert "(Bidirectional)" in line and "supported:" in line
    assert not out.exists()
