"""A TFLite int8 model read into a small typed graph: what the C backend (and the streaming
reference's input map, the profiler) needs to know about each tensor (shape, int8 / int32 data, per-tensor or per-channel quantization) and each op
(builtin name, inputs, outputs, options), in the model's own execution order."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from zoo.export.flatbuffer import builtin_name, read_model

# schema TensorType -> NumPy dtype (the ones an int8 step / head model holds)
_DTYPES = {0: np.float32, 2: np.int32, 9: np.int8, 4: np.int64, 7: np.int16, 6: np.bool_}


class UnsupportedGraph(ValueError):
    """The model holds something the C backend does not generate code for (named in the text)."""


@dataclass
class Tensor:
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: type
    scales: np.ndarray | None      # float32, one per tensor or per channel; None: not quantized
    zero_points: np.ndarray | None
    data: np.ndarray | None = None  # constant tensors only

    @property
    def size(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    @property
    def scale(self) -> np.float32:
        if self.scales is None or len(self.scales) != 1:
            raise UnsupportedGraph(f"tensor {self.name!r} is not quantized per tensor")
        return np.float32(self.scales[0])

    @property
    def zero_point(self) -> int:
        return int(self.zero_points[0]) if self.zero_points is not None else 0

    @property
    def is_const(self) -> bool:
        return self.data is not None


@dataclass
class Op:
    kind: str                      # builtin name, e.g. "FULLY_CONNECTED"
    inputs: list[int]              # tensor indices; -1 = optional input left out
    outputs: list[int]
    options: dict = field(default_factory=dict)


@dataclass
class Graph:
    tensors: list[Tensor]
    ops: list[Op]
    inputs: list[int]
    outputs: list[int]

    def tensor(self, index: int) -> Tensor:
        return self.tensors[index]

    def consumers(self, index: int) -> list[int]:
        """Positions (in ``ops``) of the ops that read tensor ``index``."""
        return [i for i, op in enumerate(self.ops) if index in op.inputs]


def read_graph(tflite: bytes) -> Graph:
    """The first subgraph of a TFLite flatbuffer as a `Graph`."""
    model = read_model(tflite)
    if len(model.subgraphs) != 1:
        raise UnsupportedGraph(f"the model has {len(model.subgraphs)} subgraphs; the C backend "
                               "compiles single-subgraph step and head models")
    sub = model.subgraphs[0]
    tensors = [_tensor(i, t, model.buffers) for i, t in enumerate(sub.tensors)]
    ops = [_op(op, model) for op in sub.operators]
    return Graph(tensors, ops, [int(i) for i in sub.inputs], [int(i) for i in sub.outputs])


def _tensor(index, t, buffers) -> Tensor:
    if t.type not in _DTYPES:
        raise UnsupportedGraph(f"tensor {t.name.decode()!r} has TFLite type {t.type}")
    dtype = _DTYPES[t.type]
    shape = tuple(int(d) for d in (t.shape if t.shape is not None else ()))
    q = t.quantization
    scales = zps = None
    if q is not None and q.scale is not None and len(q.scale):
        scales = np.asarray(q.scale, np.float32)
        zps = np.asarray(q.zeroPoint, np.int64)
    raw = buffers[t.buffer].data if t.buffer < len(buffers) else None
    data = None
    if raw is not None and len(raw):
        data = np.frombuffer(bytes(bytearray(raw)), dtype=dtype).reshape(shape)
    return Tensor(index, t.name.decode(), shape, dtype, scales, zps, data)


def _op(op, model) -> Op:
    options = {}
    if op.builtinOptions is not None:
        options = {k: v for k, v in vars(op.builtinOptions).items()}
    code = model.operatorCodes[op.opcodeIndex]
    return Op(builtin_name(code), [int(i) for i in op.inputs], [int(i) for i in op.outputs],
              options)
