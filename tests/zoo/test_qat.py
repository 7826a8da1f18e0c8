"""Quantization-aware training (`zoo.qat`, ``IRNNCell(qat="int8")``) against independent oracles.

- Fake quantization against its published definition (Jacob et al., CVPR 2018; TensorFlow's
  ``fake_quant_with_min_max_vars``): the range nudged so that zero is a grid point, 256 levels,
  idempotent, straight-through gradient (1 inside the nudged range, 0 outside), written here in
  NumPy.
- Weights against the symmetric per-tensor int8 rounding ``round(w / (max|w| / 127))``.
- The QAT SiRNN step against a NumPy re-implementation of the equations with the fake
  quantization at the documented points.
- Range tracking against ``np.percentile`` of the data and the EMA formula; options and
  serialization.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo
from zoo import qat

CLIP = 1.0


# ------------------------------------------------------------------ NumPy oracles


def nudged(lo: float, hi: float, levels: int = 256, narrow: bool = False):
    """TensorFlow's / Jacob et al.'s nudged range: (nudged min, nudged max, scale), with the
    zero point an integer of the grid so that 0.0 is exactly representable. In float32, as
    TensorFlow computes it (a range like [-1, 1] puts the zero point at 127.5 minus round-off)."""
    q_min, q_max = np.float32(1 if narrow else 0), np.float32(levels - 1)
    lo, hi = np.float32(lo), np.float32(hi)
    scale = (hi - lo) / (q_max - q_min)
    zero_from_min = q_min - lo / scale
    zero = q_min if zero_from_min < q_min else q_max if zero_from_min > q_max else np.floor(
        zero_from_min + 0.5)
    return (float((q_min - zero) * scale), float((q_max - zero) * scale), float(scale))


def fake_quant(x, lo, hi):
    """8-bit fake quantization: clamp to the nudged range, round half up to the grid. In
    float32 with the reciprocal scale, as TensorFlow's kernel computes it: values of a
    quantized sum (v = 2 h with h on its grid) lie exactly on half-steps of the next grid, where
    float64 arithmetic would round the other way."""
    n_lo, n_hi, scale = (np.float32(v) for v in nudged(lo, hi))
    clamped = np.clip(np.asarray(x, np.float32), n_lo, n_hi)
    levels = np.floor((clamped - n_lo) * (np.float32(1) / scale) + np.float32(0.5))
    return levels * scale + n_lo


def assert_same_levels(got, x, lo, hi):
    """``got`` is ``fake_quant(x, lo, hi)`` level for level, except where ``x`` lies within
    float32 round-off of a half-step (there the kernel's fused multiply-add may round the other
    way, by one level); the values agree up to the round-off of ``level * scale + min``."""
    want = fake_quant(x, lo, hi)
    n_lo, n_hi, scale = nudged(lo, hi)
    level = lambda v: np.round((np.asarray(v, np.float64) - n_lo) / scale)
    differ = level(got) != level(want)
    position = (np.clip(np.asarray(x, np.float64), n_lo, n_hi) - n_lo) / scale
    on_boundary = np.abs(position - np.floor(position) - 0.5) < 1e-4
    assert not np.any(differ & ~on_boundary), x[differ & ~on_boundary][:5]
    assert np.all(np.abs(level(got) - level(want)) <= 1)
    np.testing.assert_allclose(got[~differ], want[~differ], rtol=0,
                               atol=4 * np.finfo(np.float32).eps * max(abs(lo), abs(hi)))


def int8_weight(w):
    """The export's symmetric per-tensor int8 weight: round(w / s) * s, s = max|w| / 127."""
    w = np.asarray(w, np.float64)
    scale = np.abs(w).max() / 127
    return np.floor(w / scale + 0.5) * scale


def int32_bias(b, x_range, w):
    """The converter's FULLY_CONNECTED bias: int32 at scale s_x * s_w (the input's int8 scale,
    its range over 255 levels, times the weight's, max|w| / 127), back in float."""
    step = (x_range[1] - x_range[0]) / 255 * (np.abs(np.asarray(w, np.float64)).max() / 127)
    return np.floor(np.asarray(b, np.float64) / step + 0.5) * step


def relu(x):
    return np.maximum(x, 0.0)


def numpy_step(cell, x_t, h_prev, record=None, points=None, weights_on=True):
    """One SiRNN step (k=1, g0 previous, state_sign +1, alpha 1, ReLU) written from the
    equations, each tensor the int8 step holds fake-quantized at the cell's ranges (only those
    in ``points`` when given, and the weights and bias only if ``weights_on``)."""
    ranges = cell.quant_points.as_dict()
    weights = {w.path.rsplit("/", 1)[-1]: keras.ops.convert_to_numpy(w) for w in cell.weights}

    def fq(name, value):
        if record is not None:
            record.setdefault(name, []).append(value)
        return fake_quant(value, *ranges[name]) if points is None or name in points else value

    int8_weight = globals()["int8_weight"] if weights_on else (lambda w: w)

    def apply_u(v, low, high):
        if cell.rank is None:
            return v @ int8_weight(weights["recurrent_kernel"])
        z = fq(low, v @ int8_weight(weights["recurrent_v"]))
        return v + fq(high, z @ int8_weight(weights["recurrent_h"]))

    eta = 1 / (1 + np.exp(-weights["eta_logit"].astype(np.float64)))
    x = fq("x", x_t)
    h = fq("h", h_prev)
    bias = (int32_bias(weights["bias"], ranges["x"], weights["kernel"])
            if cell.qat_bias and weights_on else weights["bias"])
    drive = fq("drive", x @ int8_weight(weights["kernel"]) + bias)
    v = fq("v0", h + h)  # g_0 = h_{m-1}, v = g_0 + h_{m-1}
    pre = fq("uv0", apply_u(v, "uv_low0", "uv_high0")) + drive
    if cell.premultiply:
        pre = apply_u(fq("pre0", pre), "p_low0", "p_high0")
    act = fq("act0", relu(pre))
    diff = fq("diff0", act - v)
    inc = fq("inc0", int8_weight(eta[0]) * diff)
    return fq("h", h + inc)


# ------------------------------------------------------------------ fake quantization

RANGES = [(-1.0, 1.0), (-0.37, 1.91), (0.0, 1.0), (-2.5, 0.3), (-0.02735, 0.76368), (0.2, 3.0)]


def _keras_fq(x, lo, hi):
    return keras.ops.convert_to_numpy(keras.quantizers.fake_quant_with_min_max_vars(
        keras.ops.convert_to_tensor(x), lo, hi, num_bits=8))


@pytest.mark.parametrize("lo,hi", RANGES)
def test_fake_quant_is_the_nudged_256_level_grid_with_zero_exact(lo, hi):
    x = np.linspace(lo - 1.0, hi + 1.0, 20001, dtype=np.float32)
    got = _keras_fq(x, lo, hi)
    n_lo, n_hi, scale = nudged(lo, hi)
    levels = (got.astype(np.float64) - n_lo) / scale
    np.testing.assert_allclose(levels, np.round(levels), atol=1e-3)  # on the grid
    assert np.unique(np.round(levels)).tolist() == list(range(256))  # all 256 levels, no more
    assert got.min() == pytest.approx(n_lo, abs=1e-6) and got.max() == pytest.approx(n_hi, abs=1e-6)
    assert _keras_fq(np.zeros(3, np.float32), lo, hi).tolist() == [0.0, 0.0, 0.0]
    assert_same_levels(got, x, lo, hi)  # the NumPy definition


@pytest.mark.parametrize("lo,hi", RANGES)
def test_fake_quant_is_idempotent(lo, hi):
    x = np.random.default_rng(0).normal(scale=2.0, size=5000).astype(np.float32)
    once = _keras_fq(x, lo, hi)
    np.testing.assert_array_equal(_keras_fq(once, lo, hi), once)


@pytest.mark.parametrize("lo,hi", RANGES)
def test_fake_quant_gradient_is_straight_through_inside_zero_outside(lo, hi):
    n_lo, n_hi, scale = nudged(lo, hi)
    x = tf.constant(np.concatenate([
        np.linspace(n_lo + scale / 4, n_hi - scale / 4, 101),  # inside
        [n_lo - 0.5, n_lo - scale, n_hi + scale, n_hi + 0.5]]).astype(np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = keras.quantizers.fake_quant_with_min_max_vars(x, lo, hi, num_bits=8)
    grad = tape.gradient(y, x).numpy()
    np.testing.assert_array_equal(grad, [1.0] * 101 + [0.0] * 4)


def _point_cell(ranges):
    cell = zoo.IRNNCell(4, qat="int8", state_clip=CLIP, state_quant_bits=8)
    cell.build((None, 3))
    cell.quant_points.set_ranges(ranges)
    return cell


def test_quant_points_apply_uses_the_points_range_and_passes_gradients_straight():
    cell = _point_cell({"drive": (-0.37, 1.91)})
    lo, hi = cell.quant_points.as_dict()["drive"]
    assert (lo, hi) == pytest.approx((-0.37, 1.91))
    x = tf.constant(np.linspace(-1.0, 3.0, 4001, dtype=np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = cell.quant_points.apply("drive", x)
    n_lo, n_hi, scale = nudged(lo, hi)
    assert_same_levels(y.numpy(), x.numpy(), lo, hi)
    inside = (x.numpy() > n_lo + 1e-6) & (x.numpy() < n_hi - 1e-6)
    grad = tape.gradient(y, x).numpy()
    np.testing.assert_array_equal(grad[inside], 1.0)
    np.testing.assert_array_equal(grad[(x.numpy() < n_lo - 1e-6) | (x.numpy() > n_hi + 1e-6)],
                                  0.0)
    # The state point is [0, state_clip] at 1/255, whatever was asked for it.
    h = cell.quant_points.apply("h", tf.constant([-0.5, 0.0, 0.5, 2.0]))
    np.testing.assert_allclose(h.numpy(), [0.0, 0.0, 127 / 255, 1.0], atol=1e-7)


@pytest.mark.parametrize("shape,scale", [((9, 16), 0.1), ((16, 4), 3.0), ((80,), 1e-3), ((1,), 0.2)])
def test_quantize_weight_is_symmetric_per_tensor_int8(shape, scale):
    w = np.random.default_rng(1).normal(scale=scale, size=shape).astype(np.float32)
    wt = tf.constant(w)
    with tf.GradientTape() as tape:
        tape.watch(wt)
        got = qat.quantize_weight(wt)
        loss = tf.reduce_sum(got)
    got = got.numpy()
    step = np.abs(w).max() / 127
    np.testing.assert_allclose(got, int8_weight(w), atol=1e-6 * np.abs(w).max(), rtol=0)
    ints = got / step
    np.testing.assert_allclose(ints, np.round(ints), atol=1e-3)
    assert np.abs(np.round(ints)).max() == 127  # the largest weight is +-127: narrow range
    # Straight through, including the largest weight (the scale is not differentiated).
    np.testing.assert_array_equal(tape.gradient(loss, wt).numpy(), np.ones(shape))


def test_fake_quant_on_jax_matches_and_passes_gradients_straight(tmp_path):
    """The JAX backend's fake quantization (Keras's own code, not TensorFlow's op): the same
    nudged grid and the same straight-through gradient."""
    import os
    import subprocess
    import sys

    script = (
        "import numpy as np, jax, keras\n"
        "x = np.linspace(-1.5, 2.5, 4001, dtype=np.float32)\n"
        "f = lambda v: keras.quantizers.fake_quant_with_min_max_vars(v, -0.37, 1.91, num_bits=8)\n"
        "np.save('y.npy', np.asarray(f(x)))\n"
        "np.save('g.npy', np.asarray(jax.grad(lambda v: f(v).sum())(x)))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "KERAS_BACKEND": "jax"}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    x = np.linspace(-1.5, 2.5, 4001, dtype=np.float32)
    y, g = np.load(tmp_path / "y.npy"), np.load(tmp_path / "g.npy")
    n_lo, n_hi, _ = nudged(-0.37, 1.91)
    assert_same_levels(y, x, -0.37, 1.91)
    np.testing.assert_array_equal(g[(x > n_lo + 1e-6) & (x < n_hi - 1e-6)], 1.0)
    np.testing.assert_array_equal(g[(x < n_lo - 1e-6) | (x > n_hi + 1e-6)], 0.0)


# ------------------------------------------------------------------ the QAT step


def qat_model(rank, premultiply, timesteps=12, features=5, units=16, seed=0, **options):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([
        keras.Input((timesteps, features)),
        zoo.SiRNN(units, qat="int8", state_clip=CLIP, state_quant_bits=8, rank=rank,
                  premultiply=premultiply, eta_init=0.2, **options),
        keras.layers.Dense(2)])
    cell = model.layers[0].cell
    rng = np.random.default_rng(seed)
    cell.bias.assign(rng.normal(scale=0.2, size=units).astype(np.float32))
    return model, cell


def sequences(n=48, timesteps=12, features=5, seed=1):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, timesteps, features)) + np.linspace(0, 1, features)).astype(
        np.float32)


@pytest.mark.parametrize("premultiply", [True, False])
@pytest.mark.parametrize("rank", [16, None])
def test_qat_step_equals_numpy_reference(rank, premultiply):
    """Step by step over real trajectories (the Keras state fed to both), the Keras QAT cell and
    the NumPy step agree on the state's int8 grid: a value that lands within float32 round-off of
    a rounding boundary may go to the neighbouring level, nothing else differs."""
    model, cell = qat_model(rank, premultiply, units=32)
    x = sequences()
    qat.track_ranges(model, x)
    h = np.zeros((len(x), 32), np.float32)
    deviation, moved = [], 0
    for t in range(x.shape[1]):
        h_keras = keras.ops.convert_to_numpy(cell(x[:, t], [h])[0])
        h_numpy = numpy_step(cell, x[:, t], h)
        deviation.append(np.abs(h_keras - h_numpy) / (CLIP / 255))
        moved += int(np.sum(h_keras != h))
        h = h_keras
    deviation = np.concatenate(deviation)
    assert moved > 0.2 * deviation.size  # the state really moves: a non-trivial comparison
    assert deviation.max() <= 1.0 + 1e-3, f"max deviation {deviation.max():.3f} grid steps"
    assert np.mean(deviation < 1e-3) >= 0.999, f"equal: {np.mean(deviation < 1e-3):.4f}"


def test_qat_state_is_on_its_grid_and_the_oracle_quantizes_every_point():
    """The oracle tells the quantized step from the float one (else the test above proves
    nothing): the float equations without the fake quantization miss the grid."""
    model, cell = qat_model(16, True, units=32)
    x = sequences()
    qat.track_ranges(model, x)
    h = np.zeros((len(x), 32), np.float32)
    for t in range(4):
        h = keras.ops.convert_to_numpy(cell(x[:, t], [h])[0])
    levels = h / (CLIP / 255)
    np.testing.assert_allclose(levels, np.round(levels), atol=1e-3)  # the state is on its grid
    record = {}
    numpy_step(cell, x[:, 4], h, record)
    assert set(record) == set(cell.quant_points.names)  # the oracle quantizes at every point


# ------------------------------------------------------------------ some points only (a diagnostic)

FIXED = ("h", "v0")  # the SiRNN's fixed grids: the state's and twice the state's


def test_only_the_fixed_points_is_the_float_cell_with_its_int8_state():
    """Inside ``only_points(cell, fixed, weights=False)`` the QAT model computes what the float
    model (no ``qat``, ``state_quant_bits=8``) with the same weights computes; outside, the
    QAT step again (the model's compiled predict function re-made each time)."""
    model, cell = qat_model(16, True)
    x = sequences()
    qat.track_ranges(model, x)
    keras.utils.set_random_seed(0)
    twin = keras.Sequential([keras.Input((12, 5)),
                             zoo.SiRNN(16, state_clip=CLIP, state_quant_bits=8, rank=16,
                                       premultiply=True),
                             keras.layers.Dense(2)])
    twin.set_weights([keras.ops.convert_to_numpy(w) for w in model.weights
                      if not w.path.endswith("qat_ranges")])
    quantized = model.predict(x, verbose=0)
    with qat.only_points(cell, FIXED, weights=False):
        model.make_predict_function(force=True)
        np.testing.assert_allclose(model.predict(x, verbose=0), twin.predict(x, verbose=0),
                                   atol=1e-5)
    model.make_predict_function(force=True)
    np.testing.assert_array_equal(model.predict(x, verbose=0), quantized)
    assert np.abs(quantized - twin.predict(x, verbose=0)).max() > 1e-3  # the points matter


@pytest.mark.parametrize("points,weights_on", [(FIXED + ("act0",), False),
                                              (FIXED + ("x", "uv0", "inc0"), True)])
def test_only_points_rounds_exactly_the_named_points(points, weights_on):
    model, cell = qat_model(16, True, units=32)
    x = sequences()
    qat.track_ranges(model, x)
    h = np.zeros((len(x), 32), np.float32)
    with qat.only_points(cell, points, weights_on):
        for t in range(6):
            h_keras = keras.ops.convert_to_numpy(cell(x[:, t], [h])[0])
            h_numpy = numpy_step(cell, x[:, t], h, points=points, weights_on=weights_on)
            assert np.mean(np.abs(h_keras - h_numpy) < 1e-5) >= 0.999
            h = h_keras
    assert cell.quant_points.enabled is None and cell.quant_points.weights  # restored


def test_only_points_refuses_a_point_the_cell_does_not_have():
    _, cell = qat_model(16, True)
    with pytest.raises(ValueError, match=r"no quantization point \['gate'\].*'act0'"):
        with qat.only_points(cell, ["x", "gate"], True):
            pass


# ------------------------------------------------------------------ range tracking


def test_observed_ranges_are_percentiles_of_the_observed_tensors():
    model, cell = qat_model(16, True)
    x = sequences(n=40)
    got = qat.observed_ranges(cell, x, percentile=99.0, batch=16)  # 3 batches, the last short
    # The input point sees the data itself: its range is the data's percentiles.
    flat = x.ravel()
    assert got["x"] == pytest.approx((np.percentile(flat, 1.0), np.percentile(flat, 99.0)),
                                     rel=1e-6)
    # Every point: the percentiles of what reaches it, recorded independently over all sequences.
    h = np.zeros((len(x), 16), np.float32)
    with qat.observing(cell) as record:
        for t in range(x.shape[1]):
            h = keras.ops.convert_to_numpy(cell(x[:, t], [h])[0])
    assert set(record) == set(got) == set(cell.quant_points.names)
    assert len(record["x"]) == x.shape[1] and len(record["h"]) == 2 * x.shape[1]  # h in, h out
    for name, arrays in record.items():
        values = np.concatenate([a.ravel() for a in arrays])
        want = (np.percentile(values, 1.0), np.percentile(values, 99.0))
        assert got[name] == pytest.approx(want, rel=1e-5, abs=1e-7), name


def test_track_ranges_is_an_ema_that_always_contains_zero():
    model, cell = qat_model(16, True)
    x = np.abs(sequences()) + 0.5  # positive inputs: their percentiles exclude 0
    qat.track_ranges(model, x)
    first = cell.quant_points.as_dict()
    assert first["x"][0] == 0.0 and first["x"][1] == pytest.approx(np.percentile(x, 99.99))
    assert first["h"] == (0.0, CLIP)
    cell.kernel.assign(cell.kernel * 1.7)  # the weights move, so do the ranges
    observed = qat.observed_ranges(cell, x)
    qat.track_ranges(model, x, momentum=0.25)
    second = cell.quant_points.as_dict()
    assert second["h"] == (0.0, CLIP)  # fixed, never tracked
    assert second["v0"] == first["v0"] == (0.0, 2 * CLIP)  # v = h + h: twice the state's range
    for name, (lo, hi) in observed.items():
        if name in ("h", "v0"):
            continue
        want = (0.25 * first[name][0] + 0.75 * min(lo, 0.0),
                0.25 * first[name][1] + 0.75 * max(hi, 0.0))
        assert second[name] == pytest.approx(want, rel=1e-6, abs=1e-7), name
        assert second[name][0] <= 0.0 <= second[name][1]
    assert second["drive"] != pytest.approx(first["drive"])  # the test saw a change


def float_step_ranges(cell, x, percentile):
    """Each tracked point's range in the NumPy float step over ``x`` (only the fixed grids
    rounded): its (100 - percentile)-th and percentile-th percentiles, zero kept inside."""
    record, h = {}, np.zeros((len(x), cell.units), np.float32)
    for t in range(x.shape[1]):
        h = numpy_step(cell, x[:, t], h, record, points=FIXED, weights_on=False)
    ranges = {}
    for name, arrays in record.items():
        if name not in FIXED:
            values = np.concatenate([a.ravel() for a in arrays])
            ranges[name] = (min(np.percentile(values, 100 - percentile), 0.0),
                            max(np.percentile(values, percentile), 0.0))
    return ranges


def test_calibrated_ranges_are_the_float_steps_percentiles_whatever_the_ranges_before():
    """`calibrate_ranges` observes the float step (only the fixed grids rounded): each range is
    the percentiles of that point's tensor in the NumPy float step, and it does not depend on
    the ranges held before, as `track_ranges`'s one pass does (its later points see their
    inputs through the upstream ranges)."""
    model, cell = qat_model(16, True, units=32)
    x = sequences()
    got = qat.calibrate_ranges(model, x)[cell.name]
    for name, want in float_step_ranges(cell, x, 99.99).items():
        assert got[name] == pytest.approx(want, rel=1e-4, abs=1e-6), name
    for name in FIXED:
        assert got[name] == cell.quant_points.fixed[name]
    cell.quant_points.set_ranges({n: (-0.01, 0.01) for n in cell.quant_points.names})
    assert qat.calibrate_ranges(model, x)[cell.name] == got
    cell.quant_points.set_ranges({n: (-0.01, 0.01) for n in cell.quant_points.names})
    tracked = qat.track_ranges(model, x)[cell.name]
    assert tracked["act0"][1] < 0.5 * got["act0"][1]  # seen through the clips upstream


def test_the_cells_qat_percentile_bounds_the_ranges_it_calibrates_tracks_and_saves(tmp_path):
    """With ``qat_percentile=p`` every tracked range is the (100 - p)-th and p-th percentile of
    the point's tensor in the NumPy float step (zero kept inside), when calibrated and when the
    epoch callback tracks them; the option survives the config and the .keras file."""
    model, cell = qat_model(16, True, units=32, qat_percentile=97.0)
    x = sequences()
    got = qat.calibrate_ranges(model, x)[cell.name]
    for name, want in float_step_ranges(cell, x, 97.0).items():
        assert got[name] == pytest.approx(want, rel=1e-4, abs=1e-6), name
    default = qat.observed_ranges(cell, x, percentile=qat.DEFAULT_PERCENTILE)["x"]
    assert default[1] > got["x"][1]  # the default spans more of the input's tail
    tracker = qat.RangeTracking(x, momentum=0.0)
    tracker.set_model(model)
    tracker.on_epoch_begin(0)
    assert cell.quant_points.as_dict()["x"] == pytest.approx(qat.observed_ranges(cell, x)["x"])
    assert cell.quant_points.as_dict()["x"][1] == pytest.approx(np.percentile(x, 97.0), rel=1e-5)
    model.save(tmp_path / "p97.keras")
    loaded = keras.saving.load_model(tmp_path / "p97.keras")
    assert loaded.layers[0].get_config()["qat_percentile"] == 97.0
    assert loaded.layers[0].cell.quant_points.percentile == 97.0


@pytest.mark.parametrize("value", [50, 100.5, "99", True])
def test_qat_percentile_is_checked(value):
    with pytest.raises(ValueError, match=r"qat_percentile must be a number in \(50, 100\]"):
        zoo.SiRNN(8, qat="int8", state_clip=1.0, state_quant_bits=8, qat_percentile=value)
    with pytest.raises(ValueError, match="qat_percentile"):
        zoo.GRU(8, qat="int8", qat_percentile=value)


def test_a_qat_gru_takes_its_percentile_to_its_cell():
    layer = zoo.GRU(8, qat="int8", qat_percentile=99.5)
    layer(np.zeros((2, 3, 4), np.float32))
    assert layer.cell.quant_points.percentile == 99.5
    assert layer.get_config()["qat_percentile"] == 99.5
    assert zoo.GRU.from_config(layer.get_config()).cell.qat_percentile == 99.5


def test_range_tracking_updates_once_per_epoch_and_training_leaves_ranges_alone(monkeypatch):
    model, cell = qat_model(4, False, timesteps=6)
    x, y = sequences(n=64, timesteps=6), np.random.default_rng(2).integers(0, 2, 64)
    model.compile(optimizer=keras.optimizers.Adam(0.05),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = cell.quant_points.as_dict()
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)  # 4 batches, no tracking
    assert cell.quant_points.as_dict() == before  # tracked, never learned

    calls = []
    real = qat.track_ranges
    monkeypatch.setattr(qat, "track_ranges",
                        lambda *a, **k: calls.append((a[2:], k)) or real(*a, **k))

    class Spy(keras.callbacks.Callback):
        seen = []

        def on_epoch_begin(self, epoch, logs=None):
            self.seen.append(("begin", epoch, cell.quant_points.as_dict()))

        def on_epoch_end(self, epoch, logs=None):
            self.seen.append(("end", epoch, cell.quant_points.as_dict()))

    model.fit(x, y, epochs=3, batch_size=16, verbose=0,
              callbacks=[qat.RangeTracking(x[:32], momentum=0.5), Spy()])
    assert len(calls) == 3 and all(a == (0.5, None) for a, _ in calls)  # None: the cell's own
    begins = [r for kind, _, r in Spy.seen if kind == "begin"]
    ends = [r for kind, _, r in Spy.seen if kind == "end"]
    assert begins == ends  # nothing changes them within an epoch
    assert begins[0] != before and begins[1] != begins[0]
    with pytest.raises(ValueError, match="momentum"):
        qat.RangeTracking(x, momentum=1.0)


def test_state_point_keeps_its_fixed_range():
    cell = _point_cell({"h": (-3.0, 5.0), "x": (-2.0, 2.0)})
    ranges = cell.quant_points.as_dict()
    assert ranges["h"] == (0.0, CLIP) and ranges["x"] == (-2.0, 2.0)


# ------------------------------------------------------------------ options and saving


@pytest.mark.parametrize("options,says", [
    ({}, "state_clip"),
    ({"state_clip": 1.0}, "state_quant_bits=8"),
    ({"state_clip": 1.0, "state_quant_bits": 4}, "state_quant_bits=8"),
    ({"state_clip": 1.0, "state_quant_bits": 8, "eta_timesteps": 16}, "eta_timesteps"),
])
def test_qat_needs_the_int8_state_and_shared_etas(options, says):
    with pytest.raises(ValueError, match=says):
        zoo.SiRNN(8, qat="int8", **options)


def test_qat_mode_is_checked():
    with pytest.raises(ValueError, match="qat must be None or one of"):
        zoo.SiRNN(8, qat="int4", state_clip=1.0, state_quant_bits=8)


def test_config_round_trip_and_keras_file_keep_qat_and_ranges(tmp_path):
    model, cell = qat_model(16, True)
    x = sequences()
    qat.track_ranges(model, x)
    config = model.layers[0].get_config()
    assert config["qat"] == "int8" and config["qat_weights"] is True
    again = zoo.SiRNN.from_config(config)
    assert again.cell.qat == "int8" and again.get_config() == config
    path = tmp_path / "qat.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.layers[0].cell.quant_points.as_dict() == cell.quant_points.as_dict()
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_bias_is_on_the_converters_int32_grid_straight_through_and_only_when_asked():
    """`QuantPoints.bias`: round(b / (s_x s_w)) s_x s_w with s_x the input point's scale and
    s_w = max|w| / 127 (NumPy, `int32_bias`), gradient 1; idempotent; the float bias when the
    weights are not quantized (the export's copy: the converter rounds it) or without
    ``bias_grid``."""
    cell = _point_cell({"x": (-0.37, 1.91)})
    points = cell.quant_points
    rng = np.random.default_rng(3)
    w = tf.constant(rng.normal(scale=0.3, size=(5, 16)).astype(np.float32))
    b = tf.Variable(rng.normal(scale=0.2, size=16).astype(np.float32))
    points.bias_grid = True
    with tf.GradientTape() as tape:
        got = points.bias(b, "x", w)
        loss = tf.reduce_sum(got * tf.range(16, dtype=tf.float32))
    want = int32_bias(b.numpy(), points.as_dict()["x"], w.numpy())
    # float32 round-off (1e-7 here) against a grid step of 6e-5
    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=1e-7)
    assert np.abs(got.numpy() - b.numpy()).max() > 1e-6  # it does round
    np.testing.assert_array_equal(tape.gradient(loss, b).numpy(), np.arange(16))
    np.testing.assert_allclose(points.bias(got, "x", w).numpy(), got.numpy(), rtol=0, atol=1e-7)
    points.bias_grid, points.weights = True, False
    assert points.bias(b, "x", w) is b
    points.bias_grid, points.weights = False, True
    assert points.bias(b, "x", w) is b


def test_a_qat_model_saved_before_qat_bias_keeps_its_float_bias():
    """New QAT cells round their biases (``qat_bias`` True, in their config); a QAT config
    without the key (every model saved before it, e.g. the shipped sirnn.har2_gen3) loads with
    False, so it computes as it was trained and its card's figures hold."""
    model, cell = qat_model(16, True)
    config = model.layers[0].get_config()
    assert config["qat_bias"] is True and cell.quant_points.bias_grid is True
    old = {k: v for k, v in config.items() if k != "qat_bias"}
    assert zoo.SiRNN.from_config(old).cell.qat_bias is False
    gru_config = zoo.GRU(8, qat="int8").get_config()
    assert gru_config["qat_bias"] is True
    assert zoo.GRU.from_config({k: v for k, v in gru_config.items() if k != "qat_bias"}).qat_bias \
        is False
    from zoo.layers import recurrent_layers
    from zoo.pretrained import archive_root, load_pretrained

    shipped = load_pretrained("sirnn.har2_gen3", normalize=False, root=archive_root())
    assert [layer.cell.qat_bias for layer in recurrent_layers(shipped)] == [False]


def test_float_model_config_has_no_qat_keys():
    config = zoo.SiRNN(8, state_clip=1.0, state_quant_bits=8).get_config()
    assert "qat" not in config and "qat_weights" not in config
    cell = zoo.IRNNCell(8)
    cell.build((None, 3))
    assert cell.quant_points is None and not any("qat" in w.path for w in cell.weights)


# ------------------------------------------------------------------ the GRU baseline (zoo.GRU)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_keras_gru_step(cell, x_t, h_prev, record=None):
    """One Keras GRU step (reset_after) written from the equations, each tensor the int8 step
    holds fake-quantized at the cell's ranges, the weights on their int8 grid."""
    ranges = cell.quant_points.as_dict()
    w = {v.path.rsplit("/", 1)[-1]: keras.ops.convert_to_numpy(v) for v in cell.weights}
    d = cell.units

    def fq(name, value):
        if record is not None:
            record.setdefault(name, []).append(value)
        return fake_quant(value, *ranges[name])

    def bias(b, point, kernel):  # on the converter's int32 grid with qat_bias
        return int32_bias(b, ranges[point], kernel) if cell.qat_bias else b

    x, h = fq("x", x_t), fq("h", h_prev)
    wx = fq("wx", x @ int8_weight(w["kernel"]) + bias(w["bias"][0], "x", w["kernel"]))
    uh = fq("uh", h @ int8_weight(w["recurrent_kernel"])
            + bias(w["bias"][1], "h", w["recurrent_kernel"]))
    z = fq("z", sigmoid(fq("z_pre", wx[:, :d] + uh[:, :d])))
    r = fq("r", sigmoid(fq("r_pre", wx[:, d:2 * d] + uh[:, d:2 * d])))
    cand = fq("cand", np.tanh(fq("cand_pre", wx[:, 2 * d:] + fq("r_uh", r * uh[:, 2 * d:]))))
    return fq("h", fq("zh", z * h) + fq("prod", fq("one_minus_z", 1.0 - z) * cand))


def numpy_lean_gru_step(cell, x_t, h_prev, record=None):
    """The lean step (``step_graph="lean"``) from its equations: four products on the kernels'
    column blocks, each block on its own int8 grid, one sum and one sigmoid for both gates,
    ``h~ + z (h - h~)``; every tensor fake-quantized at the cell's ranges."""
    ranges = cell.quant_points.as_dict()
    w = {v.path.rsplit("/", 1)[-1]: keras.ops.convert_to_numpy(v) for v in cell.weights}
    d, (bx, bh) = cell.units, w["bias"]

    def fq(name, value):
        if record is not None:
            record.setdefault(name, []).append(value)
        return fake_quant(value, *ranges[name])

    def product(v, point, kernel, bias, cols):
        b = int32_bias(bias[cols], ranges[point], kernel[:, cols]) if cell.qat_bias else bias[cols]
        return v @ int8_weight(kernel[:, cols]) + b

    zr_cols, h_cols = slice(0, 2 * d), slice(2 * d, 3 * d)
    x, h = fq("x", x_t), fq("h", h_prev)
    wx_zr, wx_h = (fq(f"wx_{n}", product(x, "x", w["kernel"], bx, c))
                   for n, c in (("zr", zr_cols), ("h", h_cols)))
    uh_zr, uh_h = (fq(f"uh_{n}", product(h, "h", w["recurrent_kernel"], bh, c))
                   for n, c in (("zr", zr_cols), ("h", h_cols)))
    zr = fq("zr", sigmoid(fq("zr_pre", wx_zr + uh_zr)))
    z, r = zr[:, :d], zr[:, d:]
    cand = fq("cand", np.tanh(fq("cand_pre", wx_h + fq("r_uh", r * uh_h))))
    return fq("h", cand + fq("z_diff", z * fq("diff", h - cand)))


def gru_model(qat_mode, units=16, timesteps=12, features=5, seed=0, step_graph="keras"):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((timesteps, features)),
                              zoo.GRU(units, qat=qat_mode, step_graph=step_graph),
                              keras.layers.Dense(2)])
    return model, model.layers[0].cell


def test_float_gru_is_keras_gru():
    """Without qat, zoo.GRU is Keras's GRU: its cell, and the same outputs for the same weights
    (the registry's "gru" builds it)."""
    model, cell = gru_model(None)
    assert type(cell) is keras.layers.GRUCell and "qat" not in model.layers[0].get_config()
    reference = keras.Sequential([keras.Input((12, 5)), keras.layers.GRU(16),
                                  keras.layers.Dense(2)])
    reference.set_weights(model.get_weights())
    x = sequences()
    np.testing.assert_array_equal(model.predict(x, verbose=0), reference.predict(x, verbose=0))
    assert type(zoo.create_model("gru", (12, 5), 2).layers[1]) is zoo.GRU


@pytest.mark.parametrize("step_graph", ["keras", "lean"])
def test_qat_gru_step_equals_numpy_reference(step_graph):
    """As the SiRNN test above: the Keras QAT GRU cell and the NumPy step agree on the state's
    grid step by step, up to a level where a value lies within round-off of a boundary."""
    numpy_gru_step = {"keras": numpy_keras_gru_step, "lean": numpy_lean_gru_step}[step_graph]
    model, cell = gru_model("int8", units=32, step_graph=step_graph)
    x = sequences()
    qat.track_ranges(model, x)
    h = np.zeros((len(x), 32), np.float32)
    lo, hi = cell.quant_points.as_dict()["h"]
    step = nudged(lo, hi)[2]
    deviation, moved, record = [], 0, {}
    for t in range(x.shape[1]):
        h_keras = keras.ops.convert_to_numpy(cell(x[:, t], [h])[0])
        deviation.append(np.abs(h_keras - numpy_gru_step(cell, x[:, t], h, record)) / step)
        moved += int(np.sum(h_keras != h))
        h = h_keras
    deviation = np.concatenate(deviation)
    assert set(record) == set(cell.quant_points.names)  # the oracle quantizes at every point
    assert moved > 0.2 * deviation.size
    assert deviation.max() <= 1.0 + 1e-3, f"max deviation {deviation.max():.3f} grid steps"
    assert np.mean(deviation < 1e-3) >= 0.999, f"equal: {np.mean(deviation < 1e-3):.4f}"
    # and the float GRU is not that step: the quantization is really applied
    float_h = keras.ops.convert_to_numpy(keras.layers.GRUCell.call(cell, x[:, 0], [h * 0])[0])
    assert np.abs(float_h - numpy_gru_step(cell, x[:, 0], h * 0)).max() > step / 4


def test_lean_gru_is_the_keras_gru_in_float():
    """``step_graph="lean"`` changes the graph, not the function: with Keras GRU's weights it
    gives Keras GRU's outputs (up to float rounding), and its config round-trips."""
    model, _ = gru_model(None)
    lean, cell = gru_model(None, step_graph="lean")
    assert type(cell) is zoo.GRUCell and cell.step_graph == "lean"
    lean.set_weights(model.get_weights())
    x = sequences()
    np.testing.assert_allclose(lean.predict(x, verbose=0), model.predict(x, verbose=0),
                               atol=1e-5)
    config = lean.layers[0].get_config()
    assert config["step_graph"] == "lean" and zoo.GRU.from_config(config).cell.step_graph == "lean"
    with pytest.raises(ValueError, match="step_graph must be one of"):
        zoo.GRU(8, step_graph="fused")
    with pytest.raises(ValueError, match="reset_after"):
        zoo.GRU(8, step_graph="lean", reset_after=False)


def test_qat_gru_gates_are_on_tflite_fixed_grids_and_options_are_checked(tmp_path):
    model, cell = gru_model("int8")
    ranges = cell.quant_points.as_dict()
    assert ranges["z"] == ranges["r"] == (0.0, 255 / 256) and ranges["cand"] == (-1.0, 127 / 128)
    for options, says in (({"reset_after": False}, "reset_after"), ({"dropout": 0.1}, "dropout"),
                          ({"activation": "relu"}, "activation")):
        with pytest.raises(ValueError, match=says):
            zoo.GRU(8, qat="int8", **options)
    qat.track_ranges(model, sequences())
    path = tmp_path / "gru.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.layers[0].cell.quant_points.as_dict() == cell.quant_points.as_dict()
    x = sequences()
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
