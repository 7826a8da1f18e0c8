"""Latency of the exported C++ loop (TFLite Micro library, ``-O2``) next to the Python loop over
the same models, measured in one run, for every zoo cell and the Keras baselines with a step form.

    python -m zoo.experiments.device_latency --task har2 --data-dir DIR --tflm DIR --out bench/device-har2

For each model: train (or reuse a finished run in OUT/runs), export ``--form step`` in each mode,
build the export's C++ self-test against ``--tflm``, check its predictions on the whole test split
against the Python tflite-micro interpreter, then time

- C++ loop: ``self_test bench`` (``ZooStep`` per sample, ``Classify`` per window), median / p90;
- Python loop, tflite-micro: ``device_bench.benchmark`` on the same runtime's Python interpreter;
- Python loop, ai-edge-litert (1 thread): the figure ``zoo bench`` reports;

and, for reference, the stock Keras LSTM as a float sequence model (one invoke per window, its
time loop a WHILE op inside the runtime). Writes ``device.md`` and ``device.json`` in OUT.

Shipped models by name: ``zoo device latency sirnn.har2 sirnn.har2_tiny --tflm DIR`` measures the
step export each installed tag ships (or a step export folder), as it is: nothing is trained. A
tag's name goes through the one resolver of every command (`zoo.pretrained.tag_or_path`: an
archived or unknown name is one line naming the tag that does its job, or the valid ones). A
shipped export keeps no C arrays (`zoo.export.device_build.build` writes them into a copy in the
build folder) and no test set, so it is timed on a zero window of the card's length and its
C++ = Python check is left out ('-'; ``zoo device build TAG`` checks it on the task's data); a
folder that keeps its test set is checked as above.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path

import numpy as np

from zoo.export import device_bench, device_build, device_runtime
from zoo.export.card_schema import read_export_card
from zoo.export.exportdir import ExportDirectory
from zoo.core import logs
from zoo.training.config import MAX_UNITS
from zoo.core.flags import int_in, number_in, program_name

_log = logging.getLogger(__name__)

__all__ = ["measure", "main"]

# label -> (registry name, model options). The zoo cells as `zoo bench` trains them.
STEP_MODELS = {
    "sirnn": ("sirnn", {"state_clip": 1.0, "state_quant_bits": 8}),
    "fastrnn": ("fastrnn", {}),
    "fastgrnn": ("fastgrnn", {}),
    "antisymmetric": ("antisymmetric", {}),
    "stablernn": ("stablernn", {}),
    "gru": ("gru", {}),
    "simple_rnn": ("simple_rnn", {}),
}


def _train(task, name, options, args, out: Path) -> Path:
    from zoo.training.config import TrainConfig
    from zoo.training.runs import train_or_reuse

    config = TrainConfig(task=task, model=name, model_options=options, epochs=args.epochs,
                         batch_size=64, lr=args.lr, clipnorm=1.0, seed=args.seed)
    with logs.quieted():  # the rows and the table are this script's output
        return train_or_reuse(config,
                              out / "runs" / f"{name}-{options.get('units', '')}".rstrip("-"),
                              data_dir=args.data_dir, verbose=0)


def _export(run_dir: Path, mode: str, form: str, args, out: Path) -> Path:
    from zoo.export.exporter import export_run

    target = out / "exports" / f"{run_dir.name}-{form}-{mode}"
    if not ExportDirectory(target).has_card():
        with logs.quieted():
            export_run(run_dir, target, quantize=mode, form=form, data_dir=args.data_dir,
                       allow_drop=True, overwrite=True)
    return target


def _python_loops(export_dir: Path, window: np.ndarray, reps: int) -> dict:
    """device_bench.benchmark on the tflite-micro and ai-edge-litert Python interpreters."""
    card = read_export_card(str(export_dir))
    steps = max(card.timesteps, reps * card.timesteps // 4)  # -> `reps` timed windows
    out = {"tflite-micro": device_build.bench_python(export_dir, window, reps)}
    lite = device_runtime.StepModel(str(export_dir), card, "litert", 1)
    out["litert"] = device_bench.benchmark(lite, "step", window, runs=steps, warmup=20)
    return out


def measure_step_export(export_dir: Path, tflm: Path, reps: int, work: Path,
                        build_dir: Path) -> dict:
    """Build (into ``build_dir``, OUT/build/NAME, so that a rerun only times), check on the
    whole test split, and time one step export (C++ and Python). An export without its test set
    (a shipped tag's) is timed on a zero window of the card's length, unchecked (``check``
    None)."""
    binary = device_build.build(export_dir, tflm, build_dir)
    export = ExportDirectory(export_dir)
    card = read_export_card(str(export.root))
    check = None
    if export.testset.is_file():
        check = device_build.check_against_python(export_dir, binary, work)
        window = export.read_testset(card)[0][0]
    else:  # as device_bench times an export without one
        window = np.zeros((card.timesteps, card.features), np.float32)
    return {"check": check, "c": device_build.bench_c(binary, window, work, reps),
            "python": _python_loops(export_dir, window, reps),
            "bytes": card.total_bytes, "arena_bytes": card.arena_bytes,
            "accuracy": card.accuracy.tflite}


def measure_lstm(run_dir: Path, args, out: Path, reps: int) -> dict:
    """The stock float Keras LSTM as a sequence model (WHILE loop): one invoke per window."""
    export_dir = _export(run_dir, "none", "sequence", args, out)
    export = ExportDirectory(export_dir)
    card = read_export_card(str(export.root))
    window = export.read_testset(card)[0][0]
    timing = {}
    for runtime in ("tflite-micro", "litert"):
        model = device_runtime.SequenceModel(str(export_dir), card, runtime, 1)
        timing[runtime] = device_bench.benchmark(model, "sequence", window, runs=reps, warmup=5)
    return {"python": timing, "bytes": card.total_bytes, "arena_bytes": card.arena_bytes,
            "accuracy": card.accuracy.tflite}


def measure(args) -> list[dict]:
    """Every model in ``args.models`` and mode in ``args.modes``; one row per export (each
    logged as it is measured), then the table (printed)."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tflm = device_build.check_tflm_dir(args.tflm)
    rows = []
    with tempfile.TemporaryDirectory(prefix="zoo-device-latency-") as tmp:
        for name, folder in args.exports.items():
            _log.info(f"== {name}")
            safe = name.replace("/", "_")
            export_dir = Path(folder)  # a shipped tag's: `device_build.build` adds its C arrays
            card = device_build.load_step_export(export_dir)
            rows.append({"model": name, "mode": card.quantize, "form": card.form,
                         **measure_step_export(export_dir, tflm, args.reps, Path(tmp),
                                               out / "build" / safe)})
            _log.info(_row_line(rows[-1]))
            _write(rows, out)
        for label in args.models:
            if label not in STEP_MODELS:
                raise ValueError(f"unknown model {label!r}; valid: {', '.join(STEP_MODELS)}")
            name, options = STEP_MODELS[label]
            run_dir = _train(args.task, name, {**options, "units": args.units}, args, out)
            for mode in args.modes:
                _log.info(f"== {label} {mode}")
                export_dir = _export(run_dir, mode, "step", args, out)
                row = {"model": label, "mode": mode, "form": "step",
                       **measure_step_export(export_dir, tflm, args.reps, Path(tmp),
                                             out / "build" / export_dir.name)}
                rows.append(row)
                _log.info(_row_line(row))
                _write(rows, out)  # after every row: a long run stopped early keeps its rows
        if args.lstm_units:
            run_dir = _train(args.task, "lstm", {"units": args.lstm_units}, args, out)
            rows.append({"model": f"lstm-{args.lstm_units}", "mode": "none", "form": "sequence",
                         **measure_lstm(run_dir, args, out, args.reps)})
            _log.info(_row_line(rows[-1]))
    print(_write(rows, out))
    return rows


def _write(rows: list[dict], out: Path) -> str:
    (out / "device.json").write_text(json.dumps(rows, indent=1))
    table = "\n".join(table_lines(rows)) + "\n"
    (out / "device.md").write_text(table)
    return table


def _pair(timing: dict | None, key: str, spec: str) -> str:
    if timing is None or key not in timing:
        return "-"
    return f"{format(timing[key]['median_us'], spec)} / {format(timing[key]['p90_us'], spec)}"


def _row_line(row: dict) -> str:
    c = row.get("c")
    return (f"  {row['model']} {row['mode']}: C++ window {_pair(c, 'per_sequence', '.0f')} us, "
            f"Python TFLM window {_pair(row['python']['tflite-micro'], 'per_sequence', '.0f')} us")


def table_lines(rows: list[dict]) -> list[str]:
    """The Markdown table: C++ loop and Python loops side by side (median / p90, microseconds)."""
    lines = ["| model | mode | form | accuracy % | bytes | C++ = Python TFLM predictions "
             "| C++ loop: us/step | C++ loop: us/window | Python loop, TFLM: us/step "
             "| Python loop, TFLM: us/window | Python loop, LiteRT: us/window |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        check = r.get("check")
        same = f"{check['identical_predictions']}/{check['windows']}" if check else "-"
        py_micro, py_lite = r["python"]["tflite-micro"], r["python"]["litert"]
        lines.append(
            f"| {r['model']} | {r['mode']} | {r['form']} | {100 * r['accuracy']:.2f} | "
            f"{r['bytes']:,} | {same} | {_pair(r.get('c'), 'per_step', '.2f')} | "
            f"{_pair(r.get('c'), 'per_sequence', '.0f')} | {_pair(py_micro, 'per_step', '.2f')} | "
            f"{_pair(py_micro, 'per_sequence', '.0f')} | {_pair(py_lite, 'per_sequence', '.0f')} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=program_name("zoo.experiments.device_latency"),
                                     description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("tags", nargs="*", metavar="TAG", help="installed tags by name "
                        "(sirnn.har2: the step export it ships) or step export folders, "
                        "measured as they are; then no --models are trained unless given")
    parser.add_argument("--task", default="har2", help="the task the --models train on")
    parser.add_argument("--data-dir", help="dataset folder or archive (else $ZOO_DATA_DIR)")
    parser.add_argument("--tflm", required=True, help="TFLite Micro build (include/, lib/)")
    parser.add_argument("--out", default="bench/device-har2", help="output folder")
    parser.add_argument("--models", nargs="+", help="step models trained and measured "
                        f"(default: {' '.join(STEP_MODELS)}; none when TAGs are given)")
    parser.add_argument("--modes", nargs="+", default=["int8", "none"],
                        choices=["int8", "int16x8", "none"])
    parser.add_argument("--units", type=int_in(1, MAX_UNITS), default=80,
                        help="hidden size of every step model")
    parser.add_argument("--lstm-units", type=int_in(0, MAX_UNITS),
                        help="the stock float LSTM sequence model for reference (0: none; "
                        "default 32, 0 when TAGs are given)")
    parser.add_argument("--epochs", type=int_in(1), default=3)
    parser.add_argument("--lr", type=number_in(0, low_open=True), default=1e-2)
    parser.add_argument("--seed", type=int_in(0), default=0)
    parser.add_argument("--reps", type=int_in(1), default=200, help="timed windows per loop")
    args = parser.parse_args(argv)
    try:
        _resolve(args)
        measure(args)
    except (ValueError, FileNotFoundError, device_build.DeviceBuildError) as err:
        print(f"device_latency: error: {err}", file=sys.stderr)
        return 2
    return 0


def _resolve(args) -> None:
    """``args.exports`` ({name: step export folder}) from the TAG arguments, each through the
    zoo's one tag resolver (`zoo.pretrained.tag_or_path`, whose one line names an archived tag's
    successor or the valid tags), checked to be step exports with their C++ sources; the
    defaults of ``--models`` and ``--lstm-units`` (none when TAGs are given)."""
    from zoo.pretrained import tag_or_path

    args.exports = {}
    for tag in args.tags:
        folder = tag_or_path(tag, export=True)
        form = ExportDirectory(folder).read_card_json().get("form")
        if form != "step":
            raise ValueError(f"{tag}: its export {folder} is a {form} model; the C++ loop "
                             "exists for step exports only")
        args.exports[tag] = folder
    if args.models is None:
        args.models = [] if args.tags else list(STEP_MODELS)
    if args.lstm_units is None:
        args.lstm_units = 0 if args.tags else 32


if __name__ == "__main__":
    logs.configure()  # run as a script: its progress, as `zoo device latency` prints it
    raise SystemExit(main())
