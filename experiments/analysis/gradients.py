"""Gradients through time (004 Fig. 3b, 8, 9) and the input sensitivity by lag (000 Fig. 2).

Lags are 1-based from the end: lag l is the input x_{T-l+1} (lag 1 = the last input) and the
state s_{T-l}, so a window of the last k inputs holds exactly the lags 1..k.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def state_gradient_curve(j_seq: np.ndarray) -> np.ndarray:
    """``||ds_T/ds_{T-l}||_2`` for l = 1..T-1 and each sequence, from the step Jacobians.

    Args:
        j_seq: (n, T, S, S); ``j_seq[b, t]`` is ds_{t+1}/ds_t of sequence b (0-based steps).

    Returns:
        (n, T - 1): column l - 1 is ``||J_T J_{T-1} ... J_{T-l+1}||_2``; column 0 is
        ||ds_T/ds_{T-1}|| and the last column ||ds_T/ds_1||.
    """
    n, steps, size, _ = j_seq.shape
    prod = np.broadcast_to(np.eye(size), (n, size, size)).copy()
    curve = np.empty((n, steps - 1))
    for lag in range(1, steps):
        prod = prod @ j_seq[:, steps - lag]
        curve[:, lag - 1] = np.linalg.norm(prod, ord=2, axis=(1, 2))
    return curve


def gradient_report(curve: np.ndarray) -> dict:
    """004's ||dh_T/dh_1||, ||dh_T/dh_{T-1}|| and their ratio r_T (geometric mean over
    sequences, as the norms span orders of magnitude)."""
    first, last = curve[:, -1], curve[:, 0]
    with np.errstate(divide="ignore"):
        log_ratio = np.log(first) - np.log(last)
    return {"dhT_dh1_mean": float(first.mean()), "dhT_dhTm1_mean": float(last.mean()),
            "ratio_geomean": float(np.exp(np.mean(log_ratio))),
            "norm": "spectral (largest singular value), exact products of batched Jacobians",
            "curve_mean_by_lag": [float(v) for v in curve.mean(axis=0)]}


def input_sensitivity(stepper, x: np.ndarray) -> np.ndarray:
    """``||d logits / d x_{T-l+1}||_F`` for l = 1..T and each sequence: (n, T), column l - 1.

    The Frobenius norm of the (classes x features) Jacobian of the last step's output.
    """
    xs = tf.constant(x, dtype=stepper.dtype)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xs)
        out = stepper.rnn(xs, training=False)
        if isinstance(out, (list, tuple)):
            out = out[0]
        if stepper.rnn.return_sequences:
            out = out[:, -1]
        for layer in stepper.head_layers:
            out = layer(out)
        columns = [tf.reduce_sum(out[:, c]) for c in range(out.shape[-1])]
    sq = sum(np.square(np.asarray(tape.gradient(col, xs), dtype=np.float64)) for col in columns)
    del tape
    per_step = np.sqrt(sq.sum(axis=-1))  # (n, T) by time
    return per_step[:, ::-1]  # by lag


def first_lag_below(curve: np.ndarray, fraction: float) -> int | None:
    """The first lag whose value falls below ``fraction`` of the lag-1 value (None if never)."""
    below = np.nonzero(curve < fraction * curve[0])[0]
    return int(below[0]) + 1 if len(below) else None
