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
