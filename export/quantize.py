"""Converter settings per quantization mode, and integer conversion in a child process.

Modes (``zoo export --quantize``):

    none      float32
    fp16      float16 weights (dequantized at load), float32 compute
    dynamic   int8 weights, float activations quantized on the fly ("hybrid"; not TFLite Micro)
    int16x8   16-bit activations, 8-bit weights, integer I/O (int16); needs calibration
    int8      8-bit activations and weights, integer I/O (int8); needs calibration

Calibration of a graph holding a ``WHILE`` loop segfaults inside the converter's calibrator
(TensorFlow bug #75140), so every conversion that calibrates runs in a child
process on a SavedModel the parent wrote: a crash becomes `ConversionCrashed`, naming the mode
and what works instead (``--form step`` or ``--unroll``), not a dead process. A step export's
models (step, head, stream) convert in one child (`convert_all`): one TensorFlow import.

Weights are quantized per tensor (``_experimental_disable_per_channel``): measured as accurate as
per-channel for the step models and 2.8 KB smaller, with a smaller arena
(docs/results-subsets.md).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["MODES", "CALIBRATED", "ConversionCrashed", "configure", "set_integer_mode",
           "convert_saved_model", "convert", "convert_all", "CRASH_HOOK_ENV"]

MODES = ("none", "fp16", "dynamic", "int16x8", "int8")
CALIBRATED = ("int16x8", "int8")
# Test hook: when this variable is set in the child's environment, the child kills itself with
# SIGSEGV before converting, exactly as the calibrator does on a WHILE graph.
CRASH_HOOK_ENV = "ZOO_EXPORT_TEST_SEGFAULT"


class ConversionCrashed(RuntimeError):
    """The converter died (signal) or failed in the child process."""


def configure(converter, mode: str, calibration: dict[str, np.ndarray] | None = None, *,
              per_tensor: bool = True) -> None:
    """Set ``converter`` (a `tf.lite.TFLiteConverter`) up for ``mode``.

    ``calibration`` maps each signature input name to an array whose first axis indexes the
    samples (each fed with a leading batch axis of 1); required for int8 and int16x8. Inputs are
    fed by name (the signature-based representative dataset), since the converter orders
    signature inputs alphabetically. For a model with several signatures, ``calibration`` maps
    each signature key to such a dict, and samples are fed as ``(signature_key, inputs)``.
    """
    import tensorflow as tf

    if mode not in MODES:
        raise ValueError(f"unknown quantization mode {mode!r}; valid: {', '.join(MODES)}")
    if mode == "none":
        return
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode == "fp16":
        converter.target_spec.supported_types = [tf.float16]
        return
    if mode == "dynamic":
        return
    if not calibration:
        raise ValueError(f"--quantize {mode} needs calibration data")
    per_signature = isinstance(next(iter(calibration.values())), dict)
    signatures = calibration if per_signature else {None: calibration}

    def representative_dataset():
        for key, arrays in signatures.items():
            for i in range(len(next(iter(arrays.values())))):
                sample = {name: np.asarray(a[i:i + 1], np.float32) for name, a in arrays.items()}
                yield (key, sample) if per_signature else sample

    set_integer_mode(converter, mode, representative_dataset, per_tensor=per_tensor)


def set_integer_mode(converter, mode: str, representative_dataset, *,
                     per_tensor: bool = True) -> None:
    """The settings of a calibrated integer mode (``int8`` or ``int16x8``): integer kernels only,
    integer input and output, activations calibrated on ``representative_dataset`` (a callable
    yielding samples as the converter takes them); weights per tensor unless ``per_tensor`` is
    False."""
    import tensorflow as tf

    if mode not in CALIBRATED:
        raise ValueError(f"{mode!r} is not a calibrated integer mode; valid: "
                         f"{', '.join(CALIBRATED)}")
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative_dataset
    if mode == "int8":
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    else:
        converter.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
        converter.inference_input_type = tf.int16
        converter.inference_output_type = tf.int16
    if per_tensor:
        converter._experimental_disable_per_channel = True
        if mode == "int8":
            # A graph with FakeQuant activations (zoo.qat, int8 only) takes another path through
            # the converter, which quantizes FULLY_CONNECTED weights per channel unless told this
            # as well. (int16x8 is left as it was: the switch moved its scales, measured by
            # tests/export/test_device_build.py's C++-vs-Python int16 check.)
            converter._experimental_disable_per_channel_quantization_for_dense_layers = True


def convert_saved_model(saved_model_dir, mode: str, calibration=None, *,
                        per_tensor: bool = True, signature_keys=None) -> bytes:
    """Convert a SavedModel in this process (see `convert` for the crash-safe entry point).
    ``signature_keys``: the signatures to convert into one model (default: the only one); their
    ``calibration`` is then per signature (see `configure`)."""
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_saved_model(str(saved_model_dir),
                                                         signature_keys=signature_keys)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    configure(converter, mode, calibration, per_tensor=per_tensor)
    return converter.convert()


# What to try when a mode's export loses too much accuracy: the next mode with more precision
# (never the mode that just failed).
_MORE_PRECISE = {"int8": "--quantize int16x8 (16-bit activations)",
                 "int16x8": "--quantize dynamic or fp16 (float activations)",
                 "dynamic": "--quantize fp16 (float16 weights)",
                 "fp16": "--quantize none (float32)"}


def more_precise_mode(mode: str) -> str | None:
    """The ``--quantize`` mode to try after ``mode`` lost too much accuracy (None: none is
    more precise)."""
    return _MORE_PRECISE[mode].split()[1] if mode in _MORE_PRECISE else None


def accuracy_drop_advice(mode: str) -> str:
    """``"try --quantize ..., or "`` for an export in ``mode`` that lost too much accuracy, or
    ``""`` when no mode is more precise."""
    return f"try {_MORE_PRECISE[mode]}, or " if mode in _MORE_PRECISE else ""


def _alternative(mode: str, form: str, unroll: bool) -> str:
    if form == "sequence" and not unroll:
        return ("--form step (the small path: a step model has no WHILE loop) or --unroll "
                "(loop-free, but ~100x larger)")
    return "--quantize dynamic or --quantize none (no calibration)"


def _check_calibration(model, mode: str, calibration) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown quantization mode {mode!r}; valid: {', '.join(MODES)}")
    signature_keys = list(model) if isinstance(model, dict) else None
    if signature_keys and mode in CALIBRATED and set(calibration or {}) != set(signature_keys):
        raise ValueError(f"calibration must name every signature {signature_keys}")


def convert(model, mode: str, calibration=None, *, unroll: bool = False, per_tensor: bool = True,
            form: str = "sequence", child: bool | None = None, timeout: float = 900) -> bytes:
    """Convert a Keras ``model`` to TFLite in ``mode``; calibrated modes run in a child process.

    ``model`` may be a dict ``{signature_key: keras.Model}`` (one TFLite file with a signature
    each); ``calibration`` is then ``{signature_key: {input name: array}}``.
    Raises `ConversionCrashed` when the child dies or fails, with the mode and an alternative.
    """
    from zoo.export.convert import to_tflite, write_saved_model

    _check_calibration(model, mode, calibration)
    signature_keys = list(model) if isinstance(model, dict) else None
    if mode == "none" and not child and not signature_keys:
        return to_tflite(model, unroll=unroll)
    if child is None:
        child = mode in CALIBRATED
    with tempfile.TemporaryDirectory(prefix="zoo_export_") as tmp:
        tmp = Path(tmp)
        if not child:
            write_saved_model(model, tmp / "saved_model", unroll=unroll)
            return convert_saved_model(tmp / "saved_model", mode, calibration,
                                       per_tensor=per_tensor, signature_keys=signature_keys)
        job = _write_job(tmp, model, mode, calibration, unroll=unroll, per_tensor=per_tensor)
        _run_child(tmp, [job], mode, form, unroll, timeout)
        return Path(job["out"]).read_bytes()


def convert_all(models: dict, mode: str, *, per_tensor: bool = True, form: str = "sequence",
                child: bool | None = None, timeout: float = 900) -> dict[str, bytes]:
    """`convert` for several models at once, ``models`` mapping a name to ``(model,
    calibration)``; the converted models by name. Calibrated modes convert them all in one
    child process, so a step export's step, head and stream models cost one TensorFlow import,
    not three, with the same crash safety (a crash names the mode and the form)."""
    if child is None:
        child = mode in CALIBRATED
    if not child:
        return {name: convert(model, mode, calibration, per_tensor=per_tensor, form=form,
                              child=False) for name, (model, calibration) in models.items()}
    for model, calibration in models.values():
        _check_calibration(model, mode, calibration)
    with tempfile.TemporaryDirectory(prefix="zoo_export_") as tmp:
        tmp = Path(tmp)
        jobs = {name: _write_job(tmp / name, model, mode, calibration, unroll=False,
                                 per_tensor=per_tensor)
                for name, (model, calibration) in models.items()}
        _run_child(tmp, list(jobs.values()), mode, form, False, timeout)
        return {name: Path(job["out"]).read_bytes() for name, job in jobs.items()}


def _write_job(folder: Path, model, mode: str, calibration, *, unroll: bool,
               per_tensor: bool) -> dict:
    """Write ``model`` as a SavedModel (and its calibration) in ``folder``: one conversion for
    the child (`_child_main`), as the dict it reads."""
    from zoo.export.convert import write_saved_model

    folder.mkdir(parents=True, exist_ok=True)
    write_saved_model(model, folder / "saved_model", unroll=unroll)
    if calibration:
        np.savez(folder / "calibration.npz", **_flatten(calibration))
    return {"saved_model": str(folder / "saved_model"), "mode": mode,
            "calibration": str(folder / "calibration.npz") if calibration else None,
            "per_tensor": per_tensor,
            "signature_keys": list(model) if isinstance(model, dict) else None,
            "out": str(folder / "model.tflite")}


def _run_child(tmp: Path, jobs: list[dict], mode: str, form: str, unroll: bool,
               timeout: float) -> None:
    """Run the conversions ``jobs`` in one child process; `ConversionCrashed` when it dies,
    fails or runs past ``timeout``, naming the mode and what works instead."""
    (tmp / "spec.json").write_text(json.dumps({"jobs": jobs}))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3")}
    what = f"--quantize {mode} --form {form}{' --unroll' if unroll else ''}"
    try:
        proc = subprocess.run([sys.executable, "-m", "zoo.export.quantize", str(tmp / "spec.json")],
                              capture_output=True, text=True, env=env, timeout=timeout,
                              cwd=str(Path(__file__).resolve().parents[1]))
    except subprocess.TimeoutExpired:
        raise ConversionCrashed(f"TFLite conversion ({what}) did not finish in {timeout:.0f} s; "
                                f"try {_alternative(mode, form, unroll)}") from None
    if proc.returncode != 0:
        if proc.returncode < 0:
            sig = signal.Signals(-proc.returncode).name
            cause = (f"the converter crashed with {sig}"
                     + (" (calibrating a WHILE loop: TensorFlow bug #75140)"
                        if form == "sequence" and not unroll and mode in CALIBRATED else ""))
        else:
            tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
            cause = f"the converter failed (exit {proc.returncode}):\n{tail}"
        raise ConversionCrashed(f"TFLite conversion ({what}) failed: {cause}. What works "
                                f"instead: {_alternative(mode, form, unroll)}.")


def _flatten(calibration: dict) -> dict:
    """Per-signature calibration as flat npz keys ``signature/input``."""
    if not isinstance(next(iter(calibration.values())), dict):
        return calibration
    return {f"{key}/{name}": a for key, arrays in calibration.items()
            for name, a in arrays.items()}


def _unflatten(flat: dict) -> dict:
    if not any("/" in k for k in flat):
        return flat
    nested: dict = {}
    for k, a in flat.items():
        key, name = k.split("/", 1)
        nested.setdefault(key, {})[name] = a
    return nested


def _child_main(spec_path: str) -> int:
    """The child: every conversion of ``spec.json``'s ``jobs`` (`_write_job`), in order."""
    spec = json.loads(Path(spec_path).read_text())
    jobs = spec.get("jobs", [spec])  # one conversion's spec, as a parent before `convert_all` wrote
    if os.environ.get(CRASH_HOOK_ENV):
        os.kill(os.getpid(), signal.SIGSEGV)
    for job in jobs:
        calibration = None
        if job["calibration"]:
            with np.load(job["calibration"]) as data:
                calibration = _unflatten({k: data[k] for k in data.files})
        tflite = convert_saved_model(job["saved_model"], job["mode"], calibration,
                                     per_tensor=job["per_tensor"],
                                     signature_keys=job["signature_keys"])
        Path(job["out"]).write_bytes(tflite)
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1]))
