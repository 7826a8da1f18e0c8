"""Keras parity of every zoo cell: the state convention of `keras.layers.SimpleRNNCell`, Keras's
weight arguments (initializers, regularizers, constraints, ``use_bias``) through the config, and
the recurrent-matrix method every cell shares.

The regularizer and constraint checks compare with NumPy from the layer's weights, read by name
(``kernel``, ``recurrent_*``, ``*bias``; a projected DiagonalRNN weight is ``*_init + *_delta``),
never through zoo code; the constraint oracles are the projections' definitions.
"""

import json
import warnings
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo

B, T, D_IN, UNITS = 4, 5, 3, 8
# The zoo's own cells (zoo.GRU is Keras's GRU layer with a QAT option: Keras's, not ours).
KERAS_LAYERS = (keras.layers.SimpleRNN, keras.layers.GRU, keras.layers.LSTM)
ZOO_MODELS = [n for n in zoo.list_models()
              if issubclass(zoo.get_model_entry(n).layer_class, keras.layers.RNN)
              and not issubclass(zoo.get_model_entry(n).layer_class, KERAS_LAYERS)
              and zoo.get_model_entry(n).layer_class.__module__.startswith("zoo.")]
# SimpleRNNCell's arguments that concern its weights (the rest: units, activation, dropout).
KERAS_WEIGHT_ARGS = ("use_bias", "kernel_initializer", "recurrent_initializer",
                     "bias_initializer", "kernel_regularizer", "recurrent_regularizer",
                     "bias_regularizer", "kernel_constraint", "recurrent_constraint",
                     "bias_constraint")


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


# ----------------------------------------------------------------------------- weight arguments


def test_the_argument_list_is_keras_own():
    params = keras.layers.SimpleRNNCell.__init__.__code__.co_varnames
    keras_weight_args = [p for p in params if p.endswith(("_initializer", "_regularizer",
                                                          "_constraint")) or p == "use_bias"]
    assert sorted(keras_weight_args) == sorted(KERAS_WEIGHT_ARGS)


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_every_keras_weight_argument_is_an_option(name):
    options = zoo.get_model_entry(name).options()
    assert set(KERAS_WEIGHT_ARGS) <= set(options), set(KERAS_WEIGHT_ARGS) - set(options)


def non_default(name):
    """A value other than the default for every Keras weight argument of ``name``."""
    return {
        "use_bias": not zoo.get_model_entry(name).options()["use_bias"],
        "kernel_initializer": keras.initializers.HeNormal(seed=1),
        "recurrent_initializer": keras.initializers.RandomUniform(-0.3, 0.3, seed=2),
        "bias_initializer": keras.initializers.Constant(0.25),
        "kernel_regularizer": keras.regularizers.L2(0.01),
        "recurrent_regularizer": keras.regularizers.L1(0.02),
        "bias_regularizer": keras.regularizers.L1L2(0.1, 0.2),
        "kernel_constraint": keras.constraints.MaxNorm(2.0),
        "recurrent_constraint": keras.constraints.NonNeg(),
        "bias_constraint": keras.constraints.MinMaxNorm(0.0, 1.0),
    }


def as_json(config):
    return json.loads(json.dumps(config))


@pytest.mark.parametrize("name,opts", CASES)
def test_config_round_trip_with_non_default_arguments(name, opts):
    given = non_default(name)
    layer = zoo.create_layer(name, **opts, **given)
    config = as_json(layer.get_config())
    stored = as_json(keras.saving.serialize_keras_object(layer))
    restored = keras.saving.deserialize_keras_object(stored)
    assert type(restored) is type(layer) and as_json(restored.get_config()) == config
    for key, value in given.items():
        got = getattr(restored.cell, key)
        if key == "use_bias":
            assert got is value
        else:
            assert type(got) is type(value) and got.get_config() == value.get_config(), key
    restored.build((B, T, D_IN))
    has_bias = any("bias" in w.name for w in restored.weights)
    assert has_bias == given["use_bias"]


def saved_configs():
    path = Path(__file__).parent / "data" / "layer_configs_daf87ba.json"
    return json.loads(path.read_text())["layers"]


@pytest.mark.parametrize("name", sorted(saved_configs()))
def test_a_config_saved_before_the_new_arguments_still_loads(name):
    saved = saved_configs()[name]
    layer = keras.saving.deserialize_keras_object(saved)
    config = as_json(layer.get_config())
    assert {k: config[k] for k in saved["config"]} == saved["config"]
    new = set(config) - set(saved["config"])
    # The arguments it predates take their defaults: no regularizer, no constraint.
    assert all(config[k] is None for k in new if k.endswith(("_regularizer", "_constraint")))
    y = layer(np.random.default_rng(0).normal(size=(B, T, D_IN)).astype("float32"))
    assert tuple(y.shape) == (B, saved["config"]["units"])


# Weights by role, read by name; a projected DiagonalRNN weight is W(0) + delta.
ROLE_NAMES = {"kernel": {"kernel", "kernel_1", "kernel_2"},
              "recurrent": {"recurrent_kernel", "recurrent_kernel_1", "recurrent_kernel_2",
                            "recurrent_v", "recurrent_h"},
              "bias": {"bias", "gate_bias", "update_bias"}}


def role_values(layer, role):
    """Float64 values of the weights of ``role`` (delta + init for a projected one)."""
    w = {v.name: np.asarray(v, np.float64) for v in layer.weights}
    values = []
    for name, value in w.items():
        base = name.removesuffix("_delta")
        if base in ROLE_NAMES[role]:
            values.append(value + w[f"{base}_init"] if name.endswith("_delta") else value)
    assert values, (role, sorted(w))
    return values


@pytest.mark.parametrize("role", sorted(ROLE_NAMES))
@pytest.mark.parametrize("name,opts", CASES)
def test_regularizer_adds_its_loss(name, opts, role):
    l2 = 0.5
    layer = built(name, opts, use_bias=True, **{f"{role}_regularizer": keras.regularizers.L2(l2)})
    values = role_values(layer, role)
    assert len(layer.losses) == len(values)
    want = sum(l2 * np.sum(v ** 2) for v in values)
    assert want > 0.1
    np.testing.assert_allclose(float(sum(np_(loss) for loss in layer.losses)), want, rtol=1e-5)


@pytest.mark.parametrize("name,opts", [p for p in CASES if p.id in ("irnn", "diagonal_rnn[rho_u]")])
def test_regularizer_reaches_the_training_loss(name, opts):
    """Keras adds ``model.losses`` to the compiled loss; for a projected DiagonalRNN weight its
    gradient reaches the trainable delta as the gradient of the weight itself."""
    x = np.random.default_rng(3).normal(size=(B, T, D_IN)).astype("float32")
    y = np.zeros((B,), "int32")
    models = {}
    for key, reg in (("plain", None), ("l2", keras.regularizers.L2(0.5))):
        keras.utils.set_random_seed(0)
        models[key] = zoo.create_model(name, (T, D_IN), 2, **opts, kernel_regularizer=reg)
        models[key].compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    models["l2"].set_weights(models["plain"].get_weights())
    reg = 0.5 * sum(np.sum(v ** 2) for v in role_values(models["l2"].layers[1], "kernel"))
    # return_dict: create_model compiles with accuracy, and Keras keeps a compiled model's
    # metrics through a later compile(loss=...) (evaluate then gives [loss, accuracy])
    loss = {key: model.evaluate(x, y, verbose=0, return_dict=True)["loss"]
            for key, model in models.items()}
    diff = loss["l2"] - loss["plain"]
    np.testing.assert_allclose(diff, reg, rtol=1e-4)
    if "rho_u" in opts:
        cell = models["l2"].layers[1].cell
        delta = next(w for w in cell.trainable_weights if w.name == "kernel_delta")
        with tf.GradientTape() as tape:
            loss = tf.add_n(cell.losses)
        np.testing.assert_allclose(np_(tape.gradient(loss, delta)), 2 * 0.5 * np_(cell.kernel),
                                   atol=1e-6)


# NumPy oracles of the projections (their definitions, not zoo code).


def spectral_ball(w, max_norm):
    """Miller & Hardt: clip the singular values at ``max_norm``."""
    u, s, vh = np.linalg.svd(w, full_matrices=False)
    return (u * np.minimum(s, max_norm)) @ vh


def max_norm_ball(delta, radius):
    """Cayci & Eryilmaz Sec. 2.3: each column (neuron) onto the radius ball; a vector entry-wise."""
    if delta.ndim == 1:
        return np.clip(delta, -radius, radius)
    norms = np.linalg.norm(delta, axis=0, keepdims=True)
    return delta * np.minimum(1.0, radius / np.maximum(norms, 1e-12))


def after_constraints(cell, name, stepped, weights, role):
    """The value Keras should leave in weight ``name`` after the SGD step gave ``stepped``: the
    user's NonNeg on ``role``'s weights, and the cell's own projection where it has one."""
    mine = name.removesuffix("_delta") in ROLE_NAMES[role]
    if isinstance(cell, zoo.StableRNNCell) and name == "recurrent_kernel":
        return spectral_ball(np.maximum(stepped, 0) if mine else stepped, cell.max_norm)
    if name.endswith("_delta"):
        start = weights[name.replace("_delta", "_init")]
        rho = cell.rho_u if name.startswith("kernel") else cell.rho_w
        value = np.maximum(start + stepped, 0) - start if mine else stepped
        return max_norm_ball(value, rho / np.sqrt(cell.units))
    return np.maximum(stepped, 0) if mine else stepped


@pytest.mark.parametrize("role", sorted(ROLE_NAMES))
@pytest.mark.parametrize("name,opts", CASES)
def test_constraint_is_applied_after_each_update(name, opts, role):
    lr = 0.5
    layer = built(name, opts, use_bias=True, **{f"{role}_constraint": keras.constraints.NonNeg()})
    cell = layer.cell
    rng = np.random.default_rng(4)
    for w in cell.trainable_weights:  # centred on 0, so NonNeg has entries to clip
        if w.name in ROLE_NAMES[role]:  # (FastGRNN's biases start at 1.0)
            w.assign(rng.normal(0, 0.5, w.shape).astype("float32"))
    x = rng.normal(size=(B, T, D_IN)).astype("float32")
    before = {w.name: np.asarray(w, np.float64) for w in cell.weights}
    variables = cell.trainable_weights
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(layer(x)))
    grads = tape.gradient(loss, variables)
    keras.optimizers.SGD(lr).apply_gradients(zip(grads, variables))
    acted = False
    for var, grad in zip(variables, grads):
        stepped = before[var.name] - lr * np.asarray(grad, np.float64)
        want = after_constraints(cell, var.name, stepped, before, role)
        acted |= var.name.removesuffix("_delta") in ROLE_NAMES[role] and not np.allclose(
            want, stepped, atol=1e-3)
        np.testing.assert_allclose(np_(var), want, atol=2e-6, err_msg=var.name)
    assert acted, "NonNeg changed nothing: the check would pass without the constraint"


# ----------------------------------------------------------------------------- recurrent matrix


def math_recurrence(cell):
    """The matrix acting on h_{t-1}, in Keras orientation (``h @ M``), from the weights."""
    w = {v.name: np.asarray(v, np.float64) for v in cell.weights}
    if isinstance(cell, zoo.IRNNCell):
        if "recurrent_kernel" in w:
            return w["recurrent_kernel"]
        return cell.alpha * np.eye(cell.units) + w["recurrent_v"] @ w["recurrent_h"]
    if isinstance(cell, zoo.AntisymmetricRNNCell):
        m = w["recurrent_kernel"]
        return m - m.T - cell.gamma * np.eye(cell.units)
    if isinstance(cell, (zoo.FastRNNCell, zoo.FastGRNNCell)):
        if "recurrent_kernel" in w:
            return w["recurrent_kernel"]
        return w["recurrent_kernel_1"] @ w["recurrent_kernel_2"]
    if isinstance(cell, zoo.DiagonalRNNCell):
        return np.diag(w["recurrent_kernel_init"] + w["recurrent_kernel_delta"]
                       if "recurrent_kernel_delta" in w else w["recurrent_kernel"])
    if isinstance(cell, zoo.StableRNNCell):
        return w["recurrent_kernel"]
    raise AssertionError(f"no oracle for {type(cell).__name__}")


@pytest.mark.parametrize("name,opts", CASES)
def test_recurrent_matrix(name, opts):
    cell = built(name, opts).cell
    np.testing.assert_allclose(np_(cell.recurrent_matrix()), math_recurrence(cell), atol=1e-6)


def test_recurrence_matrix_is_a_deprecated_alias():
    cell = built("antisymmetric", small("antisymmetric")).cell
    with pytest.warns(DeprecationWarning, match="recurrent_matrix"):
        old = cell.recurrence_matrix()
    np.testing.assert_array_equal(np_(old), np_(cell.recurrent_matrix()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cell.recurrent_matrix()
