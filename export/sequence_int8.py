"""A one-invoke int8 sequence model built from an int8 step export: the whole window in, the
logits out, the calibrated int8 step inside a builtin ``WHILE`` loop.

    python -m export.sequence_int8 EXPORT_DIR [--out FILE] [--data-dir D]
                                   [--lstm RUN_DIR ...] [--reps 200] [--json FILE]

builds ``sequence_int8.tflite``, checks its int8 logits against the step loop on every test
window in ai-edge-litert and tflite-micro (exit 1 if one differs), and times it beside the step
loop and, with ``--lstm``, the stock Keras float LSTM WHILE model, in the same runtimes and run.

No stock converter path gives this model: int8 calibration of a ``WHILE`` graph segfaults
(TensorFlow bug #75140) and unrolling costs ~1 MB (docs/export.md). So it is assembled with the
TFLite flatbuffer schema from the two models ``zoo export --form step --quantize int8`` has
already calibrated, without recalibrating or re-deriving any scale:

    subgraph 0 (main)  x int8 [1, T, d] -> WHILE(i = 0, h = h_0, x) -> head ops -> logits int8
    subgraph 1 (cond)  i < T                                        LESS
    subgraph 2 (body)  x_t = x[:, i]; h = step(x_t, h); i = i + 1     GATHER, ADD, the step's ops

The step's tensors, buffers, scales and zero points are copied unchanged into the loop body and
the head's into subgraph 0, so every op runs with exactly the quantization it had in the step
loop. The state is fed back the way the step loop feeds it (`device_bench.state_feedback`):
copied when h_t and h_{t-1} share a quantization, else through a ``QUANTIZE`` (requantize) op.
Int8 clamps that change no int8 value (SiRNN's ``state_clip=1`` on a state whose int8 range is
already [0, 1]) are left out: in LiteRT a window took 384-389 us without them, 529-539 us with
them (docs/device.md). Each such shortcut is checked exhaustively: every added ``QUANTIZE`` and
every left-out clamp is run alone on all 256 int8 values in each runtime.

The input is int8, quantized by the caller with the input's scale and zero point (the step
model's x_t quantization), as device code quantizes x_t for the step model: the comparison with
the step loop then starts from identical bytes.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

from export.flatbuffer import read_model, schema, write_model

__all__ = ["Built", "build_sequence", "build_from_export", "op_names", "requantize_ops",
           "requantize_exact", "identity_exact", "load_test_split", "loop_logits",
           "SequenceRunner", "compare", "interleaved_latency", "lstm_reference",
           "build_and_check", "main"]

OUT_NAME = "sequence_int8.tflite"
INT8, INT32, BOOL = 9, 2, 6  # schema TensorType values
DTYPES = {0: np.float32, 2: np.int32, 6: np.bool_, 7: np.int16, 9: np.int8}


# The schema, reading and writing live in export.flatbuffer (shared with the C backend).
_schema = schema


# ------------------------------------------------------------------------------ model assembly
class _Assembler:
    """The merged model's operator codes and buffers; buffer 0 stays the empty sentinel the
    schema reserves for tensors without data."""

    # Op versions as TensorFlow's op-version rules (tensorflow/lite/tools/versioning/
    # op_version.cc) give them for these operands: int32 ADD / LESS, int8 GATHER, int8 -> int8
    # QUANTIZE. LiteRT refuses a version it has no kernel for; TFLite Micro ignores versions.
    VERSIONS = {"WHILE": 1, "LESS": 1, "ADD": 1, "GATHER": 2, "QUANTIZE": 1}

    def __init__(self):
        s = _schema()
        self.s = s
        self.model = s.ModelT()
        self.model.version = 3
        self.model.description = b"edge-rnn-zoo: int8 step in a WHILE loop"
        self.model.operatorCodes, self.model.subgraphs = [], []
        self.model.buffers = [s.BufferT()]
        self._codes = {}
        self.dropped = []  # identity clamps left out (`_drop_identity_clamps`)

    def code(self, builtin: int, version: int) -> int:
        key = (builtin, version)
        if key not in self._codes:
            oc = self.s.OperatorCodeT()
            oc.builtinCode = builtin
            oc.deprecatedBuiltinCode = min(builtin, 127)  # 127: "see builtin_code"
            oc.version = version
            self._codes[key] = len(self.model.operatorCodes)
            self.model.operatorCodes.append(oc)
        return self._codes[key]

    def named_code(self, name: str) -> int:
        return self.code(getattr(self.s.BuiltinOperator, name), self.VERSIONS[name])

    def buffer(self, data: bytes | None) -> int:
        if not data:
            return 0
        b = self.s.BufferT()
        b.data = np.frombuffer(bytes(data), np.uint8).copy()
        self.model.buffers.append(b)
        return len(self.model.buffers) - 1

    def copy_subgraph(self, src_model, name: bytes):
        """Subgraph 0 of ``src_model`` with its tensors (same indices, buffers re-homed) and
        operators (opcodes re-indexed) copied unchanged: scales and zero points included."""
        src = src_model.subgraphs[0]
        g = self.s.SubGraphT()
        g.name = name
        g.tensors = []
        for t in src.tensors:
            t = copy.deepcopy(t)
            data = src_model.buffers[t.buffer].data if t.buffer else None
            t.buffer = self.buffer(None if data is None else data.tobytes())
            g.tensors.append(t)
        g.operators = []
        for op in src.operators:
            op = copy.deepcopy(op)
            oc = src_model.operatorCodes[op.opcodeIndex]
            op.opcodeIndex = self.code(max(oc.builtinCode, oc.deprecatedBuiltinCode), oc.version)
            g.operators.append(op)
        g.inputs, g.outputs = list(src.inputs), list(src.outputs)
        return g


def _quant(scale: float, zero_point: int):
    q = _schema().QuantizationParametersT()
    q.scale, q.zeroPoint = [float(scale)], [int(zero_point)]
    return q


def _tensor(g, name: str, shape, dtype: int, quant=None, buffer: int = 0) -> int:
    """Append a tensor to subgraph ``g``; returns its index."""
    t = _schema().TensorT()
    t.name, t.shape, t.type, t.buffer = name.encode(), list(shape), dtype, buffer
    t.quantization = quant
    g.tensors.append(t)
    return len(g.tensors) - 1


def _op(opcode: int, inputs, outputs, options_type: int = 0, options=None):
    op = _schema().OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = opcode, list(inputs), list(outputs)
    op.builtinOptionsType, op.builtinOptions = options_type, options
    return op


def _qparams(tensor) -> tuple[float, int]:
    q = tensor.quantization
    return float(q.scale[0]), int(q.zeroPoint[0])


def _same(a, b) -> bool:
    """The state_feedback rule of device_bench: same dtype, scale (to 1e-12), zero point."""
    from export.device_bench import same_quantization

    return same_quantization((DTYPES[a.type], _qparams(a)), (DTYPES[b.type], _qparams(b)))


def _requantize(asm, g, src: int, like, name: str) -> int:
    """A QUANTIZE op (int8 -> int8) from tensor ``src`` into ``like``'s scale and zero point,
    placed as the last op of ``g``; returns the new tensor's index."""
    dst = _tensor(g, name, g.tensors[src].shape, like.type, _quant(*_qparams(like)))
    s = asm.s
    g.operators.append(_op(asm.named_code("QUANTIZE"), [src], [dst],
                           s.BuiltinOptions.QuantizeOptions, s.QuantizeOptionsT()))
    return dst


# ------------------------------------------------------------------------------ identity clamps
# Activation ops by the real-valued range they clamp to (None: unbounded). With identical input
# and output quantization an int8 kernel computes clamp(q, zp + round(lo / s), zp +
# round(hi / s)) limited to [-128, 127] (TFLite's and TFLite Micro's activation range).
CLAMP_RANGES = {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_0_TO_1": (0.0, 1.0),
                "RELU_N1_TO_1": (-1.0, 1.0)}


def _op_name(asm, op) -> str:
    oc = asm.model.operatorCodes[op.opcodeIndex]
    return _builtin_names()[max(oc.builtinCode, oc.deprecatedBuiltinCode)]


def _builtin_names() -> dict:
    return {v: k for k, v in vars(_schema().BuiltinOperator).items() if not k.startswith("_")}


def _constant(asm, g, t):
    """The int8 values of constant tensor ``t`` of ``g`` (None if it is not a constant)."""
    data = asm.model.buffers[g.tensors[t].buffer].data if g.tensors[t].buffer else None
    return None if data is None else np.frombuffer(data.tobytes(), np.int8)


def _identity_clamp(asm, g, op) -> dict | None:
    """A description of ``op`` if it is an int8 clamp that leaves every int8 value unchanged
    (so removing it changes no bit), else None. The bounds are taken conservatively (floor for
    an upper bound, ceil for a lower one), whatever rounding a kernel uses."""
    name = _op_name(asm, op)
    if name not in CLAMP_RANGES and name not in ("MINIMUM", "MAXIMUM"):
        return None
    consts = [_constant(asm, g, t) for t in op.inputs]
    variable = [t for t, c in zip(op.inputs, consts) if c is None]
    if len(variable) != 1:
        return None
    src, dst = g.tensors[variable[0]], g.tensors[op.outputs[0]]
    if src.type != INT8 or dst.type != INT8 or _qparams(src) != _qparams(dst) \
            or list(src.shape) != list(dst.shape):
        return None  # a rescale or a broadcast: not an identity
    scale, zp = _qparams(src)
    if name in CLAMP_RANGES:
        lo, hi = CLAMP_RANGES[name]
        low_ok = zp + int(np.ceil(lo / scale)) <= -128
        high_ok = hi is None or zp + int(np.floor(hi / scale)) >= 127
        constant = None
    else:  # MINIMUM / MAXIMUM compare raw int8 values against the constant
        constant = next(c for c in consts if c is not None)
        low_ok = high_ok = (constant.min() >= 127) if name == "MINIMUM" \
            else (constant.max() <= -128)
    if not (low_ok and high_ok):
        return None
    return {"op": name, "version": asm.model.operatorCodes[op.opcodeIndex].version,
            "subgraph": g.name.decode(), "quant": (scale, zp),
            "constant": None if constant is None else constant.tolist(),
            "in": variable[0], "out": op.outputs[0]}


def _drop_identity_clamps(asm, g) -> list[dict]:
    """Remove the int8 clamps of ``g`` that are identities on int8 (SiRNN's
    ``state_clip=1``: MINIMUM(h, 1) and RELU on a state whose int8 range is already [0, 1]);
    their readers read the clamp's input instead. They are not free: in LiteRT the two cost
    ~1.1 us per step (a window 529-539 us with them, 384-389 us without)."""
    dropped = []
    for op in list(g.operators):
        info = _identity_clamp(asm, g, op)
        if info is None:
            continue
        g.operators.remove(op)
        for other in g.operators:
            other.inputs = [info["in"] if t == info["out"] else t for t in other.inputs]
        g.outputs = [info["in"] if t == info["out"] else t for t in g.outputs]
        dropped.append({k: v for k, v in info.items() if k not in ("in", "out")})
    return dropped


def _clamp_model(info: dict) -> bytes:
    """A one-op model: the dropped clamp (its constant included) on int8 [1, 256]."""
    asm = _Assembler()
    s = asm.s
    g = s.SubGraphT()
    g.name, g.tensors = b"main", []
    a = _tensor(g, "a", [1, 256], INT8, _quant(*info["quant"]))
    b = _tensor(g, "b", [1, 256], INT8, _quant(*info["quant"]))
    inputs = [a]
    if info["constant"] is not None:
        c = np.asarray(info["constant"], np.int8)
        inputs.append(_tensor(g, "c", list(c.shape), INT8, _quant(*info["quant"]),
                              asm.buffer(c.tobytes())))
    code = getattr(s.BuiltinOperator, info["op"])
    g.operators = [_op(asm.code(code, info["version"]), inputs, [b])]
    g.inputs, g.outputs = [a], [b]
    asm.model.subgraphs = [g]
    return write_model(asm.model)


def identity_exact(info: dict, runtime: str) -> dict:
    """Whether the runtime's kernel of a dropped clamp returns every one of the 256 int8
    values unchanged (exhaustive: the op is elementwise)."""
    import tempfile

    from export.device_bench import open_model

    values = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    with tempfile.NamedTemporaryFile(suffix=".tflite") as f:
        f.write(_clamp_model(info))
        f.flush()
        m = open_model(f.name, runtime, 1, 16384)
        m.set(0, values)
        m.invoke()
        got = m.get(0)
    return {"values": 256, "differ": int(np.count_nonzero(got != values))}


def _body(asm, step, io, timesteps: int, keep_identity_ops: bool):
    """Subgraph (i, h, x) -> (i + 1, step(x[:, i], h), x): the step's graph, its x_t input
    now the output of a GATHER of row i of the window."""
    s = asm.s
    g = asm.copy_subgraph(step, b"sequence_int8/while_body")
    if not keep_identity_ops:
        asm.dropped += _drop_identity_clamps(asm, g)
    x_t, h_in = g.inputs[io["x"]], g.inputs[io["h"]]
    h_out = g.outputs[io["h_out"]]
    xt = g.tensors[x_t]
    features = int(xt.shape[-1])
    i = _tensor(g, "i", [], INT32)
    one = _tensor(g, "one", [], INT32, buffer=asm.buffer(np.int32(1).tobytes()))
    i_next = _tensor(g, "i_next", [], INT32)
    x_seq = _tensor(g, "x", [1, timesteps, features], INT8, _quant(*_qparams(xt)))
    gather = s.GatherOptionsT()
    gather.axis, gather.batchDims = 1, 0  # x[:, i] of [1, T, d] with a scalar i: [1, d]
    add = s.AddOptionsT()
    loop_ops = [_op(asm.named_code("ADD"), [i, one], [i_next], s.BuiltinOptions.AddOptions,
                    add),
                _op(asm.named_code("GATHER"), [x_seq, i], [x_t],
                    s.BuiltinOptions.GatherOptions, gather)]
    g.operators = loop_ops + g.operators
    if not _same(g.tensors[h_out], g.tensors[h_in]):
        h_out = _requantize(asm, g, h_out, g.tensors[h_in], "h_requantized")
    g.inputs, g.outputs = [i, h_in, x_seq], [i_next, h_out, x_seq]
    return g


def _cond(asm, body, timesteps: int):
    """Subgraph (i, h, x) -> i < T."""
    s = asm.s
    g = s.SubGraphT()
    g.name, g.tensors = b"sequence_int8/while_cond", []
    ins = [_tensor(g, n, body.tensors[t].shape, body.tensors[t].type,
                   copy.deepcopy(body.tensors[t].quantization))
           for n, t in zip(("i", "h", "x"), body.inputs)]
    limit = _tensor(g, "T", [], INT32, buffer=asm.buffer(np.int32(timesteps).tobytes()))
    more = _tensor(g, "more", [], BOOL)
    g.operators = [_op(asm.named_code("LESS"), [ins[0], limit], [more])]
    g.inputs, g.outputs = ins, [more]
    return g


def _main(asm, head, body, keep_identity_ops: bool):
    """Subgraph 0: x -> WHILE(0, h_0, x) -> head -> logits. The head's graph is copied, its h
    input replaced by the loop's final state (requantized if the head reads another scale)."""
    from export.device_bench import quantize

    s = asm.s
    g = asm.copy_subgraph(head, b"main")
    if not keep_identity_ops:
        asm.dropped += _drop_identity_clamps(asm, g)
    (h_head,) = g.inputs
    _, h_body, x_body = (body.tensors[t] for t in body.inputs)
    h_scale, h_zp = _qparams(h_body)
    h0_bytes = quantize(np.zeros(h_body.shape, np.float32), np.int8, (h_scale, h_zp)).tobytes()
    x = _tensor(g, "x", x_body.shape, INT8, _quant(*_qparams(x_body)))
    i0 = _tensor(g, "i0", [], INT32, buffer=asm.buffer(np.int32(0).tobytes()))
    h0 = _tensor(g, "h0", h_body.shape, INT8, _quant(h_scale, h_zp), asm.buffer(h0_bytes))
    outs = [_tensor(g, "i_T", [], INT32),
            _tensor(g, "h_T", h_body.shape, INT8, _quant(h_scale, h_zp)),
            _tensor(g, "x_out", x_body.shape, INT8, _quant(*_qparams(x_body)))]
    loop = s.WhileOptionsT()
    loop.condSubgraphIndex, loop.bodySubgraphIndex = 1, 2
    ops = [_op(asm.named_code("WHILE"), [i0, h0, x], outs, s.BuiltinOptions.WhileOptions,
               loop)]
    h_final = outs[1]
    if not _same(g.tensors[h_final], g.tensors[h_head]):
        h_final = _requantize(asm, g, h_final, g.tensors[h_head], "h_for_head")
        ops.append(g.operators.pop())  # _requantize appended it; it runs before the head
    for op in g.operators:  # the head now reads the loop's final state
        op.inputs = [h_final if t == h_head else t for t in op.inputs]
    g.operators = ops + g.operators
    g.inputs = [x]
    return g


def _signature(model, main):
    """A ``serving_default`` signature (x -> logits) for LiteRT's signature runner."""
    s = _schema()
    sig = s.SignatureDefT()
    sig.signatureKey, sig.subgraphIndex = b"serving_default", 0
    tmap = []
    for name, idx in ((b"x", main.inputs[0]), (b"logits", main.outputs[0])):
        m = s.TensorMapT()
        m.name, m.tensorIndex = name, int(idx)
        tmap.append(m)
    sig.inputs, sig.outputs = [tmap[0]], [tmap[1]]
    model.signatureDefs = [sig]


def _require_int8(step, head, io) -> None:
    """One subgraph each, and int8 x_t, h_prev, h_t, head input and logits: the loop copies
    int8 bytes between them, and the caller quantizes the window with x_t's int8 parameters."""
    for name, m in (("step", step), ("head", head)):
        if len(m.subgraphs) != 1:
            raise ValueError(f"{name} model has {len(m.subgraphs)} subgraphs; expected one")
    sg, hg = step.subgraphs[0], head.subgraphs[0]
    ends = [sg.inputs[io["x"]], sg.inputs[io["h"]], sg.outputs[io["h_out"]]]
    types = [sg.tensors[t].type for t in ends] + [hg.tensors[t].type
                                                   for t in (*hg.inputs, *hg.outputs)]
    if any(t != INT8 for t in types):
        raise ValueError("build_sequence needs an int8 step export (--quantize int8): the step "
                         "and head inputs and outputs must be int8")


def _prune(model) -> None:
    """Drop the tensors, buffers and operator codes nothing uses any more (those of left-out
    clamps), renumbering the references: resolvers then see only the ops that run."""
    used_codes = sorted({op.opcodeIndex for g in model.subgraphs for op in g.operators})
    code_map = {old: new for new, old in enumerate(used_codes)}
    model.operatorCodes = [model.operatorCodes[i] for i in used_codes]
    for g in model.subgraphs:
        used = sorted({t for op in g.operators for t in (*op.inputs, *op.outputs) if t >= 0}
                      | set(g.inputs) | set(g.outputs))
        tmap = {old: new for new, old in enumerate(used)}
        g.tensors = [g.tensors[t] for t in used]
        for op in g.operators:
            op.opcodeIndex = code_map[op.opcodeIndex]
            op.inputs = [tmap[t] if t >= 0 else t for t in op.inputs]  # -1: no bias
            op.outputs = [tmap[t] for t in op.outputs]
        g.inputs, g.outputs = [tmap[t] for t in g.inputs], [tmap[t] for t in g.outputs]
    used_buffers = sorted({0} | {t.buffer for g in model.subgraphs for t in g.tensors})
    bmap = {old: new for new, old in enumerate(used_buffers)}
    model.buffers = [model.buffers[b] for b in used_buffers]
    for g in model.subgraphs:
        for t in g.tensors:
            t.buffer = bmap[t.buffer]


class Built(NamedTuple):
    tflite: bytes          # the model
    dropped: list          # the identity clamps left out: op, subgraph, quantization, constant


def build_sequence(step_bytes: bytes, head_bytes: bytes, step_io: dict, timesteps: int, *,
                   keep_identity_ops: bool = False) -> Built:
    """The one-invoke int8 sequence model of an int8 step / head pair. ``step_io``: the step
    model's input indices ``x``, ``h`` and output index ``h_out``. Int8 clamps that change no
    int8 value are left out unless ``keep_identity_ops`` (then every op of the step is copied)."""
    step, head = read_model(step_bytes), read_model(head_bytes)
    _require_int8(step, head, step_io)
    asm = _Assembler()
    body = _body(asm, step, step_io, timesteps, keep_identity_ops)
    main = _main(asm, head, body, keep_identity_ops)
    cond = _cond(asm, body, timesteps)
    asm.model.subgraphs = [main, cond, body]  # WHILE names cond 1 and body 2
    _prune(asm.model)
    _signature(asm.model, asm.model.subgraphs[0])
    return Built(write_model(asm.model), asm.dropped)


def build_from_export(export_dir: Path, *, keep_identity_ops: bool = False) -> Built:
    """`build_sequence` of the ``step.tflite`` / ``head.tflite`` of a zoo int8 step export."""
    from export.device_bench import read_card

    card = read_card(str(export_dir))
    if card.form != "step" or card.quantize != "int8":
        raise ValueError(f"{export_dir}: needs an int8 step export (form step, quantize int8); "
                         f"this one is form {card.form}, quantize {card.quantize}")
    step = (Path(export_dir) / card.files["step"]).read_bytes()
    head = (Path(export_dir) / card.files["head"]).read_bytes()
    return build_sequence(step, head, card.step_io, card.timesteps,
                          keep_identity_ops=keep_identity_ops)


# ------------------------------------------------------------------------------ inspection
def op_names(model_bytes: bytes) -> list[str]:
    """The sorted builtin op names of every subgraph; a custom or Flex op shows as ``CUSTOM``."""
    names = _builtin_names()
    model = read_model(model_bytes)
    return sorted({names[max(c.builtinCode, c.deprecatedBuiltinCode)]
                   for c in model.operatorCodes})


def requantize_ops(model_bytes: bytes) -> list[dict]:
    """Every QUANTIZE op of the model: the subgraph and its input / output (scale, zero point)."""
    s = _schema()
    model = read_model(model_bytes)
    code = {i for i, c in enumerate(model.operatorCodes)
            if max(c.builtinCode, c.deprecatedBuiltinCode) == s.BuiltinOperator.QUANTIZE}
    out = []
    for g in model.subgraphs:
        for op in g.operators:
            if op.opcodeIndex in code:
                out.append({"subgraph": g.name.decode(),
                            "in": _qparams(g.tensors[op.inputs[0]]),
                            "out": _qparams(g.tensors[op.outputs[0]])})
    return out


def _requantize_model(q_in, q_out) -> bytes:
    """A one-op model: int8 [1, 256] with ``q_in`` -> QUANTIZE -> int8 [1, 256] with ``q_out``."""
    asm = _Assembler()
    s = asm.s
    g = s.SubGraphT()
    g.name, g.tensors = b"main", []
    a = _tensor(g, "a", [1, 256], INT8, _quant(*q_in))
    g.operators = []
    b = _requantize(asm, g, a, g.tensors[a], "b")
    g.tensors[b].quantization = _quant(*q_out)
    g.inputs, g.outputs = [a], [b]
    asm.model.subgraphs = [g]
    return write_model(asm.model)


def requantize_exact(q_in, q_out, runtime: str) -> dict:
    """Whether the runtime's int8 -> int8 QUANTIZE (fixed-point multiplier) maps every one of
    the 256 int8 values as the step loop's requantization does (``device_bench``: dequantize,
    then quantize in float32, round half to even). Exhaustive: the op is elementwise."""
    import tempfile

    from export.device_bench import dequantize, open_model, quantize

    values = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    want = quantize(dequantize(values, np.int8, q_in), np.int8, q_out)
    with tempfile.NamedTemporaryFile(suffix=".tflite") as f:
        f.write(_requantize_model(q_in, q_out))
        f.flush()
        m = open_model(f.name, runtime, 1, 16384)
        m.set(0, values)
        m.invoke()
        got = m.get(0)
    diff = np.flatnonzero(got != want)
    return {"values": 256, "differ": int(len(diff)),
            "first": None if not len(diff) else {"value": int(values[0, diff[0]]),
                                                 "runtime": int(got[0, diff[0]]),
                                                 "step_loop": int(want[0, diff[0]])}}


# ------------------------------------------------------------------------------ test windows
def load_test_split(export_dir: Path, data_dir=None):
    """``(x, y, raw)`` of the export's test split: ``x`` normalised as the export's model
    expects (its ``normalization.json``), ``raw`` un-normalised (for a reference model with its
    own normalization). With ``data_dir`` the split comes from the zoo's task loader (the
    shipped exports carry no ``testset.npz``); else from the export's ``testset.npz``."""
    from training.tasks.base import Normalization

    from export.device_bench import load_testset, read_card

    card = read_card(str(export_dir))
    norm = Normalization.load(Path(export_dir) / (card.normalization or "normalization.json"))
    if data_dir is None:
        x, y = load_testset(str(export_dir), card)
        if x is None:
            raise ValueError(f"{export_dir} has no test set; pass --data-dir")
        return x, np.asarray(y), x * norm.std + norm.mean
    raw, y = _load_task_test(card, data_dir)
    return norm.apply(raw), y, raw


def _load_task_test(card, data_dir):
    from training.tasks import get_task

    try:
        task = get_task(card.task, **(card.task_options or {}))
        data = task.load(data_dir, seed=0)
    except ValueError:
        # The run's validation options may name subjects a data subset lacks (the shipped
        # runs hold out subjects 3, 11, 19, 26 of the full data); the test split does not
        # depend on them, so the task's defaults load the same test windows.
        data = get_task(card.task).load(data_dir, seed=0)
    return np.asarray(data.test.x, np.float32), np.asarray(data.test.y)


# ------------------------------------------------------------------------------ runtimes
def _step_loop(export_dir: Path, runtime: str):
    from export.device_bench import StepModel, read_card

    card = read_card(str(export_dir))
    return StepModel(str(export_dir), card, runtime, 1)


def loop_logits(loop, xq_windows) -> np.ndarray:
    """int8 logits of the step loop (`device_bench.StepModel`: the step model invoked T times,
    its state fed back, then the head) for quantized windows [N, T, 1, d]."""
    out = []
    for xq in xq_windows:
        loop.predict_prepared(xq)
        out.append(np.array(loop.head.get(0)))
    return np.concatenate(out)


class SequenceRunner:
    """A sequence model (this int8 one, or a float reference) in one runtime, with
    `device_bench.SequenceModel`'s ``prepare`` / ``predict_prepared`` (so its timing applies),
    returning the raw output (int8 logits here, not dequantized)."""

    def __init__(self, path: Path, runtime: str, arena_bytes: int | None = None):
        from export.device_bench import open_model

        self.m = open_model(str(path), runtime, 1, arena_bytes)
        self.dtype, self.quant, self.shape = self.m.input_quant(0)

    def prepare(self, x):
        from export.device_bench import quantize

        return quantize(np.asarray(x).reshape(self.shape), self.dtype, self.quant)

    def predict_prepared(self, xq):
        self.m.reset()
        self.m.set(0, xq)
        self.m.invoke()
        return self.m.get(0)


def compare(export_dir: Path, seq_path: Path, x: np.ndarray, y: np.ndarray, runtime: str,
            arena_bytes: int | None = None) -> dict:
    """The one-invoke model against the step loop on every window of ``x`` in ``runtime``: both
    fed the same int8 bytes (x quantized once, with the step model's x_t quantization); their
    raw int8 logits compared element by element."""
    loop = _step_loop(export_dir, runtime)
    seq = SequenceRunner(seq_path, runtime, arena_bytes)
    if seq.quant != tuple(loop.x_quant):
        raise ValueError(f"{seq_path}: input quantization {seq.quant} is not the step model's "
                         f"x_t quantization {loop.x_quant}")
    xq = [loop.prepare(w) for w in x]
    ref = loop_logits(loop, xq)
    got = np.concatenate([seq.predict_prepared(q.reshape(seq.shape)) for q in xq])
    same = np.all(ref == got, axis=1)
    bad = np.flatnonzero(~same)
    return {"runtime": runtime, "windows": len(x), "identical": int(same.sum()),
            "first_mismatch": None if not len(bad) else int(bad[0]),
            "max_abs_diff_lsb": int(np.max(np.abs(ref.astype(int) - got.astype(int)))),
            "accuracy": float(np.mean(np.argmax(got, 1) == y)),
            "loop_accuracy": float(np.mean(np.argmax(ref, 1) == y))}


# ------------------------------------------------------------------------------ latency
def lstm_reference(run_dir: Path, raw_x: np.ndarray, y: np.ndarray, out: Path) -> dict:
    """The stock Keras float LSTM run at ``run_dir`` as a float WHILE sequence model (the
    zoo's converter, static batch 1), written to ``out``; its accuracy on ``raw_x`` normalised
    with the run's own statistics, in ai-edge-litert."""
    from export.convert import to_tflite, with_batch_size
    from training.evaluate import load_run

    config, model, norm = load_run(run_dir)
    if config["model"] != "lstm":
        raise ValueError(f"--lstm {run_dir}: a Keras LSTM run expected, got {config['model']}")
    out.write_bytes(to_tflite(with_batch_size(model, 1)))
    runner = SequenceRunner(out, "litert")
    x = norm.apply(raw_x)
    pred = [int(np.argmax(runner.predict_prepared(runner.prepare(w)))) for w in x]
    from export.step import recurrent_layers

    return {"path": str(out), "bytes": out.stat().st_size,
            "units": int(recurrent_layers(model)[0].units),
            "accuracy": float(np.mean(np.asarray(pred) == y)), "window": x[0]}


def interleaved_latency(models: dict, reps: int, warmup: int = 5) -> dict:
    """Per-window latency (median / p90 / p99 and min, microseconds) of each model: ``name ->
    (runner, window)``, runner with ``prepare`` / ``predict_prepared`` as in
    `device_bench.benchmark` (the window quantized before timing; the timed call is what a
    caller pays per window: reset, set, invoke(s), get). The models take turns window by window,
    so load from other processes on a shared machine falls on all of them alike; still, a
    longer window is preempted more often, so on a loaded machine the medians penalise the
    slower model and the minimum (the least disturbed window) is reported beside them."""
    import time

    from export.device_bench import _percentiles

    prepared = {name: (runner, runner.prepare(w)) for name, (runner, w) in models.items()}
    for runner, xq in prepared.values():
        for _ in range(warmup):
            runner.predict_prepared(xq)
    times = {name: [] for name in models}
    for _ in range(reps):
        for name, (runner, xq) in prepared.items():
            t0 = time.perf_counter()
            runner.predict_prepared(xq)
            times[name].append(time.perf_counter() - t0)
    return {name: {**_percentiles(t), "min_us": 1e6 * min(t)} for name, t in times.items()}


# ------------------------------------------------------------------------------ command line
def available_runtimes() -> list[str]:
    """The installed runtimes among the two this model is checked in, LiteRT and TFLite Micro
    (tflite-runtime is not part of this stack: it stopped at TensorFlow 2.14)."""
    from export.device_bench import missing_runtime

    return [name for name in ("litert", "tflite-micro") if missing_runtime(name) is None]


def smallest_arena_or_none(blob: bytes, runtime: str) -> int | None:
    """The smallest TFLite Micro arena for ``blob`` under tflite-micro; None elsewhere."""
    if runtime != "tflite-micro":
        return None
    from export.micro import smallest_arena

    return smallest_arena(blob)


def build_and_check(args, print_fn=print) -> dict:
    """Build, check against the step loop in every runtime, time; the report as a dict."""
    from export.micro import quiet_stderr

    export_dir = Path(args.export_dir)
    out = Path(args.out) if args.out else export_dir / OUT_NAME
    built = build_from_export(export_dir, keep_identity_ops=args.keep_identity_ops)
    blob = built.tflite
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(blob)
    report = {"export_dir": str(export_dir), "out": str(out), "bytes": len(blob),
              "ops": op_names(blob), "runtimes": available_runtimes()}
    print_fn(f"{out}: {len(blob):,} bytes, ops {', '.join(report['ops'])}")
    arena = None
    if "tflite-micro" in report["runtimes"]:
        arena = report["tflm_arena_bytes"] = smallest_arena_or_none(blob, "tflite-micro")
        print_fn(f"  TFLite Micro: smallest arena {arena:,} bytes")
    report["requantize"] = _check_requantize(blob, report["runtimes"], print_fn)
    report["dropped"] = _check_dropped(built.dropped, report["runtimes"], print_fn)
    x, y, raw = load_test_split(export_dir, args.data_dir)
    report["agreement"] = {}
    for runtime in report["runtimes"]:
        with quiet_stderr():  # the TFLM wrapper prints its input-count probing to fd 2
            r = compare(export_dir, out, x, y, runtime, arena)
        report["agreement"][runtime] = r
        print_fn(f"  {runtime}: logits identical to the step loop on {r['identical']}/"
                 f"{r['windows']} test windows (max |diff| {r['max_abs_diff_lsb']} LSB); "
                 f"accuracy {100 * r['accuracy']:.2f}% (step loop {100 * r['loop_accuracy']:.2f}%)")
    if args.reps:
        report["latency"] = _latency(args, export_dir, out, arena, x, y, raw, print_fn)
    return report


def _check_requantize(blob, runtimes, print_fn) -> list:
    checks = []
    for op in requantize_ops(blob):
        for runtime in runtimes:
            r = {**op, "runtime": runtime, **requantize_exact(op["in"], op["out"], runtime)}
            checks.append(r)
            print_fn(f"  QUANTIZE in {op['subgraph']} ({op['in'][0]:.9g}, {op['in'][1]}) -> "
                     f"({op['out'][0]:.9g}, {op['out'][1]}), {runtime}: "
                     f"{256 - r['differ']}/256 int8 values as the step loop requantizes them")
    return checks


def _check_dropped(dropped, runtimes, print_fn) -> list:
    checks = []
    for op in dropped:
        for runtime in runtimes:
            r = {**op, "runtime": runtime, **identity_exact(op, runtime)}
            checks.append(r)
            bound = "" if op["constant"] is None else f" against {op['constant']}"
            print_fn(f"  left out {op['op']}{bound} in {op['subgraph']} (scale "
                     f"{op['quant'][0]:.9g}, zero point {op['quant'][1]}): {runtime} returns "
                     f"{256 - r['differ']}/256 int8 values unchanged")
    return checks


def _latency(args, export_dir, out, arena, x, y, raw, print_fn) -> dict:
    from export.micro import quiet_stderr

    refs = {}
    for n, run_dir in enumerate(args.lstm or []):
        ref = lstm_reference(Path(run_dir), raw, y,
                             out.with_name(f"{out.stem}.lstm-reference-{n}.tflite"))
        name = f"lstm{ref['units']}_float" + ("" if n == 0 else f"_{n}")
        refs[name] = ref
        print_fn(f"  reference {name}: Keras float LSTM-{ref['units']} WHILE model ({run_dir}), "
                 f"{ref['bytes']:,} bytes, accuracy {100 * ref['accuracy']:.2f}% (LiteRT)")
    result = {"reps": args.reps,
              "references": {k: {f: v for f, v in r.items() if f != "window"}
                             for k, r in refs.items()}}
    for runtime in available_runtimes():
        with quiet_stderr():  # the TFLM wrapper prints its input-count probing to fd 2
            models = {"sequence_int8": (SequenceRunner(out, runtime, arena), x[0]),
                      "step_loop_int8": (_step_loop(export_dir, runtime), x[0])}
            for name, ref in refs.items():
                models[name] = (SequenceRunner(Path(ref["path"]), runtime,
                                               _lstm_arena(ref, runtime)), ref["window"])
        t = result[runtime] = interleaved_latency(models, args.reps)
        line = ", ".join(f"{k} {v['median_us']:.0f} / {v['p90_us']:.0f}" for k, v in t.items())
        print_fn(f"  {runtime} per window (median / p90 us, {args.reps} interleaved reps): {line}")
        result[runtime + " ratios"] = _ratios(t, refs, runtime, print_fn)
    return result


def _ratios(timing: dict, refs: dict, runtime: str, print_fn) -> dict:
    """Per-window time of the int8 one-invoke model and of the int8 step loop over each float
    LSTM's, of the medians and of the minima (below 1: faster than the LSTM)."""
    out = {}
    for name in refs:
        for ours in ("sequence_int8", "step_loop_int8"):
            for stat in ("median_us", "min_us"):
                out[f"{ours} / {name} ({stat[:-3]})"] = timing[ours][stat] / timing[name][stat]
        print_fn(f"  {runtime}: int8 one-invoke / {name} = "
                 f"{out[f'sequence_int8 / {name} (median)']:.2f} (medians), "
                 f"{out[f'sequence_int8 / {name} (min)']:.2f} (minima); int8 step loop / {name} "
                 f"= {out[f'step_loop_int8 / {name} (median)']:.2f} (medians)")
    return out


def _lstm_arena(ref, runtime):
    if runtime == "tflite-micro" and "arena" not in ref:
        ref["arena"] = smallest_arena_or_none(Path(ref["path"]).read_bytes(), runtime)
    return ref.get("arena") if runtime == "tflite-micro" else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m export.sequence_int8",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("export_dir", help="a `zoo export --form step --quantize int8` folder")
    parser.add_argument("--out", help=f"the model to write (default EXPORT_DIR/{OUT_NAME})")
    parser.add_argument("--data-dir", help="dataset folder for the test split (the zoo's task "
                                           "loader); default: the export's testset.npz")
    parser.add_argument("--lstm", action="append", metavar="RUN_DIR",
                        help="a Keras LSTM run directory: time its float WHILE model beside the "
                             "int8 one, in the same runtimes and run (repeatable)")
    parser.add_argument("--keep-identity-ops", action="store_true",
                        help="copy every op of the step, also int8 clamps that change no value")
    parser.add_argument("--reps", type=int, default=200, help="timed windows per model (0: none)")
    parser.add_argument("--json", help="also write the report here")
    args = parser.parse_args(argv)
    from export.device_bench import BenchError

    try:
        report = build_and_check(args)
    except (ValueError, FileNotFoundError, BenchError) as err:
        print(f"sequence_int8: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        import json

        Path(args.json).write_text(json.dumps(report, indent=1, default=float))
    exact = all(r["identical"] == r["windows"] for r in report["agreement"].values())
    return 0 if exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
