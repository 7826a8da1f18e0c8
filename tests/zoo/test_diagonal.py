"""DiagonalRNN (002 Eq. 2-3, Def. 1, Sec. 2.3) against NumPy oracles written from the paper."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo
from zoo.diagonal import MaxNormBall, SymmetricInit
from zoo.macs import cell_macs_per_step

B, T, d, m = 3, 7, 4, 8


def np_weights(layer):
    return {w.name: np.asarray(w, dtype=np.float64) for w in layer.weights}


@pytest.mark.parametrize("use_bias", [False, True], ids=["paper", "bias"])
def test_matches_eq2(use_bias):
    rng = np.random.default_rng(0)
    layer = zoo.DiagonalRNN(m, alpha=0.9, use_bias=use_bias, return_sequences=True)
    layer.build((B, T, d))
    for w in layer.weights:  # move off the initial point so every term matters
        if w.trainable:
            w.assign(rng.normal(0, 0.5, size=w.shape).astype("float32"))
    p = np_weights(layer)
    x = rng.normal(size=(B, T, d))
    h0 = rng.normal(0, 0.5, size=(B, m))
    U, w = p["kernel"].T, p["recurrent_kernel"]  # math U: (m, d); rows U_i
    b = p["bias"] if use_bias else 0.0
    h, want = h0, []
    for t in range(T):
        # H_t^(i) = sigma(W_ii H_{t-1}^(i) + U_i^T X_t), neuron by neuron
        h = np.stack([np.tanh(w[i] * h[:, i] + x[:, t] @ U[i] + (b[i] if use_bias else 0))
                      for i in range(m)], axis=1)
        want.append(h)
    got = np.asarray(layer(x.astype("float32"), initial_state=[h0.astype("float32")]))
    np.testing.assert_allclose(got, np.stack(want, 1), atol=1e-5)


def test_symmetric_init_def1_gives_zero_output():
    """Def. 1: w_i = +-alpha, U_i ~ N(0, I) mirrored; c mirrored negated -> F_t = 0 for all t."""
    keras.utils.set_random_seed(3)
    alpha, width = 0.7, 80
    model = zoo.create_model("diagonal_rnn", (T, d), 1, units=width, alpha=alpha)
    cell = model.layers[1].cell
    w, U = np.asarray(cell.recurrent_kernel), np.asarray(cell.kernel)
    np.testing.assert_allclose(np.abs(w), alpha, rtol=1e-6)
    assert set(np.sign(w)) == {-1.0, 1.0}
    np.testing.assert_array_equal(w[:width // 2], w[width // 2:])
    np.testing.assert_array_equal(U[:, :width // 2], U[:, width // 2:])
    assert 0.8 < U.std() < 1.2  # N(0, I_d) rows
    c = SymmetricInit("rademacher", 1 / np.sqrt(width), negate=True, axis=0)((width, 1))
    model.get_layer("head").kernel.assign(c)
    model.get_layer("head").bias.assign(np.zeros(1))
    x = np.random.default_rng(1).normal(size=(5, T, d)).astype("float32")
    assert np.max(np.abs(model(x))) < 1e-6
    with pytest.raises(ValueError, match="even"):
        zoo.DiagonalRNN(7)


def test_max_norm_projection_matches_numpy_and_holds_after_fit():
    rng = np.random.default_rng(2)
    delta = rng.normal(0, 1.0, size=(4, 6))
    radius = 0.5
    norms = np.linalg.norm(delta, axis=0)  # per neuron (column of the Keras kernel)
    want = delta * np.minimum(1.0, radius / norms)
    np.testing.assert_allclose(np.asarray(MaxNormBall(radius)(delta.astype("float32"))), want,
                               atol=1e-6)
    vec = rng.normal(0, 1.0, size=9)
    np.testing.assert_allclose(np.asarray(MaxNormBall(radius)(vec.astype("float32"))),
                               np.clip(vec, -radius, radius), atol=1e-7)

    rho_w, rho_u, width = 0.5, 0.8, 16
    model = zoo.create_model("diagonal_rnn", (T, d), 2, units=width, rho_w=rho_w, rho_u=rho_u)
    cell = model.layers[1].cell
    w0, u0 = np.asarray(cell.recurrent_kernel).copy(), np.asarray(cell.kernel).copy()
    model.compile(keras.optimizers.SGD(5.0), "sparse_categorical_crossentropy")
    x = rng.normal(size=(32, T, d)).astype("float32")
    model.fit(x, rng.integers(0, 2, 32), epochs=3, verbose=0)
    dw = np.abs(np.asarray(cell.recurrent_kernel) - w0)
    du = np.linalg.norm(np.asarray(cell.kernel) - u0, axis=0)
    assert dw.max() <= rho_w / np.sqrt(width) + 1e-6 and du.max() <= rho_u / np.sqrt(width) + 1e-6
    assert dw.max() > 0.5 * rho_w / np.sqrt(width)  # the step was large: the projection acted
    np.testing.assert_array_equal(np.asarray(cell._recurrent[0]), w0)  # W(0) stays frozen


def test_macs_equal_the_traced_graph():
    layer = zoo.create_layer("diagonal_rnn", units=12)
    layer.build((1, T, 5))
    cell = layer.cell

    @tf.function
    def step(x, h):
        return cell(x, [h])

    graph = step.get_concrete_function(tf.zeros((1, 5)), tf.zeros((1, 12))).graph
    macs = sum(op.inputs[0].shape[-2] * op.inputs[0].shape[-1] * op.inputs[1].shape[-1]
               for op in graph.get_operations() if op.type == "MatMul")
    assert cell_macs_per_step(cell, 5) == macs == 5 * 12


def test_saved_and_reloaded(tmp_path):
    model = zoo.create_model("diagonal_rnn", (T, d), 2, units=8)
    x = np.random.default_rng(0).normal(size=(2, T, d)).astype("float32")
    model.save(tmp_path / "m.keras")
    again = keras.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(np.asarray(model(x)), np.asarray(again(x)))
    np.testing.assert_array_equal(np.asarray(again.layers[1].cell.recurrent_kernel),
                                  np.asarray(model.layers[1].cell.recurrent_kernel))
