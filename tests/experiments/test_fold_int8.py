"""`zoo bench fold-int8`: the integer step model on a CV run's validation split, one results file
per run, and the table rebuilt from those files (int8, or TFLite's 16x8 mode in its own folder)."""

import json
import shutil

import numpy as np
import pytest

from zoo.experiments import fold_int8
from zoo.training.config import TrainConfig
from zoo.training.evaluate import load_run
from zoo.training.tasks import get_task


def write(results, variant, fold, **figures):
    path = results / "har2" / "sirnn" / variant / f"fold{fold}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"windows": 100, "agreement": 99.0, "qat": True, **figures}))


def test_the_table_names_the_quantization_its_files_hold(tmp_path):
    write(tmp_path, "a", 0, float=95.0, int16x8=94.0, drop=1.0)
    write(tmp_path, "a", 1, float=97.0, int16x8=97.2, drop=-0.2)
    table = fold_int8.table(tmp_path)
    assert "| int16x8 val % |" in table and "Keras-int16x8 agreement" in table
    row = "| har2 | sirnn | a | 2 | 96.00 ± 1.41 | 95.60 ± 2.26 | +0.40 / +1.00 | 1 of 2 |"
    assert row in table
    write(tmp_path, "b", 0, float=95.0, int8=95.0, drop=0.0)
    with pytest.raises(ValueError, match=r"mixes \['int16x8', 'int8'\]"):
        fold_int8.table(tmp_path)


def test_an_unknown_quantization_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        fold_int8.main(["--results", str(tmp_path), "--quantize", "int4"])
    assert "invalid choice: 'int4'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="quantize must be one of"):
        fold_int8.fold_int8(tmp_path, quantize="int4")


@pytest.mark.slow
def test_a_run_scored_in_16x8_against_its_keras_model(tmp_path, shared_data, trained_run):
    cfg = TrainConfig(task="har2", model="sirnn", epochs=1, batch_size=512, lr=0.02, seed=4,
                      early_stopping_patience=0,
                      model_options={"units": 8, "rank": 4, "state_clip": 1.0,
                                     "state_quant_bits": 8})
    # The float run tests/experiments/test_qat_points.py and tests/training/test_qat_train.py
    # read too (one training); copied, since fold_int8 writes its export into the run.
    run = tmp_path / "run"
    shutil.copytree(trained_run(cfg, shared_data / "har"), run)
    result = fold_int8.fold_int8(run, quantize="int16x8")
    assert (run / "export-step-int16x8" / "stream.tflite").is_file()
    record, model, norm = load_run(run)
    data = get_task("har2", **record.config.settings.task_options).load(shared_data / "har",
                                                                         seed=4)
    predicted = model.predict(norm.apply(data.val.x), verbose=0).argmax(-1)
    assert result["windows"] == len(data.val.y)
    assert result["float"] == pytest.approx(100 * np.mean(predicted == np.asarray(data.val.y)))
    assert result["drop"] == pytest.approx(result["float"] - result["int16x8"])
    assert "int8" not in result and 50.0 <= result["agreement"] <= 100.0
