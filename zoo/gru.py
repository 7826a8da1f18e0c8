"""The Keras GRU baseline, with quantization-aware training of the whole step (`zoo.qat`) and a
lean step graph for the integer kernels (``step_graph="lean"``).

Without ``qat`` the layer *is* Keras's GRU (its cell, its fused and cuDNN paths, its config), so
the baseline stays the Keras baseline. With ``qat="int8"`` the cell computes the step as its int8
TFLite step model does, every tensor of that model fake-quantized at the range the export will
use.
"""

import keras
from keras import ops
from keras.layers import InputSpec

from zoo.layers import next_state, previous_state
from zoo.qat import (DEFAULT_PERCENTILE, QuantPoints, check_percentile, check_qat,
                     saved_qat_defaults)
from zoo.registry import register_model

# The int8 step's tensors, in the order the step computes them (the TFLite graph of the Keras
# step: FULLY_CONNECTED x->3D and h->3D, their split, ADD, LOGISTIC, ADD, LOGISTIC, MUL, ADD,
# TANH, MUL, SUB, MUL, ADD). The new state shares the input state's point, so the int8 state
# feeds back as it is.
POINTS = ("x", "h", "wx", "uh", "z_pre", "z", "r_pre", "r", "r_uh", "cand_pre", "cand", "zh",
          "one_minus_z", "prod")
# The lean step (``step_graph="lean"``): FULLY_CONNECTED x->2D, x->D, h->2D, h->D (no slices),
# one ADD and one LOGISTIC for both gates, SPLIT, MUL, ADD, TANH, then
# h_t = h~ + z * (h_{t-1} - h~): SUB, MUL, ADD (one MUL and the 1 - z SUB fewer).
LEAN_POINTS = ("x", "h", "wx_zr", "wx_h", "uh_zr", "uh_h", "zr_pre", "zr", "r_uh", "cand_pre",
               "cand", "diff", "z_diff")
# TFLite's int8 LOGISTIC and TANH write fixed grids: [0, 255/256] and [-1, 127/128].
FIXED = {"z": (0.0, 255.0 / 256.0), "r": (0.0, 255.0 / 256.0), "zr": (0.0, 255.0 / 256.0),
         "cand": (-1.0, 127.0 / 128.0)}
STEP_GRAPHS = ("keras", "lean")


class _Float:
    """The `QuantPoints` interface with no quantization: the lean graph in float."""

    @staticmethod
    def apply(name, x):
        return x

    @staticmethod
    def dense(x, inputs, w, b=None):
        out = ops.matmul(x, w)
        return out if b is None else out + b


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class GRUCell(keras.layers.GRUCell):
    """`keras.layers.GRUCell` (``reset_after=True``) that can train as its int8 step computes.

    ``[x_z, x_r, x_h] = W x_t + b_x``, ``[u_z, u_r, u_h] = U h_{t-1} + b_h``,
    ``z = sigmoid(x_z + u_z)``, ``r = sigmoid(x_r + u_r)``, ``h~ = tanh(x_h + r * u_h)``,
    ``h_t = z * h_{t-1} + (1 - z) * h~`` (Cho et al. 2014, with the reset gate after the
    recurrent product, as Keras and cuDNN compute it).

    Args:
        units: hidden size D.
        step_graph: ``"keras"`` (default: Keras's cell) or ``"lean"``: the same function and
            weights, computed as the integer kernels prefer: four products with no slicing
            (``W_zr x``, ``W_h x``, ``U_zr h``, ``U_h h``), one sum and one sigmoid for both
            gates, and ``h_t = h~ + z * (h_{t-1} - h~)``: 13 TFLite ops instead of 17, one
            element-wise product and the ``1 - z`` fewer. Float outputs equal the Keras cell's
            up to rounding, so a model trained with ``"keras"`` (the fused kernels) can be
            fine-tuned or exported as ``"lean"``. Needs the same Keras defaults as ``qat``.
        qat: ``None`` (default: exactly `keras.layers.GRUCell`) or ``"int8"``: quantization-aware
            training of the whole step (`zoo.qat`): the input, the state, both products, every
            sum and product of the step, the gates and the candidate are fake-quantized at the
            ranges the int8 step model will use (the gates and the candidate at TFLite's fixed
            LOGISTIC / TANH grids), the weights at the converter's per-tensor int8 grid. Needs the
            Keras defaults ``reset_after=True``, ``use_bias=True``, ``activation="tanh"``,
            ``recurrent_activation="sigmoid"`` and no dropout.
        qat_weights: with ``qat``, fake-quantize the weights too (default True; the export's
            copy sets it False, since the converter rounds the weights itself).
        qat_bias: with ``qat`` and ``qat_weights``, round each FULLY_CONNECTED's bias to the
            int32 grid the converter stores it on (`zoo.qat.QuantPoints.bias`; default True).
            A QAT model saved before this option loads with False, computing as it was trained.
        qat_percentile: with ``qat``, each tracked range spans this percentile of its tensor's
            values on training sequences (default 99.99; `zoo.IRNNCell`).
        **kwargs: the arguments of `keras.layers.GRUCell`.

    Example:

    ```python
    import numpy as np
    import keras
    import zoo

    x = np.random.default_rng(0).normal(size=(32, 10, 9)).astype("float32")
    h = keras.layers.RNN(zoo.GRUCell(16, qat="int8"))(x)  # (32, 16)
    ```
    """

    def __init__(self, units, qat=None, qat_weights=True, qat_bias=True, step_graph="keras",
                 qat_percentile=DEFAULT_PERCENTILE, **kwargs):
        super().__init__(units, **kwargs)
        self.qat = check_qat(qat)
        self.qat_weights, self.qat_bias = bool(qat_weights), bool(qat_bias)
        self.qat_percentile = check_percentile(qat_percentile)
        self.step_graph = _check_step_graph(step_graph)
        self.quant_points = None
        if self.qat or self.step_graph != "keras":
            _check_qat_config(self)

    def build(self, input_shape):
        super().build(input_shape)
        if self.qat:
            names = LEAN_POINTS if self.step_graph == "lean" else POINTS
            self.quant_points = QuantPoints(self, names, fixed=FIXED, weights=self.qat_weights,
                                            bias_grid=self.qat_bias,
                                            percentile=self.qat_percentile)

    def call(self, inputs, states, training=False):
        if self.step_graph == "lean":
            return self._lean_step(self.quant_points or _Float, inputs, states)
        if self.quant_points is None:
            return super().call(inputs, states, training=training)
        q, d = self.quant_points, self.units
        input_bias, recurrent_bias = self.bias[0], self.bias[1]
        x, h = q.apply("x", inputs), q.apply("h", previous_state(states))
        wx = q.apply("wx", q.dense(x, "x", self.kernel, input_bias))
        uh = q.apply("uh", q.dense(h, "h", self.recurrent_kernel, recurrent_bias))
        x_z, x_r, x_h = wx[:, :d], wx[:, d:2 * d], wx[:, 2 * d:]
        u_z, u_r, u_h = uh[:, :d], uh[:, d:2 * d], uh[:, 2 * d:]
        z = q.apply("z", ops.sigmoid(q.apply("z_pre", x_z + u_z)))
        r = q.apply("r", ops.sigmoid(q.apply("r_pre", x_r + u_r)))
        cand = q.apply("cand", ops.tanh(q.apply("cand_pre", x_h + q.apply("r_uh", r * u_h))))
        kept = q.apply("zh", z * h)
        h_new = q.apply("h", kept + q.apply("prod", q.apply("one_minus_z", 1.0 - z) * cand))
        return h_new, next_state(h_new, states)

    def _lean_step(self, q, inputs, states):
        d, w, u = self.units, self.kernel, self.recurrent_kernel
        # Each slice is its own constant in the int8 graph, rounded on its own per-tensor grid.
        input_bias, recurrent_bias = self.bias[0], self.bias[1]
        x, h = q.apply("x", inputs), q.apply("h", previous_state(states))
        wx_zr = q.apply("wx_zr", q.dense(x, "x", w[:, :2 * d], input_bias[:2 * d]))
        wx_h = q.apply("wx_h", q.dense(x, "x", w[:, 2 * d:], input_bias[2 * d:]))
        uh_zr = q.apply("uh_zr", q.dense(h, "h", u[:, :2 * d], recurrent_bias[:2 * d]))
        uh_h = q.apply("uh_h", q.dense(h, "h", u[:, 2 * d:], recurrent_bias[2 * d:]))
        zr = q.apply("zr", ops.sigmoid(q.apply("zr_pre", wx_zr + uh_zr)))
        z, r = ops.split(zr, 2, axis=-1)
        cand = q.apply("cand", ops.tanh(q.apply("cand_pre", wx_h + q.apply("r_uh", r * uh_h))))
        diff = q.apply("diff", h - cand)
        h_new = q.apply("h", cand + q.apply("z_diff", z * diff))
        return h_new, next_state(h_new, states)

    def get_config(self):
        return {**super().get_config(), **_zoo_options(self)}

    @classmethod
    def from_config(cls, config):
        return super().from_config(saved_qat_defaults(config))


def _zoo_options(layer) -> dict:
    """The zoo's options of a GRU cell or layer, only those set, so that without them the
    config is Keras's own."""
    options = {}
    if layer.qat:
        options.update(qat=layer.qat, qat_weights=layer.qat_weights, qat_bias=layer.qat_bias,
                       qat_percentile=layer.qat_percentile)
    if layer.step_graph != "keras":
        options.update(step_graph=layer.step_graph)
    return options


def _check_step_graph(step_graph) -> str:
    if step_graph not in STEP_GRAPHS:
        raise ValueError(f"step_graph must be one of {STEP_GRAPHS}, got {step_graph!r}")
    return step_graph


def _check_qat_config(cell) -> None:
    """The QAT step is written for the Keras defaults; anything else is refused by name."""
    wrong = {name: value for name, value, valid in (
        ("reset_after", cell.reset_after, True), ("use_bias", cell.use_bias, True),
        ("activation", keras.activations.serialize(cell.activation), "tanh"),
        ("recurrent_activation", keras.activations.serialize(cell.recurrent_activation),
         "sigmoid"),
        ("dropout", cell.dropout, 0.0), ("recurrent_dropout", cell.recurrent_dropout, 0.0))
        if value != valid}
    if wrong:
        raise ValueError(f"GRUCell(qat={cell.qat!r}, step_graph={cell.step_graph!r}) needs "
                         "reset_after=True, use_bias=True, "
                         "activation='tanh', recurrent_activation='sigmoid' and no dropout; "
                         f"got {wrong}")


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class GRU(keras.layers.GRU):
    """`keras.layers.GRU` with the zoo's ``qat`` and ``step_graph`` options.

    Without them it is Keras's layer unchanged (its cell, fused JAX and cuDNN paths included);
    with ``qat="int8"`` or ``step_graph="lean"`` its cell is `GRUCell`, run by the generic
    `keras.layers.RNN` loop (the fused kernels would skip the fake quantization).

    Args:
        units, activation, recurrent_activation, use_bias, kernel_initializer,
            recurrent_initializer, bias_initializer, kernel_regularizer, recurrent_regularizer,
            bias_regularizer, kernel_constraint, recurrent_constraint, bias_constraint, dropout,
            recurrent_dropout, seed, reset_after, use_cudnn: as in `keras.layers.GRU`.
        qat, qat_weights, qat_bias, qat_percentile, step_graph: as in `GRUCell`.
        **kwargs: the `keras.layers.RNN` arguments (``return_sequences``, ``return_state``,
            ``go_backwards``, ``stateful``, ``unroll``, ``activity_regularizer``) and the
            `keras.layers.Layer` ones.

    Example:

    ```python
    import numpy as np
    import zoo

    x = np.random.default_rng(0).normal(size=(32, 10, 9)).astype("float32")
    h = zoo.GRU(80, qat="int8")(x)  # (32, 80)
    ```
    """

    cell_class = GRUCell

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, seed=None,
                 reset_after=True, use_cudnn="auto", qat=None, qat_weights=True, qat_bias=True,
                 step_graph="keras", qat_percentile=DEFAULT_PERCENTILE, **kwargs):
        cell_args = dict(
            activation=activation, recurrent_activation=recurrent_activation, use_bias=use_bias,
            kernel_initializer=kernel_initializer, recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer, bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint, recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint, dropout=dropout, recurrent_dropout=recurrent_dropout,
            seed=seed, reset_after=reset_after)
        qat, step_graph = check_qat(qat), _check_step_graph(step_graph)
        if qat or step_graph != "keras":
            cell = GRUCell(units, qat=qat, qat_weights=qat_weights, qat_bias=qat_bias,
                           step_graph=step_graph, qat_percentile=qat_percentile,
                           name="gru_cell", dtype=kwargs.get("dtype"),
                           trainable=kwargs.get("trainable", True), **cell_args)
            # keras.layers.GRU.__init__ would build Keras's own cell: the RNN layer takes ours.
            keras.layers.RNN.__init__(self, cell, **kwargs)
            self.input_spec = InputSpec(ndim=3)
            self.use_cudnn = False
        else:
            super().__init__(units, use_cudnn=use_cudnn, **cell_args, **kwargs)
        self.qat, self.qat_weights, self.step_graph = qat, bool(qat_weights), step_graph
        self.qat_bias = bool(qat_bias)
        self.qat_percentile = check_percentile(qat_percentile)

    def get_config(self):
        return {**super().get_config(), **_zoo_options(self)}

    @classmethod
    def from_config(cls, config):
        return super().from_config(saved_qat_defaults(config))


register_model("gru", GRU, defaults={"units": 80}, paper="Keras built-in layer",
               description="Keras GRU baseline (reset_after=True); qat='int8' trains its int8 "
                           "step, step_graph='lean' computes it in 13 TFLite ops instead of 17")
