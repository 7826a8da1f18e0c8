"""FastRNN and FastGRNN (Kusupati et al., NeurIPS 2018), with EdgeML's parameterisation and
initial values (``microsoft/EdgeML``, ``tf/edgeml_tf/graph/rnn.py``)."""

import keras
from keras import initializers, ops

from zoo import activations
from zoo.layers import CellRNN, ZooCell, next_state, previous_state
from zoo.qat import QuantPoints, check_qat
from zoo.registry import register_model

PAPER = ("Kusupati et al., FastGRNN: A Fast, Accurate, Stable and Tiny Kilobyte Sized Gated "
         "Recurrent Neural Network, NeurIPS 2018")


def _normal_01():
    # EdgeML initialises W, U, W1, W2, U1, U2 ~ N(0, 0.1^2).
    return initializers.RandomNormal(stddev=0.1)


def _chain_macs(rows: int, rank: int | None, units: int) -> int:
    """MACs of ``x @ M`` for x of width ``rows``, M full (rows x units) or ``M1 M2`` of ``rank``."""
    return rows * units if rank is None else rows * rank + rank * units


class FastCellBase(ZooCell):
    """Shared by FastRNN and FastGRNN: the (optionally low-rank) pre-activation ``W x + U h``.

    EdgeML stores ``W = W1 W2`` as ``W1: [d, r_w]``, ``W2: [r_w, D]`` and computes ``x @ W1 @ W2``
    (likewise ``U = U1 U2``), so the low-rank step costs O(r_w (d + D) + r_u D) instead of
    O(D (d + D)). The kernel (recurrent) initializer, regularizer and constraint apply to each
    factor.
    """

    def __init__(self, units, w_rank=None, u_rank=None, **kwargs):
        super().__init__(units, **kwargs)
        for name, rank in (("w_rank", w_rank), ("u_rank", u_rank)):
            if rank is not None and rank <= 0:
                raise ValueError(f"{name} must be None or positive, got {rank}")
        self.w_rank = w_rank
        self.u_rank = u_rank

    def _matrix(self, add, name, rows, rank):
        if rank is None:
            return [add((rows, self.units), name)]
        return [add((rows, rank), f"{name}_1"), add((rank, self.units), f"{name}_2")]

    def build(self, input_shape):
        self.kernels = self._matrix(self.add_kernel, "kernel", input_shape[-1], self.w_rank)
        self.recurrent_kernels = self._matrix(self.add_recurrent_kernel, "recurrent_kernel",
                                              self.units, self.u_rank)

    @staticmethod
    def _chain(x, matrices):
        for m in matrices:
            x = ops.matmul(x, m)
        return x

    def pre_activation(self, x, h):
        return self._chain(x, self.kernels) + self._chain(h, self.recurrent_kernels)

    def recurrent_matrix(self):
        """U (``U1 U2`` when low-rank) in Keras orientation (``h @ U``), materialised."""
        return self._chain(ops.eye(self.units, dtype=self.recurrent_kernels[0].dtype),
                           self.recurrent_kernels)

    def macs_per_step(self, input_dim):
        """``x @ W`` and ``h @ U``, once each (FastGRNN's gate and update share them)."""
        return (_chain_macs(input_dim, self.w_rank, self.units)
                + _chain_macs(self.units, self.u_rank, self.units))

    def sparsifiable_weights(self):
        """The matrices that FastGRNN's iterative hard thresholding sparsifies (W*, U*)."""
        return list(self.kernels) + list(self.recurrent_kernels)

    def get_config(self):
        return {**super().get_config(), "w_rank": self.w_rank, "u_rank": self.u_rank}


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class FastRNNCell(FastCellBase):
    r"""FastRNN cell (FastGRNN paper, Eq. 2): a residual RNN with two trainable scalars::

        h~_t = sigma(W x_t + U h_{t-1} + b)
        h_t  = alpha h~_t + beta h_{t-1},    alpha = sigmoid(a), beta = sigmoid(b^)

    Args:
        units: hidden size D.
        activation: sigma (default tanh; the paper uses ReLU on some datasets).
        alpha_init: raw a before the sigmoid (EdgeML -3.0, alpha ~ 0.047).
        beta_init: raw b^ before the sigmoid (EdgeML 3.0, beta ~ 0.953).
        w_rank, u_rank: ranks of ``W = W1 W2`` and ``U = U1 U2``; ``None`` is full rank.
        kernel_initializer, recurrent_initializer: for W and U (each factor when low-rank);
            default N(0, 0.1^2) (EdgeML).
        bias_initializer: for b; default 1.0 (EdgeML).
        use_bias: whether to use b (default True).
        kernel_regularizer, recurrent_regularizer, bias_regularizer: optional regularizers of W,
            U (each factor when low-rank) and b.
        kernel_constraint, recurrent_constraint, bias_constraint: optional constraints of the same
            weights.

    Call arguments: as every `ZooCell` (x_t, h_{t-1} bare or in a list, ``training``).

    Example:

    ```python
    import numpy as np
    import keras
    import zoo

    x = np.random.default_rng(0).normal(size=(32, 10, 8)).astype("float32")
    h = keras.layers.RNN(zoo.FastRNNCell(16, w_rank=4, u_rank=4))(x)  # (32, 16)

    cell = zoo.FastRNNCell(16, use_bias=False, kernel_regularizer="l2")
    h_t, state = cell(x[:, 0], np.zeros((32, 16), "float32"))  # both (32, 16)
    ```
    """

    def __init__(self, units, activation="tanh", alpha_init=-3.0, beta_init=3.0, w_rank=None,
                 u_rank=None, kernel_initializer=None, recurrent_initializer=None,
                 bias_initializer=None, use_bias=True, kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(
            units, w_rank=w_rank, u_rank=u_rank, use_bias=use_bias,
            kernel_initializer=kernel_initializer or _normal_01(),
            recurrent_initializer=recurrent_initializer or _normal_01(),
            bias_initializer=bias_initializer or initializers.Constant(1.0),
            kernel_regularizer=kernel_regularizer, recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint, bias_constraint=bias_constraint, **kwargs)
        self.activation = activations.get(activation)
        self.alpha_init = float(alpha_init)
        self.beta_init = float(beta_init)

    def build(self, input_shape):
        super().build(input_shape)
        self.bias = self.add_bias((self.units,)) if self.use_bias else None
        self.alpha_raw = self.add_weight(shape=(), name="alpha_raw",
                                         initializer=initializers.Constant(self.alpha_init))
        self.beta_raw = self.add_weight(shape=(), name="beta_raw",
                                        initializer=initializers.Constant(self.beta_init))

    def call(self, inputs, states, training=False):
        h_prev = previous_state(states)
        pre = self.pre_activation(*self.dropped(inputs, h_prev, training))
        if self.use_bias:
            pre = pre + self.bias
        h = ops.sigmoid(self.alpha_raw) * self.activation(pre) + ops.sigmoid(self.beta_raw) * h_prev
        return h, next_state(h, states)

    def get_config(self):
        config = {
            "activation": activations.serialize(self.activation),
            "alpha_init": self.alpha_init, "beta_init": self.beta_init,
        }
        return {**super().get_config(), **config}


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class FastGRNNCell(FastCellBase):
    r"""FastGRNN cell (FastGRNN paper, Eq. 6): the gate and the update share W and U::

        z_t  = sigma_g(W x_t + U h_{t-1} + b_z)
        h~_t = sigma_u(W x_t + U h_{t-1} + b_h)
        h_t  = (zeta (1 - z_t) + nu) * h~_t + z_t * h_{t-1},   zeta = sigmoid(.), nu = sigmoid(.)

    Args:
        units: hidden size D.
        gate_activation: sigma_g (default sigmoid; ``"quant_sigmoid"`` for integer inference).
        update_activation: sigma_u (default tanh; ``"quant_tanh"`` for integer inference).
        zeta_init: raw zeta before the sigmoid (EdgeML 1.0, zeta ~ 0.731).
        nu_init: raw nu before the sigmoid (EdgeML -4.0, nu ~ 0.018).
        w_rank, u_rank: ranks of ``W = W1 W2`` and ``U = U1 U2`` (paper Eq. 7); ``None``: full.
        kernel_initializer, recurrent_initializer: for W and U (each factor when low-rank);
            default N(0, 0.1^2) (EdgeML).
        gate_bias_initializer, update_bias_initializer: for b_z and b_h; default
            ``bias_initializer``.
        use_bias: whether to use b_z and b_h (default True).
        bias_initializer: for both biases unless set apart above; default 1.0 (EdgeML).
        kernel_regularizer, recurrent_regularizer, bias_regularizer: optional regularizers of W,
            U (each factor when low-rank) and each of b_z, b_h.
        kernel_constraint, recurrent_constraint, bias_constraint: optional constraints of the same
            weights.
        qat: ``None`` (default) or ``"int8"``: quantization-aware training of the whole step
            (`zoo.qat`): the input, the state, every product and sum, the gate and the candidate
            are fake-quantized at the ranges the int8 step model will use (the sigmoid's and
            tanh's at TFLite's fixed output grids, 1/256 and 1/128), the weights at the
            converter's per-tensor int8 grid; the int8 export takes those ranges.
        qat_weights: with ``qat``, fake-quantize the weights too (default True; the export's
            copy sets it False, since the converter rounds the weights itself).

    Call arguments: as every `ZooCell` (x_t, h_{t-1} bare or in a list, ``training``).

    Example:

    ```python
    import numpy as np
    import keras
    import zoo

    x = np.random.default_rng(0).normal(size=(32, 10, 8)).astype("float32")
    cell = zoo.FastGRNNCell(16, w_rank=4, u_rank=8, gate_activation="quant_sigmoid",
                            update_activation="quant_tanh")
    h = keras.layers.RNN(cell)(x)  # (32, 16)
    ```
    """

    def __init__(self, units, gate_activation="sigmoid", update_activation="tanh", zeta_init=1.0,
                 nu_init=-4.0, w_rank=None, u_rank=None, kernel_initializer=None,
                 recurrent_initializer=None, gate_bias_initializer=None,
                 update_bias_initializer=None, use_bias=True, bias_initializer=None,
                 kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None,
                 qat=None, qat_weights=True, **kwargs):
        super().__init__(
            units, w_rank=w_rank, u_rank=u_rank, use_bias=use_bias,
            kernel_initializer=kernel_initializer or _normal_01(),
            recurrent_initializer=recurrent_initializer or _normal_01(),
            bias_initializer=bias_initializer or initializers.Constant(1.0),
            kernel_regularizer=kernel_regularizer, recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint, bias_constraint=bias_constraint, **kwargs)
        self.gate_activation = activations.get(gate_activation)
        self.update_activation = activations.get(update_activation)
        self.zeta_init = float(zeta_init)
        self.nu_init = float(nu_init)
        self.gate_bias_initializer = initializers.get(
            gate_bias_initializer or self.bias_initializer)
        self.update_bias_initializer = initializers.get(
            update_bias_initializer or self.bias_initializer)
        self.qat = check_qat(qat)
        self.qat_weights = bool(qat_weights)
        self.quant_points = None

    def build(self, input_shape):
        super().build(input_shape)
        if self.use_bias:
            self.gate_bias = self.add_bias((self.units,), "gate_bias", self.gate_bias_initializer)
            self.update_bias = self.add_bias((self.units,), "update_bias",
                                             self.update_bias_initializer)
        else:
            self.gate_bias = self.update_bias = None
        self.zeta_raw = self.add_weight(shape=(), name="zeta_raw",
                                        initializer=initializers.Constant(self.zeta_init))
        self.nu_raw = self.add_weight(shape=(), name="nu_raw",
                                      initializer=initializers.Constant(self.nu_init))
        if self.qat:
            self.quant_points = QuantPoints(self, self._qat_point_names(),
                                                fixed=self._qat_fixed(), weights=self.qat_weights)

    def _qat_point_names(self):
        chain = lambda name, rank: [f"{name}0"] + ([f"{name}1"] if rank is not None else [])
        gates = ["gate_pre", "update_pre"] if self.use_bias else []
        return (["x", "h"] + chain("wx", self.w_rank) + chain("uh", self.u_rank)
                + ["pre"] + gates + ["z", "zh", "one_minus_z", "zeta_part", "coef", "cand",
                                     "prod"])

    def _qat_fixed(self):
        # TFLite's int8 LOGISTIC and TANH write fixed grids: [0, 255/256] and [-1, 127/128].
        fixed = {}
        if getattr(self.gate_activation, "__name__", "") == "sigmoid":
            fixed["z"] = (0.0, 255.0 / 256.0)
        if getattr(self.update_activation, "__name__", "") == "tanh":
            fixed["cand"] = (-1.0, 127.0 / 128.0)
        return fixed

    def _call_qat(self, inputs, h_prev, states, training):
        """The step as the int8 step model computes it, every tensor fake-quantized
        (`zoo.qat`); the same equations as `call`."""
        q = self.quant_points
        x, h_u = self.dropped(inputs, h_prev, training)
        x, h = q.apply("x", x), q.apply("h", h_prev)
        h_u = h if h_u is h_prev else q.apply("h", h_u)
        pre = q.apply("pre", self._chain_qat(x, self.kernels, "wx")
                      + self._chain_qat(h_u, self.recurrent_kernels, "uh"))
        gate_pre, update_pre = pre, pre
        if self.use_bias:
            gate_pre = q.apply("gate_pre", pre + self.gate_bias)
            update_pre = q.apply("update_pre", pre + self.update_bias)
        z = q.apply("z", self.gate_activation(gate_pre))
        cand = q.apply("cand", self.update_activation(update_pre))
        zeta, nu = ops.sigmoid(self.zeta_raw), ops.sigmoid(self.nu_raw)
        coef = q.apply("zeta_part", zeta * q.apply("one_minus_z", 1.0 - z))
        coef = q.apply("coef", coef + nu)
        h_new = q.apply("h", q.apply("prod", coef * cand) + q.apply("zh", z * h))
        return h_new, next_state(h_new, states)

    def _chain_qat(self, x, matrices, name):
        q = self.quant_points
        for i, m in enumerate(matrices):
            x = q.apply(f"{name}{i}", ops.matmul(x, q.weight(m)))
        return x

    def call(self, inputs, states, training=False):
        h_prev = previous_state(states)
        if self.quant_points is not None:
            return self._call_qat(inputs, h_prev, states, training)
        pre = self.pre_activation(*self.dropped(inputs, h_prev, training))
        gate_pre, update_pre = pre, pre
        if self.use_bias:
            gate_pre, update_pre = pre + self.gate_bias, pre + self.update_bias
        z = self.gate_activation(gate_pre)
        candidate = self.update_activation(update_pre)
        zeta, nu = ops.sigmoid(self.zeta_raw), ops.sigmoid(self.nu_raw)
        h = (zeta * (1.0 - z) + nu) * candidate + z * h_prev
        return h, next_state(h, states)

    def get_config(self):
        config = {
            "gate_activation": activations.serialize(self.gate_activation),
            "update_activation": activations.serialize(self.update_activation),
            "zeta_init": self.zeta_init, "nu_init": self.nu_init,
            "gate_bias_initializer": initializers.serialize(self.gate_bias_initializer),
            "update_bias_initializer": initializers.serialize(self.update_bias_initializer),
        }
        if self.qat:  # only when set, so the configs of float models are unchanged
            config.update(qat=self.qat, qat_weights=self.qat_weights)
        return {**super().get_config(), **config}


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class FastRNN(CellRNN):
    """FastRNN layer: `keras.layers.RNN` over `FastRNNCell`.

    ``h_t = alpha sigma(W x_t + U h_{t-1} + b) + beta h_{t-1}`` with trainable scalars
    ``alpha = sigmoid(a)``, ``beta = sigmoid(b^)`` (FastGRNN paper, Eq. 2).

    Args:
        units: hidden size D.
        activation, alpha_init, beta_init, w_rank, u_rank, kernel_initializer,
            recurrent_initializer, bias_initializer, use_bias, kernel_regularizer,
            recurrent_regularizer, bias_regularizer, kernel_constraint, recurrent_constraint,
            bias_constraint: as in `FastRNNCell`.
        return_sequences, return_state, go_backwards, stateful, unroll: as in `keras.layers.RNN`.
        **kwargs: `keras.layers.Layer` arguments (``name``, ``dtype``).

    Example:

    ```python
    import numpy as np
    import zoo

    x = np.random.default_rng(0).normal(size=(32, 10, 9)).astype("float32")
    layer = zoo.FastRNN(80, activation="relu", return_sequences=True, return_state=True)
    h_seq, h_last = layer(x)  # (32, 10, 80), (32, 80)
    ```
    """

    cell_class = FastRNNCell


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class FastGRNN(CellRNN):
    """FastGRNN layer: `keras.layers.RNN` over `FastGRNNCell`.

    ``z_t = sigma_g(W x_t + U h_{t-1} + b_z)``, ``h~_t = sigma_u(W x_t + U h_{t-1} + b_h)``,
    ``h_t = (zeta (1 - z_t) + nu) h~_t + z_t h_{t-1}`` (FastGRNN paper, Eq. 6).

    Args:
        units: hidden size D.
        gate_activation, update_activation, zeta_init, nu_init, w_rank, u_rank,
            kernel_initializer, recurrent_initializer, gate_bias_initializer,
            update_bias_initializer, use_bias, bias_initializer, kernel_regularizer,
            recurrent_regularizer, bias_regularizer, kernel_constraint, recurrent_constraint,
            bias_constraint, qat, qat_weights: as in `FastGRNNCell`.
        return_sequences, return_state, go_backwards, stateful, unroll: as in `keras.layers.RNN`.
        **kwargs: `keras.layers.Layer` arguments (``name``, ``dtype``).

    Example:

    ```python
    import numpy as np
    import zoo

    x = np.random.default_rng(0).normal(size=(32, 10, 9)).astype("float32")
    h = zoo.FastGRNN(80, w_rank=8, u_rank=16)(x)  # (32, 80)
    ```
    """

    cell_class = FastGRNNCell


# Hidden 80 as in the iRNN comparison tables (HAR-2, Google-30); full rank ("LSQ" dense float).
register_model("fastrnn", FastRNN, defaults={"units": 80}, paper=PAPER,
               description="FastRNN: residual tanh RNN, h = alpha h~ + beta h (Eq. 2)")
register_model("fastgrnn", FastGRNN, defaults={"units": 80}, paper=PAPER,
               description="FastGRNN: gated FastRNN sharing W, U between gate and update (Eq. 6)")
