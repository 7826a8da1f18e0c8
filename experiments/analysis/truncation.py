"""Truncation (000 Lemma 1, Prop. 1, Eq. 3): run the model on only the last k inputs.

The truncated model restarts from the zero state k steps before the end: a sliding window of k
inputs, so a device can answer with bounded latency and memory (k steps, k inputs) instead of
carrying the state forever.

For a lambda-contractive step map f with ``||f(s, x) - f(s, x')|| <= L_x ||x - x'||`` and inputs
``||x_t|| <= B_x``, the state is bounded by ``B_s = (L_x B_x + ||f(0, 0)||) / (1 - lambda)``
(Lemma 1's proof; it has f(0, 0) = 0, a bias adds ||f(0, 0)||), hence
``||s_T - s_T^k|| <= lambda^k B_s`` and, for an L_f-Lipschitz readout,
``||y_T - y_T^k|| <= eps`` once ``k >= log(L_f B_s / eps) / log(1 / lambda)`` (Prop. 1).
Here lambda, L_x are the *empirical* constants (max over visited states), so k(eps) is the
bound evaluated at measured constants, not a certificate.
"""

from __future__ import annotations

import math

import numpy as np


def window_grid(steps: int) -> list[int]:
    """1, 2, 4, ... (powers of two below T), plus 3/4 T and T."""
    ks, k = [], 1
    while k < steps:
        ks.append(k)
        k *= 2
    ks += [max(1, (3 * steps) // 4), steps]
    return sorted(set(ks))


def score(kind: str, outputs: np.ndarray, y: np.ndarray) -> float:
    """Accuracy (classification) or mean squared error (regression) of the last-step outputs."""
    if kind == "regression":
        return float(np.mean((outputs.reshape(-1) - y.reshape(-1)) ** 2))
    return float(np.mean(outputs.argmax(-1) == y))


def truncated_scores(stepper, x: np.ndarray, y: np.ndarray, kind: str, ks: list[int],
                     batch: int = 512) -> dict:
    """Score and state gap ``||h_T - h_T^k||_2`` (mean, max) of the model on the last k inputs.

    ``y`` are the last step's targets. Returns ``{"k": [...], "score": [...], "state_gap_mean":
    [...], "state_gap_max": [...]}``, plus ``"full"``, the score on the whole sequence, and
    ``"h_full"`` (n, units), the final output on the whole sequence.
    """
    steps = x.shape[1]
    windows = list(ks) + ([] if steps in ks else [steps])
    chunks = [stepper.window_outputs(x[lo:lo + batch], windows)
              for lo in range(0, len(x), batch)]
    h = np.concatenate(chunks, axis=1).astype(np.float64)  # (windows, n, units)
    h_full = h[windows.index(steps)]
    result = {"k": [], "score": [], "state_gap_mean": [], "state_gap_max": [],
              "full": score(kind, stepper.head(h_full.astype(np.float32)), y)}
    for i, k in enumerate(ks):
        gap = np.linalg.norm(h_full - h[i], axis=1)
        result["k"].append(int(k))
        result["score"].append(score(kind, stepper.head(h[i].astype(np.float32)), y))
        result["state_gap_mean"].append(float(gap.mean()))
        result["state_gap_max"].append(float(gap.max()))
    result["h_full"] = h_full
    return result


def smallest_window(result: dict, kind: str, points: float = 0.5) -> int | None:
    """The smallest k whose accuracy is within ``points`` percentage points of the full model's
    (regression: whose MSE is within ``points`` percent of the full model's)."""
    for k, s in zip(result["k"], result["score"]):
        if kind == "regression":
            if s <= result["full"] * (1 + points / 100):
                return k
        elif 100 * (result["full"] - s) <= points:
            return k
    return None


def state_bound(lam: float, l_x: float, b_x: float, f0: float) -> float | None:
    """``B_s = (L_x B_x + ||f(0, 0)||) / (1 - lambda)`` (None unless lambda < 1)."""
    if not lam < 1.0:
        return None
    return (l_x * b_x + f0) / (1.0 - lam)


def window_bound(lam: float, l_f: float, b_s: float | None, eps: float) -> int | None:
    """Prop. 1's ``k(eps) = ceil(log(L_f B_s / eps) / log(1 / lambda))`` (at least 1; None
    unless lambda < 1)."""
    if b_s is None or not 0.0 < lam < 1.0:
        return None
    ratio = l_f * b_s / eps
    return max(1, math.ceil(math.log(ratio) / math.log(1.0 / lam))) if ratio > 1 else 1
