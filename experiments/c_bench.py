"""The C backend next to TFLite Micro on the host, every cell, in one run.

    python -m zoo.experiments.c_bench --data-dir ../shared/data/har --tflm ../shared/tflm \\
        --out bench/c-har2 [--cells sirnn,gru,...] [--epochs 2] [--reps 200]

For each cell (the shipped ``sirnn.har2`` and ``gru.har2`` as they are; the other cells trained
here as `zoo bench` trains them, reused when OUT already has them): its int8 step export, the
C export of the same models (checked bit for bit on the whole test split), then timed on the
same window: the C backend (``zoo_app --bench``, ``-O2``), the export's TFLite Micro C++ loop
(``self_test bench``, the library in ``--tflm``, ``-O2``), and, for reference, the stock Keras
float LSTM as a sequence model (its time loop a WHILE op) under the tflite-micro interpreter,
one invoke per window. Also the linked host apps' sizes (``size``). Writes ``c_bench.md`` and
``c_bench.json`` in OUT and prints the table; ratios are within this run only.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from zoo.core import logs
from zoo.training.config import MAX_UNITS
from zoo.core.flags import int_in, program_name

_log = logging.getLogger(__name__)

# label -> (registry name, model options); as zoo.experiments.device_latency / `zoo bench` train them.
CELLS = {
    "sirnn": None, "gru": None,  # the shipped HAR-2 models
    "irnn-k3": ("irnn", {"state_clip": 1.0, "state_quant_bits": 8, "k": 3}),
    "fastrnn": ("fastrnn", {}), "fastgrnn": ("fastgrnn", {}),
    "antisymmetric": ("antisymmetric", {}), "gated_antisymmetric": ("gated_antisymmetric", {}),
    "stablernn": ("stablernn", {}), "simple_rnn": ("simple_rnn", {}),
}


def _run_dir(label: str, args, out: Path) -> Path:
    from zoo.pretrained import verified_dir

    if CELLS[label] is None:  # a copy whose validation fold exists on any HAR copy
        import yaml

        from zoo.training.rundir import RunDirectory

        run = RunDirectory(out / "runs" / f"{label}.har2")
        if not run.root.is_dir():
            shutil.copytree(verified_dir(f"{label}.har2"), run.root)
            config = run.record().config
            task_options = {"val_fold": [1, 5], "frames_per_step": config.frames_per_step}
            run.config.write_text(yaml.safe_dump(config.as_written(task_options=task_options),
                                                 sort_keys=False))
        return run.root
    from zoo.training.config import TrainConfig
    from zoo.training.runs import train_or_reuse

    name, options = CELLS[label]
    config = TrainConfig(task="har2", model=name, model_options=options, epochs=args.epochs,
                         batch_size=64, lr=1e-2, clipnorm=1.0, seed=0)
    with logs.quieted():  # the table is this script's output, not the library's progress
        return train_or_reuse(config, out / "runs" / label, data_dir=args.data_dir, verbose=0)


def _exports(label: str, run_dir: Path, args, out: Path) -> tuple[Path, Path]:
    """(int8 step export, C export) of a run, made once into OUT/exports."""
    from zoo.export.c_backend.command import export_c
    from zoo.export.exporter import export_run

    step, c = out / "exports" / f"{label}-step-int8", out / "exports" / f"{label}-c"
    with logs.quieted():
        if not (step / "model_card.json").is_file():
            export_run(run_dir, step, quantize="int8", form="step", data_dir=args.data_dir,
                       allow_drop=True)
        if not (c / "c_check.json").is_file():
            export_c(step, c)
    return step, c


def _time_c(c_dir: Path, window: np.ndarray, work: Path, reps: int) -> dict:
    from zoo.export.c_backend import check
    from zoo.export.c_backend.windows import write_windows

    app = check.build(c_dir)
    best = None
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        path = write_windows(Path(tmp) / "window.zoow", window[None].astype(np.float32), "raw")
        for _ in range(5):  # the fastest of five passes, each `reps` windows: machines are noisy
            line = subprocess.run([str(app), "--bench", str(reps), str(path)],
                                  capture_output=True, text=True, check=True).stdout.split()
            per_window = float(line[line.index("per_window_us") + 1])
            best = per_window if best is None else min(best, per_window)
    return {"per_window_us": best, "per_step_us": best / len(window), "app_bytes": _size(app)}


def _time_tflm(step_dir: Path, window: np.ndarray, tflm: Path, work: Path, reps: int) -> dict:
    from zoo.export import device_build

    binary = device_build.build(step_dir, tflm, work / "tflm-build")
    timing = device_build.bench_c(binary, window, work, reps)
    return {"per_window_us": timing["per_sequence"]["median_us"],
            "per_step_us": timing["per_step"]["median_us"], "app_bytes": _size(binary)}


def _size(binary: Path) -> dict:
    """text / data / bss of a linked host program (`size`, Berkeley format)."""
    if shutil.which("size") is None:
        return {}
    fields = subprocess.run(["size", str(binary)], capture_output=True, text=True,
                            check=True).stdout.splitlines()[1].split()
    return {"text": int(fields[0]), "data": int(fields[1]), "bss": int(fields[2])}


def _lstm(args, out: Path) -> dict:
    """The stock float Keras LSTM as a WHILE-loop sequence model, per window (tflite-micro)."""
    from zoo.export import device_bench, device_runtime
    from zoo.export.exporter import export_run
    from zoo.export.card_schema import read_export_card
    from zoo.export.exportdir import ExportDirectory
    from zoo.training.config import TrainConfig
    from zoo.training.runs import train_or_reuse

    config = TrainConfig(task="har2", model="lstm", model_options={"units": args.lstm_units},
                         epochs=args.epochs, batch_size=64, lr=1e-2, clipnorm=1.0, seed=0)
    export_dir = out / "exports" / f"lstm-{args.lstm_units}-float"
    with logs.quieted():
        run = train_or_reuse(config, out / "runs" / f"lstm-{args.lstm_units}",
                             data_dir=args.data_dir, verbose=0)
        if not (export_dir / "model_card.json").is_file():
            export_run(run, export_dir, quantize="none", form="sequence",
                       data_dir=args.data_dir, allow_drop=True)
    export = ExportDirectory(export_dir)
    card = read_export_card(str(export.root))
    window = export.read_testset(card)[0][0]
    model = device_runtime.SequenceModel(str(export_dir), card, "tflite-micro", 1)
    timing = device_bench.benchmark(model, "sequence", window, runs=args.reps, warmup=5)
    return {"per_window_us": timing["per_sequence"]["median_us"]}


def measure(args) -> dict:
    """Time each cell's C and TFLite Micro loops (each row logged at DEBUG when measured)."""
    out = Path(args.out)
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    rows = {}
    for label in args.cells:
        step, c = _exports(label, _run_dir(label, args, out), args, out)
        x = np.load(step / "testset.npz")["x"]
        norm = json.loads((step / "normalization.json").read_text())
        raw = (x[0] * np.asarray(norm["std"], np.float32) + np.asarray(norm["mean"], np.float32))
        check = json.loads((c / "c_check.json").read_text())
        rows[label] = {"c": _time_c(c, raw.astype(np.float32), work, args.reps),
                       "tflm": _time_tflm(step, x[0], Path(args.tflm), work, args.reps),
                       "bit_exact": check["check"], "const_bytes": check["const_bytes"]}
        _log.debug(row_line(label, rows[label]))
    lstm = _lstm(args, out) if args.lstm_units else None
    return {"rows": rows, "lstm": lstm, "lstm_units": args.lstm_units}


def row_line(label: str, row: dict, lstm: dict | None = None) -> str:
    c, t = row["c"], row["tflm"]
    exact = row["bit_exact"]
    ratio_lstm = f"{c['per_window_us'] / lstm['per_window_us']:.3f}" if lstm else "-"
    return (f"| {label} | {c['per_step_us']:.2f} | {t['per_step_us']:.2f} | "
            f"{c['per_window_us']:.0f} | {t['per_window_us']:.0f} | "
            f"{c['per_window_us'] / t['per_window_us']:.3f} | {ratio_lstm} | "
            f"{row['const_bytes']:,} | {c['app_bytes'].get('text', 0):,} / "
            f"{t['app_bytes'].get('text', 0):,} | "
            f"{exact['identical_logits']}/{exact['windows']} |")


def table(result: dict) -> list[str]:
    lstm = result["lstm"]
    lines = ["| cell (int8) | C µs / step | TFLM C++ µs / step | C µs / window | TFLM C++ µs / "
             "window | C / TFLM | C / float LSTM" + (f"-{result['lstm_units']}" if lstm else "")
             + " | C constants (bytes) | host app text C / TFLM | C = TFLM (windows) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [row_line(label, row, lstm) for label, row in result["rows"].items()]
    if lstm:
        lines.append(f"\nFloat Keras LSTM-{result['lstm_units']} (WHILE loop, tflite-micro "
                     f"interpreter): {lstm['per_window_us']:.0f} µs per window.")
    return lines


def agreement(args) -> list[str]:
    """For every cell's step export in OUT: C generated for each --match target against each
    runtime, windows with identical int8 logits and final state (of the whole test split)."""
    from zoo.export.c_backend import check
    from zoo.export.c_backend.project import write_c_project

    out = Path(args.out)
    lines = ["| cell | C for tflite-micro vs TFLite Micro | C for litert vs LiteRT builtin "
             "kernels | C for litert vs LiteRT + XNNPACK (default) |", "|---|---|---|---|"]
    for label in args.cells:
        step = out / "exports" / f"{label}-step-int8"
        cells = []
        for target, runtime in (("tflite-micro", "tflite-micro"), ("litert", "litert-ref"),
                                ("litert", "litert")):
            c_dir = out / "work" / f"{label}-c-{target}"
            if not (c_dir / "zoo_app").is_file():
                c_dir.mkdir(parents=True, exist_ok=True)
                write_c_project(step, c_dir, target)
                check.build(c_dir)
            r = check.compare(step, c_dir / "zoo_app", runtime)
            cells.append(f"{r['identical_logits']} / {r['identical_states']} of {r['windows']}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
        _log.debug(lines[-1])  # the table is printed once, at the end (`main`)
    return lines


# shipped tag -> its data subfolder of ../shared/data (the test windows: zoo.export.c_backend.shipped)
# (`zoo.pretrained.resolve_tag`: installed tags by name, the archived generations as archive/TAG)
SHIPPED_IMU = {"sirnn.har2": "har", "archive/sirnn.har2_gen1": "har", "gru.har2": "har",
               "archive/gru.har2_gen1": "har", "sirnn.dsa19": "dsa19",
               "archive/sirnn.dsa19_gen1": "dsa19", "gru.dsa19": "dsa19",
               "archive/gru.dsa19_gen1": "dsa19"}


def shipped_step_with_testset(tag: str, data_root: Path, out: Path) -> Path:
    """A copy at ``out`` of shipped ``tag``'s own int8 step export (`SHIPPED_IMU`) with the test
    windows of the data in ``data_root`` as its test set: raw features normalized with the tag's
    normalization, as the export's own test set would be."""
    from zoo.export.c_backend.project import read_normalization, read_step_export
    from zoo.export.c_backend.shipped import test_windows
    from zoo.pretrained import resolve_tag, verified_dir

    folder = resolve_tag(tag)  # an archived generation by its archive/ name only
    step = verified_dir(folder.name, folder.parent) / "export-step-int8"
    card = read_step_export(step)
    x, y, why = test_windows(card, read_normalization(step, card),
                             Path(data_root) / SHIPPED_IMU[tag])
    if x is None:
        raise FileNotFoundError(why)
    shutil.copytree(step, out)
    np.savez_compressed(out / "testset.npz", x=x, y=y)
    (out / "model_card.json").write_text(json.dumps({**card.to_dict(), "testset": "testset.npz"}))
    return out


def shipped_agreement(data_root: Path) -> list[str]:
    """The shipped IMU tags' own step models (not re-exported) compiled to C for each target and
    compared on the test windows of the data in ``data_root`` (`shipped_step_with_testset`)."""
    import tempfile

    from zoo.export.c_backend import check
    from zoo.export.c_backend.project import write_c_project

    lines = ["| shipped tag | C for tflite-micro vs TFLite Micro | C for litert vs LiteRT builtin "
             "kernels |", "|---|---|---|"]
    for tag in SHIPPED_IMU:
        cells = []
        with tempfile.TemporaryDirectory() as tmp:
            export = shipped_step_with_testset(tag, data_root, Path(tmp) / "step")
            for target, runtime in (("tflite-micro", "tflite-micro"), ("litert", "litert-ref")):
                c_dir = Path(tmp) / target
                c_dir.mkdir()
                write_c_project(export, c_dir, target)
                r = check.compare(export, check.build(c_dir), runtime)
                cells.append(f"{r['identical_logits']} / {r['identical_states']} of "
                             f"{r['windows']}")
        lines.append(f"| `{tag}` | " + " | ".join(cells) + " |")
        _log.debug(lines[-1])
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=program_name("zoo.experiments.c_bench"),
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)
    parser.add_argument("--data-dir", help="the HAR data (folder or archive); needed for timing")
    parser.add_argument("--tflm", help="a host TFLite Micro (e.g. ../shared/tflm); needed for "
                                       "timing")
    parser.add_argument("--out", default="bench/c-har2", help="where runs and exports are kept")
    parser.add_argument("--cells", default=",".join(CELLS),
                        help=f"comma-separated, of: {', '.join(CELLS)}")
    parser.add_argument("--epochs", type=int_in(1), default=2,
                        help="training of the non-shipped cells")
    parser.add_argument("--reps", type=int_in(1), default=200, help="windows per timing pass")
    parser.add_argument("--lstm-units", type=int_in(0, MAX_UNITS), default=32,
                        help="0: no LSTM reference")
    parser.add_argument("--agreement", action="store_true",
                        help="instead of timing: the bit-exactness table of the exports in OUT "
                             "(logits / final state identical, windows) against TFLite Micro, "
                             "LiteRT's builtin kernels and LiteRT with XNNPACK")
    parser.add_argument("--shipped", metavar="DATA_ROOT",
                        help="instead of timing: the shipped HAR-2 / DSA-19 tags' own step models "
                             "in C against the runtimes on the test windows under DATA_ROOT "
                             "(e.g. ../shared/data)")
    args = parser.parse_args(argv)
    if args.shipped:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        lines = shipped_agreement(Path(args.shipped))
        Path(args.out, "c_shipped.md").write_text("\n".join(lines) + "\n")
        print("\n".join(lines))
        return 0
    if not args.agreement and not (args.data_dir and args.tflm):
        parser.error("timing needs --data-dir and --tflm")
    args.cells = [c.strip() for c in args.cells.split(",") if c.strip()]
    unknown = [c for c in args.cells if c not in CELLS]
    if unknown:
        parser.error(f"unknown --cells {', '.join(unknown)}; valid: {', '.join(CELLS)}")
    if args.agreement:
        lines = agreement(args)
        Path(args.out, "c_agreement.md").write_text("\n".join(lines) + "\n")
        print("\n".join(lines))
        return 0
    result = measure(args)
    lines = table(result)
    Path(args.out, "c_bench.md").write_text("\n".join(lines) + "\n")
    Path(args.out, "c_bench.json").write_text(json.dumps(result, indent=1) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
