"""What ``zoo train`` checks of a user's data before and while it trains (issue 52): a data file
replaced between a kill and the resume is refused, a run with no test split says so in eval
and export instead of a Keras traceback, the log's training time is the epochs' time."""

import numpy as np
import pytest

from tests.reliability.conftest import write_windows_npz
from zoo.core import storage


class Killed(BaseException):
    """Stands for SIGKILL (no handler in the code under test catches it)."""


def _config(**changes):
    from zoo.training.config import TrainConfig

    settings = dict(task="windows", model="lstm", model_options={"units": 2}, task_options={},
                    epochs=2, batch_size=32, lr=0.02, seed=0)
    settings.update(changes)
    return TrainConfig(**settings)


def test_resume_after_the_data_file_changed_is_refused_naming_it(tmp_path, monkeypatch):
    from zoo.training.trainer import train

    data = write_windows_npz(tmp_path / "mine.npz")

    def kill_after_first_epoch(label):
        if label.startswith("checkpoint") and label.endswith(": committed"):
            raise Killed(label)

    monkeypatch.setattr(storage, "crash_point", kill_after_first_epoch)
    with pytest.raises(Killed):
        train(_config(), tmp_path / "run", data_dir=data, verbose=0)
    monkeypatch.setattr(storage, "crash_point", lambda label: None)
    write_windows_npz(data, seed=7)  # another recording under the same name
    with pytest.raises(ValueError, match=r"mine.npz changed since .*run trained its first 1 "
                                         r"epoch"):
        train(_config(), tmp_path / "run", data_dir=data, verbose=0)
    write_windows_npz(data)  # the same bytes again: the run resumes
    metrics = train(_config(), tmp_path / "run", data_dir=data, verbose=0)
    assert metrics["epochs_run"] == 2


def test_training_seconds_are_the_epochs_not_the_setup(tmp_path, monkeypatch):
    import time

    from zoo.training import trainer

    data = write_windows_npz(tmp_path / "mine.npz")
    real = trainer.augmenter

    def slow_setup(*args, **kwargs):  # setup between loading and the first epoch
        time.sleep(3)
        return real(*args, **kwargs)

    monkeypatch.setattr(trainer, "augmenter", slow_setup)
    metrics = trainer.train(_config(epochs=1), tmp_path / "run", data_dir=data, verbose=0)
    history = (tmp_path / "run" / "history.csv").read_text().splitlines()
    seconds = float(history[1].split(",")[history[0].split(",").index("seconds")])
    assert metrics["training_seconds"] == pytest.approx(seconds, abs=0.05)
    assert metrics["training_seconds"] < 3 + seconds


@pytest.fixture(scope="module")
def one_group_run(tmp_path_factory):
    from edge_rnn_zoo.cli import main

    root = tmp_path_factory.mktemp("one-group")
    data = write_windows_npz(root / "one.npz", groups=None)
    with np.load(data) as d:
        np.savez(data, X=d["X"], y=d["y"], groups=np.zeros(len(d["y"]), int))
    assert main(["train", "--task", "windows", "--model", "lstm", "--units", "2", "--epochs",
                 "1", "--recipe", "none", "--data-dir", str(data), "--out",
                 str(root / "run")]) == 0
    return root / "run"


def test_a_run_without_test_split_is_said_by_eval_and_export(one_group_run, capsys):
    from edge_rnn_zoo.cli import main

    capsys.readouterr()
    assert main(["eval", str(one_group_run)]) == 2
    err = capsys.readouterr().err
    assert "held out no test windows" in err and "--data-dir" in err and "Traceback" not in err
    assert main(["export", str(one_group_run), "--form", "step", "--quantize", "int8",
                 "--no-micro"]) == 2
    err = capsys.readouterr().err
    assert "no test split" in err and "UnboundLocalError" not in err
