"""The cells' theoretical properties, checked against independent truth.

- iRNN (004 Sec. 3): Theorem 1 (identity gradient over T = 200 steps, where SimpleRNN's vanishes),
  the per-step limit dh_m/dh_{m-1} -> -I (+I with state_sign = -1) at the geometric rate of the
  contraction, Proposition 2 against a fixed point from ``scipy.optimize.fsolve``, and the
  equilibrium manifold alpha (h_m + s h_{m-1}) = phi(U (h_m + s h_{m-1}) + W x_m + b).
- StableRNN (000 Sec. 7.2): ||W||_2 <= lambda at initialisation and after training with a learning
  rate at which the same model without the constraint leaves the ball.
- AntisymmetricRNN: A + A^T = -2 gamma I, and the state Jacobian from autodiff equals
  I + eps diag(tanh') A, so at tanh' = 1 its spectrum is 1 + eps (i omega - gamma).
- Parameter budgets of 004 (HAR-2 <= 4.5k, Google-30 <= 9k) and the analytic counts of
  ``shared/REFERENCE.md`` against ``count_params()``.

Gradients come from ``tf.GradientTape`` on the Keras layers (those tests need the TensorFlow
backend; the others run on any backend). The iRNN checks run the cells in float64 so that rates
are measured far below float32 round-off.
"""

import keras
import numpy as np
import pytest

import zoo

# The autodiff checks use tf.GradientTape; the rest run on any Keras backend.
needs_tf = pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                              reason="autodiff checks use tf.GradientTape")
tf = pytest.importorskip("tensorflow")


def _float64_available():
    if keras.backend.backend() != "jax":
        return True
    import jax
    return bool(jax.config.jax_enable_x64)


# Rates are measured down to ~1e-7 and equilibria to 1e-9: float32 would only measure round-off.
needs_float64 = pytest.mark.skipif(not _float64_available(),
                                   reason="JAX runs float64 as float32 unless jax_enable_x64")
fsolve = pytest.importorskip("scipy.optimize").fsolve

F64 = "float64"


def relu(x):
    return np.maximum(x, 0.0)


def spectral_norm(m):
    return float(np.linalg.norm(np.asarray(m, dtype=np.float64), 2))


def np_weights(layer):
    return {w.name: np.asarray(keras.ops.convert_to_numpy(w), dtype=np.float64)
            for w in layer.weights}


def irnn_cell(rng, D, d, k, eta, u_norm, alpha=1.0, **opts):
    """A float64 full-rank IRNNCell with ||U||_2 = u_norm exactly, W, b ~ N(0, 0.3^2), and the
    step sizes set directly (a raw eta, so that tests can also set a step to exactly 0)."""
    cell = zoo.IRNNCell(D, k=k, alpha=alpha, dtype=F64, eta_parametrization="raw", **opts)
    cell.build((None, d))
    U = rng.normal(size=(D, D))
    cell.recurrent_kernel.assign(u_norm * U / spectral_norm(U))
    cell.kernel.assign(rng.normal(0.0, 0.3, size=(d, D)))
    cell.bias.assign(rng.normal(0.0, 0.3, size=(D,)))
    cell.eta.assign(np.broadcast_to(eta, (k,)))
    return cell


def equilibrium(W, U, b, alpha, x, nu):
    """The unique mu with alpha (mu + nu) = relu(U (mu + nu) + W x + b) (004 Sec. 3.1, M_eq),
    found by ``scipy.optimize.fsolve``; math orientation, single vectors."""
    def residual(mu):
        return relu(U @ (mu + nu) + W @ x + b) - alpha * (mu + nu)

    def jac(mu):  # analytic, so that MINPACK's Newton steps do not straddle the ReLU kinks
        return (U @ (mu + nu) + W @ x + b > 0)[:, None] * U - alpha * np.eye(len(nu))

    # MINPACK may report "not making progress" once it sits at round-off: judge the residual.
    mu, *_ = fsolve(residual, np.zeros_like(nu), fprime=jac, xtol=1e-13, full_output=True)
    assert np.max(np.abs(residual(mu))) < 1e-12
    return mu


# ---------------------------------------------------------------------------------------------
# iRNN Theorem 1: identity gradient over long horizons


def cell_jacobian(cell, x, h):
    """d h_m / d h_{m-1} of one cell step (single vectors), by the same one-backward-pass trick
    as `jacobian_of_final_state`."""
    D = h.shape[-1]
    hs = tf.constant(np.repeat(h[None], D, axis=0), dtype=cell.dtype)
    with tf.GradientTape() as tape:
        tape.watch(hs)
        out, _ = cell(tf.constant(np.repeat(x[None], D, axis=0), dtype=cell.dtype), [hs])
        diag = tf.linalg.diag_part(out)
    return tape.gradient(diag, hs).numpy()


def jacobian_of_final_state(layer, x, h0):
    """d h_T / d h_0 of ``layer`` (returning h_T) from an explicit initial state, via one backward
    pass: the batch holds D copies of the same sequence, and row i of the gradient of
    ``sum_i h_T[i, i]`` with respect to the batch of initial states is row i of the Jacobian."""
    D = h0.shape[-1]
    xs = tf.constant(np.repeat(x[None], D, axis=0), dtype=layer.dtype)
    h0s = tf.constant(np.repeat(h0[None], D, axis=0), dtype=layer.dtype)

    @tf.function
    def grad(h0s):
        with tf.GradientTape() as tape:
            tape.watch(h0s)
            diag = tf.linalg.diag_part(layer(xs, initial_state=[h0s]))
        return tape.gradient(diag, h0s)

    return np.asarray(grad(h0s), dtype=np.float64)


@needs_tf
def test_irnn_identity_gradient_over_200_steps_where_simple_rnn_vanishes():
    """Theorem 1 / Eq. 8: with K large and ||U|| < alpha, ||dh_T/dh_0|| = 1 for T = 200.

    Comparison: a Keras SimpleRNN (tanh) of the same size on the same inputs and initial state,
    with Keras's default initialisation (glorot_uniform W, *orthogonal* recurrent matrix, i.e.
    ||U|| = 1, the most gradient-friendly standard init; the iRNN's ||U|| = 0.4 would make the
    SimpleRNN product vanish even faster). The SimpleRNN Jacobian collapses below 1e-3.
    """
    rng = np.random.default_rng(0)
    D, d, T, K = 8, 3, 200, 20
    x = rng.normal(size=(T, d))
    h0 = rng.normal(0.0, 0.5, size=D)

    # ReLU (the paper's phi), alpha = 1, eta = 0.8, ||U|| = 0.4: contraction 1 - 0.8 + 0.32 = 0.52,
    # so K = 20 recursions land within ~0.52^20 ~ 2e-6 of the equilibrium at every step.
    irnn = zoo.IRNN(D, k=K, dtype=F64, eta_parametrization="raw")
    irnn.build((None, T, d))
    fresh = irnn_cell(rng, D, d, K, 0.8, 0.4)
    irnn.cell.set_weights(fresh.get_weights())
    J = jacobian_of_final_state(irnn, x, h0)
    norm_irnn = spectral_norm(J)
    smallest = float(np.linalg.svd(J, compute_uv=False).min())
    assert 0.5 <= norm_irnn <= 2.0
    # Stronger, and what Eq. 8 says: dh_T/dh_0 = (-1)^T I (T even: +I).
    assert np.max(np.abs(J - np.eye(D))) < 1e-3, (norm_irnn, smallest)

    # float64 so that the SimpleRNN's tiny norm is measured, not flushed to 0 in float32.
    keras.utils.set_random_seed(0)
    simple = keras.layers.SimpleRNN(D, dtype=F64)
    simple.build((None, T, d))
    norm_simple = spectral_norm(jacobian_of_final_state(simple, x, h0))
    # The gradient path exists (a zero would also pass `< 1e-3`): over 5 steps it is still O(0.1).
    norm_simple_5 = spectral_norm(jacobian_of_final_state(simple, x[:5], h0))
    assert norm_simple < 1e-3 and 0 < norm_simple
    assert norm_simple_5 > 1e-2
    print(f"||dh_T/dh_0||, T={T}: iRNN(K={K}) {norm_irnn:.8f} (sigma_min {smallest:.8f}), "
          f"SimpleRNN {norm_simple:.3g} (T=5: {norm_simple_5:.3g})")


@needs_tf
@pytest.mark.parametrize("g0,sign", [("previous", 1), ("zero", 1), ("zero", -1),
                                     ("previous", -1)])
def test_irnn_step_jacobian_tends_to_minus_sign_identity(g0, sign):
    """Theorem 1 and the remark after it: dh_m/dh_{m-1} -> -s I as K grows.

    Differentiating Eq. 5 gives E_k = ((1 - eta alpha) I + eta D_k U) E_{k-1} for
    E_k = dg_k/dh_{m-1} + s I, so ||dh_m/dh_{m-1} + s I|| <= rho^K ||E_0|| with
    rho = 1 - alpha eta + eta ||U|| (ReLU: ||D_k|| <= 1) and E_0 = (2I, I, I, 0) for the four
    (g0, s) cases. With g0 = previous and s = -1 the cell is an exact accumulator,
    h_m = h_{m-1} + f(x_m), whose Jacobian is I for every K.
    """
    rng = np.random.default_rng(1)
    D, d, eta, u_norm, alpha = 8, 3, 0.5, 0.5, 1.0
    rho = 1.0 - alpha * eta + eta * u_norm
    e0 = {("previous", 1): 2.0, ("zero", 1): 1.0, ("zero", -1): 1.0,
          ("previous", -1): 0.0}[g0, sign]
    x = rng.normal(size=d)
    h = rng.normal(0.0, 0.5, size=D)
    base = irnn_cell(rng, D, d, 1, eta, u_norm, g0=g0, state_sign=sign)
    errors = {}
    for k in (1, 5, 10, 20, 40):
        cell = irnn_cell(rng, D, d, k, eta, u_norm, g0=g0, state_sign=sign)
        cell.set_weights([*base.get_weights()[:3], np.full(k, eta)])
        J = cell_jacobian(cell, x, h)
        errors[k] = spectral_norm(J + sign * np.eye(D))
        assert errors[k] <= rho ** k * e0 + 1e-12, (k, errors[k], rho ** k * e0)
    if e0:
        # The bound is not vacuous: K = 1 is far from -sI, K = 40 is at it.
        assert errors[1] > 0.1 and errors[40] < 1e-9, errors
    else:
        assert max(errors.values()) < 1e-12, errors
    print(f"g0={g0} s={sign}: ||dh_m/dh_m-1 + sI|| by K {errors}, rho={rho}")


# ---------------------------------------------------------------------------------------------
# iRNN Proposition 2: geometric convergence to the fsolve equilibrium


@needs_float64
@pytest.mark.parametrize("g0,sign", [("zero", 1), ("previous", 1), ("zero", -1)])
def test_irnn_recursion_converges_geometrically_to_fsolve_equilibrium(g0, sign):
    """Prop. 2: ||g_k - h_eq|| <= (1 - alpha eta_k + eta_k ||U||) ||g_{k-1} - h_eq|| for every
    recursion (the map is a contraction when eta_k alpha <= 1), with h_eq from scipy's fsolve.

    The recursion steps are read from the zoo cell itself: a K-step cell whose step sizes beyond
    k are 0 outputs exactly g_k. Step sizes vary with k (004 learns eta_m^k), and alpha = 0.8.
    """
    rng = np.random.default_rng(2)
    D, d, K, u_norm, alpha = 10, 4, 30, 0.5, 0.8
    etas = rng.uniform(0.3, 1.0, size=K)  # eta_k alpha <= 0.8 <= 1
    cell = irnn_cell(rng, D, d, K, etas, u_norm, alpha=alpha, g0=g0, state_sign=sign)
    p = np_weights(cell)
    x = rng.normal(size=d)
    h_prev = rng.normal(0.0, 0.5, size=D)
    h_eq = equilibrium(p["kernel"].T, p["recurrent_kernel"].T, p["bias"], alpha, x, sign * h_prev)

    def g(k):
        cell.eta.assign(np.where(np.arange(K) < k, etas, 0.0))
        out, _ = cell(x[None], [h_prev[None]])
        return keras.ops.convert_to_numpy(out)[0]

    dist = np.array([np.linalg.norm(g(k) - h_eq) for k in range(K + 1)])
    assert dist[0] > 0.1  # g_0 is far from the equilibrium
    rates = 1.0 - alpha * etas + etas * u_norm
    for k in range(1, K + 1):
        # Slack: h_eq is exact to ~1e-12 (residual / (alpha - ||U||)); dist stays >= 1e-7 here.
        assert dist[k] <= rates[k - 1] * dist[k - 1] + 1e-10, (k, dist[k] / dist[k - 1],
                                                               rates[k - 1])
    assert dist[K] < 1e-6 * dist[0]
    worst = max(dist[k] / dist[k - 1] / rates[k - 1] for k in range(1, K + 1))
    measured = (dist[K] / dist[0]) ** (1.0 / K)
    bound = np.prod(rates) ** (1.0 / K)
    print(f"g0={g0} s={sign}: mean contraction per recursion {measured:.4f} <= bound {bound:.4f}; "
          f"worst step ratio / its bound {worst:.3f}; "
          f"||g_K - h_eq|| = {dist[K]:.2e} from {dist[0]:.2f}")


@needs_float64
def test_irnn_large_k_evolves_on_equilibrium_manifold():
    """With K large every state solves alpha (h_m + h_{m-1}) = phi(U (h_m + h_{m-1}) + W x_m + b):
    h_m + h_{m-1} equals the fsolve solution sigma(x_m) of alpha sigma = phi(U sigma + W x_m + b)
    ([derived] in REFERENCE.md 1.1), over a whole sequence run by the IRNN layer."""
    rng = np.random.default_rng(3)
    D, d, T, K = 8, 3, 12, 40
    layer = zoo.IRNN(D, k=K, return_sequences=True, dtype=F64, eta_parametrization="raw")
    layer.build((None, T, d))
    layer.cell.set_weights(irnn_cell(rng, D, d, K, 0.8, 0.4).get_weights())
    p = np_weights(layer)
    x = rng.normal(size=(1, T, d))
    h0 = rng.normal(0.0, 0.5, size=(1, D))
    hs = keras.ops.convert_to_numpy(layer(x, initial_state=[h0]))[0]
    prev = np.vstack([h0, hs[:-1]])
    sigma = np.stack([equilibrium(p["kernel"].T, p["recurrent_kernel"].T, p["bias"], 1.0, x[0, m],
                                  np.zeros(D)) for m in range(T)])
    assert np.std(sigma) > 0.1
    assert np.max(np.abs(hs + prev - sigma)) < 1e-9


# ---------------------------------------------------------------------------------------------
# StableRNN: the projection keeps ||W||_2 <= lambda


def _recurrent_norm(model):
    (w,) = [w for w in model.weights if w.name == "recurrent_kernel"]
    return spectral_norm(keras.ops.convert_to_numpy(w))


@pytest.mark.parametrize("lam", [0.5, 0.99])
def test_stablernn_stays_in_spectral_ball_under_training(lam):
    T, d, C, D = 12, 5, 4, 16
    rng = np.random.default_rng(4)
    x = rng.normal(size=(128, T, d)).astype("float32")
    y = rng.integers(0, C, size=128)
    keras.utils.set_random_seed(0)
    stable = zoo.create_model("stablernn", (T, d), C, units=D, max_norm=lam)
    assert _recurrent_norm(stable) <= lam + 1e-5  # projected at initialisation
    # The same network without the constraint, from the same (projected) starting point.
    plain = zoo.create_model("simple_rnn", (T, d), C, units=D)
    plain.set_weights(stable.get_weights())
    start = stable.get_weights()
    for model in (stable, plain):
        model.compile(keras.optimizers.Adam(0.2),
                      keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, y, batch_size=32, epochs=3, verbose=0, shuffle=False)
    norm_plain, norm_stable = _recurrent_norm(plain), _recurrent_norm(stable)
    assert norm_plain > lam + 0.5, "the learning rate must push the unconstrained matrix out"
    assert norm_stable <= lam + 1e-5
    # The projection was active (the top singular value sits on the ball), and W did train.
    assert norm_stable >= lam - 1e-3
    moved = [w for w in stable.weights if w.name == "recurrent_kernel"][0]
    assert not np.allclose(keras.ops.convert_to_numpy(moved), start[1], atol=1e-2)
    print(f"lambda={lam}: ||W|| after training: StableRNN {norm_stable:.7f}, "
          f"unconstrained {norm_plain:.3f}")


# ---------------------------------------------------------------------------------------------
# AntisymmetricRNN: the recurrence matrix and the Jacobian's spectrum


@needs_tf
@pytest.mark.parametrize("gated", [False, True], ids=["ungated", "gated"])
def test_antisymmetric_matrix_and_jacobian_spectrum(gated):
    rng = np.random.default_rng(5)
    D, d, eps, gamma = 12, 4, 0.1, 0.3
    cell = zoo.AntisymmetricRNNCell(D, epsilon=eps, gamma=gamma, gated=gated, sigma_w=4.0,
                                    dtype=F64)
    cell.build((None, d))
    Wm = np_weights(cell)["recurrent_kernel"].T  # math orientation
    A = Wm - Wm.T - gamma * np.eye(D)
    assert np.allclose(A + A.T, -2.0 * gamma * np.eye(D), atol=1e-12)
    assert spectral_norm(A + gamma * np.eye(D)) > 1.0  # a non-trivial rotation part
    assert np.allclose(np.real(np.linalg.eigvals(A)), -gamma, atol=1e-10)

    def jacobian(h, x):
        return cell_jacobian(cell, x, h)

    # At h = 0, x = 0, b = 0: tanh' = 1 (and the gate is sigmoid(0) = 1/2 with tanh(0) = 0, so only
    # its value enters). J = I + eps c A with c = 1 (ungated) or 1/2 (gated): the real parts of
    # (J - I) / (eps c) are exactly -gamma.
    c = 0.5 if gated else 1.0
    J0 = jacobian(np.zeros(D), np.zeros(d))
    assert np.allclose(J0, np.eye(D) + eps * c * A, atol=1e-12)
    assert np.allclose(np.real(np.linalg.eigvals((J0 - np.eye(D)) / (eps * c))), -gamma, atol=1e-9)

    if not gated:
        # Anywhere: J = I + eps diag(tanh'(A h + V x + b)) A (REFERENCE.md 1.5).
        cell.bias.assign(rng.normal(0.0, 0.3, size=(D,)))
        p = np_weights(cell)
        h, x = rng.normal(size=D), rng.normal(size=d)
        pre = A @ h + p["kernel"].T @ x + p["bias"]
        assert np.min(1.0 - np.tanh(pre) ** 2) < 0.9  # away from the linear regime
        want = np.eye(D) + eps * np.diag(1.0 - np.tanh(pre) ** 2) @ A
        assert np.allclose(jacobian(h, x), want, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Parameter budgets (004 Tables 3 and 9) and analytic counts (REFERENCE.md)


@pytest.mark.parametrize("shape,classes,budget", [((128, 9), 2, 4500), ((99, 32), 30, 9000)],
                         ids=["HAR-2", "Google-30"])
def test_irnn_paper_parameter_budget(shape, classes, budget):
    model = zoo.create_model("irnn", shape, classes)
    D, d, r = 80, shape[1], 16
    cell = 2 * D * r + D * d + D + 1  # low-rank Eq. 9 with one shared eta (K = 1)
    assert model.count_params() == cell + D * classes + classes
    assert model.count_params() <= budget
    print(f"iRNN {shape} x {classes}: {model.count_params()} parameters (budget {budget})")


D_, d_ = 80, 9


@pytest.mark.parametrize("name,options,expected", [
    ("irnn", dict(rank=None, k=1), D_ ** 2 + D_ * d_ + D_ + 1),
    ("irnn", dict(rank=None, k=3), D_ ** 2 + D_ * d_ + D_ + 3),
    ("irnn", dict(rank=None, k=3, eta_timesteps=128), D_ ** 2 + D_ * d_ + D_ + 3 * 128),
    ("irnn", dict(rank=16, k=5), 2 * D_ * 16 + D_ * d_ + D_ + 5),
    ("irnn", dict(rank=16, k=5, eta_timesteps=128), 2 * D_ * 16 + D_ * d_ + D_ + 5 * 128),
    # REFERENCE.md's formula + 1 for the learned alpha.
    ("irnn", dict(rank=16, k=5, trainable_alpha=True), 2 * D_ * 16 + D_ * d_ + D_ + 5 + 1),
    ("sirnn", dict(rank=None), D_ ** 2 + D_ * d_ + D_ + 1),
    ("fastrnn", {}, D_ * d_ + D_ ** 2 + D_ + 2),
    # Not in REFERENCE.md: FastRNN with FastGRNN's low-rank W and U (one bias).
    ("fastrnn", dict(w_rank=5, u_rank=40), 5 * (d_ + D_) + 2 * 40 * D_ + D_ + 2),
    ("fastgrnn", {}, D_ * d_ + D_ ** 2 + 2 * D_ + 2),
    ("fastgrnn", dict(w_rank=5, u_rank=40), 5 * (d_ + D_) + 2 * 40 * D_ + 2 * D_ + 2),
    ("antisymmetric", {}, D_ ** 2 + D_ * d_ + D_),
    ("gated_antisymmetric", {}, D_ ** 2 + 2 * D_ * d_ + 2 * D_),
    ("stablernn", {}, D_ ** 2 + D_ * d_ + D_),
    ("simple_rnn", {}, D_ ** 2 + D_ * d_ + D_),
    ("gru", {}, 3 * (D_ ** 2 + D_ * d_ + D_) + 3 * D_),
    ("lstm", {}, 4 * (D_ ** 2 + D_ * d_ + D_)),
], ids=lambda v: v if isinstance(v, str) else None)
def test_analytic_parameter_counts(name, options, expected):
    layer = zoo.create_layer(name, **options)
    layer.build((None, 128, d_))
    assert layer.count_params() == expected
