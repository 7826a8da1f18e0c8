"""Values and paths a user gives are refused by name before anything is written (issue 23,
silent accepts and misleading errors; issue 22, README item 2): ``zoo export --max-drop`` and
``--calibration-pairs``, a ``--data-dir`` that does not exist, a HAR value beyond float32, a
recipe for another model."""

import shutil

import pytest

from edge_rnn_zoo.cli import main
from zoo.training.data.errors import DataError, DataNotFoundError
from zoo.training.tasks import get_task


def _one_line(capsys, argv, prefix):
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(prefix), err
    return err


# ------------------------------------------------------------------------------- zoo export
@pytest.fixture(scope="module")
def sirnn_run(tmp_path_factory, shared_data):
    """A one-epoch SiRNN HAR-2 run: a model the step form exports (the LSTM's two-part state
    is refused by the step form for its own reason)."""
    out = tmp_path_factory.mktemp("runs") / "sirnn"
    assert main(["train", "--task", "har2", "--model", "sirnn", "--units", "8", "--rank", "4",
                 "--epochs", "1", "--recipe", "none", "--data-dir", str(shared_data / "har"),
                 "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("value", ["nan", "-5", "inf"])
def test_max_drop_must_be_a_number_of_points(finished_har_run, tmp_path, capsys, value):
    out = tmp_path / "e"
    err = _one_line(capsys, ["export", str(finished_har_run), "--tflite", "--out", str(out),
                             "--max-drop", value], "zoo export: error: ")
    assert f"--max-drop {float(value)!r}" in err and ">= 0" in err
    assert not out.exists()


def test_max_drop_with_a_separator_is_refused_by_the_parser(finished_har_run, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["export", str(finished_har_run), "--tflite", "--max-drop", "1_0"])
    assert exc.value.code == 2 and "argument --max-drop" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-5"])
def test_calibration_pairs_at_least_one(sirnn_run, tmp_path, capsys, value):
    """``0`` used to exit 0 with a float32 step.tflite whose card said int8."""
    out = tmp_path / "e"
    err = _one_line(capsys, ["export", str(sirnn_run), "--tflite", "--form", "step",
                             "--quantize", "int8", "--no-micro", "--out", str(out),
                             "--calibration-pairs", value], "zoo export: error: ")
    assert f"--calibration-pairs {value}" in err and "integer >= 1" in err
    assert not out.exists()


# --------------------------------------------------------------------------------- data
def test_data_dir_that_does_not_exist_says_so(tmp_path, capsys, monkeypatch):
    missing = tmp_path / "dsa19_train_full.zip"
    monkeypatch.delenv("ZOO_OFFLINE", raising=False)  # it must not even try to download
    import zoo.training.data.download as dl

    monkeypatch.setattr(dl, "download", lambda *a, **k: pytest.fail("tried to download"))
    out = tmp_path / "runs" / "dsa"
    err = _one_line(capsys, ["train", "--task", "dsa19", "--model", "lstm", "--units", "3",
                             "--epochs", "1", "--recipe", "none", "--data-dir", str(missing),
                             "--out", str(out)], "zoo train: error: ")
    assert f"--data-dir {missing}: no such file or folder" in err
    assert not out.exists()


def test_data_dir_that_does_not_exist_at_the_api(tmp_path):
    with pytest.raises(DataNotFoundError, match="no such file or folder"):
        get_task("har2").load(tmp_path / "nowhere")


def test_har_value_beyond_float32_names_file_and_line(shared_data, tmp_path):
    folder = tmp_path / "UCI HAR Dataset"
    shutil.copytree(shared_data / "har" / "UCI HAR Dataset", folder)
    path = folder / "train" / "Inertial Signals" / "body_acc_x_train.txt"
    lines = path.read_text().split("\n")
    fields = lines[2].split()
    fields[4] = "1e308"  # finite as float64, inf as float32
    lines[2] = " ".join(fields)
    path.write_text("\n".join(lines))
    with pytest.raises(DataError) as err:
        get_task("har2").load(folder)
    message = str(err.value)
    assert str(path) in message and "line 3, column 5" in message and "float32" in message


def _har_with_value(shared_data, tmp_path, value):
    folder = tmp_path / "UCI HAR Dataset"
    shutil.copytree(shared_data / "har" / "UCI HAR Dataset", folder)
    path = folder / "train" / "Inertial Signals" / "body_acc_x_train.txt"
    lines = path.read_text().split("\n")
    fields = lines[2].split()
    fields[4] = value
    lines[2] = " ".join(fields)
    path.write_text("\n".join(lines))
    return folder, path


def test_har_value_that_would_flatten_its_channel_names_file_and_line(shared_data, tmp_path):
    """3e38 is inside float32's range, so it was read; then the z-score normalisation, fitted on
    it, mapped every other value of the channel to one float32 number (checked here with the
    zoo's own `Normalization`, on the unmodified file's values): a silently zeroed channel."""
    import numpy as np

    from zoo.training.data.textio import parse_table
    from zoo.training.tasks import Normalization

    original = shared_data / "har" / "UCI HAR Dataset" / "train" / "Inertial Signals"
    table = parse_table(original / "body_acc_x_train.txt", 128)
    assert len(np.unique(table[:, 4])) > 100  # a channel that carries information
    table[2, 4] = 3e38
    x = table.reshape(len(table), 128, 1)
    flat = Normalization.fit(x).apply(x)[:, :, 0].reshape(-1)
    others = np.delete(flat, 2 * 128 + 4)
    assert len(np.unique(others)) == 1  # what training would have seen

    folder, path = _har_with_value(shared_data, tmp_path, "3e38")
    with pytest.raises(DataError) as err:
        get_task("har2").load(folder)
    message = str(err.value)
    assert str(path) in message and "line 3, column 5" in message and "'3e38'" in message
    assert "dominates its column" in message


def test_heavy_tailed_column_is_kept(tmp_path):
    """The check is no outlier filter: a Cauchy column (heavy tails, std/MAD in the tens) and a
    mostly-constant one with rare events are read as they are."""
    import numpy as np

    from zoo.training.data.textio import parse_table

    rng = np.random.default_rng(0)
    table = np.stack([rng.standard_cauchy(5000), np.where(rng.random(5000) < 0.01, 5.0, 0.0)], 1)
    path = tmp_path / "t.txt"
    path.write_text("\n".join(f"{a:.17g} {b:.17g}" for a, b in table) + "\n")
    np.testing.assert_array_equal(parse_table(path, 2), table)


# ---------------------------------------------------------------------------------- recipe
def test_recipe_for_another_model_names_it(tmp_path, capsys, shared_data):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("model: gru\nepochs: 1\n")
    err = _one_line(capsys, ["train", "--task", "har2", "--model", "lstm", "--recipe",
                             str(recipe), "--data-dir", str(shared_data / "har"), "--out",
                             str(tmp_path / "run")], "zoo train: error: ")
    assert "is for model 'gru', not 'lstm'" in err


def test_recipe_by_its_listed_name_is_the_shipped_file(tmp_path, monkeypatch):
    """The error for an unknown recipe lists the shipped ones by name; that name is accepted,
    and a file of that name in the working folder wins over it."""
    import yaml

    from zoo.training.config import RECIPES_DIR, resolve

    monkeypatch.chdir(tmp_path)
    shipped = yaml.safe_load((RECIPES_DIR / "har2-sirnn.yaml").read_text())
    by_name = resolve("har2", "sirnn", "har2-sirnn", {})
    assert by_name.recipe == str(RECIPES_DIR / "har2-sirnn.yaml")
    assert by_name.lr == shipped["lr"] and by_name.epochs == shipped["epochs"]
    (tmp_path / "har2-sirnn.yaml").write_text("epochs: 3\n")
    assert resolve("har2", "sirnn", "har2-sirnn.yaml", {}).epochs == 3
    with pytest.raises(FileNotFoundError, match="shipped recipes: .*har2-sirnn"):
        resolve("har2", "sirnn", "har2-sirnnn", {})


def test_a_closed_pipe_ends_the_command_quietly(tmp_path):
    """`zoo list --pretrained | head -1`: the reader is gone before the listing is written; the
    command ends as a shell reports SIGPIPE (141), with no traceback."""
    import os
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: every write fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "edge_rnn_zoo", "list", "--pretrained"],
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write_end)
    assert done.returncode == 141, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
