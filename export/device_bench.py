#!/usr/bin/env python3
"""On-device benchmark for an edge-rnn-zoo export. Copy this file and its siblings
``card_schema.py`` (the card's schema, standard library only), ``device_checks.py`` (the model
file check, the card checked against the models, a shipped tag's sha256) and
``device_runtime.py`` (the TFLite runtimes, the streaming loop) into one folder on the device:

    scp export/device_bench.py export/card_schema.py export/device_checks.py \
        export/device_runtime.py pi@device:bench/

and run

    python3 device_bench.py EXPORT_DIR [--runtime auto|litert|tflite-runtime|tflite-micro]
                            [--threads 1] [--runs 200] [--limit 200] [--json]

It needs Python 3.8+, numpy and one TFLite runtime: ai-edge-litert, tflite-runtime (older
Raspberry Pi images) or tflite-micro. It imports neither TensorFlow nor the zoo.

EXPORT_DIR is what ``zoo export`` writes; the script reads ``model_card.json`` there (the
schema is `ModelCard`, in card_schema.py):

    schema_version  the card's schema (absent in cards from before it had one)
    form            "sequence" (one model: x[1, T, d] -> logits) or "step" (a streaming pair:
                    step: (x_t, h_{t-1}) -> h_t, head: h_T -> logits; the loop runs here)
    files           {"model": ...} or {"step": ..., "head": ...}
    step_io         for "step": {"x": input index, "h": input index, "h_out": output index}
    timesteps, features, state_size
    testset         optional .npz with x (float32 [N, T, d], already normalised) and y (int [N])
    arena_bytes     optional TFLite Micro arena size

Reported: latency median / p90 / p99 (per invoke; for step models per step and per whole
sequence, state fed back), throughput, model bytes, peak resident memory, and accuracy on the
test set when one is present. Integer models are fed by quantizing with each tensor's own scale
and zero point; a step model's int state is fed back directly when h_t and h_{t-1} share their
quantization (the zoo's exports do) and requantized otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import sys
import time
import zipfile

import numpy as np

# The export contract (file names, the card schema, reading the card) lives in card_schema.py,
# standard library only; the model and card checks in device_checks.py; the runtimes and the loop
# in device_runtime.py. Copied to a device, the four files sit side by side: run as a script (or
# imported as a top-level module) this one imports its siblings; in the zoo it is
# zoo.export.device_bench and imports zoo.export.card_schema, .device_checks and .device_runtime.
if __package__:
    from .card_schema import (CARD_FILE, CARD_MARKDOWN_FILE, CARD_SCHEMA_VERSION,  # noqa: F401
                              FORMS, MODEL_NAMES, NORMALIZATION_FILE, STREAM_FILE, TESTSET_FILE,
                              CardError, ExportFolderError, ModelCard, inside_folder,
                              load_card_json, model_file, read_export_card)
    from .device_checks import (check_card_fits_models, check_files_sha256,  # noqa: F401
                                check_step_io, check_tflite, failed_export)
    from .device_runtime import (MAX_THREADS, RUNTIME_MODULES, RUNTIMES,  # noqa: F401
                                 LiteInterpreter, MicroInterpreter, SequenceModel, StepModel,
                                 count_micro_tensors, default_arena, dequantize, detect_runtime,
                                 missing_runtime, open_export, open_model, quantize, quiet_stderr,
                                 same_quantization, state_feedback)
else:  # the sibling file, however this one was started (runpy.run_path adds no path)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from card_schema import (CARD_FILE, CARD_MARKDOWN_FILE, CARD_SCHEMA_VERSION,  # noqa: F401
                             FORMS, MODEL_NAMES, NORMALIZATION_FILE, STREAM_FILE, TESTSET_FILE,
                             CardError, ExportFolderError, ModelCard, inside_folder,
                             load_card_json, model_file, read_export_card)
    from device_checks import (check_card_fits_models, check_files_sha256,  # noqa: F401
                               check_step_io, check_tflite, failed_export)
    from device_runtime import (MAX_THREADS, RUNTIME_MODULES, RUNTIMES,  # noqa: F401
                                LiteInterpreter, MicroInterpreter, SequenceModel, StepModel,
                                count_micro_tensors, default_arena, dequantize, detect_runtime,
                                missing_runtime, open_export, open_model, quantize, quiet_stderr,
                                same_quantization, state_feedback)


# A bad export folder, card, model or test set: reported as one line, exit status 2.
BenchError = ExportFolderError


def probe_model(path, runtime, arena_bytes, timeout=120):
    """Open ``path`` and invoke it once on zeros in a child process; a crash there (TFLite
    Micro does not verify the FlatBuffer, and a damaged value can make it read out of bounds)
    becomes a `BenchError` instead of killing this process."""
    if not hasattr(os, "fork"):
        return  # no cheap child process here; the structural check has run
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child: no cleanup handlers, no output, just the exit status
        code = 1
        try:
            import faulthandler

            faulthandler.disable()  # a crash here is expected and reported by the parent
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            model = open_model(path, runtime, 1, arena_bytes)
            for i in range(len(model.inputs)):
                _, _, shape = model.input_quant(i)
                dtype = model.input_quant(i)[0]
                model.set(i, np.zeros(shape, dtype))
            model.invoke()
            code = 0
        finally:
            os._exit(code)
    deadline = time.time() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.time() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise BenchError(f"{path}: {runtime} did not finish one invoke in {timeout} s")
        time.sleep(0.01)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise BenchError(f"{path}: the {runtime} runtime crashed ({name}) opening or running the "
                         "model once: the file is damaged")
    if os.WEXITSTATUS(status):
        raise BenchError(f"{path}: the {runtime} runtime cannot open or run this model (it "
                         "rejected the file: damaged, or not a model it supports)")


# ------------------------------------------------------------------------------------------ timing
def _percentiles(seconds):
    s = sorted(seconds)
    pick = lambda p: s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]
    return {"median_us": 1e6 * statistics.median(s), "p90_us": 1e6 * pick(90),
            "p99_us": 1e6 * pick(99)}


def benchmark(model, form, x_example, runs, warmup):
    xq = model.prepare(x_example)
    result = {}
    if form == "step":
        h = model.initial_state()
        for t in range(min(warmup, len(xq))):
            h = model.run_step(xq[t], h)
        step_times = []
        for i in range(runs):
            t0 = time.perf_counter()
            h = model.run_step(xq[i % len(xq)], h)
            step_times.append(time.perf_counter() - t0)
        result["per_step"] = _percentiles(step_times)
    for _ in range(warmup if form == "sequence" else 1):
        model.predict_prepared(xq)
    seq_runs = runs if form == "sequence" else max(5, runs // max(1, len(xq)) * 4)
    seq_times = []
    for _ in range(seq_runs):
        t0 = time.perf_counter()
        model.predict_prepared(xq)
        seq_times.append(time.perf_counter() - t0)
    result["per_sequence"] = _percentiles(seq_times)
    result["sequences_per_second"] = 1e6 / result["per_sequence"]["median_us"]
    return result


def peak_rss_mb():
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024  # bytes vs KiB


# -------------------------------------------------------------------------------------------- main
def load_testset(export_dir, card):
    """(x, y) of the card's test set, or (None, None) when the card names none or the file is
    not there; y is None when the file holds no labels (an export of unlabelled calibration
    windows: `zoo export MODEL.keras`); a damaged or misshapen file is a `BenchError`."""
    name = card.testset
    if not name:
        return None, None
    path = inside_folder(export_dir, name, os.path.join(export_dir, CARD_FILE), must_exist=False)
    if not os.path.isfile(path):
        return None, None  # optional: a folder copied to a device without its test set
    try:
        with np.load(path, allow_pickle=False) as data:
            x = data["x"]
            y = data["y"] if "y" in data.files else None
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
        raise BenchError(f"{path}: not a test set with arrays x and y, damaged or truncated "
                         f"({type(err).__name__}: {err})") from None
    want = (card.timesteps, card.features)
    if x.ndim != 3 or tuple(x.shape[1:]) != want or (y is not None and y.shape != (len(x),)):
        raise BenchError(f"{path}: x has shape {x.shape} and y "
                         f"{None if y is None else y.shape}; the model needs x "
                         f"(N, {want[0]}, {want[1]}) and y (N,)")
    if x.dtype.kind not in "fiu":
        raise BenchError(f"{path}: x holds {x.dtype} values; it must hold numbers (float32)")
    if y is not None and y.dtype.kind not in "iu":
        raise BenchError(f"{path}: y holds {y.dtype} values; it must hold integer class "
                         "indices 0..classes-1")
    x = x.astype(np.float32)
    bad = int(np.size(x) - np.count_nonzero(np.isfinite(x)))
    if bad:
        raise BenchError(f"{path}: x holds {bad} non-finite values (NaN or inf) of {x.size}; "
                         "a test set holds normalised finite inputs")
    return x, y


def check_labels(y, classes, path):
    """Test-set labels must be class indices of the model (0..classes-1), or every accuracy
    would be silently wrong."""
    if len(y) and (int(y.min()) < 0 or int(y.max()) >= classes):
        raise BenchError(f"{path}: y holds labels {int(y.min())}..{int(y.max())}; the model has "
                         f"{classes} classes (valid: 0..{classes - 1})")


def open_checked(export_dir, card, runtime, threads):
    """The card's model, each file structurally checked and given one trial run in a child."""
    arenas = {"model": ("arena_bytes", card.arena_bytes), "step": ("arena_bytes", card.arena_bytes),
              "head": ("head_arena_bytes", card.head_arena_bytes)}
    for name in MODEL_NAMES[card.form]:
        path = os.path.join(export_dir, card.files.of(name))
        check_tflite(path)
        probe_with_arena(path, runtime, *arenas[name])
    try:
        return open_export(export_dir, card, runtime, threads)
    except (RuntimeError, ValueError, IndexError, KeyError, TypeError) as err:
        first = (str(err).strip().splitlines() or [""])[0][:200]
        raise BenchError(f"{export_dir}: the {runtime} runtime rejected the model "
                         f"({type(err).__name__}: {first})") from None


def probe_with_arena(path, runtime, key, card_arena):
    """`probe_model` with the card's arena. When that fails under TFLite Micro, the model is
    tried once more with the default arena: if it runs there, the card's arena is too small
    (the file is fine) and the message says so instead of calling the model damaged."""
    if runtime != "tflite-micro" or not card_arena:
        probe_model(path, runtime, card_arena or default_arena(path))
        return
    try:
        probe_model(path, runtime, card_arena)
    except BenchError:
        generous = max(default_arena(path), 4 * card_arena)
        probe_model(path, runtime, generous)  # still failing: the model itself is the problem
        raise BenchError(f"{os.path.join(os.path.dirname(path), CARD_FILE)}: {key} {card_arena} "
                         f"is too small for {path} under TFLite Micro (it runs with "
                         f"{generous} bytes; the model file is fine): give the arena `zoo "
                         f"export` measured, or remove {key} to use the default") from None


def require_runtime(runtime):
    missing = missing_runtime(runtime)
    if missing is not None:
        raise BenchError(f"--runtime {runtime}: not installed here ({missing})")


def opened_models(model):
    """Model name -> opened runtime model, of a `SequenceModel` or `StepModel`."""
    if isinstance(model, StepModel):
        return {"step": model.step, "head": model.head}
    return {"model": model.m}


def run(args):
    card = read_export_card(args.export_dir)
    runtime = detect_runtime() if args.runtime == "auto" else args.runtime
    require_runtime(runtime)
    form = card.form
    check_files_sha256(args.export_dir)
    x_test, y_test = load_testset(args.export_dir, card)
    model = open_checked(args.export_dir, card, runtime, args.threads)
    classes = check_card_fits_models(args.export_dir, card, opened_models(model))
    failed = failed_export(card)
    if failed:  # a `.failed` export is kept for inspection: timing it is what one does
        print(f"device_bench.py: note: {args.export_dir}: {failed}", file=sys.stderr)
    if y_test is not None:
        check_labels(y_test, classes, os.path.join(args.export_dir, card.testset))
    report = {"export_dir": args.export_dir, "runtime": runtime, "threads": args.threads,
              "form": form, "quantize": card.quantize,
              "model_bytes": sum(os.path.getsize(p) for p in model.files),
              # a step model does not fix T: with no test set, the card's timesteps are timed
              "sequence_steps": card.timesteps,
              "sequence_steps_from": "test set" if x_test is not None and len(x_test)
              else ("model" if form == "sequence" else "card")}
    example = x_test[0] if x_test is not None and len(x_test) else np.zeros(
        (card.timesteps, card.features), np.float32)
    report.update(benchmark(model, form, example, args.runs, args.warmup))
    if x_test is not None and len(x_test) and y_test is not None:
        n = len(x_test) if args.limit is None else min(args.limit, len(x_test))
        pred = np.array([int(np.argmax(model.predict(x_test[i]))) for i in range(n)])
        report["accuracy"] = float(np.mean(pred == y_test[:n]))
        report["test_sequences"] = n
    report["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return report


MAX_RUNS = 10_000_000


def int_in(low, high):
    """An argparse type: an integer in low..high (high None: no upper bound)."""
    valid = f"{low}..{high}" if high is not None else f">= {low}"

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer ({valid}), got {text!r}")
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{value} is out of range (valid: {valid})")
        return value

    return parse


def _tag_or_path(source: str) -> str:
    """An installed tag's export by name (`zoo.pretrained.tag_or_path`) when the zoo is
    installed; on a device with this file alone, ``source`` as it is."""
    try:
        from zoo.pretrained import tag_or_path
    except ImportError:
        return source
    return tag_or_path(source, export=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Benchmark a zoo export on this device.",
                                     allow_abbrev=False)
    parser.add_argument("export_dir", help="an export folder, or an installed tag by name "
                                           "(its export: sirnn.har2)")
    parser.add_argument("--runtime", choices=("auto",) + RUNTIMES, default="auto")
    parser.add_argument("--threads", type=int_in(1, MAX_THREADS), default=1,
                        help=f"runtime threads, 1..{MAX_THREADS}")
    parser.add_argument("--runs", type=int_in(1, MAX_RUNS), default=200,
                        help=f"timed invokes (or sequences), 1..{MAX_RUNS}")
    parser.add_argument("--warmup", type=int_in(0, MAX_RUNS), default=20,
                        help=f"untimed invokes first, 0..{MAX_RUNS}")
    parser.add_argument("--limit", type=int_in(1, None), default=None,
                        help="test sequences for accuracy (>= 1; default all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    try:
        args.export_dir = _tag_or_path(args.export_dir)
        report = run(args)
    except (BenchError, ValueError) as err:
        print(f"device_bench.py: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report))
        return 0
    print_report(report)
    return 0


def print_report(report):
    threads = report["threads"]
    print(f"{report['export_dir']}: {report['form']} model, {report['quantize']}, "
          f"{report['model_bytes']:,} bytes, runtime {report['runtime']} ({threads} "
          f"thread{'s' if threads > 1 else ''})")
    if "per_step" in report:
        p = report["per_step"]
        print(f"  per step:     median {p['median_us']:.1f} us  p90 {p['p90_us']:.1f}  "
              f"p99 {p['p99_us']:.1f}")
    p = report["per_sequence"]
    print(f"  per sequence: median {p['median_us']:.1f} us  p90 {p['p90_us']:.1f}  "
          f"p99 {p['p99_us']:.1f}  ({report['sequences_per_second']:.0f} sequences/s of "
          f"{report['sequence_steps']} steps, T from the {report['sequence_steps_from']})")
    if "accuracy" in report:
        print(f"  accuracy:     {100 * report['accuracy']:.2f}% on {report['test_sequences']} "
              "test sequences")
    print(f"  peak memory:  {report['peak_rss_mb']} MB resident")


if __name__ == "__main__":
    sys.exit(main())
