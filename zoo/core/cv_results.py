"""A ``zoo sweep cv`` results file, read once: ``<results>/<task>/<label>/<variant>/fold<k>.json``
as a typed, frozen `CvResult`.

A finished CV trial's summary is written beside the campaign's results (a few hundred bytes,
committed) by `zoo.experiments.trials.record_result`; the sweep's tables, the paired comparisons
(`zoo.experiments.campaigns.paired`), the frontier (`zoo.experiments.frontier`) and ``zoo ship
--cv-results`` (`zoo.export.ship.cv_summaries`) read it back. The writer lives in experiments,
above the export layer that reads it too, so the record lives here, in the core both stand on,
and is the one place the file's keys and types are written:

    {"task", "label", "variant", "fold", "folds", "config": {the trial's settings},
     "summary": {"val", "curve", "test", "parameters", "seconds", "epochs", "best_epoch"}}

``summary.val`` (the validation accuracy of the model kept, %) and ``summary.test`` (the visible
test accuracy, %) are None for a run without that split. Keys this version does not know are kept
(``extra``) and written back; a missing key or a value of the wrong type is a `CvResultError`
(a ValueError) of one line naming the file, the key and what is valid.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Mapping

__all__ = ["CvResult", "CvResultError", "FoldSummary", "read_cv_result", "cv_result_files"]


class CvResultError(ValueError):
    """A results file that is not one ``zoo sweep cv`` writes (the message names the file)."""


def _is_text(value) -> bool:
    return isinstance(value, str)


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_number_or_none(value) -> bool:
    return value is None or _is_number(value)


def _is_curve(value) -> bool:
    return isinstance(value, list) and all(_is_number(x) for x in value)


# Key -> (accepts, what is valid), in the order the writer writes them.
SUMMARY_RULES = {
    "val": (_is_number_or_none, "a number (%) or null"),
    "curve": (_is_curve, "a list of numbers (% per epoch)"),
    "test": (_is_number_or_none, "a number (%) or null"),
    "parameters": (_is_count, "an integer >= 0"),
    "seconds": (_is_number, "a number"),
    "epochs": (_is_count, "an integer >= 0"),
    "best_epoch": (_is_count, "an integer >= 0"),
}
RESULT_RULES = {
    "task": (_is_text, "a task name"),
    "label": (_is_text, "a label (text)"),
    "variant": (_is_text, "a variant name (text)"),
    "fold": (_is_count, "an integer >= 0"),
    "folds": (lambda v: _is_count(v) and v >= 1, "an integer >= 1"),
    "config": (lambda v: isinstance(v, dict), "a mapping of training settings"),
    "summary": (lambda v: isinstance(v, dict), "a mapping (" + ", ".join(SUMMARY_RULES) + ")"),
}


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _checked(source, data: Mapping, rules: dict, within: str = "") -> dict:
    """``data``'s values of ``rules``' keys, each present and accepted; else CvResultError
    naming ``source``, the key (inside ``within``, e.g. ``summary.``) and what is valid."""
    values = {}
    for key, (accepts, valid) in rules.items():
        if key not in data:
            raise CvResultError(f"{source}: not a zoo sweep cv results file: no {within}{key} "
                                f"({valid})")
        if not accepts(data[key]):
            raise CvResultError(f"{source}: {within}{key} is {_shown(data[key])}; valid: {valid}")
        values[key] = data[key]
    return values


@dataclasses.dataclass(frozen=True)
class FoldSummary:
    """One finished CV run, as its results file's ``summary`` holds it (accuracies in %)."""

    val: float | None
    curve: tuple[float, ...]
    test: float | None
    parameters: int
    seconds: float
    epochs: int
    best_epoch: int
    extra: Mapping = dataclasses.field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping, source="summary") -> "FoldSummary":
        """``data`` (a results file's ``summary``, or `zoo.experiments.trials.summarise`'s
        dict) checked; CvResultError naming ``source`` and the key at fault."""
        if not isinstance(data, dict):
            raise CvResultError(f"{source}: summary is {_shown(data)}; valid: a mapping")
        values = _checked(source, data, SUMMARY_RULES, within="summary.")
        values["curve"] = tuple(values["curve"])
        return cls(**values, extra={k: v for k, v in data.items() if k not in SUMMARY_RULES})

    def to_dict(self) -> dict:
        """The ``summary`` as the file holds it: the keys in the writer's order, then unknown
        ones."""
        known = {name: getattr(self, name) for name in SUMMARY_RULES}
        return {**known, "curve": list(self.curve), **self.extra}


@dataclasses.dataclass(frozen=True)
class CvResult:
    """A results file: which trial (task, label, variant, fold of folds), the settings it ran
    with (``config``, `zoo.experiments.trials.portable`'s form) and its `FoldSummary`.
    ``path``: the file it was read from (None for a record not yet written)."""

    task: str
    label: str
    variant: str
    fold: int
    folds: int
    config: Mapping
    summary: FoldSummary
    extra: Mapping = dataclasses.field(default_factory=dict)
    path: Path | None = None

    @classmethod
    def from_dict(cls, data, path: Path | None = None) -> "CvResult":
        """``data`` checked (the file's keys and types); CvResultError naming ``path`` and the
        key at fault."""
        source = path if path is not None else "results record"
        if not isinstance(data, dict):
            raise CvResultError(f"{source}: not a zoo sweep cv results file (a JSON "
                                f"{type(data).__name__}, expected an object)")
        values = _checked(source, data, RESULT_RULES)
        values["summary"] = FoldSummary.from_dict(values["summary"], source)
        return cls(**values, path=None if path is None else Path(path),
                   extra={k: v for k, v in data.items() if k not in RESULT_RULES})

    def to_dict(self) -> dict:
        """The file's JSON object: the keys in the writer's order, then unknown ones."""
        known = {name: getattr(self, name) for name in RESULT_RULES}
        return {**known, "config": dict(self.config), "summary": self.summary.to_dict(),
                **self.extra}


def read_cv_result(path) -> CvResult:
    """The results file at ``path`` as a `CvResult`; CvResultError (one line naming the file,
    and the key at fault) for a file that is not valid JSON or not one ``zoo sweep cv`` wrote."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CvResultError(f"{path}: not a zoo sweep cv results file (JSON error: {err})") \
            from None
    return CvResult.from_dict(data, path)


def cv_result_files(folder) -> list[Path]:
    """The results files of one variant's folder (``fold<k>.json``), sorted by name."""
    return sorted(Path(folder).glob("fold*.json"))
