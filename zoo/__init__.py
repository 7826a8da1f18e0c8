"""edge-rnn-zoo: tiny, stable recurrent cells as Keras 3 layers.

    >>> import zoo
    >>> zoo.list_models()
    >>> model = zoo.create_model("irnn", input_shape=(128, 9), num_classes=2, k=5)

``import zoo`` is quick and writes nothing to stderr. The Keras side (registry, cells) loads on
first use of one of its names (PEP 562), or as soon as Keras itself is imported, so
``import zoo; keras.saving.load_model("model.keras")`` finds the zoo's layers as before. When the
zoo itself loads TensorFlow, its native start-up lines are captured for that import only; a user's
own ``import tensorflow`` prints as without the zoo (`zoo.quiet`). So ``zoo list``,
``zoo.list_pretrained()`` and the command line's usage errors answer without loading
TensorFlow, and ``from zoo import create_model`` works as usual.
"""

import importlib
import sys

from zoo import model_table as _model_table
from zoo.model_table import register_layers
from zoo import quiet as _quiet
from zoo.pretrained import get_pretrained_cfg, list_pretrained

from zoo.core import __version__  # noqa: F401  (written once, in the core)

# Keras-side name -> the module defining it. Importing a family module registers its models.
_LAZY = {
    **dict.fromkeys(("create_layer", "create_model", "get_model_entry", "list_models",
                     "register_model", "reset_head"), "zoo.registry"),
    **dict.fromkeys(("IRNN", "IRNNCell", "SiRNN"), "zoo.irnn"),
    **dict.fromkeys(("FastGRNN", "FastGRNNCell", "FastRNN", "FastRNNCell"), "zoo.fastrnn"),
    **dict.fromkeys(("GRU", "GRUCell"), "zoo.gru"),
    **dict.fromkeys(("AntisymmetricRNN", "AntisymmetricRNNCell"), "zoo.antisymmetric"),
    **dict.fromkeys(("SpectralNormBall", "StableRNN", "StableRNNCell"), "zoo.stable"),
    **dict.fromkeys(("DiagonalRNN", "DiagonalRNNCell", "MaxNormBall", "SymmetricInit"),
                    "zoo.diagonal"),
}
__all__ = ["get_pretrained_cfg", "list_pretrained", "register_layers", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        register_layers()
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module 'zoo' has no attribute {name!r}")


def _load_keras_side_when_safe() -> None:
    """`register_layers` once Keras has loaded, unless a zoo module is itself mid-import (it
    imported Keras first, as ``from zoo.layers import CellRNN`` does): the families cannot be
    imported before it is complete. Then the registry's look-ups (``zoo.create_model``,
    ``zoo.list_models``...) and ``zoo.<name>`` load them when first used."""
    initializing = [name for name, module in list(sys.modules.items())
                    if name.startswith("zoo.")
                    and getattr(getattr(module, "__spec__", None), "_initializing", False)]
    if not initializing:
        register_layers()


_quiet.install()
_quiet.after_import("keras", _load_keras_side_when_safe)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
