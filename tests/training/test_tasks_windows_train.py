"""The ``windows`` task end to end on a user's ``.npz`` (windows of the shared UCI HAR subset):
``zoo train`` with har2's levers (QAT, frames per step, rotation over declared sensors) records
the data's classes and window shape in the run, ``zoo eval --data-dir TEST.npz`` scores the
test file whole (checked against the model run by hand), and a shipped model is fine-tuned on
the user's classes with a fresh head (``--init-from sirnn.har2``)."""

import json

import numpy as np
import pytest
import yaml

from zoo.training.config import TrainConfig
from zoo.training.evaluate import evaluate_run, load_run
from zoo.training.tasks.har import ACTIVITIES, load_har_arrays
from zoo.training.trainer import train

SENSORS = [[[0, 1, 2], [3, 4, 5], [6, 7, 8]]]  # one phone: its three xyz triples turn together


@pytest.fixture(scope="module")
def user_files(shared_data, tmp_path_factory):
    """300 training windows of the subset's 4 training subjects and 120 test windows of its
    test subjects, as a user's .npz files (activity names, subject groups)."""
    arrays, _, _ = load_har_arrays(shared_data / "har")
    names = np.array(ACTIVITIES)
    rng = np.random.default_rng(0)
    folder = tmp_path_factory.mktemp("user")
    files = {}
    for split, n in (("train", 300), ("test", 120)):
        pick = np.sort(rng.permutation(len(arrays[f"y_{split}"]))[:n])
        files[split] = folder / f"{split}.npz"
        np.savez(files[split], X=arrays[f"x_{split}"][pick],
                 y=names[arrays[f"y_{split}"][pick] - 1], groups=arrays[f"subject_{split}"][pick])
    return files


@pytest.fixture(scope="module")
def run(user_files, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "windows"
    config = TrainConfig(task="windows", model="sirnn", epochs=2, batch_size=64, lr=0.01,
                         model_options={"units": 16, "rank": 4, "state_clip": 1.0,
                                        "state_quant_bits": 8, "qat": "int8"},
                         task_options={"frames_per_step": 4, "sensors": SENSORS,
                                       "val_fold": [0, 4]},
                         augment={"rotation": 30.0})
    train(config, out, data_dir=user_files["train"])
    return out


@pytest.mark.slow
def test_the_run_records_the_data_and_eval_scores_a_test_file_whole(run, user_files):
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["task_options"]["class_names"] == sorted(ACTIVITIES)
    assert saved["task_options"]["window_shape"] == [128, 9]
    assert saved["task_options_resolved"]["val_fold"] == [0, 4]
    report = evaluate_run(run, user_files["test"])
    # The same score by hand: the test windows as 32 steps of 4 frames, normalised with the
    # run's statistics (per channel, tiled over the frames), through the model.
    _, model, _ = load_run(run)
    stats = json.loads((run / "normalization.json").read_text())
    with np.load(user_files["test"]) as f:
        x, labels = f["X"], f["y"]
    x = (x.reshape(120, 32, 36) - np.array(stats["mean"])) / np.array(stats["std"])
    assert np.array(stats["mean"][:9]) == pytest.approx(stats["mean"][9:18])  # tiled
    predicted = model.predict(x.astype(np.float32), verbose=0).argmax(-1)
    expected = np.mean(np.array(sorted(ACTIVITIES))[predicted] == labels)
    assert report["test_sequences"] == 120
    assert report["accuracy"] == pytest.approx(expected)
    assert report["class_names"] == sorted(ACTIVITIES)


@pytest.mark.slow
def test_eval_refuses_a_test_file_with_a_class_the_run_does_not_know(run, user_files, tmp_path):
    with np.load(user_files["test"]) as f:
        x, y = f["X"][:4], f["y"][:4].copy()
    y[2] = "CYCLING"
    np.savez(tmp_path / "other.npz", X=x, y=y)
    with pytest.raises(ValueError, match=r"other.npz: class 'CYCLING' \(window 2\) is not one "
                                         r"of the run's classes \['LAYING', 'SITTING'"):
        evaluate_run(run, tmp_path / "other.npz")


# sirnn.har2's model options but its QAT (its ranges are left behind: a float fine-tune, which
# compiles in a fraction of a QAT model's time).
SHIPPED = {"units": 80, "rank": 16, "state_clip": 1.0, "state_quant_bits": 8}


@pytest.mark.slow
def test_a_shipped_model_is_fine_tuned_on_the_users_classes_with_a_fresh_head(user_files,
                                                                              tmp_path):
    import zoo

    config = TrainConfig(task="windows", model="sirnn", epochs=1, batch_size=100, lr=1e-12,
                         early_stopping_patience=0, model_options=SHIPPED,
                         task_options={"frames_per_step": 4}, init_from="sirnn.har2")
    train(config, tmp_path / "tuned", data_dir=user_files["train"])
    _, tuned, _ = load_run(tmp_path / "tuned")
    shipped = zoo.create_model("sirnn", pretrained="har2").layers[-1]  # after its normalisation
    assert tuned.layers[-1].units == 6 and shipped.layers[-1].units == 2
    theirs = [w for w in shipped.layers[1].weights if not w.path.endswith("qat_ranges")]
    assert len(tuned.layers[1].weights) == len(theirs) >= 4  # W, V, H, bias, eta...
    for ours, shipped_weight in zip(tuned.layers[1].weights, theirs):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(shipped_weight), rtol=1e-6)
    # Other features per step (one sample a step: 9) cannot take its 36-feature weights.
    narrow = TrainConfig(task="windows", model="sirnn", epochs=1, model_options=SHIPPED,
                         init_from="sirnn.har2")
    with pytest.raises(ValueError, match=r"init_from sirnn.har2 takes windows of 32 x 36 "
                                         r"\(steps x features\), this task's are 128 x 9"):
        train(narrow, tmp_path / "narrow", data_dir=user_files["train"])
    assert not (tmp_path / "narrow").exists()
