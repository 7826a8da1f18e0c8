"""Layer 3 of the zoo: from a finished run to what runs on a device.

It owns the TFLite conversion and quantization (`convert`, `quantize`), the streaming step models
(`step`), the export directory and its card (`exportdir`, `card`, `card_schema`), the one
streaming runtime every checker uses (`device_runtime`) and what is checked before an export is
trusted (`device_checks`; `device_bench.py` is their standalone script for a device), the TFLite Micro C++ (`device_sources`, `device_build`) and the bare-metal
int8 C backend (`c_backend`). `exporter.export_run` is the entry point of ``zoo export`` for a
run, `export_model` (`keras_export`) for a Keras model of one's own::

    import zoo.export
    zoo.export.export_model("mine.keras", calibration="windows.npz", form="c")
"""

# Importing any part of the package keeps TensorFlow's native start-up lines off stderr, as
# ``import zoo`` does (`zoo.quiet`): scripts run as ``python -m`` print only what they mean to.
from zoo import quiet as _quiet

_quiet.install()

from zoo.export.keras_export import export_model  # noqa: E402 - light: imports Keras on use

__all__ = ["export_model"]
