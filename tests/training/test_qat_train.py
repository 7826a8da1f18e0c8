"""Training with QAT (`zoo.qat`) through `zoo.training.trainer.train`, on the shared HAR subset: a
warm start from a float run and from a QAT run copies the weights and sets the ranges from the
training data (checked against ``np.percentile`` of the tracking sample), and a resumed QAT run
continues from its checkpoint's ranges (checked against the EMA from the checkpoint)."""

import keras
import numpy as np
import pytest

from zoo.core import storage
from zoo.training.config import TrainConfig
from zoo.training.tasks import get_task
from zoo.training.trainer import train
from zoo import qat

MODEL = {"units": 8, "rank": 4, "state_clip": 1.0, "state_quant_bits": 8}
QAT = {**MODEL, "qat": "int8"}


def config(model_options, **changes):
    settings = dict(task="har2", model="sirnn", model_options=model_options, epochs=1,
                    batch_size=512, lr=0.02, early_stopping_patience=0, seed=4)
    settings.update(changes)
    return TrainConfig(**settings)


def run(cfg, out, data_dir):
    train(cfg, out, data_dir=data_dir, verbose=0)
    return out


def model_of(path):
    return keras.saving.load_model(path)


def split_weights(model):
    """(the weights other than the QAT ranges, {cell name: ranges})."""
    plain = [keras.ops.convert_to_numpy(w) for w in model.weights
             if not w.path.endswith("qat_ranges")]
    return plain, {c.name: c.quant_points.as_dict() for c in qat.qat_cells(model)}


def tracking_sample(cfg, data_dir):
    """The sequences the trainer tracks ranges on, normalised as the trainer normalises them."""
    data = get_task(cfg.task, **cfg.task_options).load(data_dir, seed=cfg.seed)
    x_train = data.normalization.apply(data.train.x).astype("float32")
    return qat.tracking_sample(x_train, cfg.seed)


@pytest.fixture(scope="module")
def har(shared_data):
    return shared_data / "har"


@pytest.fixture(scope="module")
def float_run(trained_run, har):
    """The float run (trained once for this module and the experiments' fold-int8 and
    qat-points tests: the root conftest's `trained_run`); read, never written."""
    return trained_run(config(MODEL), har)


def assert_warm_started(out, source, cfg, har, lines):
    model = model_of(out / "model.keras")
    (ranges,) = split_weights(model)[1].values()
    plain, _ = split_weights(model)
    want, _ = split_weights(model_of(source / "model.keras"))
    assert len(plain) == len(want)
    for a, b in zip(plain, want):  # lr 1e-12: the trained weights, unchanged
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)
    # Ranges from the data: the input point's is the tracking sample's percentiles (whatever
    # the EMA, the input does not depend on the ranges), with 0 inside.
    x = tracking_sample(cfg, har)
    lo, hi = np.percentile(x, 100 - qat.DEFAULT_PERCENTILE), np.percentile(x, qat.DEFAULT_PERCENTILE)
    assert ranges["x"] == pytest.approx((min(lo, 0.0), max(hi, 0.0)), rel=1e-5)
    assert ranges["h"] == (0.0, 1.0)
    for name, (lo, hi) in ranges.items():
        assert lo <= 0.0 <= hi and (lo, hi) != (-1.0, 1.0), name  # tracked, not the initial
    assert any(line.startswith("qat: ranges of 1 cell(s) set from 128 training sequences")
               for line in lines), lines


@pytest.mark.slow
def test_init_from_a_float_run_starts_a_qat_fine_tune(float_run, tmp_path, har, log_lines):
    cfg = config(QAT, lr=1e-12, init_from=str(float_run))
    with log_lines() as lines:
        out = run(cfg, tmp_path / "qat", har)
    assert f"initialised from {float_run}" in lines
    assert_warm_started(out, float_run, cfg, har, lines)

    # And a QAT run into a QAT model: its weights (ranges then set from the data again).
    cfg = config(QAT, lr=1e-12, init_from=str(out))
    with log_lines() as lines:
        again = run(cfg, tmp_path / "qat-again", har)
    assert_warm_started(again, out, cfg, har, lines)


class Killed(BaseException):
    """Stands for SIGKILL (not an Exception: no handler in the code under test catches it)."""


@pytest.mark.slow
def test_resumed_qat_run_continues_from_the_checkpoints_ranges(tmp_path, har, monkeypatch,
                                                               log_lines):
    """Killed after epoch 1's checkpoint, then the same command: epoch 2 starts from the
    checkpoint's ranges, updated once by the EMA (momentum 0.5) from the checkpoint's weights,
    and never reset from the data as a fresh run's are."""
    cfg = config(QAT, epochs=2)

    def kill_after_first_checkpoint(label):
        if label == "checkpoint epoch-0001: committed":
            raise Killed(label)

    out = tmp_path / "resumed"
    monkeypatch.setattr(storage, "crash_point", kill_after_first_checkpoint)
    with pytest.raises(Killed):
        run(cfg, out, har)
    monkeypatch.undo()
    checkpoint = model_of(out / "checkpoints" / "epoch-0001" / "model.keras")
    (saved,) = split_weights(checkpoint)[1].values()
    x = tracking_sample(cfg, har)
    (expected,) = qat.track_ranges(checkpoint, x, momentum=0.5).values()  # the oracle

    calls = []
    real = qat.track_ranges

    def spy(model, x, momentum=0.0, percentile=qat.DEFAULT_PERCENTILE):
        calls.append((momentum, qat.qat_cells(model)[0].quant_points.as_dict()))
        return real(model, x, momentum, percentile)

    monkeypatch.setattr(qat, "track_ranges", spy)
    with log_lines() as lines:
        run(cfg, out, har)
    assert any(line.startswith(f"resuming {out} after epoch 1/2") for line in lines), lines
    assert [m for m, _ in calls] == [0.5]
    assert calls[0][1] == saved
    (final,) = split_weights(model_of(out / "model.keras"))[1].values()
    assert final.keys() == expected.keys()
    for name in final:
        assert final[name] == pytest.approx(expected[name], rel=1e-5, abs=1e-7), name
    assert final != saved
