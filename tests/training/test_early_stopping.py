"""Issue 22: when early stopping ends a run (or leaves an earlier epoch's weights in it), `zoo
train` says so in one line, and that line agrees with the run's own record: ``history.csv``'s
rows and ``metrics.json``'s ``epochs_run`` and ``best_epoch``. Also after a kill and resume."""

import csv
import json

import pytest

from zoo.training import trainer
from zoo.core import storage
from zoo.training.config import TrainConfig


def config(**changes) -> TrainConfig:
    """A run early stopping must end: the learning rate is too small to change any prediction, so
    ``val_accuracy`` never gains after epoch 1 and patience 2 stops it after epoch 3 of 8."""
    settings = dict(task="parity", model="gru", model_options={"units": 4}, epochs=8,
                    batch_size=64, lr=1e-12, early_stopping_patience=2, monitor="val_accuracy",
                    task_options={"n_train": 128, "n_val": 64, "n_test": 64, "max_length": 6,
                                  "test_length": 6})
    return TrainConfig(**{**settings, **changes})


def check_line_against_the_run(lines, out, cfg):
    history = list(csv.DictReader((out / "history.csv").open()))
    metrics = json.loads((out / "metrics.json").read_text())
    scores = [float(row[cfg.monitor]) for row in history]
    best = max(range(len(scores)), key=lambda i: (scores[i], -i)) + 1  # first best, from 1
    stop = len(history)
    assert stop < cfg.epochs, "the fixture run was meant to stop early"
    assert (metrics["epochs_run"], metrics["best_epoch"]) == (stop, best)
    said = [x for x in lines if x.startswith("early stopping")]
    assert said == [f"early stopping: no {cfg.monitor} gain for {stop - best} epochs, stopped "
                    f"after epoch {stop}/{cfg.epochs}; restored the weights of epoch {best} "
                    f"({cfg.monitor} {100 * scores[best - 1]:.2f}%)"], lines


def test_early_stop_is_said_in_one_line_that_agrees_with_history_and_metrics(tmp_path,
                                                                              log_lines):
    cfg = config()
    with log_lines() as lines:
        trainer.train(cfg, tmp_path / "run")
    check_line_against_the_run(lines, tmp_path / "run", cfg)
    # Said once, before the test summary.
    assert [x.split(":")[0] for x in lines[-2:]] == ["early stopping", "test"]


class Killed(BaseException):
    """A kill injected at a write boundary (not an Exception: nothing cleans up after it)."""


@pytest.mark.parametrize("kill_at, epochs_left", [
    ("checkpoint epoch-0002: committed", 1),  # the resume trains the stopping epoch
    ("model.keras: written, not renamed", 0),  # stopped before the kill: nothing left to train
])
def test_early_stop_is_said_on_the_resume_that_finishes_the_run(tmp_path, monkeypatch, kill_at,
                                                                epochs_left, log_lines):
    """Killed after epoch 2's checkpoint, or after the stopping epoch's but before the run was
    written: the resume restores the early-stopping state and says what it did."""
    cfg, out = config(), tmp_path / "run"

    def kill_once(label):
        if label == kill_at:
            monkeypatch.setattr(storage, "crash_point", lambda label: None)
            raise Killed(label)

    monkeypatch.setattr(storage, "crash_point", kill_once)
    with pytest.raises(Killed):
        trainer.train(cfg, out)
    assert not (out / "metrics.json").exists()
    with log_lines() as lines:
        trainer.train(cfg, out)
    assert any(x.startswith("resuming") for x in lines)
    assert sum(x.lstrip().startswith("epoch ") for x in lines) == epochs_left, lines
    check_line_against_the_run(lines, out, cfg)


def test_no_line_when_the_last_epoch_is_the_best(tmp_path, log_lines):
    """Nothing to say: every epoch ran and the final weights are the last epoch's."""
    cfg = config(epochs=1)
    with log_lines() as lines:
        trainer.train(cfg, tmp_path / "run")
    assert not any("early stopping" in x for x in lines), lines
