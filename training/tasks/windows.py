"""``windows``: a user's own labelled sensor windows, an ``.npz`` or a folder of CSV recordings.

``zoo train --task windows --model sirnn --data-dir PATH`` where PATH is

* an ``.npz`` with ``X`` (N, T, C) numbers, ``y`` (N,) integer or string labels, optionally
  ``groups`` (N,) (the subject or recording of each window) and ``channels`` (C,) names; or
* a folder ``PATH/<class>/<recording>.csv`` (one recording per file, its class from its folder;
  numeric columns, an optional header row), cut into windows of ``window`` samples every
  ``stride`` samples (or ``window_seconds`` / ``stride_seconds`` at ``sampling_rate`` Hz); each
  recording is its windows' group, unless ``group_pattern`` finds another id in its file name.

Reading and its errors: `zoo.training.data.windows`. What the task adds:

* class names from the labels, sorted (numerically for integer labels), as Keras's
  ``*_dataset_from_directory`` sorts its class folders; class id = position in that list;
* splits by whole groups when the data has groups, else stratified by class: ``test_fraction``
  of them first (default 0: the run's test split is then its validation split, and your own
  test file is scored with ``zoo eval RUN --data-dir TEST``), then the validation split from the
  rest: ``val_fold`` [k, n] (every n-th sorted group from the
  k-th, as HAR's subject folds and ``zoo sweep cv``) or ``val_fraction`` (drawn with
  ``split_seed``, as HAR draws its validation subjects);
* the normalisation from the training split only; the rotation augmentation's sensors from
  ``sensors``; ``frames_per_step`` (`zoo.training.tasks.frames`).

The data fixes two options, ``class_names`` and ``window_shape``: the trainer records them in the
run's config (`options_from_data`, as for ``audio_folder``), so that ``zoo eval`` and ``zoo
export`` rebuild the task without the training data, and a test file with a class the run does
not know is refused.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from pathlib import Path
from typing import Any

import numpy as np

from zoo.training.data.errors import DataError
from zoo.training.data.sensor_names import sensors_from_channel_names
from zoo.training.data.windows import CsvOptions, Windows, read_windows
from zoo.training.tasks.base import (Normalization, Split, Task, TaskData, check_fold,
                                     check_fraction, check_seed, register_task)
from zoo.training.tasks.frames import AUTO as AUTO_FRAMES
from zoo.training.tasks.frames import DEFAULT_FRAMES_PER_STEP, FramesPerStep

_log = logging.getLogger(__name__)
AUTO = "auto"  # option sensors: from the channel names


@register_task("windows")
class WindowsTask(FramesPerStep, Task):
    """The user's labelled windows (module doc). Options:

    Args:
        class_names: the classes in order (default: the sorted labels of the data; the run
            records them). A label outside them is refused.
        window_shape: ``[T, C]`` of a window (default: the data's; the run records it).
        window: samples per window of a CSV recording (default 128).
        stride: samples between window starts (default ``window // 2``: half overlap).
        window_seconds, stride_seconds: the same in seconds, with ``sampling_rate`` (Hz);
            rounded to whole samples; override ``window`` / ``stride``.
        sampling_rate: the recordings' rate in Hz (needed only for the ``*_seconds`` options).
        columns: the CSV columns to read, names of the header or 0-based indices (default all).
        delimiter: the CSV field separator (default ``","``).
        group_pattern: a regex searched in each CSV file's name; its first group (or the whole
            match) is the recording's group, e.g. ``"subject(\\d+)"`` (default: the recording).
        sensors: the channels a rotation turns together: a list whose items are xyz triples of
            channel indices (``[[0, 1, 2], [3, 4, 5]]``: two sensors, each turned by its own
            rotation) or lists of triples (``[[[0, 1, 2], [3, 4, 5]]]``: accelerometer and
            gyroscope of one device, turned together); ``auto`` (default): found from the
            ``.npz``'s ``channels`` names (``acc_x, acc_y, acc_z``...:
            `zoo.training.data.sensor_names`); ``[]``: none. Used by ``--augment rotation=...``
            (the recipes' rotation is skipped, with a warning, when ``auto`` finds none).
        val_fraction: the share of groups (else of each class's windows) held out for validation
            (default 0.2; 0: none).
        val_fold: ``[k, n]``: validation = fold k of n (overrides ``val_fraction``).
        test_fraction: the share held out for the run's test split (default 0: the validation
            split is the test split; score your own test file with ``zoo eval``).
        split_seed: seed of the draws (default 0).
        frames_per_step: samples the recurrent step reads at once (a divisor of T; default 1), or
            ``auto``: the fewest that bring a window to at most 32 steps (`frames.AUTO_MAX_STEPS`;
            128 samples: 4 a step, 125: 5); the run records the number it chose.
        channels: the channel names of the training data, in order (fixed when a run starts,
            when the data names them); a test file naming other channels, or the same in
            another order, is refused.
        train_data: the file or folder the run trained on (fixed when a run starts): ``zoo
            eval`` of it scores the run's held-out split, never the windows trained on.

    Example:

    ```python
    from zoo.training.tasks import get_task
    data = get_task("windows", val_fraction=0.25).load("my_windows.npz")
    ```
    """

    description = "your own labelled sensor windows: an .npz (X, y, groups) or CSV recordings"
    paper_split = ("by whole groups (subjects, recordings) when the data has them, else "
                   "stratified by class: test_fraction, then val_fold / val_fraction")
    DEFAULTS = {"class_names": None, "window_shape": None, "window": 128, "stride": None,
                "window_seconds": None, "stride_seconds": None, "sampling_rate": None,
                "columns": None, "delimiter": ",", "group_pattern": None, "sensors": "auto",
                "val_fraction": 0.2, "val_fold": None, "test_fraction": 0.0, "split_seed": 0,
                "frames_per_step": DEFAULT_FRAMES_PER_STEP, "channels": None, "train_data": None}

    # ------------------------------------------------------------------------- options

    def _validate(self) -> None:
        o = self._options
        check_fraction("val_fraction", o["val_fraction"])
        check_fraction("test_fraction", o["test_fraction"])
        if o["val_fraction"] + o["test_fraction"] >= 1:
            raise ValueError(f"options val_fraction {o['val_fraction']} and test_fraction "
                             f"{o['test_fraction']} leave nothing to train on: their sum must "
                             "be below 1")
        check_seed("split_seed", o["split_seed"])
        o["val_fold"] = check_fold("val_fold", o["val_fold"])
        o["class_names"] = _check_class_names(o["class_names"])
        o["window_shape"] = _check_shape(o["window_shape"])
        for name in ("window", "stride"):
            _check_count(name, o[name], none_ok=name == "stride")
        for name in ("window_seconds", "stride_seconds", "sampling_rate"):
            _check_positive(name, o[name])
        if (o["window_seconds"] or o["stride_seconds"]) and not o["sampling_rate"]:
            raise ValueError("options window_seconds / stride_seconds need sampling_rate (the "
                             "recordings' samples per second, e.g. sampling_rate=50)")
        o["columns"] = _check_columns(o["columns"])
        if o["channels"] is not None and (not isinstance(o["channels"], (list, tuple)) or not all(
                isinstance(c, str) for c in o["channels"])):
            raise ValueError(f"option channels must be a list of channel names, got "
                             f"{o['channels']!r}")
        if not isinstance(o["delimiter"], str) or len(o["delimiter"]) != 1:
            raise ValueError(f"option delimiter must be one character, e.g. ',' or ';', got "
                             f"{o['delimiter']!r}")
        _check_pattern(o["group_pattern"])
        o["sensors"] = _check_sensors(o["sensors"], o["window_shape"])
        if o["frames_per_step"] != AUTO_FRAMES:
            _check_count("frames_per_step", o["frames_per_step"])
        if o["window_shape"]:
            o["frames_per_step"] = self.frames_per_step  # a divisor of T (FramesPerStep)

    @property
    def window_shape(self) -> tuple[int, int]:
        shape = self._options["window_shape"]
        if shape is None:
            raise ValueError("task windows: the window shape comes from the data; load it "
                             "first (task.load(PATH)) or set option window_shape=[T, C]")
        return tuple(shape)

    @property
    def window_sensors(self):
        sensors = self._options["sensors"]
        return () if sensors == AUTO else sensors or ()

    @property
    def sensors_optional(self) -> bool:
        """True when the sensors were left to the channel names (``auto``): a rotation the
        recipe asks for is then skipped on data whose names form no sensor
        (`zoo.training.trainer.augmenter`)."""
        return self._options["sensors"] == AUTO or getattr(self, "_sensors_from_names", False)

    @property
    def class_names(self) -> list[str]:
        return list(self._options["class_names"] or [])

    def csv_options(self) -> CsvOptions:
        """Window and stride in samples (seconds converted at ``sampling_rate``)."""
        o = self._options
        window = _samples("window_seconds", o["window_seconds"], o["sampling_rate"]) \
            if o["window_seconds"] else o["window"]
        stride = (_samples("stride_seconds", o["stride_seconds"], o["sampling_rate"])
                  if o["stride_seconds"] else o["stride"] or max(1, window // 2))
        columns = tuple(o["columns"]) if o["columns"] is not None else None
        return CsvOptions(window, stride, columns, o["delimiter"], o["group_pattern"])

    def describe(self) -> dict[str, Any]:
        if self._options["window_shape"] is not None:
            return super().describe()
        return {"name": self.name, "input_shape": (None, None),
                "num_classes": len(self.class_names), "kind": self.kind,
                "description": self.description,
                "class_names": self.class_names, "paper_split": self.paper_split}

    # ------------------------------------------------------------------------- the data

    def options_from_data(self, data_dir) -> dict[str, Any]:
        """``class_names`` and ``window_shape`` as the data at ``data_dir`` gives them (those set
        already are kept); the trainer records them in the run's task options."""
        windows = self._read(data_dir)
        _check_two_classes(windows)
        found = {"class_names": label_names(windows.labels, windows.source),
                 "window_shape": [int(windows.x.shape[1]), int(windows.x.shape[2])],
                 "channels": windows.channels if _named(windows.channels) else None,
                 "train_data": str(Path(data_dir).expanduser().resolve())}
        return {k: v for k, v in found.items() if self._options[k] is None and v is not None}

    def _read(self, data_dir) -> Windows:
        if data_dir is None:
            raise ValueError("task windows reads your data: --data-dir PATH, an .npz of windows "
                             "or a folder PATH/<class>/<recording>.csv")
        return _read_once(Path(data_dir).expanduser(), self.csv_options())

    def _learn(self, windows: Windows) -> None:
        """Take the options the data fixes, where unset, and check the others against it."""
        o = self._options
        shape = [int(windows.x.shape[1]), int(windows.x.shape[2])]
        if o["window_shape"] is None:
            o["window_shape"] = shape
        elif o["window_shape"] != shape:
            raise DataError(f"{windows.source}: windows of {shape[0]} steps x {shape[1]} "
                            f"channels; this task (the run) takes {o['window_shape'][0]} x "
                            f"{o['window_shape'][1]} (option window_shape)")
        _check_channels(windows, o["channels"])
        if o["class_names"] is None:
            _check_two_classes(windows)
            o["class_names"] = label_names(windows.labels, windows.source)
        _warn_long(windows)
        if len(o["class_names"]) < 2:
            raise DataError(f"{windows.source}: one class only ({o['class_names'][0]!r}); a "
                            "classifier needs at least two")
        o["frames_per_step"] = self.frames_per_step  # now that T is known: a divisor of it
        if o["sensors"] == AUTO:
            self._sensors_from_names = True
            o["sensors"] = sensors_from_channel_names(windows.channels) or None
            _log.info("%s: sensors from the channel names: %s", windows.source,
                      o["sensors"] or "none (no acc/gyro/mag x, y, z names)")
        o["sensors"] = _check_sensors(o["sensors"], o["window_shape"])

    def _class_ids(self, windows: Windows) -> np.ndarray:
        """Each window's class id; a label the classes do not hold is refused, named."""
        index = {name: i for i, name in enumerate(self.class_names)}
        names = windows.labels.astype(str)
        unknown = sorted(set(names.tolist()) - set(index), key=_label_key)
        if unknown:
            first = int(np.flatnonzero(names == unknown[0])[0])
            where = (f"recording {windows.recordings[first]}" if windows.recordings is not None
                     else f"window {first}")
            raise DataError(f"{windows.source}: class {unknown[0]!r} ({where}) is not one of "
                            f"the run's classes {self.class_names}"
                            + (f" (also unknown: {unknown[1:]})" if len(unknown) > 1 else ""))
        return np.array([index[n] for n in names.tolist()], dtype=np.int64)

    def _load(self, data_dir, *, seed: int) -> TaskData:
        windows = self._read(data_dir)
        self._learn(windows)
        y = self._class_ids(windows)
        _check_class_sizes(windows, y, self.class_names)
        o = self._options
        parts = split_windows(y, windows.groups, test_fraction=o["test_fraction"],
                              val_fraction=o["val_fraction"], val_fold=o["val_fold"],
                              seed=o["split_seed"], source=windows.source)
        train, val, test = (Split(windows.x[idx], y[idx]) for idx in parts.indices)
        if not o["test_fraction"]:
            # No windows held out for testing: the run's test score and the export's int8
            # checks use the validation windows, the only ones the weights were not fitted on.
            test = val
            _log.info("%s: no test_fraction, so the run's test split is its validation split; "
                      "score your own test windows with zoo eval RUN --data-dir PATH",
                      windows.source)
        _warn_missing_classes(y[parts.indices[0]], self.class_names, windows.source)
        info = {**parts.info, "channels": windows.channels, "class_names": self.class_names,
                "windows": {s: int(len(i)) for s, i in zip(("train", "val", "test"),
                                                            parts.indices)}}
        return TaskData(train, val, test, Normalization.fit(train.x), windows.source, info)

    def evaluation_split(self, data_dir, *, seed: int = 0) -> Split:
        """What ``zoo eval RUN --data-dir PATH`` scores: every window of ``PATH`` (its groups
        ignored), as the model takes them; a class the run does not know is refused. The
        run's own training data (option ``train_data``) gives its held-out test split instead:
        the windows trained on are never scored as test."""
        if self._is_training_data(data_dir):
            return self._held_out_test(data_dir, seed)
        windows = self._read(data_dir)
        if self._options["class_names"] is None or self._options["window_shape"] is None:
            raise ValueError("task windows: evaluation needs the run's class_names and "
                             "window_shape (recorded in its config.yaml)")
        self._learn(windows)
        y = self._class_ids(windows)
        n, steps, channels = windows.x.shape
        k = self.frames_per_step
        return Split(windows.x.reshape(n, steps // k, channels * k), y)


    def _is_training_data(self, data_dir) -> bool:
        trained_on = self._options["train_data"]
        return (data_dir is not None and trained_on is not None
                and str(Path(data_dir).expanduser().resolve()) == trained_on)

    def _held_out_test(self, data_dir, seed: int) -> Split:
        """The run's test split of its own training data (its validation split when it held
        out no test windows), refused when empty; said in the log."""
        data = self.load(data_dir, seed=seed)
        if not len(data.test.x):
            raise DataError(f"{data_dir} is the run's training data and the run held out no "
                            "test windows (one group, or val_fraction 0); pass --data-dir with "
                            "your own test windows")
        _log.info("%s is the run's training data: scoring its %d held-out windows (the run's "
                  "test split), not the %d it trained on", data_dir, len(data.test.x),
                  len(data.train.x))
        return Split(data.test.x, data.test.y)


# ----------------------------------------------------------------------------- splitting


@dataclasses.dataclass
class SplitParts:
    """Indices of the train, validation and test windows (``indices``) and what was held out
    (``info``: the groups of each split, or that the split is stratified)."""

    indices: list[np.ndarray]
    info: dict


def split_windows(y: np.ndarray, groups, *, test_fraction: float, val_fraction: float,
                  val_fold, seed: int, source: str = "the data") -> SplitParts:
    """Train / validation / test indices: by whole groups when ``groups`` is given, else
    stratified by class (the module doc says how)."""
    if groups is not None:
        return _split_by_group(groups, test_fraction, val_fraction, val_fold, seed, source)
    return _split_by_class(y, test_fraction, val_fraction, val_fold, seed, source)


def _split_by_group(groups, test_fraction, val_fraction, val_fold, seed, source) -> SplitParts:
    ids = sorted(set(groups.tolist()), key=_label_key)
    test = draw(ids, test_fraction, np.random.default_rng([seed, 1]))
    rest = [g for g in ids if g not in set(test)]
    if val_fold:
        k, n = val_fold
        if n > len(rest):
            raise DataError(f"{source}: option val_fold={val_fold} asks for {n} folds of "
                            f"{len(rest)} group(s) {_short(rest)}; at most {len(rest)} folds "
                            "(each holds out at least one whole group)")
        val = rest[k::n]
    else:
        val = draw(rest, val_fraction, np.random.default_rng(seed))
        if val_fraction > 0 and not val:
            _log.warning("%s: one group only (%s): no validation split, so no early stopping",
                         source, rest[0])
    held = set(test) | set(val)
    train_ids = [g for g in ids if g not in held]
    member = {g: i for i, g in enumerate(ids)}
    code = np.array([member[g] for g in groups.tolist()])
    pick = [np.flatnonzero(np.isin(code, [member[g] for g in part]))
            for part in (train_ids, val, test)]
    info = {"train_groups": train_ids, "val_groups": list(val), "test_groups": list(test)}
    return SplitParts(pick, info)


def draw(ids: list, fraction: float, rng: np.random.Generator) -> list:
    """``round(fraction * n)`` of the sorted ``ids`` (at least 1 when fraction > 0, at most
    n - 1), drawn with ``rng.choice`` as `zoo.training.tasks.base.pick_val_subjects` draws
    HAR's validation subjects (the same subjects for the same seed)."""
    if fraction <= 0 or len(ids) < 2:
        return []
    k = min(len(ids) - 1, max(1, round(fraction * len(ids))))
    chosen = rng.choice(len(ids), size=k, replace=False)
    return sorted((ids[int(i)] for i in chosen), key=_label_key)


def _split_by_class(y, test_fraction, val_fraction, val_fold, seed, source) -> SplitParts:
    order = np.random.default_rng(seed).permutation(len(y))
    parts = ([], [], [])
    for c in np.unique(y):
        mine = order[y[order] == c]
        n_test = _share(len(mine), test_fraction)
        rest = mine[n_test:]
        if val_fold:
            k, n = val_fold
            if n > len(rest):
                raise DataError(f"{source}: option val_fold={val_fold}: class {int(c)} has "
                                f"{len(rest)} window(s), fewer than the {n} folds (the data "
                                "has no groups, so each class's windows are folded)")
            val = rest[k::n]
        else:
            val = rest[:_share(len(rest), val_fraction)]
        parts[0].append(np.setdiff1d(rest, val))
        parts[1].append(val)
        parts[2].append(mine[:n_test])
    pick = [np.sort(np.concatenate(p)).astype(np.int64) for p in parts]
    info = {"stratified": True, "val_fold": val_fold}
    return SplitParts(pick, info)


def _share(n: int, fraction: float) -> int:
    """``round(fraction * n)``, at least 1 when fraction > 0, at most n - 1 (0 for n < 2)."""
    if fraction <= 0 or n < 2:
        return 0
    return min(n - 1, max(1, round(fraction * n)))


# ----------------------------------------------------------------------------- helpers


def label_names(labels: np.ndarray, source: str = "the data") -> list[str]:
    """The class names of ``labels``: their distinct values as text, sorted (integers by value).
    Two texts of one number (``'1'`` and ``'01'``) would tie in that order: refused, named."""
    names = sorted({str(v) for v in labels.tolist()}, key=_label_key)
    for a, b in zip(names, names[1:]):
        if _label_key(a)[:2] == _label_key(b)[:2] and _label_key(a)[0] == 0:
            raise DataError(f"{source}: labels {a!r} and {b!r} are two classes written as the "
                            "same number, so their order is ambiguous; write each class one "
                            "way (e.g. all without leading zeros)")
    return names


def _label_key(value):
    """Integers (and their text) by value, before any other text, which sorts as text; two
    texts of one number by their text (`label_names` refuses them as classes)."""
    text = str(value)
    return (0, int(text), text) if re.fullmatch(r"-?\d+", text) else (1, 0, text)


def _check_two_classes(windows: Windows) -> None:
    """Data of one class: said of the data (naming the file and the class), not of the
    class_names option the user never set."""
    found = label_names(windows.labels, windows.source)
    if len(found) < 2:
        raise DataError(f"{windows.source}: every window has the label {found[0]!r}; a "
                        "classifier needs windows of at least two classes")


LONG_WINDOW = 5000  # steps: beyond, an epoch of a recurrent cell takes minutes on a CPU


def _warn_long(windows: Windows) -> None:
    steps = int(windows.x.shape[1])
    if steps > LONG_WINDOW:
        _log.warning("%s: windows of %d steps: the recurrent cell steps %d times per window, "
                     "so an epoch of %d windows may take minutes before its first line; "
                     "shorter windows, or frames_per_step=K (K samples a step), go faster",
                     windows.source, steps, steps, len(windows.x))


def _named(channels: list[str]) -> bool:
    """Whether the data named its channels (not the reader's ``channel_i`` / ``column_i``)."""
    return not all(re.fullmatch(r"(channel|column)_\d+", c) for c in channels)


def _check_channels(windows: Windows, trained: list | None) -> None:
    """Windows whose named channels differ from training's (other names, another order) would
    be scored as if they were the same sensors: refused, naming both."""
    if trained is not None and _named(windows.channels) and list(trained) != windows.channels:
        how = ("the same channels in another order" if sorted(trained) == sorted(windows.channels)
               else "other channels")
        raise DataError(f"{windows.source}: channels {windows.channels} differ from the run's "
                        f"{list(trained)} ({how}); give X the channels of training, in its "
                        "order")


def _short(ids: list) -> str:
    return str(ids) if len(ids) <= 12 else f"[{', '.join(map(str, ids[:12]))}, ...]"


def _check_class_sizes(windows: Windows, y: np.ndarray, names: list[str]) -> None:
    counts = np.bincount(y, minlength=len(names))
    present = [i for i in range(len(names)) if counts[i]]
    small = [i for i in present if counts[i] < 2]
    if small:
        raise DataError(f"{windows.source}: class {names[small[0]]!r} has {counts[small[0]]} "
                        "window; every class needs at least two (one to train on, one to "
                        "check), add data or leave the class out")


def _warn_missing_classes(y_train: np.ndarray, names: list[str], source: str) -> None:
    missing = [names[i] for i in sorted(set(range(len(names))) - set(y_train.tolist()))]
    if missing:
        _log.warning("%s: the training split holds no window of class(es) %s (all their "
                     "groups are held out); the model cannot learn them", source, missing)


_CACHE: dict[str, Any] = {}


def _read_once(path: Path, options: CsvOptions) -> Windows:
    """`read_windows`, remembered for the last (path, files' sizes and times, options): the
    trainer reads the data's classes before it loads the splits."""
    key = (str(path.resolve()), _signature(path), options)
    if _CACHE.get("key") != key:
        _CACHE.clear()
        _CACHE.update(key=key, windows=read_windows(path, options))
    return _CACHE["windows"]


def _signature(path: Path) -> tuple:
    try:
        files = [path] if not path.is_dir() else sorted(p for p in path.rglob("*") if p.is_file())
        return tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    except OSError:
        return ()


def _samples(name: str, seconds: float, rate: float) -> int:
    samples = max(1, round(seconds * rate))
    if abs(samples - seconds * rate) > 1e-6:
        _log.info("option %s=%g at %g Hz is %g samples: %d used", name, seconds, rate,
                  seconds * rate, samples)
    return samples


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _check_count(name: str, value, none_ok: bool = False) -> None:
    if not ((none_ok and value is None) or (_is_int(value) and value >= 1)):
        raise ValueError(f"option {name} must be an integer >= 1 (samples), got {value!r}")


def _check_positive(name: str, value) -> None:
    ok = value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                           and np.isfinite(value) and value > 0)
    if not ok:
        raise ValueError(f"option {name} must be a number > 0, got {value!r}")


def _check_class_names(value):
    if value is None:
        return None
    if (not isinstance(value, (list, tuple)) or len(value) < 2
            or len({str(v) for v in value}) != len(value)):
        raise ValueError(f"option class_names must be a list of at least two different class "
                         f"names, got {value!r}")
    return [str(v) for v in value]


def _check_shape(value):
    if value is None:
        return None
    if not (isinstance(value, (list, tuple)) and len(value) == 2
            and all(_is_int(v) and v >= 1 for v in value)):
        raise ValueError(f"option window_shape must be [T, C], two integers >= 1, got {value!r}")
    return [int(v) for v in value]


def _check_columns(value):
    if value is None:
        return None
    ok = isinstance(value, (list, tuple)) and value and all(
        isinstance(v, str) or (_is_int(v) and v >= 0) for v in value)
    if not ok or len(set(value)) != len(value):
        raise ValueError(f"option columns must be a list of different column names or 0-based "
                         f"indices, e.g. [acc_x, acc_y, acc_z] or [1, 2, 3], got {value!r}")
    return list(value)


def _check_pattern(value) -> None:
    if value is None:
        return
    try:
        re.compile(value)
    except (re.error, TypeError) as err:
        raise ValueError(f"option group_pattern must be a regular expression (e.g. "
                         f"'subject(\\d+)'), got {value!r}: {err}") from None


def _check_sensors(value, shape):
    """``sensors`` as a tuple of devices, each a tuple of xyz triples (channel indices below C
    when the window shape is known); None stays None, ``auto`` stays ``auto``."""
    if value is None or value == []:
        return None
    if value == AUTO:
        return AUTO
    valid = ("'auto' (from the channel names), a list of xyz triples of channel indices "
             "([[0, 1, 2], [3, 4, 5]]: each its own sensor) or of lists of triples "
             "([[[0, 1, 2], [3, 4, 5]]]: turned together)")
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"option sensors must be {valid}, got {value!r}")
    devices = []
    for item in value:
        triples = [item] if _is_triple(item) else item
        if not (isinstance(triples, (list, tuple)) and triples and all(map(_is_triple, triples))):
            raise ValueError(f"option sensors must be {valid}, got {value!r}")
        devices.append(tuple(tuple(int(i) for i in t) for t in triples))
    flat = [i for d in devices for t in d for i in t]
    if len(set(flat)) != len(flat):
        raise ValueError(f"option sensors names a channel twice: {value!r}")
    if shape is not None and max(flat) >= shape[1]:
        raise ValueError(f"option sensors names channel {max(flat)}, but a window has "
                         f"{shape[1]} channels (0..{shape[1] - 1})")
    return [[list(t) for t in d] for d in devices]


def _is_triple(item) -> bool:
    return (isinstance(item, (list, tuple)) and len(item) == 3
            and all(_is_int(i) and i >= 0 for i in item))


__all__ = ["WindowsTask", "split_windows", "draw", "label_names"]
