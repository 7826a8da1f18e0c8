"""Native Keras behaviour of every registered model: the RNN-layer contract (return_sequences,
return_state, go_backwards, masking, stateful, Bidirectional), mixed precision, serialization
(config round trip, ``.keras`` files) and TensorFlow/JAX agreement; plus the registry's errors.

Sizes are small (D = 8, T = 6, d = 3) and the weights are perturbed away from their initial values
so that every comparison sees O(1) activations rather than the near-zero outputs of, e.g., iRNN's
eta = 0.01 at initialisation.
"""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

import zoo

T, D_IN, UNITS, B, C = 6, 3, 8, 2, 3
# The recurrent models (the DS-CNN keyword CNN has its own tests in test_dscnn.py).
MODELS = [n for n in zoo.list_models()
          if issubclass(zoo.get_model_entry(n).layer_class, keras.layers.RNN)]
ZOO_MODELS = [n for n in MODELS if zoo.get_model_entry(n).layer_class.__module__.startswith("zoo.")]


@pytest.fixture(autouse=True)
def _seed():
    """Deterministic initial weights (the cells' initializers are unseeded)."""
    keras.utils.set_random_seed(0)


def small(name, **extra):
    """Small options for ``name`` (iRNN's default rank 16 exceeds 8 units)."""
    opts = {"units": UNITS}
    if zoo.get_model_entry(name).options().get("rank"):
        opts["rank"] = 4
    return {**opts, **extra}


# Non-default options whose state or config is different enough to deserve their own run.
VARIANTS = {
    "irnn[k2,eta_table,alpha,s-1,g0]": ("irnn", dict(k=2, eta_timesteps=T, trainable_alpha=True,
                                                     state_sign=-1, g0="zero", activation="tanh")),
    "irnn[full_rank,k3]": ("irnn", dict(rank=None, premultiply=False, k=3)),
    "fastgrnn[low_rank,quant]": ("fastgrnn", dict(w_rank=2, u_rank=3,
                                                  gate_activation="quant_sigmoid",
                                                  update_activation="quant_tanh")),
    "fastrnn[low_rank,relu]": ("fastrnn", dict(w_rank=2, u_rank=3, activation="relu")),
    "antisymmetric[quant_tanh]": ("antisymmetric", dict(epsilon=0.5, gamma=0.1,
                                                        activation="quant_tanh")),
    "stablernn[no_bias]": ("stablernn", dict(max_norm=0.5, use_bias=False)),
}
CASES = [pytest.param(n, small(n), id=n) for n in MODELS] + [
    pytest.param(n, small(n, **o), id=vid) for vid, (n, o) in VARIANTS.items()]


def is_zoo(name):
    return name in ZOO_MODELS


def data(seed=0, batch=B, steps=T):
    return np.random.default_rng(seed).normal(size=(batch, steps, D_IN)).astype("float32")


def perturb(obj, seed=1, scale=0.3):
    """Add N(0, scale^2) to every trainable weight of a layer or model (after it is built)."""
    rng = np.random.default_rng(seed)
    for w in obj.trainable_weights:
        w.assign(np.asarray(w.numpy(), "float32") + rng.normal(0, scale, w.shape).astype("float32"))
    return obj


def built(name, opts, seed=1, **layer_args):
    """``zoo.create_layer(name, ...)`` built on (B, T, d) with perturbed weights."""
    layer = zoo.create_layer(name, **opts, **layer_args)
    layer.build((B, T, D_IN))
    return perturb(layer, seed)


def twin(layer, **changes):
    """A new layer from ``layer``'s config with ``changes``, sharing its weight values."""
    other = layer.__class__.from_config({**layer.get_config(), **changes})
    other.build((B, T, D_IN))
    other.set_weights(layer.get_weights())
    return other


def np_(x):
    return keras.ops.convert_to_numpy(x)


def close(a, b, atol=1e-6, rtol=1e-6):
    np.testing.assert_allclose(np_(a), np_(b), atol=atol, rtol=rtol)


def as_json(config):
    """``config`` as it comes back from a JSON file (tuples become lists)."""
    return json.loads(json.dumps(config))


def n_states(layer):
    size = layer.cell.state_size
    return len(size) if isinstance(size, (list, tuple)) else 1


# --------------------------------------------------------------------------- RNN-layer contract


@pytest.mark.parametrize("name,opts", CASES)
def test_return_sequences_and_state(name, opts):
    x = data()
    layer = built(name, opts, return_sequences=True, return_state=True)
    seq, *states = layer(x)
    assert tuple(seq.shape) == (B, T, UNITS)
    assert len(states) == n_states(layer)
    assert tuple(states[0].shape) == (B, UNITS)
    close(states[0], seq[:, -1], atol=0, rtol=0)  # h_T is both the last output and the state
    if is_zoo(name):
        if len(states) == 2:  # iRNN's eta table carries the step counter m
            close(states[1], np.full((B, 1), T), atol=0, rtol=0)
        else:
            assert len(states) == 1
    elif name == "lstm":
        assert tuple(states[1].shape) == (B, UNITS)  # the cell state c_T
    last = twin(layer, return_sequences=False, return_state=False)(x)
    assert tuple(last.shape) == (B, UNITS)
    close(last, seq[:, -1], atol=0, rtol=0)
    assert np.abs(np_(seq)).max() > 1e-2, "outputs too small for the comparisons to mean much"


@pytest.mark.parametrize("name,opts", CASES)
def test_go_backwards_equals_reversed_input(name, opts):
    x = data()
    fwd = built(name, opts, return_sequences=True)
    bwd = twin(fwd, go_backwards=True)
    # Keras returns the backward outputs in processing order (last input step first).
    close(bwd(x), fwd(x[:, ::-1]))
    assert not np.allclose(np_(bwd(x)), np_(fwd(x)), atol=1e-3)


@pytest.mark.parametrize("name,opts", CASES)
def test_masking_trailing_padding(name, opts):
    x = data(seed=2)
    valid = T - 2
    x[1, valid:] = 0.0  # sample 1: two padded steps at the end
    layer = built(name, opts, return_sequences=True)
    inp = keras.Input((T, D_IN))
    model = keras.Model(inp, layer(keras.layers.Masking(0.0)(inp)))
    out = np_(model(x))
    ref = np_(layer(x[1:2, :valid]))
    close(out[1, :valid], ref[0])
    close(out[1, -1], ref[0, -1])  # the state is carried over the masked steps
    close(out[0], np_(layer(x[:1]))[0])  # the unpadded sample is unaffected
    # The same through the call's `mask` argument, and without masking it differs.
    mask = np.ones((B, T), bool)
    mask[1, valid:] = False
    close(layer(x, mask=mask), out)
    assert not np.allclose(np_(layer(x))[1, -1], out[1, -1], atol=1e-4)


@pytest.mark.parametrize("name,opts", CASES)
def test_stateful_halves_equal_whole(name, opts):
    x = data(seed=3)
    whole = built(name, opts, return_sequences=True)
    stateful = twin(whole, stateful=True)
    first = np_(stateful(x[:, :3]))
    second = np_(stateful(x[:, 3:]))
    ref = np_(whole(x))
    close(np.concatenate([first, second], axis=1), ref)
    # Without a reset the state carries on; after one it starts from zero again.
    assert not np.allclose(np_(stateful(x[:, :3])), first, atol=1e-4)
    stateful.reset_states()
    close(stateful(x[:, :3]), first)


@pytest.mark.parametrize("name,opts", CASES)
def test_bidirectional(name, opts):
    x = data(seed=4)
    bi = keras.layers.Bidirectional(zoo.create_layer(name, **opts, return_sequences=True))
    bi.build((B, T, D_IN))
    perturb(bi)
    y = np_(bi(x))
    assert y.shape == (B, T, 2 * UNITS)
    close(y[..., :UNITS], bi.forward_layer(x))
    assert bi.backward_layer.go_backwards and type(bi.backward_layer) is type(bi.forward_layer)
    # Bidirectional re-aligns the backward outputs with the input steps.
    close(y[..., UNITS:], np_(bi.backward_layer(x))[:, ::-1])
    config = as_json(bi.get_config())
    again = keras.layers.Bidirectional.from_config(config)
    again.build((B, T, D_IN))
    again.set_weights(bi.get_weights())
    assert as_json(again.get_config()) == config
    close(again(x), y)


@pytest.fixture
def mixed_float16():
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


@pytest.mark.parametrize("name,opts", CASES)
def test_mixed_float16(name, opts, mixed_float16, tmp_path):
    x = data(seed=5)
    ref_layer = built(name, opts, return_sequences=True, dtype="float32")
    assert ref_layer.cell.compute_dtype == "float32"
    layer = twin(ref_layer, dtype=None)
    assert layer.compute_dtype == "float16" and layer.cell.compute_dtype == "float16"
    assert all(w.dtype == "float32" for w in layer.weights), [w.dtype for w in layer.weights]
    y = layer(x)
    assert keras.backend.standardize_dtype(y.dtype) == "float16"
    ref = np_(ref_layer(x))
    # fp16 has a 2^-11 relative rounding step; a few steps of matmuls over 8 units stay well
    # within 1e-2 of O(1) outputs.
    close(np_(y).astype("float32"), ref, atol=1e-2, rtol=1e-2)
    # The whole model too: the head's logits come out in float16, and the policy is stored in
    # the .keras file (it loads as mixed_float16 under a float32 global policy).
    model = zoo.create_model(name, (T, D_IN), C, **opts)
    assert keras.backend.standardize_dtype(model(x).dtype) == "float16"
    assert all(w.dtype == "float32" for w in model.weights)
    model.save(tmp_path / "m.keras")
    keras.config.set_dtype_policy("float32")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert loaded.layers[1].cell.compute_dtype == "float16"
    np.testing.assert_array_equal(np_(loaded(x)), np_(model(x)))


# --------------------------------------------------------------------------------- serialization


@pytest.mark.parametrize("name,opts", CASES)
def test_layer_config_round_trip(name, opts):
    x = data(seed=6)
    layer = built(name, opts)
    config = layer.get_config()
    for key, value in opts.items():
        assert config[key] == value, key
    again = twin(layer)
    assert type(again) is type(layer) and again.get_config() == config
    close(again(x), layer(x), atol=0, rtol=0)
    # Through the registered name, as a .keras file stores it (JSON, no custom_objects).
    serialized = json.loads(json.dumps(keras.saving.serialize_keras_object(layer)))
    restored = keras.saving.deserialize_keras_object(serialized)
    assert type(restored) is type(layer) and restored.get_config() == config


@pytest.mark.parametrize("name,opts", CASES)
def test_keras_file_round_trip(name, opts, tmp_path):
    x = data(seed=7)
    model = perturb(zoo.create_model(name, (T, D_IN), C, **opts))
    path = tmp_path / "m.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    layer = model.layers[1]
    assert type(loaded.layers[1]) is type(layer)
    assert loaded.layers[1].get_config() == layer.get_config()
    np.testing.assert_array_equal(np_(loaded(x)), np_(model(x)))


def test_keras_file_round_trip_bidirectional_stacked(tmp_path):
    """A model mixing several zoo layers, Bidirectional included, saves and loads."""
    x = data(seed=8)
    inp = keras.Input((T, D_IN))
    h = keras.layers.Bidirectional(zoo.create_layer("irnn", **small("irnn"),
                                                    return_sequences=True))(inp)
    h = zoo.create_layer("fastgrnn", units=UNITS, return_sequences=True)(h)
    h = zoo.create_layer("stablernn", units=UNITS)(h)
    model = perturb(keras.Model(inp, keras.layers.Dense(C)(h)))
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(np_(loaded(x)), np_(model(x)))


# ----------------------------------------------------------------------------- TensorFlow vs JAX

_JAX_WORKER = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import numpy as np
    import keras
    import zoo

    assert keras.backend.backend() == "jax", keras.backend.backend()
    keras.utils.set_random_seed(0)
    root, worker = Path(sys.argv[1]), int(sys.argv[2])
    spec = json.loads((root / "spec.json").read_text())
    x = np.load(root / "x.npy")
    results = {}
    for case in spec["cases"][worker::spec["workers"]]:
        d = root / case
        ref = np.load(d / "tf_out.npy")
        res = {}
        loaded = keras.saving.load_model(d / "m.keras")
        res["load_diff"] = float(np.abs(np.asarray(loaded.predict(x, verbose=0)) - ref).max())
        rebuilt = keras.Model.from_config(json.loads((d / "config.json").read_text()))
        weights = np.load(d / "weights.npz")
        rebuilt.set_weights([weights[f"w{i}"] for i in range(len(weights.files))])
        res["config_diff"] = float(np.abs(np.asarray(rebuilt(x)) - ref).max())
        if case in spec["train"]:
            y = np.random.default_rng(0).integers(0, spec["classes"], size=len(x))
            loaded.compile(optimizer=keras.optimizers.Adam(1e-2),
                           loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            before = [np.array(w) for w in loaded.trainable_weights]
            hist = loaded.fit(x, y, batch_size=4, epochs=1, verbose=0)
            res["loss"] = [float(v) for v in hist.history["loss"]]
            res["changed"] = any(not np.array_equal(b, np.array(w))
                                 for b, w in zip(before, loaded.trainable_weights))
            np.save(d / "jax_out.npy", np.asarray(loaded.predict(x, verbose=0)))
            loaded.save(d / "jax.keras")
        results[case] = res
    (root / f"results{worker}.json").write_text(json.dumps(results))
""")

# Every model, plus the iRNN variant whose second state (the step counter) and eta table are the
# most backend-sensitive code.
JAX_CASES = [pytest.param(n, small(n), id=n) for n in MODELS] + [
    pytest.param("irnn", small("irnn", **VARIANTS[v][1]), id=v)
    for v in ("irnn[k2,eta_table,alpha,s-1,g0]",)]


JAX_WORKERS = 2  # XLA compiles on one core: two processes halve the wall time on 2 cores


def _launch_jax_workers(root):
    """Save every JAX case from TensorFlow into ``root`` and start the JAX worker processes."""
    keras.utils.set_random_seed(0)
    x = data(seed=9, batch=8)
    np.save(root / "x.npy", x)
    cases, train = [], []
    for param in JAX_CASES:
        name, opts = param.values
        d = root / param.id
        d.mkdir()
        model = perturb(zoo.create_model(name, (T, D_IN), C, **opts), scale=0.2)
        model.save(d / "m.keras")
        (d / "config.json").write_text(json.dumps(model.get_config()))
        np.savez(d / "weights.npz", **{f"w{i}": w for i, w in enumerate(model.get_weights())})
        np.save(d / "tf_out.npy", np_(model(x)))
        cases.append(param.id)
        if is_zoo(name):
            train.append(param.id)
    (root / "spec.json").write_text(json.dumps(
        {"cases": cases, "train": train, "classes": C, "workers": JAX_WORKERS}))
    script = root / "jax_worker.py"
    script.write_text(_JAX_WORKER)
    # XLA's CPU optimisation passes dominate the compile time of these tiny graphs (about 2.5x);
    # they change code generation only, not the computation the tests compare.
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu",
           "TF_CPP_MIN_LOG_LEVEL": "3",
           "XLA_FLAGS": ("--xla_backend_optimization_level=0 "
                         "--xla_llvm_disable_expensive_passes=true")}
    procs = []
    for i in range(JAX_WORKERS):
        with open(root / f"worker{i}.log", "w") as log:
            procs.append(subprocess.Popen([sys.executable, str(script), str(root), str(i)],
                                          env=env, stdout=log, stderr=subprocess.STDOUT))
    return x, procs


@pytest.fixture(scope="module", autouse=True)
def jax_workers(request, tmp_path_factory):
    """Start the JAX workers with this module's first test, so that they run alongside the
    TensorFlow tests (the backend is fixed per process); `jax_run` collects their results."""
    if not any(item.module is request.module and "jax" in item.name
               for item in request.session.items):
        yield None
        return
    root = tmp_path_factory.mktemp("jax")
    x, procs = _launch_jax_workers(root)
    yield root, x, procs
    for proc in procs:  # only if a run was interrupted before `jax_run` waited for them
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def jax_run(jax_workers):
    root, x, procs = jax_workers
    results = {}
    for i, proc in enumerate(procs):
        proc.wait(timeout=600)
        if proc.returncode != 0:
            log = (root / f"worker{i}.log").read_text()
            pytest.fail(f"JAX worker {i} failed (rc {proc.returncode}):\n{log[-4000:]}")
        results.update(json.loads((root / f"results{i}.json").read_text()))
    return root, x, results


@pytest.mark.parametrize("name,opts", JAX_CASES)
def test_jax_loads_tf_keras_file(name, opts, jax_run, request):
    _, _, results = jax_run
    res = results[request.node.callspec.id]
    assert res["load_diff"] <= 1e-5, res
    assert res["config_diff"] <= 1e-5, res


@pytest.mark.parametrize("name,opts", [p for p in JAX_CASES if is_zoo(p.values[0])])
def test_jax_trains_and_tf_loads_the_result(name, opts, jax_run, request):
    root, x, results = jax_run
    case = request.node.callspec.id
    res = results[case]
    assert res["changed"] and all(np.isfinite(res["loss"])), res
    model = keras.saving.load_model(root / case / "jax.keras", compile=False)
    diff = np.abs(np_(model(x)) - np.load(root / case / "jax_out.npy")).max()
    assert diff <= 1e-5


# ------------------------------------------------------------------------------------- registry


def test_unknown_model_lists_valid_names():
    with pytest.raises(ValueError) as err:
        zoo.create_model("irrn", (T, D_IN), C)
    message = str(err.value)
    assert "irrn" in message and "irnn" in message
    assert all(name in message for name in MODELS)
    with pytest.raises(ValueError):
        zoo.create_layer("no_such_model")


@pytest.mark.parametrize("name", MODELS)
def test_unknown_option_lists_valid_options(name):
    with pytest.raises(ValueError) as err:
        zoo.create_layer(name, unitz=8)
    message = str(err.value)
    assert "'unitz'" in message and name in message
    assert all(option in message for option in zoo.get_model_entry(name).options())


def test_fixed_options_are_not_options():
    assert "k" not in zoo.get_model_entry("sirnn").options()
    assert "gated" not in zoo.get_model_entry("antisymmetric").options()
    with pytest.raises(ValueError, match="Valid options"):
        zoo.create_layer("sirnn", units=8, rank=4, k=2)
    assert zoo.create_layer("gated_antisymmetric", units=8).cell.gated
    assert not zoo.create_layer("antisymmetric", units=8).cell.gated


@pytest.mark.parametrize("name", MODELS)
def test_create_model_heads(name):
    x = data(seed=10)
    last = zoo.create_model(name, (T, D_IN), C, **small(name))
    assert last.name == name
    assert tuple(last.output.shape) == (None, C) and last(x).shape == (B, C)
    seq = zoo.create_model(name, (None, D_IN), 1, head="sequence", batch_size=B, **small(name))
    assert tuple(seq.output.shape) == (B, None, 1) and seq(x).shape == (B, T, 1)
    with_state = zoo.create_model(name, (T, D_IN), C, return_state=True, **small(name))
    assert with_state(x).shape == (B, C)
    probs = zoo.create_model(name, (T, D_IN), C, head_activation="softmax", **small(name))
    np.testing.assert_allclose(np_(probs(x)).sum(-1), 1.0, rtol=1e-5)


def test_create_model_rejects_bad_arguments():
    with pytest.raises(ValueError, match="head"):
        zoo.create_model("irnn", (T, D_IN), C, head="mean")
    with pytest.raises(ValueError, match="input_shape"):
        zoo.create_model("irnn", (D_IN,), C)


def test_create_model_uses_paper_defaults():
    model = zoo.create_model("irnn", (128, 9), 2)
    layer = model.layers[1]
    assert isinstance(layer, zoo.IRNN)
    assert (layer.units, layer.cell.rank, layer.cell.premultiply, layer.cell.k) == (80, 16, True, 1)
