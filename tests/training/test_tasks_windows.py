"""The ``windows`` task on a user's own data: an ``.npz`` written from the shared UCI HAR subset
(checked against the ``har6`` task, which reads the official files), CSV recordings (checked
against a NumPy loop that cuts the windows), and every bad input refused in one line that names
the file and what is valid, with the user's files unchanged."""

import hashlib
import re

import numpy as np
import pytest

from zoo.training.data.errors import DataError
from zoo.training.data.windows import CsvOptions, cut_windows, read_windows
from zoo.training.tasks import get_task
from zoo.training.tasks.windows import label_names, split_windows

ACTIVITIES = ["WALKING", "WALKING_UPSTAIRS", "WALKING_DOWNSTAIRS", "SITTING", "STANDING", "LAYING"]


@pytest.fixture(scope="module")
def har_npz(shared_data, tmp_path_factory):
    """The subset's training windows (6 subjects) as a user would save them: string labels,
    subject groups."""
    from zoo.training.tasks.har import load_har_arrays

    arrays, _, _ = load_har_arrays(shared_data / "har")
    path = tmp_path_factory.mktemp("npz") / "har.npz"
    np.savez(path, X=arrays["x_train"], y=np.array(ACTIVITIES)[arrays["y_train"] - 1],
             groups=arrays["subject_train"])
    return path


def test_an_npz_splits_by_subject_as_har6_does(har_npz, shared_data):
    for options in ({"val_fold": [1, 3]}, {"val_fraction": 0.4, "split_seed": 3}):
        ours = get_task("windows", **options).load(har_npz)
        theirs = get_task("har6", **options).load(shared_data / "har")
        assert ours.info["val_groups"] == theirs.info["val_subjects"]
        assert ours.info["train_groups"] == theirs.info["train_subjects"]
        np.testing.assert_array_equal(ours.val.x, theirs.val.x)
        np.testing.assert_array_equal(ours.train.x, theirs.train.x)
        # Class names sorted (as Keras sorts class folders), ids follow them.
        names = sorted(ACTIVITIES)
        np.testing.assert_array_equal(np.array(names)[ours.train.y],
                                      np.array(ACTIVITIES)[theirs.train.y])
        flat = ours.train.x.reshape(-1, 9).astype(np.float64)  # training split only
        np.testing.assert_allclose(ours.normalization.mean, flat.mean(0), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(ours.normalization.std, flat.std(0), rtol=1e-5)
        # test_fraction 0: the run's test split is the validation split (the export checks its
        # int8 model there); the user's own test file is scored by zoo eval.
        assert ours.test is ours.val


def test_options_from_data_give_the_classes_and_shape_and_the_run_must_match(har_npz, tmp_path):
    task = get_task("windows")
    assert task.describe()["input_shape"] == (None, None)
    assert task.options_from_data(har_npz) == {"class_names": sorted(ACTIVITIES),
                                          "window_shape": [128, 9],
                                          "train_data": str(har_npz.resolve())}
    run = get_task("windows", **task.options_from_data(har_npz), frames_per_step=4,
                   sensors=[[[0, 1, 2], [3, 4, 5], [6, 7, 8]]])
    assert run.input_shape == (32, 36) and run.num_classes == 6
    assert run.sensors[0][:4] == ((0, 1, 2), (3, 4, 5), (6, 7, 8), (9, 10, 11))
    with np.load(har_npz) as f:
        x, y = f["X"][:40], f["y"][:40]
    test = run.evaluation_split(_save(tmp_path / "t.npz", X=x, y=y))
    np.testing.assert_array_equal(test.x, x.reshape(40, 32, 36))
    np.testing.assert_array_equal(np.array(sorted(ACTIVITIES))[test.y], y)
    with pytest.raises(DataError, match=r"class 'JOGGING' \(window 1\) is not one of the run's "):
        run.evaluation_split(_save(tmp_path / "u.npz", X=x[:3], y=["SITTING", "JOGGING", "X"]))
    with pytest.raises(DataError, match=r"t2.npz: windows of 64 steps x 9 channels; this task "
                                        r"\(the run\) takes 128 x 9"):
        run.evaluation_split(_save(tmp_path / "t2.npz", X=x[:, :64], y=y))


def _save(path, **arrays):
    np.savez(path, **arrays)
    return path


def test_integer_labels_sort_by_value_and_no_groups_split_stratified(tmp_path):
    rng = np.random.default_rng(0)
    y = np.repeat([10, 2, 1], [30, 20, 10])
    path = _save(tmp_path / "w.npz", X=rng.normal(size=(60, 8, 2)), y=y)
    data = get_task("windows", val_fraction=0.2, test_fraction=0.1).load(path)
    assert data.info["class_names"] == ["1", "2", "10"] == label_names(y)
    # Per class (10, 20, 30 windows): round(0.1 n) to test, round(0.2 of the rest) to validation.
    assert np.bincount(data.test.y).tolist() == [1, 2, 3]
    assert np.bincount(data.val.y).tolist() == [2, 4, 5]
    assert np.bincount(data.train.y).tolist() == [7, 14, 22]
    folds = [split_windows(np.repeat([0, 1], [7, 5]), None, test_fraction=0, val_fraction=0,
                           val_fold=[k, 3], seed=1).indices[1] for k in range(3)]
    assert sorted(np.concatenate(folds).tolist()) == list(range(12))  # each window once
    assert [len(f) for f in folds] == [3 + 2, 2 + 2, 2 + 1]  # every 3rd of each class


def _write_csv(path, rows, header=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ([",".join(header)] if header else []) + [",".join(map(repr, r)) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def csv_folder(tmp_path):
    """Two classes, three subjects, recordings of uneven lengths with a header row."""
    rng = np.random.default_rng(1)
    root = tmp_path / "recordings"
    signals = {}
    for cls in ("walk", "sit"):
        for subject in (1, 2, 3):
            for take in range(2):
                signal = rng.normal(size=(40 + 7 * subject + take, 3)).round(6)
                rel = f"{cls}/s{subject}_take{take}.csv"
                _write_csv(root / rel, signal.tolist(), header=["t", "ax", "ay"])
                signals[rel] = signal
    return root, signals


def _oracle(signal, window, stride):
    """The windows a plain loop cuts: starts 0, stride, ... while a whole window fits."""
    return [signal[s:s + window] for s in range(0, len(signal) - window + 1, stride)]


def test_csv_recordings_are_cut_as_a_numpy_loop_cuts_them(csv_folder):
    root, signals = csv_folder
    task = get_task("windows", window=16, stride=5, columns=["ay", "ax"],
                    group_pattern=r"s(\d+)_", val_fold=[0, 3])
    data = task.load(root)
    windows = read_windows(root, task.csv_options())
    assert windows.channels == ["ay", "ax"] and task.class_names == ["sit", "walk"]
    expected = [w[:, [2, 1]] for rel in sorted(signals, key=lambda r: (r.split("/")[0], r))
                for w in _oracle(signals[rel], 16, 5)]
    np.testing.assert_allclose(windows.x, np.stack(expected), rtol=1e-6)
    assert data.info["val_groups"] == ["1"] and data.info["train_groups"] == ["2", "3"]
    assert len(data.val) + len(data.train) == len(expected)
    # Seconds at a sampling rate are whole samples: 0.32 s and 0.1 s at 50 Hz = 16 and 5.
    seconds = get_task("windows", window_seconds=0.32, stride_seconds=0.1, sampling_rate=50)
    assert (seconds.csv_options().window, seconds.csv_options().stride) == (16, 5)
    default = get_task("windows", window=16).load(root)  # stride 8, each recording a group
    assert len(default.info["train_groups"]) + len(default.info["val_groups"]) == 12


def test_cut_windows_matches_keras_timeseries_dataset_from_array():
    keras = pytest.importorskip("keras")
    signal = np.arange(50 * 2, dtype=np.float32).reshape(50, 2)
    for window, stride in ((16, 5), (10, 10), (50, 1), (3, 7)):
        ours = cut_windows(signal, window, stride)
        theirs = np.concatenate([b.numpy() if hasattr(b, "numpy") else np.asarray(b) for b in
                                 keras.utils.timeseries_dataset_from_array(
                                     signal, None, window, sequence_stride=stride,
                                     batch_size=1000)])
        np.testing.assert_array_equal(ours, theirs)


# ----------------------------------------------------------------------------- bad input


def _tree_digest(root) -> str:
    digest = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        digest.update(str(p.relative_to(root)).encode())
        if p.is_file():
            digest.update(p.read_bytes())
    return digest.hexdigest()


BAD_NPZ = [
    ({"y": [0, 1]}, r"bad.npz: no array 'X' \(it holds y\); expected X \(N, T, C\)"),
    ({"X": np.zeros((2, 4, 1))}, r"bad.npz: no array 'y' \(it holds X\)"),
    ({"X": np.zeros((2, 4)), "y": [0, 1]}, r"bad.npz: X has shape \(2, 4\); expected 3-D .*X\[\.\.\., None\]"),
    ({"X": np.zeros((3, 4, 1)), "y": [0, 1]}, r"bad.npz: X has 3 windows but y has 2 labels"),
    ({"X": np.zeros((2, 4, 1)), "y": [0, 1], "groups": [1]}, r"X has 2 windows but groups has 1"),
    ({"X": np.where(np.arange(24).reshape(3, 4, 2) == 13, np.nan, 1.0), "y": [0, 1, 1]},
     r"bad.npz: X\[1, 2, 1\] \(window 1, step 2, channel 1\) is nan \(1 such values"),
    ({"X": np.full((2, 4, 1), np.inf), "y": [0, 1]}, r"X\[0, 0, 0\] .* is inf \(8 such"),
    ({"X": np.zeros((2, 4, 1)), "y": [0.5, 1]}, r"y\[0\] is 0.5; expected integer or string"),
    ({"X": np.zeros((2, 4, 1)), "y": np.eye(2)}, r"y has shape \(2, 2\).*y.argmax\(axis=1\)"),
    ({"X": np.zeros((2, 4, 1)), "y": np.array([{}, {}], dtype=object)},
     r"array 'y' cannot be read without unpickling"),
    ({"X": np.zeros((3, 4, 1)), "y": ["a", "b", "b"]},
     r"bad.npz: class 'a' has 1 window; every class needs at least two"),
    ({"X": np.zeros((3, 4, 1)), "y": ["a", "a", "a"]},
     r"bad.npz: every window has the label 'a'; a classifier needs windows of at least two"),
]


@pytest.mark.parametrize("arrays, message", BAD_NPZ)
def test_a_bad_npz_is_refused_in_one_line_naming_it(tmp_path, arrays, message):
    path = tmp_path / "bad.npz"
    np.savez(path, **{k: np.asarray(v) for k, v in arrays.items()})
    before = _tree_digest(tmp_path)
    with pytest.raises(DataError, match=message) as caught:
        get_task("windows").load(path)
    assert "\n" not in str(caught.value)
    assert _tree_digest(tmp_path) == before


def test_fewer_groups_than_folds_and_not_an_npz(tmp_path, har_npz):
    with pytest.raises(DataError, match=r"har.npz: option val_fold=\[0, 5\] asks for 5 folds "
                                        r"of 4 group\(s\) \[1, 3, 21, 25\]; at most 4"):
        get_task("windows", val_fold=[0, 5]).load(har_npz)
    text = tmp_path / "x.npz"
    text.write_text("not numpy")
    with pytest.raises(DataError, match=r"x.npz: text, not an .npz archive"):
        get_task("windows").load(text)
    with pytest.raises(FileNotFoundError, match=r"missing.npz: no such file or folder"):
        get_task("windows").load(tmp_path / "missing.npz")


def _csv_case(root, name):
    """A folder of two good recordings per class plus one bad thing: ``name``."""
    good = np.arange(60, dtype=float).reshape(20, 3)
    for cls in ("a", "b"):
        for i in range(2):
            _write_csv(root / cls / f"r{i}.csv", good.tolist())
    bad = root / "a" / "bad.csv"
    if name == "ragged":
        bad.write_text("1,2,3\n4,5,6\n7,8\n")
    elif name == "text":
        bad.write_text("1,2,3\n4,x5,6\n")
    elif name == "nan":
        bad.write_text("ax,ay,az\n1,2,3\n4,nan,6\n")
    elif name == "short":
        _write_csv(bad, good[:5].tolist())
    elif name == "gap":
        bad.write_text("1,2,3\n\n4,5,6\n")
    elif name == "empty class":
        (root / "c").mkdir()
    elif name == "empty folder":
        for p in sorted(root.rglob("*"), reverse=True):
            p.unlink() if p.is_file() else p.rmdir()
    elif name == "columns":
        bad.write_text("ax,ay,az,extra\n" + "1,2,3,4\n" * 20)
    return root


BAD_CSV = {
    "ragged": r"a/bad.csv: line 3: 2 values, expected 3 \(as line 1\)",
    "text": r"a/bad.csv: line 2, column 2: 'x5' is not a number",
    "nan": r"a/bad.csv: line 3, column 2: value 'nan' is not a finite float32",
    "short": r"a/bad.csv: 5 rows, shorter than one window of 16 samples \(option window\)",
    "gap": r"a/bad.csv: line 2 is empty, before more rows",
    "empty class": r"recordings/c: class folder 'c' holds no .csv recording",
    "empty folder": r"recordings: no class folder of CSV recordings found; expected "
                    r"DIR/<class>/<recording>.csv",
    "columns": r"a/r0.csv: columns \(3 without a header\) differ from .*a/bad.csv's \['ax', "
               r"'ay', 'az', 'extra'\]; every recording needs the same columns",
}


@pytest.mark.parametrize("case", sorted(BAD_CSV))
def test_a_bad_csv_folder_is_refused_in_one_line_naming_the_file(tmp_path, case):
    root = _csv_case(tmp_path / "recordings", case)
    before = _tree_digest(root)
    with pytest.raises(DataError, match=BAD_CSV[case]) as caught:
        get_task("windows", window=16).load(root)
    assert "\n" not in str(caught.value)
    assert _tree_digest(root) == before


@pytest.mark.parametrize("options, message", [
    ({"sensors": [[0, 1]]}, r"option sensors must be .auto. \(from the channel names\), a list "
                                r"of xyz triples"),
    ({"sensors": [[0, 1, 2], [2, 3, 4]]}, r"option sensors names a channel twice"),
    ({"window_seconds": 2.0}, r"window_seconds / stride_seconds need sampling_rate"),
    ({"group_pattern": "s(\\d+"}, r"option group_pattern must be a regular expression"),
    ({"val_fraction": 0.6, "test_fraction": 0.5}, r"leave nothing to train on"),
    ({"window_shape": [128, 9], "frames_per_step": 5}, r"option frames_per_step must be a whole "
                                                         r"divisor of the window's 128 samples"),
    ({"window_shape": [128, 6], "sensors": [[3, 4, 9]]}, r"names channel 9, but a window has 6"),
    ({"class_names": ["a"]}, r"option class_names must be a list of at least two"),
])
def test_bad_options_are_named(options, message):
    with pytest.raises(ValueError, match=message):
        get_task("windows", **options)


def test_a_class_without_training_windows_is_said(tmp_path, caplog):
    x = np.zeros((6, 4, 1)) + np.arange(6)[:, None, None]
    path = _save(tmp_path / "g.npz", X=x, y=["a", "a", "b", "b", "c", "c"],
                 groups=[1, 2, 1, 2, 3, 3])
    with caplog.at_level("WARNING"):
        data = get_task("windows", val_fold=[2, 3]).load(path)
    assert data.info["val_groups"] == [3]
    assert re.search(r"g.npz: the training split holds no window of class\(es\) \['c'\]",
                     caplog.text)


@pytest.mark.parametrize("model", ["sirnn", "gru", "lstm"])
def test_the_default_recipes_are_valid_settings(model):
    """``zoo train --task windows --model M`` with no --recipe applies windows-M.yaml."""
    import zoo
    from zoo.training.config import resolve

    config = resolve("windows", model, None, {})
    assert config.recipe.endswith(f"windows-{model}.yaml")
    zoo.registry.check_options(model, config.model_options)
    assert config.early_stopping_patience and config.monitor == "val_accuracy"
