"""Build a C export and check it against the TFLite int8 step + head models, window by window.

The reference is the zoo's own streaming loop (`export.device_bench.StepModel`: the step model
invoked per sample with the state fed back, the head on the final state) under TensorFlow Lite
Micro or LiteRT. Compared: the int8 logits and the final int8 state of every window, on the
int8 path (`zoo_app --int8`, the test windows quantized as the loop quantizes them) and on the
float path (`zoo_app`, raw float features that the C code normalizes and quantizes itself).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from export import device_bench
from export.c_backend.graph import read_graph
from export.c_backend.project import CExportError


def build(c_dir: Path, cc: str = "cc", extra: str = "") -> Path:
    """``make`` in ``c_dir`` (warnings are errors); the zoo_app binary."""
    cmd = ["make", "-s", "-C", str(c_dir), f"CC={cc}"] + ([f"CFLAGS={extra}"] if extra else [])
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise CExportError(f"{c_dir}: make failed:\n{done.stdout}{done.stderr}")
    return c_dir / "zoo_app"


def run_app(app: Path, windows: np.ndarray, int8: bool, state: bool = True):
    """(logits [N, C], states [N, D]) that zoo_app prints for ``windows``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("windows.i8" if int8 else "windows.f32")
        windows.astype(np.int8 if int8 else "<f4").tofile(path)
        args = [str(app)] + (["--int8"] if int8 else []) + (["--state"] if state else []) + [str(path)]
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    logits, states = [], []
    for line in out.splitlines():
        left, _, right = line.partition("|")
        logits.append([int(v) for v in left.split()])
        states.append([int(v) for v in right.split()])
    return np.asarray(logits, np.int8), np.asarray(states, np.int8)


class _Model:
    """One TFLite model under a runtime: 'tflite-micro', 'litert' (LiteRT as users run it, with
    its default XNNPACK delegate) or 'litert-ref' (LiteRT's builtin reference kernels)."""

    def __init__(self, path: Path, runtime: str):
        if runtime == "tflite-micro":
            from tflite_micro.python.tflite_micro import runtime as tflm

            self.m = tflm.Interpreter.from_bytes(path.read_bytes(), arena_size=1 << 20)
            self.set, self.get = self.m.set_input, self.m.get_output
        else:
            from ai_edge_litert.interpreter import Interpreter, OpResolverType

            resolver = (OpResolverType.BUILTIN_REF if runtime == "litert-ref"
                        else OpResolverType.AUTO)
            self.m = Interpreter(model_path=str(path), experimental_op_resolver_type=resolver)
            self.m.allocate_tensors()
            ins, outs = self.m.get_input_details(), self.m.get_output_details()
            self.set = lambda v, i: self.m.set_tensor(ins[i]["index"], v)
            self.get = lambda i: self.m.get_tensor(outs[i]["index"])

    def __call__(self, *inputs):
        for i, value in enumerate(inputs):
            self.set(value, i)
        self.m.invoke()
        return np.array(self.get(0))


def reference(export_dir: Path, xq: np.ndarray, runtime: str):
    """(int8 logits [N, C], final int8 state [N, D]) of the zoo's streaming loop over the
    quantized windows ``xq`` [N, T, F]: the step model per sample with the state fed back in
    h_prev's quantization (`device_bench.state_feedback`), the head on the final state."""
    export_dir = Path(export_dir)
    card = json.loads((export_dir / "model_card.json").read_text())
    step = _Model(export_dir / card["files"]["step"], runtime)
    head = _Model(export_dir / card["files"]["head"], runtime)
    sq = card["state_quantization"]
    h_in, h_out = ((sq[k]["scale"], sq[k]["zero_point"]) for k in ("h_in", "h_out"))
    head_graph = read_graph((export_dir / card["files"]["head"]).read_bytes())
    head_t = head_graph.tensor(head_graph.inputs[0])
    head_q = (float(head_t.scale), head_t.zero_point)
    direct_head = np.float32(head_q[0]) == np.float32(h_in[0]) and head_q[1] == h_in[1]
    x_pos, h_pos = card["step_io"]["x"], card["step_io"]["h"]
    logits, states = [], []
    for window in xq:
        h = np.full((1, card["state_size"]), h_in[1], np.int8)
        for t in range(len(window)):
            args = [None, None]
            args[x_pos], args[h_pos] = window[t].reshape(1, -1), h
            out = step(*args)
            h = out if sq["tied"] else device_bench.quantize(
                device_bench.dequantize(out, np.int8, h_out), np.int8, h_in)
        head_in = h if direct_head else device_bench.quantize(
            device_bench.dequantize(h, np.int8, h_in), np.int8, head_q)
        logits.append(head(head_in).reshape(-1))
        states.append(h.reshape(-1))
    return np.asarray(logits, np.int8), np.asarray(states, np.int8)


def quantized_windows(export_dir: Path, x: np.ndarray) -> np.ndarray:
    """The int8 inputs the loop feeds for normalized windows ``x`` [N, T, F]."""
    card = json.loads((Path(export_dir) / "model_card.json").read_text())
    q = card["state_quantization"]["x"]
    return device_bench.quantize(x, np.int8, (q["scale"], q["zero_point"]))


def raw_windows(export_dir: Path, x: np.ndarray):
    """Raw-feature windows for normalized ``x`` (x * std + mean, float32), and the int8 inputs
    the loop would feed for them: normalized again exactly as the task normalizes."""
    norm = json.loads((Path(export_dir) / "normalization.json").read_text())
    mean, std = (np.asarray(norm[k], np.float32) for k in ("mean", "std"))
    raw = (x.astype(np.float32) * std + mean).astype(np.float32)
    return raw, quantized_windows(export_dir, ((raw - mean) / std).astype(np.float32))


def compare(export_dir: Path, app: Path, runtime: str = "tflite-micro", limit: int | None = None):
    """Window counts of identical logits and identical final states, C vs ``runtime``, on the
    int8 path and on the raw-float path, over the export's test windows."""
    card = device_bench.read_card(str(export_dir))
    x, _ = device_bench.load_testset(str(export_dir), card)
    x = x[:limit] if limit else x
    xq = quantized_windows(export_dir, x)
    ref_logits, ref_states = reference(export_dir, xq, runtime)
    c_logits, c_states = run_app(app, xq, int8=True)
    raw, raw_q = raw_windows(export_dir, x)
    ref_raw_logits, _ = reference(export_dir, raw_q, runtime) if not np.array_equal(raw_q, xq) \
        else (ref_logits, ref_states)
    c_raw_logits, _ = run_app(app, raw, int8=False)
    same = lambda a, b: int(np.sum(np.all(a == b, axis=1)))
    return {"runtime": runtime, "windows": len(x),
            "identical_logits": same(c_logits, ref_logits),
            "identical_states": same(c_states, ref_states),
            "identical_logits_raw_float_input": same(c_raw_logits, ref_raw_logits),
            "max_abs_logit_diff": int(np.max(np.abs(c_logits.astype(int) - ref_logits)))}
