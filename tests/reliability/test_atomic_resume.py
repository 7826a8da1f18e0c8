"""A kill at every write boundary of a run, then the same command: the resumed run ends with
exactly the uninterrupted run's metrics, history and weights.

The kill is injected, not timed: `zoo.core.storage.crash_point` marks every boundary (each file
written but not renamed, renamed; each epoch's checkpoint written, committed, pruned; the final
model, history and metrics; the swap of an --overwrite) and the test replaces it by a function
that raises at the n-th one. A raised exception unwinds ``finally`` blocks that a SIGKILL would
not run; the code relies on none for its on-disk state (only the lock is released, as the
kernel releases it for a killed process). One process, one thread pool, the same seeds: the
resumed run is compared to the reference bit for bit (checked: no float noise here).
"""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from zoo.core import storage
from zoo.training.trainer import train


class Killed(BaseException):
    """Stands for SIGKILL: not an Exception, so no handler in the code under test catches it."""


def _run(config, out, monkeypatch, kill_at=None, **kwargs):
    labels = []

    def point(label):
        labels.append(label)
        if kill_at is not None and len(labels) == kill_at + 1:
            raise Killed(label)

    monkeypatch.setattr(storage, "crash_point", point)
    return train(config, out, verbose=0, **kwargs), labels


def _outcome(out):
    metrics = json.loads((out / "metrics.json").read_text())
    weights = keras.saving.load_model(out / "model.keras").get_weights()
    return metrics, (out / "history.csv").read_text(), weights


def _assert_same_run(got, want):
    (m_got, h_got, w_got), (m_want, h_want, w_want) = got, want
    assert m_got["test"] == m_want["test"]
    assert m_got["epochs_run"] == m_want["epochs_run"]
    assert m_got["best_epoch"] == m_want["best_epoch"]
    strip = lambda text: [line.rsplit(",", 1)[0] for line in text.splitlines()]  # no seconds
    assert strip(h_got) == strip(h_want)
    for a, b in zip(w_got, w_want):
        np.testing.assert_array_equal(a, b)


@pytest.fixture(scope="module", autouse=True)
def eager():
    """Tracing a tf.function costs seconds per new model and these tests build ~40; eager
    execution runs the same ops (the reference is eager too)."""
    tf.config.run_functions_eagerly(True)
    yield
    tf.config.run_functions_eagerly(False)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, tiny_config):
    out = tmp_path_factory.mktemp("reference") / "run"
    with pytest.MonkeyPatch.context() as mp:
        _, labels = _run(tiny_config(), out, mp)
    return _outcome(out), labels


def distinct_states(labels):
    """The boundaries that leave distinct on-disk states. "X: renamed" leaves what the next
    boundary "Y: written, not renamed" leaves minus Y's temporary file, so the latter (a
    superset: the stale temporary must be ignored too) stands for both; likewise "older ones
    removed" is the state of the next "history.csv: written" minus its temporary."""
    return [(n, label) for n, label in enumerate(labels)
            if not label.endswith((": renamed", "older ones removed"))]


@pytest.mark.slow
def test_kill_at_every_write_boundary_then_resume_gives_the_same_run(reference, tmp_path,
                                                                     monkeypatch, tiny_config):
    want, labels = reference
    points = distinct_states(labels)
    assert [label for _, label in points] == [
        ".zoo-run: written, not renamed",  # the marker, in the directory not yet in place
        "staging: marked, not renamed",  # .run.making-PID, then renamed .run.creating
        "run directory created", "config.yaml: written, not renamed",
        "normalization.json: written, not renamed",
        "checkpoint epoch-0001: written, not committed", "checkpoint epoch-0001: committed",
        "history.csv: written, not renamed",
        "checkpoint epoch-0002: written, not committed", "checkpoint epoch-0002: committed",
        "history.csv: written, not renamed",
        "model.keras: written, not renamed", "history.csv: written, not renamed",
        "metrics.json: written, not renamed", "checkpoints removed"]
    for n, label in points:
        out = tmp_path / f"kill-{n}"
        with pytest.raises(Killed):
            _run(tiny_config(), out, monkeypatch, kill_at=n)
        finished = (out / "metrics.json").exists()
        assert finished == (label == "checkpoints removed"), label
        if not finished:
            _run(tiny_config(), out, monkeypatch)
        _assert_same_run(_outcome(out), want)
        assert not (out / "checkpoints").exists(), label
        assert not [p.name for p in out.rglob(".*tmp*")], label


@pytest.mark.slow
def test_kill_during_overwrite_keeps_the_old_run_or_the_new_one(reference, tmp_path,
                                                                 monkeypatch, tiny_config):
    """--overwrite of a finished run killed mid-training and at both steps of the swap: the old
    run is intact until the swap; the same command again leaves the new run and no staging
    directory behind (a kill between the swap's two renames is repaired by the next command)."""
    want, _ = reference
    out = tmp_path / "run"
    _run(tiny_config(seed=6), out, monkeypatch)
    _, labels = _run(tiny_config(), out, monkeypatch, overwrite=True)
    for label in ("checkpoint epoch-0001: committed", "swap tag: written, not renamed",
                  "swap tag: renamed", "swap: old directory moved aside",
                  "swap: new directory in place"):
        old_bytes = (out / "metrics.json").read_bytes()
        old_written = (out / "metrics.json").stat().st_mtime_ns
        with pytest.raises(Killed):
            _run(tiny_config(), out, monkeypatch, kill_at=labels.index(label), overwrite=True)
        if not label.startswith("swap"):
            assert (out / "metrics.json").read_bytes() == old_bytes, label
        _run(tiny_config(), out, monkeypatch, overwrite=True)
        _assert_same_run(_outcome(out), want)
        # Replaced by a new run: a new file (the same settings can give the same bytes, when
        # the training time rounds to the same value).
        assert (out / "metrics.json").stat().st_mtime_ns != old_written
        assert sorted(p.name for p in out.parent.iterdir()) == [".run.lock", "run"], label
