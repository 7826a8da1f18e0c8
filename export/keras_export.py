"""``zoo export MODEL.keras --calibration X.npy``: a Keras model of the user's, to the same checked
exports as a run gets (sequence, step, C).

The model is any chain `zoo.export.layer_chain` takes (the zoo's cells or Keras SimpleRNN / GRU /
LSTM, stacked too, a Normalization or Dense before, Dense / Dropout after); the calibration
windows are raw model inputs (N, T, C) that calibrate the integer ranges and on which the export
is checked against the float model (with labels: its accuracy too, and ``max_drop``). See
`export_model`.
"""

from __future__ import annotations

import logging
from pathlib import Path

__all__ = ["export_model", "default_out"]
_log = logging.getLogger(__name__)
FORMS = ("sequence", "step", "c")


def default_out(model_path, form: str, quantize: str) -> Path:
    """Beside the ``.keras`` file: ``mine.keras`` -> ``mine-export-FORM-QUANTIZE``."""
    path = Path(model_path)
    return path.with_name(f"{path.stem}-export-{form}-{quantize}")


def export_model(model, calibration, out=None, *, labels=None, quantize: str = "int8",
                 form: str = "c", match: str | None = None, prefix: str | None = None,
                 **options):
    """Export a Keras classifier with its calibration windows; returns the `ModelCard` as
    written (``form="c"``: the C export's summary dict, with its check of every window).

    Args:
        model: a `keras.Model`, or the path of a ``.keras`` file (the zoo's layers load).
        calibration: the raw model inputs (N, T, C): an array, an ``.npy`` file, or an ``.npz``
            holding ``X`` and optionally integer labels ``y``. At least
            `zoo.export.sources.MIN_WINDOWS`; the export is checked on them.
        out: the export folder (default beside a ``.keras`` file: ``NAME-export-FORM-QUANTIZE``;
            needed for an in-memory model). Replaced only with ``overwrite=True`` and only when
            the zoo wrote it, once the new export is complete.
        labels: class indices (N,) of the windows (an array or an ``.npy`` file), when
            ``calibration`` holds none: the export's accuracy is then checked against the float
            model's (``max_drop``), not only its agreement.
        quantize: ``none``, ``fp16``, ``dynamic``, ``int16x8`` or ``int8`` (``form="c"``: int8).
        form: ``sequence`` (one model, the whole window), ``step`` (streaming step + head
            models, the C++ loop) or ``c`` (the int8 step and head as plain C99, bit-exact with
            TFLite Micro, checked on every window).
        match: ``form="c"``: the runtime the C code reproduces (``tflite-micro``, the default, or
            ``litert``).
        prefix: ``form="c"``: the public C names' (`zoo.export.c_backend.names.check_prefix`;
            default made from the model's name).
        **options: the other fields of `zoo.export.exporter.ExportOptions` (``max_drop``,
            ``allow_drop``, ``overwrite``, ``per_tensor``, ``calibration_pairs``, ``micro``...).

    Raises:
        zoo.export.layer_chain.UnsupportedLayerError: a layer the export cannot take (named).
        zoo.export.sources.CalibrationError: windows or labels that cannot be used (named).
        zoo.export.exporter.AccuracyDropError: with labels, the export lost more than
            ``max_drop`` points.

    Example:

    ```python
    import numpy as np, keras, zoo
    x = np.random.default_rng(0).normal(size=(64, 20, 3)).astype("float32")
    model = keras.Sequential([keras.Input((20, 3)), zoo.SiRNN(8, rank=2),
                              keras.layers.Dense(2)])
    summary = zoo.export.export_model(model, calibration=x, out="/tmp/sirnn-c", form="c",
                                      allow_drop=True, overwrite=True)
    summary["check"]["identical_logits"]   # 64: every window, C == TFLite Micro
    ```
    """
    from zoo.export.exporter import ExportOptions, check_backend, export_source
    from zoo.export.sources import read_keras

    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}; valid: {', '.join(FORMS)}")
    if prefix is not None and form != "c":
        raise ValueError(f"prefix names the C code's symbols; it applies to form 'c', not {form!r}")
    if form == "c" and quantize != "int8":
        raise ValueError(f"form 'c' is the int8 step model in C; quantize {quantize!r} does not "
                         "apply")
    check_backend()
    in_memory = hasattr(model, "layers")
    if out is None:
        if in_memory:
            raise ValueError("out: an export folder is needed for an in-memory model")
        out = default_out(model, form, quantize)
    read = lambda: read_keras(model, calibration, labels)  # noqa: E731 - read once out is locked
    if form != "c":
        opts = ExportOptions(quantize=quantize, form=form, **options)
        return export_source(read, Path(out), opts)
    ExportOptions(quantize="int8", form="step", **options)  # every option checked up front
    return _export_c(read, Path(out), match, str(model) if not in_memory else model.name,
                     dict(options, prefix=prefix))


def _export_c(read, out: Path, match: str | None, name: str, options: dict) -> dict:
    """The int8 step export made in a temporary folder, then compiled and checked by
    `zoo.export.c_backend.command.export_c` into ``out``."""
    from zoo.export.c_backend.command import export_c
    from zoo.export.c_backend.project import DEFAULT_RUNTIME
    from zoo.export.exporter import export_source

    def make_step(step_dir, step_options):
        return export_source(read, Path(step_dir), step_options)

    return export_c(name, out, match=match or DEFAULT_RUNTIME, step_maker=make_step, **options)
