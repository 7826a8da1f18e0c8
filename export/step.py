"""Split a trained classifier (`zoo.export.layer_chain.LayerChain`) into a streaming pair.

    step: (x_t [1, d], h_prev [1, D]) -> h_t [1, D]      the Dense layers before the recurrent
                                                          ones, then each recurrent layer's cell
                                                          once (its own ``call(inputs, states)``)
    head: h_T [1, D] -> logits [1, C]                     the head on the last layer's output

``D`` is every recurrent layer's states concatenated in order (`LayerChain.state_layout`: an LSTM's
h then c, a stacked pair's first layer then second), so a device loop feeds back one vector
whatever the model; a single-state single-layer model (every zoo run) is exactly its cell, with
no slicing or concatenation. The time loop then lives in device code (a WHILE graph cannot be
calibrated for int8, TensorFlow bug #75140, and unrolling it costs ~1 MB; the step model is a few
KB). Both models share the trained layers, so the float step loop is the Keras model exactly.

Calibration data for an integer step model are real (x_t, h_{t-1}) pairs: the float step model is
run over real training sequences and the pairs along those trajectories are subsampled.
"""

from __future__ import annotations

import keras
import numpy as np

from zoo.export.convert import clone_with_config
from zoo.export.layer_chain import LayerChain, UnsupportedLayerError, layer_chain
from zoo.layers import recurrent_layers

__all__ = ["StepFormError", "recurrent_layers", "state_size", "step_models", "step_chain",
           "state_scales", "trajectories", "calibration_pairs", "without_fake_quant", "for_integer_conversion",
           "is_qat"]

# Input names of the step signature. The converter orders inputs alphabetically, so device code
# must look the indices up (zoo export records them in model_card.json as step_io).
X_NAME, H_NAME = "x_t", "h_prev"


class StepFormError(UnsupportedLayerError):
    """The model has no step form (it is not a `LayerChain`, or a cell's output is not its first
    state): export it with ``--form sequence``."""


def step_chain(model: keras.Model) -> LayerChain:
    """The model's `LayerChain`, checked to have a step form; `StepFormError` otherwise."""
    try:
        chain = layer_chain(model)
    except UnsupportedLayerError as err:
        raise StepFormError(str(err)) from None
    if chain.normalization is not None:
        raise StepFormError(f"model {model.name!r} starts with a Normalization layer: the step "
                            "form takes normalised input (zoo.export.layer_chain.logits_model "
                            "leaves it out)")
    width = chain.features
    for layer in chain.before:
        width = int(layer.units)
    for layer in chain.recurrent:
        _check_output_is_first_state(layer, width)
        width = int(layer.cell.output_size)
    return chain


def _check_output_is_first_state(layer, width: int) -> None:
    """The head reads the last layer's output from the state vector, and the next layer's input
    from its cell's output: they must be the same tensor (they are in every supported cell; a
    cell computing its output apart from its state has no step form)."""
    rng = np.random.default_rng(0)
    sizes = [part["size"] for part in LayerChain("", None, width, None,
                                                 recurrent=[layer]).state_layout]
    states = [rng.uniform(-0.5, 0.5, (2, size)).astype(np.float32) for size in sizes]
    out, new = layer.cell(rng.normal(size=(2, width)).astype(np.float32), states)
    first = new[0] if isinstance(new, (list, tuple)) else new
    if not np.array_equal(np.asarray(out), np.asarray(first)):
        raise StepFormError(f"layer {layer.name!r} ({type(layer.cell).__name__}): the cell's "
                            "output is not its first state; use --form sequence")


def state_size(model: keras.Model) -> int | None:
    """The width of the step model's state vector (every recurrent layer's states together),
    or None when the model has no step form."""
    try:
        return layer_chain(model).state_size
    except UnsupportedLayerError:
        return None


def without_fake_quant(model: keras.Model) -> keras.Model:
    """``model`` with the cells' training-time fake quantization of the state removed (same
    weights; ``state_clip`` kept). For integer export: the int8 / int16 state tensor *is* the
    quantization, and fake-quant would otherwise convert to float ROUND / (DE)QUANTIZE ops in
    the integer graph."""
    if not any("state_quant_bits" in str(layer.get_config()) for layer in model.layers):
        return model

    return clone_with_config(model, "state_quant_bits", None)


def is_qat(model: keras.Model) -> bool:
    """Whether ``model`` was trained with quantization-aware training of the whole step
    (`zoo.qat`): its cells' configs say ``qat``."""
    return any(getattr(getattr(layer, "cell", None), "qat", None) for layer in model.layers)


def for_integer_conversion(model: keras.Model) -> keras.Model:
    """The model an integer conversion starts from. A QAT model keeps its fake quantization:
    each point is a FakeQuant op whose range the converter takes as the int8 tensor's scale and
    zero point; only the weights' rounding is left to the converter (``qat_weights=False``),
    which rounds them to the same integers. Any other model loses its state fake-quant
    (`without_fake_quant`) and is calibrated."""
    if is_qat(model):
        return clone_with_config(model, "qat_weights", False)
    return without_fake_quant(model)


def step_models(model: keras.Model, scales: list[float] | None = None):
    """(step, head) Keras models with static batch 1, sharing ``model``'s trained layers.
    ``scales`` (`state_scales`): each state part is held in the vector times its scale."""
    chain = step_chain(model)
    return (_step_model(model.name, chain, batch_size=1, scales=scales),
            _head_model(model.name, chain, scales))


class _Renamed(keras.layers.Layer):
    """``layer`` called under another name: one Functional model cannot hold two operations of
    the same name (two Keras LSTM layers' cells are both ``lstm_cell``; a nested model's layers
    may repeat the outer one's names)."""

    def __init__(self, layer, name: str):
        super().__init__(name=name)
        self.inner = layer

    def call(self, *args, **kwargs):
        return self.inner(*args, **kwargs)


def _uniquely_named(layers: list) -> list:
    """``layers``, each later one whose name repeats an earlier one's wrapped in `_Renamed`
    (a model of unique names is built exactly as before)."""
    seen, out = set(), []
    for i, layer in enumerate(layers):
        out.append(layer if layer.name not in seen else _Renamed(layer, f"{layer.name}_{i}"))
        seen.add(layer.name)
    return out


def _step_model(name: str, chain: LayerChain, batch_size: int | None,
                scales: list[float] | None = None) -> keras.Model:
    x_t = keras.Input((chain.features,), batch_size=batch_size, name=X_NAME)
    h_prev = keras.Input((chain.state_size,), batch_size=batch_size, name=H_NAME)
    x, layout, new_states = x_t, chain.state_layout, []
    scales = scales or [1.0] * len(layout)
    called = _uniquely_named(chain.before + [layer.cell for layer in chain.recurrent])
    before, cells = called[:len(chain.before)], called[len(chain.before):]
    for layer in before:
        x = layer(x)
    for cell, parts in zip(cells, chain.states_by_layer()):
        states = [h_prev] if len(layout) == 1 else \
            [_part(h_prev, p, 1 / scales[layout.index(p)]) for p in parts]
        x, new = cell(x, states)
        new = list(new) if isinstance(new, (list, tuple)) else [new]
        new_states += [_times(s, scales[layout.index(p)]) for s, p in zip(new, parts)]
    if len(new_states) == 1:
        h_t = x  # the cell's output: its state (checked by step_chain), as the zoo always did
    else:
        h_t = keras.layers.Concatenate(axis=-1, name="h_t")(new_states)
    return keras.Model([x_t, h_prev], h_t, name=f"{name}_step")


def _part(vector, part: dict, factor: float):
    """One part of the state vector, back at its own scale."""
    return _times(vector[:, part["offset"]:part["offset"] + part["size"]], factor)


def _times(tensor, factor: float):
    return tensor if factor == 1.0 else _Scale(factor)(tensor)


class _Scale(keras.layers.Layer):
    """``x * factor``, a power of two (`state_scales`): the product is exact, so the float step
    model computes what it computed unscaled. (A layer, not ``x * factor`` on the symbolic
    tensor: Keras 3.15 marks that product sparse, which a cell then refuses.)"""

    def __init__(self, factor: float, **kwargs):
        super().__init__(**kwargs)
        self.factor = float(factor)

    def call(self, inputs):
        return inputs * self.factor

    def compute_output_shape(self, input_shape):
        return input_shape


def _head_model(name: str, chain: LayerChain, scales: list[float] | None = None) -> keras.Model:
    h = keras.Input((chain.state_size,), batch_size=1, name="h")
    layout = chain.state_layout
    last = chain.states_by_layer()[-1][0]
    y = h if len(layout) == 1 else \
        _part(h, last, 1 / (scales[layout.index(last)] if scales else 1.0))
    for layer in _uniquely_named(chain.head):
        y = layer(y)
    return keras.Model(h, y, name=f"{name}_head")


def state_scales(model: keras.Model, trajectories_: np.ndarray) -> list[float] | None:
    """A power-of-two factor per part of a state vector of several parts (None for one), from
    float trajectories: each part is held in the vector times the factor that brings its largest
    magnitude into (0.5, 1]. The int8 state vector has one scale for all its parts (the
    converter gives a CONCATENATION's inputs its output's), so unscaled an LSTM's h (in [-1, 1])
    would share the step of its c (here up to 16 in magnitude), ~20 levels for h; scaled, each
    part spans the int8 range. Multiplying by a power of two is exact in float: the float step
    model computes what it computed before."""
    layout = step_chain(model).state_layout
    if len(layout) == 1:
        return None
    scales = []
    for part in layout:
        values = trajectories_[..., part["offset"]:part["offset"] + part["size"]]
        largest = float(np.max(np.abs(values))) if values.size else 0.0
        scales.append(2.0 ** -int(np.ceil(np.log2(largest))) if largest > 0 else 1.0)
    return scales


def trajectories(model: keras.Model, x: np.ndarray, batch: int = 256,
                 scales: list[float] | None = None) -> np.ndarray:
    """States h_0..h_T (N, T + 1, D) of the float step model over normalised sequences ``x``
    (each part of the vector times its factor of ``scales``)."""
    chain = step_chain(model)
    step = _step_model(model.name, chain, batch_size=None, scales=scales)
    out = []
    for start in range(0, len(x), batch):
        xb = np.asarray(x[start:start + batch], np.float32)
        h = np.zeros((len(xb), chain.state_size), np.float32)
        states = [h]
        for t in range(xb.shape[1]):
            h = np.asarray(step([xb[:, t], h]))
            states.append(h)
        out.append(np.stack(states, axis=1))
    return np.concatenate(out, axis=0)


def calibration_pairs(model: keras.Model, x: np.ndarray, *, sequences: int = 200,
                      pairs: int = 1000, seed: int = 0, scales="none"):
    """Real (x_t, h_{t-1}) pairs and final states h_T for calibrating a step / head model.

    ``sequences`` training sequences are run through the float step model; ``pairs``
    (x_t, h_{t-1}) are drawn uniformly over (sequence, t) from their trajectories, t = 0
    (h = 0) included. Returns ``(x_t [P, d], h_prev [P, D], h_T [S, D])``; with
    ``scales="auto"`` the state parts are held scaled (`state_scales`, from these trajectories)
    and ``(x_t, h_prev, h_T, scales)`` is returned, the scales to build the step models with.
    """
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(x), size=min(sequences, len(x)), replace=False)
    xs = np.asarray(x[idx], np.float32)
    traj = trajectories(model, xs)
    if scales == "auto":
        found = state_scales(model, traj)
        if found is not None:  # the same states, held scaled (exact: powers of two)
            layout = step_chain(model).state_layout
            traj = traj * np.concatenate([np.full(p["size"], f, np.float32)
                                          for p, f in zip(layout, found)])
        return (*_draw(rng, xs, traj, pairs), found)
    return _draw(rng, xs, traj, pairs)


def _draw(rng, xs: np.ndarray, traj: np.ndarray, pairs: int):
    n, steps = xs.shape[:2]
    flat = rng.choice(n * steps, size=min(pairs, n * steps), replace=False)
    seq, t = flat // steps, flat % steps
    return xs[seq, t], traj[seq, t], traj[:, -1]
