"""iRNN and SiRNN (Kag, Zhang & Saligrama, "RNNs Incrementally Evolving on an Equilibrium
Manifold: A Panacea for Vanishing and Exploding Gradients?", ICLR 2020)."""

import math

import keras
from keras import constraints, initializers, ops

from zoo import activations, qat
from zoo.qat import DEFAULT_PERCENTILE, check_percentile
from zoo.layers import CellRNN, ZooCell, next_state, previous_state
from zoo.state_bound import bound_state, check_state_bound
from zoo.registry import register_model

PAPER = "Kag, Zhang & Saligrama, RNNs incrementally evolving on an equilibrium manifold, ICLR 2020"


def _normal_01():
    # TARNN (the first author's code) initialises every matrix N(0, 0.1^2).
    return initializers.RandomNormal(stddev=0.1)


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class IRNNCell(ZooCell):
    r"""Cell of the incremental RNN (iRNN, Eqs. 4-5 and 9; Algorithm 1).

    At each time step m the cell runs K Euler steps of the incremental ODE from ``g_0``::

        v_k = g_{k-1} + s * h_{m-1}
        g_k = g_{k-1} + eta_k * ( phi( P [U v_k + W x_m + b] ) - alpha * v_k ),   k = 1..K
        h_m = g_K

    with ``g_0 = h_{m-1}`` (default) or ``0``, ``s = +1`` (the paper; ``-1`` is the remark after
    Theorem 1, which turns the limit gradient ``-I`` into ``+I``), and ``P = I`` unless
    ``premultiply=True`` (Eq. 9, ``P = U``). As K grows, h_m reaches the equilibrium
    ``alpha (h_m + s h_{m-1}) = phi(U (h_m + s h_{m-1}) + W x_m + b)`` geometrically (Prop. 2)
    and ``dh_m/dh_{m-1} -> -s I`` (Theorem 1) when phi is 1-Lipschitz and ``||U|| < alpha``.

    Low rank (Sec. 3.2): with ``rank=r``, ``U = alpha I + V H`` with ``V: D x r``, ``H: r x D``.
    SiRNN is this cell with ``k=1``.

    Args:
        units: hidden size D.
        k: number of recursions K per time step (default 1 = SiRNN).
        alpha: the ODE's decay alpha > 0 (paper: 1, fixed).
        trainable_alpha: learn alpha, kept positive as ``softplus(raw)``, initialised to ``alpha``.
        eta_init: initial step size eta (paper and TARNN: 1e-2).
        eta_parametrization: how the learned step size is stored. ``"sigmoid"`` (default):
            ``eta = sigmoid(eta_logit)``, so eta stays in (0, 1), inside Props. 1-2 (eta > 0, and
            eta * alpha <= 1 for alpha <= 1), and an optimizer step changes eta by a *relative*
            amount (d eta / d logit = eta (1 - eta)). ``"raw"``: eta is the weight itself, as the
            paper's code (TARNN) learns it. Why the default is not raw: Adam moves every weight by
            about its learning rate per step whatever the gradient's size, and at lr 1e-2 that is
            the whole of eta = 1e-2, so one epoch can carry a raw eta below zero; a clipped state
            (``state_clip``) is then driven onto 0, where the clip's gradient is zero for every
            weight and training never recovers (full HAR-2, K = 1, epoch 8: eta 0.022 -> -0.009,
            every state 0, loss ln 2 for the rest of the run).
        eta_constraint: optional Keras constraint on a ``"raw"`` eta, e.g. ``"non_neg"`` (a
            sigmoid eta needs none; combining the two is an error).
        eta_timesteps: ``None`` (default) shares one eta per recursion over time (shape ``[K]``, the
            cell then streams and takes any sequence length); an integer T gives the TARNN table
            ``eta[k, m]`` of shape ``[K, T]``, which fixes the sequence length: the cell then carries
            a step counter as a second state, and steps past T reuse the last column.
        g0: ``"previous"`` (g_0 = h_{m-1}, TARNN and Algorithm 1) or ``"zero"``.
        state_sign: s in ``{+1, -1}``, the sign of h_{m-1} inside the residual. Note that
            ``state_sign=-1`` with ``g0="previous"`` makes v_k = g_{k-1} - h_{m-1} start at 0, so
            the cell is exactly the accumulator ``h_m = h_{m-1} + f(x_m)`` for every K: the state
            never enters the non-linearity.
        activation: phi (default ReLU, the paper's choice; any Keras activation name or callable).
        rank: ``None`` for a full D x D U, or r for the low-rank ``U = alpha I + V H``.
        premultiply: apply ``P = U`` to the whole pre-activation (Eq. 9).
        use_bias: whether to use b.
        kernel_initializer, recurrent_initializer, bias_initializer: for W, U (or V and H) and b.
            Defaults N(0, 0.1^2), N(0, 0.1^2), zeros (TARNN).
        kernel_regularizer, recurrent_regularizer, bias_regularizer: optional regularizers of W,
            U (each of V and H when low-rank) and b.
        kernel_constraint, recurrent_constraint, bias_constraint: optional constraints of the same
            weights.
        state_clip: ``None`` (default, the paper) or c > 0: clip every sub-step g_k (so h_m too)
            to ``[0, c]``. For integer export: the ReLU state is >= 0 already but grows with time
            (max |h| ~ 50 after 128 steps), and one int8 scale for that range swallows the small
            per-step increments; a bounded state keeps the int8 step at c / 255.
        state_quant_bits: ``None`` (default) or b in 2..16: straight-through fake quantization of
            every g_k to the uniform b-bit grid on ``[0, state_clip]`` (2^b - 1 steps, zero at a
            grid point), i.e. quantization-aware training of the state an int8 step model feeds
            back. The forward pass is ``round(g / s) * s``; the gradient is the identity.
            Needs ``state_clip``.
        qat: ``None`` (default) or ``"int8"``: quantization-aware training of the whole step
            (`zoo.qat`): the input, every intermediate tensor the int8 step model holds (the
            products, sums, the activation, the increment) and the state are fake-quantized to
            8 bits at tracked ranges, and the weights to the converter's per-tensor int8 grid;
            the int8 export then takes those ranges instead of calibrating. The update's sum
            saturates at the state grid ``[0, state_clip]``, which is the clip. Needs
            ``state_clip`` and ``state_quant_bits=8``, ``k=1`` steps of ``eta_timesteps=None``.
        qat_weights: with ``qat``, fake-quantize the weights too (default True; the export's
            copy of the cell sets it False, since the converter rounds the weights itself).
        qat_bias: with ``qat`` and ``qat_weights``, round the input bias to the int32 grid the
            converter stores it on (`zoo.qat.QuantPoints.bias`; default True). A QAT model
            saved before this option loads with False, computing as it was trained.
        qat_percentile: with ``qat``, each tracked range spans this percentile of the values
            its tensor takes on training sequences (and 100 minus it below; default 99.99,
            nearly every value). Lower clips the rare extremes for a finer grid of the rest
            (docs/qat.md).

    Call arguments:
        inputs: ``(batch, d)``, the input x_m.
        states: h_{m-1} of shape ``(batch, D)``, bare or as ``[h_{m-1}]`` (the new state comes
            back in the same form, as in `keras.layers.SimpleRNNCell`); with ``eta_timesteps``
            the list ``[h_{m-1}, m]`` (the step counter, shape ``(batch, 1)``).
        training: applies `dropout` / `recurrent_dropout` (see `ZooCell`) when True.

    Example:

    ```python
    import numpy as np
    import keras
    import zoo

    x = np.random.default_rng(0).normal(size=(32, 10, 8)).astype("float32")
    layer = keras.layers.RNN(zoo.IRNNCell(16, k=3, rank=4, premultiply=True))
    h = layer(x)  # (32, 16)

    cell = zoo.IRNNCell(16, k=3)
    h_t, state = cell(x[:, 0], np.zeros((32, 16), "float32"))  # a bare state comes back bare
    ```
    """

    def __init__(self, units, k=1, alpha=1.0, trainable_alpha=False, eta_init=0.01,
                 eta_timesteps=None, g0="previous", state_sign=1, activation="relu", rank=None,
                 premultiply=False, use_bias=True, kernel_initializer=None,
                 recurrent_initializer=None, bias_initializer="zeros", kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 recurrent_constraint=None, bias_constraint=None, eta_constraint=None,
                 eta_parametrization="sigmoid", state_clip=None, state_quant_bits=None, qat=None,
                 qat_weights=True, qat_bias=True, qat_percentile=DEFAULT_PERCENTILE,
                 **kwargs):
        super().__init__(
            units, use_bias=use_bias,
            kernel_initializer=kernel_initializer or _normal_01(),
            recurrent_initializer=recurrent_initializer or _normal_01(),
            bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer, bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint, recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint, **kwargs)
        if k <= 0:
            raise ValueError(f"k must be positive, got k={k}")
        if alpha <= 0:
            raise ValueError(f"alpha must be > 0, got {alpha}")
        if g0 not in ("previous", "zero"):
            raise ValueError(f"g0 must be 'previous' or 'zero', got {g0!r}")
        if state_sign not in (1, -1):
            raise ValueError(f"state_sign must be +1 or -1, got {state_sign!r}")
        if rank is not None and not 0 < rank <= units:
            raise ValueError(f"rank must be None or in 1..units={units}, got {rank}")
        if eta_timesteps is not None and eta_timesteps <= 0:
            raise ValueError(f"eta_timesteps must be None or positive, got {eta_timesteps}")
        _check_eta(eta_parametrization, eta_init, eta_constraint)
        self.state_clip, self.state_quant_bits = check_state_bound(
            state_clip, state_quant_bits, "[0, state_clip]")
        self.qat = qat_option(qat, self.state_clip, self.state_quant_bits, eta_timesteps)
        self.qat_weights = bool(qat_weights)
        self.qat_bias = bool(qat_bias)
        self.qat_percentile = check_percentile(qat_percentile)
        self.quant_points = None
        self.k = k
        self.alpha = float(alpha)
        self.trainable_alpha = trainable_alpha
        self.eta_init = float(eta_init)
        self.eta_timesteps = eta_timesteps
        self.g0 = g0
        self.state_sign = state_sign
        self.activation = activations.get(activation)
        self.rank = rank
        self.premultiply = premultiply
        self.eta_constraint = constraints.get(eta_constraint)
        self.eta_parametrization = eta_parametrization
        if eta_timesteps is not None:
            self.state_size = [units, 1]

    def build(self, input_shape):
        d, D = input_shape[-1], self.units
        self.kernel = self.add_kernel((d, D))
        if self.rank is None:
            self.recurrent_kernel = self.add_recurrent_kernel((D, D))
        else:
            self.recurrent_v = self.add_recurrent_kernel((D, self.rank), "recurrent_v")
            self.recurrent_h = self.add_recurrent_kernel((self.rank, D), "recurrent_h")
        self.bias = self.add_bias((D,)) if self.use_bias else None
        eta_shape = (self.k,) if self.eta_timesteps is None else (self.k, self.eta_timesteps)
        # self.eta is the stored weight: eta itself ("raw") or its logit ("sigmoid");
        # eta_value() is the step size the recursion uses.
        if self.eta_parametrization == "sigmoid":
            self.eta = self.add_weight(shape=eta_shape, name="eta_logit",
                                       initializer=initializers.Constant(_logit(self.eta_init)))
        else:
            self.eta = self.add_weight(shape=eta_shape, name="eta",
                                       initializer=initializers.Constant(self.eta_init),
                                       constraint=self.eta_constraint)
        if self.trainable_alpha:
            # Inverse softplus, so that softplus(raw) == alpha at initialisation.
            raw = self.alpha + float(ops.convert_to_numpy(ops.log(-ops.expm1(-self.alpha))))
            self.alpha_raw = self.add_weight(shape=(), name="alpha_raw",
                                             initializer=initializers.Constant(raw))
        if self.qat:
            fixed = {"h": (0.0, self.state_clip)}
            if self.g0 == "previous" and self.state_sign == 1:
                # v_1 = h + h exactly: on twice the state's range it is the state's integers at
                # twice the scale, so the int8 ADD is the identity (the C backend emits nothing).
                fixed["v0"] = (0.0, 2.0 * self.state_clip)
            self.quant_points = qat.QuantPoints(self, self._qat_point_names(), fixed=fixed,
                                                weights=self.qat_weights,
                                                bias_grid=self.qat_bias,
                                                percentile=self.qat_percentile)

    def _qat_point_names(self):
        names = ["x", "h", "drive"]
        for i in range(self.k):
            names += [f"v{i}", f"uv{i}"]
            if self.rank is not None:
                names += [f"uv_low{i}", f"uv_high{i}"]
            if self.premultiply or not _is_relu(self.activation):
                names += [f"pre{i}"]
            if self.premultiply and self.rank is not None:
                names += [f"p_low{i}", f"p_high{i}"]
            names += [f"act{i}", f"diff{i}", f"inc{i}"]
        return names

    def eta_value(self):
        """The step sizes eta (shape ``[K]`` or ``[K, T]``) the recursion uses."""
        if self.eta_parametrization == "sigmoid":
            return ops.sigmoid(self.eta)
        return self.eta

    def alpha_value(self):
        if self.trainable_alpha:
            return ops.softplus(self.alpha_raw)
        return self.alpha

    def recurrent_matrix(self):
        """U in Keras orientation (``v @ U``), materialised; for diagnostics and tests."""
        if self.rank is None:
            return self.recurrent_kernel
        eye = ops.eye(self.units, dtype=self.recurrent_v.dtype)
        return self.alpha_value() * eye + ops.matmul(self.recurrent_v, self.recurrent_h)

    def lean_weights(self) -> dict:
        """The weights of the lean graph (``premultiply=False``) whose step equals this
        premultiplied cell's, as NumPy arrays keyed by weight name (``kernel``, ``bias``,
        ``recurrent_h`` or ``recurrent_kernel``; ``recurrent_v`` and the step sizes are kept).

        Eq. 9 applies ``U`` to ``U v + W x + b``: ``U^2 v + (W x + b) U`` in Keras orientation.
        So the lean cell with ``W' = W U``, ``b' = b U`` and ``U' = U^2`` computes the same
        step; low-rank ``U = I + V H`` squares to ``I + V (2 H + H V H)``, rank r again, so only
        ``H`` changes (that needs alpha = 1, the paper's fixed value: the lean cell's identity
        term is alpha, the square's alpha^2). A premultiplied model trains as the recipe does
        and runs as the cheaper lean graph (U applied once) with the same float accuracy.

        Example:

        ```python
        import numpy as np
        import zoo

        x = np.random.default_rng(0).normal(size=(4, 6, 9)).astype("float32")
        p = zoo.SiRNN(16, rank=4, premultiply=True, state_clip=1.0)
        lean = zoo.SiRNN(16, rank=4, premultiply=False, state_clip=1.0)
        p(x), lean(x)
        folded = p.cell.lean_weights()
        for ours, theirs in zip(lean.cell.weights, p.cell.weights):
            ours.assign(folded.get(ours.name, theirs))
        assert np.allclose(p(x), lean(x), atol=1e-5)
        ```
        """
        import numpy as np

        if not self.premultiply:
            raise ValueError("lean_weights: this cell is lean already (premultiply=False)")
        if self.rank is not None and (self.trainable_alpha or self.alpha != 1.0):
            raise ValueError(f"lean_weights: a low-rank U folds into the lean graph only at the "
                             f"fixed alpha = 1, got alpha={self.alpha}, "
                             f"trainable_alpha={self.trainable_alpha}")
        value = lambda w: np.asarray(keras.ops.convert_to_numpy(w), dtype=np.float64)
        u = value(self.recurrent_matrix())
        folded = {"kernel": value(self.kernel) @ u}
        if self.use_bias:
            folded["bias"] = value(self.bias) @ u
        if self.rank is None:
            folded["recurrent_kernel"] = u @ u
        else:
            v, h = value(self.recurrent_v), value(self.recurrent_h)
            folded["recurrent_h"] = 2.0 * h + h @ v @ h
        return {name: array.astype(self.kernel.dtype) for name, array in folded.items()}

    def _apply_u(self, v, alpha):
        if self.rank is None:
            return ops.matmul(v, self.recurrent_kernel)
        return alpha * v + ops.matmul(ops.matmul(v, self.recurrent_v), self.recurrent_h)

    def _bound(self, state):
        return bound_state(state, self.state_clip, self.state_quant_bits, signed=False)

    def macs_per_step(self, input_dim):
        """W x once, then U v (and P = U once more) in each of the K recursions."""
        D = self.units
        u = D * D if self.rank is None else 2 * D * self.rank
        return input_dim * D + self.k * u * (2 if self.premultiply else 1)

    def call(self, inputs, states, training=False):
        if self.eta_timesteps is not None and not isinstance(states, (list, tuple)):
            raise ValueError("with eta_timesteps the cell's state is the list [h, step]: "
                             "a bare state tensor has no step counter")
        h_prev = previous_state(states)
        if self.quant_points is not None:
            return self._call_qat(inputs, h_prev, states, training)
        dtype = h_prev.dtype
        alpha = ops.cast(self.alpha_value(), dtype)
        x_mask = self.input_dropout_mask(inputs, training)
        u_mask = self.recurrent_dropout_mask(h_prev, training)  # on what enters U, every k
        x = inputs if x_mask is None else inputs * x_mask
        drive = ops.matmul(x, self.kernel)  # W x_m (+ b), shared by all K recursions
        if self.use_bias:
            drive = drive + self.bias
        eta = ops.cast(self.eta_value(), dtype)
        if self.eta_timesteps is None:
            etas = [eta[i] for i in range(self.k)]
        else:
            step = states[1]  # (batch, 1), the time index m
            onehot = ops.one_hot(ops.cast(ops.minimum(step[:, 0], self.eta_timesteps - 1), "int32"),
                                 self.eta_timesteps, dtype=dtype)
            eta_m = ops.matmul(onehot, ops.transpose(eta))  # (batch, K)
            etas = [eta_m[:, i:i + 1] for i in range(self.k)]
        g = h_prev if self.g0 == "previous" else ops.zeros_like(h_prev)
        shift = h_prev if self.state_sign == 1 else -h_prev
        for eta in etas:
            v = g + shift
            pre = self._apply_u(v if u_mask is None else v * u_mask, alpha) + drive
            if self.premultiply:
                pre = self._apply_u(pre, alpha)
            g = self._bound(g + eta * (self.activation(pre) - alpha * v))
        if self.eta_timesteps is None:
            return g, next_state(g, states)
        return g, [g, states[1] + 1]

    def _call_qat(self, inputs, h_prev, states, training):
        """The step as the int8 step model computes it, every tensor it holds fake-quantized
        (`zoo.qat`); the same equations as `call` otherwise (``qat`` needs ``k=1``-style shared
        etas, a state bound and no dropout masks beyond those of `call`)."""
        q = self.quant_points
        dtype = h_prev.dtype
        alpha = self.alpha_value()
        x_mask = self.input_dropout_mask(inputs, training)
        x = q.apply("x", inputs if x_mask is None else inputs * x_mask)
        h = q.apply("h", h_prev)
        drive = q.apply("drive", q.dense(x, "x", self.kernel, self.bias if self.use_bias else None))
        g = h if self.g0 == "previous" else ops.zeros_like(h)
        eta = ops.cast(self.eta_value(), dtype)
        for i in range(self.k):
            v = q.apply(f"v{i}", g + h if self.state_sign == 1 else g - h)
            pre = q.apply(f"uv{i}", self._apply_u_qat(v, alpha, f"uv_low{i}", f"uv_high{i}"))
            pre = pre + drive
            if self.premultiply:
                pre = q.apply(f"pre{i}", pre)
                pre = self._apply_u_qat(pre, alpha, f"p_low{i}", f"p_high{i}")
            elif not _is_relu(self.activation):
                pre = q.apply(f"pre{i}", pre)
            act = q.apply(f"act{i}", self.activation(pre))
            diff = q.apply(f"diff{i}", act - _scaled(alpha, v))
            inc = q.apply(f"inc{i}", ops.cast(q.weight(eta[i]), dtype) * diff)
            # Saturating at the state grid [0, state_clip] is the clip, as the int8 ADD does.
            g = q.apply("h", g + inc)
        return g, next_state(g, states)

    def _apply_u_qat(self, v, alpha, low, high):
        q = self.quant_points
        if self.rank is None:
            return ops.matmul(v, q.weight(self.recurrent_kernel))
        z = q.apply(low, ops.matmul(v, q.weight(self.recurrent_v)))
        return _scaled(alpha, v) + q.apply(high, ops.matmul(z, q.weight(self.recurrent_h)))

    def get_config(self):
        config = {
            "k": self.k, "alpha": self.alpha,
            "trainable_alpha": self.trainable_alpha, "eta_init": self.eta_init,
            "eta_timesteps": self.eta_timesteps, "g0": self.g0, "state_sign": self.state_sign,
            "activation": activations.serialize(self.activation), "rank": self.rank,
            "premultiply": self.premultiply,
            "eta_constraint": constraints.serialize(self.eta_constraint),
            "eta_parametrization": self.eta_parametrization,
            "state_clip": self.state_clip, "state_quant_bits": self.state_quant_bits,
        }
        if self.qat:  # only when set, so the configs of float models are unchanged
            config.update(qat=self.qat, qat_weights=self.qat_weights, qat_bias=self.qat_bias,
                          qat_percentile=self.qat_percentile)
        return {**super().get_config(), **config}

    @classmethod
    def from_config(cls, config):
        return cls(**_with_saved_eta_default(config))


def _check_eta(parametrization, eta_init, eta_constraint):
    if parametrization not in ("sigmoid", "raw"):
        raise ValueError(f"eta_parametrization must be 'sigmoid' or 'raw', got {parametrization!r}")
    if parametrization == "sigmoid":
        if not 0.0 < float(eta_init) < 1.0:
            raise ValueError(f"eta_init must be in (0, 1) with eta_parametrization='sigmoid', got "
                             f"{eta_init}; use eta_parametrization='raw' for other values")
        if eta_constraint is not None:
            raise ValueError("eta_constraint constrains a raw eta; with eta_parametrization="
                             "'sigmoid' eta is in (0, 1) already. Drop eta_constraint, or pass "
                             "eta_parametrization='raw'")


def qat_option(qat_mode, state_clip, state_quant_bits, eta_timesteps):
    """``qat`` validated against the options it needs."""
    mode = qat.check_qat(qat_mode)
    if mode and (state_clip is None or state_quant_bits != 8):
        raise ValueError(f"qat={mode!r} needs the int8 state: state_clip (e.g. 1.0) and "
                         f"state_quant_bits=8, got state_clip={state_clip}, "
                         f"state_quant_bits={state_quant_bits}")
    if mode and eta_timesteps is not None:
        raise ValueError("qat needs eta_timesteps=None (a step counter is not an int8 step)")
    return mode


def _is_relu(activation) -> bool:
    return getattr(activation, "__name__", "") == "relu"


def _scaled(alpha, v):
    # alpha = 1 (the paper's fixed value) is no op at all in the graph, as in `call`'s export.
    if isinstance(alpha, float) and alpha == 1.0:
        return v
    return ops.cast(alpha, v.dtype) * v


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def _with_saved_eta_default(config: dict) -> dict:
    # Models saved before eta_parametrization existed stored a raw eta.
    return {"eta_parametrization": "raw", **qat.saved_qat_defaults(config)}


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class IRNN(CellRNN):
    """Incremental RNN layer: `keras.layers.RNN` over `IRNNCell`.

    Each time step runs K Euler steps ``g_k = g_{k-1} + eta_k (phi(P [U v_k + W x_m + b]) -
    alpha v_k)``, ``v_k = g_{k-1} + s h_{m-1}``, towards the equilibrium; ``h_m = g_K`` (see
    `IRNNCell` for the details).

    Args:
        units: hidden size D.
        k, alpha, trainable_alpha, eta_init, eta_timesteps, g0, state_sign, activation, rank,
            premultiply, use_bias, kernel_initializer, recurrent_initializer, bias_initializer,
            kernel_regularizer, recurrent_regularizer, bias_regularizer, kernel_constraint,
            recurrent_constraint, bias_constraint, eta_constraint, eta_parametrization,
            state_clip, state_quant_bits, qat, qat_weights, qat_bias, qat_percentile: as in
            `IRNNCell`.
        return_sequences, return_state, go_backwards, stateful, unroll: as in `keras.layers.RNN`.
        **kwargs: `keras.layers.Layer` arguments (``name``, ``dtype``).

    Example:

    ```python
    import numpy as np
    import zoo

    x = np.random.default_rng(0).normal(size=(32, 10, 9)).astype("float32")
    layer = zoo.IRNN(80, k=5, rank=16, premultiply=True, return_sequences=True)
    h = layer(x)  # (32, 10, 80)
    ```
    """

    cell_class = IRNNCell

    @classmethod
    def from_config(cls, config):
        return cls(**_with_saved_eta_default(config))


@keras.saving.register_keras_serializable(package="edge_rnn_zoo")
class SiRNN(IRNN):
    """Single-recursion iRNN (K = 1, Eq. 6): `IRNN` with ``k`` fixed to 1.

    With ``g0="previous"`` and ``state_sign=1`` one step is
    ``h_m = h_{m-1} + eta (phi(P [2 U h_{m-1} + W x_m + b]) - 2 alpha h_{m-1})``.

    Args:
        units: hidden size D.
        **kwargs: every argument of `IRNN` except ``k`` (1, or an error).

    Example:

    ```python
    import numpy as np
    import zoo

    x = np.random.default_rng(0).normal(size=(32, 10, 9)).astype("float32")
    h = zoo.SiRNN(80, rank=16, premultiply=True)(x)  # (32, 80)
    ```
    """

    def __init__(self, units, **kwargs):
        k = kwargs.pop("k", 1)
        if k != 1:
            raise ValueError(f"SiRNN has K = 1 by definition, got k={k}; use IRNN for K > 1")
        super().__init__(units, k=1, **kwargs)


# Paper defaults (Sec. 4.1 and Table 5): hidden 80, ReLU, alpha = 1, eta = 1e-2, and the low-rank
# Eq. 9 form "in all our experiments". The rank is not stated; 16 is the low end of the range that
# the paper's parameter counts (Tables 3 and 9, D = 80) imply, and keeps HAR-2 at 3.5k parameters.
_PAPER_DEFAULTS = {"units": 80, "rank": 16, "premultiply": True}
register_model("irnn", IRNN, defaults={**_PAPER_DEFAULTS, "k": 1}, paper=PAPER,
               description="iRNN: K Euler steps to the equilibrium per time step (Eq. 9 low-rank)")
register_model("sirnn", SiRNN, defaults=_PAPER_DEFAULTS, fixed={"k": 1}, paper=PAPER,
               description="SiRNN: the single-recursion iRNN (K = 1, Eq. 6)")
