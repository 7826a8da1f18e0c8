"""Lower a `Graph` into the list of C kernel calls that compute it, bit for bit.

* one-input element-wise ops become 256-entry tables (`tables`), and a chain of them one table;
* FULLY_CONNECTED keeps TFLite's arithmetic with the input zero point folded into the bias
  (sum (x - zx) w = sum x w - zx sum w: the same integer);
* two-input ADD / SUB / MUL / MINIMUM / MAXIMUM keep TFLite's per-element arithmetic;
* SPLIT / STRIDED_SLICE / RESHAPE of contiguous parts become views (no code, no copy);
* CONCATENATION of equally quantized parts (the step model's state vector: an LSTM's h and c,
  stacked layers) copies each part into its place, as TFLite Micro's int8 kernel does;
* every other tensor gets a place in one scratch array, reused once its last reader has run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from zoo.export.c_backend import arith
from zoo.export.tflite_graph import Graph, Op, Tensor, UnsupportedGraph
from zoo.export.c_backend.tables import ELEMENTWISE, op_table

UNARY_TABLE_OPS = {"RELU", "RELU6", "RELU_N1_TO_1", "LOGISTIC", "TANH", "QUANTIZE", "LEAKY_RELU",
                   "HARD_SWISH", "ABS", "NEG"}
BINARY_OPS = {"ADD", "SUB", "MUL", "MINIMUM", "MAXIMUM"}
VIEW_OPS = {"SPLIT", "STRIDED_SLICE", "RESHAPE", "SQUEEZE", "EXPAND_DIMS"}


@dataclass
class Kernel:
    """One C call: ``kind`` in table / fc / add / sub / mul / min / max / concat, int8 tensors
    by index."""
    kind: str
    out: int
    inputs: list[int]
    params: dict = field(default_factory=dict)
    note: str = ""


@dataclass
class View:
    """Tensor ``index`` is ``length`` elements of tensor ``base`` starting at ``offset``."""
    index: int
    base: int
    offset: int


@dataclass
class Plan:
    graph: Graph
    kernels: list[Kernel]
    views: dict[int, View]
    ops_in: list[str]   # the model's op names, for the generated comment


def lower(graph: Graph, tflite: bytes, runtime: str = "tflite-micro") -> Plan:
    """The `Plan` of ``graph`` (the model ``tflite`` it was read from runs the table ops)."""
    kernels, views = [], {}
    for position, op in enumerate(graph.ops):
        _check_int8(graph, op)
        if op.kind in VIEW_OPS:
            for view in _views(graph, op):
                views[view.index] = view
        else:
            kernels.append(_kernel(graph, tflite, position, op, runtime))
    kernels = fuse_tables(graph, kernels)
    kernels = identity_tables_as_views(kernels, views)
    return Plan(graph, kernels, views, [op.kind for op in graph.ops])


def _check_int8(graph: Graph, op: Op) -> None:
    for index in op.outputs:
        t = graph.tensor(index)
        if t.dtype is not np.int8:
            raise UnsupportedGraph(f"{op.kind} writes {np.dtype(t.dtype).name} tensor "
                                   f"{t.name!r}: the C backend compiles int8 models only "
                                   "(export with --quantize int8)")


def variable_inputs(graph: Graph, op: Op) -> list[int]:
    return sorted({i for i in op.inputs if i >= 0 and not graph.tensor(i).is_const})


def _kernel(graph: Graph, tflite: bytes, position: int, op: Op, runtime: str) -> Kernel:
    variables = variable_inputs(graph, op)
    if op.kind in ELEMENTWISE and len(variables) == 1 and _small_constants(graph, op):
        table = op_table(tflite, position, variables[0], runtime)
        return Kernel("table", op.outputs[0], variables, {"table": table}, op.kind)
    if op.kind == "FULLY_CONNECTED":
        return _fully_connected(graph, op)
    if op.kind in BINARY_OPS:
        return _binary(graph, op)
    if op.kind == "CONCATENATION":
        return _concatenation(graph, op)
    raise UnsupportedGraph(f"op {op.kind} (tensor {graph.tensor(op.outputs[0]).name!r}) has no "
                           "C kernel; supported: FULLY_CONNECTED, ADD, SUB, MUL, MINIMUM, "
                           f"MAXIMUM, CONCATENATION, "
                           f"{', '.join(sorted(UNARY_TABLE_OPS | VIEW_OPS))}")


def _small_constants(graph: Graph, op: Op) -> bool:
    """Whether every constant input is one element (so the op is a function of one int8)."""
    return all(graph.tensor(i).size == 1 for i in op.inputs
               if i >= 0 and graph.tensor(i).is_const)


def _fully_connected(graph: Graph, op: Op) -> Kernel:
    x, w = graph.tensor(op.inputs[0]), graph.tensor(op.inputs[1])
    bias = graph.tensor(op.inputs[2]) if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    out = graph.tensor(op.outputs[0])
    if w.data is None or w.data.ndim != 2 or np.any(w.zero_points != 0):
        raise UnsupportedGraph(f"FULLY_CONNECTED {out.name!r}: weights must be constant, 2-D "
                               "and symmetric (zero point 0)")
    n_out, n_in = w.data.shape
    if x.size != n_in:
        raise UnsupportedGraph(f"FULLY_CONNECTED {out.name!r}: batch > 1 ({x.shape})")
    weights = w.data.astype(np.int64)
    b = bias.data.astype(np.int64) if bias is not None else np.zeros(n_out, np.int64)
    folded = b - x.zero_point * weights.sum(axis=1)
    worst = np.abs(weights).sum(axis=1) * 255 + np.abs(b)
    if np.any(np.abs(folded) >= 2 ** 31) or np.any(worst >= 2 ** 31):
        raise UnsupportedGraph(f"FULLY_CONNECTED {out.name!r}: the accumulator could leave int32")
    multipliers = arith.fc_params(x.scale, w.scales, out.scale)
    left = max(max(shift for _, shift in multipliers), 0)
    if np.any((worst << left) >= 2 ** 30):  # the DSP path's bounded rescale (zoo_int8.h)
        raise UnsupportedGraph(f"FULLY_CONNECTED {out.name!r}: the accumulator could reach 2^30")
    act = arith.activation_range(op.options.get("fusedActivationFunction", 0), out.scale,
                                 out.zero_point)
    return Kernel("fc", out.index, [x.index], dict(
        weights=w.data.astype(np.int8), bias=folded.astype(np.int32), multipliers=multipliers,
        out_zp=out.zero_point, act=act, n_in=n_in, n_out=n_out, weights_tensor=w.index),
        "FULLY_CONNECTED")


def _binary(graph: Graph, op: Op) -> Kernel:
    a, b = graph.tensor(op.inputs[0]), graph.tensor(op.inputs[1])
    out = graph.tensor(op.outputs[0])
    for t in (a, b):
        if t.size not in (1, out.size):
            raise UnsupportedGraph(f"{op.kind} {out.name!r}: broadcast of {t.shape} to "
                                   f"{out.shape} (only same shape or one element)")
    params = dict(n=out.size, a_step=int(a.size != 1), b_step=int(b.size != 1))
    if op.kind in ("MINIMUM", "MAXIMUM"):
        kind = "min" if op.kind == "MINIMUM" else "max"  # raw int8 compare, as TFLite does
        return Kernel(kind, out.index, [a.index, b.index], params, op.kind)
    act = arith.activation_range(op.options.get("fusedActivationFunction", 0), out.scale,
                                 out.zero_point)
    params.update(off_a=-a.zero_point, off_b=-b.zero_point, out_zp=out.zero_point, act=act)
    if op.kind == "MUL":
        params["m"], params["shift"] = arith.mul_params(a.scale, b.scale, out.scale)
        if (255 * 255) << max(params["shift"], 0) >= 2 ** 30:  # the bounded rescale again
            raise UnsupportedGraph(f"MUL {out.name!r}: multiplier {params['shift']} too large")
        return Kernel("mul", out.index, [a.index, b.index], params, op.kind)
    params.update(arith.add_params(a.scale, b.scale, out.scale, subtract=op.kind == "SUB"))
    return Kernel(op.kind.lower(), out.index, [a.index, b.index], params, op.kind)


def _concatenation(graph: Graph, op: Op) -> Kernel:
    """Parts laid end to end: each input copied into its place in the output. Only inputs
    quantized as the output (the converter gives a CONCATENATION's inputs its output's scale
    and zero point; TFLite Micro's int8 kernel then copies bytes) and contiguous parts (every
    dimension before the axis 1)."""
    out = graph.tensor(op.outputs[0])
    axis = int(op.options.get("axis", 0)) % max(len(out.shape), 1)
    if op.options.get("fusedActivationFunction", 0):
        raise UnsupportedGraph(f"CONCATENATION {out.name!r}: a fused activation")
    _check_leading_ones(out, axis, op)
    sizes = []
    for index in op.inputs:
        t = graph.tensor(index)
        if t.scale != out.scale or t.zero_point != out.zero_point:
            raise UnsupportedGraph(f"CONCATENATION {out.name!r}: input {t.name!r} is quantized "
                                   f"apart from the output ({float(t.scale)}, {t.zero_point} "
                                   f"vs {float(out.scale)}, {out.zero_point})")
        sizes.append(t.size)
    if sum(sizes) != out.size:
        raise UnsupportedGraph(f"CONCATENATION {out.name!r}: parts of {sizes} values make "
                               f"{out.size}")
    return Kernel("concat", out.index, list(op.inputs), {"sizes": sizes}, op.kind)


# ---------------------------------------------------------------------------------- views
def _views(graph: Graph, op: Op) -> list[View]:
    if op.kind in ("RESHAPE", "SQUEEZE", "EXPAND_DIMS"):
        return [View(op.outputs[0], op.inputs[0], 0)]
    if op.kind == "SPLIT":
        axis_t, value = graph.tensor(op.inputs[0]), graph.tensor(op.inputs[1])
        axis = int(axis_t.data.reshape(-1)[0]) % len(value.shape)
        _check_leading_ones(value, axis, op)
        part = value.size // len(op.outputs)
        return [View(o, value.index, k * part) for k, o in enumerate(op.outputs)]
    return [_strided_slice(graph, op)]


def _check_leading_ones(t: Tensor, axis: int, op: Op) -> None:
    if any(d != 1 for d in t.shape[:axis]):
        raise UnsupportedGraph(f"{op.kind} of {t.shape} along axis {axis}: the parts are not "
                               "contiguous")


def _strided_slice(graph: Graph, op: Op) -> View:
    t = graph.tensor(op.inputs[0])
    begin, end, strides = (graph.tensor(i).data.reshape(-1).astype(int) for i in op.inputs[1:4])
    o = op.options
    if any(o.get(k, 0) for k in ("ellipsisMask", "newAxisMask", "shrinkAxisMask", "offset")) \
            or np.any(strides != 1):
        raise UnsupportedGraph(f"STRIDED_SLICE {graph.tensor(op.outputs[0]).name!r}: only unit "
                               "strides without ellipsis / new-axis / shrink masks")
    lo, hi = [], []
    for axis, dim in enumerate(t.shape):
        b = 0 if o.get("beginMask", 0) >> axis & 1 else int(begin[axis]) % (dim + 1) \
            if begin[axis] < 0 else min(int(begin[axis]), dim)
        e = dim if o.get("endMask", 0) >> axis & 1 else int(end[axis]) % (dim + 1) \
            if end[axis] < 0 else min(int(end[axis]), dim)
        lo.append(b)
        hi.append(e)
    sliced = [axis for axis, dim in enumerate(t.shape) if (lo[axis], hi[axis]) != (0, dim)]
    if len(sliced) > 1 or (sliced and any(d != 1 for d in t.shape[:sliced[0]])):
        raise UnsupportedGraph(f"STRIDED_SLICE of {t.shape} [{lo}:{hi}] is not contiguous")
    inner = int(np.prod(t.shape[sliced[0] + 1:])) if sliced else 1
    return View(op.outputs[0], t.index, lo[sliced[0]] * inner if sliced else 0)


def identity_tables_as_views(kernels: list[Kernel], views: dict[int, View]) -> list[Kernel]:
    """A table that maps every int8 to itself is no code: its output becomes a view of its
    input (e.g. a QAT step's ``v = h + h`` whose range is exactly twice the state's, the same
    integers at twice the scale). ``views`` gains them; the other kernels are returned."""
    identity = np.arange(-128, 128)
    kept = []
    for k in kernels:
        if k.kind == "table" and np.array_equal(k.params["table"].astype(np.int64), identity):
            views[k.out] = View(k.out, k.inputs[0], 0)
            continue
        kept.append(k)
    return kept


# ------------------------------------------------------------------------------ table fusion
def fuse_tables(graph: Graph, kernels: list[Kernel]) -> list[Kernel]:
    """T2(T1(x)) -> (T2 o T1)(x) when T1's output is read by T2 alone and is not a graph output."""
    readers = {}
    for k in kernels:
        for i in k.inputs:
            readers[i] = readers.get(i, 0) + 1
    fused, by_out = [], {}
    for k in kernels:
        src = by_out.get(k.inputs[0]) if k.kind == "table" else None
        if src is not None and readers.get(src.out) == 1 and src.out not in graph.outputs:
            first = src.params["table"]
            table = k.params["table"][first.astype(np.int32) + 128]
            merged = Kernel("table", k.out, src.inputs, {"table": table},
                            f"{src.note} + {k.note}")
            fused[next(i for i, f in enumerate(fused) if f is src)] = merged
            by_out.pop(src.out)
            by_out[k.out] = merged
            continue
        fused.append(k)
        if k.kind == "table":
            by_out[k.out] = k
    return fused
