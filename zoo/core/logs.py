"""The zoo's messages as `logging` records, and the plain handler the ``zoo`` command prints them
with.

Library modules log through ``logging.getLogger(__name__)``: progress and notes at INFO, details
at DEBUG, problems at WARNING. Python's default (no handler configured) shows warnings only, so a
notebook or a script stays quiet until it asks for more (``logging.basicConfig(level="INFO")``).
The ``zoo`` command calls `configure`, which prints each record as its bare message, INFO and
DEBUG on stdout and warnings on stderr: what the command printed before it used logging. A
caller that wants the messages (a test, a notebook) reads the records: ``caplog``, or a handler
of its own on the ``zoo`` logger; `quieted` silences the library for a block.
"""

from __future__ import annotations

import contextlib
import logging
import sys

# The top-level packages whose loggers `configure` sets (every module logs under one of them).
PACKAGES = ("zoo", "edge_rnn_zoo")
# The library's layers below the experiments: what `quieted` quiets by default.
LIBRARY = ("zoo", )
# ... except the experiments' own records (their tables), which `quieted` leaves as they were.
EXPERIMENTS = "zoo.experiments"
# ... and a module run as a script (``python -m zoo.experiments.sweep``), whose logger is __main__.
_CONFIGURED = (*PACKAGES, "__main__")


class CommandHandler(logging.Handler):
    """A record as its bare message: warnings and errors on stderr, the rest on stdout, flushed
    at once (a killed run has printed every finished epoch). The streams are looked up at each
    record, so a redirected ``sys.stdout`` (pytest's capsys, a notebook) receives them.
    ``machine_output``: the command's stdout is data (``--json``), so every record goes to
    stderr and ``zoo eval RUN --json | jq`` reads JSON alone."""

    def __init__(self, machine_output: bool = False):
        super().__init__()
        self.setFormatter(logging.Formatter("%(message)s"))
        self.machine_output = machine_output

    def emit(self, record: logging.LogRecord) -> None:
        try:
            to_stderr = self.machine_output or record.levelno >= logging.WARNING
            stream = sys.stderr if to_stderr else sys.stdout
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:  # logging's contract: a failing handler must not fail the caller
            self.handleError(record)


def configure(level: int = logging.INFO, machine_output: bool = False) -> None:
    """Print the zoo's records at ``level`` and above as the ``zoo`` command does, for the rest
    of the process (a script's ``__main__``; `command_output` for one command). Called again,
    it only changes the level.

    The records stop at the zoo's loggers: absl (TensorFlow's logging) calls
    ``logging.basicConfig()`` the first time it logs, and that root handler would print every
    line a second time, as ``INFO:zoo.export.exporter:...`` on stderr. ``machine_output``: the
    records all go to stderr (`CommandHandler`).
    """
    for name in _CONFIGURED:
        logger = logging.getLogger(name)
        logger.setLevel(level)
        logger.propagate = False
        # a fresh handler in place of any earlier one: `command_output` restores the old
        # objects as they were, so no handler's state outlives its command
        logger.handlers[:] = [h for h in logger.handlers if not isinstance(h, CommandHandler)]
        logger.addHandler(CommandHandler(machine_output))


@contextlib.contextmanager
def command_output(level: int = logging.INFO, machine_output: bool = False):
    """`configure` for the duration of one command, then the loggers as they were: ``zoo``'s
    ``main`` called in a process that goes on (a test, a notebook) leaves no handler behind."""
    saved = [(logger, logger.level, logger.propagate, list(logger.handlers))
             for logger in map(logging.getLogger, _CONFIGURED)]
    configure(level, machine_output)
    try:
        yield
    finally:
        for logger, level_was, propagate, handlers in saved:
            logger.setLevel(level_was)
            logger.propagate = propagate
            logger.handlers[:] = handlers


@contextlib.contextmanager
def quieted(packages: tuple[str, ...] = LIBRARY, level: int = logging.WARNING):
    """The loggers of ``packages`` (the library's, by default) at ``level`` at least for the
    block: an experiment that trains and exports on the way to its own table keeps their
    progress out of its output. The
    experiments' own logger keeps the level it had (it sits under ``zoo`` too)."""
    loggers = [logging.getLogger(name) for name in packages]
    kept = logging.getLogger(EXPERIMENTS)
    saved = [logger.level for logger in loggers]
    saved_kept = kept.level
    if "zoo" in packages:
        kept.setLevel(kept.getEffectiveLevel())
    for logger in loggers:
        logger.setLevel(max(level, logger.getEffectiveLevel()))
    try:
        yield
    finally:
        kept.setLevel(saved_kept)
        for logger, level_was in zip(loggers, saved):
            logger.setLevel(level_was)


@contextlib.contextmanager
def written_to(stream, level: int = logging.INFO):
    """The zoo's records at ``level`` and above written to ``stream`` too (bare messages,
    flushed at once), and to no handler above the zoo's loggers, for the block, whatever the
    loggers' level was: a sweep trial's log file, in the worker process that trains it."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.setLevel(level)
    loggers = [logging.getLogger(name) for name in PACKAGES]
    saved = [(logger, logger.level, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.propagate = False  # absl's root handler would print each record again
        if not logger.isEnabledFor(level):
            logger.setLevel(level)
    try:
        yield
    finally:
        for logger, level_was, propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(level_was)
            logger.propagate = propagate


def level_from_flags(verbose: bool, quiet: bool) -> int:
    """``-q``: warnings only; ``-v``: debug; neither: info."""
    if quiet:
        return logging.WARNING
    return logging.DEBUG if verbose else logging.INFO
