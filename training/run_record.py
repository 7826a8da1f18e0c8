"""A run's record, read once: ``config.yaml`` and ``metrics.json`` as typed, frozen values.

``zoo train`` writes a run's settings and what they resolved to into ``config.yaml`` and its
scores into ``metrics.json``; every command that reads a run back (eval, export, ship, analyze,
the benchmarks) reads them here, through `zoo.training.rundir.RunDirectory.record`, once, and
passes the `RunRecord` on. Like timm's ``PretrainedCfg``, the record is the one place a field's
name, type and default are written:

* the settings are a `zoo.training.config.TrainConfig` (checked by its rules,
  `zoo.training.artifacts.check_run_config`; a setting an older run predates takes its default);
* the records the trainer adds (``*_resolved``) are typed fields, None where the run predates them;
* keys this version does not know (a run of a newer zoo) are kept in ``extra``, never refused here.

A damaged or foreign file raises `zoo.training.artifacts.ArtifactError` (a ValueError) naming the
file and the key at fault, and what is valid.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Mapping

import yaml

from zoo.training.artifacts import ArtifactError, check_run_config
from zoo.training.config import TrainConfig
from zoo.training.tasks.frames import frames_per_step_of

__all__ = ["RunRecord", "RunConfig", "RunMetrics", "DataCounts", "ReadOnlyDict", "read_run_record"]


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _checked(path: Path, data: Mapping, field: str, accepts, valid: str, within: str = ""):
    """``data[field]`` when present and accepted by ``accepts`` (None when absent); else
    ArtifactError naming ``path``, the field (inside ``within``, e.g. ``data.``) and what is
    valid."""
    value = data.get(field)
    if value is not None and not accepts(value):
        raise ArtifactError(f"{path}: {within}{field} is {_shown(value)}; valid: {valid}")
    return value


class ReadOnlyDict(dict):
    """A dict that refuses changes: the record's mappings (task options, fingerprints...) cannot
    be edited in place by one reader under another's feet. Still a dict, so it is written to
    JSON and YAML, unpacked (``{**options}``) and pickled as one."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("a run record is read-only; copy it (dict(...)) to change it")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self):
        return (type(self), (dict(self),))


yaml.SafeDumper.add_representer(ReadOnlyDict, yaml.SafeDumper.represent_dict)


def _plain(mapping: Mapping) -> dict:
    """``mapping`` with every `ReadOnlyDict` in it a plain dict again (to change or write)."""
    return {k: _plain(v) if isinstance(v, dict) else v for k, v in mapping.items()}


def _frozen(mapping: Mapping | None) -> ReadOnlyDict | None:
    """``mapping`` as a `ReadOnlyDict`, nested mappings too (None stays None)."""
    if mapping is None:
        return None
    return ReadOnlyDict({k: _frozen(v) if isinstance(v, dict) else v for k, v in mapping.items()})


def _is_mapping(value) -> bool:
    return isinstance(value, dict)


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ------------------------------------------------------------------------------ config.yaml
# The records `zoo train` adds beside the settings: key in config.yaml -> (accepts, valid).
RESOLVED = {
    "task_options_resolved": (_is_mapping, "a mapping of task options"),
    "model_options_resolved": (_is_mapping, "a mapping of model options"),
    "data_source_resolved": (lambda v: isinstance(v, str), "a path (text)"),
    "data_fingerprint_resolved": (_is_mapping, "a mapping (size and sha256, or listing_sha256)"),
    "distill_resolved": (_is_mapping, "a mapping (alpha, temperature, teachers)"),
}


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """``config.yaml``: the settings the run trained with and what they resolved to.

    ``settings`` is a copy on every access (a `TrainConfig` is mutable; the record is not).
    ``task_options`` / ``model_options`` are what the run used: the resolved options where the
    run recorded them, else the options as given (a run from before they were recorded); the
    options as given, which rebuild the run's task, are ``settings.task_options``.
    """

    path: Path
    train_config: TrainConfig = dataclasses.field(repr=False)
    task_options_resolved: Mapping | None = None
    model_options_resolved: Mapping | None = None
    data_source: str | None = None
    data_fingerprint: Mapping | None = None
    distill_resolved: Mapping | None = None
    extra: Mapping = dataclasses.field(default_factory=ReadOnlyDict)

    @property
    def settings(self) -> TrainConfig:
        return copy.deepcopy(self.train_config)

    task = property(lambda self: self.train_config.task)
    model = property(lambda self: self.train_config.model)
    seed = property(lambda self: self.train_config.seed)
    backend = property(lambda self: self.train_config.backend)
    init_from = property(lambda self: self.train_config.init_from)
    distill = property(lambda self: self.train_config.distill)

    @property
    def task_options(self) -> Mapping:
        if self.task_options_resolved is not None:
            return self.task_options_resolved
        return _frozen(self.train_config.task_options)

    @property
    def model_options(self) -> Mapping:
        if self.model_options_resolved is not None:
            return self.model_options_resolved
        return _frozen(self.train_config.model_options)

    @property
    def frames_per_step(self) -> int:
        """Samples per recurrent step (`zoo.training.tasks.frames`; 1 for a run before it)."""
        return frames_per_step_of(self.task_options)

    @property
    def unknown_settings(self) -> list[str]:
        """Keys of ``extra`` that look like settings (not ``*_resolved`` records): a run of
        another zoo version, which this one can read but not resume."""
        return sorted(k for k in self.extra if not str(k).endswith("_resolved"))

    def as_written(self, **changes) -> dict:
        """The ``config.yaml`` mapping of this record with the settings ``changes`` made (e.g.
        ``task_options=...`` for a copy of the run on another split): unknown keys kept, and
        the resolved record of a changed ``task_options`` / ``model_options`` left out, since
        it no longer follows from them."""
        settings = dataclasses.replace(self.settings, **changes)
        stale = {f"{name}_resolved" for name in ("task_options", "model_options")
                 if name in changes}
        resolved = {"task_options_resolved": self.task_options_resolved,
                    "model_options_resolved": self.model_options_resolved,
                    "data_source_resolved": self.data_source,
                    "data_fingerprint_resolved": self.data_fingerprint,
                    "distill_resolved": self.distill_resolved}
        return _plain({**settings.to_dict(), **{k: v for k, v in resolved.items()
                                                if v is not None and k not in stale},
                       **self.extra})

    def make_task(self, **overrides):
        """The run's task as it trained: its options as given, with ``overrides`` on top."""
        from zoo.training.tasks import get_task

        return get_task(self.task, **{**self.train_config.task_options, **overrides})


def _read_config(path: Path) -> RunConfig:
    """``path`` (a run's ``config.yaml``) as a `RunConfig`; ArtifactError naming the file and
    the key when it is not valid YAML, not a mapping, or a setting or record is invalid."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ArtifactError(f"{path} is not valid YAML ({err})") from None
    if not isinstance(data, dict):
        raise ArtifactError(f"{path} is not a zoo run config (a YAML {type(data).__name__}, "
                            "expected a mapping of settings)")
    train_config = check_run_config(data, path)
    resolved = {key: _checked(path, data, key, *rule) for key, rule in RESOLVED.items()}
    known = {f.name for f in dataclasses.fields(TrainConfig)} | set(RESOLVED)
    return RunConfig(
        path=path, train_config=train_config,
        task_options_resolved=_frozen(resolved["task_options_resolved"]),
        model_options_resolved=_frozen(resolved["model_options_resolved"]),
        data_source=resolved["data_source_resolved"],
        data_fingerprint=_frozen(resolved["data_fingerprint_resolved"]),
        distill_resolved=_frozen(resolved["distill_resolved"]),
        extra=_frozen({k: v for k, v in data.items() if k not in known}))


# ----------------------------------------------------------------------------- metrics.json
@dataclasses.dataclass(frozen=True)
class DataCounts:
    """``metrics.json``'s ``data``: windows per split and where the data was found."""

    train: int | None = None
    val: int | None = None
    test: int | None = None
    source: str | None = None


# Field -> (accepts, valid). Every field may be absent (None): a run of an older zoo, or a
# stand-in run folder, wrote fewer; one that is present must hold what the trainer writes.
METRICS_RULES = {
    "task": (lambda v: isinstance(v, str), "a task name"),
    "model": (lambda v: isinstance(v, str), "a model name"),
    "test": (lambda v: _is_mapping(v) and all(_is_number(x) for x in v.values()),
             "a mapping of metric name to number"),
    "parameters": (_is_count, "an integer >= 0"),
    "macs_per_sequence": (_is_number, "a number"),
    "training_seconds": (_is_number, "a number"),
    "epochs_run": (_is_count, "an integer >= 0"),
    "best_epoch": (lambda v: _is_count(v) and v >= 1, "an integer >= 1"),
    "data": (_is_mapping, "a mapping of split sizes and source"),
    "hardware": (_is_mapping, "a mapping"),
    "versions": (_is_mapping, "a mapping"),
    "qat_stage": (_is_mapping, "a mapping"),
}
DATA_RULES = {"train": (_is_count, "an integer >= 0"), "val": (_is_count, "an integer >= 0"),
              "test": (_is_count, "an integer >= 0"),
              "source": (lambda v: isinstance(v, str), "a path (text)")}


# `RunMetrics.required`'s name of a field's key in metrics.json, where the two differ.
METRICS_KEYS = {"test_accuracy": "test.accuracy"}


@dataclasses.dataclass(frozen=True)
class RunMetrics:
    """``metrics.json``: what the finished run scored and cost (None: not recorded).

    Every field is optional here (a stand-in run folder, a run of an older zoo or a foreign file
    recorded less, and a command that does not need a field must still read the rest); a reader
    that needs one asks `required`, which names the file and the key when it is absent, instead
    of failing later on the None (a TypeError deep in the command)."""

    path: Path
    task: str | None = None
    model: str | None = None
    test: Mapping = dataclasses.field(default_factory=ReadOnlyDict)
    parameters: int | None = None
    macs_per_sequence: float | None = None
    training_seconds: float | None = None
    epochs_run: int | None = None
    best_epoch: int | None = None
    data: DataCounts = DataCounts()
    hardware: Mapping | None = None
    versions: Mapping | None = None
    qat_stage: Mapping | None = None
    extra: Mapping = dataclasses.field(default_factory=ReadOnlyDict)

    @property
    def test_accuracy(self) -> float | None:
        """Test accuracy (a fraction); None for a run that kept no test split, or a
        regression."""
        return self.test.get("accuracy")

    def required(self, field: str, needed_by: str):
        """``field``'s value (a field, `test_accuracy`, or ``data.<split or source>``); when
        the file did not record it, an ArtifactError of one line naming the file, the key and
        ``needed_by`` (what needs it, e.g. ``"the sweep's summary"``)."""
        value = self
        for part in field.split("."):
            value = getattr(value, part)
        if value is None:
            key = METRICS_KEYS.get(field, field)
            reason = ("a run that kept no test split has none" if field == "test_accuracy" else
                      "a run `zoo train` finished records it: the file is foreign or damaged")
            raise ArtifactError(f"{self.path}: no {key} recorded; {needed_by} needs it "
                                f"({reason})")
        return value


def _read_metrics(path: Path) -> RunMetrics:
    """``path`` (a run's ``metrics.json``) as `RunMetrics`; ValueError naming the file (and the
    field) when it is not a JSON object or a field is not what the trainer writes."""
    from zoo.core.storage import read_json

    path = Path(path)
    data = read_json(path, "metrics file")
    values = {key: _checked(path, data, key, *rule) for key, rule in METRICS_RULES.items()}
    counts = values.pop("data") or {}
    data_counts = DataCounts(**{key: _checked(path, counts, key, *rule, within="data.")
                                for key, rule in DATA_RULES.items()})
    test = values.pop("test")
    return RunMetrics(
        path=path, test=_frozen(test or {}), data=data_counts,
        **{k: (_frozen(v) if _is_mapping(v) else v) for k, v in values.items()},
        extra=_frozen({k: v for k, v in data.items() if k not in METRICS_RULES}))


# ------------------------------------------------------------------------------- the record
@dataclasses.dataclass(frozen=True)
class RunRecord:
    """A run folder's record: ``config`` (`RunConfig`) and, once the run has finished,
    ``metrics`` (`RunMetrics`; None while ``zoo train`` has not finished it). Read it with
    `zoo.training.rundir.RunDirectory.record`."""

    root: Path
    config: RunConfig
    metrics: RunMetrics | None = None

    @property
    def finished(self) -> bool:
        return self.metrics is not None


def read_run_record(root: Path, config: Path, metrics: Path | None) -> RunRecord:
    """The record of the run at ``root`` from its ``config`` file and, when finished, its
    ``metrics`` file (None: unfinished). Callers use `zoo.training.rundir.RunDirectory.record`,
    which knows the files' names."""
    return RunRecord(Path(root), _read_config(config),
                     None if metrics is None else _read_metrics(metrics))
