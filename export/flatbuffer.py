"""TFLite flatbuffers as mutable object trees: read, write and name ops without importing
TensorFlow. Shared by the flatbuffer surgery of `zoo.export.sequence_int8` and the C backend."""

from __future__ import annotations

import importlib.util
import os

__all__ = ["schema", "read_model", "write_model", "builtin_name", "builtin_code"]

_SCHEMA = []


def schema():
    """TensorFlow's generated TFLite schema (object API), loaded from its file: importing it as
    ``tensorflow.lite.python.schema_py_generated`` would import all of TensorFlow (seconds) for
    code that needs only ``flatbuffers`` and NumPy. The `tflite` package is not a dependency."""
    if not _SCHEMA:
        spec = importlib.util.find_spec("tensorflow")  # locates the package, imports nothing
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("reading TFLite flatbuffers needs TensorFlow's TFLite schema "
                              "(tensorflow/lite/python/schema_py_generated.py)")
        path = os.path.join(spec.submodule_search_locations[0], "lite", "python",
                            "schema_py_generated.py")
        module_spec = importlib.util.spec_from_file_location("_zoo_tflite_schema", path)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        _SCHEMA.append(module)
    return _SCHEMA[0]


def read_model(data: bytes):
    """The ``ModelT`` (mutable object tree) of a TFLite flatbuffer."""
    return schema().ModelT.InitFromPackedBuf(bytearray(data), 0)


def write_model(model) -> bytes:
    """The flatbuffer of a ``ModelT``."""
    import flatbuffers

    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def builtin_name(operator_code) -> str:
    """The builtin op name (``"FULLY_CONNECTED"``) of an ``OperatorCodeT``: newer files carry
    the code in ``builtinCode``, older ones in ``deprecatedBuiltinCode`` (the larger is right)."""
    code = max(int(operator_code.builtinCode), int(operator_code.deprecatedBuiltinCode))
    names = {v: k for k, v in vars(schema().BuiltinOperator).items() if not k.startswith("_")}
    return names[code]


def builtin_code(name: str) -> int:
    return int(getattr(schema().BuiltinOperator, name))
