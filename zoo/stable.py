"""StableRNN: a tanh RNN kept inside the spectral-norm ball by projection (Miller & Hardt,
"Stable Recurrent Models", ICLR 2019; first circulated as "When recurrent models don't need to be
recurrent")."""

import keras
from keras import ops

from zoo import activations
from zoo.layers import CellRNN, ZooCell, next_state, previous_state
from zoo.registry import register_model

PAPER = "Miller & Hardt, Stable Recurrent Models, ICLR 2019"


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class SpectralNormBall(keras.constraints.Constraint):
    """Projection onto ``{W : ||W||_2 <= max_norm}``: clip the singular values (Miller & Hardt,
    Sec. 7.2).

    ``W = A diag(s) B^T  ->  A diag(min(s, max_norm)) B^T`` is the exact Frobenius-norm projection
    onto the ball. Keras applies constraints after every optimizer update.

    Args:
        max_norm: the radius lambda > 0.

    Example:

    ```python
    import numpy as np
    from zoo import SpectralNormBall

    w = SpectralNormBall(0.5)(np.diag([2.0, 0.25]).astype("float32"))  # diag(0.5, 0.25)
    ```
    """

    def __init__(self, max_norm=0.99):
        if max_norm <= 0:
            raise ValueError(f"max_norm must be > 0, got {max_norm}")
        self.max_norm = float(max_norm)

    def __call__(self, w):
        u, s, vh = ops.svd(w, full_matrices=False)
        s = ops.minimum(s, ops.cast(self.max_norm, s.dtype))
        return ops.matmul(u * s[None, :], vh)

    def get_config(self):
        return {"max_norm": self.max_norm}


def _then(first, second):
    """The constraint ``w -> second(first(w))``; ``second`` alone when ``first`` is None."""
    if first is None:
        return second
    return lambda w: second(first(w))


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class StableRNNCell(ZooCell):
    r"""Stable tanh RNN cell (Miller & Hardt, Sec. 6.2)::

        h_t = tanh(W h_{t-1} + U x_t + b),     ||W||_2 <= lambda

    With a 1-Lipschitz activation and lambda < 1 the state map is a lambda-contraction, so the
    model can be truncated to O(log(1 / ((1 - lambda) eps))) steps (Miller & Hardt, Prop. 1). The
    constraint is enforced by projecting W after every optimizer update and once at
    initialisation.

    Args:
        units: hidden size D.
        max_norm: lambda, the bound on the spectral norm of W (default 0.99, strict).
        activation: rho (default tanh; the theory needs a smooth 1-Lipschitz rho).
        use_bias: whether to use b.
        kernel_initializer: for U; default glorot_uniform (as `keras.layers.SimpleRNN`).
        recurrent_initializer: for W before projection; default orthogonal.
        bias_initializer: for b; default zeros.
        kernel_regularizer, recurrent_regularizer, bias_regularizer: optional regularizers of U,
            W and b.
        kernel_constraint, bias_constraint: optional constraints of U and b.
        recurrent_constraint: an optional constraint of W, applied *before* the projection onto
            the spectral-norm ball, so that ``||W||_2 <= lambda`` holds whatever it does.

    Call arguments: as every `ZooCell` (x_t, h_{t-1} bare or in a list, ``training``).

    Example:

    ```python
    import numpy as np
    import keras
    import zoo

    x = np.random.default_rng(0).normal(size=(32, 10, 8)).astype("float32")
    cell = zoo.StableRNNCell(16, max_norm=0.9)
    h = keras.layers.RNN(cell)(x)  # (32, 16)
    sigma = np.linalg.norm(cell.recurrent_matrix(), 2)  # <= 0.9
    ```
    """

    def __init__(self, units, max_norm=0.99, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, **kwargs):
        super().__init__(
            units, use_bias=use_bias, kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer, bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer, recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint, bias_constraint=bias_constraint, **kwargs)
        self.max_norm = float(max_norm)
        self.projection = SpectralNormBall(max_norm)
        self.activation = activations.get(activation)

    def build(self, input_shape):
        self.kernel = self.add_kernel((input_shape[-1], self.units))
        constraint = _then(self.recurrent_constraint, self.projection)
        self.recurrent_kernel = self.add_recurrent_kernel((self.units, self.units),
                                                          constraint=constraint)
        # Start inside the ball, not only after the first update.
        self.recurrent_kernel.assign(constraint(self.recurrent_kernel))
        self.bias = self.add_bias((self.units,)) if self.use_bias else None

    def recurrent_matrix(self):
        """W in Keras orientation (``h @ W``)."""
        return self.recurrent_kernel

    def macs_per_step(self, input_dim):
        """``x @ U`` and ``h @ W``."""
        return input_dim * self.units + self.units * self.units

    def call(self, inputs, states, training=False):
        x, h_u = self.dropped(inputs, previous_state(states), training)
        pre = ops.matmul(x, self.kernel) + ops.matmul(h_u, self.recurrent_kernel)
        if self.use_bias:
            pre = pre + self.bias
        h = self.activation(pre)
        return h, next_state(h, states)

    def get_config(self):
        config = {"max_norm": self.max_norm,
                  "activation": activations.serialize(self.activation)}
        return {**super().get_config(), **config}


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class StableRNN(CellRNN):
    """StableRNN layer: `keras.layers.RNN` over `StableRNNCell`.

    ``h_t = tanh(W h_{t-1} + U x_t + b)`` with W projected onto ``||W||_2 <= lambda`` after every
    optimizer update (Miller & Hardt 2019).

    Args:
        units: hidden size D.
        max_norm, activation, use_bias, kernel_initializer, recurrent_initializer,
            bias_initializer, kernel_regularizer, recurrent_regularizer, bias_regularizer,
            kernel_constraint, recurrent_constraint, bias_constraint: as in `StableRNNCell`.
        return_sequences, return_state, go_backwards, stateful, unroll: as in `keras.layers.RNN`.
        **kwargs: `keras.layers.Layer` arguments (``name``, ``dtype``).

    Example:

    ```python
    import numpy as np
    import zoo

    x = np.random.default_rng(0).normal(size=(32, 10, 9)).astype("float32")
    h = zoo.StableRNN(80, max_norm=0.95, kernel_regularizer="l2")(x)  # (32, 80)
    ```
    """

    cell_class = StableRNNCell


register_model("stablernn", StableRNN, defaults={"units": 80, "max_norm": 0.99}, paper=PAPER,
               description="StableRNN: tanh RNN projected onto ||W||_2 <= lambda after every step")
