"""Fixtures for the reliability tests (caches: the root conftest): a
tiny synthetic training configuration (seconds per run) shared by the run-directory tests."""

import pytest


@pytest.fixture(scope="session")
def tiny_config():
    return make_tiny_config


def make_tiny_config(**changes):
    """The adding task (regression, early stopping on val_loss) with a 3-unit LSTM, 2 epochs: every
    piece of resumable state (optimizer moments, early-stopping counters and best weights,
    history) is exercised in a few seconds."""
    from zoo.training.config import TrainConfig

    settings = dict(task="adding", model="lstm", model_options={"units": 3},
                    task_options={"timesteps": 4, "n_train": 32, "n_val": 16, "n_test": 16},
                    epochs=2, batch_size=16, lr=0.02, early_stopping_patience=2, seed=5)
    settings.update(changes)
    return TrainConfig(**settings)


@pytest.fixture(scope="session")
def finished_har_run(tmp_path_factory, shared_data):
    """A real (one-epoch, 3-unit LSTM) HAR-2 run directory, as `zoo train` leaves it."""
    from edge_rnn_zoo.cli import main

    out = tmp_path_factory.mktemp("runs") / "har2"
    assert main(["train", "--task", "har2", "--model", "lstm", "--units", "3", "--epochs", "1",
                 "--batch-size", "512", "--recipe", "none", "--data-dir",
                 str(shared_data / "har"), "--out", str(out)]) == 0
    return out


@pytest.fixture
def run(finished_har_run, tmp_path, shared_data, monkeypatch):
    """A copy of the finished run to damage, its data found through ZOO_DATA_DIR."""
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(finished_har_run, copy)
    monkeypatch.setenv("ZOO_DATA_DIR", str(shared_data / "har"))
    return copy


@pytest.fixture
def card_reads(monkeypatch):
    """Every export ``model_card.json`` parsed in the test, in order (each reader goes through
    `zoo.export.card_schema.load_card_json`)."""
    from zoo.export import card_schema

    reads = []
    real = card_schema.load_card_json

    def counted(path):
        reads.append(str(path))
        return real(path)

    monkeypatch.setattr(card_schema, "load_card_json", counted)
    return reads


def write_windows_npz(path, *, n=90, steps=6, channels=2, groups=6, seed=0, labels=None,
                      names=None):
    """A small learnable ``.npz`` of windows (``n`` windows of ``steps`` x ``channels``): class
    0 has a positive mean, class 1 a negative one; ``labels`` the text of the two classes
    (default ``["sit", "walk"]``), ``groups`` people (None: no groups), ``names`` the channels."""
    import numpy as np

    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    x = rng.normal(size=(n, steps, channels)).astype("float32") + (1.0 - 2.0 * y)[:, None, None]
    arrays = {"X": x, "y": np.asarray(labels or ["sit", "walk"])[y]}
    if groups:
        arrays["groups"] = np.arange(n) // (n // groups)
    if names is not None:
        arrays["channels"] = np.asarray(names)
    np.savez(path, **arrays)
    return path


@pytest.fixture(scope="session")
def windows_run(tmp_path_factory):
    """A finished ``windows`` run (a 2-unit LSTM, one epoch) on a 90-window ``.npz`` with string
    labels, six groups and named channels: ``(run folder, training .npz)``."""
    from edge_rnn_zoo.cli import main

    root = tmp_path_factory.mktemp("windows-run")
    data = write_windows_npz(root / "train.npz", names=["ax", "ay"])
    out = root / "run"
    assert main(["train", "--task", "windows", "--model", "lstm", "--units", "2", "--epochs",
                 "1", "--batch-size", "32", "--recipe", "none", "--data-dir", str(data),
                 "--out", str(out)]) == 0
    return out, data
