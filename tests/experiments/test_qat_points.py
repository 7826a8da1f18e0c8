"""`zoo bench qat-points`: a trained float run's QAT twin with one point rounded at a time, on the
run's validation split. Its oracles: the row with only the fixed grids is the float run's own
model, and the row with everything is the calibrated QAT twin as it runs unrestricted."""

import numpy as np
import pytest

from zoo.experiments import qat_points
from zoo.training.config import TrainConfig
from zoo.training.evaluate import load_run
from zoo.training.tasks import get_task
from zoo import qat


@pytest.fixture(scope="module")
def float_run(trained_run, shared_data):
    """One epoch of a small SiRNN (trained once for this module, tests/experiments/
    test_fold_int8.py and tests/training/test_qat_train.py: the root conftest's `trained_run`)."""
    cfg = TrainConfig(task="har2", model="sirnn", epochs=1, batch_size=512, lr=0.02, seed=4,
                      early_stopping_patience=0,
                      model_options={"units": 8, "rank": 4, "state_clip": 1.0,
                                     "state_quant_bits": 8})
    return trained_run(cfg, shared_data / "har")


@pytest.mark.slow
def test_rows_of_a_float_run_start_at_its_model_and_end_at_its_calibrated_twin(float_run):
    record, model, norm = load_run(float_run)
    config = record.config
    task = get_task(config.task, **config.settings.task_options)
    data = task.load(config.data_source, seed=config.seed)
    x_val, y_val = norm.apply(data.val.x).astype(np.float32), np.asarray(data.val.y)
    rows = qat_points.run_rows(float_run)

    twin = qat_points.qat_twin(float_run, config, task, model,
                               norm.apply(data.train.x).astype(np.float32))
    (cell,) = qat.qat_cells(twin)
    tracked = [n for n in cell.quant_points.names if n not in ("h", "v0")]
    assert [r.name for r in rows] == (["fixed", "weights"] + [f"only {n}" for n in tracked]
                                      + [f"all but {n}" for n in tracked]
                                      + ["all but weights", "all"])
    accuracy = {r.name: r.accuracy for r in rows}
    float_predictions = model.predict(x_val, verbose=0).argmax(-1)
    assert accuracy["fixed"] == pytest.approx(100 * np.mean(float_predictions == y_val))
    twin_predictions = twin.predict(x_val, verbose=0).argmax(-1)
    assert accuracy["all"] == pytest.approx(100 * np.mean(twin_predictions == y_val))
    assert "| only act0 |" in qat_points.table(rows)


def test_a_folder_that_is_not_a_finished_run_is_refused_by_name(tmp_path, capsys):
    assert qat_points.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert str(tmp_path) in err and len(err.splitlines()) == 1, err


@pytest.mark.slow
def test_percentile_calibrates_the_float_runs_twin_at_it(float_run):
    """``--percentile P``: the twin's ranges are each tensor's (100 - P)-th and P-th percentiles
    (the input's: those of the tracking sample), and the "all" row is that twin."""
    record, model, norm = load_run(float_run)
    config = record.config
    task = get_task(config.task, **config.settings.task_options)
    data = task.load(config.data_source, seed=config.seed)
    x_train = norm.apply(data.train.x).astype(np.float32)
    twin = qat_points.qat_twin(float_run, config, task, model, x_train, percentile=90.0)
    (cell,) = qat.qat_cells(twin)
    sample = qat.tracking_sample(x_train, config.seed)
    lo, hi = cell.quant_points.as_dict()["x"]
    assert (lo, hi) == pytest.approx((min(np.percentile(sample, 10.0), 0.0),
                                      np.percentile(sample, 90.0)), rel=1e-5)
    rows = {r.name: r.accuracy for r in qat_points.run_rows(float_run, percentile=90.0)}
    x_val, y_val = norm.apply(data.val.x).astype(np.float32), np.asarray(data.val.y)
    assert rows["all"] == pytest.approx(100 * np.mean(twin.predict(x_val, verbose=0).argmax(-1)
                                                      == y_val))
    with pytest.raises(ValueError, match="qat_percentile must be a number in"):
        qat_points.run_rows(float_run, percentile=100.5)
