"""The QAT stage of a run (``qat_stage``, `zoo.training.qat_stage`): one `train` call trains the
float epochs, then fine-tunes the model with QAT from the float weights.

The end-to-end run (a tiny SiRNN on the shared HAR subset, 2 float epochs and 2 QAT epochs) is
killed twice, after its last float checkpoint and after its first QAT one, and resumed each time
with the same call. What is checked is independent of the stage's code: the saved model's cells
say ``qat`` (Keras's own config), its weights are the float checkpoint's (the stage's learning
rate is 1e-12), the input point's range is ``np.percentile`` of the tracking sample, and its int8
step export, run by LiteRT, takes that range as its input scale and gives the Keras model's class.
"""

import json

import keras
import numpy as np
import pytest

from zoo import qat
from zoo.core import storage
from zoo.training.config import TrainConfig, check_qat_stage, resolve
from zoo.training.tasks import get_task

MODEL = {"units": 8, "rank": 4, "state_clip": 1.0, "state_quant_bits": 8}
STAGE = {"epochs": 2, "lr": 1e-12}  # the float weights carried over unchanged


def config(**changes):
    settings = dict(task="har2", model="sirnn", model_options=MODEL, epochs=2, batch_size=512,
                    lr=0.02, early_stopping_patience=0, seed=4, qat_stage=STAGE)
    return TrainConfig(**{**settings, **changes})


# -------------------------------------------------------------------- the setting (no Keras)
def test_defaults_are_the_measured_fine_tune_and_epochs_0_is_no_stage():
    assert check_qat_stage({}) == {"epochs": 10, "lr": 1e-3, "percentile": 98.0}
    assert check_qat_stage({"epochs": 3}) == {"epochs": 3, "lr": 1e-3, "percentile": 98.0}
    assert check_qat_stage({"epochs": 0}) is None
    assert check_qat_stage(None) is None


@pytest.mark.parametrize("options, named", [
    ({"epoch": 3}, "unknown qat_stage option(s) ['epoch']"),
    ({"epochs": -1}, "invalid qat_stage option epochs (--qat-stage epochs=...): -1"),
    ({"epochs": 2.5}, "invalid qat_stage option epochs"),
    ({"lr": 0}, "invalid qat_stage option lr"),
    ({"percentile": 50}, "invalid qat_stage option percentile"),
    ("yes", "invalid qat_stage (--qat-stage): 'yes'"),
])
def test_a_bad_option_is_refused_naming_it(options, named):
    with pytest.raises(ValueError, match="qat_stage") as err:
        config(qat_stage=options)
    assert named in str(err.value)


def test_a_model_that_is_qat_already_is_refused():
    with pytest.raises(ValueError, match="model option qat 'int8' makes every epoch QAT"):
        config(model_options={**MODEL, "qat": "int8"})
    config(model_options={**MODEL, "qat": "int8"}, qat_stage={"epochs": 0})  # no stage: fine


def test_flags_add_to_the_recipes_stage_option_by_option(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("task: har2\nmodel: sirnn\nqat_stage: {epochs: 10, percentile: 99}\n")
    got = resolve("har2", "sirnn", str(recipe), {"qat_stage": {"epochs": 4}})
    assert got.qat_stage == {"epochs": 4, "percentile": 99}
    off = resolve("har2", "sirnn", str(recipe), {"qat_stage": {"epochs": 0}})
    assert check_qat_stage(off.qat_stage) is None


# ----------------------------------------------------------------------- the stage, trained
class Killed(BaseException):
    """Stands for SIGKILL (not an Exception: no handler in the code under test catches it)."""


def train_killed_at(cfg, out, har, label, monkeypatch):
    from zoo.training.trainer import train

    def crash(at):
        if at == label:
            raise Killed(at)

    monkeypatch.setattr(storage, "crash_point", crash)
    with pytest.raises(Killed):
        train(cfg, out, data_dir=har, verbose=0)
    monkeypatch.undo()


def plain_weights(model):
    return [keras.ops.convert_to_numpy(w) for w in model.weights
            if not w.path.endswith("qat_ranges")]


@pytest.fixture(scope="module")
def stage_run(tmp_path_factory, shared_data, log_lines):
    """The run, killed after epoch 2 (the last float one) and after epoch 3 (the first QAT one),
    each time resumed; with the float weights of epoch 2's checkpoint and the log lines."""
    from zoo.training.trainer import train

    har, out = shared_data / "har", tmp_path_factory.mktemp("stage") / "run"
    cfg = config()
    with pytest.MonkeyPatch.context() as mp:
        train_killed_at(cfg, out, har, "checkpoint epoch-0002: committed", mp)
    float_model = keras.saving.load_model(out / "checkpoints" / "epoch-0002" / "model.keras")
    with pytest.MonkeyPatch.context() as mp:
        train_killed_at(cfg, out, har, "checkpoint epoch-0003: committed", mp)
    state = json.loads((out / "checkpoints" / "epoch-0003" / "state.json").read_text())
    with log_lines() as lines:
        metrics = train(cfg, out, data_dir=har, verbose=0)
    return {"out": out, "cfg": cfg, "har": har, "float": plain_weights(float_model),
            "state": state, "metrics": metrics, "lines": lines}


@pytest.mark.slow
def test_the_run_ends_in_a_qat_model_fine_tuned_from_its_float_weights(stage_run):
    out, cfg, metrics = stage_run["out"], stage_run["cfg"], stage_run["metrics"]
    model = keras.saving.load_model(out / "model.keras")
    (cell_config,) = [layer.cell.get_config() for layer in model.layers
                      if isinstance(layer, keras.layers.RNN)]
    assert cell_config["qat"] == "int8" and cell_config["qat_percentile"] == 98.0
    for got, want in zip(plain_weights(model), stage_run["float"], strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    # The input point's range, calibrated and then tracked on the same sequences, is their 2nd
    # and 98th percentiles whatever the weights (the input does not depend on them).
    data = get_task("har2").load(stage_run["har"], seed=cfg.seed)
    sample = qat.tracking_sample(data.normalization.apply(data.train.x).astype("float32"),
                                 cfg.seed)
    (cell,) = qat.qat_cells(model)
    lo, hi = np.percentile(sample, 2), np.percentile(sample, 98)
    assert cell.quant_points.as_dict()["x"] == pytest.approx((min(lo, 0), max(hi, 0)), rel=1e-5)
    # Four epochs in one history; the stage began after the second, in one checkpoint's record.
    assert len((out / "history.csv").read_text().splitlines()) == 1 + 4
    assert stage_run["state"]["callbacks"]["qat_stage"]["start_epoch"] == 2
    assert metrics["qat_stage"]["start_epoch"] == 2 and metrics["epochs_run"] == 4
    assert set(metrics["qat_stage"]["float"]) == {"best_epoch", "val", "test"}
    assert any(line.startswith(f"resuming {out} after epoch 3/") for line in stage_run["lines"])
    resolved = (out / "config.yaml").read_text()
    assert "qat: int8" in resolved and "qat_percentile: 98.0" in resolved


@pytest.mark.slow
def test_its_int8_step_export_takes_the_trained_ranges_and_agrees(stage_run, tmp_path):
    from zoo.export import device_runtime
    from zoo.export.c_backend.project import read_step_export
    from zoo.export.exporter import export_run

    out, har = stage_run["out"], stage_run["har"]
    export_run(out, tmp_path / "int8", quantize="int8", form="step", data_dir=har, micro=False,
               allow_drop=True)
    model = keras.saving.load_model(out / "model.keras")
    (cell,) = qat.qat_cells(model)
    lo, hi = cell.quant_points.as_dict()["x"]
    from ai_edge_litert.interpreter import Interpreter

    card = read_step_export(tmp_path / "int8")
    step = Interpreter(str(tmp_path / "int8" / card.files.step))
    (x_in,) = [d for d in step.get_input_details() if d["shape"][-1] == model.input_shape[-1]]
    scale, _ = x_in["quantization"]
    assert scale == pytest.approx((np.float32(hi) - np.float32(lo)) / 255, rel=1e-6)
    data = get_task("har2").load(har, seed=stage_run["cfg"].seed)
    x = data.normalization.apply(data.test.x).astype("float32")[:200]
    keras_class = model.predict(x, verbose=0).argmax(-1)
    runner = device_runtime.open_export(str(tmp_path / "int8"), card, "litert", 1)
    int8_class = np.array([np.argmax(runner.predict(w)) for w in x])
    assert np.mean(int8_class == keras_class) >= 0.99
