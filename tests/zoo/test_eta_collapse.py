"""The bounded iRNN's training collapse, reproduced step by step, and its fix.

Mechanism (measured on the full HAR-2 training split, K = 1, ``state_clip=1``, Adam lr 1e-2): Adam
moves every weight by about its learning rate per step whatever the gradient's size, so a raw
step size eta = 1e-2 can cross zero within one epoch; with eta < 0 each step
``g = clip(h + eta (phi(.) - 2 alpha h), 0, 1)`` is pulled onto 0, and at a clipped state the
gradient of every weight is exactly zero, so no later step can bring it back (loss ln 2 for the
rest of the run). ``eta_parametrization="sigmoid"`` (the default) keeps eta in (0, 1) and turns
Adam's additive steps into relative ones, so the same updates leave eta positive and trainable.
"""

import keras
import numpy as np
import pytest

import zoo

B, T, d, D = 16, 20, 3, 8
LR = 1e-2


def _layer(parametrization):
    keras.utils.set_random_seed(0)
    layer = zoo.IRNN(D, state_clip=1.0, eta_init=0.01, eta_parametrization=parametrization)
    layer.build((None, T, d))
    return layer


def _inputs():
    return np.random.default_rng(0).normal(size=(B, T, d)).astype("float32")


def _adam_steps(layer, x, sign, steps):
    """``steps`` Adam updates of every weight on ``sign * mean(h_T)``: sign +1 asks for a smaller
    state (what pushes eta down), -1 for a larger one (what a recovering model needs)."""
    import tensorflow as tf

    optimizer = keras.optimizers.Adam(LR)
    grads = None
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = sign * keras.ops.mean(layer(x))
        grads = tape.gradient(loss, layer.trainable_variables)
        optimizer.apply_gradients(zip(grads, layer.trainable_variables))
    return [np.zeros(v.shape) if g is None else np.asarray(g) for g, v in
            zip(grads, layer.trainable_variables)]


def _eta(layer):
    return float(np.asarray(layer.cell.eta_value())[0])


@pytest.mark.slow
@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="uses tf.GradientTape")
def test_raw_eta_crosses_zero_and_the_clipped_state_never_recovers():
    layer, x = _layer("raw"), _inputs()
    _adam_steps(layer, x, +1, steps=3)
    assert _eta(layer) < 0  # three Adam steps of ~lr carry eta = 0.01 below zero
    _adam_steps(layer, x, +1, steps=5)
    h = np.asarray(layer(x))
    assert np.all(h == 0.0)  # every state pinned onto the clip's lower bound
    # Absorbing: asking for a larger state now produces a zero gradient for every weight ...
    grads = _adam_steps(layer, x, -1, steps=20)
    assert all(np.all(g == 0) for g in grads)
    # ... so the state stays 0 and eta stays negative, however long it trains.
    assert np.all(np.asarray(layer(x)) == 0.0) and _eta(layer) < 0


@pytest.mark.slow
@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="uses tf.GradientTape")
def test_sigmoid_eta_stays_positive_and_the_state_recovers():
    layer, x = _layer("sigmoid"), _inputs()
    _adam_steps(layer, x, +1, steps=8)  # the same push as above
    eta = _eta(layer)
    # Adam moves the logit by at most ~lr per step, so eta shrinks by at most ~e^{-lr} per step.
    assert 0.01 * np.exp(-1.5 * LR * 8) < eta < 0.01
    assert np.any(np.asarray(layer(x)) > 0)
    before = float(np.mean(np.asarray(layer(x))))
    grads = _adam_steps(layer, x, -1, steps=20)
    assert any(np.any(g != 0) for g in grads)
    assert float(np.mean(np.asarray(layer(x)))) > before  # still trainable in both directions


def test_sigmoid_eta_matches_its_initial_value_and_serialises():
    layer = zoo.IRNN(D, k=3, eta_init=0.02)
    layer.build((None, T, d))
    np.testing.assert_allclose(np.asarray(layer.cell.eta_value()), 0.02, rtol=1e-6)
    assert layer.cell.eta.name == "eta_logit"
    clone = zoo.IRNN.from_config(layer.get_config())
    assert clone.cell.eta_parametrization == "sigmoid"


def test_configs_saved_before_the_option_load_as_raw_eta():
    config = zoo.IRNN(D, eta_parametrization="raw").get_config()
    del config["eta_parametrization"]  # what a model saved by an earlier version holds
    assert zoo.IRNN.from_config(config).cell.eta_parametrization == "raw"


@pytest.mark.parametrize("opts,match", [
    (dict(eta_parametrization="softplus"), "eta_parametrization"),
    (dict(eta_init=1.5), r"eta_init must be in \(0, 1\)"),
    (dict(eta_init=0.0), r"eta_init must be in \(0, 1\)"),
    (dict(eta_constraint="non_neg"), "eta_constraint constrains a raw eta"),
])
def test_bad_eta_options_are_refused(opts, match):
    with pytest.raises(ValueError, match=match):
        zoo.IRNNCell(D, **opts)
