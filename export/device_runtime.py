"""The TFLite side of ``device_bench.py``: a model file checked before any runtime reads it
(`check_tflite`), and the runtimes behind one interface (`LiteInterpreter` for ai-edge-litert and
tflite-runtime, `MicroInterpreter` for tflite-micro; `detect_runtime`).

Standard library, numpy and a TFLite runtime only, like ``device_bench.py``: it is copied to the
device beside it and ``card_schema.py`` (three files in one folder), and imports its sibling
``card_schema`` as a sibling; in the zoo it is ``export.device_runtime``.
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys

import numpy as np

if __package__:
    from .card_schema import ExportFolderError
else:  # copied to a device: the sibling file (see device_bench.py)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from card_schema import ExportFolderError

# A bad model file: reported as one line, exit status 2 (device_bench.BenchError).
BenchError = ExportFolderError


# Each runtime and the module its Python package imports as, in auto-detection order.
RUNTIME_MODULES = {"litert": "ai_edge_litert.interpreter",
                   "tflite-runtime": "tflite_runtime.interpreter",
                   "tflite-micro": "tflite_micro.python.tflite_micro.runtime"}
RUNTIMES = tuple(RUNTIME_MODULES)


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
class LiteInterpreter:
    """ai-edge-litert or tflite-runtime (same API), behind the interface every runtime here
    shares: ``input_quant`` / ``output_quant`` (dtype, (scale, zero point), shape), ``set``,
    ``invoke``, ``get``, ``reset``. ``threads=None`` leaves the runtime's default."""

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
