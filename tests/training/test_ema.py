"""``ema_momentum``: the run keeps the exponential moving average of its weights (Polyak
averaging through Keras's ``use_ema``), validation scores that average, and old results files
(written before the setting existed) still match their trials."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import keras
import numpy as np
import pytest

from zoo.training import trainer
from zoo.training.config import TrainConfig, with_defaults
from zoo.training.rundir import RunDirectory
from tests.conftest import cv_results_record

REPO = Path(__file__).resolve().parents[2]
SMALL = {"units": 8, "rank": 2}


def ema_of(trajectory: list[list[np.ndarray]], momentum: float) -> list[np.ndarray]:
    """NumPy reference: avg_1 = w_1 (the weights after the first batch), then
    avg_k = m * avg_(k-1) + (1 - m) * w_k."""
    average = [w.copy() for w in trajectory[0]]
    for weights in trajectory[1:]:
        average = [momentum * a + (1 - momentum) * w for a, w in zip(average, weights)]
    return average


def test_the_model_after_fit_is_the_average_of_every_batch_s_weights():
    task = SimpleNamespace(kind="classification", input_shape=(12, 3), num_classes=2)
    config = TrainConfig(task="har2", model="sirnn", model_options=SMALL, lr=0.05,
                         ema_momentum=0.8, early_stopping_patience=0)
    model = trainer.build_model(config, task)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(64, 12, 3)).astype("float32"), rng.integers(0, 2, 64)
    trajectory = []
    record = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: trajectory.append(
            [np.array(v) for v in model.trainable_weights]))
    model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0, callbacks=[record])

    assert len(trajectory) == 8
    expected = ema_of(trajectory, 0.8)
    for got, want, last in zip(model.trainable_weights, expected, trajectory[-1]):
        np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-6)
    assert not all(np.allclose(a, b) for a, b in zip(expected, trajectory[-1]))


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_a_run_keeps_the_average_and_its_validation_scored_it(backend, shared_data, tmp_path):
    """``zoo train --ema-momentum``: the last epoch's val_accuracy in history.csv (computed
    during fit) equals the saved model's accuracy on the validation split, so validation saw the
    weights the run kept. Under JAX, Keras left each weight sharing one buffer with its average,
    which the final evaluate deleted before the save."""
    har, run = shared_data / "har", tmp_path / "ema"
    proc = subprocess.run(
        [sys.executable, "-m", "edge_rnn_zoo", "train", "--task", "har2", "--model", "sirnn",
         "--units", "8", "--rank", "2", "--epochs", "2", "--batch-size", "64", "--patience", "0",
         "--recipe", "none", "--seed", "1", "--ema-momentum", "0.7", "--backend", backend,
         "--data-dir", str(har), "--out", str(run)],
        capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]

    from zoo.training.artifacts import load_keras_model
    from zoo.training.tasks import get_task

    data = get_task("har2").load(har, seed=1)
    model = load_keras_model(RunDirectory(run).model)
    x_val = data.normalization.apply(data.val.x).astype("float32")
    accuracy = np.mean(np.argmax(model.predict(x_val, verbose=0), -1) == data.val.y)
    history = (run / "history.csv").read_text().splitlines()
    header, last = history[0].split(","), history[-1].split(",")
    assert len(data.val.y) > 100
    assert float(last[header.index("val_accuracy")]) == pytest.approx(accuracy, abs=1e-6)


def test_ema_with_early_stopping_is_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"early_stopping_patience \(--patience\) to 0"):
        TrainConfig(task="har2", model="sirnn", ema_momentum=0.99, early_stopping_patience=5)
    with pytest.raises(ValueError, match=r"ema_momentum.*\[0, 1\)"):
        TrainConfig(task="har2", model="sirnn", ema_momentum=1.0, early_stopping_patience=0)


def test_a_results_file_written_before_a_setting_existed_still_matches(tmp_path):
    from zoo.experiments.trials import Trial, recorded

    config = TrainConfig(task="har2", model="sirnn", early_stopping_patience=0).to_dict()
    older = {k: v for k, v in config.items() if k != "ema_momentum"}
    assert with_defaults(older) == config
    result = tmp_path / "fold0.json"
    result.write_text(json.dumps(cv_results_record(0, 91.0, config=older)))
    run_dir = tmp_path / "out" / "har2" / "sirnn" / "v" / "fold0"
    trial = Trial(task="har2", label="sirnn", variant="v", fold=0, folds=5, config=config,
                  run_dir=str(run_dir), result=str(result))
    assert recorded(trial)["val"] == 91.0
    changed = {**config, "ema_momentum": 0.99}
    assert recorded(dataclasses.replace(trial, config=changed)) is None
