"""Keras parity of every zoo cell: the state convention of `keras.layers.SimpleRNNCell` (a bare
state tensor or a list of one, returned in the same form)."""

import keras
import numpy as np
import pytest

import zoo

B, T, D_IN, UNITS = 4, 5, 3, 8
ZOO_MODELS = [n for n in zoo.list_models()
              if issubclass(zoo.get_model_entry(n).layer_class, keras.layers.RNN)
              and zoo.get_model_entry(n).layer_class.__module__.startswith("zoo.")]


def small(name, **extra):
    opts = {"units": UNITS}
    if zoo.get_model_entry(name).options().get("rank"):
        opts["rank"] = 4
    return {**opts, **extra}


# Every registered zoo model, plus the weight layouts the defaults do not reach: full-rank iRNN,
# low-rank FastRNN / FastGRNN factors, the DiagonalRNN with both weights projected.
VARIANTS = {
    "irnn[full_rank,k2]": ("irnn", dict(rank=None, premultiply=False, k=2)),
    "fastrnn[low_rank]": ("fastrnn", dict(w_rank=2, u_rank=3)),
    "fastgrnn[low_rank]": ("fastgrnn", dict(w_rank=2, u_rank=3)),
    "diagonal_rnn[rho_u]": ("diagonal_rnn", dict(rho_u=1.0)),
}
CASES = [pytest.param(n, small(n), id=n) for n in ZOO_MODELS] + [
    pytest.param(n, small(n, **o), id=vid) for vid, (n, o) in VARIANTS.items()]


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(0)


def built(name, opts, seed=1, **extra):
    """``zoo.create_layer`` built on (B, T, d), every trainable weight moved by N(0, 0.3^2)."""
    layer = zoo.create_layer(name, **opts, **extra)
    layer.build((B, T, D_IN))
    rng = np.random.default_rng(seed)
    for w in layer.trainable_weights:
        w.assign(np.asarray(w) + rng.normal(0, 0.3, w.shape).astype("float32"))
    return layer


def np_(x):
    return np.asarray(keras.ops.convert_to_numpy(x))


def inputs(seed=2):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(B, D_IN)).astype("float32")
    h = rng.normal(0, 0.5, size=(B, UNITS)).astype("float32")
    return x, h


# ------------------------------------------------------------------------------ state convention


def test_keras_reference_state_forms():
    """What the zoo cells copy: SimpleRNNCell returns a bare state for a bare one, else a list."""
    cell = keras.layers.SimpleRNNCell(UNITS)
    x, h = inputs()
    assert not isinstance(cell(x, h)[1], (list, tuple))
    assert isinstance(cell(x, [h])[1], list) and isinstance(cell(x, (h,))[1], list)


@pytest.mark.parametrize("name,opts", CASES)
def test_bare_state_tensor_equals_a_list_of_one(name, opts):
    layer = built(name, opts)
    cell = layer.cell
    x, h = inputs()
    assert np.abs(h[1:] - h[:1]).max() > 0.1  # rows differ: broadcasting row 0 would show
    out_list, states = cell(x, [h])
    out_bare, state = cell(x, h)
    out_tuple, states_tuple = cell(x, (h,))
    assert isinstance(states, list) and len(states) == 1
    assert isinstance(states_tuple, list) and len(states_tuple) == 1
    assert not isinstance(state, (list, tuple)) and tuple(state.shape) == (B, UNITS)
    np.testing.assert_array_equal(np_(out_bare), np_(out_list))
    np.testing.assert_array_equal(np_(state), np_(states[0]))
    np.testing.assert_array_equal(np_(out_tuple), np_(out_list))
    # The step is the RNN layer's (which passes the list) on a one-step sequence.
    np.testing.assert_allclose(np_(out_list), np_(layer(x[:, None], initial_state=[h])),
                               atol=1e-6, rtol=1e-6)


def test_irnn_eta_table_needs_the_listed_state():
    """With a per-step eta table the state is [h, m]: a bare h has no step counter."""
    cell = zoo.IRNNCell(UNITS, k=2, eta_timesteps=T)
    x, h = inputs()
    out, (h_next, step) = cell(x, [h, np.zeros((B, 1), "float32")])
    np.testing.assert_array_equal(np_(step), np.ones((B, 1)))
    with pytest.raises(ValueError, match="step counter"):
        cell(x, h)
