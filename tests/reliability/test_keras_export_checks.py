"""``zoo export MODEL.keras --calibration FILE`` checks the int8 model against the float one
whether or not the windows have labels (issue 52): without labels its argmax agreement, with a
refusal naming the widest range and a command that runs; labels may be strings (the outputs'
names, sorted) wherever a user's ``.npz`` is read; a label the model never saw is refused."""

import json
import shlex

import numpy as np
import pytest

STEPS, FEATURES = 8, 2


def _model(path):
    """A SimpleRNN(2) whose class is the sign of channel 0's sum (hand-set weights, no
    training); channel 1 is ignored."""
    import keras

    model = keras.Sequential([keras.Input((STEPS, FEATURES)),
                              keras.layers.SimpleRNN(2, activation="tanh"),
                              keras.layers.Dense(2)])
    model.layers[0].set_weights([np.array([[0.5, -0.5], [0.0, 0.0]], np.float32),
                                 0.5 * np.eye(2, dtype=np.float32), np.zeros(2, np.float32)])
    model.layers[1].set_weights([np.array([[2.0, -2.0], [-2.0, 2.0]], np.float32),
                                 np.zeros(2, np.float32)])
    model.save(path)
    return path


def _windows(n=120, outlier=0.0, seed=0):
    """Windows whose channel 0 decides the class; ``outlier``: channel 1 of window 0 (a wide
    range there makes int8's one input scale too coarse for channel 0)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(scale=0.3, size=(n, STEPS, FEATURES)).astype(np.float32)
    x[:, :, 0] += np.where(np.arange(n) % 2, -0.4, 0.4)[:, None]
    x[0, :, 1] = outlier
    return x, np.where(np.arange(n) % 2, "walk", "sit")


@pytest.fixture(scope="module")
def keras_file(tmp_path_factory):
    return _model(tmp_path_factory.mktemp("keras") / "mine.keras")


def _zoo(capsys, *argv):
    from edge_rnn_zoo.cli import main

    code = main(list(argv))
    said = capsys.readouterr()
    return code, said.out, said.err


@pytest.mark.slow
def test_without_labels_a_lossy_int8_model_is_refused_with_a_command_that_runs(
        keras_file, tmp_path, capsys):
    x, _ = _windows(outlier=1000.0)
    np.save(tmp_path / "calib.npy", x)
    code, _, err = _zoo(capsys, "export", str(keras_file), "--calibration",
                        str(tmp_path / "calib.npy"), "--form", "step", "--quantize", "int8",
                        "--no-micro", "--out", str(tmp_path / "out"))
    assert code == 3, err
    (line,) = [l for l in err.splitlines() if l.strip()]
    assert "agrees with the Keras float model" in line and "the input (channel 1)" in line
    assert not (tmp_path / "out").exists()
    command = line.split("Try `", 1)[1].split("`", 1)[0]
    from edge_rnn_zoo.cli import build_parser

    words = shlex.split(command)[1:]
    args = build_parser(words[0]).parse_args(words)
    args.check(args)  # the usage check of `zoo export`: accepted, --calibration and all
    assert args.calibration == str(tmp_path / "calib.npy") and args.quantize == "int16x8"
    code, _, err = _zoo(capsys, "export", str(keras_file), "--calibration",
                        str(tmp_path / "calib.npy"), "--form", "step", "--quantize", "int8",
                        "--no-micro", "--out", str(tmp_path / "out"), "--accept-int8-loss")
    assert code == 0, err


@pytest.mark.slow
def test_string_labels_name_the_outputs_and_eval_maps_them(keras_file, tmp_path, capsys):
    x, y = _windows()
    np.savez(tmp_path / "calib.npz", X=x, y=y)
    code, _, err = _zoo(capsys, "export", str(keras_file), "--calibration",
                        str(tmp_path / "calib.npz"), "--form", "step", "--quantize", "int8",
                        "--no-micro", "--out", str(tmp_path / "out"))
    assert code == 0, err
    card = json.loads((tmp_path / "out" / "model_card.json").read_text())
    assert card["class_names"] == ["sit", "walk"]
    assert card["accuracy"]["keras_float"] > 0.9  # 'sit' is output 0 (reversed: under 0.1)
    x_test, y_test = _windows(n=30, seed=4)
    np.savez(tmp_path / "test.npz", X=x_test, y=y_test)
    code, out, err = _zoo(capsys, "eval", str(tmp_path / "out"), "--data-dir",
                          str(tmp_path / "test.npz"), "--json")
    assert code == 0, err
    report = json.loads(out[out.index("{"):])
    assert report["class_names"] == ["sit", "walk"] and report["test_sequences"] == 30
    np.savez(tmp_path / "bad.npz", X=x_test[:3], y=np.array(["sit", "jog", "run"]))
    code, _, err = _zoo(capsys, "eval", str(tmp_path / "out"), "--data-dir",
                        str(tmp_path / "bad.npz"))
    assert code == 2 and "['jog', 'run']" in err and "bad.npz" in err
    from zoo.export.c_backend.windows import testset_windows

    windows = testset_windows(tmp_path / "out", "raw", tmp_path / "test.npz")
    np.testing.assert_allclose(windows, x_test)
    np.savez(tmp_path / "unlabelled.npz", X=x_test)  # the window file needs no labels
    assert len(testset_windows(tmp_path / "out", "raw", tmp_path / "unlabelled.npz")) == 30


def test_string_labels_of_fewer_classes_than_outputs_are_refused(keras_file, tmp_path):
    from zoo.export.sources import CalibrationError, read_keras

    x, _ = _windows()
    np.savez(tmp_path / "calib.npz", X=x, y=np.full(len(x), "sit"))
    with pytest.raises(CalibrationError, match=r"1 distinct string labels \['sit'\] for a "
                                               r"model of 2 outputs"):
        read_keras(keras_file, tmp_path / "calib.npz")


def test_uint64_labels_do_not_wrap(tmp_path):
    from zoo.export.sources import CalibrationError, read_windows
    from zoo.training.data.windows import read_npz

    x, _ = _windows(n=12)
    big = np.array([2**63, 2**63 + 1] * 6, dtype=np.uint64)
    np.savez(tmp_path / "w.npz", X=x, y=big)
    labels = read_npz(tmp_path / "w.npz").labels
    assert sorted(set(labels.tolist())) == [str(2**63), str(2**63 + 1)]
    with pytest.raises(CalibrationError, match=f"label {2**63 + 1} at index 1"):
        read_windows(tmp_path / "w.npz", None, FEATURES, STEPS, classes=2)
