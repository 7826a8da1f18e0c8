"""What every zoo cell shares: the Keras weight arguments (`ZooCell`), the state convention of
Keras's own cells (`previous_state` / `next_state`) and the thin `keras.layers.RNN` wrapper
(`CellRNN`).

Keras's SimpleRNN/GRU layers forward each cell argument by hand; here the cell's own signature says
which keyword arguments belong to the cell, so a new cell needs only ``cell_class = MyCell``.
"""

import inspect

import keras
from keras import constraints, initializers, regularizers
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


class ZooCell(keras.layers.Layer):
    """Base of the zoo's cells: stores and serializes the Keras weight arguments.

    The arguments mean what they mean in `keras.layers.SimpleRNNCell`; a subclass lists them in
    its own signature (the registry and `CellRNN` read the options from it), resolves its
    paper's defaults and passes them here. ``build`` creates the weights with `add_kernel`,
    `add_recurrent_kernel` and `add_bias`, which attach the matching initializer, regularizer
    and constraint.

    Args:
        units: hidden size D (positive).
        use_bias: whether the cell has a bias.
        kernel_initializer, recurrent_initializer, bias_initializer: initializers of the input
            weights, the recurrent weights and the bias.
        kernel_regularizer, recurrent_regularizer, bias_regularizer: their regularizers.
        kernel_constraint, recurrent_constraint, bias_constraint: their constraints.
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, units, use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(**kwargs)
        if units <= 0:
            raise ValueError(f"units must be positive, got {units}")
        self.units = units
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.state_size = units
        self.output_size = units

    def add_kernel(self, shape, name="kernel"):
        """An input weight (W, or one factor of a low-rank W)."""
        return self.add_weight(shape=shape, name=name, initializer=self.kernel_initializer,
                               regularizer=self.kernel_regularizer,
                               constraint=self.kernel_constraint)

    def add_recurrent_kernel(self, shape, name="recurrent_kernel", constraint=None):
        """A recurrent weight (U, or one factor of a low-rank U); ``constraint`` replaces
        ``recurrent_constraint`` where the cell composes it with its own projection."""
        return self.add_weight(shape=shape, name=name, initializer=self.recurrent_initializer,
                               regularizer=self.recurrent_regularizer,
                               constraint=constraint or self.recurrent_constraint)

    def add_bias(self, shape, name="bias", initializer=None):
        """A bias; ``initializer`` overrides ``bias_initializer`` (cells with several biases)."""
        return self.add_weight(shape=shape, name=name,
                               initializer=initializer or self.bias_initializer,
                               regularizer=self.bias_regularizer, constraint=self.bias_constraint)

    def macs_per_step(self, input_dim: int) -> int:
        """Multiply-accumulates of one time step (matrix products only), for `zoo.macs`."""
        raise NotImplementedError(f"{type(self).__name__} does not count its MACs")

    def get_config(self):
        config = {
            "units": self.units, "use_bias": self.use_bias,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
            "recurrent_regularizer": regularizers.serialize(self.recurrent_regularizer),
            "bias_regularizer": regularizers.serialize(self.bias_regularizer),
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "recurrent_constraint": constraints.serialize(self.recurrent_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
        }
        return {**super().get_config(), **config}


class CellRNN(keras.layers.RNN):
    """``keras.layers.RNN`` over ``cell_class``, configured flat like ``keras.layers.SimpleRNN``.

    A new recurrent layer is a subclass that names its cell; every keyword argument in the
    cell's signature goes to the cell, the rest to `keras.layers.RNN`.

    Args:
        units: hidden size D.
        return_sequences, return_state, go_backwards, stateful, unroll: as in `keras.layers.RNN`.
        **kwargs: arguments of ``cell_class`` (see its docstring) and of `keras.layers.Layer`.

    Example:

    ```python
    import numpy as np
    import keras
    from zoo.layers import CellRNN

    class TanhRNN(CellRNN):
        cell_class = keras.layers.SimpleRNNCell

    layer = TanhRNN(4, use_bias=False, return_sequences=True)
    y = layer(np.zeros((2, 5, 3), "float32"))  # (2, 5, 4)
    ```
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


def recurrent_layers(model: keras.Model) -> list:
    """The model's recurrent layers (`keras.layers.RNN`, the zoo's cells included), in order:
    the one lookup that MAC counting, training and export share."""
    return [layer for layer in model.layers if isinstance(layer, keras.layers.RNN)]

