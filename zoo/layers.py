"""What every zoo cell shares: the Keras weight arguments (`ZooCell`), the state convention of
Keras's own cells (`previous_state` / `next_state`) and the thin `keras.layers.RNN` wrapper
(`CellRNN`).

Keras's SimpleRNN/GRU layers forward each cell argument by hand; here the cell's own signature says
which keyword arguments belong to the cell, so a new cell needs only ``cell_class = MyCell``.
"""

import inspect

import keras
from keras import constraints, initializers, ops, regularizers
from keras.layers import InputSpec

# Layer arguments that both the cell and the RNN layer accept; the RNN keeps them.
_SHARED = ("name", "dtype", "trainable")
# Every ZooCell's dropout arguments (as Keras's cells have them), whatever its own signature lists.
DROPOUT_ARGS = {"dropout": 0.0, "recurrent_dropout": 0.0, "seed": None}


def previous_state(states):
    """h_{t-1} from ``states`` as Keras's cells take it: a bare tensor, or a list/tuple whose
    first entry is h_{t-1} (`keras.layers.RNN` always passes the list)."""
    return states[0] if isinstance(states, (list, tuple)) else states


def next_state(h, states):
    """The new state in the form ``states`` came in, as `keras.layers.SimpleRNNCell` returns it:
    ``[h]`` for a list or tuple, ``h`` for a bare tensor."""
    return [h] if isinstance(states, (list, tuple)) else h


class ZooCell(keras.layers.Layer):
    """Base of the zoo's cells: stores and serializes the Keras weight and dropout arguments.

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
        dropout: fraction of the input features dropped before the input weights W, in
            training only (as `keras.layers.SimpleRNNCell`).
        recurrent_dropout: fraction of the state units dropped where h_{t-1} enters the
            recurrent weights U, in training only; the cell's own residual, leak or gate terms
            keep the whole state. One mask per sequence, reused at every step (Gal & Ghahramani
            2016, as Keras's cells do).
        seed: seed of the dropout masks.
        **kwargs: `keras.layers.Layer` arguments.

    Call arguments (every cell):
        inputs: ``(batch, d)``, the input x_t.
        states: h_{t-1} of shape ``(batch, D)``, bare or as ``[h_{t-1}]``; the new state comes
            back in the same form (as in `keras.layers.SimpleRNNCell`).
        training: applies `dropout` / `recurrent_dropout` when True.

    With both rates 0 (the default) a cell computes exactly what it computed without them and
    holds no random-generator state, so saved models and TFLite exports are unchanged. The
    masks are drawn once per sequence, before the step loop (`prepare_dropout_masks`): the
    zoo's layers (`CellRNN`) do it around their loop, as `keras.layers.RNN` does for Keras's
    own cells (through a class Keras does not export); a cell stepped by hand calls it first.
    """

    def __init__(self, units, use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 dropout=0.0, recurrent_dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if units <= 0:
            raise ValueError(f"units must be positive, got {units}")
        for arg, rate in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if not 0.0 <= rate < 1.0:
                raise ValueError(f"{arg} must be in [0, 1), got {rate!r}")
        self.dropout = float(dropout)
        self.recurrent_dropout = float(recurrent_dropout)
        self.seed = seed
        if self.dropout > 0 or self.recurrent_dropout > 0:  # a variable only when it is used
            self.seed_generator = keras.random.SeedGenerator(seed)
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

    def prepare_dropout_masks(self, x_t, h):
        """Draw this sequence's masks, one for x_t (shaped as ``x_t``) and one for h_{t-1}
        (shaped as ``h``), kept for every step until `clear_dropout_masks` (Gal & Ghahramani's
        one mask per sequence); kept entries are scaled by 1 / (1 - rate), as Keras's cells do.

        Example:

        ```python
        cell = zoo.StableRNNCell(6, dropout=0.4, seed=7)
        cell.prepare_dropout_masks(x_t, h)
        h_next, _ = cell(x_t, [h], training=True)
        ```
        """
        self._masks = {"x": self._drawn(x_t, self.dropout),
                       "h": self._drawn(h, self.recurrent_dropout)}

    def _drawn(self, like, rate):
        return None if rate == 0 else keras.random.dropout(ops.ones_like(like), rate,
                                                            seed=self.seed_generator)

    def clear_dropout_masks(self):
        """Forget the sequence's masks (the next sequence draws its own)."""
        self._masks = None

    def _mask(self, which: str, training):
        rate = self.dropout if which == "x" else self.recurrent_dropout
        if not training or rate == 0:
            return None
        masks = getattr(self, "_masks", None)
        if masks is None:
            raise ValueError(f"{type(self).__name__} with dropout in training needs its masks "
                             "drawn once per sequence: use the zoo's layer (zoo.create_layer, a "
                             "CellRNN), or call prepare_dropout_masks(x_t, h) before stepping it "
                             "(keras.layers.RNN(cell) does that only for Keras's own cells)")
        return masks[which]

    def input_dropout_mask(self, inputs, training):
        """The mask on x_t (None when not training or ``dropout`` is 0)."""
        return self._mask("x", training)

    def recurrent_dropout_mask(self, h_prev, training):
        """The mask on h_{t-1} where it enters U (None when not training or the rate is 0)."""
        return self._mask("h", training)

    def dropped(self, inputs, h_prev, training):
        """``(x_t, h_{t-1})`` as W and U see them: each times its dropout mask when training
        (unchanged tensors otherwise, so inference and rate 0 compute as before)."""
        x_mask = self.input_dropout_mask(inputs, training)
        h_mask = self.recurrent_dropout_mask(h_prev, training)
        return (inputs if x_mask is None else inputs * x_mask,
                h_prev if h_mask is None else h_prev * h_mask)

    def get_initial_state(self, batch_size=None):
        """Zeros for every state tensor (as `keras.layers.SimpleRNNCell.get_initial_state`)."""
        sizes = self.state_size if isinstance(self.state_size, (list, tuple)) else [self.state_size]
        return [ops.zeros((batch_size, size), dtype=self.compute_dtype) for size in sizes]

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
            "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
            "seed": self.seed,
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
        cell_params = set(inspect.signature(self.cell_class.__init__).parameters)
        if issubclass(self.cell_class, ZooCell):
            cell_params |= set(DROPOUT_ARGS)
        cell_kwargs = {k: kwargs.pop(k) for k in list(kwargs)
                       if k in cell_params and k not in _SHARED}
        cell = self.cell_class(units, dtype=kwargs.get("dtype"),
                               trainable=kwargs.get("trainable", True),
                               name=f"{self.cell_class.__name__.lower()}", **cell_kwargs)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll, **kwargs)
        self.input_spec = [InputSpec(ndim=3)]

    def call(self, sequences, initial_state=None, mask=None, training=False):
        cell = self.cell
        drawn = isinstance(cell, ZooCell) and training and (cell.dropout or cell.recurrent_dropout)
        if drawn:  # one mask per sequence, drawn before the step loop
            h = (initial_state[0] if isinstance(initial_state, (list, tuple)) else initial_state) \
                if initial_state is not None else cell.get_initial_state(ops.shape(sequences)[0])[0]
            cell.prepare_dropout_masks(sequences[:, 0, :], h)
        try:
            return super().call(sequences, mask=mask, training=training,
                                initial_state=initial_state)
        finally:
            if drawn:
                cell.clear_dropout_masks()

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

