"""Analytic multiply-accumulate counts of the recurrent models (matrix products only; the
element-wise work is O(D) per step and left out, as is usual for MAC counts)."""

from __future__ import annotations

import keras

from zoo.antisymmetric import AntisymmetricRNNCell
from zoo.diagonal import DiagonalRNNCell
from zoo.fastrnn import _FastCellBase
from zoo.irnn import IRNNCell
from zoo.stable import StableRNNCell


def _chain_macs(rows: int, rank: int | None, units: int) -> int:
    return rows * units if rank is None else rows * rank + rank * units


def cell_macs_per_step(cell, input_dim: int) -> int:
    """MACs of one time step of ``cell`` for inputs of width ``input_dim``."""
    D, d = cell.units, input_dim
    if isinstance(cell, IRNNCell):
        u = D * D if cell.rank is None else 2 * D * cell.rank
        return d * D + cell.k * u * (2 if cell.premultiply else 1)
    if isinstance(cell, _FastCellBase):
        return _chain_macs(d, cell.w_rank, D) + _chain_macs(D, cell.u_rank, D)
    if isinstance(cell, AntisymmetricRNNCell):
        return D * D + d * D * (2 if cell.gated else 1)
    if isinstance(cell, DiagonalRNNCell):
        return d * D  # the diagonal recurrence is element-wise
    if isinstance(cell, (StableRNNCell, keras.layers.SimpleRNNCell)):
        return D * D + d * D
    if isinstance(cell, keras.layers.GRUCell):
        return 3 * (D * D + d * D)
    if isinstance(cell, keras.layers.LSTMCell):
        return 4 * (D * D + d * D)
    raise TypeError(f"no MAC formula for {type(cell).__name__}")


def model_macs_per_sequence(model: keras.Model) -> int:
    """MACs of one whole sequence: T recurrent steps plus the Dense head (once, or per step)."""
    rnn = next(layer for layer in model.layers if isinstance(layer, keras.layers.RNN))
    timesteps, input_dim = rnn.input.shape[1], rnn.input.shape[2]
    if timesteps is None:
        raise ValueError("the model needs a static sequence length to count MACs per sequence")
    total = timesteps * cell_macs_per_step(rnn.cell, input_dim)
    for layer in model.layers:
        if isinstance(layer, keras.layers.Dense):
            per_call = layer.kernel.shape[0] * layer.kernel.shape[1]
            total += per_call * (timesteps if rnn.return_sequences else 1)
    return total
