"""A Keras classifier read as the chain of layers the export takes (`layer_chain`)::

    keras.Input (N, T, C)
    -> Normalization                 optional, first: becomes ``normalization.json`` (device code
                                     normalises raw features in float, as for every zoo export)
    -> Dense / Dropout ...           optional: applied per time step (inside the step model)
    -> recurrent layers              the zoo's cells, Keras SimpleRNN / GRU / LSTM; stacked, every
                                     one but the last with ``return_sequences=True``
    -> Dense / Dropout ...           the head, on the last layer's final output, ending in a
                                     Dense of one unit per class (a softmax there is left out:
                                     the export gives logits, the same arg max)

Nested models (``Input -> Normalization -> trained model``, as a pretrained zoo model is) are read
through; anything else (Bidirectional, Conv1D, Attention, a second input, ``go_backwards``, a
per-step head) is refused in one line naming the layer and what is supported
(`UnsupportedLayerError`).

The recurrent layers' states, in order, are one concatenated vector on the step model's ``h``
(`LayerChain.state_layout`: an LSTM's h then c, a stacked pair's first layer then second), so
every loop that runs a step export (the C++ loop, device_bench, the C backend) feeds back one
vector whatever the model.

Example:
    >>> import keras, zoo
    >>> model = keras.Sequential([keras.Input((128, 9)), keras.layers.LSTM(16),
    ...                           keras.layers.Dense(6)])
    >>> chain = layer_chain(model)
    >>> chain.state_size, [part["state"] for part in chain.state_layout]
    (32, ['h', 'c'])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import keras
import numpy as np

from zoo.layers import ZooCell

__all__ = ["UnsupportedLayerError", "LayerChain", "layer_chain", "logits_model", "SUPPORTED"]

SUPPORTED = ("supported: keras.Input (batch, time, features) -> Normalization (first layer) -> "
             "Dense / Dropout per step -> recurrent layers (the zoo's cells, SimpleRNN, GRU, "
             "LSTM; stacked with return_sequences=True, forward) -> Dense / Dropout on the last "
             "output, ending in Dense(classes)")
KERAS_CELLS = (keras.layers.SimpleRNNCell, keras.layers.GRUCell, keras.layers.LSTMCell)
# Activations a Dense may have: what the converter lowers to builtin int8 ops the C backend runs.
DENSE_ACTIVATIONS = ("linear", "relu", "relu6", "tanh", "sigmoid")


class UnsupportedLayerError(ValueError):
    """The model is not a chain the export takes; the message names the layer and what is
    supported."""


def _refuse(layer, why: str) -> UnsupportedLayerError:
    return UnsupportedLayerError(f"layer {layer.name!r} ({type(layer).__name__}) {why}; "
                                 f"{SUPPORTED}")


@dataclass
class LayerChain:
    """A model's layers by role (see the module docstring)."""

    name: str
    timesteps: int | None
    features: int
    normalization: tuple | None  # (mean, std) float32 of a leading Normalization layer
    before: list = field(default_factory=list)     # Dense (Dropout left out: inference)
    recurrent: list = field(default_factory=list)  # keras.layers.RNN
    head: list = field(default_factory=list)       # Dense (Dropout left out)
    softmax: bool = False  # the last Dense's softmax: left out of `logits_model`

    @property
    def state_layout(self) -> list[dict]:
        """Where each recurrent layer's states lie in the one state vector: ``layer``, ``cell``,
        ``state`` (``h``, ``c`` for an LSTM's cell state, ``s1``... for other extra states),
        ``offset`` and ``size``, in order."""
        return [part for parts in self.states_by_layer() for part in parts]

    def states_by_layer(self) -> list[list[dict]]:
        """`state_layout`, one list per recurrent layer (in order)."""
        out, offset = [], 0
        for layer in self.recurrent:
            sizes = _state_sizes(layer.cell)
            names = ["h", "c"] if isinstance(layer.cell, keras.layers.LSTMCell) \
                else ["h"] + [f"s{i}" for i in range(1, len(sizes))]
            parts = []
            for name, size in zip(names, sizes):
                parts.append({"layer": layer.name, "cell": type(layer.cell).__name__,
                              "state": name, "offset": offset, "size": size})
                offset += size
            out.append(parts)
        return out

    @property
    def state_size(self) -> int:
        return sum(part["size"] for part in self.state_layout)

    @property
    def classes(self) -> int:
        return int(self.head[-1].units)

    def describe(self) -> list[dict]:
        """The chain for the model card: each exported layer's name, class and role."""
        roles = ([("before", layer) for layer in self.before]
                 + [("recurrent", layer) for layer in self.recurrent]
                 + [("head", layer) for layer in self.head])
        out = ([{"role": "normalization", "to": "normalization.json"}] if self.normalization
               is not None else [])
        out += [{"role": role, "name": layer.name, "class": type(layer).__name__}
                for role, layer in roles]
        if self.softmax:
            out[-1]["softmax"] = "left out: the export gives logits (the same arg max)"
        return out


def _state_sizes(cell) -> list[int]:
    size = cell.state_size
    return [int(s) for s in size] if isinstance(size, (list, tuple)) else [int(size)]


# ------------------------------------------------------------------------------ reading a model
def layer_chain(model: keras.Model) -> LayerChain:
    """``model`` as a `LayerChain`; `UnsupportedLayerError` names the first layer it cannot
    take."""
    if not isinstance(model, keras.Model):
        raise UnsupportedLayerError(f"expected a keras.Model, got {type(model).__name__}")
    try:
        inputs, outputs = model.inputs, model.outputs
    except (AttributeError, ValueError):
        inputs = outputs = None
    if not inputs or not outputs:
        raise UnsupportedLayerError(f"model {model.name!r} has no known input: build it on "
                                    f"keras.Input((timesteps, features)); {SUPPORTED}")
    if len(inputs) != 1 or len(outputs) != 1:
        raise UnsupportedLayerError(f"model {model.name!r} has {len(inputs)} inputs and "
                                    f"{len(outputs)} outputs; {SUPPORTED}")
    if len(inputs[0].shape) != 3 or inputs[0].shape[-1] is None:
        raise UnsupportedLayerError(f"model {model.name!r} takes {tuple(inputs[0].shape)}; "
                                    f"{SUPPORTED}")
    layers = _flatten(model)
    chain = LayerChain(model.name, inputs[0].shape[1], int(inputs[0].shape[-1]), None)
    _sort_roles(chain, layers)
    return chain


def _flatten(model: keras.Model) -> list:
    """The layers from the model's input to its output, nested models read through; a layer
    with more than one input (a branch joining) is refused."""
    out = []
    tensor, stop = model.outputs[0], model.inputs[0]
    while tensor is not stop:
        history = getattr(tensor, "_keras_history", None)
        if history is None:
            raise UnsupportedLayerError(f"model {model.name!r}: its output does not come from "
                                        f"its input through layers; {SUPPORTED}")
        layer, node_index = history.operation, history.node_index
        node = layer._inbound_nodes[node_index]
        if len(node.input_tensors) != 1:
            _refuse_masking(node.input_tensors)
            raise _refuse(layer, f"takes {len(node.input_tensors)} inputs")
        if isinstance(layer, keras.Model):
            out[:0] = _flatten(layer)
        elif not isinstance(layer, keras.layers.InputLayer):
            out.insert(0, layer)
        tensor = node.input_tensors[0]
    return out


def _refuse_masking(tensors) -> None:
    """A recurrent layer fed a mask (two inputs) is the Masking layer's doing: that layer is the
    one named, not the recurrent one it feeds."""
    for tensor in tensors:
        history = getattr(tensor, "_keras_history", None)
        if history is not None and isinstance(history.operation, keras.layers.Masking):
            raise _refuse(history.operation, "masks padded steps, which the exported step "
                                             "model cannot skip (it runs every step); remove "
                                             "it and give windows of one length")


def _sort_roles(chain: LayerChain, layers: list) -> None:
    if layers and isinstance(layers[0], keras.layers.Normalization):
        chain.normalization = _normalization(layers.pop(0), chain.features)
    rnn = [i for i, layer in enumerate(layers) if isinstance(layer, keras.layers.RNN)]
    if not rnn:
        where = layers[0] if layers else None
        if where is not None and not isinstance(where, (keras.layers.Dense,
                                                         keras.layers.Dropout)):
            raise _refuse(where, "cannot be exported")
        raise UnsupportedLayerError(f"model {chain.name!r} has no recurrent layer; {SUPPORTED}")
    first, last = rnn[0], rnn[-1]
    for layer in layers[:first]:
        _check_dense_or_dropout(layer, "before the recurrent layers")
    for layer in layers[first:last + 1]:
        if not isinstance(layer, (keras.layers.RNN, keras.layers.Dropout)):
            raise _refuse(layer, "sits between recurrent layers")
    for layer in layers[last + 1:]:
        _check_dense_or_dropout(layer, "in the head")
    chain.recurrent = [layer for layer in layers[first:last + 1]
                       if isinstance(layer, keras.layers.RNN)]
    for layer in chain.recurrent:
        _check_recurrent(layer, last_one=layer is chain.recurrent[-1])
    chain.before = [layer for layer in layers[:first] if isinstance(layer, keras.layers.Dense)]
    chain.head = [layer for layer in layers[last + 1:] if isinstance(layer, keras.layers.Dense)]
    _check_head(chain)


def _normalization(layer, features: int) -> tuple:
    """(mean, std) float32 per feature of a leading Normalization layer, std as the layer
    divides by it (``max(sqrt(variance), epsilon)``)."""
    if layer.invert:
        raise _refuse(layer, "inverts the normalisation")
    mean = np.asarray(keras.ops.convert_to_numpy(layer.mean), np.float32)
    variance = np.asarray(keras.ops.convert_to_numpy(layer.variance), np.float32)
    if mean.size != features or variance.size != features:
        raise _refuse(layer, f"normalises over {tuple(mean.shape)}, not per feature (axis=-1, "
                             f"{features} features)")
    std = np.maximum(np.sqrt(variance.reshape(-1)), np.float32(keras.backend.epsilon()))
    small = np.flatnonzero(std < 1e-6)
    if small.size:
        raise _refuse(layer, f"divides feature {int(small[0])} by {float(std[small[0]]):.3g} "
                             "(variance ~0: a constant feature when it was adapted)")
    return mean.reshape(-1), std.astype(np.float32)


def _check_dense_or_dropout(layer, where: str) -> None:
    if isinstance(layer, keras.layers.Dropout):
        return
    if not isinstance(layer, keras.layers.Dense):
        raise _refuse(layer, f"cannot be exported {where}")
    name = _activation_name(layer)
    if name not in DENSE_ACTIVATIONS + ("softmax",):
        raise _refuse(layer, f"has activation {name!r} (a Dense may have "
                             f"{', '.join(DENSE_ACTIVATIONS)}, or softmax last)")


def _check_recurrent(layer, last_one: bool) -> None:
    if not isinstance(layer.cell, (ZooCell,) + KERAS_CELLS):
        raise _refuse(layer, f"runs cell {type(layer.cell).__name__}")
    if layer.go_backwards:
        raise _refuse(layer, "runs backwards (go_backwards=True)")
    if layer.return_state:
        raise _refuse(layer, "returns its state (return_state=True)")
    if last_one and layer.return_sequences:
        raise _refuse(layer, "returns every step (return_sequences=True) into the head: a "
                             "per-step head is not supported, the head classifies the last "
                             "output")
    if not last_one and not layer.return_sequences:
        raise _refuse(layer, "feeds another recurrent layer its last output only (it needs "
                             "return_sequences=True)")


def _check_head(chain: LayerChain) -> None:
    if not chain.head:
        raise _refuse(chain.recurrent[-1], "is the model's output: add a Dense head of one "
                                           "unit per class")
    last = chain.head[-1]
    if int(last.units) < 2:
        raise _refuse(last, f"has {last.units} unit: the export checks a classifier, one "
                            "unit per class (>= 2)")
    for layer in chain.head[:-1] + chain.before:
        if _activation_name(layer) == "softmax":
            raise _refuse(layer, "has a softmax that is not the last layer's")
    chain.softmax = _activation_name(last) == "softmax"


def _activation_name(layer) -> str:
    return getattr(layer.activation, "__name__", "")


# ------------------------------------------------------------------------------ the float model
def logits_model(chain: LayerChain, batch_size: int | None = None) -> keras.Model:
    """The chain as one Keras model of normalised input -> logits (the Normalization layer and
    a final softmax left out, Dropout dropped), sharing the trained layers: the model the export
    converts and checks against."""
    x = inputs = keras.Input((chain.timesteps, chain.features), batch_size=batch_size, name="x")
    for layer in chain.before + chain.recurrent + chain.head[:-1]:
        x = layer(x)
    return keras.Model(inputs, logits_head(chain)(x), name=chain.name)


def logits_head(chain: LayerChain) -> keras.layers.Dense:
    """The last Dense, or a linear copy of it (same weights) when it ends in a softmax."""
    last = chain.head[-1]
    if not chain.softmax:
        return last
    linear = keras.layers.Dense.from_config({**last.get_config(), "activation": "linear",
                                             "name": f"{last.name}_logits"})
    linear.build((None, int(last.kernel.shape[0])))
    linear.set_weights(last.get_weights())
    return linear
