"""A one-invoke int8 sequence model built from an int8 step export: the whole window in, the
logits out, the calibrated int8 step inside a builtin ``WHILE`` loop.

``build_from_export`` assembles ``sequence_int8.tflite``; ``python -m zoo.experiments.sequence_int8
EXPORT_DIR`` builds it, checks its int8 logits against the step loop on every test window in
ai-edge-litert and tflite-micro, and times it beside the step loop and the float Keras LSTM.

No stock converter path gives this model: int8 calibration of a ``WHILE`` graph segfaults
(TensorFlow bug #75140) and unrolling costs ~1 MB (docs/export.md). So it is assembled with the
TFLite flatbuffer schema from the two models ``zoo export --form step --quantize int8`` has
already calibrated, without recalibrating or re-deriving any scale:

    subgraph 0 (main)  x int8 [1, T, d] -> WHILE(i = 0, h = h_0, x) -> head ops -> logits int8
    subgraph 1 (cond)  i < T                                        LESS
    subgraph 2 (body)  x_t = x[:, i]; h = step(x_t, h); i = i + 1     GATHER, ADD, the step's ops

The step's tensors, buffers, scales and zero points are copied unchanged into the loop body and
the head's into subgraph 0, so every op runs with exactly the quantization it had in the step
loop. The state is fed back the way the step loop feeds it (`device_runtime.state_feedback`):
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

import copy
from pathlib import Path
from typing import NamedTuple

import numpy as np

from zoo.export.card_schema import StepIO
from zoo.export.flatbuffer import read_model, schema, write_model

__all__ = ["Built", "build_sequence", "build_from_export", "op_names", "requantize_ops",
           "requantize_exact", "identity_exact"]

OUT_NAME = "sequence_int8.tflite"
INT8, INT32, BOOL = 9, 2, 6  # schema TensorType values
DTYPES = {0: np.float32, 2: np.int32, 6: np.bool_, 7: np.int16, 9: np.int8}


# The schema, reading and writing live in zoo.export.flatbuffer (shared with the C backend).
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
    """The state_feedback rule of device_runtime: same dtype, float32 scale, zero point."""
    from zoo.export.device_runtime import same_quantization

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

    from zoo.export.device_runtime import open_model

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
    x_t, h_in = g.inputs[io.x], g.inputs[io.h]
    h_out = g.outputs[io.h_out]
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
    from zoo.export.device_runtime import quantize

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
    ends = [sg.inputs[io.x], sg.inputs[io.h], sg.outputs[io.h_out]]
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


def build_sequence(step_bytes: bytes, head_bytes: bytes, step_io: StepIO, timesteps: int, *,
                   keep_identity_ops: bool = False) -> Built:
    """The one-invoke int8 sequence model of an int8 step / head pair. ``step_io``: the card's
    (`zoo.export.card_schema.StepIO`: the step model's input indices ``x``, ``h`` and output
    index ``h_out``). Int8 clamps that change no
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
    from zoo.export.card_schema import read_export_card

    card = read_export_card(str(export_dir))
    if card.form != "step" or card.quantize != "int8":
        raise ValueError(f"{export_dir}: needs an int8 step export (form step, quantize int8); "
                         f"this one is form {card.form}, quantize {card.quantize}")
    step = (Path(export_dir) / card.files.step).read_bytes()
    head = (Path(export_dir) / card.files.head).read_bytes()
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

    from zoo.export.device_runtime import dequantize, open_model, quantize

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
