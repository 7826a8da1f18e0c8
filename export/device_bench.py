#!/usr/bin/env python3
"""On-device benchmark for an edge-rnn-zoo export. Copy this file and its sibling
``card_schema.py`` (the card's schema, standard library only) and ``device_runtime.py`` (the model
check and the TFLite runtimes) into one folder on the device:

    scp export/device_bench.py export/card_schema.py export/device_runtime.py pi@device:bench/

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
# standard library only; the model check and the runtimes in device_runtime.py. Copied to a
# device, the three files sit side by side: run as a script (or imported as a top-level module)
# this one imports its siblings; in the zoo it is export.device_bench and imports
# export.card_schema and export.device_runtime.
if __package__:
    from .card_schema import (CARD_FILE, CARD_MARKDOWN_FILE, CARD_SCHEMA_VERSION,  # noqa: F401
                              FORMS, MODEL_NAMES, NORMALIZATION_FILE, STREAM_FILE, TESTSET_FILE,
                              CardError, ExportFolderError, ModelCard, inside_folder,
                              load_card_json, model_file, read_card)
    from .device_runtime import (RUNTIME_MODULES, RUNTIMES, LiteInterpreter,  # noqa: F401
                                 MicroInterpreter, check_tflite, count_micro_tensors,
                                 detect_runtime, missing_runtime, quiet_stderr)
else:  # the sibling file, however this one was started (runpy.run_path adds no path)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from card_schema import (CARD_FILE, CARD_MARKDOWN_FILE, CARD_SCHEMA_VERSION,  # noqa: F401
                             FORMS, MODEL_NAMES, NORMALIZATION_FILE, STREAM_FILE, TESTSET_FILE,
                             CardError, ExportFolderError, ModelCard, inside_folder,
                             load_card_json, model_file, read_card)
    from device_runtime import (RUNTIME_MODULES, RUNTIMES, LiteInterpreter,  # noqa: F401
                                MicroInterpreter, check_tflite, count_micro_tensors,
                                detect_runtime, missing_runtime, quiet_stderr)


# A bad export folder, card, model or test set: reported as one line, exit status 2.
BenchError = ExportFolderError


def open_model(path, runtime, threads, arena_bytes):
    if runtime == "tflite-micro":
        return MicroInterpreter(path, arena_bytes or max(10 * os.path.getsize(path), 16384))
    return LiteInterpreter(path, runtime, threads)


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


# ------------------------------------------------------------------------------------ quantization
def quantize(x, dtype, quant):
    scale, zero_point = quant
    if np.dtype(dtype).kind == "f" or not scale:
        return np.asarray(x, dtype=dtype)
    info = np.iinfo(dtype)
    q = np.round(np.asarray(x, np.float32) / scale) + zero_point
    return np.clip(q, info.min, info.max).astype(dtype)


def dequantize(q, dtype, quant):
    scale, zero_point = quant
    if np.dtype(dtype).kind == "f" or not scale:
        return np.asarray(q, np.float32)
    return (q.astype(np.float32) - zero_point) * scale


# ----------------------------------------------------------------------------------------- models
class SequenceModel:
    def __init__(self, export_dir, card, runtime, threads):
        path = os.path.join(export_dir, card.files["model"])
        self.files = [path]
        self.m = open_model(path, runtime, threads, card.arena_bytes)
        self.in_dtype, self.in_quant, self.in_shape = self.m.input_quant(0)
        self.out_dtype, self.out_quant, _ = self.m.output_quant(0)

    def prepare(self, x):
        return quantize(x[None].reshape(self.in_shape), self.in_dtype, self.in_quant)

    def predict_prepared(self, xq):
        self.m.reset()
        self.m.set(0, xq)
        self.m.invoke()
        return dequantize(self.m.get(0), self.out_dtype, self.out_quant)[0]

    def predict(self, x):
        return self.predict_prepared(self.prepare(x))


class StepModel:
    def __init__(self, export_dir, card, runtime, threads):
        io = card.step_io
        self.x_idx, self.h_idx, self.h_out = io["x"], io["h"], io["h_out"]
        step_path = os.path.join(export_dir, card.files["step"])
        head_path = os.path.join(export_dir, card.files["head"])
        self.files = [step_path, head_path]
        self.step = open_model(step_path, runtime, threads, card.arena_bytes)
        self.head = open_model(head_path, runtime, threads, card.head_arena_bytes)
        check_step_io(self.step, io, step_path)
        self.x_dtype, self.x_quant, self.x_shape = self.step.input_quant(self.x_idx)
        self.h_dtype, self.h_quant, self.h_shape = self.step.input_quant(self.h_idx)
        self.ho_dtype, self.ho_quant, _ = self.step.output_quant(self.h_out)
        self.hh_dtype, self.hh_quant, _ = self.head.input_quant(0)
        self.lo_dtype, self.lo_quant, _ = self.head.output_quant(0)
        self.direct_feedback, self.direct_head = state_feedback(
            h_in=(self.h_dtype, self.h_quant), h_out=(self.ho_dtype, self.ho_quant),
            head_in=(self.hh_dtype, self.hh_quant))

    def prepare(self, x):
        return quantize(x[:, None, :].reshape((len(x),) + self.x_shape), self.x_dtype, self.x_quant)

    def initial_state(self):
        return quantize(np.zeros(self.h_shape, np.float32), self.h_dtype, self.h_quant)

    def run_step(self, xq_t, h):
        self.step.set(self.x_idx, xq_t)
        self.step.set(self.h_idx, h)
        self.step.invoke()
        out = self.step.get(self.h_out)
        if self.direct_feedback:
            return out
        return quantize(dequantize(out, self.ho_dtype, self.ho_quant), self.h_dtype, self.h_quant)

    def logits(self, h):
        if not self.direct_head:
            h = quantize(dequantize(h, self.h_dtype, self.h_quant), self.hh_dtype, self.hh_quant)
        self.head.set(0, h)
        self.head.invoke()
        return dequantize(self.head.get(0), self.lo_dtype, self.lo_quant)[0]

    def predict_prepared(self, xq):
        self.step.reset()
        self.head.reset()
        h = self.initial_state()
        for t in range(len(xq)):
            h = self.run_step(xq[t], h)
        return self.logits(h)

    def predict(self, x):
        return self.predict_prepared(self.prepare(x))


def check_step_io(step, io, step_path):
    """The card's ``step_io`` indices must name tensors the step model has (a bad index would
    otherwise surface as the runtime's IndexError, or -1 as the last tensor)."""
    for key, tensors, kind in (("x", step.inputs, "input"), ("h", step.inputs, "input"),
                               ("h_out", step.outputs, "output")):
        if not 0 <= io[key] < len(tensors):
            raise BenchError(f"{CARD_FILE}: step_io {key} is {io[key]}, but {step_path} has "
                             f"{len(tensors)} {kind}s (valid: 0..{len(tensors) - 1})")


def _size(shape):
    return int(np.prod(shape)) if len(shape) else 1


def check_model_fits_card(model, card, card_path):
    """The card's ``timesteps`` / ``features`` / ``state_size`` must be what the model takes:
    a wrong card would otherwise time a different sequence length, or fail in a reshape. A step
    model does not know T, so for it ``timesteps`` is the card's word (and the report says it).
    Returns the number of logits, which bounds the test set's labels."""
    if isinstance(model, SequenceModel):
        want = (1, card.timesteps, card.features)
        if _size(model.in_shape) != _size(want) or model.in_shape[-1] != card.features:
            raise BenchError(f"{card_path}: timesteps {card.timesteps} and features "
                             f"{card.features} say the model takes {want}, but "
                             f"{model.files[0]} takes {tuple(int(n) for n in model.in_shape)}; the card does not "
                             "belong to this model")
        return _size(model.m.output_quant(0)[2])
    io = card.step_io
    x_size, h_size = _size(model.x_shape), _size(model.h_shape)
    if x_size != card.features:
        swapped = (" (step_io x and h swapped?)"
                   if _size(model.step.input_quant(io["h"])[2]) == x_size else "")
        raise BenchError(f"{card_path}: features is {card.features}, but step_io x (input "
                         f"{io['x']} of {model.files[0]}) takes {x_size} values{swapped}")
    if card.state_size is not None and h_size != card.state_size:
        raise BenchError(f"{card_path}: state_size is {card.state_size}, but step_io h (input "
                         f"{io['h']} of {model.files[0]}) takes {h_size} values")
    h_out_size = _size(model.step.output_quant(io["h_out"])[2])
    head_size = _size(model.head.input_quant(0)[2])
    if h_out_size != h_size or head_size != h_size:
        raise BenchError(f"{card_path}: the state does not go round: step_io h takes {h_size} "
                         f"values, h_out gives {h_out_size}, {model.files[1]} takes {head_size}")
    return _size(model.head.output_quant(0)[2])


def open_export(export_dir, card, runtime, threads=1):
    """The `SequenceModel` or `StepModel` of an export, as its card's form says."""
    return (StepModel if card.form == "step" else SequenceModel)(export_dir, card, runtime,
                                                                 threads)


def same_quantization(a, b):
    """Whether two tensors, each given as ``(dtype, (scale, zero_point))``, store values the same
    way, so that one's raw values can be fed to the other unchanged."""
    (dtype_a, (scale_a, zp_a)), (dtype_b, (scale_b, zp_b)) = a, b
    return (np.dtype(dtype_a) == np.dtype(dtype_b)
            and abs(float(scale_a) - float(scale_b)) <= 1e-12 * max(1.0, abs(float(scale_a)))
            and int(zp_a) == int(zp_b))


def state_feedback(h_in, h_out, head_in):
    """``(direct_feedback, direct_head)`` of a step / head pair, each tensor given as
    ``(dtype, (scale, zero_point))``: step input h_prev, step output h_t, head input h.

    The loop keeps the state in h_prev's quantization, the one the next step consumes: h_t goes
    straight back in when it shares that quantization (``direct_feedback``), else it is
    requantized into it. So the final state handed to the head is in h_prev's quantization too,
    whatever h_t's is, and goes in unchanged only when the head's input shares h_prev's
    (``direct_head``). The C++ loop that ``zoo export`` writes makes the same two tests."""
    return same_quantization(h_out, h_in), same_quantization(h_in, head_in)


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
    not there; a damaged or misshapen file is a `BenchError`."""
    name = card.testset
    if not name:
        return None, None
    path = inside_folder(export_dir, name, os.path.join(export_dir, CARD_FILE), must_exist=False)
    if not os.path.isfile(path):
        return None, None  # optional: a folder copied to a device without its test set
    try:
        with np.load(path, allow_pickle=False) as data:
            x, y = data["x"], data["y"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
        raise BenchError(f"{path}: not a test set with arrays x and y, damaged or truncated "
                         f"({type(err).__name__}: {err})") from None
    want = (card.timesteps, card.features)
    if x.ndim != 3 or tuple(x.shape[1:]) != want or y.shape != (len(x),):
        raise BenchError(f"{path}: x has shape {x.shape} and y {y.shape}; the model needs x "
                         f"(N, {want[0]}, {want[1]}) and y (N,)")
    if x.dtype.kind not in "fiu":
        raise BenchError(f"{path}: x holds {x.dtype} values; it must hold numbers (float32)")
    if y.dtype.kind not in "iu":
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
        path = os.path.join(export_dir, card.files[name])
        check_tflite(path)
        probe_with_arena(path, runtime, *arenas[name])
    try:
        return open_export(export_dir, card, runtime, threads)
    except (RuntimeError, ValueError, IndexError, KeyError, TypeError) as err:
        first = (str(err).strip().splitlines() or [""])[0][:200]
        raise BenchError(f"{export_dir}: the {runtime} runtime rejected the model "
                         f"({type(err).__name__}: {first})") from None


def default_arena(path):
    """The TFLite Micro arena used when the card gives none: generous for the zoo's models."""
    return max(10 * os.path.getsize(path), 16384)


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


def run(args):
    card = read_card(args.export_dir)
    runtime = detect_runtime() if args.runtime == "auto" else args.runtime
    require_runtime(runtime)
    form = card.form
    x_test, y_test = load_testset(args.export_dir, card)
    model = open_checked(args.export_dir, card, runtime, args.threads)
    card_path = os.path.join(args.export_dir, CARD_FILE)
    classes = check_model_fits_card(model, card, card_path)
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
    if x_test is not None and len(x_test):
        n = len(x_test) if args.limit is None else min(args.limit, len(x_test))
        pred = np.array([int(np.argmax(model.predict(x_test[i]))) for i in range(n)])
        report["accuracy"] = float(np.mean(pred == y_test[:n]))
        report["test_sequences"] = n
    report["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description="Benchmark a zoo export on this device.")
    parser.add_argument("export_dir")
    parser.add_argument("--runtime", choices=("auto",) + RUNTIMES, default="auto")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=200, help="timed invokes (or sequences)")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--limit", type=int, default=None, help="test sequences for accuracy")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.warmup < 0 or args.threads < 1 or (args.limit or 0) < 0:
        parser.error("--runs and --threads must be >= 1, --warmup and --limit >= 0")
    try:
        report = run(args)
    except BenchError as err:
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
