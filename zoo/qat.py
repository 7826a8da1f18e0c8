"""Quantization-aware training (QAT) of a cell's whole step, as the int8 step model computes it.

An int8 step model holds every tensor of the step in 8 bits: the input x_t, the state, and each
intermediate (the products, the pre-activation, the increment). Post-training calibration picks
each tensor's range from maxima over sample data, which for a recurrent step leaves the small
per-step increments at a coarse resolution; the error then accumulates over the sequence.
Quantization-aware training (Jacob et al., "Quantization and Training of Neural Networks for
Efficient Integer-Arithmetic-Only Inference", CVPR 2018) instead trains with every such tensor
already rounded to its int8 grid, so the weights learn to live with the rounding.

Here a cell names its *quantization points* (one per tensor the int8 step model will hold) and
passes each tensor through `QuantPoints.apply`, which is
`keras.quantizers.fake_quant_with_min_max_vars` with that point's range: forward, the value is
clamped to the range and rounded to one of its 256 levels (zero exactly on the grid); backward,
the gradient passes straight through inside the range and is zero outside it. On the TensorFlow
backend the op is TensorFlow's own FakeQuant, which the TFLite converter folds into the int8
tensors' scales and zero points: the exported model then uses the ranges training used instead
of re-calibrating, and computes what training simulated (up to the integer kernels' rounding).

The ranges are *tracked*, not learned: they live in one non-trainable weight per cell
(``qat_ranges``, shape ``(points, 2)``) and `track_ranges` sets them from the tensors observed
over real sequences (a percentile of each tensor, with zero always inside), blended with the
previous ranges by an exponential moving average; `RangeTracking` does that at the start of every
epoch. Observing runs the cell step by step in eager mode, outside the compiled training loop, so
it works on every backend (a variable cannot be assigned from inside a JAX scan).

Weights are fake-quantized as the zoo's export quantizes them: symmetric, per tensor, 8 bits on
the narrow range [-127, 127] with scale ``max|w| / 127`` (a graph with FakeQuant activations needs
the converter's dense-layer per-tensor switch as well, `zoo.export.quantize.set_integer_mode`). The
exported graph leaves that rounding to the converter (``weights=False`` in `QuantPoints`), which
gives the same integers.
"""

from __future__ import annotations

import contextlib
import logging

import keras
import numpy as np
from keras import ops

__all__ = ["QAT_MODES", "check_qat", "check_percentile", "QuantPoints", "quantize_weight",
           "observing", "only_points", "observed_ranges", "track_ranges", "calibrate_ranges",
           "RangeTracking", "tracking_sample", "qat_cells", "tracking_callbacks",
           "saved_qat_defaults"]

QAT_MODES = ("int8",)
_log = logging.getLogger(__name__)
BITS = 8
DEFAULT_PERCENTILE = 99.99


def check_percentile(percentile) -> float:
    """``qat_percentile`` validated: a number in (50, 100], the percentile of each tensor's
    values that bounds its tracked range (100 - it bounds the other end)."""
    if isinstance(percentile, bool) or not isinstance(percentile, (int, float)) or not (
            50.0 < float(percentile) <= 100.0):
        raise ValueError(f"qat_percentile must be a number in (50, 100], got {percentile!r} "
                         f"(default {DEFAULT_PERCENTILE}: each range spans nearly every value)")
    return float(percentile)


def check_qat(qat) -> str | None:
    """``qat`` validated: None (off) or ``"int8"``."""
    if qat is None or qat is False:
        return None
    if qat not in QAT_MODES:
        raise ValueError(f"qat must be None or one of {QAT_MODES}, got {qat!r}")
    return qat


def quantize_weight(w):
    """``w`` rounded to the symmetric per-tensor int8 grid the TFLite converter stores it on
    (scale ``max|w| / 127``, narrow range), with a straight-through gradient."""
    m = ops.stop_gradient(ops.maximum(ops.max(ops.abs(w)), 1e-12))
    return keras.quantizers.fake_quant_with_min_max_vars(w, -m, m, num_bits=BITS,
                                                         narrow_range=True)


class QuantPoints:
    """The named quantization points of one cell and their ranges.

    Args:
        cell: the layer that owns the ranges (a ``qat_ranges`` weight is added to it).
        names: the points, in the order the step computes them.
        fixed: ``{name: (lo, hi)}`` points whose range is set by the cell, not tracked (the
            state's grid ``[0, state_clip]``).
        weights: fake-quantize weights too (True in training; False in the graph given to the
            converter, which rounds the weights itself to the same integers).
        bias_grid: with ``weights``, round each FULLY_CONNECTED bias to the int32 grid the
            converter stores it on (`bias`), so that the step computes what the int8 kernel
            does; False keeps models trained before it computing as they were.
        percentile: the percentile of each tracked point's observed values that bounds its
            range (`observed_ranges`; default `DEFAULT_PERCENTILE`).
    """

    def __init__(self, cell, names, fixed=None, weights=True, bias_grid=False,
                 percentile=DEFAULT_PERCENTILE):
        self.percentile = check_percentile(percentile)
        self.names = list(names)
        self.fixed = dict(fixed or {})
        self.weights = weights
        self.bias_grid = bias_grid
        self.index = {name: i for i, name in enumerate(self.names)}
        initial = np.array([self.fixed.get(n, (-1.0, 1.0)) for n in self.names], np.float32)
        self.ranges = cell.add_weight(shape=initial.shape, name="qat_ranges", trainable=False,
                                      initializer=keras.initializers.Constant(initial))
        self.cell = cell
        self.enabled = None  # None: every point; else the only ones quantized (`only_points`)

    def apply(self, name: str, x):
        """``x`` fake-quantized at point ``name`` (and recorded when observing)."""
        observer = getattr(self.cell, "_qat_observer", None)
        if observer is not None:
            observer.values.setdefault(name, []).append(ops.convert_to_numpy(x))
        if self.enabled is not None and name not in self.enabled:
            return x
        i = self.index[name]
        return keras.quantizers.fake_quant_with_min_max_vars(
            x, self.ranges[i, 0], self.ranges[i, 1], num_bits=BITS)

    def weight(self, w):
        return quantize_weight(w) if self.weights else w

    def dense(self, x, inputs: str, w, b=None):
        """A FULLY_CONNECTED of the step as its int8 kernel computes it: ``x`` (point
        ``inputs``) times ``w`` on its int8 grid (`weight`), plus ``b`` on its int32 grid
        (`bias`) when there is one."""
        out = ops.matmul(x, self.weight(w))
        return out if b is None else out + self.bias(b, inputs, w)

    def bias(self, b, inputs: str, w):
        """``b``, the bias of a FULLY_CONNECTED whose input is point ``inputs`` and whose weight
        is ``w``, on the int32 grid the converter stores it on: scale ``s_in * s_w`` (the
        input's int8 scale times the weight's, ``max|w| / 127``), straight-through. The float
        bias differs from it by up to half a step, which flips the output's rounding where the
        sum lies that close to a tie: about 1 % of the elements of a step, enough to part the
        Keras model from the int8 one on 1-2 % of the windows of a premultiplied SiRNN."""
        if not (self.weights and self.bias_grid):
            return b
        i = self.index[inputs]
        s_in = (self.ranges[i, 1] - self.ranges[i, 0]) / (2 ** BITS - 1)
        s_w = ops.maximum(ops.max(ops.abs(w)), 1e-12) / 127.0
        step = ops.stop_gradient(s_in * s_w)
        return b + ops.stop_gradient(ops.round(b / step) * step - b)

    def set_ranges(self, ranges: dict[str, tuple[float, float]], momentum: float = 0.0):
        """Set the tracked points' ranges: ``momentum * old + (1 - momentum) * new``."""
        current = np.array(ops.convert_to_numpy(self.ranges))
        for name, (lo, hi) in ranges.items():
            if name in self.fixed or name not in self.index:
                continue
            i = self.index[name]
            new = np.array([min(lo, 0.0), max(hi, 0.0)], np.float32)
            current[i] = momentum * current[i] + (1.0 - momentum) * new
            if current[i, 1] - current[i, 0] < 1e-6:  # a constant-zero tensor: any tiny range
                current[i] = (-1e-3, 1e-3)
        self.ranges.assign(current)

    def as_dict(self) -> dict[str, tuple[float, float]]:
        values = ops.convert_to_numpy(self.ranges)
        return {n: (float(values[i, 0]), float(values[i, 1])) for n, i in self.index.items()}


def saved_qat_defaults(config: dict) -> dict:
    """A QAT cell's saved ``config`` with the options it predates at the values it was trained
    with: a model saved before ``qat_bias`` existed added the float biases, and keeps doing so."""
    return {"qat_bias": False, **config} if config.get("qat") else config


def qat_cells(model: keras.Model) -> list:
    """The cells of ``model`` that train with QAT (they have ``quant_points``)."""
    cells = []
    for layer in model.layers:
        cell = getattr(layer, "cell", None)
        if getattr(cell, "quant_points", None) is not None:
            cells.append(cell)
    return cells


class _Observer:
    # A plain holder: a dict set on a Keras layer would be wrapped in a tracked copy.
    def __init__(self):
        self.values: dict[str, list] = {}


@contextlib.contextmanager
def observing(cell):
    """Record the values reaching every quantization point of ``cell`` while inside; yields the
    ``{name: [arrays]}`` record. Eager calls only (a compiled loop is not recorded)."""
    observer = _Observer()
    cell._qat_observer = observer
    try:
        yield observer.values
    finally:
        cell._qat_observer = None


@contextlib.contextmanager
def only_points(cell, names, weights: bool):
    """Inside, ``cell`` quantizes only the points ``names`` and, if ``weights``, its weights:
    every other tensor of the step stays float. A diagnostic of which rounding costs accuracy
    (`zoo.experiments.qat_points`). It acts when the step is traced: a model's compiled predict
    function must be made again inside (``make_predict_function(force=True)``)."""
    q = cell.quant_points
    unknown = set(names) - set(q.names)
    if unknown:
        raise ValueError(f"{cell.name} has no quantization point {sorted(unknown)}; "
                         f"its points: {q.names}")
    saved = q.enabled, q.weights
    q.enabled, q.weights = frozenset(names), bool(weights)
    try:
        yield
    finally:
        q.enabled, q.weights = saved


def observed_ranges(cell, x: np.ndarray, percentile: float | None = None,
                    batch: int = 256) -> dict[str, tuple[float, float]]:
    """Each quantization point's range over the sequences ``x`` (N, T, d) run through ``cell``
    step by step: the ``100 - percentile`` and ``percentile`` percentiles of its values
    (``percentile`` None: the cell's own, its ``qat_percentile``)."""
    if percentile is None:
        percentile = cell.quant_points.percentile
    values: dict[str, list] = {}
    for start in range(0, len(x), batch):
        xb = np.asarray(x[start:start + batch], np.float32)
        h = np.zeros((len(xb), int(cell.state_size)), np.float32)
        with observing(cell) as record:
            for t in range(xb.shape[1]):
                h = ops.convert_to_numpy(cell(xb[:, t], [h])[0])
        for name, arrays in record.items():
            values.setdefault(name, []).extend(a.ravel() for a in arrays)
    out = {}
    for name, arrays in values.items():
        flat = np.concatenate(arrays)
        out[name] = (float(np.percentile(flat, 100 - percentile)),
                     float(np.percentile(flat, percentile)))
    return out


def track_ranges(model: keras.Model, x: np.ndarray, momentum: float = 0.0,
                 percentile: float | None = None) -> dict:
    """Set the ranges of every QAT cell of ``model`` from the sequences ``x`` (normalised, as
    the model takes them); returns ``{cell name: {point: (lo, hi)}}`` as set."""
    out = {}
    for cell in qat_cells(model):
        cell.quant_points.set_ranges(observed_ranges(cell, x, percentile), momentum)
        out[cell.name] = cell.quant_points.as_dict()
    return out


def calibrate_ranges(model: keras.Model, x: np.ndarray,
                     percentile: float | None = None) -> dict:
    """Set the ranges of every QAT cell of ``model`` from its float step, as post-training
    calibration sees a float model: each point observed with every other tracked point float
    (the fixed grids, such as the state's, kept). `track_ranges` observes a point through the
    ranges its upstream points hold, and a fresh QAT model holds placeholder ranges ([-1, 1]):
    what reaches every later point is clipped, and the EMA of later epochs widens each range
    only as fast as its upstream clips let through. A rotation-35 HAR-2 SiRNN's QAT fine-tune
    then started with the activation's range at [0, 2] (the float step reaches 90 there), its
    int8 step at 76 % validation accuracy (96 % float); calibrated, at 93 %
    (``zoo bench qat-points``, docs/realscale.md §13). Returns ``{cell name: {point: (lo,
    hi)}}`` as set."""
    with contextlib.ExitStack() as float_step:
        for cell in qat_cells(model):
            q = cell.quant_points
            float_step.enter_context(only_points(cell, [n for n in q.names if n in q.fixed],
                                                 weights=False))
        return track_ranges(model, x, momentum=0.0, percentile=percentile)


class RangeTracking(keras.callbacks.Callback):
    """Track the QAT ranges at the start of every epoch from a fixed sample of training
    sequences, as an exponential moving average (``momentum`` of the old range), so the ranges
    follow the weights as they train without jumping. The ranges are weights of the model, so
    a resumed run continues from the checkpoint's; set them once with `calibrate_ranges` before
    the first epoch of a fresh run."""

    def __init__(self, x: np.ndarray, momentum: float = 0.5,
                 percentile: float | None = None):
        super().__init__()
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {momentum}")
        self.x, self.momentum, self.percentile = x, momentum, percentile

    def on_epoch_begin(self, epoch, logs=None):
        track_ranges(self.model, self.x, self.momentum, self.percentile)


def tracking_sample(x: np.ndarray, seed: int, size: int = 128) -> np.ndarray:
    """The fixed training sequences a run tracks its QAT ranges on (``size`` of ``x``, drawn
    with ``seed``), the same on every resume."""
    idx = np.random.default_rng(seed).choice(len(x), size=min(size, len(x)), replace=False)
    return np.asarray(x[np.sort(idx)], np.float32)


def tracking_callbacks(model: keras.Model, x_train: np.ndarray, seed: int, *,
                       fresh: bool) -> list:
    """For a model trained with QAT: its ranges calibrated on training sequences before a
    ``fresh`` run's first epoch (`calibrate_ranges`), and the `RangeTracking` callback that
    tracks them every epoch (a resumed run keeps its checkpoint's ranges); for any other model,
    nothing."""
    cells = qat_cells(model)
    if not cells:
        return []
    sample = tracking_sample(x_train, seed)
    if fresh:
        calibrate_ranges(model, sample)
        _log.info(f"qat: ranges of {len(cells)} cell(s) set from {len(sample)} training "
                  "sequences; tracked every epoch")
    return [RangeTracking(sample)]
