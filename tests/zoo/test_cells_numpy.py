"""Every zoo cell against an independent NumPy re-implementation of its paper's equation.

The oracles below are written from the papers' equations (iRNN: Kag et al. 2020, Eqs. 5, 6 and
9; FastRNN/FastGRNN: Kusupati et al. 2018, Eqs. 2, 6, 7; AntisymmetricRNN: Chang et al. 2019;
StableRNN: Miller & Hardt 2019, Sec. 6.2; DiagonalRNN: Cayci & Eryilmaz, Eq. 2) in *math
orientation* (``W x``, ``U h``) and in float64. They read the
layer's weights by name, transpose the Keras kernels into math matrices and never call zoo code.
Weights are drawn N(0, 0.3^2) (step sizes U[0.1, 0.5]) so that every non-linearity is exercised
(ReLU both sides of 0, the quantised activations both inside and on their clip), and every test
passes a random non-zero initial state so the first step's use of h_0 is checked too. Each step
of the whole sequence (``return_sequences=True``) must agree to 1e-5 in float32.

Harness check: the Keras SimpleRNN is compared with the same kind of oracle first; if that fails,
the harness (weight naming, orientation, initial state) is wrong, not a zoo cell.
"""

import keras
import numpy as np
import pytest

import zoo

B, T, d, D = 3, 7, 4, 8
ATOL = 1e-5


# ---------------------------------------------------------------------------------------------
# NumPy building blocks (independent of zoo)


def relu(x):
    return np.maximum(x, 0.0)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x):
    return np.log1p(np.exp(x))


def quant_tanh(x):  # EdgeML quantTanh
    return np.clip(x, -1.0, 1.0)


def quant_sigm(x):  # EdgeML quantSigm
    return np.clip((x + 1.0) / 2.0, 0.0, 1.0)


NP_ACT = {"relu": relu, "tanh": np.tanh, "sigmoid": sigmoid, "quant_tanh": quant_tanh,
          "quant_sigmoid": quant_sigm}


def mv(M, v):
    """Math-orientation matrix-vector product ``M v`` on a batch of row vectors ``v: (B, n)``."""
    return np.einsum("ij,bj->bi", M, v)


def weights(layer):
    """The layer's weights as float64 arrays, by their (unique within a cell) short name."""
    out = {w.name: np.asarray(keras.ops.convert_to_numpy(w), dtype=np.float64)
           for w in layer.weights}
    assert len(out) == len(layer.weights), [w.path for w in layer.weights]
    return out


def randomise(layer, rng, special=None):
    """Give every weight of ``layer`` a random value: N(0, 0.3^2), or ``special[name](shape)``."""
    special = special or {}
    for w in layer.weights:
        shape = tuple(w.shape)
        value = special[w.name](shape) if w.name in special else rng.normal(0.0, 0.3, size=shape)
        w.assign(np.asarray(value, dtype=w.dtype))


def build(layer, x_shape=(B, T, d)):
    layer.build(x_shape)
    return layer


def run(layer, x, h0, extra_states=()):
    y = layer(x.astype("float32"), initial_state=[h0.astype("float32"), *extra_states])
    return np.asarray(keras.ops.convert_to_numpy(y), dtype=np.float64)


def assert_close(got, want):
    assert got.shape == want.shape
    err = np.max(np.abs(got - want))
    # The outputs must be non-trivial, otherwise agreement proves nothing.
    assert np.std(want) > 0.05, f"oracle output too small to be a meaningful check: {np.std(want)}"
    # ... and O(1), so that the absolute 1e-5 is a relative ~1e-6, i.e. float32 round-off.
    assert np.max(np.abs(want)) < 10.0, f"states too large: {np.max(np.abs(want))}"
    assert err <= ATOL, f"max |layer - oracle| = {err:.3g} > {ATOL}"


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def data(rng):
    x = rng.normal(0.0, 1.0, size=(B, T, d))
    h0 = rng.normal(0.0, 0.5, size=(B, D))
    return x, h0


# ---------------------------------------------------------------------------------------------
# Harness sanity: Keras SimpleRNN, h_t = tanh(W x_t + U h_{t-1} + b)


def test_harness_keras_simple_rnn(rng, data):
    x, h0 = data
    layer = build(keras.layers.SimpleRNN(D, return_sequences=True))
    randomise(layer, rng)
    p = weights(layer)
    W, U, b = p["kernel"].T, p["recurrent_kernel"].T, p["bias"]
    h, want = h0, []
    for t in range(T):
        h = np.tanh(mv(W, x[:, t]) + mv(U, h) + b)
        want.append(h)
    assert_close(run(layer, x, h0), np.stack(want, 1))


# ---------------------------------------------------------------------------------------------
# iRNN / SiRNN (004 Eq. 5; Eq. 6 for K = 1; Eq. 9 low-rank U = alpha I + V H with P = U)


def irnn_oracle(x, h0, W, U, b, eta, alpha, phi, g0, sign, P=None):
    """004 Eq. 5: for each time m, K Euler steps
    ``v_k = g_{k-1} + s h_{m-1}``,
    ``g_k = g_{k-1} + eta[k, m] (phi(P[U v_k + W x_m + b]) - alpha v_k)``
    from ``g_0 = h_{m-1}`` or ``0``; ``h_m = g_K``. ``eta`` is ``(K, T_eta)``; time steps past
    ``T_eta`` use its last column."""
    K, T_eta = eta.shape
    h, out = h0, []
    for m in range(x.shape[1]):
        g = h.copy() if g0 == "previous" else np.zeros_like(h)
        col = min(m, T_eta - 1)
        for k in range(K):
            v = g + sign * h
            pre = mv(U, v) + mv(W, x[:, m]) + b
            if P is not None:
                pre = mv(P, pre)
            g = g + eta[k, col] * (phi(pre) - alpha * v)
        h = g
        out.append(h)
    return np.stack(out, 1)


IRNN_CASES = {
    # name: IRNN options
    "full_k1": dict(k=1),
    "full_k3": dict(k=3),
    "full_k3_zero_g0": dict(k=3, g0="zero"),
    "full_k3_sign_minus": dict(k=3, state_sign=-1),
    "full_k1_zero_g0_sign_minus": dict(k=1, g0="zero", state_sign=-1),
    "full_k3_premultiply": dict(k=3, premultiply=True),
    "full_k3_tanh_alpha_0.7": dict(k=3, activation="tanh", alpha=0.7),
    "lowrank_k1": dict(k=1, rank=3),
    "lowrank_k3_eq9": dict(k=3, rank=3, premultiply=True),
    "lowrank_k3_eq9_zero_g0_sign_minus": dict(k=3, rank=3, premultiply=True, g0="zero",
                                              state_sign=-1),
    "eta_table_k3": dict(k=3, eta_timesteps=T),
    "eta_table_shorter_than_sequence": dict(k=3, eta_timesteps=T - 3),
    "eta_table_lowrank_eq9": dict(k=3, eta_timesteps=T, rank=3, premultiply=True),
    "trainable_alpha_k3": dict(k=3, trainable_alpha=True),
    "trainable_alpha_lowrank_eq9": dict(k=3, trainable_alpha=True, rank=3, premultiply=True),
    "no_bias_k3": dict(k=3, use_bias=False),
    "raw_eta_k3": dict(k=3, eta_parametrization="raw"),
    "raw_eta_table_lowrank_eq9": dict(k=3, eta_timesteps=T, rank=3, premultiply=True,
                                      eta_parametrization="raw"),
}


def logit(p):
    return np.log(p / (1.0 - p))


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def step_sizes(p):
    """eta as the oracle uses it: the raw weight, or the sigmoid of the stored logit."""
    return sigmoid(p["eta_logit"]) if "eta_logit" in p else p["eta"]


@pytest.mark.parametrize("case", sorted(IRNN_CASES))
def test_irnn_matches_numpy(case, rng, data):
    opts = IRNN_CASES[case]
    x, h0 = data
    layer = build(zoo.IRNN(D, return_sequences=True, **opts))
    k = opts.get("k", 1)
    special = {"eta": lambda s: rng.uniform(0.1, 0.5, size=s),
               "eta_logit": lambda s: logit(rng.uniform(0.1, 0.5, size=s)),
               "alpha_raw": lambda s: rng.uniform(0.0, 1.0, size=s)}
    if opts.get("premultiply") and not opts.get("rank"):
        # Full-rank P = U applies U twice: keep ||U|| moderate so the state stays O(1).
        special["recurrent_kernel"] = lambda s: rng.normal(0.0, 0.2, size=s)
    if opts.get("rank"):
        # U = alpha I + V H: V H must be a real perturbation of alpha I (||V H|| ~ 0.3), but
        # ||U|| >= alpha, so the state can grow; with P = U applied twice (Eq. 9) smaller steps
        # keep it O(1), where the absolute float32 tolerance is meaningful.
        special["recurrent_v"] = lambda s: rng.normal(0.0, 0.2, size=s)
        special["recurrent_h"] = lambda s: rng.normal(0.0, 0.2, size=s)
        if opts.get("premultiply"):
            special["eta"] = lambda s: rng.uniform(0.1, 0.3, size=s)
            special["eta_logit"] = lambda s: logit(rng.uniform(0.1, 0.3, size=s))
    randomise(layer, rng, special)
    p = weights(layer)

    if opts.get("trainable_alpha"):
        alpha = softplus(p["alpha_raw"])
    else:
        alpha = opts.get("alpha", 1.0)
    W = p["kernel"].T
    b = p["bias"] if opts.get("use_bias", True) else np.zeros(D)
    if opts.get("rank"):
        # Keras computes v @ V_k @ H_k: U_math = alpha I + (V_k H_k)^T (paper: U = alpha I + V H).
        U = alpha * np.eye(D) + (p["recurrent_v"] @ p["recurrent_h"]).T
    else:
        U = p["recurrent_kernel"].T
    P = U if opts.get("premultiply") else None
    eta = step_sizes(p).reshape(k, -1)
    assert eta.shape == (k, opts.get("eta_timesteps") or 1)
    want = irnn_oracle(x, h0, W, U, b, eta, alpha, NP_ACT[opts.get("activation", "relu")],
                       opts.get("g0", "previous"), opts.get("state_sign", 1), P)

    extra = (np.zeros((B, 1)),) if opts.get("eta_timesteps") else ()  # the time counter starts at 0
    assert_close(run(layer, x, h0, extra), want)


def test_irnn_eta_table_counter_defaults_to_zero(rng, data):
    """Without an explicit initial state the per-time-step eta table starts at column 0."""
    x, _ = data
    layer = build(zoo.IRNN(D, k=2, eta_timesteps=T, return_sequences=True))
    randomise(layer, rng, {"eta_logit": lambda s: logit(rng.uniform(0.1, 0.5, size=s))})
    p = weights(layer)
    want = irnn_oracle(x, np.zeros((B, D)), p["kernel"].T, p["recurrent_kernel"].T, p["bias"],
                       step_sizes(p), 1.0, relu, "previous", 1)
    got = np.asarray(keras.ops.convert_to_numpy(layer(x.astype("float32"))), dtype=np.float64)
    assert_close(got, want)


def test_irnn_trainable_alpha_starts_at_alpha():
    layer = build(zoo.IRNN(D, k=2, alpha=0.7, trainable_alpha=True))
    assert softplus(weights(layer)["alpha_raw"]) == pytest.approx(0.7, abs=1e-6)


def sirnn_oracle(x, h0, W, U, b, eta, alpha):
    """004 Eq. 6 with g_0 = h_{m-1}:
    ``h_m = h_{m-1} + eta (relu(2 U h_{m-1} + W x_m + b) - 2 alpha h_{m-1})``."""
    h, out = h0, []
    for m in range(x.shape[1]):
        h = h + eta * (relu(mv(U, 2 * h) + mv(W, x[:, m]) + b) - alpha * 2 * h)
        out.append(h)
    return np.stack(out, 1)


def test_sirnn_matches_eq6(rng, data):
    x, h0 = data
    layer = build(zoo.SiRNN(D, return_sequences=True))
    randomise(layer, rng, {"eta_logit": lambda s: logit(rng.uniform(0.1, 0.5, size=s))})
    p = weights(layer)
    eta = step_sizes(p)
    assert eta.shape == (1,)
    want = sirnn_oracle(x, h0, p["kernel"].T, p["recurrent_kernel"].T, p["bias"], eta[0], 1.0)
    assert_close(run(layer, x, h0), want)


def test_sirnn_registry_default_is_eq9_lowrank(rng, data):
    """``create_layer("sirnn")``: K = 1, rank 16, P = U (Eq. 9), on the paper's hidden size 80."""
    x, _ = data
    units = 80
    h0 = rng.normal(0.0, 0.5, size=(B, units))
    layer = build(zoo.create_layer("sirnn", return_sequences=True))
    # ||V H|| ~ 0.2 for D = 80, r = 16; eta as small as the paper's regime allows for O(1) states.
    randomise(layer, rng, {"eta_logit": lambda s: logit(rng.uniform(0.1, 0.3, size=s)),
                           "recurrent_v": lambda s: rng.normal(0.0, 0.05, size=s),
                           "recurrent_h": lambda s: rng.normal(0.0, 0.05, size=s)})
    p = weights(layer)
    assert p["recurrent_v"].shape == (units, 16)
    U = np.eye(units) + (p["recurrent_v"] @ p["recurrent_h"]).T
    want = irnn_oracle(x, h0, p["kernel"].T, U, p["bias"], step_sizes(p).reshape(1, 1), 1.0, relu,
                       "previous", 1, P=U)
    assert_close(run(layer, x, h0), want)


# ---------------------------------------------------------------------------------------------
# FastRNN (FastGRNN paper Eq. 2) and FastGRNN (Eq. 6; low rank Eq. 7)


def lowrank_or_full(p, name):
    """Math-orientation matrix from ``name`` or ``name_1 @ name_2`` (EdgeML: ``x @ W1 @ W2``)."""
    if name in p:
        return p[name].T
    return (p[f"{name}_1"] @ p[f"{name}_2"]).T


def fastrnn_oracle(x, h0, W, U, b, alpha, beta, act=np.tanh):
    """FastGRNN paper Eq. 2: ``h_t = alpha act(W x_t + U h_{t-1} + b) + beta h_{t-1}``."""
    h, out = h0, []
    for t in range(x.shape[1]):
        h_tilde = act(mv(W, x[:, t]) + mv(U, h) + b)
        h = alpha * h_tilde + beta * h
        out.append(h)
    return np.stack(out, 1)


@pytest.mark.parametrize("ranks", [(None, None), (2, 3)], ids=["full", "lowrank"])
def test_fastrnn_matches_eq2(ranks, rng, data):
    x, h0 = data
    w_rank, u_rank = ranks
    layer = build(zoo.FastRNN(D, w_rank=w_rank, u_rank=u_rank, return_sequences=True))
    scalars = lambda s: rng.uniform(-2.0, 2.0, size=s)  # noqa: E731
    randomise(layer, rng, {"alpha_raw": scalars, "beta_raw": scalars})
    p = weights(layer)
    if w_rank:
        assert p["kernel_1"].shape == (d, w_rank) and p["recurrent_kernel_1"].shape == (D, u_rank)
    W, U = lowrank_or_full(p, "kernel"), lowrank_or_full(p, "recurrent_kernel")
    alpha, beta = sigmoid(p["alpha_raw"]), sigmoid(p["beta_raw"])
    want = fastrnn_oracle(x, h0, W, U, p["bias"], alpha, beta)
    assert_close(run(layer, x, h0), want)


def fastgrnn_oracle(x, h0, W, U, b_z, b_h, zeta, nu, sg=sigmoid, su=np.tanh):
    """FastGRNN paper Eq. 6: ``z = sg(W x + U h + b_z)``, ``h~ = su(W x + U h + b_h)``,
    ``h = (zeta (1 - z) + nu) h~ + z h``. Returns the states and the update pre-activations."""
    h, out, pres = h0, [], []
    for t in range(x.shape[1]):
        shared = mv(W, x[:, t]) + mv(U, h)
        z = sg(shared + b_z)
        h_tilde = su(shared + b_h)
        h = (zeta * (1.0 - z) + nu) * h_tilde + z * h
        out.append(h)
        pres.append(shared + b_h)
    return np.stack(out, 1), np.stack(pres)


@pytest.mark.parametrize("ranks,acts", [
    ((None, None), ("sigmoid", "tanh")),
    ((2, 3), ("sigmoid", "tanh")),
    ((None, None), ("quant_sigmoid", "quant_tanh")),
    ((2, 3), ("quant_sigmoid", "quant_tanh")),
], ids=["full", "lowrank", "full_quant", "lowrank_quant"])
def test_fastgrnn_matches_eq6(ranks, acts, rng, data):
    x, h0 = data
    x = 2.0 * x  # drive the quantised activations onto their clip as well as their linear part
    w_rank, u_rank = ranks
    gate_act, update_act = acts
    layer = build(zoo.FastGRNN(D, w_rank=w_rank, u_rank=u_rank, gate_activation=gate_act,
                               update_activation=update_act, return_sequences=True))
    scalars = lambda s: rng.uniform(-2.0, 2.0, size=s)  # noqa: E731
    randomise(layer, rng, {"zeta_raw": scalars, "nu_raw": scalars})
    p = weights(layer)
    W, U = lowrank_or_full(p, "kernel"), lowrank_or_full(p, "recurrent_kernel")
    zeta, nu = sigmoid(p["zeta_raw"]), sigmoid(p["nu_raw"])
    want, pres = fastgrnn_oracle(x, h0, W, U, p["gate_bias"], p["update_bias"], zeta, nu,
                                 NP_ACT[gate_act], NP_ACT[update_act])
    if gate_act.startswith("quant"):
        pres = np.abs(pres)
        assert (pres > 1).mean() > 0.1 and (pres < 1).mean() > 0.1, "clip not exercised"
    assert_close(run(layer, x, h0), want)


# ---------------------------------------------------------------------------------------------
# AntisymmetricRNN (Chang et al. 2019), ungated and gated


def antisymmetric_oracle(x, h0, Wm, V, bias, eps, gamma, gated):
    """Chang et al.: ``A = W - W^T - gamma I``, ``h += eps tanh(A h + V_h x + b_h)``, the update
    scaled by ``sigmoid(A h + V_z x + b_z)`` when gated (``V``, ``bias``: ``[V_h; V_z]``)."""
    D_ = Wm.shape[0]
    A = Wm - Wm.T - gamma * np.eye(D_)
    h, out = h0, []
    for t in range(x.shape[1]):
        update = np.tanh(mv(A, h) + mv(V[:D_], x[:, t]) + bias[:D_])
        if gated:
            update = sigmoid(mv(A, h) + mv(V[D_:], x[:, t]) + bias[D_:]) * update
        h = h + eps * update
        out.append(h)
    return np.stack(out, 1)


@pytest.mark.parametrize("gated", [False, True], ids=["ungated", "gated"])
def test_antisymmetric_matches_paper(gated, rng, data):
    x, h0 = data
    eps, gamma = 0.5, 0.3
    layer = build(zoo.AntisymmetricRNN(D, epsilon=eps, gamma=gamma, gated=gated,
                                       return_sequences=True))
    randomise(layer, rng)
    p = weights(layer)
    V = p["kernel"].T  # (D or 2D, d): rows [V_h; V_z]
    want = antisymmetric_oracle(x, h0, p["recurrent_kernel"].T, V, p["bias"], eps, gamma, gated)
    assert_close(run(layer, x, h0), want)


# ---------------------------------------------------------------------------------------------
# StableRNN (000 Sec. 6.2): h_t = tanh(W h_{t-1} + U x_t + b)


def tanh_rnn_oracle(x, h0, W, U, b):
    """Miller & Hardt Sec. 6.2: ``h_t = tanh(W h_{t-1} + U x_t + b)``."""
    h, out = h0, []
    for t in range(x.shape[1]):
        h = np.tanh(mv(W, h) + mv(U, x[:, t]) + b)
        out.append(h)
    return np.stack(out, 1)


def inside_ball(rng, shape, norm=0.9):
    """A recurrent matrix of spectral norm ``norm``: the 0.99 projection leaves it unchanged."""
    m = rng.normal(0.0, 0.3, size=shape)
    return norm * m / np.linalg.norm(m, 2)


def test_stablernn_matches_tanh_rnn(rng, data):
    x, h0 = data
    layer = build(zoo.StableRNN(D, max_norm=0.99, return_sequences=True))
    randomise(layer, rng, {"recurrent_kernel": lambda s: inside_ball(rng, s)})
    p = weights(layer)
    want = tanh_rnn_oracle(x, h0, p["recurrent_kernel"].T, p["kernel"].T, p["bias"])
    assert_close(run(layer, x, h0), want)


# ---------------------------------------------------------------------------------------------
# DiagonalRNN (Cayci & Eryilmaz, Eq. 2): h_t^(i) = tanh(w_i h_{t-1}^(i) + U_i^T x_t + b_i)


def diagonal_oracle(x, h0, U, w, b):
    """Neuron by neuron: ``h^(i) = tanh(w_i h^(i) + U_i . x + b_i)`` (U: math (m, d))."""
    h, out = h0, []
    for t in range(x.shape[1]):
        h = np.stack([np.tanh(w[i] * h[:, i] + x[:, t] @ U[i] + b[i]) for i in range(len(w))],
                     axis=1)
        out.append(h)
    return np.stack(out, 1)


# ---------------------------------------------------------------------------------------------
# use_bias=False: no bias weight, and the oracle with a zero bias


def _no_bias_fastrnn(layer, p, x, h0):
    return fastrnn_oracle(x, h0, lowrank_or_full(p, "kernel"),
                          lowrank_or_full(p, "recurrent_kernel"), np.zeros(D),
                          sigmoid(p["alpha_raw"]), sigmoid(p["beta_raw"]))


def _no_bias_fastgrnn(layer, p, x, h0):
    zero = np.zeros(D)
    return fastgrnn_oracle(x, h0, lowrank_or_full(p, "kernel"),
                           lowrank_or_full(p, "recurrent_kernel"), zero, zero,
                           sigmoid(p["zeta_raw"]), sigmoid(p["nu_raw"]))[0]


def _no_bias_antisymmetric(layer, p, x, h0):
    cell = layer.cell
    return antisymmetric_oracle(x, h0, p["recurrent_kernel"].T, p["kernel"].T,
                                np.zeros(2 * D), cell.epsilon, cell.gamma, cell.gated)


def _no_bias_stable(layer, p, x, h0):
    return tanh_rnn_oracle(x, h0, p["recurrent_kernel"].T, p["kernel"].T, np.zeros(D))


def _no_bias_diagonal(layer, p, x, h0):
    return diagonal_oracle(x, h0, p["kernel"].T, p["recurrent_kernel"], np.zeros(D))


NO_BIAS = {
    "fastrnn": (lambda: zoo.FastRNN(D, use_bias=False, return_sequences=True), _no_bias_fastrnn),
    "fastrnn_lowrank": (lambda: zoo.FastRNN(D, w_rank=2, u_rank=3, use_bias=False,
                                            return_sequences=True), _no_bias_fastrnn),
    "fastgrnn": (lambda: zoo.FastGRNN(D, use_bias=False, return_sequences=True),
                 _no_bias_fastgrnn),
    "antisymmetric": (lambda: zoo.AntisymmetricRNN(D, epsilon=0.5, gamma=0.3, use_bias=False,
                                                   return_sequences=True), _no_bias_antisymmetric),
    "gated_antisymmetric": (lambda: zoo.AntisymmetricRNN(D, epsilon=0.5, gamma=0.3, gated=True,
                                                         use_bias=False, return_sequences=True),
                            _no_bias_antisymmetric),
    "stablernn": (lambda: zoo.StableRNN(D, use_bias=False, return_sequences=True),
                  _no_bias_stable),
    "diagonal_rnn": (lambda: zoo.DiagonalRNN(D, use_bias=False, symmetric_init=False,
                                             return_sequences=True), _no_bias_diagonal),
}


@pytest.mark.parametrize("case", sorted(NO_BIAS))
def test_no_bias_matches_numpy_with_zero_bias(case, rng, data):
    """(The iRNN's no-bias case is ``IRNN_CASES["no_bias_k3"]``.)"""
    make, oracle = NO_BIAS[case]
    x, h0 = data
    layer = build(make())
    assert not [w.name for w in layer.weights if "bias" in w.name]
    scalars = lambda s: rng.uniform(-2.0, 2.0, size=s)  # noqa: E731
    randomise(layer, rng, {"alpha_raw": scalars, "beta_raw": scalars, "zeta_raw": scalars,
                           "nu_raw": scalars, "recurrent_kernel": (
                               (lambda s: inside_ball(rng, s)) if case == "stablernn" else
                               (lambda s: rng.normal(0.0, 0.3, size=s)))})
    want = oracle(layer, weights(layer), x, h0)
    assert_close(run(layer, x, h0), want)
