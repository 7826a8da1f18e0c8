"""What an export's refusal for lost accuracy says: the agreement of the quantized model with
the float one (the check that needs no labels), the layer whose values range widest (where an
int8 scale is coarsest), and a command that itself runs as the next thing to try."""

from __future__ import annotations

import shlex

import numpy as np

from zoo.export.quantize import more_precise_mode

__all__ = ["agreement_drop", "widest_range", "next_command", "same_command", "source_command"]


def agreement_drop(agreement: float) -> float:
    """Points of argmax agreement with the float model lost: 100 (1 - agreement)."""
    return 100.0 * (1.0 - agreement)


def widest_range(model, x: np.ndarray, limit: int = 200) -> str | None:
    """``"layer 'lstm_1' (values up to 37.2)"``: the input or the layer of the chain ``model``
    whose values reach furthest from zero on (the first ``limit`` of) the normalised windows
    ``x``, as int8 quantizes each tensor on its range; None when the model is not a chain the
    layers can be run along."""
    x = np.asarray(x[:limit], np.float32)
    widest = ("the input", float(np.abs(x).max()) if x.size else 0.0)
    channel = int(np.abs(x).reshape(-1, x.shape[-1]).max(axis=0).argmax()) if x.size else 0
    widest_name = f"the input (channel {channel})"
    try:
        value = x
        for layer in model.layers:
            if type(layer).__name__ == "InputLayer":
                continue
            value = np.asarray(layer(value, training=False))
            reach = float(np.abs(value).max())
            if reach > widest[1]:
                widest, widest_name = (layer.name, reach), f"layer {layer.name!r}"
    except Exception:  # noqa: BLE001 - a hint only; a model that is no chain gets none
        return None
    return f"{widest_name} (values up to {widest[1]:.4g})"


def next_command(source: str, quantize: str, calibration: str | None = None) -> str | None:
    """The ``zoo export`` command to try after ``quantize`` lost too much: the same source as
    a step export in the next more precise mode (its calibration windows for a .keras model),
    or None when no mode is more precise."""
    mode = more_precise_mode(quantize)
    if mode is None:
        return None
    words = ["zoo", "export", str(source)]
    if calibration:
        words += ["--calibration", str(calibration)]
    return shlex.join(words + ["--form", "step", "--quantize", mode])


def same_command(run, opts) -> str | None:
    """The command that makes the export of ``run`` (a `zoo.export.sources.ExportSource`) with
    ``opts`` again, e.g. for a step export made inside ``--form c`` whose folder is temporary."""
    words = _source_words(run)
    if words is None:
        return None
    return shlex.join(words + ["--form", opts.form, "--quantize", opts.quantize])


def source_command(run, opts) -> str | None:
    """`next_command` for ``run``: its .keras file and calibration windows, or its run."""
    words = _source_words(run)
    if words is None:
        return None
    return next_command(words[2], opts.quantize, words[4] if len(words) > 3 else None)


def _source_words(run) -> list | None:
    keras_file = run.card_fields.get("keras_model")
    if keras_file and str(keras_file).endswith(".keras"):
        return ["zoo", "export", str(keras_file), "--calibration", str(run.data_source)]
    if run.run_dir:
        return ["zoo", "export", str(run.run_dir)]
    return None
