"""Activations beyond Keras's own: EdgeML's piecewise-linear, integer-friendly non-linearities.

`get` resolves a name to a function and `serialize` maps it back, so cells store activations as
plain strings in their config (``"quant_tanh"`` round-trips through ``.keras`` files).
"""

import keras
from keras import ops


def quant_tanh(x):
    """EdgeML ``quantTanh``: ``clip(x, -1, 1)``."""
    return ops.clip(x, -1.0, 1.0)


def quant_sigmoid(x):
    """EdgeML ``quantSigm``: ``clip((x + 1) / 2, 0, 1)``."""
    return ops.clip((x + 1.0) * 0.5, 0.0, 1.0)


def quant_sigmoid4(x):
    """EdgeML ``quantSigm4``: ``clip((x + 2) / 4, 0, 1)``."""
    return ops.clip((x + 2.0) * 0.25, 0.0, 1.0)


_CUSTOM = {f.__name__: f for f in (quant_tanh, quant_sigmoid, quant_sigmoid4)}


def get(identifier):
    if isinstance(identifier, str) and identifier in _CUSTOM:
        return _CUSTOM[identifier]
    return keras.activations.get(identifier)


def serialize(fn):
    name = getattr(fn, "__name__", None)
    if name in _CUSTOM and _CUSTOM[name] is fn:
        return name
    return keras.activations.serialize(fn)
