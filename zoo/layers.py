"""The thin `keras.layers.RNN` wrapper every zoo cell shares.

Keras's SimpleRNN/GRU layers forward each cell argument by hand; here the cell's own signature says
which keyword arguments belong to the cell, so a new cell needs only ``cell_class = MyCell``.
"""

import inspect

import keras
from keras.layers import InputSpec

# Layer arguments that both the cell and the RNN layer accept; the RNN keeps them.
_SHARED = ("name", "dtype", "trainable")


def previous_state(states):
    """h_{t-1} from ``states`` as Keras's cells take it: a bare tensor, or a list/tuple whose
    first entry is h_{t-1} (`keras.layers.RNN` always passes the list)."""
    return states[0] if isinstance(states, (list, tuple)) else states


def next_state(h, states):
    """The new state in the form ``states`` came in, as `keras.layers.SimpleRNNCell` returns it:
    ``[h]`` for a list or tuple, ``h`` for a bare tensor."""
    return [h] if isinstance(states, (list, tuple)) else h


class CellRNN(keras.layers.RNN):
    """``keras.layers.RNN`` over ``cell_class``, configured flat like ``keras.layers.SimpleRNN``.

    Args:
        units: hidden size D.
        return_sequences, return_state, go_backwards, stateful, unroll: as in `keras.layers.RNN`.
        **kwargs: arguments of ``cell_class`` (see its docstring) and of `keras.layers.Layer`.
    """

    cell_class: type = None

    def __init__(self, units, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, **kwargs):
        cell_params = inspect.signature(self.cell_class.__init__).parameters
        cell_kwargs = {k: kwargs.pop(k) for k in list(kwargs)
                       if k in cell_params and k not in _SHARED}
        cell = self.cell_class(units, dtype=kwargs.get("dtype"),
                               trainable=kwargs.get("trainable", True),
                               name=f"{self.cell_class.__name__.lower()}", **cell_kwargs)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll, **kwargs)
        self.input_spec = [InputSpec(ndim=3)]

    def call(self, sequences, initial_state=None, mask=None, training=False):
        return super().call(sequences, mask=mask, training=training, initial_state=initial_state)

    @property
    def units(self):
        return self.cell.units

    def get_config(self):
        config = super().get_config()
        del config["cell"]
        cell_config = self.cell.get_config()
        for key in _SHARED:
            cell_config.pop(key, None)
        return {**config, **cell_config}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
