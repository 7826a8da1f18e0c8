"""`zoo.training.runs.train_or_reuse`, the driver of zoo bench, zoo.experiments.quality, zoo.experiments.device_latency
and the accuracy benchmark: a finished run is reused untouched, anything else is trained (an
unfinished run resumes inside `train`). The trainer is replaced by a recorder: no TensorFlow."""

from pathlib import Path

import pytest

import zoo.training.trainer
from zoo.training.rundir import RunDirectory
from zoo.training.runs import train_or_reuse


@pytest.fixture
def calls(monkeypatch):
    made = []

    def fake_train(config, run_dir, **kwargs):
        made.append((config, Path(run_dir), kwargs))
        RunDirectory(run_dir).root.mkdir(parents=True, exist_ok=True)
        RunDirectory(run_dir).metrics.write_text("{}")

    monkeypatch.setattr(zoo.training.trainer, "train", fake_train)
    return made


def test_a_missing_or_unfinished_run_is_trained(calls, tmp_path):
    unfinished = tmp_path / "b"
    unfinished.mkdir()
    RunDirectory(unfinished).config.write_text("task: har2\n")
    for run_dir in (tmp_path / "a", unfinished):
        assert train_or_reuse("CONFIG", run_dir, data_dir="DATA", verbose=0) == run_dir
    assert [(c, d) for c, d, _ in calls] == [("CONFIG", tmp_path / "a"), ("CONFIG", unfinished)]
    assert calls[0][2]["data_dir"] == "DATA" and calls[0][2]["verbose"] == 0


def test_a_finished_run_is_reused(calls, tmp_path):
    run = RunDirectory(tmp_path / "done")
    run.root.mkdir()
    run.metrics.write_text("{}")
    assert train_or_reuse("CONFIG", str(run.root)) == run.root
    assert calls == []
