"""What a user's data or model gets for an answer when it cannot be used (issue 52): one line
that names the file and says what it is, not an option the user never set, not numpy's
allow_pickle invitation, not Keras's "File not found" or the wrong layer."""

import logging

import numpy as np
import pytest

from tests.reliability.conftest import write_windows_npz
from zoo.training.data.errors import DataError
from zoo.training.tasks import get_task


def _train(*argv):
    from edge_rnn_zoo.cli import main

    return main(["train", "--task", "windows", "--model", "lstm", "--units", "2", "--epochs",
                 "1", "--recipe", "none", *argv])


def test_classes_yes_no_stay_words():
    from zoo.core.flags import key_value

    assert key_value("classes=[yes,no,on,off]") == ("classes", ["yes", "no", "on", "off"])
    assert key_value("noise_mixing=true") == ("noise_mixing", True)
    assert key_value("val_fold=[0, 5]") == ("val_fold", [0, 5])


def test_an_empty_init_from_is_refused(capsys):
    with pytest.raises(SystemExit):
        _train("--data-dir", "x.npz", "--init-from=")
    assert "--init-from" in capsys.readouterr().err


def test_one_class_names_the_file_and_the_class(tmp_path, capsys):
    path = write_windows_npz(tmp_path / "one.npz", labels=["sit", "sit"])
    assert _train("--data-dir", str(path), "--out", str(tmp_path / "run")) == 2
    err = capsys.readouterr().err
    assert "one.npz: every window has the label 'sit'" in err and "option" not in err


def test_labels_1_and_01_are_refused_as_ambiguous(tmp_path):
    path = write_windows_npz(tmp_path / "w.npz", labels=["01", "1"])
    with pytest.raises(DataError, match=r"labels '01' and '1' are two classes written as the "
                                        r"same number"):
        get_task("windows").load(path)


def test_a_text_file_named_npz_is_said_to_be_text(tmp_path):
    from zoo.export.sources import CalibrationError, read_windows

    path = tmp_path / "w.npz"
    path.write_text("X,y\n1,2\n")
    with pytest.raises(DataError) as err:
        get_task("windows").load(path)
    assert "w.npz: text, not an .npz archive" in str(err.value)
    assert "pickle" not in str(err.value)
    with pytest.raises(CalibrationError, match=r"w.npz: text, not an \.npz archive") as err:
        read_windows(path, None, 2, None)
    assert "pickle" not in str(err.value)
    (tmp_path / "c.npy").write_text("1 2 3\n")
    with pytest.raises(CalibrationError, match=r"c.npy: text, not an \.npy array"):
        read_windows(tmp_path / "c.npy", None, 2, None)


def test_very_long_windows_warn_before_training(tmp_path, caplog):
    path = tmp_path / "long.npz"
    np.savez(path, X=np.zeros((4, 20000, 1), np.float32), y=np.array([0, 1, 0, 1]))
    with caplog.at_level(logging.WARNING):
        get_task("windows").load(path)
    assert "windows of 20000 steps" in caplog.text


def test_out_inside_a_csv_data_folder_is_refused(tmp_path, capsys):
    for label in ("sit", "walk"):
        (tmp_path / "recs" / label).mkdir(parents=True)
        for i in range(2):
            np.savetxt(tmp_path / "recs" / label / f"r{i}.csv",
                       np.random.default_rng(i).normal(size=(40, 2)), delimiter=",")
    code = _train("--data-dir", str(tmp_path / "recs"), "--out", str(tmp_path / "recs" / "run"),
                  "--task-option", "window=8")
    err = capsys.readouterr().err
    assert code == 2 and "is inside the data folder" in err and "class folder" not in err
    assert not (tmp_path / "recs" / "run").exists()


@pytest.mark.parametrize("content, words", [
    (b"", "empty (0 bytes)"),
    (b"\x89HDF\r\n\x1a\n" + bytes(100), "an HDF5 (.h5) model file named .keras"),
    (b"PK\x03\x04 damaged" + bytes(40), "not a .keras archive"),
    (b"\x00\x01 junk", "not a .keras archive"),
])
def test_a_keras_file_that_is_not_one_says_what_it_is(tmp_path, content, words):
    from zoo.export.sources import load_keras_model

    path = tmp_path / "mine.keras"
    path.write_bytes(content)
    with pytest.raises(ValueError) as err:
        load_keras_model(path)
    assert words in str(err.value) and "not found" not in str(err.value).lower()


def _saved(tmp_path, *layers, name="m.keras"):
    import keras

    model = keras.Sequential([keras.Input((8, 2)), *layers, keras.layers.GRU(3),
                              keras.layers.Dense(2)])
    model.save(tmp_path / name)
    return tmp_path / name


def test_masking_before_a_gru_is_blamed_on_masking(tmp_path):
    import keras

    from zoo.export.layer_chain import UnsupportedLayerError
    from zoo.export.sources import read_keras

    path = _saved(tmp_path, keras.layers.Masking(name="pad_mask"))
    with pytest.raises(UnsupportedLayerError, match=r"layer 'pad_mask' \(Masking\) masks "):
        read_keras(path, np.zeros((12, 8, 2), np.float32))


def test_an_unregistered_custom_layer_is_named(tmp_path):
    import keras

    from zoo.export.sources import load_keras_model

    @keras.saving.register_keras_serializable(package="reliability_test")
    class Doubling(keras.layers.Layer):
        def call(self, x):
            return 2 * x

    path = _saved(tmp_path, Doubling())
    del keras.saving.get_custom_objects()["reliability_test>Doubling"]
    with pytest.raises(ValueError, match=r"layer class 'Doubling' is not registered"):
        load_keras_model(path)
