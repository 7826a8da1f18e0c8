"""C++ sources for a step export: the TFLite Micro streaming loop (``main.cc`` with the API in
``zoo_stream.h``), a host self-test / timing driver (``self_test.cc``) and a ``Makefile`` that
builds the driver against a TFLite Micro library given by path (``make TFLM_DIR=...``). The
text of each is a file in ``export/templates/``, filled here.

``zoo.export.device_build`` builds and runs the driver and checks it against the Python interpreter.
"""

from __future__ import annotations

import string
from importlib import resources

from zoo.export.c_text import comment_text
from zoo.export.exportdir import MAIN_SOURCE, MAKEFILE, SELF_TEST_SOURCE, STREAM_HEADER

__all__ = ["device_sources", "resolver_calls"]

# TFLite builtin op -> MicroMutableOpResolver method (TFLM's micro_mutable_op_resolver.h).
_RESOLVER = {"FULLY_CONNECTED": "AddFullyConnected", "ADD": "AddAdd", "SUB": "AddSub",
             "MUL": "AddMul", "TANH": "AddTanh", "LOGISTIC": "AddLogistic", "RELU": "AddRelu",
             "RELU6": "AddRelu6", "MINIMUM": "AddMinimum", "MAXIMUM": "AddMaximum",
             "QUANTIZE": "AddQuantize", "DEQUANTIZE": "AddDequantize", "RESHAPE": "AddReshape",
             "STRIDED_SLICE": "AddStridedSlice", "CONCATENATION": "AddConcatenation",
             "SPLIT": "AddSplit", "TRANSPOSE": "AddTranspose", "PACK": "AddPack",
             "UNPACK": "AddUnpack", "WHILE": "AddWhile", "LESS": "AddLess", "GATHER": "AddGather",
             "SOFTMAX": "AddSoftmax", "HARD_SWISH": "AddHardSwish", "SLICE": "AddSlice",
             "SQUEEZE": "AddSqueeze", "EXPAND_DIMS": "AddExpandDims", "NEG": "AddNeg",
             "ABS": "AddAbs", "RSQRT": "AddRsqrt", "SQUARED_DIFFERENCE": "AddSquaredDifference",
             "ROUND": "AddRound", "FLOOR": "AddFloor", "DIV": "AddDiv", "MEAN": "AddMean",
             "SUM": "AddSum", "SHAPE": "AddShape", "FILL": "AddFill", "ZEROS_LIKE": "AddZerosLike"}


def resolver_calls(ops) -> list[str]:
    """``AddXxx()`` for each distinct op (sorted), as the C++ example registers them."""
    return [f"{_RESOLVER.get(op, 'Add' + op.title().replace('_', ''))}()" for op in sorted(set(ops))]


def _source(name: str) -> str:
    """``export/templates/NAME`` as it is (real C++ / make text)."""
    return resources.files("zoo.export").joinpath(f"templates/{name}").read_text()


def _template(name: str, **values) -> str:
    """`_source` with its ``${...}`` placeholders filled by `string.Template`: a placeholder
    left without a value is a KeyError, not broken C++."""
    return string.Template(_source(name)).substitute(values)


_ELEM = {
    "int8": ("int8_t", "tflite::GetTensorData<int8_t>", -128, 127),
    "int16": ("int16_t", "tflite::GetTensorData<int16_t>", -32768, 32767),
    "float32": ("float", "tflite::GetTensorData<float>", None, None),
}


def _quantization_bodies(io_dtype: str) -> tuple[str, str]:
    elem, _, lo, hi = _ELEM[io_dtype]
    if lo is None:
        return ("(void)scale;\n  (void)zero_point;\n  return v;",
                "(void)scale;\n  (void)zero_point;\n  return q;")
    return (f"const float q = std::nearbyint(v / scale) + zero_point;\n"
            f"  return static_cast<{elem}>(q < {lo} ? {lo} : (q > {hi} ? {hi} : q));",
            "return (static_cast<int>(q) - zero_point) * scale;")


def device_sources(*, title: str, io_dtype: str, card, step_ops, head_ops) -> dict[str, str]:
    """``main.cc``, ``zoo_stream.h``, ``self_test.cc`` and ``Makefile`` of a step export (file
    name -> text; `zoo.export.exportdir.ExportDirectory.write_sources` writes them beside
    ``model_data.h`` / ``.cc``).

    Args:
        title: a line naming the model, task and quantization, for the file headers.
        io_dtype: the step model's state dtype, ``"int8"``, ``"int16"`` or ``"float32"``.
        card: the `ModelCard` so far: ``features``, ``state_size``, ``classes``, ``timesteps``,
            ``step_io``, ``state_quantization`` and the TFLM arenas (``arena_bytes``,
            ``head_arena_bytes``).
        step_ops, head_ops: the builtin op names of each model, registered in the resolvers.

    Returns:
        The sources, ``main.cc`` first.

    Example:

    ```python
    texts = device_sources(title="sirnn on har2 (int8)", io_dtype="int8", card=card,
                           step_ops=["FULLY_CONNECTED", "ADD"], head_ops=["FULLY_CONNECTED"])
    ```
    """
    if io_dtype not in _ELEM:
        raise ValueError(f"no C type for state dtype {io_dtype!r}; valid: {', '.join(_ELEM)}")
    elem, accessor, _, _ = _ELEM[io_dtype]
    qbody, dqbody = _quantization_bodies(io_dtype)
    io = card.step_io
    arena, head_arena = card.arena_bytes or 0, card.head_arena_bytes or 0
    # the title names the model and task (a Keras model's name is its author's text): a newline
    # or a trigraph in it must not leave the // comment it is written into (issue 52)
    shape = dict(title=comment_text(title), d=card.features, units=card.state_size,
                 classes=card.classes, timesteps=card.timesteps)
    indent = "  "
    main = _template(
        MAIN_SOURCE, **shape, x_idx=io.x, h_idx=io.h, h_out_idx=io.h_out, arena=arena,
        head_arena=head_arena, step_arena_alloc=((arena + 15) // 16) * 16 + 1024,
        head_arena_alloc=((head_arena + 15) // 16) * 16 + 1024, elem=elem,
        data_accessor=accessor, quantize_body=qbody, dequantize_body=dqbody,
        n_step_ops=len(set(step_ops)), n_head_ops=len(set(head_ops)),
        step_resolver="\n".join(f"{indent}step_ops.{c};" for c in resolver_calls(step_ops)),
        head_resolver="\n".join(f"{indent}head_ops.{c};" for c in resolver_calls(head_ops)),
        tied="tied" if card.state_quantization and card.state_quantization.tied else "not tied")
    return {MAIN_SOURCE: main, STREAM_HEADER: _template(STREAM_HEADER, **shape),
            SELF_TEST_SOURCE: _source(SELF_TEST_SOURCE), MAKEFILE: _source(MAKEFILE)}
