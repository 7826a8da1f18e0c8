"""DiagonalRNN: the Elman RNN with a diagonal recurrence that Cayci & Eryilmaz analyse
("Convergence of gradient descent for RNNs: a nonasymptotic analysis"; section, equation and
lemma numbers below are that paper's)."""

import keras
import numpy as np
from keras import initializers, ops

from zoo import activations
from zoo.layers import CellRNN, ZooCell, next_state, previous_state
from zoo.registry import register_model

PAPER = "Cayci & Eryilmaz, Convergence of gradient descent for RNNs: a nonasymptotic analysis"


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class MaxNormBall(keras.constraints.Constraint):
    """Max-norm projection of a displacement from the initial weights (Sec. 2.3, the
    ``||.||_{2,inf}`` projected gradient descent): every column of the Keras weight (one neuron
    i of the paper) is scaled back onto ``{delta : ||delta||_2 <= radius}``; a vector (the
    diagonal recurrence) is clipped entry by entry to ``[-radius, radius]``.

    `DiagonalRNNCell` stores each projected weight as ``W = W(0) + delta`` with W(0) frozen and
    this constraint on delta, which is exactly the projection of W onto the ball around W(0).

    Args:
        radius: rho / sqrt(m), the per-neuron radius.

    Example:

    ```python
    import numpy as np
    from zoo import MaxNormBall

    w = MaxNormBall(0.5)(np.ones((2, 3), "float32"))  # columns of norm sqrt(2) -> norm 0.5
    ```
    """

    def __init__(self, radius):
        if not radius > 0:
            raise ValueError(f"radius must be > 0, got {radius}")
        self.radius = float(radius)

    def __call__(self, w):
        if len(w.shape) == 1:
            return ops.clip(w, -self.radius, self.radius)
        norm = ops.sqrt(ops.sum(ops.square(w), axis=0, keepdims=True))
        return w * ops.minimum(1.0, self.radius / ops.maximum(norm, 1e-12))

    def get_config(self):
        return {"radius": self.radius}


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class SymmetricInit(keras.initializers.Initializer):
    """Definition 1 of the paper for one weight: draw the first half of the neurons (along ``axis``)
    and mirror it onto the second half, negated when ``negate`` (the readout c).

    ``kind`` is ``"rademacher"`` (entries ``+-scale`` with equal probability: W_ii ~ Rad(alpha),
    c_i ~ Rad(1)) or ``"normal"`` (N(0, scale^2): U_i ~ N(0, I_d)).

    Args:
        kind: ``"rademacher"`` or ``"normal"``.
        scale: alpha for W, 1 for U and c.
        negate: mirror with the opposite sign (c in Def. 1).
        axis: the neuron axis (-1 for the cell's weights; 0 for a Dense readout kernel (m, C)).
        seed: the draw's seed (``None``: drawn from NumPy's global generator, which
            ``keras.utils.set_random_seed`` seeds, so runs stay reproducible).

    Example:

    ```python
    from zoo import SymmetricInit

    c = SymmetricInit("rademacher", 1.0, negate=True, axis=0)((80, 1))  # Dense(1) kernel
    ```
    """

    def __init__(self, kind="rademacher", scale=1.0, negate=False, axis=-1, seed=None):
        if kind not in ("rademacher", "normal"):
            raise ValueError(f"kind must be 'rademacher' or 'normal', got {kind!r}")
        self.kind, self.scale, self.negate = kind, float(scale), bool(negate)
        self.axis, self.seed = int(axis), seed

    def __call__(self, shape, dtype=None):
        shape = tuple(shape)
        axis = self.axis % len(shape)
        m = shape[axis]
        if m % 2:
            raise ValueError(f"symmetric initialisation needs an even number of neurons, got {m}")
        half = list(shape)
        half[axis] = m // 2
        seed = np.random.randint(2 ** 31) if self.seed is None else self.seed
        rng = np.random.default_rng(seed)
        if self.kind == "rademacher":
            first = self.scale * rng.choice([-1.0, 1.0], size=half)
        else:
            first = rng.normal(0.0, self.scale, size=half)
        full = np.concatenate([first, -first if self.negate else first], axis=axis)
        return ops.convert_to_tensor(full, dtype=dtype or "float32")

    def get_config(self):
        return {"kind": self.kind, "scale": self.scale, "negate": self.negate,
                "axis": self.axis, "seed": self.seed}


def _of_value(regularizer, start):
    """``regularizer`` of the weight ``W(0) + delta``, as a regularizer of delta."""
    if regularizer is None:
        return None
    return lambda delta: regularizer(start + delta)


def _projected(constraint, ball, start):
    """The constraint on delta: ``constraint`` on the weight ``W(0) + delta`` (when given), then
    the max-norm ``ball`` around W(0), which therefore holds whatever ``constraint`` does."""
    if constraint is None:
        return ball
    return lambda delta: ball(constraint(start + delta) - start)


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class DiagonalRNNCell(ZooCell):
    r"""Elman cell with a diagonal recurrence (Cayci & Eryilmaz, Eq. 2)::

        h_t^{(i)} = sigma( w_i h_{t-1}^{(i)} + U_i^T x_t [+ b_i] ),    i = 1..m

    (The paper indexes the input as X_{t-1}; a Keras cell sees x_t: the same recursion shifted
    by one.) The readout of Eq. 3, ``F_t = (1/sqrt(m)) sum_i c_i h_t^{(i)}``, is the model's
    Dense head; ``SymmetricInit("rademacher", 1 / sqrt(m), negate=True, axis=0)`` gives it
    Def. 1's mirrored c, so the model outputs exactly 0 at initialisation.

    Symmetric initialisation (Def. 1): ``w_i ~ Rad(alpha)`` and ``U_i ~ N(0, I_d)`` for the first
    m/2 neurons, mirrored onto the second half. Max-norm projected gradient descent (Sec. 2.3):
    after every update ``|w_i - w_i(0)| <= rho_w / sqrt(m)`` and ``||U_i - U_i(0)||_2 <=
    rho_u / sqrt(m)``: each projected weight is stored as ``W(0) + delta`` (W(0) frozen, saved
    with the model) with a `MaxNormBall` constraint on delta.
    Then ``max_i |w_i| <= alpha_m = alpha + rho_w / sqrt(m)``, and the memory factor of Lemmas
    1-2 is O(1) iff ``sigma_1 alpha_m < 1`` (sigma_1 = sup |sigma'|, 1 for tanh).

    Args:
        units: width m (even when ``symmetric_init``).
        alpha: |W_ii(0)| (Def. 1's Rad(alpha)).
        rho_w: projection radius rho_w of the recurrence, or ``None`` for plain gradient descent.
        rho_u: projection radius rho_u of the input weights, or ``None``.
        activation: sigma (default tanh: smooth, sigma_1 = 1, as the paper requires).
        use_bias: add a bias b (the paper has none; default False).
        symmetric_init: Def. 1 (default); ``False`` draws w ~ U[-alpha, alpha] and U ~ N(0, 1)
            independently per neuron.
        seed: seed of the initial draw, and of the dropout masks (`ZooCell`).
        kernel_initializer, recurrent_initializer: for U and the diagonal w; default ``None``:
            as ``symmetric_init``, ``alpha`` and ``seed`` say.
        bias_initializer: for b; default zeros.
        kernel_regularizer, recurrent_regularizer, bias_regularizer: optional regularizers of U,
            w and b (of the weight ``W(0) + delta`` itself when projected).
        kernel_constraint, recurrent_constraint, bias_constraint: optional constraints of U, w and
            b. When projected, the constraint acts on ``W(0) + delta`` and the max-norm
            projection follows, so the ball around W(0) holds whatever the constraint does.

    Call arguments: as every `ZooCell` (x_t, h_{t-1} of width m, bare or in a list, ``training``).

    Example:

    ```python
    import numpy as np
    import keras
    import zoo

    x = np.random.default_rng(0).normal(size=(32, 10, 3)).astype("float32")
    cell = zoo.DiagonalRNNCell(8, alpha=0.5, rho_w=1.0, seed=0)
    h = keras.layers.RNN(cell)(x)  # (32, 8)
    w = cell.recurrent_kernel  # (8,): the diagonal, +-0.5 at initialisation
    ```
    """

    def __init__(self, units, alpha=0.5, rho_w=None, rho_u=None, activation="tanh",
                 use_bias=False, symmetric_init=True, seed=None, kernel_initializer=None,
                 recurrent_initializer=None, bias_initializer="zeros", kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(
            units, use_bias=use_bias, kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer, bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer, recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint, bias_constraint=bias_constraint,
            seed=seed, **kwargs)
        if symmetric_init and units % 2:
            raise ValueError(f"units must be even with symmetric_init, got {units}")
        if not alpha >= 0:
            raise ValueError(f"alpha must be >= 0, got {alpha}")
        for name, rho in (("rho_w", rho_w), ("rho_u", rho_u)):
            if rho is not None and not rho > 0:
                raise ValueError(f"{name} must be None or > 0, got {rho}")
        self.alpha = float(alpha)
        self.rho_w = None if rho_w is None else float(rho_w)
        self.rho_u = None if rho_u is None else float(rho_u)
        self.activation = activations.get(activation)
        self.symmetric_init, self.seed = symmetric_init, seed
        root_m = float(np.sqrt(units))
        self.recurrent_projection = None if rho_w is None else MaxNormBall(self.rho_w / root_m)
        self.kernel_projection = None if rho_u is None else MaxNormBall(self.rho_u / root_m)

    def _default_initializers(self):
        """Def. 1 (or independent draws) for U and w, from ``alpha`` and ``seed``."""
        if self.symmetric_init:
            return (SymmetricInit("normal", 1.0, seed=self.seed),
                    SymmetricInit("rademacher", self.alpha,
                                  seed=None if self.seed is None else self.seed + 1))
        return (initializers.RandomNormal(stddev=1.0, seed=self.seed),
                initializers.RandomUniform(-self.alpha, self.alpha, seed=self.seed))

    def _weight(self, name, shape, initializer, regularizer, constraint, projection):
        """A trainable weight, or ``W(0) + delta`` with W(0) frozen when projected."""
        if projection is None:
            return self.add_weight(shape=shape, name=name, initializer=initializer,
                                   regularizer=regularizer, constraint=constraint), None
        start = self.add_weight(shape=shape, name=f"{name}_init", initializer=initializer,
                                trainable=False)
        delta = self.add_weight(shape=shape, name=f"{name}_delta", initializer="zeros",
                                regularizer=_of_value(regularizer, start),
                                constraint=_projected(constraint, projection, start))
        return start, delta

    def build(self, input_shape):
        kernel_init, recurrent_init = self._default_initializers()
        self._kernel = self._weight("kernel", (input_shape[-1], self.units),
                                    self.kernel_initializer or kernel_init,
                                    self.kernel_regularizer, self.kernel_constraint,
                                    self.kernel_projection)
        self._recurrent = self._weight("recurrent_kernel", (self.units,),
                                       self.recurrent_initializer or recurrent_init,
                                       self.recurrent_regularizer, self.recurrent_constraint,
                                       self.recurrent_projection)
        self.bias = self.add_bias((self.units,)) if self.use_bias else None

    @staticmethod
    def _value(pair):
        start, delta = pair
        return start if delta is None else start + delta

    @property
    def kernel(self):
        """U in Keras orientation (d, m): ``U(0) + delta`` when projected."""
        return self._value(self._kernel)

    @property
    def recurrent_kernel(self):
        """The diagonal w (m,): ``w(0) + delta`` when projected."""
        return self._value(self._recurrent)

    def recurrent_matrix(self):
        """diag(w), materialised (Keras orientation and math orientation agree)."""
        return ops.diag(self.recurrent_kernel)

    def macs_per_step(self, input_dim):
        """``x @ U`` only: the diagonal recurrence is element-wise."""
        return input_dim * self.units

    def call(self, inputs, states, training=False):
        h_prev = previous_state(states)
        x, h_u = self.dropped(inputs, h_prev, training)
        pre = ops.matmul(x, self.kernel) + self.recurrent_kernel * h_u
        if self.use_bias:
            pre = pre + self.bias
        h = self.activation(pre)
        return h, next_state(h, states)

    def get_config(self):
        config = {"alpha": self.alpha, "rho_w": self.rho_w, "rho_u": self.rho_u,
                  "activation": activations.serialize(self.activation),
                  "symmetric_init": self.symmetric_init, "seed": self.seed}
        return {**super().get_config(), **config}


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class DiagonalRNN(CellRNN):
    """DiagonalRNN layer: `keras.layers.RNN` over `DiagonalRNNCell`.

    ``h_t = sigma(w * h_{t-1} + U x_t [+ b])`` with a diagonal recurrence w, symmetric
    initialisation and max-norm projected training (Cayci & Eryilmaz, Eq. 2, Def. 1, Sec. 2.3).

    Args:
        units: width m.
        alpha, rho_w, rho_u, activation, use_bias, symmetric_init, seed, kernel_initializer,
            recurrent_initializer, bias_initializer, kernel_regularizer, recurrent_regularizer,
            bias_regularizer, kernel_constraint, recurrent_constraint, bias_constraint: as in
            `DiagonalRNNCell`.
        return_sequences, return_state, go_backwards, stateful, unroll: as in `keras.layers.RNN`.
        **kwargs: `keras.layers.Layer` arguments (``name``, ``dtype``).

    Example:

    ```python
    import numpy as np
    import zoo

    layer = zoo.DiagonalRNN(8, alpha=0.5, rho_w=1.0)
    h = layer(np.zeros((2, 5, 3), "float32"))  # (2, 8)
    ```
    """

    cell_class = DiagonalRNNCell


# Width 80 as the other cells; alpha = 0.5 and rho_w = 2 keep alpha_m = 0.5 + 2 / sqrt(80) = 0.72
# < 1 (the paper's Remark 5: short memory, the O(1) memory-factor regime) for tanh.
register_model("diagonal_rnn", DiagonalRNN,
               defaults={"units": 80, "alpha": 0.5, "rho_w": 2.0, "rho_u": None}, paper=PAPER,
               description="DiagonalRNN: tanh RNN with diagonal recurrence, max-norm projected "
                           "(Cayci & Eryilmaz, Eq. 2)")
