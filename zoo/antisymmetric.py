"""AntisymmetricRNN and its gated form (Chang, Chen, Haber & Chi, ICLR 2019)."""

import warnings

import keras
from keras import initializers, ops

from zoo import activations
from zoo.layers import CellRNN, ZooCell, next_state, previous_state
from zoo.state_bound import bound_state, check_state_bound
from zoo.registry import register_model

PAPER = ("Chang, Chen, Haber & Chi, AntisymmetricRNN: A Dynamical System View on Recurrent "
         "Neural Networks, ICLR 2019")


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class AntisymmetricRNNCell(ZooCell):
    r"""AntisymmetricRNN cell: a forward-Euler step of an ODE whose Jacobian has an (almost)
    imaginary spectrum::

        A   = W - W^T - gamma I                       (A + A^T = -2 gamma I)
        h_t = h_{t-1} + eps * tanh(A h_{t-1} + V x_t + b)                          (ungated)
        z_t = sigmoid(A h_{t-1} + V_z x_t + b_z)                                    (gated)
        h_t = h_{t-1} + eps * z_t * tanh(A h_{t-1} + V_h x_t + b_h)

    W - W^T has a purely imaginary spectrum; the diffusion ``-gamma I`` moves it into the left
    half-plane so that forward Euler is stable.

    Args:
        units: hidden size D.
        epsilon: Euler step eps (paper grid {0.01, 0.1, 1}).
        gamma: diffusion gamma (paper grid {0.001, 0.01, 0.1, 1}).
        gated: use the gated form.
        activation: the update non-linearity (default tanh).
        sigma_w: std scale of W: W ~ N(0, sigma_w^2 / D) (paper grid {0, 1, 2, 4, 8, 16}).
        kernel_initializer: for V (and V_z, stored beside it as ``[V_h | V_z]``); default
            N(0, 1/d) (paper App. C).
        recurrent_initializer: for W; default N(0, sigma_w^2 / D).
        bias_initializer: for b (``[b_h | b_z]`` when gated); default zeros.
        state_clip: ``None`` (default, the paper) or c > 0: clip h_t to ``[-c, c]`` (symmetric:
            the state is signed). For integer export: the state is an unbounded accumulator
            (h += eps tanh(.)), so the calibrated ranges of h_prev and h_t differ and the int8
            state is requantized every step; a bounded state gives both the same range.
        state_quant_bits: ``None`` (default) or b in 2..16: straight-through fake quantization of
            h_t to the symmetric b-bit grid on ``[-c, c]`` (step ``c / (2^(b-1) - 1)``, zero at a
            grid point), i.e. quantization-aware training of the state an int8 step model feeds
            back. The forward pass is ``round(h / s) * s``; the gradient is the identity. Needs
            ``state_clip``. Integer exports drop it (``zoo.export.step.without_fake_quant``).
        use_bias: whether to use b (default True).
        kernel_regularizer, recurrent_regularizer, bias_regularizer: optional regularizers of V,
            W and b.
        kernel_constraint, recurrent_constraint, bias_constraint: optional constraints of the same
            weights (the recurrent one acts on W, not on A).

    Call arguments: as every `ZooCell` (x_t, h_{t-1} bare or in a list, ``training``).

    Example:

    ```python
    import numpy as np
    import keras
    import zoo

    x = np.random.default_rng(0).normal(size=(32, 10, 8)).astype("float32")
    cell = zoo.AntisymmetricRNNCell(16, epsilon=0.1, gamma=0.01, gated=True)
    h = keras.layers.RNN(cell)(x)  # (32, 16)
    A = cell.recurrent_matrix()  # (16, 16), A + A^T = -2 gamma I
    ```
    """

    def __init__(self, units, epsilon=0.01, gamma=0.01, gated=False, activation="tanh",
                 sigma_w=1.0, kernel_initializer=None, recurrent_initializer=None,
                 bias_initializer="zeros", state_clip=None, state_quant_bits=None, use_bias=True,
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(
            units, use_bias=use_bias,
            kernel_initializer=kernel_initializer or _normal_fan_in(1.0),
            recurrent_initializer=recurrent_initializer or _normal_fan_in(float(sigma_w) ** 2),
            bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer, bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint, recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint, **kwargs)
        if epsilon <= 0 or gamma < 0:
            raise ValueError(f"need epsilon > 0 and gamma >= 0, got {epsilon}, {gamma}")
        self.state_clip, self.state_quant_bits = check_state_bound(
            state_clip, state_quant_bits, "[-state_clip, state_clip]")
        self.epsilon = float(epsilon)
        self.gamma = float(gamma)
        self.gated = gated
        self.activation = activations.get(activation)
        self.sigma_w = float(sigma_w)

    def build(self, input_shape):
        width = self.units * (2 if self.gated else 1)  # [V_h | V_z]
        self.kernel = self.add_kernel((input_shape[-1], width))
        self.recurrent_kernel = self.add_recurrent_kernel((self.units, self.units))
        self.bias = self.add_bias((width,)) if self.use_bias else None

    def recurrent_matrix(self):
        """A = W - W^T - gamma I, in Keras orientation (``h @ A``)."""
        w = self.recurrent_kernel
        return w - ops.transpose(w) - self.gamma * ops.eye(self.units, dtype=w.dtype)

    def recurrence_matrix(self):
        """Deprecated name of `recurrent_matrix` (the name every zoo cell shares)."""
        warnings.warn("AntisymmetricRNNCell.recurrence_matrix() is deprecated; use "
                      "recurrent_matrix()", DeprecationWarning, stacklevel=2)
        return self.recurrent_matrix()

    def macs_per_step(self, input_dim):
        """``h @ A`` once (shared by the gate), ``x @ [V_h | V_z]``."""
        D = self.units
        return D * D + input_dim * D * (2 if self.gated else 1)

    def call(self, inputs, states, training=False):
        h_prev = previous_state(states)
        x, h_u = self.dropped(inputs, h_prev, training)
        recurrent = ops.matmul(h_u, self.recurrent_matrix())
        drive = ops.matmul(x, self.kernel)
        if self.use_bias:
            drive = drive + self.bias
        update = self.activation(recurrent + drive[:, :self.units])
        if self.gated:
            update = ops.sigmoid(recurrent + drive[:, self.units:]) * update
        h = self._bound(h_prev + self.epsilon * update)
        return h, next_state(h, states)

    def _bound(self, state):
        return bound_state(state, self.state_clip, self.state_quant_bits, signed=True)

    def get_config(self):
        config = {
            "epsilon": self.epsilon, "gamma": self.gamma,
            "gated": self.gated, "activation": activations.serialize(self.activation),
            "sigma_w": self.sigma_w,
            "state_clip": self.state_clip, "state_quant_bits": self.state_quant_bits,
        }
        return {**super().get_config(), **config}


def _normal_fan_in(scale):
    # N(0, scale / fan_in); VarianceScaling rejects scale 0, and sigma_w = 0 is on the paper's grid.
    return initializers.VarianceScaling(max(scale, 1e-12), mode="fan_in",
                                        distribution="untruncated_normal")


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class AntisymmetricRNN(CellRNN):
    """AntisymmetricRNN layer: `keras.layers.RNN` over `AntisymmetricRNNCell`.

    ``h_t = h_{t-1} + eps tanh((W - W^T - gamma I) h_{t-1} + V x_t + b)``, or with
    ``gated=True`` the update scaled by ``z_t = sigmoid(A h_{t-1} + V_z x_t + b_z)``
    (Chang et al. 2019).

    Args:
        units: hidden size D.
        epsilon, gamma, gated, activation, sigma_w, kernel_initializer, recurrent_initializer,
            bias_initializer, state_clip, state_quant_bits, use_bias, kernel_regularizer,
            recurrent_regularizer, bias_regularizer, kernel_constraint, recurrent_constraint,
            bias_constraint: as in `AntisymmetricRNNCell`.
        return_sequences, return_state, go_backwards, stateful, unroll: as in `keras.layers.RNN`.
        **kwargs: `keras.layers.Layer` arguments (``name``, ``dtype``).

    Example:

    ```python
    import numpy as np
    import zoo

    x = np.random.default_rng(0).normal(size=(32, 10, 9)).astype("float32")
    h = zoo.AntisymmetricRNN(80, epsilon=0.1, gamma=0.01, state_clip=4.0)(x)  # (32, 80)
    ```
    """

    cell_class = AntisymmetricRNNCell


# The iRNN paper's ablation (Kag et al. 2020) used gamma = 0.01 and eps in {0.001, 0.1}; eps = 0.1
# is the one that trains on HAR-2 within the paper's epoch budget.
register_model("antisymmetric", AntisymmetricRNN,
               defaults={"units": 80, "epsilon": 0.1, "gamma": 0.01}, fixed={"gated": False},
               paper=PAPER, description="AntisymmetricRNN: h += eps tanh((W - W^T - gamma I) h + V x)")
register_model("gated_antisymmetric", AntisymmetricRNN,
               defaults={"units": 80, "epsilon": 0.1, "gamma": 0.01}, fixed={"gated": True},
               paper=PAPER, description="Gated AntisymmetricRNN: the update scaled by a sigmoid gate")
