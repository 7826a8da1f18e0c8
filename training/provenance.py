"""What a run records about where it ran (``metrics.json``): the machine, the accelerators Keras
trains on, and the versions of the stack, so a figure can be traced to what produced it."""

from __future__ import annotations

import os
import platform
import sys

import keras
import numpy as np

import zoo


def hardware() -> dict:
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "backend": keras.backend.backend(), "gpus": gpu_names()}


def gpu_names() -> list[str]:
    """The accelerators Keras trains on, by model name (e.g. "NVIDIA H100 80GB HBM3 (cuda:0)"),
    so that a run's metrics say which GPU made them; empty on CPU."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return [f"{tf.config.experimental.get_device_details(d).get('device_name', '?')} ({d.name})"
                for d in tf.config.list_physical_devices("GPU")]
    if keras.backend.backend() == "jax":
        import jax

        return [f"{d.device_kind} ({d.platform}:{d.id})" for d in jax.devices()
                if d.platform in ("gpu", "cuda", "rocm")]
    return []


def versions() -> dict:
    import importlib.metadata as md

    out = {"python": sys.version.split()[0], "keras": keras.__version__,
           "numpy": np.__version__, "edge-rnn-zoo": zoo.__version__}
    for dist in ("tensorflow", "jax"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    return out
