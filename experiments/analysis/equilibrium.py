"""The iRNN's equilibrium checks (004 Sec. 3.1, Prop. 2, A.7.6) at visited states.

With ``v = g + s h_{m-1}`` the cell's residual is ``F(g) = phi(P[U v + W x + b]) - alpha v``
(``P = U`` with ``premultiply``, else ``I``) and each recursion is ``g_k = g_{k-1} + eta_k
F(g_{k-1})``. Prop. 2: the map is a contraction with factor ``1 - alpha eta + eta L_U`` where
L_U is the Lipschitz constant of ``v -> P U v``; here L_U = ||P U||_2 (004 states ||U|| for P = I).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from zoo.irnn import IRNNCell
from zoo.state_bound import bound_state


def _etas(cell: IRNNCell, counters: np.ndarray | None, rows: int) -> np.ndarray:
    """(rows, K) step sizes of each row (the per-time-step column when eta is a table)."""
    # The learned step size (a sigmoid of the stored logit, or the raw weight).
    eta = np.asarray(cell.eta_value() if hasattr(cell, "eta_value") else cell.eta,
                     dtype=np.float64)
    if cell.eta_timesteps is None:
        return np.broadcast_to(eta, (rows, cell.k))
    col = np.minimum(counters[:, 0].astype(int), cell.eta_timesteps - 1)
    return eta[:, col].T


class Residual:
    """``F(g; h, x)`` of an `IRNNCell`, in float64 NumPy via TensorFlow."""

    def __init__(self, cell: IRNNCell):
        self.cell = cell
        self.u = tf.constant(np.asarray(cell.recurrent_matrix(), dtype=np.float64))
        self.w = tf.constant(np.asarray(cell.kernel, dtype=np.float64))
        self.b = (tf.constant(np.asarray(cell.bias, dtype=np.float64)) if cell.use_bias
                  else tf.zeros((cell.units,), tf.float64))
        self.alpha = float(np.asarray(cell.alpha_value()))

    def pre_map(self) -> np.ndarray:
        """The matrix of ``v -> P U v`` in math orientation."""
        u = self.u.numpy().T
        return u @ u if self.cell.premultiply else u

    def __call__(self, g, h, x):
        v = g + self.cell.state_sign * h
        pre = tf.matmul(v, self.u) + tf.matmul(x, self.w) + self.b
        if self.cell.premultiply:
            pre = tf.matmul(pre, self.u)
        return self.cell.activation(pre) - self.alpha * v

    def jacobian(self, g, h, x) -> np.ndarray:
        """dF/dg (rows, D, D) by autodiff."""
        g = tf.constant(g)
        with tf.GradientTape() as tape:
            tape.watch(g)
            f = self(g, tf.constant(h), tf.constant(x))
        return tape.batch_jacobian(f, g).numpy()


def _recursions(res: Residual, h, x, etas, extra: int):
    """g_0..g_{K + extra}: the model's K recursions, then ``extra`` more with eta_K."""
    cell = res.cell
    g = h.copy() if cell.g0 == "previous" else np.zeros_like(h)
    gs = [g]
    for k in range(cell.k + extra):
        eta = etas[:, min(k, cell.k - 1)][:, None]
        step = g + eta * res(g, h, x).numpy()
        g = np.asarray(bound_state(step, cell.state_clip, cell.state_quant_bits, signed=False))
        gs.append(g)
    return gs


def irnn_report(cell: IRNNCell, x_rows: np.ndarray, states: list[np.ndarray],
                extra_recursions: int = 10, eig_rows: int = 512) -> dict:
    """004's checks at the visited (x_m, h_{m-1}) rows.

    Returns the mean fixed-point residual ``||F(g_k)||_2`` for k = 0..K (the model's recursions)
    and for ``extra_recursions`` more with eta_K (a diagnostic continuation), the measured rate
    (geometric mean of successive residual ratios over the continuation), the local contraction
    factor ``||I + eta_k dF/dg||_2`` of each recursion (max and mean over rows) against Prop. 2's
    ``1 - alpha eta_k + eta_k L_U``, and the eigenvalues of dF/dv = grad-phi P U - alpha I at the
    state h_m (A.7.6: all real parts should be negative).
    """
    h = states[0].astype(np.float64)
    x = x_rows.astype(np.float64)
    counters = states[1] if len(states) > 1 else None
    etas = _etas(cell, counters, len(h))
    res = Residual(cell)
    gs = _recursions(res, h, x, etas, extra_recursions)
    resid = [float(np.linalg.norm(res(g, h, x).numpy(), axis=1).mean()) for g in gs]
    tail = np.asarray(resid[cell.k:])
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = float(np.exp(np.mean(np.log(tail[1:] / tail[:-1])))) if len(tail) > 1 else None
    l_u = float(np.linalg.norm(res.pre_map(), 2))
    eye = np.eye(cell.units)
    local = []
    for k in range(cell.k):
        jac = res.jacobian(gs[k], h, x)
        norms = np.linalg.norm(eye + etas[:, k, None, None] * jac, ord=2, axis=(1, 2))
        eta_k = float(np.mean(etas[:, k]))
        local.append({"k": k + 1, "eta": eta_k, "max": float(norms.max()),
                      "mean": float(norms.mean()),
                      "prop2_bound": 1.0 - res.alpha * eta_k + eta_k * l_u})
    sub = np.linspace(0, len(h) - 1, min(eig_rows, len(h))).astype(int)
    eig = np.linalg.eigvals(res.jacobian(gs[cell.k][sub], h[sub], x[sub]))
    return {"k": cell.k, "alpha": res.alpha, "L_U": l_u,
            "residual_by_recursion": resid, "model_recursions": cell.k,
            "measured_rate": rate, "local_contraction": local,
            "eigen_max_real": float(eig.real.max()),
            "eigen_all_negative_fraction": float(np.mean(eig.real.max(axis=1) < 0)),
            "eigenvalues_sample": [[float(e.real), float(e.imag)] for e in eig[0]]}
