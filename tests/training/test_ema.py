"""``ema_momentum``: the run keeps the exponential moving average of its weights (Polyak
averaging through Keras's optimizer ``use_ema`` and ``SwapEMAWeights(swap_on_epoch=True)``).
Checked against a NumPy recursion over the weights recorded after every step: the model the run
keeps (the last epoch's, or the best one's early stopping restored), what its validation scored,
a resume after a kill, a QAT model; bad values refused in one line; old results still match."""

import csv
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import yaml

from zoo.core import storage
from zoo.training import trainer
from zoo.training.artifacts import load_keras_model
from zoo.training.config import TrainConfig, check_settings, resolve, with_defaults
from zoo.training.rundir import RunDirectory
from tests.conftest import cv_results_record

REPO = Path(__file__).resolve().parents[2]
MOMENTUM = 0.8
PARITY = {"n_train": 128, "n_val": 64, "n_test": 64, "max_length": 6, "test_length": 6}


def ema_of(trajectory: list[list[np.ndarray]], momentum: float) -> list[np.ndarray]:
    """NumPy reference (Keras's optimizer: the momentum is 0 at the first step, iteration 0):
    avg_1 = w_1 (the weights after the first step), then avg_k = m avg_(k-1) + (1 - m) w_k."""
    average = [w.astype(np.float64) for w in trajectory[0]]
    for weights in trajectory[1:]:
        average = [momentum * a + (1 - momentum) * w for a, w in zip(average, weights)]
    return average


class StepRecorder(keras.callbacks.Callback):
    """The trainable weights after every optimizer step, as the optimizer left them (the swap
    acts at epoch boundaries and around validation only, never between two steps)."""

    def __init__(self):
        super().__init__()
        self.trajectory = []

    def on_train_batch_end(self, batch, logs=None):
        sync = getattr(self.model, "jax_state_sync", None)  # JAX: weights live outside the
        if sync is not None:                                  # variables during an epoch
            sync()
        self.trajectory.append([keras.ops.convert_to_numpy(v)
                                for v in self.model.trainable_variables])


def config(**changes) -> TrainConfig:
    """A tiny GRU on parity with plain SGD at a large rate: the weights move every step, so the
    average is far from the last weights, and val_accuracy peaks before the last epoch."""
    settings = dict(task="parity", model="gru", model_options={"units": 4}, epochs=6,
                    batch_size=32, lr=2.0, optimizer="sgd", early_stopping_patience=0,
                    monitor="val_accuracy", ema_momentum=MOMENTUM, task_options=PARITY, seed=0,
                    backend=keras.backend.backend())  # KERAS_BACKEND=jax runs them on JAX
    return TrainConfig(**{**settings, **changes})


def kept_weights(run: Path) -> list[np.ndarray]:
    return [keras.ops.convert_to_numpy(v)
            for v in load_keras_model(RunDirectory(run).model).trainable_variables]


def assert_is_the_average(kept, trajectory, steps: int):
    """``kept`` equals the NumPy average of the first ``steps`` recorded steps, and not those
    steps' last weights (else the check could not tell the average from the raw weights)."""
    expected = ema_of(trajectory[:steps], MOMENTUM)
    assert len(kept) == len(expected)
    for got, want in zip(kept, expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert max(np.max(np.abs(g - w)) for g, w in zip(kept, trajectory[steps - 1])) > 1e-3


@dataclasses.dataclass
class Trained:
    """A run trained with `StepRecorder` among its callbacks."""
    config: TrainConfig
    out: Path
    metrics: dict
    trajectory: list

    def best_epoch_steps(self) -> int:
        """The steps recorded up to the end of the epoch the run kept."""
        steps_per_epoch = len(self.trajectory) // self.metrics["epochs_run"]
        assert steps_per_epoch * self.metrics["epochs_run"] == len(self.trajectory) == \
            self.metrics["epochs_run"] * int(np.ceil(PARITY["n_train"] / self.config.batch_size))
        return self.metrics["best_epoch"] * steps_per_epoch


def trained(cfg: TrainConfig, out: Path, *more_callbacks) -> Trained:
    recorder = StepRecorder()
    metrics = trainer.train(cfg, out, callbacks=[recorder, *more_callbacks])
    return Trained(cfg, out, metrics, recorder.trajectory)


@pytest.fixture(scope="module")
def restored(tmp_path_factory) -> Trained:
    """Early stopping on (patience 10): every epoch runs, and the best epoch, an earlier one, is
    restored at the end."""
    run = trained(config(early_stopping_patience=10), tmp_path_factory.mktemp("ema") / "run")
    assert run.metrics["best_epoch"] < run.metrics["epochs_run"] == run.config.epochs, \
        "the fixture meant an earlier best epoch, every epoch run"
    return run


def test_the_kept_model_is_the_numpy_average_of_the_best_epoch_s_steps(restored):
    assert_is_the_average(kept_weights(restored.out), restored.trajectory,
                          restored.best_epoch_steps())


@pytest.mark.parametrize("patience", [0, 1])
def test_the_kept_model_is_the_numpy_average_of_its_steps(tmp_path, patience):
    """Without early stopping: the average after the last step. With patience 1 it stops
    before the last epoch and restores the best one's average."""
    run = trained(config(early_stopping_patience=patience), tmp_path / "r")
    assert (run.metrics["epochs_run"] < run.config.epochs) == bool(patience)
    assert_is_the_average(kept_weights(run.out), run.trajectory, run.best_epoch_steps())


class StopAfter(keras.callbacks.Callback):
    """Stops the run at the end of epoch ``epochs`` (1-based), as a search's scheduler may."""

    def __init__(self, epochs: int):
        super().__init__()
        self.epochs = epochs

    def on_epoch_end(self, epoch, logs=None):
        if epoch + 1 == self.epochs:
            self.model.stop_training = True


def test_a_run_another_callback_stops_keeps_the_average_of_its_steps(tmp_path):
    """Stopped after epoch 3 of 6 without early stopping: Keras's fit copies the optimizer's
    slots (the raw weights then) into the model unless the run makes them the average first."""
    run = trained(config(), tmp_path / "r", StopAfter(3))
    assert run.metrics["epochs_run"] == 3
    assert_is_the_average(kept_weights(run.out), run.trajectory, len(run.trajectory))


def validation_split(cfg: TrainConfig):
    from zoo.training.tasks import get_task

    data = get_task(cfg.task, **cfg.task_options).load(None, seed=cfg.seed)
    return data.normalization.apply(data.val.x).astype("float32"), data.val.y


def test_the_validation_score_the_run_reports_is_the_average_s(restored):
    """history.csv's val_loss at the best epoch (what early stopping chose by) is the saved
    model's loss on the validation split, evaluated here; the raw weights of that epoch score
    another loss."""
    row = list(csv.DictReader((restored.out / "history.csv").open()))[
        restored.metrics["best_epoch"] - 1]
    x_val, y_val = validation_split(restored.config)
    model = load_keras_model(RunDirectory(restored.out).model)
    scores = model.evaluate(x_val, y_val, verbose=0, return_dict=True)
    assert float(row["val_loss"]) == pytest.approx(scores["loss"], rel=1e-5)
    assert float(row["val_accuracy"]) == pytest.approx(scores["accuracy"], abs=1e-9)
    for variable, raw in zip(model.trainable_variables,
                             restored.trajectory[restored.best_epoch_steps() - 1]):
        variable.assign(raw)
    raw_loss = model.evaluate(x_val, y_val, verbose=0, return_dict=True)["loss"]
    assert abs(raw_loss - scores["loss"]) > 1e-4


class Killed(BaseException):
    """A kill injected at a write boundary (not an Exception: nothing cleans up after it)."""


def test_a_resumed_run_carries_on_the_average(restored, tmp_path, monkeypatch):
    """Killed after epoch 3's checkpoint (which holds the average in the model and the raw
    weights in the optimizer's slots), the resumed run keeps what the uninterrupted one kept,
    and validated the same weights on the way."""
    cfg = restored.config
    whole = restored.out

    def kill_once(label):
        if label == "checkpoint epoch-0003: committed":
            monkeypatch.setattr(storage, "crash_point", lambda label: None)
            raise Killed(label)

    monkeypatch.setattr(storage, "crash_point", kill_once)
    with pytest.raises(Killed):
        trainer.train(cfg, tmp_path / "resumed")
    state = json.loads(next((tmp_path / "resumed" / "checkpoints").glob("epoch-0003"))
                       .joinpath("state.json").read_text())
    assert state["callbacks"]["ema"] == {"average_in_model": True}
    trainer.train(cfg, tmp_path / "resumed")
    for got, want in zip(kept_weights(tmp_path / "resumed"), kept_weights(whole)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    whole, resumed = ((run / "history.csv").read_text().splitlines()
                      for run in (whole, tmp_path / "resumed"))
    columns = whole[0].split(",")
    for a, b in zip(whole[1:], resumed[1:]):
        assert [float(x) for c, x in zip(columns, a.split(",")) if c.startswith("val_")] == \
            pytest.approx([float(x) for c, x in zip(columns, b.split(",")) if c.startswith("val_")],
                          rel=1e-5)


def test_a_qat_model_keeps_the_average_and_trains_as_without_it(tmp_path):
    """A QAT SiRNN (the windows recipe's model options): the trainable weights are averaged,
    and the ranges (non-trainable) are tracked on the raw weights at each epoch's start, so the
    raw weights train exactly as in the same run without averaging."""
    qat = {"units": 8, "rank": 2, "state_clip": 1.0, "state_quant_bits": 8, "qat": "int8",
           "qat_percentile": 98.0}
    cfg = config(model="sirnn", model_options=qat, epochs=2, lr=0.5, early_stopping_patience=0)
    run = trained(cfg, tmp_path / "ema")
    assert any(not v.trainable for v in load_keras_model(RunDirectory(run.out).model).variables
               if "range" in v.path)
    assert_is_the_average(kept_weights(run.out), run.trajectory, len(run.trajectory))
    plain = trained(dataclasses.replace(cfg, ema_momentum=None), tmp_path / "plain")
    assert len(plain.trajectory) == len(run.trajectory)
    for step, (a, b) in enumerate(zip(run.trajectory, plain.trajectory)):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5, err_msg=f"step {step + 1}")


def test_warm_start_distillation_and_a_qat_stage_keep_the_stage_s_average(tmp_path):
    """A SiRNN initialised from a finished run, distilled from it, with a QAT stage: the stage
    trains a new model with a new optimizer, so the run keeps the average of the stage's steps
    (its first step's weights the start of that average, as for any fresh optimizer)."""
    sirnn = {"units": 8, "rank": 2, "state_clip": 1.0, "state_quant_bits": 8}
    teacher = tmp_path / "teacher"
    trainer.train(config(model="sirnn", model_options=sirnn, epochs=1, lr=0.5,
                         ema_momentum=None), teacher)
    cfg = config(model="sirnn", model_options=sirnn, epochs=1, lr=0.5, init_from=str(teacher),
                 distill={"teacher": str(teacher), "alpha": 0.5},
                 qat_stage={"epochs": 2, "lr": 2.0})
    recorder, out = StepRecorder(), tmp_path / "student"
    metrics = trainer.train(cfg, out, callbacks=[recorder])
    assert metrics["epochs_run"] == 3 and "qat_stage" in metrics
    stage_steps = len(recorder.trajectory) * 2 // 3
    stage = recorder.trajectory[-stage_steps:]
    assert_is_the_average(kept_weights(out), stage, stage_steps)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_zoo_train_keeps_the_average_on_either_backend(backend, tmp_path):
    """``zoo train --ema-momentum`` with early stopping, in a subprocess per backend: the best
    epoch's val_loss in history.csv is the saved model's loss on the validation split. Under
    JAX, Keras left each weight sharing one buffer with its average, which the final evaluate
    deleted before the save."""
    run, cfg = tmp_path / "ema", config(early_stopping_patience=10)
    proc = subprocess.run(
        [sys.executable, "-m", "edge_rnn_zoo", "train", "--task", "parity", "--model", "gru",
         "--units", "4", "--epochs", "6", "--batch-size", "32", "--lr", "2", "--optimizer",
         "sgd", "--patience", "10", "--monitor", "val_accuracy", "--recipe", "none", "--seed",
         "0", "--ema-momentum", str(MOMENTUM), "--backend", backend, "--out", str(run),
         *[arg for k, v in PARITY.items() for arg in ("--task-option", f"{k}={v}")]],
        capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((run / "metrics.json").read_text())
    row = list(csv.DictReader((run / "history.csv").open()))[metrics["best_epoch"] - 1]
    x_val, y_val = validation_split(cfg)
    scores = load_keras_model(RunDirectory(run).model).evaluate(x_val, y_val, verbose=0,
                                                                return_dict=True)
    assert float(row["val_loss"]) == pytest.approx(scores["loss"], rel=1e-5)
    assert RunDirectory(run).record().config.settings.ema_momentum == MOMENTUM


# --------------------------------------------------------------------------- bad values


BAD = [0, 0.0, 1, 1.0, -0.1, "x", True]


@pytest.mark.parametrize("value", BAD)
def test_a_bad_momentum_is_refused_in_one_line_naming_it_and_the_range(value):
    with pytest.raises(ValueError, match=r"^invalid ema_momentum \(--ema-momentum\): .*"
                                         r"valid: a number in \(0, 1\)") as err:
        config(ema_momentum=value)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match=r"ema_momentum.*\(0, 1\)"):
        check_settings({"ema_momentum": value}, "--variant v:")  # zoo sweep, before Ray


@pytest.mark.parametrize("text", ["0", "1", "-0.1", "x", "1.5", "nan"])
def test_the_flag_refuses_a_bad_momentum_before_keras(text, capsys):
    from edge_rnn_zoo.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser("train").parse_args(["train", "--task", "parity", "--model", "gru",
                                          "--ema-momentum", text])
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].endswith(f"argument --ema-momentum: invalid ema_momentum: {text!r}; "
                              "valid: a number in (0, 1), e.g. 0.99 (or unset: no weight "
                              "averaging)"), lines
    args = build_parser("train").parse_args(["train", "--task", "parity", "--model", "gru",
                                             "--ema-momentum", "0.99"])
    assert args.ema_momentum == 0.99


def test_a_recipe_s_bad_momentum_is_refused_naming_it(tmp_path):
    recipe = tmp_path / "mine.yaml"
    recipe.write_text(yaml.safe_dump({"task": "parity", "model": "gru", "ema_momentum": 1.0}))
    with pytest.raises(ValueError, match=r"invalid ema_momentum .*\(0, 1\)"):
        resolve("parity", "gru", str(recipe), {})
    recipe.write_text(yaml.safe_dump({"task": "parity", "model": "gru", "ema_momentum": 0.99}))
    assert resolve("parity", "gru", str(recipe), {}).ema_momentum == 0.99


def test_ema_with_sparsity_training_is_refused():
    with pytest.raises(ValueError, match="ema_momentum 0.9 and sparsity_w / sparsity_u"):
        TrainConfig(task="har2", model="fastgrnn", ema_momentum=0.9, sparsity_w=0.5)


# ------------------------------------------------------------------------------ records


def test_the_setting_round_trips_through_config_yaml_and_the_run_record(tmp_path):
    cfg, out = config(epochs=1), tmp_path / "r"
    trainer.train(cfg, out)
    assert yaml.safe_load((out / "config.yaml").read_text())["ema_momentum"] == MOMENTUM
    settings = RunDirectory(out).record().config.settings
    assert settings == cfg and settings.ema_momentum == MOMENTUM
    older = yaml.safe_load((out / "config.yaml").read_text())
    del older["ema_momentum"]  # a run from before the setting
    (out / "config.yaml").write_text(yaml.safe_dump(older))
    assert RunDirectory(out).record().config.settings.ema_momentum is None


def test_a_results_file_written_before_a_setting_existed_still_matches(tmp_path):
    from zoo.experiments.trials import Trial, recorded

    config_ = TrainConfig(task="har2", model="sirnn", early_stopping_patience=0).to_dict()
    older = {k: v for k, v in config_.items() if k != "ema_momentum"}
    assert with_defaults(older) == config_
    result = tmp_path / "fold0.json"
    result.write_text(json.dumps(cv_results_record(0, 91.0, config=older)))
    run_dir = tmp_path / "out" / "har2" / "sirnn" / "v" / "fold0"
    trial = Trial(task="har2", label="sirnn", variant="v", fold=0, folds=5, config=config_,
                  run_dir=str(run_dir), result=str(result))
    assert recorded(trial)["val"] == 91.0
    changed = {**config_, "ema_momentum": 0.99}
    assert recorded(dataclasses.replace(trial, config=changed)) is None
