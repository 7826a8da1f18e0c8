"""``zoo eval`` of a windows run scores windows the run did not train on (issue 52): with no
``--data-dir`` the run's own held-out split, never its training file; a test file whose channels
differ from training's is refused; a class with no test window is shown as such."""

import json

import numpy as np
import pytest

from tests.reliability.conftest import write_windows_npz


def _json(out: str) -> dict:
    """The report of ``--json``: stdout is the JSON alone (progress lines go to stderr), so
    ``zoo eval RUN --json | jq`` works."""
    return json.loads(out)


def _eval(capsys, *argv):
    from edge_rnn_zoo.cli import main

    code = main(["eval", *argv])
    said = capsys.readouterr()
    return code, said.out, said.err


def test_eval_without_data_dir_scores_the_held_out_split_not_the_training_file(windows_run,
                                                                                capsys):
    run, _ = windows_run
    metrics = json.loads((run / "metrics.json").read_text())
    code, out, err = _eval(capsys, str(run), "--json")
    assert code == 0, err
    report = _json(out)
    assert report["test_sequences"] == metrics["data"]["test"] == 15  # of 90 windows


def test_eval_of_the_training_file_by_name_is_the_held_out_split_too(windows_run, capsys):
    run, data = windows_run
    code, out, err = _eval(capsys, str(run), "--data-dir", str(data), "--json")
    assert code == 0, err
    assert _json(out)["test_sequences"] == 15


def test_eval_of_another_file_scores_every_window(windows_run, capsys, tmp_path):
    run, _ = windows_run
    test = write_windows_npz(tmp_path / "test.npz", n=20, seed=3, names=["ax", "ay"])
    code, out, err = _eval(capsys, str(run), "--data-dir", str(test), "--json")
    assert code == 0, err
    assert _json(out)["test_sequences"] == 20


@pytest.mark.parametrize("names", [["ay", "ax"], ["gx", "gy"]])
def test_channels_other_than_trainings_are_refused_naming_both(windows_run, capsys, tmp_path,
                                                              names):
    run, _ = windows_run
    test = write_windows_npz(tmp_path / "test.npz", n=20, seed=3, names=names)
    code, _, err = _eval(capsys, str(run), "--data-dir", str(test))
    assert code == 2
    assert "['ax', 'ay']" in err and str(names) in err and "test.npz" in err


def test_a_class_without_test_windows_is_not_zero_percent(windows_run, capsys, tmp_path):
    run, _ = windows_run
    path = write_windows_npz(tmp_path / "test.npz", n=20, seed=3, names=["ax", "ay"])
    with np.load(path) as d:
        keep = d["y"] == "sit"
        np.savez(path, X=d["X"][keep], y=d["y"][keep], channels=d["channels"])
    code, out, err = _eval(capsys, str(run), "--data-dir", str(path), "--json")
    assert code == 0, err
    report = _json(out)
    assert report["per_class_accuracy"]["walk"] is None
    code, out, _ = _eval(capsys, str(run), "--data-dir", str(path))
    walk = next(line for line in out.splitlines() if line.strip().startswith("walk"))
    assert "0.00" not in walk and "n=0" in walk


def test_data_flag_is_gone(windows_run, capsys):
    run, _ = windows_run
    with pytest.raises(SystemExit):
        _eval(capsys, str(run), "--data", "x.npz")


@pytest.mark.slow
def test_the_export_of_a_windows_run_is_scored_on_the_held_out_split_too(windows_run, capsys,
                                                                        tmp_path):
    from edge_rnn_zoo.cli import main

    run, _ = windows_run
    out = tmp_path / "step"
    assert main(["export", str(run), "--form", "step", "--quantize", "int8", "--no-micro",
                 "--allow-drop", "--out", str(out)]) == 0
    capsys.readouterr()
    code, said, err = _eval(capsys, str(out), "--json")
    assert code == 0, err
    assert _json(said)["test_sequences"] == 15  # the run's held-out windows, not all 90


def test_a_run_that_did_not_record_its_training_file_is_scored_on_its_held_out_split(
        windows_run, capsys, tmp_path):
    import shutil

    import yaml

    run, _ = windows_run
    old = tmp_path / "old-run"
    shutil.copytree(run, old)
    config = yaml.safe_load((old / "config.yaml").read_text())
    for key in ("task_options", "task_options_resolved"):
        config[key].pop("train_data", None)
    (old / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    code, out, err = _eval(capsys, str(old), "--json")
    assert code == 0, err
    assert _json(out)["test_sequences"] == 15
