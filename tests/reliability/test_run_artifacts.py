"""Edited or damaged run files are one line naming the file and the field, and what is valid
(issue 23: items 6 and 11, and the misleading errors): config.yaml, a checkpoint's state.json,
model.keras (a checkpoint's, or --init-from's), best_weights.npz, normalization.json,
metrics.json. `zoo.training.artifacts` is the one reader; these tests go through `zoo eval` and
`zoo train` as a user would."""

import json

import numpy as np
import pytest
import yaml

from edge_rnn_zoo.cli import main
from zoo.core import storage
from zoo.training.trainer import train


class Killed(BaseException):
    """Stands for SIGKILL (not an Exception: nothing under test catches it)."""


def _error(capsys, *argv):
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def _edit_yaml(path, **changes):
    data = yaml.safe_load(path.read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    path.write_text(yaml.safe_dump(data))


# -------------------------------------------------------------------------------- config.yaml
def test_config_task_options_a_list(run, capsys):
    _edit_yaml(run / "config.yaml", task_options=[1, 2])
    err = _error(capsys, "eval", str(run))
    assert str(run / "config.yaml") in err and "task_options" in err and "mapping" in err


def test_config_without_model(run, capsys):
    _edit_yaml(run / "config.yaml", model=None)
    err = _error(capsys, "eval", str(run))
    assert str(run / "config.yaml") in err and "missing setting 'model'" in err


# ------------------------------------------------------------------------------- metrics.json
@pytest.mark.parametrize("text", ["[1, 2]", "garbage{"])
def test_eval_refuses_a_bad_metrics_json_like_export(run, capsys, text):
    (run / "metrics.json").write_text(text)
    err = _error(capsys, "eval", str(run))
    assert str(run / "metrics.json") in err and "metrics file" in err


@pytest.mark.parametrize("key, field", [("best_epoch", "best_epoch"),
                                        ("training_seconds", "training_seconds")])
def test_a_metrics_json_without_a_figure_a_reader_needs_is_one_line_naming_it(run, key, field):
    """A foreign or damaged metrics.json (no best_epoch, say) still reads (a stand-in run's
    ``{}`` does); the reader that needs the figure names the file and the key, not a TypeError
    deep in the command (the sweep's summary and a shipped tag's seed)."""
    from zoo.experiments.trials import summarise
    from zoo.export.ship import _seed_summary
    from zoo.training.artifacts import ArtifactError
    from zoo.training.rundir import RunDirectory

    path = run / "metrics.json"
    data = json.loads(path.read_text())
    assert isinstance(data.pop(key), (int, float))
    path.write_text(json.dumps(data))
    assert getattr(RunDirectory(run).record().metrics, field) is None
    readers = [lambda: summarise(run)] + ([lambda: _seed_summary(run)] if key == "best_epoch"
                                          else [])
    for reader in readers:
        with pytest.raises(ArtifactError) as err:
            reader()
        message = str(err.value)
        assert message.startswith(f"{path}: no {key} recorded; ") and "\n" not in message


def test_a_run_without_a_test_accuracy_is_named_where_one_is_needed(run):
    from zoo.export.ship import _seed_summary
    from zoo.training.artifacts import ArtifactError

    path = run / "metrics.json"
    data = json.loads(path.read_text())
    data["test"].pop("accuracy")
    path.write_text(json.dumps(data))
    with pytest.raises(ArtifactError, match=r"metrics.json: no test.accuracy recorded; a shipped "
                       r"tag's seed needs it \(a run that kept no test split has none\)"):
        _seed_summary(run)


def test_a_stand_in_runs_empty_metrics_json_reads_with_every_figure_none(tmp_path):
    from zoo.training.artifacts import ArtifactError
    from zoo.training.rundir import RunDirectory

    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"task": "har2", "model": "gru"}))
    (tmp_path / "metrics.json").write_text("{}")
    metrics = RunDirectory(tmp_path).record().metrics
    assert (metrics.best_epoch, metrics.test_accuracy, metrics.data.train) == (None, None, None)
    with pytest.raises(ArtifactError, match=r"metrics.json: no data.train recorded; a card"):
        metrics.required("data.train", "a card")


# ------------------------------------------------------------------------- normalization.json
@pytest.mark.parametrize("std0", [-0.5, 0.0, 1e-300, 1e-7, 1e39])
def test_normalization_std_not_positive(run, capsys, std0):
    """Refused as float32 sees it: 1e-300 passed ``std > 0`` in float64 and was 0 in float32 (then
    silently floored to 1, as 1e-7 was); 1e39 is infinite in float32."""
    path = run / "normalization.json"
    data = json.loads(path.read_text())
    data["std"][0] = std0
    path.write_text(json.dumps(data))
    err = _error(capsys, "eval", str(run))
    assert str(path) in err and f"std[0] is {std0:g}" in err and "std > 0" in err


def test_normalization_mean_beyond_float32(run, capsys):
    path = run / "normalization.json"
    data = json.loads(path.read_text())
    data["mean"][2] = 1e39
    path.write_text(json.dumps(data))
    err = _error(capsys, "eval", str(run))
    assert str(path) in err and "mean[2] is 1e+39" in err and "float32" in err


def test_normalization_with_other_features(run, capsys):
    path = run / "normalization.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({"mean": data["mean"][:8], "std": data["std"][:8]}))
    err = _error(capsys, "eval", str(run))
    assert str(path) in err and "8 features, but the model takes 9" in err


# ---------------------------------------------------------------- an unfinished run, resumed
@pytest.fixture
def unfinished(tiny_config, tmp_path, monkeypatch):
    """A run killed right after committing epoch 1 of 2, and its checkpoint folder."""
    config = tiny_config()
    out = tmp_path / "run"

    def point(label):
        if label == "checkpoint epoch-0001: committed":
            raise Killed(label)

    monkeypatch.setattr(storage, "crash_point", point)
    with pytest.raises(Killed):
        train(config, out, verbose=0)
    monkeypatch.setattr(storage, "crash_point", lambda label: None)
    (checkpoint,) = (out / "checkpoints").glob("epoch-*")
    return config, out, checkpoint


def _resume_error(config, out):
    with pytest.raises(ValueError) as err:
        train(config, out, verbose=0)
    message = str(err.value)
    assert "\n" not in message, message
    return message


def _early_stopping(**fields):
    return lambda state: state["callbacks"]["early_stopping"].update(fields)


def _drop_early_stopping(field):
    return lambda state: state["callbacks"]["early_stopping"].pop(field)


def _history_value(value):
    return lambda state: state["history"][0].update(loss=value)


@pytest.mark.parametrize("change, field", [
    ({"epochs_done": "x"}, "epochs_done"), ({"history": None}, "history"),
    ({"stopped": "yes"}, "stopped"),
    (_early_stopping(wait="x"), "wait"), (_early_stopping(wait=-1), "wait"),
    (_early_stopping(best="low"), "best"), (_early_stopping(best_epoch=1.5), "best_epoch"),
    (_early_stopping(stopped_epoch=None), "stopped_epoch"),
    (_drop_early_stopping("wait"), "wait"), (_history_value("abc"), "loss"),
    (_history_value([1]), "loss")])
def test_state_json_edited(unfinished, change, field):
    """Each field a resume reads, damaged: one line naming the file and the field (the callbacks'
    fields and the history's values were a KeyError or TypeError traceback)."""
    config, out, checkpoint = unfinished
    path = checkpoint / "state.json"
    state = json.loads(path.read_text())
    if callable(change):
        change(state)
    for key, value in (change.items() if isinstance(change, dict) else ()):
        if value is None:
            state.pop(key)
        else:
            state[key] = value
    path.write_text(json.dumps(state))
    message = _resume_error(config, out)
    assert str(path) in message and field in message


def test_truncated_checkpoint_model_says_damaged_and_not_resumable(unfinished):
    config, out, checkpoint = unfinished
    path = checkpoint / "model.keras"
    path.write_bytes(path.read_bytes()[:200])
    message = _resume_error(config, out)
    assert str(path) in message and "damaged" in message and "cannot be resumed" in message
    assert "not found" not in message.lower()


def test_pickled_best_weights_are_refused(unfinished):
    config, out, checkpoint = unfinished
    path = checkpoint / "best_weights.npz"
    assert path.is_file()
    np.savez(path, np.array([{"a": 1}], dtype=object))  # arr_0: an object array, a pickle
    message = _resume_error(config, out)
    assert str(path) in message and "pickle" in message


def test_truncated_init_from_model_says_damaged(run, tmp_path, capsys, shared_data):
    path = run / "model.keras"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    err = _error(capsys, "train", "--task", "har2", "--model", "lstm", "--units", "3",
                 "--epochs", "1", "--recipe", "none", "--data-dir", str(shared_data / "har"),
                 "--init-from", str(run), "--out", str(tmp_path / "warm"))
    assert str(path) in err and "damaged" in err and "not found" not in err.lower()
    assert not (tmp_path / "warm").exists()
