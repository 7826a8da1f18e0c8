"""Build a C export and check it against the TFLite int8 step + head models, window by window.

The reference is the zoo's own streaming loop (`zoo.export.device_runtime.StepModel`: the step model
invoked per sample with the state fed back, the head on the final state) under TensorFlow Lite
Micro or LiteRT. Compared: the int8 logits and the final int8 state of every window, on the
int8 path (an ``INT8`` window file: the test windows quantized as the loop quantizes them), on
the raw float path (``RAW ``: raw features that the C code normalizes and quantizes itself) and
on the normalized path (``NORM``: the test windows as they are, quantized by the C code); the
window files are `zoo.export.c_backend.windows`'.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import numpy as np

from zoo.export import device_runtime
from zoo.export.c_backend.project import CExportError
from zoo.export.c_backend.windows import write_windows
from zoo.export.card_schema import read_export_card
from zoo.export.exportdir import load_testset


def build(c_dir: Path, cc: str = "cc", extra: str = "", shown_as: Path | None = None) -> Path:
    """``make`` in ``c_dir`` (warnings are errors); the zoo_app binary. ``shown_as``: the
    folder's name in the error (a staging folder is built under the name it will have)."""
    cmd = ["make", "-s", "-C", str(c_dir), f"CC={cc}"] + ([f"CFLAGS={extra}"] if extra else [])
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise CExportError(f"{shown_as or c_dir}: make failed:\n{done.stdout}{done.stderr}")
    return c_dir / "zoo_app"


def run_app(app: Path, windows: np.ndarray, kind: str, state: bool = True):
    """(logits [N, C], states [N, D]) that zoo_app prints for ``windows`` written as a window
    file of ``kind`` (``raw``, ``normalized`` or ``int8``: `windows.write_windows`)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = write_windows(Path(tmp) / "windows.zoow", windows, kind)
        args = [str(app)] + (["--state"] if state else []) + [str(path)]
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    logits, states = [], []
    for line in out.splitlines():
        left, _, right = line.partition("|")
        logits.append([int(v) for v in left.split()])
        states.append([int(v) for v in right.split()])
    return np.asarray(logits, np.int8), np.asarray(states, np.int8)


def reference(model: device_runtime.StepModel, xq: np.ndarray):
    """(int8 logits [N, C], final int8 state [N, D]) of the zoo's streaming loop
    (`device_runtime.StepModel`: the step model per sample with the state fed back by
    `device_runtime.state_feedback`, the head on the final state) over the quantized windows
    ``xq`` [N, T, F]."""
    logits, states = [], []
    for window in xq:
        raw, h = model.run_prepared(window.reshape((len(window),) + model.x_shape))
        logits.append(raw.reshape(-1))
        states.append(h.reshape(-1))
    return np.asarray(logits, np.int8), np.asarray(states, np.int8)


def quantized_windows(model: device_runtime.StepModel, x: np.ndarray) -> np.ndarray:
    """The int8 inputs the loop feeds for normalized windows ``x`` [N, T, F]."""
    return np.stack([model.prepare(window).reshape(window.shape) for window in x])


def raw_windows(export_dir: Path, card, model, x: np.ndarray):
    """Raw-feature windows for normalized ``x`` (x * std + mean, float32), and the int8 inputs
    the loop would feed for them: normalized again exactly as the task normalizes."""
    from zoo.training.artifacts import load_normalization

    norm = load_normalization(Path(export_dir) / card.normalization, card.features)
    raw = (x.astype(np.float32) * norm.std + norm.mean).astype(np.float32)
    return raw, quantized_windows(model, ((raw - norm.mean) / norm.std).astype(np.float32))


def compare(export_dir: Path, app: Path, runtime: str = "tflite-micro", limit: int | None = None,
            x: np.ndarray | None = None, card=None):
    """Window counts of identical logits and identical final states, C vs ``runtime``, on the
    int8 path and on the raw-float path, over the normalized windows ``x`` (default: the
    export's test windows). ``card``: the export's `ModelCard`, when the caller has read it."""
    card = card or read_export_card(str(export_dir))
    if x is None:
        x, _ = load_testset(str(export_dir), card)
    x = x[:limit] if limit else x
    model = device_runtime.StepModel(str(export_dir), card, runtime, 1)
    xq = quantized_windows(model, x)
    ref_logits, ref_states = reference(model, xq)
    c_logits, c_states = run_app(app, xq, "int8")
    raw, raw_q = raw_windows(export_dir, card, model, x)
    ref_raw_logits, _ = reference(model, raw_q) if not np.array_equal(raw_q, xq) \
        else (ref_logits, ref_states)
    c_raw_logits, _ = run_app(app, raw, "raw")
    c_norm_logits, _ = run_app(app, x.astype(np.float32), "normalized", state=False)
    same = lambda a, b: int(np.sum(np.all(a == b, axis=1)))
    return {"runtime": runtime, "windows": len(x),
            "identical_logits": same(c_logits, ref_logits),
            "identical_states": same(c_states, ref_states),
            "identical_logits_raw_float_input": same(c_raw_logits, ref_raw_logits),
            "identical_logits_normalized_input": same(c_norm_logits, ref_logits),
            "max_abs_logit_diff": int(np.max(np.abs(c_logits.astype(int) - ref_logits)))}
