"""Stability of the recurrence (000 Sec. 6.2, 001 Thm 1 and Eq. 9, 004 Sec. 3.1, 002 Lemmas 1-2).

Spectral norms are ``||.||_2`` (largest singular value) throughout.
"""

from __future__ import annotations

import keras
import numpy as np

from zoo.antisymmetric import AntisymmetricRNNCell
from zoo.diagonal import DiagonalRNNCell
from zoo.fastrnn import FastCellBase
from zoo.irnn import IRNNCell
from zoo.stable import StableRNNCell

# sup |sigma'| of the activations the cells use (002's sigma_1; 000's L_rho).
_ACTIVATION_LIPSCHITZ = {"tanh": 1.0, "relu": 1.0, "linear": 1.0, "sigmoid": 0.25,
                         "quant_tanh": 1.0, "quant_sigmoid": 0.5, "quant_sigmoid4": 0.25,
                         "hard_tanh": 1.0}


def activation_lipschitz(fn) -> float | None:
    """sup |sigma'| of a cell activation, or None when it is not one of the known ones."""
    return _ACTIVATION_LIPSCHITZ.get(getattr(fn, "__name__", ""))


def spectral_norms(matrices: np.ndarray) -> np.ndarray:
    """Largest singular value of each matrix of a stack (N, a, b)."""
    return np.linalg.norm(matrices, ord=2, axis=(-2, -1))


# What the recurrence matrix is, per cell family, for the report (the first match wins).
_RECURRENCE_NOTES = ((DiagonalRNNCell, "diag(w) (002 Eq. 2)"),
                     (IRNNCell, "U (004; alpha I + V H when low-rank)"),
                     (AntisymmetricRNNCell, "W - W^T - gamma I"),
                     (FastCellBase, "U (FastGRNN Eq. 2 / 6; U1 U2 when low-rank)"),
                     (StableRNNCell, "W (tanh RNN)"))


def recurrence_matrix(cell) -> tuple[np.ndarray | None, str]:
    """The matrix acting on h_{t-1} in math orientation, and a note on what it is.

    Every zoo cell gives it as ``recurrent_matrix()`` (Keras orientation, hence the transpose);
    Keras's SimpleRNN as its recurrent kernel. ``None`` for gated Keras cells (GRU, LSTM): they
    have one recurrent matrix per gate and no single recurrence; their stability is the
    empirical contraction constant alone.
    """
    if hasattr(cell, "recurrent_matrix"):
        note = next((n for kind, n in _RECURRENCE_NOTES if isinstance(cell, kind)),
                    f"{type(cell).__name__}.recurrent_matrix()")
        return np.asarray(cell.recurrent_matrix(), dtype=np.float64).T, note
    if isinstance(cell, keras.layers.SimpleRNNCell):
        return np.asarray(cell.recurrent_kernel, dtype=np.float64).T, "W (tanh RNN)"
    return None, f"{type(cell).__name__} is gated: no single recurrence matrix"


def regime(lam: float, tol: float) -> str:
    """001 Thm 1's regime of a Lipschitz constant L_f: contractive (< 1 - tol), boundary
    (within tol of 1) or unstable (> 1 + tol)."""
    if lam < 1.0 - tol:
        return "contractive"
    if lam <= 1.0 + tol:
        return "boundary"
    return "unstable"


def contraction_report(j_state: np.ndarray, tol: float = 0.01) -> dict:
    """Empirical contraction constant from the step Jacobians ds_t/ds_{t-1} at visited states.

    Returns max / p95 / mean of ``||J||_2``, 001's regime of the max, and 001 Eq. 9's
    worst-case information-loss rate ``N_x log(lambda)`` in nats per step (N_x = state size;
    negative: the state forgets).
    """
    norms = spectral_norms(j_state)
    lam = float(norms.max())
    return {"max": lam, "p95": float(np.percentile(norms, 95)), "mean": float(norms.mean()),
            "samples": int(len(norms)), "regime": regime(lam, tol), "regime_tolerance": tol,
            "information_loss_nats_per_step": float(j_state.shape[-1] * np.log(lam))}


def memory_factor(z: float, steps: int) -> dict:
    """002 Lemmas 1-2: ``mu_0 = sum_{k<T} z^k`` and ``mu_1 = sum_{k<T} (k + 1) z^k``; O(1) when
    z < 1 and e^{Omega(T)} otherwise (the exploding-gradient cutoff)."""
    k = np.arange(steps, dtype=np.float64)
    with np.errstate(over="ignore"):
        powers = float(z) ** k
        return {"z": float(z), "T": int(steps), "mu0": float(powers.sum()),
                "mu1": float(((k + 1) * powers).sum()), "exploding": bool(z >= 1.0)}


def is_elman_form(cell) -> bool:
    """True for cells whose step is ``h_t = sigma(W h_{t-1} + U x_t + b)``: there (and only
    there) sigma_1 ||W|| bounds ||dh_t / dh_{t-1}||, the z of 002's memory factor. The iRNN
    (h + eta (phi(U .) - alpha .)), FastRNN/FastGRNN (alpha phi(U h ..) + beta h) and
    AntisymmetricRNN (h + eps phi(..)) add h_{t-1} to a scaled update: ||U|| alone says nothing
    of their step (a trained SiRNN has ||U|| ~ 10 and a step Jacobian of norm ~ 1)."""
    return isinstance(cell, (StableRNNCell, DiagonalRNNCell, keras.layers.SimpleRNNCell))


def recurrence_report(cell, steps: int) -> dict:
    """sigma_max of the recurrence (000's L_rho sigma_max < 1 criterion where rho is known) and,
    for an Elman-form cell (`is_elman_form`), 002's memory factor for z = sigma_1 sigma_max
    (z = sigma_1 alpha_m for DiagonalRNN). Other cells get it from the measured contraction
    constant (`zoo.experiments.analysis.report`)."""
    matrix, what = recurrence_matrix(cell)
    out = {"matrix": what}
    if matrix is None:
        return out
    sigma = float(np.linalg.norm(matrix, 2))
    lip = activation_lipschitz(getattr(cell, "activation", None))
    out.update({"sigma_max": sigma, "activation_lipschitz": lip})
    if lip is not None:
        out["lipschitz_times_sigma_max"] = lip * sigma
        if is_elman_form(cell):
            out["memory_factor"] = memory_factor(lip * sigma, steps)
    if isinstance(cell, DiagonalRNNCell):
        out["diagonal"] = diagonal_memory_report(cell, steps)
    return out


def diagonal_memory_report(cell: DiagonalRNNCell, steps: int) -> dict:
    """002 Remark 5 for the DiagonalRNN: ``alpha_m = alpha + rho_w / sqrt(m)`` bounds max |w_i|
    under the projection; z = sigma_1 alpha_m (and z measured from the trained w)."""
    w = np.abs(np.asarray(cell.recurrent_kernel, dtype=np.float64))
    sigma_1 = activation_lipschitz(cell.activation)
    out = {"max_abs_w": float(w.max()), "sigma_1": sigma_1, "rho_w": cell.rho_w}
    if sigma_1 is None:
        return out
    out["measured"] = memory_factor(sigma_1 * float(w.max()), steps)
    if cell.rho_w is not None:
        alpha_m = cell.alpha + cell.rho_w / np.sqrt(cell.units)
        out["alpha_m"] = float(alpha_m)
        out["bound"] = memory_factor(sigma_1 * alpha_m, steps)
    return out
