"""A user's ``.npz`` of sensor windows, made from the full UCI HAR training archive: how
``zoo train --task windows`` is measured on six-class windows of people outside the training set.

``--data-dir`` (the archive or its folder) -> ``OUT/train.npz`` (the official training subjects'
windows) and ``OUT/test.npz`` (the archive's test subjects'), each with ``X`` (N, 128, 9) raw
inertial signals, ``y`` the activity names (HAR-6), ``groups`` the subject ids and ``channels``,
as a user would save them (`numpy.savez`). Nothing of HAR is told to the task.

    python -m zoo.experiments.user_windows --data-dir ../shared/data/archives/uci_har_train_full.zip --out har6
    zoo train --task windows --model sirnn --data-dir har6/train.npz --out runs/har6
    zoo export runs/har6 --form c
    python -m zoo.experiments.user_windows --score runs/har6 --test har6/test.npz

``--dataset dsa19`` does the same for DSA-19 (its archive or folder): ``train.npz`` = persons
1-4, ``test.npz`` = persons 5-8 (what the data holds of them), ``X`` (N, 125, 45), ``y`` the
activity names, ``groups`` the person, ``channels`` ``<unit>_<sensor>_<axis>`` (``T_acc_x`` ...
``LL_mag_z``: torso, right arm, left arm, right leg, left leg; the archive's column order).

``--score`` prints the run's accuracy on every window of the test file: the Keras model (float,
``zoo eval``'s score), its int8 step export (``RUN/export-c-int8``, or ``--export``) run by LiteRT
step by step with the state fed back, and, when the export holds the C (``zoo export --form c``)
and a host ``cc`` is there, ``zoo_app`` built from it and run on the raw windows (a ``RAW ``
window file: the C normalizes and quantizes them itself).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np


def write_user_files(data_dir, out: Path) -> dict[str, int]:
    """``OUT/train.npz`` and ``OUT/test.npz`` (the module doc); the window count of each."""
    from zoo.training.tasks.har import ACTIVITIES, CHANNELS, load_har_arrays

    arrays, _, _ = load_har_arrays(data_dir)
    out.mkdir(parents=True)
    names = np.array(ACTIVITIES)
    for split in ("train", "test"):
        np.savez(out / f"{split}.npz", X=arrays[f"x_{split}"],
                 y=names[arrays[f"y_{split}"] - 1], groups=arrays[f"subject_{split}"],
                 channels=np.array(CHANNELS))
    return {s: len(arrays[f"y_{s}"]) for s in ("train", "test")}


# DSA-19's 45 columns: five units, each accelerometer, gyroscope, magnetometer x, y, z.
DSA_CHANNELS = tuple(f"{unit}_{sensor}_{axis}" for unit in ("T", "RA", "LA", "RL", "LL")
                     for sensor in ("acc", "gyro", "mag") for axis in "xyz")


def write_dsa_files(data_dir, out: Path) -> dict[str, int]:
    """DSA-19 as a user's ``OUT/train.npz`` (persons 1-4) and ``OUT/test.npz`` (persons 5-8);
    the window count of each."""
    from zoo.training.tasks.dsa import ACTIVITIES, load_dsa_arrays

    arrays, _, _ = load_dsa_arrays(data_dir)
    out.mkdir(parents=True)
    names = np.array(ACTIVITIES)
    counts = {}
    for split, persons in (("train", (1, 2, 3, 4)), ("test", (5, 6, 7, 8))):
        keep = np.isin(arrays["subject"], persons)
        np.savez(out / f"{split}.npz", X=arrays["x"][keep], y=names[arrays["activity"][keep] - 1],
                 groups=arrays["subject"][keep], channels=np.array(DSA_CHANNELS))
        counts[split] = int(keep.sum())
    return counts


def score(run: Path, test: Path, export: Path | None = None) -> dict:
    """Accuracy (%) of a finished windows run on every window of ``test``: float (Keras), int8
    (the step export, LiteRT) and C (``zoo_app``, when the export has its C and ``cc`` works)."""
    from zoo.export import device_runtime
    from zoo.export.c_backend.project import read_step_export
    from zoo.training.evaluate import evaluate_run, load_run

    report = evaluate_run(run, data_dir=test)
    record, _, norm = load_run(run)
    split = record.config.make_task().evaluation_split(test)
    export = Path(export or run / "export-c-int8")
    model = device_runtime.open_export(str(export), read_step_export(export), "litert", 1)
    x = norm.apply(split.x).astype("float32")
    int8 = np.array([np.argmax(model.predict(window)) for window in x])
    result = {"windows": len(x), "float": 100 * report["accuracy"],
              "int8": 100 * float(np.mean(int8 == split.y))}
    c_logits = _zoo_app_logits(export, split.x)
    if c_logits is not None:
        result["c"] = 100 * float(np.mean(c_logits.argmax(-1) == split.y))
        result["c_equals_int8"] = float(np.mean(c_logits.argmax(-1) == int8))
    return result


def _zoo_app_logits(export: Path, raw: np.ndarray):
    """zoo_app's int8 logits on the raw windows, built in a copy of the export's C (None when
    the export has no C or no host compiler)."""
    from zoo.export.c_backend import c_names
    from zoo.export.c_backend.check import build, run_app

    if not (export / "Makefile").is_file() or not (export / c_names(export)[2]).is_file() \
            or shutil.which("cc") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        c_dir = Path(shutil.copytree(export, Path(tmp) / "c"))
        logits, _ = run_app(build(c_dir), raw.astype(np.float32), "raw", state=False)
    return logits


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("--score", type=Path, help="a finished windows run to score on --test")
    parser.add_argument("--test", type=Path, help="the test .npz (or CSV folder) for --score")
    parser.add_argument("--export", type=Path, help="the run's int8 step or C export to score "
                        "(default RUN/export-c-int8)")
    parser.add_argument("--data-dir", help="the UCI HAR archive or folder (e.g. "
                        "shared/data/archives/uci_har_train_full.zip)")
    parser.add_argument("--out", type=Path, help="a new folder for train.npz and test.npz")
    parser.add_argument("--dataset", choices=("har6", "dsa19"), default="har6",
                        help="what --data-dir holds: the UCI HAR archive (har6, default) or "
                        "DSA-19's (dsa19)")
    args = parser.parse_args(argv)
    if args.score:
        if not args.test:
            parser.error("--score needs --test (the user's test .npz or CSV folder)")
        print(json.dumps(score(args.score, args.test, args.export)))
        return 0
    if not args.data_dir or not args.out:
        parser.error("--data-dir and --out are required (or --score RUN --test FILE)")
    if args.out.exists():
        parser.error(f"--out {args.out} exists; give a new folder")
    write = write_user_files if args.dataset == "har6" else write_dsa_files
    counts = write(args.data_dir, args.out)
    print(f"{args.out}: train.npz {counts['train']} windows, test.npz {counts['test']} windows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
