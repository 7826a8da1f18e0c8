"""What the device side checks before it trusts an export, in one place: a model file before any
runtime reads it (`check_tflite`: a structural check of the FlatBuffer), the card against the
models it names (`check_card_fits_models`: byte sizes, ``step_io``, tensor sizes, the state's
quantization, classes), a shipped tag's files against the sha256 its ``card.json`` lists
(`check_files_sha256`, which reads that card with ``json`` on purpose: a device has no zoo), and
whether the card says the export failed (`failed_export`). The runtimes and the streaming loop
that run an export once it is trusted are ``device_runtime.py``'s.

Standard library and numpy only, like ``device_bench.py`` and ``device_runtime.py``: it is copied
to the device beside them and ``card_schema.py`` (four files in one folder), and imports its
sibling ``card_schema`` as a sibling; in the zoo it is ``zoo.export.device_checks``.
"""

from __future__ import annotations

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

# A bad model file or card: reported as one line, exit status 2 (device_bench.BenchError).
BenchError = ExportFolderError


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


# ------------------------------------------------------------------ the step model's tensors
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
