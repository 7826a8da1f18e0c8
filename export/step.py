"""Split a trained ``input -> recurrent layer -> Dense`` model into a streaming pair.

    step: (x_t [1, d], h_prev [1, D]) -> h_t [1, D]      the cell's own ``call(inputs, states)``
    head: h_T [1, D] -> logits [1, C]                     the model's Dense head

The time loop then lives in device code (a WHILE graph cannot be calibrated for int8, TensorFlow
bug #75140, and unrolling it costs ~1 MB; the step model is a few KB). Both models share the
trained layers, so the float step loop is the Keras model exactly.

Calibration data for an integer step model are real (x_t, h_{t-1}) pairs: the float cell is run
over real training sequences and the pairs along those trajectories are subsampled.
"""

from __future__ import annotations

import keras
import numpy as np

from zoo.export.convert import clone_with_config
from zoo.layers import recurrent_layers

__all__ = ["StepFormError", "recurrent_layers", "state_size", "split_model", "step_models",
           "trajectories", "calibration_pairs", "without_fake_quant", "for_integer_conversion",
           "is_qat"]

# Input names of the step signature. The converter orders inputs alphabetically, so device code
# must look the indices up (zoo export records them in model_card.json as step_io).
X_NAME, H_NAME = "x_t", "h_prev"


def state_size(model: keras.Model) -> int | None:
    """The state width of the model's first recurrent layer with a single state vector (None if
    it has none: e.g. an LSTM carries two)."""
    sizes = [layer.cell.state_size for layer in recurrent_layers(model)]
    return next((int(size) for size in sizes if isinstance(size, int)), None)


class StepFormError(ValueError):
    """The model has no step form (not input -> one recurrent layer -> Dense on its last state,
    or a cell with more than one state vector): export it with ``--form sequence``."""


def split_model(model: keras.Model):
    """(recurrent layer, Dense head) of a zoo classifier; raises if it is not streamable."""
    rnn = recurrent_layers(model)
    dense = [layer for layer in model.layers if isinstance(layer, keras.layers.Dense)]
    other = [layer for layer in model.layers if layer not in rnn + dense
             and not isinstance(layer, keras.layers.InputLayer)]
    if len(rnn) != 1 or len(dense) != 1 or other:
        raise StepFormError(f"step export needs input -> one recurrent layer -> Dense; model "
                            f"{model.name} has {[type(l).__name__ for l in model.layers]}")
    layer = rnn[0]
    if layer.return_sequences or layer.go_backwards:
        raise StepFormError("step export needs a classifier of the last state (head='last', "
                            "forward); this model has return_sequences or go_backwards")
    state_size = layer.cell.state_size
    if isinstance(state_size, (list, tuple)):
        raise StepFormError(f"step export needs a single state vector; "
                            f"{type(layer.cell).__name__} carries {list(state_size)} (e.g. iRNN "
                            "eta_timesteps: a step counter); use --form sequence")
    return layer, dense[0]


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


def step_models(model: keras.Model):
    """(step, head) Keras models with static batch 1, sharing ``model``'s trained layers."""
    layer, head = split_model(model)
    cell = layer.cell
    d = model.inputs[0].shape[-1]
    units = int(cell.state_size)
    x_t = keras.Input((d,), batch_size=1, name=X_NAME)
    h_prev = keras.Input((units,), batch_size=1, name=H_NAME)
    h_t, _ = cell(x_t, [h_prev])
    step = keras.Model([x_t, h_prev], h_t, name=f"{model.name}_step")
    h = keras.Input((units,), batch_size=1, name="h")
    head_model = keras.Model(h, head(h), name=f"{model.name}_head")
    return step, head_model


def trajectories(model: keras.Model, x: np.ndarray, batch: int = 256) -> np.ndarray:
    """States h_0..h_T (N, T + 1, D) of the float cell over normalised sequences ``x``."""
    layer, _ = split_model(model)
    cell = layer.cell
    out = []
    for start in range(0, len(x), batch):
        xb = np.asarray(x[start:start + batch], np.float32)
        h = np.zeros((len(xb), int(cell.state_size)), np.float32)
        states = [h]
        for t in range(xb.shape[1]):
            h = np.asarray(cell(xb[:, t], [h])[0])
            states.append(h)
        out.append(np.stack(states, axis=1))
    return np.concatenate(out, axis=0)


def calibration_pairs(model: keras.Model, x: np.ndarray, *, sequences: int = 200,
                      pairs: int = 1000, seed: int = 0):
    """Real (x_t, h_{t-1}) pairs and final states h_T for calibrating a step / head model.

    ``sequences`` training sequences are run through the float cell; ``pairs`` (x_t, h_{t-1})
    are drawn uniformly over (sequence, t) from their trajectories, t = 0 (h = 0) included.
    Returns ``(x_t [P, d], h_prev [P, D], h_T [S, D])``.
    """
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(x), size=min(sequences, len(x)), replace=False)
    xs = np.asarray(x[idx], np.float32)
    traj = trajectories(model, xs)
    n, steps = xs.shape[:2]
    flat = rng.choice(n * steps, size=min(pairs, n * steps), replace=False)
    seq, t = flat // steps, flat % steps
    return xs[seq, t], traj[seq, t], traj[:, -1]
