"""Analytic multiply-accumulate counts of the recurrent models (matrix products only; the
element-wise work is O(D) per step and left out, as is usual for MAC counts).

Each zoo cell counts its own MACs (``cell.macs_per_step(input_dim)``), so a new cell needs no
change here; only Keras's own cells, which cannot carry the method, have a formula below.
"""

from __future__ import annotations

import keras

from zoo.layers import recurrent_layers

# Keras's built-in cells: one (d x D input, D x D recurrent) product pair per gate.
_KERAS_GATES = ((keras.layers.LSTMCell, 4), (keras.layers.GRUCell, 3),
                (keras.layers.SimpleRNNCell, 1))


def cell_macs_per_step(cell, input_dim: int) -> int:
    """MACs of one time step of ``cell`` for inputs of width ``input_dim``."""
    if hasattr(cell, "macs_per_step"):
        return int(cell.macs_per_step(input_dim))
    for cell_class, gates in _KERAS_GATES:
        if isinstance(cell, cell_class):
            return gates * (cell.units * cell.units + input_dim * cell.units)
    raise TypeError(f"no MAC formula for {type(cell).__name__}: give it a "
                    "macs_per_step(input_dim) method")


def model_macs_per_sequence(model: keras.Model) -> int:
    """MACs of one whole sequence: T recurrent steps plus the Dense head (once, or per step)."""
    rnns = recurrent_layers(model)
    if not rnns:
        raise ValueError(f"model {model.name} has no recurrent layer to count MACs per step of")
    rnn = rnns[0]
    timesteps, input_dim = rnn.input.shape[1], rnn.input.shape[2]
    if timesteps is None:
        raise ValueError("the model needs a static sequence length to count MACs per sequence")
    total = timesteps * cell_macs_per_step(rnn.cell, input_dim)
    for layer in model.layers:
        if isinstance(layer, keras.layers.Dense):
            per_call = layer.kernel.shape[0] * layer.kernel.shape[1]
            total += per_call * (timesteps if rnn.return_sequences else 1)
    return total
