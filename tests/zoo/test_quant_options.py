"""The iRNN's opt-in integer-friendly options against a NumPy oracle: ``state_clip`` (every
sub-step g_k clipped to [0, c]) and ``state_quant_bits`` (straight-through fake quantization of
every g_k to the b-bit grid on [0, c]). Defaults off: the paper's cell is unchanged (checked by
test_cells_numpy.py)."""

import keras
import numpy as np
import pytest

import zoo

B, T, d, D = 3, 7, 4, 8


def relu(x):
    return np.maximum(x, 0.0)


def oracle(x, h0, W, U, b, eta, alpha, clip, bits):
    """004 Eq. 5 with ``g_k <- Q(clip(g_k, 0, c))``, Q the round-to-nearest b-bit grid."""
    h, out = h0, []
    for m in range(x.shape[1]):
        g = h.copy()
        for k in range(len(eta)):
            v = g + h
            g = g + eta[k] * (relu(v @ U.T + x[:, m] @ W.T + b) - alpha * v)
            if clip is not None:
                g = np.clip(g, 0.0, clip)
                if bits is not None:
                    s = clip / (2 ** bits - 1)
                    g = np.round(g / s) * s
        h = g
        out.append(h)
    return np.stack(out, 1)


def layer_and_weights(rng, **opts):
    layer = zoo.IRNN(D, return_sequences=True, **opts)
    layer.build((B, T, d))
    p = {}
    for w in layer.weights:
        if w.name == "eta_logit":  # the default sigmoid parametrization: eta = sigmoid(logit)
            eta = rng.uniform(0.3, 0.6, w.shape)
            w.assign(np.asarray(np.log(eta / (1 - eta)), "float32"))
            p["eta"] = 1.0 / (1.0 + np.exp(-np.asarray(w.numpy(), np.float64)))
        else:
            w.assign(np.asarray(rng.normal(0, 0.5, w.shape), "float32"))
            p[w.name] = np.asarray(w.numpy(), np.float64)
    return layer, p


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("clip,bits", [(1.0, None), (0.5, None), (1.0, 8), (2.0, 4)])
def test_clip_and_fake_quant_match_numpy(k, clip, bits):
    rng = np.random.default_rng(7)
    layer, p = layer_and_weights(rng, k=k, state_clip=clip, state_quant_bits=bits)
    x = rng.normal(0, 1.5, (B, T, d))
    h0 = np.clip(rng.normal(0.3, 0.5, (B, D)), 0, clip)
    got = np.asarray(layer(x.astype("float32"), initial_state=[h0.astype("float32")]), np.float64)
    want = oracle(x, h0, p["kernel"].T, p["recurrent_kernel"].T, p["bias"], p["eta"], 1.0,
                  clip, bits)
    # The oracle exercises the clip at both ends, and (with bits) the grid.
    assert (want == 0).any() and (np.isclose(want, clip)).any()
    if bits is None:
        np.testing.assert_allclose(got, want, atol=1e-5)
    else:
        s = clip / (2 ** bits - 1)
        # On the grid: float32 vs float64 rounding may flip a tie by one grid step, very rarely.
        assert np.allclose(np.round(got / s) * s, got, atol=1e-5)
        assert np.mean(np.abs(got - want) < 1e-5) > 0.98
        assert np.max(np.abs(got - want)) <= s + 1e-5


@pytest.mark.parametrize("make_layer", [
    lambda bits: zoo.IRNN(D, state_clip=100.0, state_quant_bits=bits, eta_init=0.2),
    lambda bits: zoo.AntisymmetricRNN(D, epsilon=0.1, state_clip=4.0, state_quant_bits=bits),
], ids=["irnn", "antisymmetric"])
def test_fake_quant_gradient_is_straight_through(make_layer):
    """d(loss)/d(weights) with fake quant equals the clip-only cell's gradient at the same point
    when no state lies on the clip (STE: the rounding is the identity backwards)."""
    import tensorflow as tf

    rng = np.random.default_rng(3)
    x = rng.normal(0, 0.3, (B, 2, d)).astype("float32")
    grads = []
    for bits in (None, 16):
        keras.utils.set_random_seed(0)
        layer = make_layer(bits)
        layer.build((B, 2, d))
        h0 = np.full((B, D), 0.5, "float32")
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(x, initial_state=[h0]) ** 2)
        grads.append(tape.gradient(loss, layer.cell.kernel).numpy())
    # The forward values differ by < one 16-bit grid step, so the gradients nearly agree; a zero
    # gradient through round() would make them differ completely.
    assert np.abs(grads[1]).max() > 0
    np.testing.assert_allclose(grads[1], grads[0], rtol=0.02, atol=1e-4)


def test_defaults_off_and_config_roundtrip():
    cell = zoo.IRNNCell(D)
    assert cell.state_clip is None and cell.state_quant_bits is None
    layer = zoo.IRNN(D, state_clip=1.0, state_quant_bits=8)
    config = layer.get_config()
    assert config["state_clip"] == 1.0 and config["state_quant_bits"] == 8
    clone = zoo.IRNN.from_config(config)
    assert clone.cell.state_clip == 1.0 and clone.cell.state_quant_bits == 8
    entry_options = zoo.get_model_entry("sirnn").options()
    assert entry_options["state_clip"] is None and entry_options["state_quant_bits"] is None


@pytest.mark.parametrize("opts,match", [
    (dict(state_clip=0.0), "state_clip"),
    (dict(state_quant_bits=8), "needs state_clip"),
    (dict(state_clip=1.0, state_quant_bits=1), "2..16"),
])
def test_bad_options(opts, match):
    with pytest.raises(ValueError, match=match):
        zoo.IRNNCell(D, **opts)


# AntisymmetricRNN: the same options on a signed state, h_t clipped to [-c, c] and fake-quantized
# to the symmetric grid with step c / (2^(b-1) - 1).

def antisymmetric_oracle(x, h0, V, Wr, b, eps, gamma, gated, clip, bits):
    """h_t = Q(clip(h_{t-1} + eps [sigmoid(.)] tanh(h A + x V + b), -c, c)), A = W - W^T - gamma I."""
    D_ = Wr.shape[0]
    A = Wr - Wr.T - gamma * np.eye(D_)
    h, out = h0, []
    for m in range(x.shape[1]):
        rec = h @ A
        drive = x[:, m] @ V + b
        update = np.tanh(rec + drive[:, :D_])
        if gated:
            update = 1.0 / (1.0 + np.exp(-(rec + drive[:, D_:]))) * update
        h = h + eps * update
        if clip is not None:
            h = np.clip(h, -clip, clip)
            if bits is not None:
                s = clip / (2 ** (bits - 1) - 1)
                h = np.round(h / s) * s
        out.append(h)
    return np.stack(out, 1)


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("clip,bits", [(0.5, None), (1.0, None), (0.5, 8), (1.0, 4)])
def test_antisymmetric_clip_and_fake_quant_match_numpy(gated, clip, bits):
    rng = np.random.default_rng(11)
    layer = zoo.AntisymmetricRNN(D, epsilon=0.5, gamma=0.1, gated=gated, state_clip=clip,
                                 state_quant_bits=bits, return_sequences=True)
    layer.build((B, T, d))
    for w in layer.weights:
        w.assign(np.asarray(rng.normal(0, 0.8, w.shape), "float32"))
    p = {w.name: np.asarray(w.numpy(), np.float64) for w in layer.weights}
    x = rng.normal(0, 1.5, (B, T, d))
    h0 = np.clip(rng.normal(0, 0.5, (B, D)), -clip, clip)
    got = np.asarray(layer(x.astype("float32"), initial_state=[h0.astype("float32")]), np.float64)
    want = antisymmetric_oracle(x, h0, p["kernel"], p["recurrent_kernel"], p["bias"], 0.5, 0.1,
                                gated, clip, bits)
    # The oracle exercises the clip at both ends (signed state), and (with bits) the grid.
    assert np.isclose(want, clip).any() and np.isclose(want, -clip).any()
    if bits is None:
        np.testing.assert_allclose(got, want, atol=1e-5)
    else:
        s = clip / (2 ** (bits - 1) - 1)
        assert np.allclose(np.round(got / s) * s, got, atol=1e-5)
        assert np.abs(got).max() <= clip + 1e-6
        assert np.mean(np.abs(got - want) < 1e-5) > 0.98
        assert np.max(np.abs(got - want)) <= s + 1e-5


def test_antisymmetric_defaults_off_config_roundtrip_and_export_drop():
    from zoo.export.step import without_fake_quant

    cell = zoo.AntisymmetricRNNCell(D)
    assert cell.state_clip is None and cell.state_quant_bits is None
    layer = zoo.AntisymmetricRNN(D, state_clip=2.0, state_quant_bits=8)
    config = layer.get_config()
    assert config["state_clip"] == 2.0 and config["state_quant_bits"] == 8
    clone = zoo.AntisymmetricRNN.from_config(config)
    assert clone.cell.state_clip == 2.0 and clone.cell.state_quant_bits == 8
    for name in ("antisymmetric", "gated_antisymmetric"):
        options = zoo.get_model_entry(name).options()
        assert options["state_clip"] is None and options["state_quant_bits"] is None
    # Integer export drops the fake quant, keeps the clip and the weights.
    inputs = keras.Input((T, d))
    model = keras.Model(inputs, keras.layers.Dense(3)(layer(inputs)))
    plain = without_fake_quant(model)
    cells = [l.cell for l in plain.layers if isinstance(l, keras.layers.RNN)]
    assert cells[0].state_clip == 2.0 and cells[0].state_quant_bits is None
    for a, b in zip(model.get_weights(), plain.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("opts,match", [
    (dict(state_clip=-1.0), "state_clip"),
    (dict(state_quant_bits=8), "needs state_clip"),
    (dict(state_clip=1.0, state_quant_bits=17), "2..16"),
])
def test_antisymmetric_bad_options(opts, match):
    with pytest.raises(ValueError, match=match):
        zoo.AntisymmetricRNNCell(D, **opts)


def _fit_towards_negative_eta(eta_constraint):
    """Minimise the mean clipped state from h_0 = 0: with ReLU >= 0 the state only grows while
    eta > 0, so plain gradient descent drives eta below zero (the HAR-2 K = 5 collapse)."""
    keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).normal(size=(16, T, d)).astype("float32")
    model = keras.Sequential([
        keras.Input((T, d)),
        zoo.IRNN(D, k=2, state_clip=1.0, eta_init=0.05, eta_constraint=eta_constraint,
                 eta_parametrization="raw")])
    model.compile(optimizer=keras.optimizers.SGD(1.0), loss=lambda y, h: keras.ops.mean(h))
    model.fit(x, np.zeros((16, D), "float32"), epochs=5, batch_size=16, verbose=0)
    return np.asarray(model.layers[0].cell.eta)


def test_eta_constraint_keeps_eta_non_negative():
    assert (_fit_towards_negative_eta(None) < 0).all()  # the failure the option exists for
    assert (_fit_towards_negative_eta("non_neg") >= 0).all()


def test_eta_constraint_config_roundtrip_and_registry():
    layer = zoo.IRNN(D, eta_constraint="non_neg", eta_parametrization="raw")
    clone = zoo.IRNN.from_config(layer.get_config())
    assert isinstance(clone.cell.eta_constraint, keras.constraints.NonNeg)
    assert zoo.get_model_entry("irnn").options()["eta_constraint"] is None
    model = zoo.create_model("irnn", (T, d), 2, k=5, state_clip=1.0, eta_constraint="non_neg",
                             eta_parametrization="raw")
    cell = next(layer.cell for layer in model.layers if hasattr(layer, "cell"))
    assert isinstance(cell.eta_constraint, keras.constraints.NonNeg)
