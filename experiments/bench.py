"""``zoo bench``: the zoo's cells next to Keras LSTM / GRU / SimpleRNN, measured in one run.

For each model: train (or reuse a finished run), export every requested quantization mode with
``zoo export`` (accuracy checked against the Keras float model), then time the exported file with
the on-device benchmark's own code (ai-edge-litert, one thread) and record accuracy, parameters,
bytes, latency, TFLite Micro arena, and MACs per sequence against a matrix-multiply peak measured
by the same runtime in the same run. Writes ``results.md``, ``results.csv`` and ``pareto.png``.
"""

from __future__ import annotations

import argparse
import csv
import logging
import time
from pathlib import Path

import numpy as np

from zoo.training.config import MAX_UNITS
from zoo.core.flags import int_in, number_in
from zoo.training.rundir import RunDirectory

_log = logging.getLogger(__name__)

# label -> (registry name, model options). Zoo cells at the papers' hidden size 80; the iRNN
# family with the bounded, fake-quantized state that integer export needs (docs/export.md).
ZOO_MODELS = {
    "sirnn": ("sirnn", {"state_clip": 1.0, "state_quant_bits": 8}),
    "fastrnn": ("fastrnn", {}),
    "fastgrnn": ("fastgrnn", {}),
    "antisymmetric": ("antisymmetric", {}),
    "stablernn": ("stablernn", {}),
}
BASELINES = ("lstm", "gru", "simple_rnn")


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", required=True, help="a task name (see `zoo list tasks`)")
    parser.add_argument("--data-dir", help="dataset folder or archive (else $ZOO_DATA_DIR)")
    parser.add_argument("--out", help="output folder (default bench/<task>)")
    parser.add_argument("--models", nargs="+", default=list(ZOO_MODELS),
                        help=f"zoo models (default: {' '.join(ZOO_MODELS)})")
    parser.add_argument("--baselines", nargs="+", default=["lstm:16,32,80", "gru:16,32,80",
                                                           "simple_rnn:80"],
                        help="Keras baselines as NAME:UNITS,UNITS (the size sweep finds the "
                             "smallest LSTM/GRU within 1 point)")
    parser.add_argument("--units", type=int_in(1, MAX_UNITS), default=80,
                        help="hidden size of the zoo cells")
    parser.add_argument("--modes", nargs="+", default=["none", "int8"],
                        choices=["none", "fp16", "dynamic", "int16x8", "int8"],
                        help="export modes measured (default: none int8)")
    parser.add_argument("--epochs", type=int_in(1), default=30,
                        help="epochs of every model (default 30)")
    parser.add_argument("--batch-size", type=int_in(1), default=64,
                        help="batch size (default 64)")
    parser.add_argument("--lr", type=number_in(0, low_open=True), default=1e-2,
                        help="learning rate (default 0.01)")
    parser.add_argument("--seed", type=int_in(0), default=0, help="random seed (default 0)")
    parser.add_argument("--runs", type=int_in(1), default=30, help="timed sequences per artifact")
    parser.add_argument("--tflm", help="a TFLite Micro build (include/, lib/): also time each "
                                       "step export's C++ loop (export/device_build.py)")


# ------------------------------------------------------------------------------------- measuring
def matmul_peak(runs: int = 30, batch: int = 128, n: int = 512) -> dict:
    """MAC/s of a batched ``[batch, n] x [n, n]`` FULLY_CONNECTED in ai-edge-litert (1 thread),
    float32 and int8: the runtime's compute ceiling on this machine. (A batch-1 product is
    memory-bound and would understate it: a small cached recurrent model then "beats" it.)"""
    import tempfile

    import keras

    from zoo.export.convert import tflite_converter
    from zoo.export.device_runtime import LiteInterpreter
    from zoo.export.quantize import set_integer_mode

    inputs = keras.Input((n,), batch_size=batch)
    model = keras.Model(inputs, keras.layers.Dense(n, use_bias=False)(inputs))
    peaks = {}
    rng = np.random.default_rng(0)
    for kind in ("float32", "int8"):
        with tflite_converter(model) as converter:
            if kind == "int8":  # weights per channel: the converter's default, as measured so far
                set_integer_mode(converter, "int8", lambda: (
                    [rng.normal(size=(batch, n)).astype("float32")] for _ in range(10)),
                    per_tensor=False)
            blob = converter.convert()
        with tempfile.NamedTemporaryFile(suffix=".tflite") as f:
            f.write(blob)
            f.flush()
            interp = LiteInterpreter(f.name, "litert", 1)
            x = np.zeros(interp.input_quant(0)[2], interp.input_quant(0)[0])
            for _ in range(5):
                interp.set(0, x)
                interp.invoke()
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                interp.set(0, x)
                interp.invoke()
                times.append(time.perf_counter() - t0)
        peaks[kind] = batch * n * n / float(np.median(times))
    return peaks


def time_export(export_dir: Path, runs: int) -> dict:
    """Latency of an export with the device script's code: ai-edge-litert, one thread."""
    from zoo.export import device_bench, device_runtime
    from zoo.export.card_schema import read_export_card
    from zoo.export.exportdir import ExportDirectory

    export = ExportDirectory(export_dir)
    card = read_export_card(str(export.root))
    model = device_runtime.open_export(str(export_dir), card, "litert", 1)
    example = export.read_testset(card)[0][0]
    return device_bench.benchmark(model, card.form, example, runs=runs, warmup=5)


def time_c_loop(export_dir: Path, card, args, out: Path) -> dict:
    """With ``--tflm``: the step export's C++ loop built against TFLite Micro (-O2) and timed
    by its own driver, median per step and per sequence (the LiteRT figures are Python loops)."""
    from zoo.export import device_build
    from zoo.export.card_schema import read_export_card
    from zoo.export.exportdir import ExportDirectory

    if not getattr(args, "tflm", None) or card.form != "step" or \
            card.quantize not in ("none", "int8", "int16x8"):
        return {}
    binary = device_build.build(export_dir, args.tflm, out / "build" / export_dir.name)
    export = ExportDirectory(export_dir)
    window = export.read_testset(read_export_card(str(export.root)))[0][0]
    timing = device_build.bench_c(binary, window, out / "build" / export_dir.name, args.runs)
    return {"c_step_us": timing["per_step"]["median_us"],
            "c_latency_us": timing["per_sequence"]["median_us"]}


# ----------------------------------------------------------------------------------------- running
def _train_or_load(task, model, options, args, out: Path) -> Path:
    from zoo.training.config import TrainConfig
    from zoo.training.runs import train_or_reuse

    config = TrainConfig(task=task, model=model, model_options=options, epochs=args.epochs,
                         batch_size=args.batch_size, lr=args.lr, seed=args.seed, clipnorm=1.0,
                         early_stopping_patience=10)
    return train_or_reuse(config, out / "runs" / _label(model, options), data_dir=args.data_dir,
                          verbose=0)


def _label(model, options) -> str:
    units = options.get("units")
    return f"{model}-{units}" if units else model


def _export(run_dir: Path, mode: str, out: Path, args):
    """(folder, `ModelCard`, []) of the smallest artifact that works for this mode: the streaming
    step model, else the sequence model (WHILE loop), else the unrolled sequence model;
    (None, None, why each failed) when none converts."""
    from zoo.export.card_schema import read_export_card
    from zoo.export.exportdir import ExportDirectory
    from zoo.export.exporter import export_run

    errors = []
    for form, unroll in (("step", False), ("sequence", False), ("sequence", True)):
        target = out / "exports" / f"{run_dir.name}-{mode}-{form}{'-unrolled' if unroll else ''}"
        if ExportDirectory(target).has_card():
            return target, read_export_card(str(target)), []
        try:
            card = export_run(run_dir, target, quantize=mode, form=form, unroll=unroll,
                              data_dir=args.data_dir, allow_drop=True, overwrite=True)
            return target, card, []
        except Exception as err:  # noqa: BLE001 - record why, try the next form
            errors.append(f"{form}{' unrolled' if unroll else ''}: {str(err).splitlines()[0]}")
    _log.info(f"  {run_dir.name} {mode}: no artifact ({'; '.join(errors)})")
    return None, None, errors


def _entries(args) -> list[tuple]:
    """(label, model, options, family) of every model to measure; ValueError naming a bad
    ``--models`` or ``--baselines`` entry."""
    unknown = [label for label in args.models if label not in ZOO_MODELS]
    if unknown:
        raise ValueError(f"--models {unknown[0]!r}; valid: {', '.join(ZOO_MODELS)}")
    entries = [(label, model, {**opts, "units": args.units}, "zoo")
               for label, (model, opts) in ((label, ZOO_MODELS[label]) for label in args.models)]
    for spec in args.baselines:
        name, _, sizes = spec.partition(":")
        if name not in BASELINES:
            raise ValueError(f"unknown baseline {name!r}; valid: {', '.join(BASELINES)}")
        try:
            units = [int(u) for u in (sizes or "80").split(",")]
        except ValueError:
            raise ValueError(f"--baselines {spec!r}: NAME:UNITS,UNITS with whole numbers, e.g. "
                             "lstm:16,32") from None
        entries += [(f"{name}-{u}", name, {"units": u}, "keras") for u in units]
    return entries


def measure(args) -> list[dict]:
    """Train or reuse, export and time every model; its progress logged, the table printed."""
    from zoo.training.runs import load_keras_model
    from zoo.training.tasks import get_task
    from zoo.macs import model_macs_per_sequence

    task = get_task(args.task)
    out = Path(args.out or Path("bench") / args.task)
    entries = _entries(args)
    # The data first, before anything is measured or written: without it the command used to
    # time the runtime and create OUT, then fail (and leave OUT behind). The load is what the
    # first training does anyway (its arrays are cached for the runs).
    task.load(args.data_dir, seed=args.seed)
    out.mkdir(parents=True, exist_ok=True)
    _log.info("measuring the runtime's matrix-multiply peak ...")
    peak = matmul_peak()
    _log.info(f"  peak (LiteRT, 1 thread, 128x512 @ 512x512 FULLY_CONNECTED): float32 "
              f"{peak['float32'] / 1e9:.2f} GMAC/s, int8 {peak['int8'] / 1e9:.2f} GMAC/s")
    rows = []
    for label, model_name, options, family in entries:
        _log.info(f"== {label}")
        run_dir = _train_or_load(args.task, model_name, options, args, out)
        run = RunDirectory(run_dir)
        metrics = run.record().metrics
        macs = metrics.macs_per_sequence  # recorded by training since it was added
        if macs is None:
            macs = model_macs_per_sequence(load_keras_model(run.model))
        for mode in args.modes:
            export_dir, card, errors = _export(run_dir, mode, out, args)
            row = {"model": label, "family": family, "mode": mode,
                   "parameters": metrics.required("parameters", "zoo bench"),
                   "macs_per_sequence": macs,
                   "keras_accuracy": 100 * metrics.required("test_accuracy", "zoo bench")}
            if export_dir is None:
                rows.append({**row, "form": "-", "note": "; ".join(errors)})
                continue
            timing = time_export(export_dir, args.runs)
            latency_us = timing["per_sequence"]["median_us"]
            peak_kind = "float32" if mode in ("none", "fp16", "dynamic") else "int8"
            row.update({
                "form": card.form + ("-unrolled" if card.unroll else ""),
                "accuracy": 100 * card.accuracy.tflite,
                "argmax_agreement": 100 * card.accuracy.argmax_agreement,
                "bytes": card.total_bytes,
                "latency_us": latency_us,
                "latency_p90_us": timing["per_sequence"]["p90_us"],
                "step_latency_us": timing.get("per_step", {}).get("median_us"),
                "arena_bytes": card.arena_bytes,
                "achieved_gmacs": macs / latency_us / 1e3,
                "fraction_of_peak": macs / (latency_us * 1e-6) / peak[peak_kind],
                "export_dir": str(export_dir)})
            row.update(time_c_loop(export_dir, card, args, out))
            rows.append(row)
            _log.info(f"  {mode:>8} {row['form']:<10} acc {row['accuracy']:.2f}%  "
                      f"{row['bytes']:,} B  {latency_us:.0f} us/seq  arena {row['arena_bytes']}")
    _write_outputs(rows, peak, out)
    return rows


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def _write_outputs(rows, peak, out: Path):
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    lines = [f"Matrix-multiply peak (LiteRT, 1 thread, 128x512 @ 512x512 FULLY_CONNECTED, same run): "
             f"float32 {peak['float32'] / 1e9:.2f} GMAC/s, int8 {peak['int8'] / 1e9:.2f} GMAC/s.",
             "",
             "| model | mode | form | accuracy % (Keras float) | params | bytes | LiteRT, Python "
             "loop: us/seq (p90) | LiteRT: us/step | TFLM arena B | MACs/seq | GMAC/s | % of peak | C++ loop us/seq "
             "| C++ loop us/step |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "bytes" not in r:
            lines.append(f"| {r['model']} | {r['mode']} | - | - ({r['keras_accuracy']:.2f}) | "
                         f"{r['parameters']:,} | - | - | - | - | {r['macs_per_sequence']:,} | - | "
                         f"- | - | - |")
            continue
        lines.append(
            f"| {r['model']} | {r['mode']} | {r['form']} | {r['accuracy']:.2f} "
            f"({r['keras_accuracy']:.2f}) | {r['parameters']:,} | {r['bytes']:,} | "
            f"{r['latency_us']:.0f} ({r['latency_p90_us']:.0f}) | "
            f"{_fmt(r['step_latency_us'], '.1f')} | {_fmt(r['arena_bytes'], ',')} | "
            f"{r['macs_per_sequence']:,} | {r['achieved_gmacs']:.3f} | "
            f"{100 * r['fraction_of_peak']:.1f} | {_fmt(r.get('c_latency_us'), '.0f')} | "
            f"{_fmt(r.get('c_step_us'), '.2f')} |")
    lines += ["", *targets(rows)]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))  # the command's output: printed whatever the log level
    pareto_plot(rows, out / "pareto.png")


def targets(rows) -> list[str]:
    """The zoo-vs-Keras targets (a quarter of the bytes, equal latency), as ratios, with the reason when one is missed."""
    measured = [r for r in rows if "bytes" in r]
    zoo_int = [r for r in measured if r["family"] == "zoo" and r["mode"] == "int8"
               and r["form"] == "step"]
    if not zoo_int:
        return ["No zoo int8 step model was measured: targets not evaluated."]
    best = max(zoo_int, key=lambda r: r["accuracy"])
    lines = [f"Best zoo int8 step model: {best['model']}, {best['accuracy']:.2f}%, "
             f"{best['bytes']:,} bytes, {best['latency_us']:.0f} us/sequence, TFLM arena "
             f"{_fmt(best['arena_bytes'], ',')} bytes."]
    rivals = [r for r in measured if r["family"] == "keras" and r["model"].startswith(("lstm", "gru"))
              and r["accuracy"] >= best["accuracy"] - 1.0]
    if not rivals:
        lines.append("No Keras LSTM/GRU artifact came within 1 point of it: the bytes target "
                     "holds trivially (there is no smaller rival at that accuracy).")
    else:
        rival = min(rivals, key=lambda r: r["bytes"])
        ratio = best["bytes"] / rival["bytes"]
        speed = best["latency_us"] / rival["latency_us"]
        lines.append(
            f"Smallest Keras LSTM/GRU within 1 point: {rival['model']} {rival['mode']} "
            f"{rival['form']}, {rival['accuracy']:.2f}%, {rival['bytes']:,} bytes, "
            f"{rival['latency_us']:.0f} us/sequence. Bytes ratio {ratio:.3f} (target <= 0.25: "
            f"{'met' if ratio <= 0.25 else 'MISSED'}); latency ratio {speed:.2f} (target <= 1: "
            f"{'met' if speed <= 1 else 'MISSED'}).")
    arena = best["arena_bytes"]
    lines.append(f"TFLite Micro arena {_fmt(arena, ',')} bytes (target <= 8 KB: "
                 f"{'met' if arena is not None and arena <= 8192 else 'MISSED'}).")
    return lines


def pareto_plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured = [r for r in rows if "bytes" in r]
    fig, ax = plt.subplots(figsize=(9, 6))
    markers = {"none": "o", "fp16": "P", "dynamic": "D", "int16x8": "s", "int8": "^"}
    for r in measured:
        color = "tab:blue" if r["family"] == "zoo" else "tab:gray"
        ax.scatter(r["latency_us"], r["accuracy"], s=8 + r["bytes"] ** 0.5 / 2, alpha=0.6,
                   color=color, marker=markers.get(r["mode"], "o"), edgecolors="black")
        ax.annotate(f"{r['model']} {r['mode']}", (r["latency_us"], r["accuracy"]), fontsize=7,
                    xytext=(4, 2), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("latency per sequence, us (ai-edge-litert, 1 thread; log scale)")
    ax.set_ylabel("test accuracy, %")
    ax.set_title("Accuracy vs latency (marker area ~ sqrt(bytes); blue = zoo, gray = Keras; "
                 "o float, ^ int8, s int16x8)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_bench(args) -> int:
    import sys

    try:
        measure(args)
    except (ValueError, FileNotFoundError) as err:  # DataError, DataNotFoundError among them
        print(f"zoo bench: error: {err}", file=sys.stderr)
        return 2
    return 0
