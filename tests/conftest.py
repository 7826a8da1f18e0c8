"""Shared fixtures. Tests use the real data subsets in ``../shared/data`` (never a download), and
every test session's caches live in temporary folders (the one place that is set up)."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _shared_data() -> Path:
    env = os.environ.get("ZOO_SHARED_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder with the HAR, DSA-19 and Speech Commands subsets (see its README)."""
    path = _shared_data()
    if not path.is_dir():
        pytest.fail(f"shared test data not found at {path}; set ZOO_SHARED_DATA to the shared/data folder")
    return path


@pytest.fixture(scope="session", autouse=True)
def session_cache(tmp_path_factory) -> Path:
    """No test writes into the user's home or reaches the network: caches go to a temporary
    folder, the default data root is an empty temporary folder, downloads are disabled, and
    TensorFlow's C++ logs are off (subprocesses inherit all of it).

    Session-scoped (not a function ``monkeypatch``) so it is already in force when module- or
    session-scoped fixtures load data; tests may still override it with ``monkeypatch``.
    """
    cache = tmp_path_factory.mktemp("zoo-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ZOO_CACHE_DIR", str(cache))
        mp.setenv("ZOO_DATA_DIR", str(tmp_path_factory.mktemp("empty-data-root")))
        mp.setenv("ZOO_OFFLINE", "1")
        mp.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
        yield cache


@pytest.fixture(scope="session")
def wheel_build_lock(tmp_path_factory):
    """A lock to hold while building the wheel from this checkout: setuptools writes ``build/``
    and the ``.egg-info`` into the source tree, so two builds at once (the fast lane's two
    workers each running a wheel test) break each other. The folder above the session's temp
    folder is shared by pytest-xdist's workers."""
    import contextlib
    import fcntl

    path = tmp_path_factory.getbasetemp().parent / "edge-rnn-zoo-wheel-build.lock"

    @contextlib.contextmanager
    def held():
        with open(path, "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    return held


@pytest.fixture(scope="session")
def har_dir(shared_data) -> Path:
    """The shared HAR subset (the export tests' data, and the sequence-int8 checks')."""
    return shared_data / "har"


@pytest.fixture(scope="session")
def log_lines():
    """``with log_lines() as lines:`` collects the messages the zoo logs (INFO and up) inside the
    block in ``lines``, as the ``zoo`` command prints them; usable in fixtures of any scope
    (``caplog`` is per test)."""
    import contextlib
    import logging

    @contextlib.contextmanager
    def collecting(logger_name: str = "zoo", level: int = logging.INFO):
        lines: list[str] = []
        handler = logging.Handler(level)
        handler.emit = lambda record: lines.append(record.getMessage())
        logger = logging.getLogger(logger_name)
        saved = logger.level
        logger.addHandler(handler)
        if not logger.isEnabledFor(level):
            logger.setLevel(level)
        try:
            yield lines
        finally:
            logger.removeHandler(handler)
            logger.setLevel(saved)

    return collecting


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory):
    """``trained_run(config, data_dir)``: a finished `zoo.training.trainer.train` run folder of
    ``config`` (a `TrainConfig`) on ``data_dir``, trained once per session and content (the
    config's settings and the data folder), so that the tests reading the same model share one
    training. Shared and read-only: a test that writes into a run copies it first."""
    import hashlib
    import json

    root = tmp_path_factory.mktemp("trained-runs")
    runs: dict[str, Path] = {}

    def get(config, data_dir) -> Path:
        from zoo.training.trainer import train

        content = json.dumps([config.to_dict(), str(data_dir)], sort_keys=True, default=str)
        key = hashlib.sha256(content.encode()).hexdigest()[:16]
        if key not in runs:
            train(config, root / key, data_dir=data_dir, verbose=0)
            runs[key] = root / key
        return runs[key]

    return get


def cv_results_record(fold: int = 0, val: float | None = 90.0, *, config: dict | None = None,
                      **fields) -> dict:
    """A whole ``zoo sweep cv`` results file (`zoo.core.cv_results`) as the sweep writes it, for
    a test that plants one: fold ``fold`` of har2 / sirnn / v, validation accuracy ``val`` (the
    last point of its curve), ``config`` (default: a tiny SiRNN's), ``fields`` replacing any
    other top-level key."""
    curve = [] if val is None else [val - 5.0, val]
    summary = {"val": val, "curve": curve, "test": 90.0, "parameters": 163, "seconds": 7.0,
               "epochs": len(curve), "best_epoch": len(curve)}
    return {"task": "har2", "label": "sirnn", "variant": "v", "fold": fold, "folds": 5,
            "config": config if config is not None else {"task": "har2", "model": "sirnn"},
            "summary": summary, **fields}
