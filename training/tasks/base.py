"""Task base class, the arrays a task loads, train-only normalisation, and the registry.

A task is a class registered by name (timm style); importing its module registers it, so adding a
task is one new module plus one import line in ``training/tasks/__init__.py``.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

# ----------------------------------------------------------------------------- normalisation

STD_FLOOR = 1e-6  # EdgeML convention: a feature with std < 1e-6 gets std 1 (centred, not scaled)


@dataclasses.dataclass
class Normalization:
    """Per-feature z-score ``(x - mean) / std`` with statistics from the training split only.

    ``std`` is floored: any feature whose training std is below `STD_FLOOR` (1e-6), e.g. a
    constant channel, gets std 1, so it is centred but never divided by ~0 (EdgeML does the same:
    ``std[std < 0.000001] = 1``). The statistics travel with a trained model (``to_dict`` /
    ``save``) so export and device code use the same numbers.
    """

    mean: np.ndarray
    std: np.ndarray

    def __post_init__(self):
        self.mean = np.asarray(self.mean, dtype=np.float32).reshape(-1)
        self.std = np.asarray(self.std, dtype=np.float32).reshape(-1)
        if self.mean.shape != self.std.shape:
            raise ValueError(f"mean {self.mean.shape} and std {self.std.shape} differ in shape")
        if not (np.all(np.isfinite(self.mean)) and np.all(np.isfinite(self.std))):
            raise ValueError("normalisation statistics must be finite")
        self.std = np.where(self.std < STD_FLOOR, np.float32(1.0), self.std).astype(np.float32)

    @classmethod
    def fit(cls, x: np.ndarray) -> "Normalization":
        """Statistics over every sample and time step of ``x`` (N, T, d), per feature d."""
        flat = np.asarray(x, dtype=np.float64).reshape(-1, x.shape[-1])
        if flat.shape[0] == 0:
            raise ValueError("cannot fit normalisation statistics on an empty training split")
        return cls(flat.mean(axis=0), flat.std(axis=0))

    @classmethod
    def identity(cls, features: int) -> "Normalization":
        return cls(np.zeros(features), np.ones(features))

    @property
    def features(self) -> int:
        return int(self.mean.shape[0])

    def apply(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        if x.shape[-1] != self.features:
            raise ValueError(f"expected {self.features} features in the last axis, got shape {x.shape}")
        return ((x - self.mean) / self.std).astype(np.float32)

    def to_dict(self) -> dict:
        return {"mean": [float(v) for v in self.mean], "std": [float(v) for v in self.std],
                "std_floor": STD_FLOOR}

    @classmethod
    def from_dict(cls, d: dict) -> "Normalization":
        return cls(np.asarray(d["mean"], dtype=np.float32), np.asarray(d["std"], dtype=np.float32))

    def save(self, path: str | os.PathLike) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Normalization":
        return cls.from_dict(json.loads(Path(path).read_text()))


# ----------------------------------------------------------------------------- arrays


@dataclasses.dataclass
class Split:
    """One split: ``x`` float32 (N, T, d), un-normalised; ``y`` labels (see `TaskData`)."""

    x: np.ndarray
    y: np.ndarray

    def __post_init__(self):
        if len(self.x) != len(self.y):
            raise ValueError(f"x has {len(self.x)} rows but y has {len(self.y)}")

    def __len__(self) -> int:
        return len(self.x)


@dataclasses.dataclass
class TaskData:
    """What `Task.load` returns.

    ``y`` is int64 class ids (N,) for classification, float32 (N,) for regression and int64
    (N, T) for sequence tasks. ``normalization`` comes from ``train`` only. ``source`` is the
    folder or archive read; ``info`` records split details (e.g. the validation subjects).
    """

    train: Split
    val: Split
    test: Split
    normalization: Normalization
    source: str
    info: dict = dataclasses.field(default_factory=dict)


def _empty_like(split: Split) -> Split:
    return Split(split.x[:0], split.y[:0])


# ----------------------------------------------------------------------------- task


class Task:
    """Base class. Subclasses set the class attributes and implement `_load`.

    Options are constructor keyword arguments with defaults in ``DEFAULTS``; `options()` returns
    the resolved values (for recording a full config).
    """

    name: ClassVar[str] = ""
    kind: ClassVar[str] = "classification"  # "classification" | "regression" | "sequence"
    description: ClassVar[str] = ""
    paper_split: ClassVar[str] = ""
    DEFAULTS: ClassVar[dict[str, Any]] = {}

    def __init__(self, **options):
        unknown = sorted(set(options) - set(self.DEFAULTS))
        if unknown:
            valid = ", ".join(sorted(self.DEFAULTS)) or "(none)"
            raise ValueError(f"unknown option(s) {', '.join(map(repr, unknown))} for task "
                             f"{self.name!r}. Valid options: {valid}")
        self._options = {**self.DEFAULTS, **options}
        self._validate()

    def _validate(self) -> None:
        """Check option values; subclasses raise ValueError naming the option."""

    def options(self) -> dict[str, Any]:
        return dict(self._options)

    # Subclasses override these as properties when they depend on options.
    input_shape: tuple[int, int] = (0, 0)
    class_names: list[str] = []
    # Inertial tasks: one entry per sensor (a device), holding the channel indices of its xyz
    # triples (accelerometer, gyroscope, ...), which a rotation of the device turns together.
    # What the rotation augmentation (zoo.training.augment) needs; empty for non-IMU tasks.
    sensors: ClassVar[tuple[tuple[tuple[int, int, int], ...], ...]] = ()
    # A time signal's rate and window, for the cost per second of signal of a model
    # (`zoo.pretrained_card.Cost`): the window's rows (samples, or feature frames) per second,
    # and the seconds of signal one window covers. None: not a time signal (synthetic tasks).
    rows_per_second: ClassVar[float | None] = None
    window_seconds: ClassVar[float | None] = None

    @property
    def num_classes(self) -> int:
        return 1 if self.kind == "regression" else len(self.class_names)

    def load(self, data_dir: str | os.PathLike | None = None, *, seed: int = 0) -> TaskData:
        """Load train / validation / test arrays (data located as in ``docs/tasks.md``)."""
        data = self._reshaped(self._load(data_dir, seed=seed))
        for split_name in ("train", "val", "test"):
            split = getattr(data, split_name)
            if len(split) and tuple(split.x.shape[1:]) != tuple(self.input_shape):
                raise AssertionError(f"{self.name}: {split_name} x has shape {split.x.shape}, "
                                     f"expected (N, {self.input_shape})")
        return data

    def _load(self, data_dir, *, seed: int) -> TaskData:  # pragma: no cover - abstract
        raise NotImplementedError

    def _reshaped(self, data: TaskData) -> TaskData:
        """The loaded windows as the model takes them (e.g. `zoo.training.tasks.frames`)."""
        return data

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "input_shape": tuple(self.input_shape),
                "num_classes": self.num_classes, "kind": self.kind,
                "description": self.description, "class_names": list(self.class_names),
                "paper_split": self.paper_split}

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self._options.items())
        return f"{type(self).__name__}({opts})"


# ----------------------------------------------------------------------------- registry

_REGISTRY: dict[str, type[Task]] = {}


def _norm(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


def register_task(name: str):
    """Class decorator: register a `Task` subclass under ``name`` (sets ``cls.name``)."""

    def wrap(cls):
        if not (isinstance(cls, type) and issubclass(cls, Task)):
            raise TypeError(f"register_task({name!r}) must decorate a Task subclass")
        if _norm(name) in {_norm(n) for n in _REGISTRY}:
            raise ValueError(f"task {name!r} is already registered")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return wrap


def list_tasks() -> list[str]:
    return sorted(_REGISTRY)


def get_task(name: str, **options) -> Task:
    """The task ``name`` (case, ``-`` and ``_`` ignored) built with ``options``.

    Raises:
        ValueError: unknown task (the message lists the valid names) or unknown option.
    """
    by_norm = {_norm(n): n for n in _REGISTRY}
    key = by_norm.get(_norm(str(name)))
    if key is None:
        close = difflib.get_close_matches(str(name), list(_REGISTRY), n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise ValueError(f"unknown task {name!r}.{hint} Valid tasks: {', '.join(list_tasks())}")
    return _REGISTRY[key](**options)


def describe_tasks() -> list[dict[str, Any]]:
    """One dict per task (default options) for ``zoo list``: name, input_shape, num_classes,
    kind, description (plus class_names and paper_split)."""
    return [get_task(n).describe() for n in list_tasks()]


# ----------------------------------------------------------------------------- helpers for tasks


def pick_val_subjects(subjects, val_fraction: float, seed: int) -> list[int]:
    """Whole subjects held out of the training split for validation.

    ``k = round(val_fraction * n)`` subjects (at least 1 when ``val_fraction > 0``, at most
    n - 1), drawn with ``numpy.random.default_rng(seed).choice`` from the sorted subject ids.
    """
    subjects = sorted(int(s) for s in set(subjects))
    if val_fraction <= 0 or len(subjects) < 2:
        return []
    k = min(len(subjects) - 1, max(1, round(val_fraction * len(subjects))))
    rng = np.random.default_rng(seed)
    return sorted(int(s) for s in rng.choice(subjects, size=k, replace=False))


def fold_subjects(subjects, fold: list) -> list[int]:
    """Fold ``k`` of ``n`` (``fold = [k, n]``) of the training subjects: every n-th of the sorted
    ids from the k-th. Defined on the subjects the data holds, so a recipe that names a fold works
    on any copy of a dataset (all 21 UCI HAR training subjects give 5 folds of 4-5)."""
    subjects = sorted(int(s) for s in set(subjects))
    k, n = fold
    held_out = subjects[k::n]
    if not held_out or len(held_out) == len(subjects):
        raise ValueError(f"option val_fold={list(fold)} holds out {held_out or 'no subject'} of "
                         f"the training subjects {subjects}: it must leave some for training "
                         "and hold out at least one")
    return held_out


def check_fold(name: str, value) -> list | None:
    """``value`` as ``[k, n]`` with 0 <= k < n and n >= 2, or None."""
    if value is None:
        return None
    ok = (isinstance(value, (list, tuple)) and len(value) == 2
          and all(isinstance(v, int) and not isinstance(v, bool) for v in value))
    if not ok or not (value[1] >= 2 and 0 <= value[0] < value[1]):
        raise ValueError(f"option {name} must be [k, n], fold k of n (0 <= k < n, n >= 2), e.g. "
                         f"[1, 5]; got {value!r}")
    return [int(value[0]), int(value[1])]


# A generated task's splits are made in memory at load: inputs beyond this many bytes (float32,
# all splits) are a typo, not a dataset (n_train=10**12 asked numpy for 1.4 PiB: a MemoryError
# traceback). The defaults use 19 MB (adding) and 105 MB (copy).
MAX_GENERATED_BYTES = 4 * 2**30


def check_generated_size(task: "Task", sequences: int, options: str) -> None:
    """ValueError naming ``options`` when ``sequences`` inputs of ``task.input_shape`` (float32)
    exceed `MAX_GENERATED_BYTES`."""
    steps, features = task.input_shape
    size = 4 * sequences * steps * features
    if size > MAX_GENERATED_BYTES:
        raise ValueError(f"task {task.name}: options {options} ask for {sequences:,} sequences of "
                         f"{steps:,} x {features} float32 values ({size / 2**30:,.1f} GiB); a "
                         f"generated task is made in memory, at most "
                         f"{MAX_GENERATED_BYTES / 2**30:g} GiB: lower them")


def check_fraction(name: str, value) -> None:
    if not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"option {name} must be a number in [0, 1), got {value!r}")


def check_subjects(name: str, value) -> list[int]:
    """``value`` as a sorted list of subject ids: a list (or tuple) of integers."""
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"option {name} must be a list of subject numbers, e.g. [1, 2], got "
                         f"{value!r}")
    return sorted(int(v) for v in value)


def check_seed(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"option {name} must be an integer >= 0, got {value!r}")
