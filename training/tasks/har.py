"""HAR-6 and HAR-2 from UCI HAR's raw ``Inertial Signals`` (9 channels x 128 steps at 50 Hz).

Channel order (as the iRNN and FastGRNN papers' code reads it): body_acc x,y,z; body_gyro x,y,z; total_acc x,y,z.
Train and test are the official subject-disjoint files (21 / 9 subjects). Validation is held out
of the official training split by whole subjects (no subject in two splits), see `HARTask`.
HAR-2 merges {Sitting, Laying, Walking_Upstairs} = UCI labels {2,4,6} -> class 1 against
{Standing, Walking, Walking_Downstairs} = {1,3,5} -> class 0 (FastGRNN App. B), i.e.
``y2 = (y6 % 2 == 0)``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from zoo.training.data.cache import cache_key, cached_arrays
from zoo.training.data.errors import DataError
from zoo.training.data.sources import Archive, DatasetSpec, fingerprint, locate
from zoo.training.data.textio import parse_int_column, parse_table
from zoo.training.tasks.base import (Normalization, Split, Task, TaskData, check_fold,
                                 check_fraction, check_seed, check_subjects, fold_subjects,
                                 pick_val_subjects, register_task)
from zoo.training.tasks.frames import DEFAULT_FRAMES_PER_STEP, FramesPerStep

SPEC = DatasetSpec(
    key="uci_har",
    title="UCI HAR Dataset (Human Activity Recognition Using Smartphones)",
    marker="train/Inertial Signals",
    folders=("UCI HAR Dataset", "har/UCI HAR Dataset"),
    archives=(
        Archive("UCI HAR Dataset.zip",
                "https://archive.ics.uci.edu/ml/machine-learning-databases/00240/UCI%20HAR%20Dataset.zip",
                sha256="2045e435c955214b38145fb5fa00776c72814f01b203fec405152dac7d5bfeb0",
                checksum_source="JuliaML DataDeps registration of this URL; also pinned by several "
                                "independent projects"),
        # The current UCI page serves a zip that wraps the one above (plus a .names file).
        Archive("human+activity+recognition+using+smartphones.zip",
                "https://archive.ics.uci.edu/static/public/240/human+activity+recognition+using+smartphones.zip",
                sha256="c00b803081a5c797cd5e4b83700a9810b38d53d9d84e01917e090e1fdbc81031",
                checksum_source="several independent projects pin it; its inner zip has the sha256 above"),
    ),
    homepage="https://archive.ics.uci.edu/dataset/240/human+activity+recognition+using+smartphones",
)

CHANNELS = tuple(f"{s}_{a}" for s in ("body_acc", "body_gyro", "total_acc") for a in "xyz")
ACTIVITIES = ("WALKING", "WALKING_UPSTAIRS", "WALKING_DOWNSTAIRS", "SITTING", "STANDING", "LAYING")
STEPS = 128


def _split_files(folder: Path, split: str) -> dict[str, Path]:
    files = {c: folder / split / "Inertial Signals" / f"{c}_{split}.txt" for c in CHANNELS}
    files["y"] = folder / split / f"y_{split}.txt"
    files["subject"] = folder / split / f"subject_{split}.txt"
    return files


def _read_split(folder: Path, split: str) -> dict[str, np.ndarray]:
    files = _split_files(folder, split)
    y = parse_int_column(files["y"], valid=range(1, 7))
    subject = parse_int_column(files["subject"], valid=range(1, 31))
    if len(subject) != len(y):
        raise DataError(f"labels and subjects differ in length: {files['y']} has {len(y)} lines, "
                        f"{files['subject']} has {len(subject)}")
    x = np.empty((len(y), STEPS, len(CHANNELS)), dtype=np.float32)
    for i, c in enumerate(CHANNELS):
        table = parse_table(files[c], STEPS)
        if len(table) != len(y):
            raise DataError(f"labels and signals differ in length: {files['y']} has {len(y)} lines, "
                            f"{files[c]} has {len(table)}")
        x[:, :, i] = table
    return {f"x_{split}": x, f"y_{split}": y, f"subject_{split}": subject}


def load_har_arrays(data_dir=None) -> tuple[dict[str, np.ndarray], str, bool]:
    """Official train/test arrays (labels 1..6, subject ids), cached; returns (arrays, source, hit)."""
    located = locate(SPEC, data_dir)
    if located.is_archive:
        fp = located.archive_fingerprint()
    else:
        files = [f for s in ("train", "test") for f in _split_files(located.path, s).values()]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise DataError(f"{located.path}: incomplete UCI HAR folder, missing {', '.join(missing)}")
        fp = fingerprint(files, located.path)
    key = cache_key(dataset=SPEC.key, source=fp, channels=CHANNELS)

    def compute():
        folder = located.folder()
        return {**_read_split(folder, "train"), **_read_split(folder, "test")}

    arrays, hit = cached_arrays(SPEC.key, key, compute)
    return arrays, located.source, hit


class HARTask(FramesPerStep, Task):
    """UCI HAR windows, 128 x 9, z-normalised with training statistics.

    Options:
        val_fraction: share of the official training *subjects* held out for validation
            (default 0.2, the 80/20 tuning protocol of FastGRNN/iRNN; 0 = no validation, to
            retrain on the full training split). ``round(0.2 * 21) = 4`` subjects on full data.
        val_subjects: explicit validation subject ids (overrides ``val_fold`` and
            ``val_fraction``).
        val_fold: ``[k, n]``: hold out fold k of n of the training subjects present (every n-th
            sorted id from the k-th; overrides ``val_fraction``). ``[1, 5]`` on the full data is
            subjects 3, 11, 19, 26. Folds are how the real-scale benchmark cross-validates.
        split_seed: seed of the subject draw (``numpy.random.default_rng(split_seed).choice``
            over the sorted training subject ids).
        frames_per_step: samples the recurrent step reads at once (default 1; a divisor of
            128): windows of 128 / k steps of 9 k features (`zoo.training.tasks.frames`).
    """

    DEFAULTS = {"val_fraction": 0.2, "val_subjects": None, "val_fold": None, "split_seed": 0,
                "frames_per_step": DEFAULT_FRAMES_PER_STEP}
    window_shape = (STEPS, len(CHANNELS))
    rows_per_second, window_seconds = 50.0, 2.56  # 128 samples at 50 Hz
    # One phone: body_acc, body_gyro and total_acc turn together.
    window_sensors = (((0, 1, 2), (3, 4, 5), (6, 7, 8)),)
    paper_split = ("official UCI HAR split: train subjects (7,352 windows) / test subjects "
                   "(2,947); validation = whole training subjects held out (val_fraction, split_seed)")

    def _validate(self):
        check_fraction("val_fraction", self._options["val_fraction"])
        check_seed("split_seed", self._options["split_seed"])
        vs = self._options["val_subjects"]
        if vs is not None:
            self._options["val_subjects"] = check_subjects("val_subjects", vs)
        self._options["val_fold"] = check_fold("val_fold", self._options["val_fold"])
        self._options["frames_per_step"] = self.frames_per_step  # checked by FramesPerStep

    def _labels(self, y6: np.ndarray) -> np.ndarray:
        return (y6 - 1).astype(np.int64)

    def _load(self, data_dir, *, seed: int) -> TaskData:
        a, source, hit = load_har_arrays(data_dir)
        train_subjects = sorted(set(a["subject_train"].tolist()))
        val_subjects = self._options["val_subjects"]
        if val_subjects is None and self._options["val_fold"]:
            val_subjects = fold_subjects(train_subjects, self._options["val_fold"])
        elif val_subjects is None:
            val_subjects = pick_val_subjects(train_subjects, self._options["val_fraction"],
                                             self._options["split_seed"])
        elif not set(val_subjects) < set(train_subjects):
            raise ValueError(f"option val_subjects={val_subjects} must be a proper subset of the "
                             f"training subjects {train_subjects}")
        is_val = np.isin(a["subject_train"], val_subjects)
        y_train, y_test = self._labels(a["y_train"]), self._labels(a["y_test"])
        train = Split(a["x_train"][~is_val], y_train[~is_val])
        val = Split(a["x_train"][is_val], y_train[is_val])
        test = Split(a["x_test"], y_test)
        info = {"train_subjects": [s for s in train_subjects if s not in val_subjects],
                "val_subjects": list(val_subjects),
                "test_subjects": sorted(set(a["subject_test"].tolist())),
                "channels": list(CHANNELS), "cache_hit": hit}
        return TaskData(train, val, test, Normalization.fit(train.x), source, info)


@register_task("har6")
class HAR6(HARTask):
    description = "UCI HAR, 6 activities from the 9 raw inertial channels (128 x 9)"
    class_names = list(ACTIVITIES)


@register_task("har2")
class HAR2(HARTask):
    description = ("UCI HAR merged to 2 classes: {walking, walking downstairs, standing} vs "
                   "{walking upstairs, sitting, laying} (128 x 9)")
    class_names = ["WALKING+WALKING_DOWNSTAIRS+STANDING", "WALKING_UPSTAIRS+SITTING+LAYING"]

    def _labels(self, y6: np.ndarray) -> np.ndarray:
        return (y6 % 2 == 0).astype(np.int64)  # UCI {2,4,6} -> 1, {1,3,5} -> 0
