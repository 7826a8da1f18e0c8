#!/usr/bin/env python3
"""On-device benchmark for an edge-rnn-zoo export. Copy this one file to the device and run

    python3 device_bench.py EXPORT_DIR [--runtime auto|litert|tflite-runtime|tflite-micro]
                            [--threads 1] [--runs 200] [--limit 200] [--json]

It needs Python 3.8+, numpy and one TFLite runtime: ai-edge-litert, tflite-runtime (older
Raspberry Pi images) or tflite-micro. It imports neither TensorFlow nor the zoo.

EXPORT_DIR is what ``zoo export`` writes; the script reads ``model_card.json`` there:

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
import statistics
import sys
import time

import numpy as np

RUNTIMES = ("litert", "tflite-runtime", "tflite-micro")


# ---------------------------------------------------------------------------------------- runtimes
class _LiteInterpreter:
    """ai-edge-litert or tflite-runtime (same API)."""

    def __init__(self, path, runtime, threads):
        if runtime == "litert":
            from ai_edge_litert.interpreter import Interpreter
        else:
            from tflite_runtime.interpreter import Interpreter
        self._interp = Interpreter(model_path=path, num_threads=threads)
        self._interp.allocate_tensors()
        self.inputs = self._interp.get_input_details()
        self.outputs = self._interp.get_output_details()

    def input_quant(self, i):
        d = self.inputs[i]
        return d["dtype"], d["quantization"], tuple(d["shape"])

    def output_quant(self, i):
        d = self.outputs[i]
        return d["dtype"], d["quantization"], tuple(d["shape"])

    def set(self, i, value):
        self._interp.set_tensor(self.inputs[i]["index"], value)

    def invoke(self):
        self._interp.invoke()

    def get(self, i):
        return self._interp.get_tensor(self.outputs[i]["index"])

    def reset(self):
        pass


class _MicroInterpreter:
    """The tflite-micro Python interpreter (no threads; an explicit arena)."""

    def __init__(self, path, arena_bytes):
        from tflite_micro.python.tflite_micro import runtime

        self._interp = runtime.Interpreter.from_file(path, arena_size=arena_bytes)
        n_in, n_out = 0, 0
        while True:  # the TFLM API has no count: probe until an index is rejected
            try:
                self._interp.get_input_details(n_in)
                n_in += 1
            except Exception:  # noqa: BLE001 - TFLM raises a bare RuntimeError
                break
        while True:
            try:
                self._interp.get_output_details(n_out)
                n_out += 1
            except Exception:  # noqa: BLE001
                break
        self.inputs = [self._interp.get_input_details(i) for i in range(n_in)]
        self.outputs = [self._interp.get_output_details(i) for i in range(n_out)]

    @staticmethod
    def _quant(d):
        q = d.get("quantization_parameters") or {}
        scales, zps = list(q.get("scales", [])), list(q.get("zero_points", []))
        return (float(scales[0]), int(zps[0])) if scales else (0.0, 0)

    def input_quant(self, i):
        d = self.inputs[i]
        return np.dtype(d["dtype"]).type, self._quant(d), tuple(d["shape"])

    def output_quant(self, i):
        d = self.outputs[i]
        return np.dtype(d["dtype"]).type, self._quant(d), tuple(d["shape"])

    def set(self, i, value):
        self._interp.set_input(value, i)

    def invoke(self):
        self._interp.invoke()

    def get(self, i):
        return self._interp.get_output(i)

    def reset(self):
        self._interp.reset()


def detect_runtime() -> str:
    for name, module in (("litert", "ai_edge_litert.interpreter"),
                         ("tflite-runtime", "tflite_runtime.interpreter"),
                         ("tflite-micro", "tflite_micro.python.tflite_micro.runtime")):
        try:
            __import__(module)
            return name
        except ImportError:
            continue
    raise SystemExit("no TFLite runtime found: pip install ai-edge-litert (or tflite-runtime, or "
                     "tflite-micro)")


def open_model(path, runtime, threads, arena_bytes):
    if runtime == "tflite-micro":
        return _MicroInterpreter(path, arena_bytes or max(10 * os.path.getsize(path), 16384))
    return _LiteInterpreter(path, runtime, threads)


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
        path = os.path.join(export_dir, card["files"]["model"])
        self.files = [path]
        self.m = open_model(path, runtime, threads, card.get("arena_bytes"))
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
        io = card["step_io"]
        self.x_idx, self.h_idx, self.h_out = io["x"], io["h"], io["h_out"]
        step_path = os.path.join(export_dir, card["files"]["step"])
        head_path = os.path.join(export_dir, card["files"]["head"])
        self.files = [step_path, head_path]
        arena = card.get("arena_bytes")
        self.step = open_model(step_path, runtime, threads, arena)
        self.head = open_model(head_path, runtime, threads, card.get("head_arena_bytes"))
        self.x_dtype, self.x_quant, self.x_shape = self.step.input_quant(self.x_idx)
        self.h_dtype, self.h_quant, self.h_shape = self.step.input_quant(self.h_idx)
        self.ho_dtype, self.ho_quant, _ = self.step.output_quant(self.h_out)
        self.hh_dtype, self.hh_quant, _ = self.head.input_quant(0)
        self.lo_dtype, self.lo_quant, _ = self.head.output_quant(0)
        # h_t can go straight back in as h_{t-1} when both tensors share dtype and quantization.
        self.direct_feedback = (self.ho_dtype == self.h_dtype
                                and _same_quant(self.ho_quant, self.h_quant))
        self.direct_head = (self.ho_dtype == self.hh_dtype
                            and _same_quant(self.ho_quant, self.hh_quant))

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


def _same_quant(a, b):
    return abs(float(a[0]) - float(b[0])) <= 1e-12 * max(1.0, abs(float(a[0]))) and \
        int(a[1]) == int(b[1])


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

    card_path = os.path.join(args.export_dir, "model_card.json")
    if not os.path.isfile(card_path):
        raise SystemExit(f"{card_path} not found: pass a folder written by `zoo export`")
    with open(card_path) as f:
        card = json.load(f)
    runtime = detect_runtime() if args.runtime == "auto" else args.runtime
    form = card["form"]
    if form not in ("sequence", "step"):
        raise SystemExit(f"{card_path}: unknown form {form!r}; expected 'sequence' or 'step'")
    model = (StepModel if form == "step" else SequenceModel)(args.export_dir, card, runtime,
                                                             args.threads)
    report = {"export_dir": args.export_dir, "runtime": runtime, "threads": args.threads,
              "form": form, "quantize": card.get("quantize"),
              "model_bytes": sum(os.path.getsize(p) for p in model.files)}
    testset = card.get("testset")
    x_test = y_test = None
    if testset and os.path.isfile(os.path.join(args.export_dir, testset)):
        with np.load(os.path.join(args.export_dir, testset)) as data:
            x_test, y_test = data["x"].astype(np.float32), data["y"]
    example = x_test[0] if x_test is not None else np.zeros(
        (card["timesteps"], card["features"]), np.float32)
    report.update(benchmark(model, form, example, args.runs, args.warmup))
    if x_test is not None:
        n = len(x_test) if args.limit is None else min(args.limit, len(x_test))
        pred = np.array([int(np.argmax(model.predict(x_test[i]))) for i in range(n)])
        report["accuracy"] = float(np.mean(pred == y_test[:n]))
        report["test_sequences"] = n
    report["peak_rss_mb"] = round(peak_rss_mb(), 1)
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"{args.export_dir}: {form} model, {report['quantize']}, {report['model_bytes']:,} bytes, "
          f"runtime {runtime} ({args.threads} thread{'s' if args.threads > 1 else ''})")
    if "per_step" in report:
        p = report["per_step"]
        print(f"  per step:     median {p['median_us']:.1f} us  p90 {p['p90_us']:.1f}  "
              f"p99 {p['p99_us']:.1f}")
    p = report["per_sequence"]
    print(f"  per sequence: median {p['median_us']:.1f} us  p90 {p['p90_us']:.1f}  "
          f"p99 {p['p99_us']:.1f}  ({report['sequences_per_second']:.0f} sequences/s)")
    if "accuracy" in report:
        print(f"  accuracy:     {100 * report['accuracy']:.2f}% on {report['test_sequences']} "
              "test sequences")
    print(f"  peak memory:  {report['peak_rss_mb']} MB resident")
    return 0


if __name__ == "__main__":
    sys.exit(main())
