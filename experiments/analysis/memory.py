"""The linear memory probe (003 Sec. 4.4, Thm 4.5): how well a linear map of the final state h_T
recovers each past input x_{T-l+1}, lag l = 1..L.

Ridge regression on standardised h_T, scored out of fold (``folds``-fold cross-validation over
sequences) with ``R^2 = 1 - sum (x - x_hat)^2 / sum (x - mean_fit(x))^2`` pooled over the input
features. R^2 near 1: the input is linearly recoverable from the state; near 0: forgotten.
"""

from __future__ import annotations

import numpy as np


def ridge_fit(h: np.ndarray, targets: np.ndarray, ridge: float):
    """Weights of ``targets ~ standardise(h) @ w + c`` with penalty ``ridge * n * ||w||^2``."""
    mean, std = h.mean(axis=0), h.std(axis=0)
    std = np.where(std < 1e-12, 1.0, std)
    z = (h - mean) / std
    t_mean = targets.mean(axis=0)
    gram = z.T @ z + ridge * len(z) * np.eye(z.shape[1])
    w = np.linalg.solve(gram, z.T @ (targets - t_mean))
    return lambda h_new: ((h_new - mean) / std) @ w + t_mean


def memory_curve(h_final: np.ndarray, x: np.ndarray, max_lag: int | None = None,
                 ridge: float = 1e-3, folds: int = 5, seed: int = 0) -> np.ndarray:
    """R^2 of the probe for lags 1..max_lag (default T).

    Args:
        h_final: (n, S) final states.
        x: (n, T, d) the inputs that produced them.
        max_lag: the largest lag probed.
        ridge: the penalty per sequence on standardised states.
        folds: cross-validation folds (>= 2).
        seed: the fold assignment's seed.
    """
    n, steps, _ = x.shape
    if folds < 2 or n < 2 * folds:
        raise ValueError(f"need folds >= 2 and at least 2 * folds sequences, got folds={folds}, "
                         f"{n} sequences")
    max_lag = steps if max_lag is None else min(max_lag, steps)
    h = h_final.astype(np.float64)
    fold_of = np.random.default_rng(seed).permutation(n) % folds
    targets = x[:, ::-1][:, :max_lag].reshape(n, -1).astype(np.float64)  # lag-major columns
    predicted = np.empty_like(targets)
    resid_ref = np.empty_like(targets)
    for f in range(folds):
        fit, test = fold_of != f, fold_of == f
        predicted[test] = ridge_fit(h[fit], targets[fit], ridge)(h[test])
        resid_ref[test] = targets[test] - targets[fit].mean(axis=0)
    sse = ((targets - predicted) ** 2).reshape(n, max_lag, -1).sum(axis=(0, 2))
    sst = (resid_ref ** 2).reshape(n, max_lag, -1).sum(axis=(0, 2))
    return 1.0 - sse / np.maximum(sst, 1e-300)
