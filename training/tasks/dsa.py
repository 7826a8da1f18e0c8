"""DSA-19: UCI Daily and Sports Activities, 19 activities x 8 subjects x 60 segments of 5 s.

Each official file ``data/aXX/pY/sZZ.txt`` is one window of 125 lines (25 Hz) x 45 comma-separated
values: 5 units (torso, right arm, left arm, right leg, left leg) x (acc, gyro, mag) x (x, y, z).
FastGRNN and iRNN report a 4,560 / 4,560 split without pinning the rule; the zoo splits by
subject, p1-p4 train / p5-p8 test, which gives exactly 4,560 / 4,560 on the full data and keeps
subjects disjoint.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from zoo.training.data.cache import cache_key, cached_arrays
from zoo.training.data.errors import DataError
from zoo.training.data.sources import Archive, DatasetSpec, fingerprint, locate
from zoo.training.data.textio import parse_table
from zoo.training.tasks.base import (Normalization, Split, Task, TaskData, check_fold,
                                 check_fraction, check_seed, check_subjects, fold_subjects,
                                 pick_val_subjects, register_task)
from zoo.training.tasks.frames import DEFAULT_FRAMES_PER_STEP, FramesPerStep

SPEC = DatasetSpec(
    key="dsa19",
    title="UCI Daily and Sports Activities data (data/aXX/pY/sZZ.txt)",
    marker="a01",
    folders=("data", "dsa19/data"),
    archives=(
        Archive("data.zip", "https://archive.ics.uci.edu/ml/machine-learning-databases/00256/data.zip",
                sha256=None),  # no published checksum found
        Archive("daily+and+sports+activities.zip",
                "https://archive.ics.uci.edu/static/public/256/daily+and+sports+activities.zip",
                sha256=None),
    ),
    homepage="https://archive.ics.uci.edu/dataset/256/daily+and+sports+activities",
)

ACTIVITIES = (
    "sitting", "standing", "lying on back", "lying on right side", "ascending stairs",
    "descending stairs", "standing in an elevator", "moving around in an elevator",
    "walking in a parking lot", "walking on a treadmill 4 km/h flat",
    "walking on a treadmill 4 km/h 15 deg incline", "running on a treadmill 8 km/h",
    "exercising on a stepper", "exercising on a cross trainer", "cycling horizontal",
    "cycling vertical", "rowing", "jumping", "playing basketball",
)
STEPS, CHANNELS = 125, 45
_NAME = re.compile(r"^a(\d\d)/p(\d)/s(\d\d)\.txt$")


def _segment_files(folder: Path) -> list[tuple[Path, int, int, int]]:
    """All ``aXX/pY/sZZ.txt`` under ``folder`` as (path, activity, subject, segment), sorted.

    Any other ``.txt`` file below an activity folder is an error rather than silently skipped.
    """
    out = []
    for path in sorted(folder.glob("a*/**/*.txt")):
        rel = path.relative_to(folder).as_posix()
        m = _NAME.match(rel)
        if not m:
            raise DataError(f"{path}: unexpected file in the DSA-19 layout (expected aXX/pY/sZZ.txt)")
        a, p, s = map(int, m.groups())
        if not (1 <= a <= 19 and 1 <= p <= 8 and 1 <= s <= 60):
            raise DataError(f"{path}: activity/subject/segment out of range (a01-a19, p1-p8, s01-s60)")
        out.append((path, a, p, s))
    if not out:
        raise DataError(f"{folder}: no aXX/pY/sZZ.txt segment files found")
    return out


def load_dsa_arrays(data_dir=None) -> tuple[dict[str, np.ndarray], str, bool]:
    located = locate(SPEC, data_dir)
    if located.is_archive:
        fp = located.archive_fingerprint()
    else:
        fp = fingerprint([f[0] for f in _segment_files(located.path)], located.path)
    key = cache_key(dataset=SPEC.key, source=fp)

    def compute():
        files = _segment_files(located.folder())
        x = np.empty((len(files), STEPS, CHANNELS), dtype=np.float32)
        for i, (path, *_) in enumerate(files):
            x[i] = parse_table(path, CHANNELS, delimiter=",", nrows=STEPS)
        meta = np.array([f[1:] for f in files], dtype=np.int64)
        return {"x": x, "activity": meta[:, 0], "subject": meta[:, 1], "segment": meta[:, 2]}

    arrays, hit = cached_arrays(SPEC.key, key, compute)
    return arrays, located.source, hit


@register_task("dsa19")
class DSA19(FramesPerStep, Task):
    """Daily and Sports Activities, 19 classes, 125 x 45, split by subject.

    Options:
        train_subjects: subjects of the training split (default p1-p4; the rest is test).
        val_fraction: share of the training subjects held out for validation (default 0.2,
            i.e. 1 of 4 subjects; 0 = none).
        val_subjects: explicit validation subjects (overrides ``val_fold`` and ``val_fraction``).
        val_fold: ``[k, n]``: hold out fold k of n of the training subjects (every n-th sorted id
            from the k-th; overrides ``val_fraction``); ``[2, 4]`` with p1-p4 is p3.
        split_seed: seed of the validation-subject draw.
        allow_partial: accept a folder with whole subjects or activities missing (default:
            refused, naming them).
        frames_per_step: samples the recurrent step reads at once (default 1; a divisor of
            125): windows of 125 / k steps of 45 k features (`zoo.training.tasks.frames`).
    """

    DEFAULTS = {"train_subjects": (1, 2, 3, 4), "val_fraction": 0.2, "val_subjects": None,
                "val_fold": None, "split_seed": 0, "allow_partial": False, "frames_per_step": DEFAULT_FRAMES_PER_STEP}
    description = "UCI Daily and Sports Activities, 19 activities, 5 IMUs x 9 channels (125 x 45)"
    paper_split = ("subjects p1-p4 train / p5-p8 test (4,560 / 4,560 windows on the full data); "
                   "validation = whole training subjects held out (val_fraction, split_seed)")
    window_shape = (STEPS, CHANNELS)
    rows_per_second, window_seconds = 25.0, 5.0  # 125 samples at 25 Hz
    class_names = list(ACTIVITIES)
    # Five units of 9 channels each (acc, gyro, mag xyz), each unit its own sensor.
    window_sensors = tuple(tuple((9 * u + 3 * k, 9 * u + 3 * k + 1, 9 * u + 3 * k + 2)
                                 for k in range(3)) for u in range(5))

    def _validate(self):
        check_fraction("val_fraction", self._options["val_fraction"])
        check_seed("split_seed", self._options["split_seed"])
        if not isinstance(self._options["allow_partial"], bool):
            raise ValueError(f"option allow_partial must be true or false, got "
                             f"{self._options['allow_partial']!r}")
        ts = tuple(check_subjects("train_subjects", self._options["train_subjects"]))
        if not ts or not set(ts) < set(range(1, 9)):
            raise ValueError(f"option train_subjects must be a non-empty proper subset of 1..8, got {ts}")
        self._options["train_subjects"] = ts
        vs = self._options["val_subjects"]
        if vs is not None:
            vs = check_subjects("val_subjects", vs)
            if not set(vs) < set(ts):
                raise ValueError(f"option val_subjects={vs} must be a proper subset of train_subjects {ts}")
            self._options["val_subjects"] = vs
        self._options["val_fold"] = check_fold("val_fold", self._options["val_fold"])
        self._options["frames_per_step"] = self.frames_per_step  # checked by FramesPerStep

    def _check_complete(self, arrays: dict, source: str) -> None:
        """Refuse a folder with a whole subject or activity missing (each would silently shrink
        or empty a split) unless ``allow_partial``. Missing segments within a subject's
        activity are accepted: the official data has 60 each, small test subsets fewer."""
        if self._options["allow_partial"]:
            return
        gone_subjects = sorted(set(range(1, 9)) - set(arrays["subject"].tolist()))
        gone_activities = sorted(set(range(1, 20)) - set(arrays["activity"].tolist()))
        if gone_subjects or gone_activities:
            what = ([f"subject folder(s) {', '.join(f'p{s}' for s in gone_subjects)}"]
                    if gone_subjects else []) + (
                [f"activity folder(s) {', '.join(f'a{a:02d}' for a in gone_activities)}"]
                if gone_activities else [])
            raise DataError(f"{source}: DSA-19 is incomplete, no segment file for "
                            f"{' and '.join(what)} (expected a01-a19 x p1-p8). Restore them, or "
                            "pass --task-option allow_partial=true if a partial dataset is "
                            "intended (the splits then lack those subjects / classes).")

    def _load(self, data_dir, *, seed: int) -> TaskData:
        a, source, hit = load_dsa_arrays(data_dir)
        self._check_complete(a, source)
        ts = list(self._options["train_subjects"])
        vs = self._options["val_subjects"]
        if vs is None and self._options["val_fold"]:
            vs = fold_subjects(ts, self._options["val_fold"])
        elif vs is None:
            vs = pick_val_subjects(ts, self._options["val_fraction"], self._options["split_seed"])
        y = a["activity"] - 1
        in_train = np.isin(a["subject"], ts)
        is_val = np.isin(a["subject"], vs)
        tr, va, te = in_train & ~is_val, is_val, ~in_train
        train = Split(a["x"][tr], y[tr])
        info = {"train_subjects": [s for s in ts if s not in vs], "val_subjects": list(vs),
                "test_subjects": [s for s in range(1, 9) if s not in ts], "cache_hit": hit}
        return TaskData(train, Split(a["x"][va], y[va]), Split(a["x"][te], y[te]),
                        Normalization.fit(train.x), source, info)
