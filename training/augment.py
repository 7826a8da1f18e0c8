"""Data augmentation in the input pipeline (off unless ``TrainConfig.augment`` asks for it): IMU
transforms, and SpecAugment's masks for spectrogram features.

The transforms are those of Um et al., "Data augmentation of wearable sensor data for Parkinson's
disease monitoring using convolutional neural networks" (ICMI 2017), which the issue names as the
lever for accuracy on people the model has never seen (another wearer holds or straps the device
at another angle, moves faster or slower, has another sensor gain):

* ``rotation`` (degrees, max angle): each *sensor* (a device; its accelerometer, gyroscope and
  magnetometer triples turn together) is rotated by one random rotation: a uniform random axis,
  an angle uniform in [-rotation, +rotation] (Rodrigues' formula). An orthogonal matrix with
  determinant +1, so every xyz triple keeps its norm.
* ``scale`` (sigma): every channel multiplied by a factor drawn from N(1, sigma).
* ``magnitude_warp`` (sigma): every channel multiplied by a smooth random curve through
  ``knots`` + 2 evenly spaced points drawn from N(1, sigma) (piecewise linear between them; Um et
  al. use a cubic spline, which NumPy alone does not give).
* ``time_warp`` (sigma): the window resampled at smoothly warped times: a random speed curve as in
  the magnitude warp, integrated and rescaled to span the window, one curve per window for all
  channels (time is shared by every sensor), linear interpolation.
* ``jitter`` (sigma, in units of each channel's training standard deviation): additive Gaussian
  noise, so after the z-score normalisation it has standard deviation ``sigma``.

SpecAugment's masks (Park et al., "SpecAugment: A Simple Data Augmentation Method for Automatic
Speech Recognition", Interspeech 2019), for the speech tasks' log-mel features (any task's
channels, in fact):

* ``time_mask`` (T, steps) and ``feature_mask`` (F, channels): ``masks`` bands of each kind per
  window, each of a width uniform in [0, T] (or [0, F]) at a uniform position, set to the
  training mean (0 after the z-score normalisation), as SpecAugment sets them to the mean.

And for any sequence task:

* ``time_shift`` (S, steps): each window moved by a whole number of steps uniform in [-S, S]
  (later for a positive shift), the steps it leaves filled with its first (or last) step, as
  TensorFlow's speech_commands ``time_shift_ms`` moves a clip in its 1 s frame. On features, not
  audio: a shift by whole 10 ms frames.

And for any classification task:

* ``mixup`` (alpha): each window of a batch mixed with another window of the batch, ``x = lam x_i
  + (1 - lam) x_j`` with ``lam`` ~ Beta(alpha, alpha) per window, trained towards ``lam y_i +
  (1 - lam) y_j`` (Zhang et al., "mixup: Beyond Empirical Risk Minimization", ICLR 2018; alpha
  0.1-0.4 in their speech and ImageNet runs). The labels stay class ids: the mixed batch goes
  in twice, with ``y_i`` and weight ``2 lam``, then with ``y_j`` and weight ``2 (1 - lam)``
  (Keras sample weights), whose mean cross-entropy is the mixed target's (`mixup`). Twice the
  forward and backward work per batch; the training accuracy Keras logs is then the weighted one.
  It comes after every other transform.

Batches arrive normalised (the trainer z-scores every split once); the augmenter maps them back
to sensor units, where rotation is a rotation, transforms them, and normalises again. Random
numbers come from a generator the caller seeds per epoch, so a resumed run sees the same
augmented batches as an uninterrupted one.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

# option -> (default, what is valid, check)
OPTIONS = {
    "rotation": (0.0, "an angle in degrees in [0, 180]", lambda v: 0 <= v <= 180),
    "scale": (0.0, "a standard deviation >= 0", lambda v: v >= 0),
    "magnitude_warp": (0.0, "a standard deviation >= 0", lambda v: v >= 0),
    "time_warp": (0.0, "a standard deviation in [0, 1)", lambda v: 0 <= v < 1),
    "jitter": (0.0, "a standard deviation >= 0 (in channel standard deviations)", lambda v: v >= 0),
    "knots": (4, "an integer >= 1", lambda v: float(v).is_integer() and v >= 1),
    "time_mask": (0, "an integer >= 0 (time steps)", lambda v: float(v).is_integer() and v >= 0),
    "feature_mask": (0, "an integer >= 0 (channels)",
                     lambda v: float(v).is_integer() and v >= 0),
    "masks": (2, "an integer >= 1", lambda v: float(v).is_integer() and v >= 1),
    "time_shift": (0, "an integer >= 0 (time steps)", lambda v: float(v).is_integer() and v >= 0),
    "mixup": (0.0, "the alpha of Beta(alpha, alpha) >= 0 (0: off)", lambda v: v >= 0),
}


def check_options(options: dict) -> dict:
    """``options`` with defaults filled in; ValueError naming the first unknown or invalid one."""
    if not isinstance(options, dict):
        raise ValueError(f"invalid augment: {options!r}; valid: a mapping of "
                         f"{', '.join(OPTIONS)}")
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"unknown augment option(s) {unknown}; valid: {', '.join(OPTIONS)}")
    resolved = {}
    for name, (default, valid, accepts) in OPTIONS.items():
        value = options.get(name, default)
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and np.isfinite(value) and accepts(value))
        if not ok:
            raise ValueError(f"invalid augment option {name}: {value!r}; valid: {valid}")
        resolved[name] = value
    return resolved


# ----------------------------------------------------------------------------- the transforms


def random_rotations(rng: np.random.Generator, n: int, max_degrees: float) -> np.ndarray:
    """``n`` 3 x 3 rotation matrices: uniform random axes, angles uniform in +-max_degrees."""
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    angle = np.deg2rad(rng.uniform(-max_degrees, max_degrees, size=n))
    k = np.zeros((n, 3, 3))  # the cross-product matrix of each axis
    k[:, 0, 1], k[:, 0, 2], k[:, 1, 2] = -axis[:, 2], axis[:, 1], -axis[:, 0]
    k -= k.transpose(0, 2, 1)
    s, c = np.sin(angle)[:, None, None], np.cos(angle)[:, None, None]
    return np.eye(3) + s * k + (1 - c) * k @ k


def rotate(x: np.ndarray, sensors: Sequence[Sequence[Sequence[int]]], rng: np.random.Generator,
           max_degrees: float) -> np.ndarray:
    """``x`` (N, T, C) with each sensor of each window turned by its own random rotation; every
    triple of a sensor (its channel indices) by the same matrix."""
    out = x.copy()
    for triples in sensors:
        r = random_rotations(rng, len(x), max_degrees)
        for triple in triples:
            out[:, :, list(triple)] = np.einsum("nij,ntj->nti", r, x[:, :, list(triple)])
    return out


def smooth_curves(rng: np.random.Generator, shape: tuple[int, ...], steps: int, knots: int,
                  sigma: float) -> np.ndarray:
    """Random curves of ``steps`` points, one per entry of ``shape``: N(1, sigma) values at
    ``knots`` + 2 evenly spaced points, linear in between. Shape ``shape + (steps,)``."""
    values = rng.normal(1.0, sigma, size=(*shape, knots + 2))
    position = np.linspace(0, knots + 1, steps)
    left = np.minimum(position.astype(int), knots)
    frac = position - left
    return values[..., left] * (1 - frac) + values[..., left + 1] * frac


def time_warp(x: np.ndarray, rng: np.random.Generator, sigma: float, knots: int) -> np.ndarray:
    """``x`` (N, T, C) resampled at warped times: a positive random speed per step, integrated,
    rescaled to run from 0 to T - 1 (so the window keeps its ends), linear interpolation."""
    n, steps, _ = x.shape
    speed = np.maximum(smooth_curves(rng, (n,), steps, knots, sigma), 1e-3)
    t = np.cumsum(speed, axis=1)
    t = (t - t[:, :1]) / (t[:, -1:] - t[:, :1]) * (steps - 1)
    left = np.minimum(np.floor(t).astype(int), steps - 2)
    frac = (t - left)[:, :, None]
    a = np.take_along_axis(x, left[:, :, None], axis=1)
    b = np.take_along_axis(x, left[:, :, None] + 1, axis=1)
    return a * (1 - frac) + b * frac


def mask_bands(x: np.ndarray, rng: np.random.Generator, axis: int, max_width: int,
               count: int) -> np.ndarray:
    """``x`` (N, T, C) with ``count`` bands along ``axis`` (1: time, 2: channels) of each window
    set to 0: each band's width uniform in [0, max_width] (at most the axis' length), its start
    uniform over the positions where it fits."""
    n, length = x.shape[0], x.shape[axis]
    position = np.arange(length)
    out = x
    for _ in range(count):
        width = rng.integers(0, min(max_width, length) + 1, size=n)
        start = np.floor(rng.random(n) * (length - width + 1)).astype(int)
        band = (position >= start[:, None]) & (position < (start + width)[:, None])
        out = np.where(np.expand_dims(band, 3 - axis), np.zeros((), x.dtype), out)
    return out


def shift_in_time(x: np.ndarray, rng: np.random.Generator, max_steps: int) -> np.ndarray:
    """``x`` (N, T, C), each window moved by an integer uniform in [-max_steps, max_steps] steps
    (edge steps repeated into the gap it leaves)."""
    n, steps = x.shape[:2]
    shift = rng.integers(-max_steps, max_steps + 1, size=n)
    source = np.clip(np.arange(steps)[None, :] - shift[:, None], 0, steps - 1)
    return np.take_along_axis(x, source[:, :, None], axis=1)


def mixup(x: np.ndarray, y: np.ndarray, rng: np.random.Generator,
          alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x2, y2, w2)``: the batch ``(x, y)`` (class ids) mixed as the module docstring says,
    ``x2`` the mixed windows twice, ``y2`` their two labels, ``w2`` their weights (2 lam,
    2 (1 - lam)), so that the weighted mean cross-entropy over ``x2`` is the mean over windows of
    ``lam CE(y_i) + (1 - lam) CE(y_j)``."""
    n = len(x)
    partner = rng.permutation(n)
    lam = rng.beta(alpha, alpha, size=n).astype(np.float32)
    weight = lam.reshape((n,) + (1,) * (x.ndim - 1))
    mixed = (weight * x + (1 - weight) * x[partner]).astype(x.dtype)
    return (np.concatenate([mixed, mixed]), np.concatenate([y, y[partner]]),
            np.concatenate([2 * lam, 2 * (1 - lam)]))


def check_mixup(options: dict | None, task) -> None:
    """``mixup`` mixes class labels: ValueError unless ``task`` has classes."""
    if (options or {}).get("mixup") and task.kind != "classification":
        raise ValueError(f"augment mixup mixes class labels; task {task.name} is a {task.kind} "
                         "task (unset --augment mixup)")


class Augmenter:
    """The per-batch transform of a run: ``augmenter(x_batch, rng) -> x_batch``, on normalised
    batches (see the module docstring)."""

    def __init__(self, options: dict, sensors, mean: np.ndarray, std: np.ndarray):
        self.options = check_options(options)
        if self.options["rotation"] and not sensors:
            raise ValueError("augment rotation needs a task whose channels are sensor xyz "
                             "triples (har2, har6, dsa19; windows with its option sensors, "
                             "e.g. --task-option sensors=[[0,1,2]]); this task declares none")
        self.sensors = [[tuple(int(i) for i in triple) for triple in s] for s in sensors]
        self.mean = np.asarray(mean, dtype=np.float32)
        self.std = np.asarray(std, dtype=np.float32)

    def __call__(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        o = self.options
        raw = x.astype(np.float64) * self.std + self.mean
        n, steps, channels = raw.shape
        if o["rotation"]:
            raw = rotate(raw, self.sensors, rng, o["rotation"])
        if o["scale"]:
            raw = raw * rng.normal(1.0, o["scale"], size=(n, 1, channels))
        if o["magnitude_warp"]:
            curves = smooth_curves(rng, (n, channels), steps, int(o["knots"]), o["magnitude_warp"])
            raw = raw * curves.transpose(0, 2, 1)
        if o["time_warp"]:
            raw = time_warp(raw, rng, o["time_warp"], int(o["knots"]))
        if o["jitter"]:
            raw = raw + rng.normal(0.0, 1.0, size=raw.shape) * (o["jitter"] * self.std)
        out = ((raw - self.mean) / self.std).astype(np.float32)
        if o["time_shift"]:
            out = shift_in_time(out, rng, int(o["time_shift"]))
        if o["time_mask"]:
            out = mask_bands(out, rng, 1, int(o["time_mask"]), int(o["masks"]))
        if o["feature_mask"]:
            out = mask_bands(out, rng, 2, int(o["feature_mask"]), int(o["masks"]))
        return out
