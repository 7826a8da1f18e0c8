"""edge-rnn-zoo: tiny, stable recurrent cells as Keras 3 layers.

    >>> import zoo
    >>> zoo.list_models()
    >>> model = zoo.create_model("irnn", input_shape=(128, 9), num_classes=2, k=5)
"""

from zoo.registry import create_layer, create_model, get_model_entry, list_models, register_model
from zoo.pretrained import get_pretrained_cfg, list_pretrained

# Importing a family module registers its models: one line per family.
from zoo.irnn import IRNN, IRNNCell, SiRNN
from zoo.fastrnn import FastGRNN, FastGRNNCell, FastRNN, FastRNNCell
from zoo.antisymmetric import AntisymmetricRNN, AntisymmetricRNNCell
from zoo.stable import SpectralNormBall, StableRNN, StableRNNCell
from zoo.diagonal import DiagonalRNN, DiagonalRNNCell, MaxNormBall, SymmetricInit
from zoo import baselines  # noqa: F401  (Keras SimpleRNN / LSTM / GRU)
from zoo import dscnn  # noqa: F401  (DS-CNN keyword-spotting reference)

__version__ = "0.1.0"

__all__ = [
    "create_layer", "create_model", "get_model_entry", "list_models", "register_model",
    "get_pretrained_cfg", "list_pretrained",
    "IRNN", "IRNNCell", "SiRNN", "FastRNN", "FastRNNCell", "FastGRNN", "FastGRNNCell",
    "AntisymmetricRNN", "AntisymmetricRNNCell", "StableRNN", "StableRNNCell", "SpectralNormBall",
]
