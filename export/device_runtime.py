"""The zoo's runtime of an export, in one place: the runtimes behind one interface
(`LiteInterpreter` for ai-edge-litert and tflite-runtime, `MicroInterpreter` for tflite-micro;
`detect_runtime`, `open_model`), quantization (`quantize`, `dequantize`), and the streaming loop
(`StepModel`: the step model per sample with the state fed back by one rule, `state_feedback`;
`SequenceModel` for a whole-window export; `stream_logits` for ``stream.tflite``).
``device_bench.py``, the exporter's checks and the C backend's check all run this one loop. What
is checked before a model file or a card is trusted (`check_tflite`, `check_card_fits_models`,
`check_files_sha256`) is ``device_checks.py``'s.

Standard library, numpy and a TFLite runtime only, like ``device_bench.py``: it is copied to the
device beside it, ``device_checks.py`` and ``card_schema.py`` (four files in one folder), and
imports its siblings as siblings; in the zoo it is ``zoo.export.device_runtime``.
"""

from __future__ import annotations

import contextlib
import os
import sys

import numpy as np

if __package__:
    from .device_checks import BenchError, check_step_io
else:  # copied to a device: the sibling file (see device_bench.py)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from device_checks import BenchError, check_step_io


# Each runtime and the module its Python package imports as, in auto-detection order.
RUNTIME_MODULES = {"litert": "ai_edge_litert.interpreter",
                   "tflite-runtime": "tflite_runtime.interpreter",
                   "tflite-micro": "tflite_micro.python.tflite_micro.runtime"}
RUNTIMES = tuple(RUNTIME_MODULES)
# Most threads a runtime is asked for: XNNPACK crashes (SIGSEGV) creating 20,000 (issue 32).
MAX_THREADS = 256


# ---------------------------------------------------------------------------------------- runtimes

def delegate_line_hidden():
    """LiteRT prints "INFO: Created TensorFlow Lite XNNPACK delegate for CPU." on fd 2 when it
    builds an interpreter, on every ``zoo export`` and ``zoo eval``; held back (and replayed if
    the body fails) unless TensorFlow's logs are asked for (``TF_CPP_MIN_LOG_LEVEL=0``,
    ``zoo --verbose``)."""
    import contextlib

    try:
        from zoo.quiet import native_stderr_captured, wants_native_logs
    except ImportError:  # copied onto a device beside device_bench.py: no zoo, the line stays
        return contextlib.nullcontext()
    return contextlib.nullcontext() if wants_native_logs() else native_stderr_captured()

class LiteInterpreter:
    """ai-edge-litert or tflite-runtime (same API), behind the interface every runtime here
    shares: ``input_quant`` / ``output_quant`` (dtype, (scale, zero point), shape), ``set``,
    ``invoke``, ``get``, ``reset``. ``threads=None`` leaves the runtime's default."""

    def __init__(self, path, runtime, threads):
        if runtime in ("litert", "litert-ref"):
            from ai_edge_litert.interpreter import Interpreter, OpResolverType

            # litert-ref: LiteRT's builtin reference kernels (no XNNPACK delegate), which the
            # C backend matches bit for bit with --match litert
            resolver = {"experimental_op_resolver_type": OpResolverType.BUILTIN_REF} \
                if runtime == "litert-ref" else {}
        else:
            from tflite_runtime.interpreter import Interpreter
            resolver = {}
        with delegate_line_hidden():  # "Created TensorFlow Lite XNNPACK delegate for CPU."
            self._interp = Interpreter(model_path=path, num_threads=threads, **resolver)
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


class MicroInterpreter:
    """The tflite-micro Python interpreter (no threads; an explicit arena), with
    `LiteInterpreter`'s interface."""

    def __init__(self, path, arena_bytes):
        from tflite_micro.python.tflite_micro import runtime

        self._interp = runtime.Interpreter.from_file(path, arena_size=arena_bytes)
        n_in = count_micro_tensors(self._interp.get_input_details)
        n_out = count_micro_tensors(self._interp.get_output_details)
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


@contextlib.contextmanager
def quiet_stderr():
    """Silence file descriptor 2 for the block: TFLite Micro's C++ code reports there (a
    rejected tensor index, a failed arena allocation), bypassing Python."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def count_micro_tensors(get_details):
    """How many inputs (or outputs) a TFLite Micro interpreter has, given its
    ``get_input_details`` (or ``get_output_details``): the API has no count, so indices are tried
    until one is rejected, with the rejection TFLM prints on stderr silenced."""
    n = 0
    with quiet_stderr():
        while True:
            try:
                get_details(n)
            except Exception:  # noqa: BLE001 - TFLM raises a bare RuntimeError
                return n
            n += 1


def missing_runtime(runtime):
    """None when ``runtime``'s package imports here, else why not (the ImportError's text)."""
    try:
        __import__(RUNTIME_MODULES[runtime])
    except ImportError as err:
        return str(err)
    return None


def detect_runtime() -> str:
    for name in RUNTIMES:
        if missing_runtime(name) is None:
            return name
    raise BenchError("no TFLite runtime found: pip install ai-edge-litert (or tflite-runtime, or "
                     "tflite-micro)")


def open_model(path, runtime, threads, arena_bytes):
    """One model under ``runtime`` (`RUNTIMES`, or ``litert-ref``), with the shared interface."""
    if runtime == "tflite-micro":
        return MicroInterpreter(path, arena_bytes or default_arena(path))
    return LiteInterpreter(path, runtime, threads)


def default_arena(path):
    """The TFLite Micro arena used when the card gives none: generous for the zoo's models."""
    return max(10 * os.path.getsize(path), 16384)


# ------------------------------------------------------------------------------------ quantization
def quantize(x, dtype, quant):
    """``x`` in a tensor's storage: round half to even of x / scale, plus the zero point,
    clipped to the integer type (float tensors and scale 0: unchanged)."""
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


def same_quantization(a, b):
    """Whether two tensors, each given as ``(dtype, (scale, zero_point))``, store values the same
    way, so that one's raw values can be fed to the other unchanged: the same dtype, the same
    float32 scale and the same zero point. The one tie rule: the C backend and the C++ loop
    `zoo export` writes compare the tensors' float32 scales exactly as well."""
    (dtype_a, (scale_a, zp_a)), (dtype_b, (scale_b, zp_b)) = a, b
    return (np.dtype(dtype_a) == np.dtype(dtype_b)
            and np.float32(scale_a) == np.float32(scale_b) and int(zp_a) == int(zp_b))


def state_feedback(h_in, h_out, head_in):
    """``(direct_feedback, direct_head)`` of a step / head pair, each tensor given as
    ``(dtype, (scale, zero_point))``: step input h_prev, step output h_t, head input h.

    The loop keeps the state in h_prev's quantization, the one the next step consumes: h_t goes
    straight back in when it shares that quantization (``direct_feedback``), else it is
    requantized into it. So the final state handed to the head is in h_prev's quantization too,
    whatever h_t's is, and goes in unchanged only when the head's input shares h_prev's
    (``direct_head``). The C++ loop that ``zoo export`` writes and the C backend make the same
    two tests."""
    return same_quantization(h_out, h_in), same_quantization(h_in, head_in)


# ----------------------------------------------------------------------------------------- models
class SequenceModel:
    def __init__(self, export_dir, card, runtime, threads):
        path = os.path.join(export_dir, card.files.model)
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
    """The streaming loop of a step export: the step model invoked per sample with the state fed
    back (`state_feedback`), the head on the final state."""

    def __init__(self, export_dir, card, runtime, threads):
        io = card.step_io
        self.x_idx, self.h_idx, self.h_out = io.x, io.h, io.h_out
        step_path = os.path.join(export_dir, card.files.step)
        head_path = os.path.join(export_dir, card.files.head)
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
        """The step model's inputs for one window ``x`` [T, F]: [T, *x_shape] in x's storage."""
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

    def head_raw(self, h):
        """The head's output tensor (in its storage) on the state ``h`` (h_prev's storage)."""
        if not self.direct_head:
            h = quantize(dequantize(h, self.h_dtype, self.h_quant), self.hh_dtype, self.hh_quant)
        self.head.set(0, h)
        self.head.invoke()
        return np.array(self.head.get(0))

    def logits(self, h):
        return dequantize(self.head_raw(h), self.lo_dtype, self.lo_quant)[0]

    def run_prepared(self, xq):
        """(the head's raw output, the final state) of one prepared window."""
        self.step.reset()
        self.head.reset()
        h = self.initial_state()
        for t in range(len(xq)):
            h = self.run_step(xq[t], h)
        return self.head_raw(h), np.array(h)

    def predict_prepared(self, xq):
        raw, _ = self.run_prepared(xq)
        return dequantize(raw, self.lo_dtype, self.lo_quant)[0]

    def predict(self, x):
        return self.predict_prepared(self.prepare(x))


def open_export(export_dir, card, runtime, threads=1):
    """The `SequenceModel` or `StepModel` of an export, as its card's form says."""
    return (StepModel if card.form == "step" else SequenceModel)(export_dir, card, runtime,
                                                                 threads)


def stream_logits(stream_bytes: bytes, x: np.ndarray) -> np.ndarray:
    """Logits of the two-signature ``stream.tflite`` over sequences ``x`` (N, T, d), run the
    way a LiteRT user would: signature runners, the state fed back (requantized only when the
    output and input quantizations differ)."""
    from ai_edge_litert.interpreter import Interpreter

    with delegate_line_hidden():
        interp = Interpreter(model_content=stream_bytes)
    step, head = interp.get_signature_runner("step"), interp.get_signature_runner("head")
    (x_in, h_in), (h_out,) = ([step.get_input_details()[k] for k in ("x_t", "h_prev")],
                              step.get_output_details().values())
    head_in, (logits_out,) = head.get_input_details()["h"], head.get_output_details().values()
    q = lambda v, d: quantize(v, d["dtype"], d["quantization"])
    dq = lambda v, d: dequantize(v, d["dtype"], d["quantization"])
    direct_feedback, direct_head = state_feedback(
        h_in=_dtype_and_quantization(h_in), h_out=_dtype_and_quantization(h_out), head_in=_dtype_and_quantization(head_in))
    out = []
    for seq in x:
        h = q(np.zeros(h_in["shape"], np.float32), h_in)
        for x_t in seq:
            h_t = step(x_t=q(x_t[None], x_in), h_prev=h)["output_0"]
            h = h_t if direct_feedback else q(dq(h_t, h_out), h_in)
        h = h if direct_head else q(dq(h, h_in), head_in)
        out.append(dq(head(h=h)["output_0"], logits_out)[0])
    return np.stack(out)


def _dtype_and_quantization(details: dict) -> tuple:
    return details["dtype"], details["quantization"]
