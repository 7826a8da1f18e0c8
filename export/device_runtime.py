"""The zoo's runtime of an export, in one place: a model file checked before any runtime reads it
(`check_tflite`), the runtimes behind one interface (`LiteInterpreter` for ai-edge-litert and
tflite-runtime, `MicroInterpreter` for tflite-micro; `detect_runtime`), quantization
(`quantize`, `dequantize`), the streaming loop (`StepModel`: the state fed back by one rule,
`state_feedback`), and the card checked against the models before either is trusted
(`check_card_fits_models`, `check_files_sha256`). ``device_bench.py``, the exporter's checks and
the C backend's check all run this one loop.

Standard library, numpy and a TFLite runtime only, like ``device_bench.py``: it is copied to the
device beside it and ``card_schema.py`` (three files in one folder), and imports its sibling
``card_schema`` as a sibling; in the zoo it is ``zoo.export.device_runtime``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
import sys

import numpy as np

if __package__:
    from .card_schema import CARD_FILE, MODEL_NAMES, ExportFolderError
else:  # copied to a device: the sibling file (see device_bench.py)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from card_schema import CARD_FILE, MODEL_NAMES, ExportFolderError

# A bad model file: reported as one line, exit status 2 (device_bench.BenchError).
BenchError = ExportFolderError


# Each runtime and the module its Python package imports as, in auto-detection order.
RUNTIME_MODULES = {"litert": "ai_edge_litert.interpreter",
                   "tflite-runtime": "tflite_runtime.interpreter",
                   "tflite-micro": "tflite_micro.python.tflite_micro.runtime"}
RUNTIMES = tuple(RUNTIME_MODULES)
# Most threads a runtime is asked for: XNNPACK crashes (SIGSEGV) creating 20,000 (issue 32).
MAX_THREADS = 256


# -------------------------------------------------------------------------------- validation
def _u32(data, pos, path, what):
    if pos < 0 or pos + 4 > len(data):
        raise BenchError(f"{path}: damaged TFLite model ({what} at byte {pos} is outside the "
                         f"{len(data)}-byte file)")
    return struct.unpack_from("<I", data, pos)[0]


def _table_fields(data, pos, path, what):
    """Absolute positions of a FlatBuffer table's present fields (None when absent)."""
    vtable = pos - struct.unpack("<i", struct.pack("<I", _u32(data, pos, path, what)))[0]
    if vtable < 0 or vtable + 4 > len(data):
        raise BenchError(f"{path}: damaged TFLite model ({what}'s vtable is outside the file)")
    vt_size, table_size = struct.unpack_from("<HH", data, vtable)
    if vt_size < 4 or vt_size % 2 or vtable + vt_size > len(data) or pos + table_size > len(data):
        raise BenchError(f"{path}: damaged TFLite model ({what}'s vtable or table is outside the "
                         "file)")
    offsets = struct.unpack_from(f"<{(vt_size - 4) // 2}H", data, vtable + 4)
    return [pos + o if o else None for o in offsets]


def _vector(data, field, path, what, elem_size=4):
    """(start, length) of the vector a table field points to, checked to lie inside the file."""
    if field is None:
        return 0, 0
    start = field + _u32(data, field, path, what)
    n = _u32(data, start, path, what)
    if start + 4 + n * elem_size > len(data):
        raise BenchError(f"{path}: damaged TFLite model ({what}: {n} entries run past the end "
                         "of the file)")
    return start + 4, n


def _tables(data, field, path, what):
    start, n = _vector(data, field, path, what)
    out = []
    for i in range(n):
        pos = start + 4 * i + _u32(data, start + 4 * i, path, what)
        out.append(_table_fields(data, pos, path, f"{what}[{i}]"))
    return out


def _field(fields, i):
    return fields[i] if i < len(fields) else None


def _indices(data, field, path, what, limit):
    start, n = _vector(data, field, path, what)
    for i in range(n):
        v = struct.unpack_from("<i", data, start + 4 * i)[0]
        if not -1 <= v < limit:
            raise BenchError(f"{path}: damaged TFLite model ({what} refers to tensor {v}; the "
                             f"subgraph has {limit})")


def check_tflite(path):
    """A minimal structural check of a TFLite FlatBuffer before any runtime reads it: size, the
    ``TFL3`` identifier, the root table, and (schema field numbers of ``Model``, ``SubGraph``,
    ``Tensor``, ``Operator``) the operator-code, subgraph, buffer, tensor and operator vectors
    inside the file, tensor buffer, operator code and tensor indices in range. It is not a full
    verifier: a damaged value inside a valid structure is caught by the trial run in a child
    process (`probe_model`)."""
    size = os.path.getsize(path)
    if size == 0:
        raise BenchError(f"{path}: empty file, not a TFLite model")
    if size < 16:
        raise BenchError(f"{path}: {size} bytes, too small to be a TFLite model")
    with open(path, "rb") as f:
        data = f.read()
    if data[4:8] != b"TFL3":
        raise BenchError(f"{path}: not a TFLite model (FlatBuffer identifier {data[4:8]!r}, "
                         "expected b'TFL3')")
    model = _table_fields(data, _u32(data, 0, path, "root offset"), path, "Model")
    n_codes = _vector(data, _field(model, 1), path, "operator_codes")[1]
    subgraphs = _tables(data, _field(model, 2), path, "subgraphs")
    if not subgraphs:
        raise BenchError(f"{path}: damaged TFLite model (no subgraph)")
    buffers = _tables(data, _field(model, 4), path, "buffers")
    for b, buffer in enumerate(buffers):
        _vector(data, _field(buffer, 0), path, f"buffer {b} data", elem_size=1)
    n_buffers = len(buffers)
    for g, sub in enumerate(subgraphs):
        tensors = _tables(data, _field(sub, 0), path, f"subgraph {g} tensors")
        for t, tensor in enumerate(tensors):
            _vector(data, _field(tensor, 0), path, f"subgraph {g} tensor {t} shape")
            buffer = _field(tensor, 2)
            if buffer is not None and _u32(data, buffer, path, "buffer index") >= max(n_buffers, 1):
                raise BenchError(f"{path}: damaged TFLite model (tensor {t} refers to buffer "
                                 f"{_u32(data, buffer, path, 'buffer index')} of {n_buffers})")
        _indices(data, _field(sub, 1), path, f"subgraph {g} inputs", len(tensors))
        _indices(data, _field(sub, 2), path, f"subgraph {g} outputs", len(tensors))
        for o, op in enumerate(_tables(data, _field(sub, 3), path, f"subgraph {g} operators")):
            code = _field(op, 0)
            if code is not None and _u32(data, code, path, "opcode index") >= n_codes:
                raise BenchError(f"{path}: damaged TFLite model (operator {o} uses operator "
                                 f"code {_u32(data, code, path, 'opcode index')} of {n_codes})")
            _indices(data, _field(op, 1), path, f"operator {o} inputs", len(tensors))
            _indices(data, _field(op, 2), path, f"operator {o} outputs", len(tensors))


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


def check_step_io(step, io, step_path):
    """The card's ``step_io`` indices must name tensors the step model has (a bad index would
    otherwise surface as the runtime's IndexError, or -1 as the last tensor)."""
    for key, tensors, kind in (("x", step.inputs, "input"), ("h", step.inputs, "input"),
                               ("h_out", step.outputs, "output")):
        if not 0 <= (index := getattr(io, key)) < len(tensors):
            raise BenchError(f"{CARD_FILE}: step_io {key} is {index}, but {step_path} has "
                             f"{len(tensors)} {kind}s (valid: 0..{len(tensors) - 1})")


def tensor_size(shape):
    return int(np.prod(shape)) if len(shape) else 1


# ------------------------------------------------------------------------- the card vs its models
def check_card_fits_models(export_dir, card, models):
    """Check the card against the models it names before either is trusted: each file's byte
    size (card ``bytes``); for a sequence model its input (``timesteps`` x ``features``); for a
    step pair ``step_io``, the sizes (``features``, ``state_size``, the state going round),
    each state tensor's dtype, scale and zero point (``state_quantization``); the logits
    (``classes``). ``models`` maps each model name to an opened model (the runtime interface:
    ``inputs``, ``outputs``, ``input_quant(i)``, ``output_quant(i)``). A mismatch is a
    `BenchError` naming the card, the field and the file. Returns the number of logits.

    A step model does not know T, so for it ``timesteps`` is the card's word."""
    card_path = os.path.join(export_dir, CARD_FILE)
    files = {name: os.path.join(export_dir, card.files.of(name)) for name in MODEL_NAMES[card.form]}
    for name, path in files.items():
        want = card.bytes.of(name) if card.bytes is not None else None
        if want is not None and os.path.getsize(path) != want:
            raise BenchError(f"{card_path}: bytes.{name} is {want}, but {path} has "
                             f"{os.path.getsize(path)} bytes; the card does not belong to this "
                             "model file")
    if card.form == "sequence":
        model, path = models["model"], files["model"]
        shape = model.input_quant(0)[2]
        want = (1, card.timesteps, card.features)
        if tensor_size(shape) != tensor_size(want) or shape[-1] != card.features:
            raise BenchError(f"{card_path}: timesteps {card.timesteps} and features "
                             f"{card.features} say the model takes {want}, but {path} takes "
                             f"{tuple(int(n) for n in shape)}; the card does not belong to this "
                             "model")
        return _check_classes(card, card_path, model, path)
    step, head = models["step"], models["head"]
    check_step_io(step, card.step_io, files["step"])
    _check_state_sizes(card, card_path, step, head, files)
    _check_state_quantization(card, card_path, step, files["step"])
    return _check_classes(card, card_path, head, files["head"])


def _check_state_sizes(card, card_path, step, head, files):
    io = card.step_io
    x_size = tensor_size(step.input_quant(io.x)[2])
    h_size = tensor_size(step.input_quant(io.h)[2])
    if x_size != card.features:
        swapped = " (step_io x and h swapped?)" if h_size == card.features else ""
        raise BenchError(f"{card_path}: features is {card.features}, but step_io x (input "
                         f"{io.x} of {files['step']}) takes {x_size} values{swapped}")
    if card.state_size is not None and h_size != card.state_size:
        raise BenchError(f"{card_path}: state_size is {card.state_size}, but step_io h (input "
                         f"{io.h} of {files['step']}) takes {h_size} values")
    h_out_size = tensor_size(step.output_quant(io.h_out)[2])
    head_size = tensor_size(head.input_quant(0)[2])
    if h_out_size != h_size or head_size != h_size:
        raise BenchError(f"{card_path}: the state does not go round: step_io h takes {h_size} "
                         f"values, h_out gives {h_out_size}, {files['head']} takes {head_size}")


def _check_state_quantization(card, card_path, step, step_path):
    """The card's ``state_quantization`` (what the exporter read from the step model) against
    the step model's own tensors: a swapped or replaced model, or step_io naming the wrong
    tensors, differs here even when the sizes agree."""
    io = card.step_io
    tensors = {"x": step.input_quant(io.x), "h_in": step.input_quant(io.h),
               "h_out": step.output_quant(io.h_out)}
    for key, (dtype, (scale, zero_point), _) in tensors.items():
        want = getattr(card.state_quantization, key) if card.state_quantization else None
        if want is None:
            continue  # an older card without it: the sizes above are all it says
        got = {"dtype": np.dtype(dtype).name, "scale": float(scale), "zero_point": int(zero_point)}
        for field, value in got.items():
            said = getattr(want, field)  # None (not said) is NaN as a scale: never equal
            ok = np.float32(said) == np.float32(value) if field == "scale" else said == value
            if not ok:
                raise BenchError(f"{card_path}: state_quantization.{key}.{field} is "
                                 f"{said!r}, but {step_path} has {value!r} there "
                                 "(step_io or the model file does not match the card)")


def _check_classes(card, card_path, model, path):
    classes = tensor_size(model.output_quant(0)[2])
    if card.classes is not None and classes != card.classes:
        raise BenchError(f"{card_path}: classes is {card.classes}, but {path} gives {classes} "
                         "logits")
    return classes


def check_files_sha256(export_dir):
    """When ``export_dir`` is a shipped tag's export (its parent's ``card.json`` lists the
    sha256 of ``FOLDER/FILE``), each listed file of the folder must still have its sha256: a
    model edited or replaced after shipping is refused, naming the file."""
    export_dir = os.path.abspath(export_dir)
    tag_card = os.path.join(os.path.dirname(export_dir), "card.json")
    if not os.path.isfile(tag_card):
        return
    try:
        with open(tag_card) as f:
            listed = json.load(f).get("files")
    except (OSError, ValueError, AttributeError):
        return  # not a shipped tag's card: nothing to check against
    prefix = os.path.basename(export_dir) + "/"
    for rel, want in (listed.items() if isinstance(listed, dict) else ()):
        if not (isinstance(rel, str) and rel.startswith(prefix)):
            continue
        path = os.path.join(export_dir, rel[len(prefix):])
        if not os.path.isfile(path):
            raise BenchError(f"{tag_card}: lists {rel}, but {path} is missing")
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != want:
            raise BenchError(f"{path}: sha256 {digest.hexdigest()}, but {tag_card} says {want}; "
                             "the file was edited or replaced after the tag was shipped")


def failed_export(card):
    """Why the card says this export failed its accuracy check (``accuracy.passed`` false: a
    ``.failed`` folder kept for inspection), or None."""
    acc = card.accuracy
    if acc is not None and acc.passed is False:
        return ("the card says this export failed its accuracy check (accuracy.passed false, "
                f"drop_points {acc.drop_points!r})")
    return None


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
