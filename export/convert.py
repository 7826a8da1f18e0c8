"""Keras 3 model -> float32 TFLite flatbuffer, and the helpers to inspect and run one.

    >>> tflite = to_tflite(zoo.create_model("irnn", (128, 9), 2, batch_size=1))
    >>> check_builtin_only(tflite)            # raises on Flex / custom ops
    >>> y = run_tflite(tflite, x)             # ai-edge-litert, any batch size

The conversion goes through a SavedModel written by `keras.export.ExportArchive` with the model
called in inference mode (``training=False``), then `tf.lite.TFLiteConverter.from_saved_model`,
restricted to the TFLite builtin op set. A recurrent layer becomes a ``WHILE`` loop over its time
steps; ``unroll=True`` converts a copy of the model with every recurrent layer unrolled instead
(larger, but loop-free).
"""

from __future__ import annotations

import contextlib
import tempfile

import keras
import numpy as np

__all__ = ["to_tflite", "tflite_converter", "write_saved_model", "op_names", "check_builtin_only",
           "run_tflite", "unrolled_copy", "with_batch_size", "NonBuiltinOpError"]


class NonBuiltinOpError(ValueError):
    """A TFLite model contains Flex (SELECT_TF_OPS) or custom operators."""


def set_in_config(config, key: str, value) -> None:
    """Set every ``key`` of a (nested) layer config to ``value``, in place."""
    if isinstance(config, dict):
        for name, item in config.items():
            if name == key:
                config[name] = value
            else:
                set_in_config(item, key, value)
    elif isinstance(config, list):
        for item in config:
            set_in_config(item, key, value)


def unrolled_copy(model: keras.Model) -> keras.Model:
    """A copy of ``model`` (same weights) with every recurrent layer built with ``unroll=True``.

    Recurrent layers nested in wrappers (``Bidirectional``) are unrolled too; the copy needs a
    static number of time steps.
    """

    return clone_with_config(model, "unroll", True)


def clone_with_config(model: keras.Model, key: str, value) -> keras.Model:
    """A copy of ``model`` (same weights) whose layers are rebuilt with every ``key`` in their
    (nested) config set to ``value``."""

    def clone_layer(layer):
        config = layer.get_config()
        set_in_config(config, key, value)
        return layer.__class__.from_config(config)

    copy = keras.models.clone_model(model, clone_function=clone_layer)
    copy.set_weights(model.get_weights())
    return copy


def with_batch_size(model: keras.Model, batch_size: int = 1) -> keras.Model:
    """A copy of a single-input ``model`` (same weights) whose input has a static batch size, as
    the converter needs for a recurrent layer (a trained model's batch is ``None``)."""
    (inp,) = model.inputs
    new_input = keras.Input(batch_shape=(batch_size,) + tuple(inp.shape[1:]), dtype=inp.dtype,
                            name=inp.name)
    copy = keras.models.clone_model(model, input_tensors=new_input)
    copy.set_weights(model.get_weights())
    return copy


def _input_signature(model):
    import tensorflow as tf

    inputs = getattr(model, "inputs", None)
    if not inputs:
        raise ValueError("to_tflite needs a model with known inputs (a Functional or Sequential "
                         "model built on keras.Input); call or build the model first")
    if any(x.shape[0] is None for x in inputs):
        raise ValueError("to_tflite needs a static batch size (e.g. zoo.create_model(..., "
                         "batch_size=1)): the converter cannot lower a recurrent layer's "
                         "TensorList ops to builtins with a dynamic batch")
    # One positional argument per input, named as the model's inputs: the SavedModel signature
    # (and so the TFLite signature and the keys of a dict representative dataset) uses the names.
    return [tf.TensorSpec(x.shape, dtype=x.dtype, name=x.name) for x in inputs]


def write_saved_model(model, path, *, unroll: bool = False) -> None:
    """Export ``model`` (called with ``training=False``) as a SavedModel with one ``serve``
    signature whose inputs are named as the model's inputs. ``unroll``: of `unrolled_copy`.

    ``model`` may also be a dict ``{signature_key: keras.Model}``: one SavedModel (and so one
    TFLite file) with a signature per model, e.g. ``{"step": ..., "head": ...}``."""
    models = model if isinstance(model, dict) else {"serve": model}
    archive = keras.export.ExportArchive()
    for key, m in models.items():
        if unroll:
            m = unrolled_copy(m)
        archive.track(m)
        archive.add_endpoint(key, _serve(m), _input_signature(m))
    archive.write_out(str(path), verbose=False)


def _serve(model):
    # A closure, not a default argument: the SavedModel signature must hold the inputs only.
    return lambda *args: model(args[0] if len(args) == 1 else list(args), training=False)


@contextlib.contextmanager
def tflite_converter(model: keras.Model, *, unroll: bool = False):
    """Context manager yielding a `tf.lite.TFLiteConverter` for ``model``, builtin ops only.

    The model is exported (called with ``training=False``) to a temporary SavedModel that lives
    as long as the ``with`` block. Set further converter options (optimizations, a representative
    dataset...) inside the block before calling ``convert()``::

        with tflite_converter(model) as converter:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
            tflite = converter.convert()
    """
    import tensorflow as tf

    with tempfile.TemporaryDirectory(prefix="zoo_tflite_") as tmpdir:
        write_saved_model(model, tmpdir, unroll=unroll)
        converter = tf.lite.TFLiteConverter.from_saved_model(tmpdir)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        yield converter


def to_tflite(model: keras.Model, *, unroll: bool = False) -> bytes:
    """Convert a Keras 3 model to a float32 TFLite flatbuffer of builtin ops only.

    Args:
        model: a Functional/Sequential model with a static batch size (e.g.
            ``zoo.create_model(..., batch_size=1)``).
        unroll: convert `unrolled_copy(model)` (no ``WHILE`` loop) instead of the model itself.

    Returns:
        The ``.tflite`` bytes. Raises if the graph needs an op outside TFLite's builtin set.
    """
    with tflite_converter(model, unroll=unroll) as converter:
        tflite = converter.convert()
    check_builtin_only(tflite)
    return tflite


def _op_codes(tflite_bytes):
    from ai_edge_litert import schema_py_generated as schema

    buf = bytearray(tflite_bytes)
    fb = schema.Model.GetRootAs(buf, 0)
    builtin_names = {v: k for k, v in vars(schema.BuiltinOperator).items()
                     if not k.startswith("_") and isinstance(v, int)}
    codes = []
    for i in range(fb.OperatorCodesLength()):
        code = fb.OperatorCodes(i)
        # Codes above 127 live in `builtin_code`; `deprecated_builtin_code` saturates at 127.
        value = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if value == schema.BuiltinOperator.CUSTOM:
            custom = code.CustomCode()
            codes.append((False, custom.decode() if custom is not None else "CUSTOM"))
        else:
            codes.append((True, builtin_names.get(value, f"BUILTIN_{value}")))
    ops = []
    for s in range(fb.SubgraphsLength()):
        graph = fb.Subgraphs(s)
        for o in range(graph.OperatorsLength()):
            ops.append(codes[graph.Operators(o).OpcodeIndex()])
    return ops


def op_names(tflite_bytes: bytes) -> list[str]:
    """Name of every operator of every subgraph (main graph first, then e.g. ``WHILE`` bodies).

    Builtin ops are named as in the schema (``FULLY_CONNECTED``, ``WHILE``...); custom ops by
    their custom code (Flex ops are custom ops named ``Flex<TfOp>``). Use ``set(...)`` for the
    op set, ``collections.Counter(...)`` for counts.
    """
    return [name for _, name in _op_codes(tflite_bytes)]


def check_builtin_only(tflite_bytes: bytes) -> None:
    """Raise `NonBuiltinOpError` naming every Flex or custom op in the model, if any."""
    bad = sorted({name for builtin, name in _op_codes(tflite_bytes) if not builtin})
    if bad:
        flex = [n for n in bad if n.startswith("Flex")]
        custom = [n for n in bad if not n.startswith("Flex")]
        parts = ([f"Flex (SELECT_TF_OPS) ops {', '.join(flex)}"] if flex else []) + \
                ([f"custom ops {', '.join(custom)}"] if custom else [])
        raise NonBuiltinOpError(
            f"TFLite model is not builtin-only: it contains {' and '.join(parts)}; these need "
            "the TensorFlow (Flex) delegate or a custom kernel and will not run on TFLite Micro")


def run_tflite(tflite_bytes: bytes, x, *, num_threads: int | None = None) -> np.ndarray:
    """Run a single-input, single-output TFLite model on ``x`` with ai-edge-litert.

    ``x`` may hold any number of samples: it is fed in chunks of the model's static batch (a
    trailing partial chunk is zero-padded and the padding dropped). ``x`` is cast to the input
    dtype as is: an integer model's input must be quantized by the caller. Returns a numpy array.
    """
    from ai_edge_litert.interpreter import Interpreter

    from zoo.export.device_runtime import delegate_line_hidden

    with delegate_line_hidden():  # LiteRT's XNNPACK line
        interpreter = Interpreter(model_content=bytes(tflite_bytes), num_threads=num_threads)
    (inp,), (out,) = interpreter.get_input_details(), interpreter.get_output_details()
    x = np.asarray(x, dtype=inp["dtype"])
    batch = int(inp["shape"][0])
    if tuple(x.shape[1:]) != tuple(inp["shape"][1:]):
        raise ValueError(f"input shape {x.shape[1:]} does not match the model's "
                         f"{tuple(inp['shape'][1:])}")
    interpreter.allocate_tensors()
    results = []
    for start in range(0, x.shape[0], batch):
        chunk = x[start:start + batch]
        n = chunk.shape[0]
        if n < batch:
            chunk = np.concatenate([chunk, np.zeros((batch - n,) + chunk.shape[1:], chunk.dtype)])
        interpreter.set_tensor(inp["index"], chunk)
        interpreter.invoke()
        results.append(interpreter.get_tensor(out["index"])[:n])
    return np.concatenate(results, axis=0)
