"""A premultiplied iRNN (Eq. 9) folded into the lean graph (`zoo.IRNNCell.lean_weights`) and
loaded by ``init_from`` (`zoo.training.warm_start`): checked against the premultiplied model's own
forward pass (the oracle: the same equation, run by the cell that trained it), in float with the
8-bit state grid, low-rank and full U, one and three recursions; the fold's refusals."""

import keras
import numpy as np
import pytest

import zoo
from zoo.training.warm_start import warm_start_weights

T, d = 12, 18  # 12 steps of 2 samples of 9 channels


def sirnn_model(premultiply, units=16, rank=4, k=1, **options):
    inputs = keras.Input((T, d))
    h = zoo.IRNN(units, k=k, rank=rank, premultiply=premultiply, state_clip=1.0,
                 state_quant_bits=8, eta_init=0.3, name="irnn", **options)(inputs)
    return keras.Model(inputs, keras.layers.Dense(2, name="head")(h))


def randomised(model, seed=0):
    """Weights drawn wide enough to cross ReLU's kink and the state clip (the default
    initialisation keeps every value near zero), bias included."""
    rng = np.random.default_rng(seed)
    for w in model.weights:
        if "eta" not in w.name:
            w.assign(rng.normal(scale=0.3, size=w.shape).astype("float32"))
    return model


def saved_run(model, folder):
    folder.mkdir()
    model.save(folder / "model.keras")
    return folder


@pytest.fixture
def x():
    return np.random.default_rng(1).normal(size=(8, T, d)).astype("float32")


@pytest.mark.parametrize("rank, k", [(4, 1), (None, 1), (4, 3)])
def test_a_premultiplied_run_starts_a_lean_model_that_computes_the_same(tmp_path, x, rank, k):
    source = randomised(sirnn_model(True, rank=rank, k=k))
    lean = sirnn_model(False, rank=rank, k=k)
    lean.set_weights(warm_start_weights(lean, saved_run(source, tmp_path / "run")))
    want = np.asarray(source(x))
    # the state crosses its clip and ReLU its kink: the comparison exercises both
    h = np.asarray(keras.Model(source.input, source.get_layer("irnn").output)(x))
    assert (h == 0).mean() > 0.05 and (h == 1).mean() > 0.05
    np.testing.assert_allclose(np.asarray(lean(x)), want, atol=2e-5)
    # U applied once: the lean step really is the cheaper graph, not the premultiplied one
    assert not lean.get_layer("irnn").cell.premultiply


def test_the_fold_reaches_a_qat_model_too(tmp_path, x):
    source = randomised(sirnn_model(True))
    run = saved_run(source, tmp_path / "run")
    lean = sirnn_model(False)
    lean.set_weights(warm_start_weights(lean, run))
    qat_model = sirnn_model(False, qat="int8")
    qat_model(x)
    loaded = warm_start_weights(qat_model, run)
    plain = [v for v, w in zip(loaded, qat_model.weights) if not w.path.endswith("qat_ranges")]
    for a, b in zip(plain, lean.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_a_premultiplied_qat_run_starts_a_lean_qat_model_with_its_own_ranges(tmp_path, x):
    """A shipped QAT tag (premultiplied, e.g. ``sirnn.har2``) starting the lean windows
    defaults: the weights fold as a float run's do, the source's ranges (which bound the
    premultiplied graph's tensors, another count of them) stay behind, and the model keeps its
    own (set from the data before the first epoch)."""
    source = randomised(sirnn_model(True, qat="int8"))
    float_twin = sirnn_model(True)
    float_twin.set_weights([w.numpy() for w in source.weights
                            if not w.path.endswith("qat_ranges")])
    lean = sirnn_model(False)
    lean.set_weights(warm_start_weights(lean, saved_run(float_twin, tmp_path / "float")))
    qat_model = sirnn_model(False, qat="int8")
    qat_model(x)
    own_ranges = [w.numpy() for w in qat_model.weights if w.path.endswith("qat_ranges")]
    assert own_ranges[0].shape != [w for w in source.weights
                                   if w.path.endswith("qat_ranges")][0].shape
    loaded = warm_start_weights(qat_model, saved_run(source, tmp_path / "qat"))
    ranges = [v for v, w in zip(loaded, qat_model.weights) if w.path.endswith("qat_ranges")]
    plain = [v for v, w in zip(loaded, qat_model.weights) if not w.path.endswith("qat_ranges")]
    for a, b in zip(plain, lean.get_weights()):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(ranges, own_ranges):
        np.testing.assert_array_equal(a, b)


def test_a_lean_run_does_not_start_a_premultiplied_model(tmp_path):
    run = saved_run(randomised(sirnn_model(False)), tmp_path / "run")
    with pytest.raises(ValueError, match="only premultiplied -> lean folds exactly"):
        warm_start_weights(sirnn_model(True), run)


def test_alpha_other_than_one_does_not_fold_a_low_rank_u():
    model = sirnn_model(True, alpha=0.5)
    with pytest.raises(ValueError, match="alpha = 1"):
        model.get_layer("irnn").cell.lean_weights()
    with pytest.raises(ValueError, match="lean already"):
        sirnn_model(False).get_layer("irnn").cell.lean_weights()
