"""The bare-metal int8 C backend: a step + head pair of int8 TFLite models, compiled into
plain C99 (``PREFIX_model.h`` / ``PREFIX_model.c``; `c_names` of an export), bit-exact with
TensorFlow Lite Micro.

    graph      the flatbuffer read into a small typed graph (tensors, ops, quantization)
    arith      TFLite's integer arithmetic preparation (multipliers, shifts, ranges) in Python
    tables     256-entry tables of every one-input int8 op, made by running the op itself
    plan       the op list the C code runs: tables fused, views for slices, a static scratch
    emit       the C source of one model (weights, constants, one function per model)
    names      the prefix of the public C names, and user strings as C that cannot be code
    project    the export folder: PREFIX_model.{h,c}, zoo_int8.h, main.c, Makefile, README.md
               (fixed C from templates/), the card checked against the models first
    check      zoo_app built and compared with the zoo's streaming loop (zoo.export.device_runtime)
    windows    the window files zoo_app reads (a header saying raw, normalized or int8, and T x F)
    shipped    a shipped tag as the source: its card, its test windows from the data at hand
    command    `zoo export --form c`: source, output folder, the check

Nothing here imports TensorFlow: the flatbuffer is read with TensorFlow's generated schema
module (loaded by path) and tables are run under the ``tflite-micro`` Python interpreter.
"""

from zoo.export.c_backend.names import c_names
from zoo.export.c_backend.project import CExportError, write_c_project

__all__ = ["CExportError", "c_names", "write_c_project"]
