"""The int8 step model on each CV fold's *validation* subjects, beside the Keras model.

    zoo bench fold-int8 bench/sweeps/har2-campaign/har2/sirnn/rot15_qat/fold? \\
        --results results/har2-campaign-int8

Each run directory (a finished ``zoo sweep cv`` trial, laid out
``<out>/<task>/<label>/<variant>/fold<k>``) is exported ``--quantize int8 --form step`` (into
``RUN/export-step-int8``, reused when there), and its two-signature ``stream.tflite`` is run by
LiteRT over the fold's validation windows with the state fed back, as a device runs it; the Keras
model runs the same windows. The goal of issue #28 is read off per fold: the int8 model within
0.5 points of the float model on the fold's validation subjects (people the fold did not train
on, so the figure is not tuned on the official test split). One results file per run
(``<results>/<task>/<label>/<variant>/fold<k>.json``) keeps what was measured; the table is
rebuilt from those files. ``--quantize int16x8`` does the same for TFLite's 16x8 mode (16-bit
activations and state, 8-bit weights; ``RUN/export-step-int16x8``, its own results folder).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
from pathlib import Path

import numpy as np

from zoo.experiments.benchmarks.realscale import mean_sd
from zoo.core import logs

_log = logging.getLogger(__name__)

GOAL_POINTS = 0.5


QUANTIZE = ("int8", "int16x8")  # the results file names its figure after it


def fold_int8(run_dir: Path, data_dir=None, quantize: str = "int8") -> dict:
    """The float and integer (``quantize``: int8, or int16x8: 16-bit activations and state,
    8-bit weights) accuracy of ``run_dir`` on its validation split, and their agreement (also
    logged)."""
    if quantize not in QUANTIZE:
        raise ValueError(f"quantize must be one of {QUANTIZE}, got {quantize!r}")
    from zoo.export.device_runtime import stream_logits
    from zoo.export.exporter import export_run
    from zoo.training.evaluate import load_run_with_data

    record, model, norm, _, data = load_run_with_data(run_dir, data_dir, need_val=True)
    x_val = norm.apply(data.val.x).astype(np.float32)
    y_val = np.asarray(data.val.y)
    out = Path(run_dir) / f"export-step-{quantize}"
    if not (out / "stream.tflite").is_file():
        with logs.quieted():  # the export's progress is not this script's
            export_run(run_dir, out, quantize=quantize, form="step", data_dir=data_dir,
                       allow_drop=True, micro=False)
    integer = stream_logits((out / "stream.tflite").read_bytes(), x_val).argmax(-1)
    keras = model.predict(x_val, batch_size=256, verbose=0).argmax(-1)
    result = {"windows": int(len(y_val)), "float": 100 * float(np.mean(keras == y_val)),
              quantize: 100 * float(np.mean(integer == y_val)),
              "agreement": 100 * float(np.mean(integer == keras)),
              "qat": bool(record.config.settings.model_options.get("qat"))}
    result["drop"] = result["float"] - result[quantize]
    _log.info(f"{run_dir}: float {result['float']:.2f}%, {quantize} {result[quantize]:.2f}% "
              f"({result['drop']:+.2f} points below), agreement {result['agreement']:.2f}% on "
              f"{result['windows']} validation windows")
    return result


def result_path(results: Path, run_dir: Path) -> Path:
    """``<results>/<task>/<label>/<variant>/fold<k>.json`` of a sweep trial's run directory."""
    parts = Path(run_dir).resolve().parts[-4:]
    return results.joinpath(*parts).with_suffix(".json")


def table(results: Path) -> str:
    """Per (task, label, variant): folds, float and integer validation accuracy, the drop, the
    folds within the goal and the Keras-integer agreement, from the results files (one
    quantization per results folder)."""
    groups: dict[tuple, list[dict]] = {}
    for path in sorted(results.glob("*/*/*/fold*.json")):
        task, label, variant = path.parts[-4:-1]
        groups.setdefault((task, label, variant), []).append(json.loads(path.read_text()))
    kinds = {q for rows in groups.values() for r in rows for q in QUANTIZE if q in r}
    if len(kinds) > 1:
        raise ValueError(f"{results} mixes {sorted(kinds)} results; keep one per folder")
    q = kinds.pop() if kinds else "int8"
    lines = [f"| task | model | variant | folds | float val % | {q} val % | {q} below float "
             f"(points, mean / worst) | folds within {GOAL_POINTS} | Keras-{q} agreement % |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (task, label, variant), rows in groups.items():
        drops = [r["drop"] for r in rows]
        lines.append(
            f"| {task} | {label} | {variant} | {len(rows)} | {mean_sd([r['float'] for r in rows])} "
            f"| {mean_sd([r[q] for r in rows])} | {statistics.mean(drops):+.2f} / "
            f"{max(drops):+.2f} | {sum(d <= GOAL_POINTS for d in drops)} of {len(rows)} | "
            f"{mean_sd([r['agreement'] for r in rows])} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from zoo.core.storage import write_json_atomic

    parser = argparse.ArgumentParser(prog="zoo bench fold-int8",
                                     description=__doc__.split("\n")[0],
                                     allow_abbrev=False)
    parser.add_argument("runs", nargs="*", type=Path, help="finished CV trial run directories")
    parser.add_argument("--results", type=Path, required=True,
                        help="folder of the per-fold results files (and the table's source)")
    parser.add_argument("--data-dir", help="dataset (default: where each run found its data)")
    parser.add_argument("--quantize", choices=QUANTIZE, default="int8",
                        help="int8 (default), or int16x8: 16-bit activations and state, 8-bit "
                             "weights (TFLite's 16x8 mode; its own --results folder)")
    args = parser.parse_args(argv)
    from zoo.training.rundir import RunDirectory

    for run_dir in args.runs:  # every run checked before any is exported
        try:
            RunDirectory(run_dir).check_finished()
        except (FileNotFoundError, ValueError) as err:
            parser.error(str(err))
    for run_dir in args.runs:
        path = result_path(args.results, run_dir)
        if path.is_file():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, fold_int8(run_dir, args.data_dir, args.quantize))
    print(table(args.results))
    return 0


if __name__ == "__main__":
    logs.configure()  # run as a script: each run's line, as `zoo bench fold-int8` prints it
    raise SystemExit(main())
