"""The zoo's messages as `logging` records (issue #31): the library logs, Python's defaults keep
it quiet, and ``zoo -q`` / ``zoo -v`` set the level of what the command prints."""

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from zoo.core import logs

REPO = Path(__file__).resolve().parents[2]
EPOCHS = 2
TINY = {"epochs": EPOCHS, "batch_size": 128, "seed": 1, "early_stopping_patience": 0,
        "model_options": {"units": 4, "rank": 2}}
TRAIN = ["train", "--task", "har2", "--model", "sirnn", "--units", "4", "--rank", "2",
         "--epochs", str(EPOCHS), "--batch-size", "128", "--patience", "0", "--recipe", "none"]
EPOCH_LINE = re.compile(r"^epoch +\d+/\d+ ", re.MULTILINE)


@pytest.fixture
def env(shared_data):
    return {**os.environ, "ZOO_DATA_DIR": str(shared_data / "har"), "KERAS_BACKEND": "tensorflow",
            "PYTHONUNBUFFERED": "1"}


@pytest.fixture
def restore_loggers():
    """`logs.configure` changes process-wide loggers: put them back for the tests after."""
    saved = [(logger, logger.level, logger.propagate, list(logger.handlers))
             for logger in map(logging.getLogger, logs.PACKAGES)]
    yield
    for logger, level, propagate, handlers in saved:
        logger.setLevel(level)
        logger.propagate = propagate
        logger.handlers[:] = handlers


def _zoo(args, env):
    proc = subprocess.run([sys.executable, "-m", "edge_rnn_zoo", *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_handler_prints_info_on_stdout_warnings_on_stderr_at_the_level_set(capsys,
                                                                           restore_loggers):
    log = logging.getLogger("zoo.training.some_module")
    for level, shown in ((logging.INFO, "info"), (logging.WARNING, "warning"),
                         (logging.DEBUG, "debug")):
        logs.configure(level)
        log.debug("a debug line")
        log.info("an info line")
        log.warning("a warning line")
        captured = capsys.readouterr()
        expected_out = {"debug": "a debug line\nan info line\n", "info": "an info line\n",
                        "warning": ""}[shown]
        assert captured.out == expected_out, shown
        assert captured.err == "a warning line\n", shown  # once: configure adds one handler


def test_command_output_prints_once_beside_a_root_handler_and_is_undone(capsys):
    # absl (TensorFlow) calls logging.basicConfig() when it first logs: a root handler on stderr.
    root_handler = logging.StreamHandler(sys.stderr)
    logging.getLogger().addHandler(root_handler)
    try:
        with logs.command_output(logging.INFO):
            logging.getLogger("zoo.export.exporter").info("  wrote OUT")
        captured = capsys.readouterr()
        assert (captured.out, captured.err) == ("  wrote OUT\n", "")
    finally:
        logging.getLogger().removeHandler(root_handler)
    training = logging.getLogger("zoo.training")
    assert training.propagate and not any(isinstance(h, logs.CommandHandler)
                                          for h in training.handlers)


def test_verbosity_flags_map_to_levels():
    assert logs.level_from_flags(verbose=False, quiet=False) == logging.INFO
    assert logs.level_from_flags(verbose=True, quiet=False) == logging.DEBUG
    assert logs.level_from_flags(verbose=False, quiet=True) == logging.WARNING


def test_quiet_train_prints_the_result_but_no_epoch_lines(tmp_path, env):
    out = tmp_path / "run"
    quiet = _zoo(["-q", *TRAIN, "--out", str(out)], env)
    assert not EPOCH_LINE.search(quiet.stdout + quiet.stderr), quiet.stdout
    assert "recipe:" not in quiet.stdout
    result = [line for line in quiet.stdout.splitlines() if line.startswith("test: accuracy")]
    assert len(result) == 1, quiet.stdout
    # The line states the accuracy the run wrote to metrics.json.
    accuracy = json.loads((out / "metrics.json").read_text())["test"]["accuracy"]
    assert f"accuracy {100 * accuracy:.2f}%" in result[0]


def test_verbose_train_adds_debug_records_to_the_default_lines(tmp_path, env):
    verbose = _zoo(["-v", *TRAIN, "--out", str(tmp_path / "run")], env)
    assert len(EPOCH_LINE.findall(verbose.stdout)) == EPOCHS  # the default (info) lines stay
    committed = re.findall(r"^committed .*checkpoints/epoch-(\d{4})$", verbose.stdout,
                           re.MULTILINE)
    assert committed == [f"{e:04d}" for e in range(1, EPOCHS + 1)], verbose.stdout


def test_library_logs_at_info_and_prints_nothing_by_default(tmp_path, shared_data, caplog,
                                                             capsys, restore_loggers):
    from zoo.training.config import resolve
    from zoo.training.trainer import train

    # As in a fresh notebook: the zoo's loggers as Python makes them.
    for logger in map(logging.getLogger, logs.PACKAGES):
        logger.handlers[:] = [h for h in logger.handlers if not isinstance(h, logs.CommandHandler)]
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
    caplog.set_level(logging.INFO)
    config = resolve("har2", "sirnn", "none", {**TINY, "backend": "tensorflow"})
    metrics = train(config, tmp_path / "run", data_dir=shared_data / "har")
    assert capsys.readouterr().out == ""
    epochs = [r for r in caplog.records if EPOCH_LINE.match(r.getMessage())]
    assert [r.levelno for r in epochs] == [logging.INFO] * EPOCHS
    assert {r.name for r in epochs} == {"zoo.training.callbacks"}
    result = [r for r in caplog.records if r.getMessage().startswith("test: ")]
    assert len(result) == 1 and result[0].name == "zoo.training.trainer"
    assert f"accuracy {100 * metrics['test']['accuracy']:.2f}%" in result[0].getMessage()
    assert not [r for r in caplog.records if r.levelno == logging.DEBUG]  # INFO set, not DEBUG


def test_written_to_copies_the_zoos_records_to_a_file_whatever_the_level(tmp_path, capsys,
                                                                         restore_loggers):
    """A sweep trial's log: the worker's records at INFO and above go to the file (bare lines),
    even where nothing configured the loggers (a spawned worker: Python's WARNING default);
    afterwards the loggers are as they were."""
    log = logging.getLogger("zoo.training.callbacks")
    path = tmp_path / "fold0.log"
    before = [(logger.level, logger.propagate) for logger in map(logging.getLogger, logs.PACKAGES)]
    with open(path, "a") as stream, logs.written_to(stream):
        log.debug("a debug line")
        log.info("epoch    1/1  ...")
        logging.getLogger("zoo.qat").warning("a warning")
    log.info("after the block")
    assert path.read_text() == "epoch    1/1  ...\na warning\n"
    assert capsys.readouterr().err == ""  # in the file, not printed again by a root handler
    assert [(logger.level, logger.propagate)
            for logger in map(logging.getLogger, logs.PACKAGES)] == before
    assert path.read_text().count("\n") == 2  # "after the block" is not in the file


def test_quieted_keeps_the_librarys_progress_out_and_puts_the_level_back(capsys,
                                                                          restore_loggers):
    """How an experiment trains and exports quietly: their INFO lines hidden for the block,
    warnings still shown, its own loggers untouched."""
    logs.configure(logging.INFO)
    with logs.quieted():
        logging.getLogger("zoo.training.trainer").info("epoch line")
        logging.getLogger("zoo.export.exporter").warning("a warning")
        logging.getLogger("zoo.experiments.bench").info("== sirnn")
    logging.getLogger("zoo.training.trainer").info("after")
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("== sirnn\nafter\n", "a warning\n")
