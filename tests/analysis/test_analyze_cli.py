"""``zoo analyze`` end to end on a real (tiny) `zoo train` run of the two-state Keras LSTM."""

import json

import keras
import numpy as np
import pytest

from zoo.experiments.analysis.report import _check_out_dir
from zoo.training.tasks import get_task
from edge_rnn_zoo.cli import main

TASK_OPTIONS = ["max_length=6", "n_train=256", "n_val=64", "n_test=64"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("analyze") / "parity-lstm"
    argv = ["train", "--task", "parity", "--model", "lstm", "--units", "8", "--epochs", "1",
            "--batch-size", "64", "--patience", "0", "--out", str(out)]
    for option in TASK_OPTIONS:
        argv += ["--task-option", option]
    assert main(argv) == 0
    return out


@pytest.mark.slow
def test_report_files_and_numbers(run_dir, tmp_path):
    out = tmp_path / "report"
    assert main(["analyze", str(run_dir), "--out", str(out), "--jacobian-sequences", "4"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert {"report.md", "report.json", "truncation.png", "memory_probe.png",
            "gradients_through_time.png", "input_sensitivity.png"} <= {p.name for p in out.iterdir()}
    assert report["state_dim"] == 16  # LSTM: h and c
    assert report["stability"]["contraction"]["samples"] == 4 * 12
    assert report["stability"]["recurrence"]["matrix"].startswith("LSTMCell is gated")
    # The full-sequence accuracy against the model's own predict on the task's validation split.
    model = keras.saving.load_model(run_dir / "model.keras")
    task = get_task("parity", max_length=6, n_train=256, n_val=64, n_test=64)
    val = task.load(seed=0).val
    accuracy = float(np.mean(model.predict(val.x, verbose=0).argmax(-1) == val.y))
    assert report["truncation"]["full"] == pytest.approx(accuracy)
    assert report["truncation"]["k"][-1] == 12 and report["truncation"]["score"][-1] == accuracy
    text = (out / "report.md").read_text()
    for section in ("## Stability", "## Gradients through time", "## Truncation",
                    "## Memory probe"):
        assert section in text
    # A second report may replace the first: the folder holds only a report.
    _check_out_dir(out)


@pytest.mark.slow
def test_bad_input_gives_clear_errors(run_dir, tmp_path, capsys):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    assert main(["analyze", str(run_dir), "--out", str(foreign)]) == 2
    assert "notes.txt" in capsys.readouterr().err
    assert (foreign / "notes.txt").read_text() == "keep me"
    assert main(["analyze", str(tmp_path / "nothing")]) == 2
    assert "not a finished run" in capsys.readouterr().err


@pytest.mark.slow
def test_length_generalisation_row(run_dir, capsys):
    from zoo.experiments.analysis.lengths import length_accuracy, main as lengths_main

    row = length_accuracy(run_dir, n=200)
    assert (row["task"], row["L"], row["test_length"]) == ("parity", 6, 12)
    # 200 strings, half accepted: the accuracy is a multiple of 1/200.
    assert all(0 <= row[k] <= 1 and abs(200 * row[k] - round(200 * row[k])) < 1e-9
               for k in ("acc_L", "acc_test"))
    assert lengths_main([str(run_dir), "--n", "50"]) == 0
    assert "| parity | lstm |" in capsys.readouterr().out
