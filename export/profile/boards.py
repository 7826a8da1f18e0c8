"""The boards ``zoo profile --board`` knows (``boards.yaml``: core, clock, flash, RAM), and what
a profile says about one: whether the model fits, and instructions / clock as a lower bound on
its time (instructions are not cycles: a load or a multiply can take several)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import yaml


@dataclass(frozen=True)
class Board:
    key: str
    name: str
    target: str
    clock_hz: int
    flash_bytes: int | None
    ram_bytes: int


class BoardError(ValueError):
    """An unknown board name."""


def boards() -> dict[str, Board]:
    """Every board of ``boards.yaml``, by key."""
    text = resources.files("zoo.export.profile").joinpath("boards.yaml").read_text()
    return {key: Board(key=key, **value) for key, value in yaml.safe_load(text).items()}


def board_named(key: str) -> Board:
    """The board ``key``; an unknown one is a `BoardError` of one line listing the valid ones."""
    known = boards()
    if key not in known:
        raise BoardError(f"--board {key!r}: valid boards are {', '.join(known)}")
    return known[key]


def fit(board: Board, figures: dict) -> dict:
    """What the target's ``figures`` (a profile's record) mean on ``board``: flash and RAM
    fit (None: external flash, not known here) and the lower bound on milliseconds per step and
    per second of signal at the board's clock (one instruction a cycle at best)."""
    flash_fits = None if board.flash_bytes is None else figures["flash_bytes"] <= board.flash_bytes
    per_second = figures.get("instructions_per_second")
    return {"board": board.key, "name": board.name, "target": board.target,
            "clock_hz": board.clock_hz, "flash_bytes": board.flash_bytes,
            "ram_bytes": board.ram_bytes, "flash_fits": flash_fits,
            "ram_fits": figures["ram_bytes"] <= board.ram_bytes,
            "fits": flash_fits is not False and figures["ram_bytes"] <= board.ram_bytes,
            "step_ms_lower_bound": 1e3 * figures["instructions_per_step"] / board.clock_hz,
            "cpu_share_lower_bound": None if per_second is None else per_second / board.clock_hz}
