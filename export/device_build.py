"""Build a step export's C++ loop against TensorFlow Lite Micro, run it over test windows and
check it against the Python tflite-micro interpreter; optionally time it.

    python -m zoo.export.device_build EXPORT_DIR|TAG --tflm DIR [--data-dir DIR] [--build-dir DIR]
        [--limit N] [--bench REPS] [--json]

``zoo export --form step`` writes ``main.cc`` (the streaming loop), ``self_test.cc`` (a host
driver), ``zoo_stream.h``, a ``Makefile`` and the models as C arrays (``model_data.h`` / ``.cc``);
this script runs ``make TFLM_DIR=DIR`` (g++ -O2 -std=c++17 -DTF_LITE_STATIC_MEMORY), writes the
test windows as raw float32, runs ``self_test classify`` and compares every prediction and
every logit with ``device_bench.StepModel`` on the ``tflite-micro`` runtime. Exit status 0 when
every prediction is identical (or the check is skipped, saying why), 1 when one differs, 2 on bad
input or a failed build.

An installed tag by name (``zoo device build sirnn.har2_tiny``) is built as it ships: `zoo ship`
leaves out the C arrays and the test set (size), so the arrays are written from its ``.tflite``
files into a copy in the build folder (`with_c_arrays`; the tag's folder is never written, and
its files must still have the sha256s its card lists), and it is checked on the test windows of
its task from ``--data-dir`` or the data where the zoo looks by default; without that data the
check is skipped in one line that says how to get it. The windows of the export's own test set
(``testset.npz``) are used when it has one and ``--data-dir`` is not given.

``--bench REPS`` also times the C++ loop (``self_test bench``: per step and per window, median and
p90) and, in the same run, the Python loop of the same models (``device_bench.benchmark``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from zoo.export import device_bench, device_runtime
from zoo.export.card_schema import CardError, ModelCard, read_export_card
from zoo.pretrained import tag_or_path
from zoo.core.flags import int_in, program_name
from zoo.export.exportdir import C_ARRAY_FILES, DEVICE_SOURCES, ExportDirectory

__all__ = ["DeviceBuildError", "build", "with_c_arrays", "check_windows",
           "check_against_python", "bench_c", "bench_python", "main"]

TFLM_LIBRARY = Path("lib") / "libtensorflow-microlite.a"


class DeviceBuildError(RuntimeError):
    """The export, the TFLite Micro folder or the build is not usable; the message says why."""


def load_step_export(export_dir) -> ModelCard:
    """The model card of a step export that has the C++ sources, or `DeviceBuildError`."""
    export = ExportDirectory(export_dir)
    try:
        form = export.read_card_json().get("form")
        if form != "step":
            raise DeviceBuildError(f"{export.card}: form {form!r}; the C++ loop exists for "
                                   "--form step exports only")
        # A step export from before the C++ loop existed has its C arrays but not these; a
        # shipped tag's has these but not the arrays (`zoo ship` leaves them out: `with_c_arrays`).
        missing = [name for name in DEVICE_SOURCES if not (export.root / name).is_file()]
        if missing:  # checked before the card's other keys: an older export lacks both
            raise DeviceBuildError(f"{export.root} lacks {', '.join(missing)}: it was exported "
                                   "by an older zoo; export it again with `zoo export --form step`")
        return read_export_card(str(export.root))
    except CardError as err:
        raise DeviceBuildError(str(err)) from None


def check_tflm_dir(tflm_dir) -> Path:
    """``tflm_dir`` resolved, after checking it holds the library and the headers."""
    tflm_dir = Path(tflm_dir).resolve()
    for needed in (TFLM_LIBRARY, Path("include") / "tensorflow" / "lite" / "micro"):
        if not (tflm_dir / needed).exists():
            raise DeviceBuildError(
                f"--tflm {tflm_dir}: {needed} not found. Pass a TFLite Micro build: include/ "
                "(tensorflow/, flatbuffers/, ...) and lib/libtensorflow-microlite.a "
                "(docs/device.md says how to make one)")
    return tflm_dir


def with_c_arrays(export_dir, work) -> Path:
    """``export_dir`` ready to build: an export that has its models as C arrays (``model_data.h``
    / ``.cc``) as it is; else (a shipped tag's: `zoo.export.ship` leaves them out, the .tflite
    bytes as text) a copy of it at ``work`` with them written from its .tflite files as
    ``zoo export`` writes them. ``export_dir`` itself is never written (a shipped tag's files
    keep the sha256s its card lists). The one place every command that builds a step export's
    C++ loop gets its arrays (`build`)."""
    from zoo.export.micro import c_array_sources

    export_dir = Path(export_dir)
    if all((export_dir / name).is_file() for name in C_ARRAY_FILES):
        return export_dir
    work = Path(work)
    # A rebuild into the same --build-dir refreshes the copy (the export may have changed), but
    # leaves a file that is already the same as it is, so that make finds the binary up to date.
    shutil.copytree(export_dir, work, dirs_exist_ok=True, copy_function=_copy_if_changed)
    files = read_export_card(str(work)).files
    models = {name: (work / getattr(files, name)).read_bytes() for name in ("step", "head")}
    for name, text in c_array_sources(models).items():
        if not ((work / name).is_file() and (work / name).read_text() == text):
            (work / name).write_text(text)
    return work


def _copy_if_changed(source, target) -> None:
    if not (Path(target).is_file() and Path(target).read_bytes() == Path(source).read_bytes()):
        shutil.copy2(source, target)


def _check_shipped_files(export_dir) -> None:
    """A shipped tag's export must still be what its card lists (``check_files_sha256``)."""
    from zoo.export.device_checks import BenchError, check_files_sha256

    try:
        check_files_sha256(export_dir)
    except BenchError as err:
        raise DeviceBuildError(str(err)) from None


def build(export_dir, tflm_dir, build_dir) -> Path:
    """Run the export's ``Makefile`` (``make self_test``); returns the driver's path.

    Args:
        export_dir: a step export with its C++ sources; one without its C arrays (a shipped
            tag's) is built from a copy with them in ``build_dir/sources`` (`with_c_arrays`).
        tflm_dir: a TFLite Micro build with ``include/`` and ``lib/libtensorflow-microlite.a``.
        build_dir: where the binary goes (the export folder itself is not written).

    Example:

    ```python
    binary = build("runs/har2-sirnn/export-step-int8", "../shared/tflm", "/tmp/build")
    ```
    """
    load_step_export(export_dir)
    tflm_dir = check_tflm_dir(tflm_dir)
    if shutil.which("make") is None or shutil.which("g++") is None:
        raise DeviceBuildError("building the C++ loop needs `make` and `g++` on PATH")
    _check_shipped_files(export_dir)
    build_dir = Path(build_dir).resolve()
    build_dir.mkdir(parents=True, exist_ok=True)
    sources = with_c_arrays(Path(export_dir).resolve(), build_dir / "sources")
    cmd = ["make", "--no-print-directory", "-C", str(sources), "self_test",
           f"TFLM_DIR={tflm_dir}", f"BUILD_DIR={build_dir}", "CXX=g++"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise DeviceBuildError(f"`{' '.join(cmd)}` failed (exit {done.returncode}):\n"
                               f"{(done.stdout + done.stderr)[-4000:]}")
    return build_dir / "self_test"


def write_windows(x: np.ndarray, path) -> Path:
    """The windows ``x`` (N, T, d) as raw float32 in host byte order, as ``self_test`` reads."""
    np.ascontiguousarray(x, dtype=np.float32).tofile(path)
    return Path(path)


def _run(binary, *args) -> str:
    done = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True)
    if done.returncode != 0:
        raise DeviceBuildError(f"{binary} {' '.join(map(str, args))} failed (exit "
                               f"{done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout


def classify_c(binary, windows_file, n: int, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Predictions (int, [n]) and logits (float32, [n, classes]) printed by ``self_test``."""
    rows = [line.split() for line in _run(binary, "classify", windows_file).splitlines()]
    if len(rows) != n or any(len(r) != classes + 1 for r in rows):
        raise DeviceBuildError(f"{binary} printed {len(rows)} rows for {n} windows (expected "
                               f"{n} rows of 1 + {classes} numbers)")
    table = np.array(rows, dtype=np.float64)
    return table[:, 0].astype(np.int64), table[:, 1:].astype(np.float32)


def python_micro_model(export_dir, card):
    """``device_runtime.StepModel`` on the tflite-micro Python runtime, with the export's arenas."""
    return device_runtime.StepModel(str(export_dir), card, "tflite-micro", 1)


def check_windows(export_dir, card: ModelCard, data_dir=None):
    """(x, y, why): the windows to check the C++ loop on, normalized as the models take them,
    and their labels (None without); or (None, None, why not, one line). With ``data_dir``, or
    for an export without its test set (a shipped tag's: `zoo ship` leaves it out), the test
    windows of the card's task from the data (``data_dir``, else where the zoo looks by
    default; nothing is downloaded: `zoo.export.c_backend.shipped.test_windows`); else the
    export's own ``testset.npz``."""
    export = ExportDirectory(export_dir)
    if data_dir is None and export.testset.is_file():
        return (*_testset(export_dir, card), None)
    from zoo.export.c_backend.project import CExportError, read_normalization
    from zoo.export.c_backend.shipped import test_windows

    try:
        norm = read_normalization(export.root, card)
    except CExportError as err:
        raise DeviceBuildError(str(err)) from None
    return test_windows(card, norm if norm is not None else (0.0, 1.0), data_dir,
                        checked="the C++ loop")


def check_against_python(export_dir, binary, work_dir, limit: int | None = None,
                         windows: tuple | None = None) -> dict:
    """Run ``self_test classify`` over the test set and compare with the Python interpreter.

    ``windows``: (x, y) to check on instead of the export's test set (`check_windows`).
    Returns a dict: ``windows``, ``identical_predictions``, ``differing_windows`` (indices),
    ``identical_logits`` (windows whose logits are bit-identical), ``max_abs_logit_diff``, the
    accuracy of each side and ``passed`` (every prediction identical).
    """
    card = load_step_export(export_dir)
    x, y = windows if windows is not None else _testset(export_dir, card)
    if limit is not None:
        x, y = x[:limit], y[:limit]
    windows_file = write_windows(x, Path(work_dir) / "windows.bin")
    c_pred, c_logits = classify_c(binary, windows_file, len(x), card.classes)
    model = python_micro_model(export_dir, card)
    py_logits = np.stack([model.predict(w) for w in x]).astype(np.float32)
    py_pred = py_logits.argmax(-1)
    same = c_pred == py_pred
    return {
        "windows": len(x), "identical_predictions": int(same.sum()),
        "differing_windows": np.flatnonzero(~same).tolist(),
        "c_argmax_matches_c_logits": bool(np.all(c_pred == c_logits.argmax(-1))),
        "identical_logits": int(np.all(c_logits == py_logits, axis=1).sum()),
        "max_abs_logit_diff": float(np.abs(c_logits.astype(np.float64) - py_logits).max()),
        "c_accuracy": None if y is None else float(np.mean(c_pred == y)),
        "python_accuracy": None if y is None else float(np.mean(py_pred == y)),
        "passed": bool(same.all())}


def _testset(export_dir, card: ModelCard):
    try:
        return ExportDirectory(export_dir).read_testset(card)
    except (device_bench.BenchError, FileNotFoundError) as err:
        raise DeviceBuildError(str(err)) from None


def bench_c(binary, window: np.ndarray, work_dir, reps: int) -> dict:
    """``self_test bench``: the C++ loop on ``window`` (T, d), ``reps`` times (per step and per
    window, median and p90 in microseconds)."""
    windows_file = write_windows(window[None], Path(work_dir) / "bench_window.bin")
    return json.loads(_run(binary, "bench", windows_file, reps))


def bench_python(export_dir, window: np.ndarray, reps: int) -> dict:
    """``device_bench.benchmark`` (the Python loop, tflite-micro runtime) on the same window:
    ``reps`` timed windows and ``reps * T / 4`` timed steps."""
    card = load_step_export(export_dir)
    model = python_micro_model(export_dir, card)
    # benchmark() times `runs` single steps, then runs // T * 4 whole windows.
    steps = max(card.timesteps, reps * card.timesteps // 4)
    return device_bench.benchmark(model, "step", window, runs=steps, warmup=20)


def _report_lines(export_dir, check: dict, timing: dict | None) -> list[str]:
    lines = [f"{export_dir}: C++ loop (TFLite Micro library) vs the Python tflite-micro "
             f"interpreter on {check['windows']} test windows",
             f"  predictions identical: {check['identical_predictions']}/{check['windows']}"
             + (f"  (differ at windows {check['differing_windows'][:20]})"
                if check["differing_windows"] else ""),
             f"  logits bit-identical:  {check['identical_logits']}/{check['windows']}, max |diff| "
             f"{check['max_abs_logit_diff']:.3g}",
             (f"  accuracy: C++ {100 * check['c_accuracy']:.2f}%, Python "
              f"{100 * check['python_accuracy']:.2f}%" if check["c_accuracy"] is not None
              else "  accuracy: the test set has no labels")]
    return lines + (_timing_lines(timing) if timing else [])


def _timing_lines(timing: dict) -> list[str]:
    return [f"  {name + ':':<27} step {t['per_step']['median_us']:.2f} / "
            f"{t['per_step']['p90_us']:.2f} us, window {t['per_sequence']['median_us']:.0f} / "
            f"{t['per_sequence']['p90_us']:.0f} us (median / p90)"
            for name, t in (("C++ loop, -O2", timing["c"]),
                            ("Python loop, tflite-micro", timing["python"]))]


def _windows_or_skip(export_dir, card: ModelCard, data_dir, limit):
    """(x, y, None) to check on, or (None, None, why the check is skipped). Data the user named
    that holds no test windows is an error, not a skip."""
    x, y, why = check_windows(export_dir, card, data_dir)
    if x is None and data_dir is not None:
        raise DeviceBuildError(why)
    if x is not None and limit is not None:
        x, y = x[:limit], None if y is None else y[:limit]
    return x, y, why


def build_and_check(args, work: Path) -> dict:
    """Build ``args.export_dir`` and check it (and time it with ``args.bench``); returns
    ``check`` (None when skipped), ``check_skipped`` (why, one line, or None) and ``timing``."""
    card = load_step_export(args.export_dir)
    # The windows first: data the user named that holds none fails before the build.
    x, y, why = _windows_or_skip(args.export_dir, card, args.data_dir, args.limit)
    binary = build(args.export_dir, args.tflm, args.build_dir or work)
    check = None if x is None else check_against_python(args.export_dir, binary, work,
                                                        windows=(x, y))
    timing = None
    if args.bench:  # a zero window of the card's length without test windows (as device_bench)
        window = x[0] if x is not None else np.zeros((card.timesteps, card.features), np.float32)
        timing = {"c": bench_c(binary, window, work, args.bench),
                  "python": bench_python(args.export_dir, window, args.bench)}
    return {"check": check, "check_skipped": why if check is None else None, "timing": timing}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program_name("zoo.export.device_build"),  # `zoo device build` when run by zoo
        description="Build a step export's C++ loop against TFLite Micro and check it against "
                    "the Python tflite-micro interpreter on the whole test set.",
                    allow_abbrev=False)
    parser.add_argument("export_dir", help="a folder written by `zoo export --form step`, or an "
                                           "installed tag by name (its step export: sirnn.har2)")
    parser.add_argument("--tflm", required=True,
                        help="TFLite Micro build: include/ and lib/libtensorflow-microlite.a")
    parser.add_argument("--build-dir", help="where the binary goes (default: a temporary folder)")
    parser.add_argument("--data-dir",
                        help="the task's data (folder or archive): check on its test windows "
                             "instead of the export's test set; a shipped tag's export has none, "
                             "so without this flag it is checked on the data where the zoo looks "
                             "by default ($ZOO_DATA_DIR), or the check is skipped, saying so")
    # int_in: digits only (int() also took "1_000" and " 5"), >= 1, the error naming the flag.
    parser.add_argument("--limit", type=int_in(1), metavar="N",
                        help="check only the first N test windows")
    parser.add_argument("--bench", type=int_in(1), metavar="REPS",
                        help="also time the C++ and the Python loop over REPS windows")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        args.export_dir = tag_or_path(args.export_dir, export=True)
    except ValueError as err:
        print(f"device_build: error: {err}", file=sys.stderr)
        return 2
    try:
        with tempfile.TemporaryDirectory(prefix="zoo-device-") as tmp:
            report = build_and_check(args, Path(tmp))
    except DeviceBuildError as err:
        print(f"device_build: error: {err}", file=sys.stderr)
        return 2
    check = report["check"]
    if args.json:
        print(json.dumps(report))
    elif check is None:
        print(f"{args.export_dir}: built; the C++ = Python check is skipped: "
              f"{report['check_skipped']}")
        if report["timing"]:
            print("\n".join(_timing_lines(report["timing"])))
    else:
        print("\n".join(_report_lines(args.export_dir, check, report["timing"])))
    return 0 if check is None or check["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
