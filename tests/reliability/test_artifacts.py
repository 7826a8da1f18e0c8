"""Damaged or mismatched run artifacts are named, never misreported or silently used (issue 14):
a corrupt model.keras, a bad normalization.json or metrics.json, a config.yaml edited to another
task, and an unfinished run, under `zoo eval` and `zoo export`."""


import pytest
import yaml

from edge_rnn_zoo.cli import main


def _error(capsys, *argv):
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.slow
def test_the_intact_copy_evaluates(run, capsys):
    assert main(["eval", str(run), "--json"]) == 0


@pytest.mark.parametrize("command", ["eval", "export"])
def test_corrupt_model_keras_is_called_damaged_not_missing(run, capsys, command):
    (run / "model.keras").write_bytes(b"PK\x03\x04 not really a zip")
    extra = ["--tflite", "--out", str(run.parent / "e")] if command == "export" else []
    err = _error(capsys, command, str(run), *extra)
    assert str(run / "model.keras") in err and "cannot be loaded as a Keras model" in err
    assert "not found" not in err.lower()


def test_bad_normalization_json_is_named(run, capsys):
    (run / "normalization.json").write_text('{"mean": [1, 2]')
    err = _error(capsys, "eval", str(run))
    assert str(run / "normalization.json") in err and "JSON" in err
    (run / "normalization.json").write_text('{"mean": [0.0], "std": [1.0, 2.0]}')
    assert str(run / "normalization.json") in _error(capsys, "eval", str(run))


def test_bad_metrics_json_is_named_by_export(run, capsys):
    (run / "metrics.json").write_text("[1, 2")
    err = _error(capsys, "export", str(run), "--tflite", "--out", str(run.parent / "e"))
    assert str(run / "metrics.json") in err and "metrics file" in err


@pytest.mark.parametrize("command", ["eval", "export"])
def test_config_edited_to_another_task_is_refused(run, capsys, command):
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["task"] = "har6"
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    extra = ["--tflite", "--out", str(run.parent / "e")] if command == "export" else []
    err = _error(capsys, command, str(run), *extra)
    assert "task har6 has 6 classes" in err and "outputs 2" in err
    assert not (run.parent / "e").exists()


def test_an_unfinished_run_is_not_evaluated(run, capsys):
    (run / "metrics.json").unlink()
    assert "unfinished run (no metrics.json)" in _error(capsys, "eval", str(run))
