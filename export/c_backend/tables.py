"""256-entry tables of one-input int8 ops, made by running the op itself.

An int8 -> int8 op with a single variable input (LOGISTIC, TANH, RELU, or ADD / SUB / MUL /
MINIMUM / MAXIMUM of that input with a one-element constant or with itself) has only 256
possible inputs. The op is cut out of the model into a one-op model whose input is all 256
values, and run by the runtime the C code must match: the table is bit-exact by construction,
whatever the kernel does inside (gemmlowp's fixed-point exp for LOGISTIC, say). On a device a
table is one load per element.
"""

from __future__ import annotations

import copy

import numpy as np

from zoo.export.flatbuffer import read_model, write_model

ALL_INT8 = np.arange(-128, 128, dtype=np.int8)
ELEMENTWISE = {"ADD", "SUB", "MUL", "MINIMUM", "MAXIMUM", "RELU", "RELU6", "RELU_N1_TO_1",
               "LOGISTIC", "TANH", "QUANTIZE", "LEAKY_RELU", "HARD_SWISH", "ABS", "NEG"}


def one_op_model(tflite: bytes, op_position: int, variable: int) -> bytes:
    """The model holding only op ``op_position`` of ``tflite``, its variable input tensor
    ``variable`` and its output reshaped to [1, 256] (constant inputs kept as they are)."""
    model = read_model(tflite)
    sub = model.subgraphs[0]
    op = copy.deepcopy(sub.operators[op_position])
    out = int(op.outputs[0])
    for index in (variable, out):
        sub.tensors[index].shape = np.array([1, 256], np.int32)
        sub.tensors[index].shapeSignature = None
    sub.operators = [op]
    sub.inputs = np.array([variable], np.int32)
    sub.outputs = np.array([out], np.int32)
    model.signatureDefs = []
    return write_model(model)


def run_table(model: bytes, runtime: str = "tflite-micro") -> np.ndarray:
    """The op's output for the inputs -128..127, as int8, under ``runtime``."""
    x = ALL_INT8.reshape(1, 256)
    if runtime == "tflite-micro":
        from tflite_micro.python.tflite_micro import runtime as tflm

        interp = tflm.Interpreter.from_bytes(model, arena_size=16384 + 16 * len(model))
        interp.set_input(x, 0)
        interp.invoke()
        out = interp.get_output(0)
    elif runtime == "litert":
        # LiteRT's builtin reference kernels: its default XNNPACK delegate has its own LOGISTIC
        # and TANH tables and ADD rescaling (see project.SINGLE_ROUNDING).
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        interp = Interpreter(model_content=model,
                             experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        interp.allocate_tensors()
        interp.set_tensor(interp.get_input_details()[0]["index"], x)
        interp.invoke()
        out = interp.get_tensor(interp.get_output_details()[0]["index"])
    else:
        raise ValueError(f"unknown runtime {runtime!r}; valid: tflite-micro, litert")
    return np.asarray(out, np.int8).reshape(256)


def op_table(tflite: bytes, op_position: int, variable: int,
             runtime: str = "tflite-micro") -> np.ndarray:
    """table[x + 128] = the op's int8 output for int8 input x."""
    return run_table(one_op_model(tflite, op_position, variable), runtime)
