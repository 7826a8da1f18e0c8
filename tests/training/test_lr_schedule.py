"""``lr_schedule``: step decay and cosine annealing of the learning rate per epoch, checked
against the closed forms (a run's history.csv logs the rate each epoch trained with)."""

import csv
import math

import keras
import pytest

from zoo.training.config import TrainConfig
from zoo.training.trainer import epoch_learning_rate, train

SMALL = {"units": 8, "rank": 2}


def _config(**settings):
    return TrainConfig(task="har2", model="sirnn", model_options=SMALL, **settings)


def test_cosine_is_half_a_cosine_period_over_the_epoch_budget():
    rate = epoch_learning_rate(_config(lr=0.02, epochs=8, lr_schedule="cosine"))
    for epoch in range(8):
        # Keras computes the schedule in float32
        assert rate(epoch) == pytest.approx(0.01 * (1 + math.cos(math.pi * epoch / 8)), rel=1e-5)


def test_step_decay_and_constant():
    rate = epoch_learning_rate(_config(lr=0.01, lr_decay_epochs=3, lr_decay_factor=0.5))
    assert [rate(e) for e in range(7)] == pytest.approx([0.01] * 3 + [0.005] * 3 + [0.0025])
    assert epoch_learning_rate(_config(lr=0.01)) is None  # step without decay epochs: constant


def test_bad_schedules_are_refused_naming_the_setting():
    with pytest.raises(ValueError, match=r"lr_schedule \(--lr-schedule\): 'linear'.*step, cosine"):
        _config(lr_schedule="linear")
    with pytest.raises(ValueError, match=r"cosine.*lr_decay_epochs 20.*unset lr_decay_epochs"):
        _config(lr_schedule="cosine", lr_decay_epochs=20)


@pytest.mark.slow
def test_a_run_trains_each_epoch_at_the_cosine_rate(shared_data, tmp_path):
    config = _config(lr=0.01, epochs=3, batch_size=256, lr_schedule="cosine",
                     early_stopping_patience=0, backend=keras.backend.backend())
    train(config, tmp_path / "run", data_dir=shared_data / "har", verbose=0)
    with open(tmp_path / "run" / "history.csv", newline="") as f:
        logged = [float(row["learning_rate"]) for row in csv.DictReader(f)]
    assert logged == pytest.approx([0.005 * (1 + math.cos(math.pi * e / 3)) for e in range(3)],
                                   rel=1e-5)
