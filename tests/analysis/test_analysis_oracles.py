"""`zoo.experiments.analysis` against independent computations: central finite differences (float64),
a NumPy re-implementation of the iRNN recursion, and hand-built linear RNNs whose contraction
constant, gradients through time, truncation error and memory curve are known in closed form."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo
from zoo.experiments.analysis import gradients, memory, stability, truncation
from zoo.experiments.analysis.report import analyze_model
from zoo.experiments.analysis.stepper import CellStepper, flatten_steps

T, d, D = 6, 3, 6

# Every registered recurrent model, small; low-rank iRNNs need rank <= units.
RNN_MODELS = [n for n in zoo.list_models()
              if issubclass(zoo.get_model_entry(n).layer_class, keras.layers.RNN)]
SMALL = {"irnn": {"rank": 2, "k": 3}, "sirnn": {"rank": 2}, "diagonal_rnn": {"rho_w": 1.0}}


def float64_model(name, units=D, steps=T, classes=2, **opts):
    layer = zoo.create_layer(name, units=units, dtype="float64", **{**SMALL.get(name, {}), **opts})
    inputs = keras.Input((steps, d), dtype="float64")
    outputs = keras.layers.Dense(classes, dtype="float64", name="head")(layer(inputs))
    model = keras.Model(inputs, outputs)
    rng = np.random.default_rng(7)
    for w in model.weights:  # away from the initial point; step sizes and scalars kept sane
        scale = 0.1 if w.name.startswith("eta") else 0.4
        w.assign(np.asarray(w) + rng.normal(0, scale, size=w.shape))
    return model


def step_fn(stepper, x, template):
    def f(s):
        _, new = stepper.step(tf.constant(x), stepper.unpack(tf.constant(s), template))
        return np.asarray(stepper.pack(new), dtype=np.float64)
    return f


def central_jacobian(f, s, eps=1e-6):
    cols = []
    for j in range(s.shape[1]):
        e = np.zeros_like(s)
        e[:, j] = eps
        cols.append((f(s + e) - f(s - e)) / (2 * eps))
    return np.stack(cols, axis=-1)


@pytest.mark.slow
@pytest.mark.parametrize("name", RNN_MODELS)
def test_step_jacobians_match_finite_differences_and_analysis_runs(name):
    model = float64_model(name)
    stepper = CellStepper(model)
    x = np.random.default_rng(1).normal(size=(4, T, d))
    traj = stepper.trajectory(x)
    x_rows, state_rows = flatten_steps(traj, x)
    j_state, j_input = stepper.jacobians(x_rows, state_rows)
    rows = [1, 7, 13, 22]  # several sequences and steps, none at the zero initial state
    template = [tf.constant(s[rows]) for s in state_rows]
    s0 = np.asarray(stepper.pack(template))
    want = central_jacobian(step_fn(stepper, x_rows[rows], template), s0)
    assert np.abs(want).max() > 0.05  # a non-trivial Jacobian
    np.testing.assert_allclose(j_state[rows], want, atol=1e-7)

    def of_x(xs):
        _, new = stepper.step(tf.constant(xs), template)
        return np.asarray(stepper.pack(new))
    np.testing.assert_allclose(j_input[rows], central_jacobian(of_x, x_rows[rows]), atol=1e-7)

    result = analyze_model(model, x.astype("float32"), np.array([0, 1, 0, 1]),
                           jacobian_sequences=4, folds=2)
    c = result["stability"]["contraction"]
    assert c["max"] == pytest.approx(np.linalg.norm(j_state, 2, axis=(1, 2)).max())
    assert c["mean"] <= c["p95"] <= c["max"]
    assert len(result["memory"]["r2_by_lag"]) == T
    assert result["truncation"]["k"][-1] == T and result["truncation"]["state_gap_max"][-1] < 1e-9


@pytest.mark.parametrize("name", ["lstm"])  # the two-state cell; every cell is in the test above
def test_gradient_through_time_and_input_sensitivity_match_finite_differences(name):
    model = float64_model(name)
    stepper = CellStepper(model)
    x = np.random.default_rng(2).normal(size=(2, T, d))
    traj = stepper.trajectory(x)
    x_rows, state_rows = flatten_steps(traj, x)
    j_state, _ = stepper.jacobians(x_rows, state_rows)
    curve = gradients.state_gradient_curve(j_state.reshape(2, T, *j_state.shape[1:]))

    def final_from(s1):  # s_T as a function of the state after step 1
        states = stepper.unpack(tf.constant(s1), [tf.constant(s) for s in traj[1]])
        for t in range(1, T):
            _, states = stepper.step(tf.constant(x[:, t]), states)
        return np.asarray(stepper.pack(states))

    fd = central_jacobian(final_from, np.asarray(stepper.pack(traj[1])))
    np.testing.assert_allclose(curve[:, -1], np.linalg.norm(fd, 2, axis=(1, 2)), rtol=1e-6)

    sens = gradients.input_sensitivity(stepper, x)  # (2, T) by lag
    for lag in (1, 3, T):
        t = T - lag
        cols = []
        for j in range(d):
            e = np.zeros_like(x)
            e[:, t, j] = 1e-6
            cols.append((stepper.logits(x + e) - stepper.logits(x - e)) / 2e-6)
        want = np.sqrt(sum((c ** 2).sum(axis=1) for c in cols))
        np.testing.assert_allclose(sens[:, lag - 1], want, rtol=1e-5)


def linear_rnn(a, steps, d_in, units, rng, classes=2):
    """``h_t = a Q h_{t-1} + B x_t`` (Q orthogonal, no bias) as a Keras SimpleRNN: every step
    Jacobian is a Q, with spectral norm exactly a."""
    model = zoo.create_model("simple_rnn", (steps, d_in), classes, units=units,
                             activation="linear", use_bias=False)
    q, _ = np.linalg.qr(rng.normal(size=(units, units)))
    b = rng.normal(0, 0.5, size=(units, d_in))
    rnn = model.layers[1]
    rnn.cell.kernel.assign(b.T)
    rnn.cell.recurrent_kernel.assign((a * q).T)
    return model, a * q, b


def np_states(A, B, x):
    h, out = np.zeros((len(x), A.shape[0])), []
    for t in range(x.shape[1]):
        h = h @ A.T + x[:, t] @ B.T
        out.append(h)
    return np.stack(out, 1)


def test_linear_rnn_contraction_gradients_and_truncation_in_closed_form():
    rng = np.random.default_rng(3)
    a, steps = 0.8, 20
    model, A, B = linear_rnn(a, steps, d, D, rng)
    x = rng.normal(size=(40, steps, d)).astype("float32")
    y = rng.integers(0, 2, 40)
    result = analyze_model(model, x, y, jacobian_sequences=4, folds=2)
    c = result["stability"]["contraction"]
    assert c["max"] == pytest.approx(a, abs=1e-5) and c["mean"] == pytest.approx(a, abs=1e-5)
    assert c["regime"] == "contractive"
    assert result["stability"]["recurrence"]["sigma_max"] == pytest.approx(a, abs=1e-5)
    lags = np.arange(1, steps)
    np.testing.assert_allclose(result["gradients"]["curve_mean_by_lag"], a ** lags, rtol=1e-4)

    tr = result["truncation"]
    h = np_states(A, B, x.astype(np.float64))
    for k, gap in zip(tr["k"], tr["state_gap_max"]):
        # h_T - h_T^k = A^k h_{T-k}, and A^k = a^k Q^k is a^k times an isometry
        want = 0.0 if k == steps else a ** k * np.linalg.norm(h[:, steps - k - 1], axis=1).max()
        assert gap == pytest.approx(want, rel=1e-4, abs=1e-5)
    assert tr["L_x"] == pytest.approx(np.linalg.norm(B, 2), rel=1e-5)
    assert tr["B_x"] == pytest.approx(np.linalg.norm(x, axis=-1).max(), rel=1e-6)
    assert all(gap <= bound for gap, bound in zip(tr["state_gap_max"], tr["lemma1_bound"]))
    # Prop. 1: at k(eps) the logits of the truncated model are within eps of the full model's.
    head = model.get_layer("head").kernel.numpy().astype(np.float64)
    for eps, k in tr["k_eps"].items():
        if k is not None and k <= steps:
            gap = np_states(A, B, x[:, steps - k:].astype(np.float64))[:, -1] - h[:, -1]
            assert np.linalg.norm(gap @ head, axis=1).max() <= float(eps)
    assert tr["k_eps"]["0.01"] == truncation.window_bound(
        a, np.linalg.norm(head, 2), np.linalg.norm(B, 2) * tr["B_x"] / (1 - a), 0.01)


def test_memory_probe_recovers_the_closed_form_curve():
    """Scalar ``h_t = a h_{t-1} + x_t`` with i.i.d. N(0, 1) inputs: the best linear predictor of
    x_{T-l+1} from h_T has R^2 = a^(2(l-1)) (1 - a^2) / (1 - a^(2T))."""
    rng = np.random.default_rng(4)
    a, steps, n = 0.7, 25, 20000
    x = rng.normal(size=(n, steps, 1))
    h = np_states(np.array([[a]]), np.array([[1.0]]), x)[:, -1]
    r2 = memory.memory_curve(h, x, ridge=1e-6)
    lags = np.arange(1, steps + 1)
    want = a ** (2 * (lags - 1)) * (1 - a ** 2) / (1 - a ** (2 * steps))
    # The sampling error of R^2 is about 2 rho (1 - rho^2) / sqrt(n) = 0.005 at lag 1: 4 sigma.
    np.testing.assert_allclose(r2, want, atol=0.02)


def test_memory_probe_of_a_shift_register_through_the_model():
    """A linear shift register of D slots holds exactly the last D inputs: R^2 = 1 for lags
    1..D and 0 beyond (this also pins the lag convention: lag 1 is the last input)."""
    rng = np.random.default_rng(5)
    units, steps = 4, 10
    model = zoo.create_model("simple_rnn", (steps, 1), 2, units=units, activation="linear",
                             use_bias=False)
    shift = np.eye(units, k=-1)  # slot i+1 <- slot i
    model.layers[1].cell.recurrent_kernel.assign(shift.T)
    model.layers[1].cell.kernel.assign(np.eye(units)[:1])  # x_t -> slot 0
    x = rng.normal(size=(1000, steps, 1)).astype("float32")
    r2 = analyze_model(model, x, rng.integers(0, 2, 1000), jacobian_sequences=2,
                       ridge=1e-6)["memory"]["r2_by_lag"]
    np.testing.assert_allclose(r2[:units], 1.0, atol=1e-4)
    np.testing.assert_allclose(r2[units:], 0.0, atol=0.03)


def test_irnn_equilibrium_checks_match_numpy():
    """Residuals ||F(g_k)|| of a NumPy iRNN recursion (004 Eq. 5), the eigenvalues of
    tanh'(.) U - alpha I, and Prop. 2's factor bounding the measured contraction."""
    from zoo.experiments.analysis.equilibrium import irnn_report

    rng = np.random.default_rng(6)
    alpha, eta, k = 1.0, 0.5, 3
    layer = zoo.IRNN(D, k=k, rank=None, activation="tanh", eta_init=eta)
    layer.build((None, T, d))
    cell = layer.cell
    u = rng.normal(size=(D, D))
    u *= 0.5 / np.linalg.norm(u, 2)  # ||U|| = 0.5 < alpha
    cell.recurrent_kernel.assign(u.T)
    cell.kernel.assign(rng.normal(0, 0.5, size=(d, D)))
    cell.bias.assign(rng.normal(0, 0.3, size=D))
    W, b = np.asarray(cell.kernel, np.float64).T, np.asarray(cell.bias, np.float64)
    U = np.asarray(cell.recurrent_kernel, np.float64).T
    x = rng.normal(size=(50, d))
    h = rng.normal(0, 0.7, size=(50, D))

    def F(g):
        v = g + h
        return np.tanh(v @ U.T + x @ W.T + b) - alpha * v

    g, want = h.copy(), []
    for _ in range(k + 10):
        want.append(np.linalg.norm(F(g), axis=1).mean())
        g = g + eta * F(g)
    want.append(np.linalg.norm(F(g), axis=1).mean())
    rep = irnn_report(cell, x.astype("float32"), [h.astype("float32")], extra_recursions=10)
    np.testing.assert_allclose(rep["residual_by_recursion"], want, rtol=1e-5)

    g_k = h.copy()
    for _ in range(k):
        g_k = g_k + eta * F(g_k)
    pre = (g_k + h) @ U.T + x @ W.T + b
    eig = np.linalg.eigvals((1 - np.tanh(pre) ** 2)[:, :, None] * U[None] - alpha * np.eye(D))
    assert rep["eigen_max_real"] == pytest.approx(eig.real.max(), abs=1e-5)
    assert rep["eigen_all_negative_fraction"] == 1.0
    bound = 1 - alpha * eta + eta * 0.5
    for local in rep["local_contraction"]:
        assert local["prop2_bound"] == pytest.approx(bound, rel=1e-5)
        assert local["max"] <= bound + 1e-6
    assert rep["measured_rate"] <= bound


def test_memory_factor_closed_forms_and_regime():
    for z, steps in ((0.5, 10), (0.9, 128), (1.3, 30)):
        mf = stability.memory_factor(z, steps)
        assert mf["mu0"] == pytest.approx((1 - z ** steps) / (1 - z), rel=1e-10)
        mu1 = (1 - (steps + 1) * z ** steps + steps * z ** (steps + 1)) / (1 - z) ** 2
        assert mf["mu1"] == pytest.approx(mu1, rel=1e-10)
        assert mf["exploding"] == (z >= 1)
    assert stability.memory_factor(1.0, 7)["mu0"] == 7
    assert [stability.regime(v, 0.01) for v in (0.98, 1.005, 1.02)] == [
        "contractive", "boundary", "unstable"]


def _numpy_recurrence(cell) -> np.ndarray | None:
    """The recurrence matrix in math orientation, rebuilt in NumPy from the cell's raw weights."""
    from zoo.antisymmetric import AntisymmetricRNNCell
    from zoo.diagonal import DiagonalRNNCell
    from zoo.fastrnn import FastCellBase
    from zoo.irnn import IRNNCell

    w = lambda v: np.asarray(v, dtype=np.float64)  # noqa: E731
    if isinstance(cell, DiagonalRNNCell):
        return np.diag(w(cell.recurrent_kernel))
    if isinstance(cell, IRNNCell):
        if cell.rank is None:
            return w(cell.recurrent_kernel).T
        return (float(cell.alpha_value()) * np.eye(cell.units)
                + w(cell.recurrent_v) @ w(cell.recurrent_h)).T
    if isinstance(cell, AntisymmetricRNNCell):
        k = w(cell.recurrent_kernel)
        return (k - k.T - cell.gamma * np.eye(cell.units)).T
    if isinstance(cell, FastCellBase):
        return np.linalg.multi_dot([np.eye(cell.units), *map(w, cell.recurrent_kernels)]).T
    if hasattr(cell, "recurrent_kernel") and not isinstance(
            cell, (keras.layers.GRUCell, keras.layers.LSTMCell)):
        return w(cell.recurrent_kernel).T  # tanh RNNs: SimpleRNN, StableRNN
    return None


@pytest.mark.parametrize("name", [n for n in zoo.list_models() if n != "dscnn"])
def test_recurrence_matrix_is_the_cells_weights_in_math_orientation(name):
    from zoo.experiments.analysis.stability import recurrence_matrix
    from zoo.layers import recurrent_layers

    options = {"rank": 3} if name in ("irnn", "sirnn") else {}
    model = zoo.create_model(name, (6, 4), 3, units=6, **options)
    rng = np.random.default_rng(0)
    for weight in model.weights:  # random weights: no initialiser symmetry can hide a transpose
        weight.assign(rng.normal(size=weight.shape).astype("float32"))
    cell = recurrent_layers(model)[0].cell
    matrix, note = recurrence_matrix(cell)
    expected = _numpy_recurrence(cell)
    if expected is None:
        assert matrix is None and "gated" in note
    else:
        np.testing.assert_allclose(matrix, expected, rtol=1e-6, atol=1e-6)
