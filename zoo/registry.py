"""A timm-style model registry.

Each cell family registers its recurrent layer class by name with the paper's defaults::

    register_model("irnn", IRNN, defaults={"units": 80, "rank": 16}, paper="Kag et al. 2020")

`create_model(name, input_shape, num_classes, **overrides)` then wraps that recurrent layer into a
`keras.Model`: input -> recurrent layer -> Dense head on the last state (or on every step with
``head="sequence"``). The head outputs logits (or the regression value when ``num_classes == 1``
and ``head_activation`` is left as ``None``).
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import importlib
import inspect
from typing import Any, Callable

import keras

from zoo import model_table
from zoo.compiled import compile_for_head
from zoo.layers import DROPOUT_ARGS, ZooCell


# Arguments of keras.layers.Layer / keras.layers.RNN that every entry accepts.
_LAYER_ARGS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll", "name",
               "dtype")


def _init_params(cls) -> dict[str, Any]:
    params = {}
    for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        params[p.name] = None if p.default is inspect.Parameter.empty else p.default
    return params


@dataclasses.dataclass(frozen=True)
class ModelEntry:
    name: str
    layer_class: type
    defaults: dict[str, Any]
    paper: str
    description: str
    fixed: dict[str, Any]

    def options(self) -> dict[str, Any]:
        """Every option of the layer (cell options included) with its effective default."""
        opts = {}
        cell_class = getattr(self.layer_class, "cell_class", None)
        if cell_class is not None:
            opts.update(_init_params(cell_class))
            if issubclass(cell_class, ZooCell):  # taken through **kwargs by every zoo cell
                opts.update({k: v for k, v in DROPOUT_ARGS.items() if k not in opts})
        opts.update(_init_params(self.layer_class))
        for key in _LAYER_ARGS:
            opts.pop(key, None)
        opts.pop("trainable", None)
        for key in self.fixed:
            opts.pop(key, None)
        opts.update(self.defaults)
        return opts


_REGISTRY: dict[str, ModelEntry] = {}


def register_model(name: str, layer_class: type, *, defaults: dict[str, Any] | None = None,
                   paper: str = "", description: str = "", fixed: dict[str, Any] | None = None):
    """Register ``layer_class`` (a recurrent layer) under ``name`` with the paper's defaults.

    ``fixed`` are options the entry pins (e.g. ``k=1`` for SiRNN): they are not user options.
    Adding a model is one call of this function next to its layer class.
    """
    if name in _REGISTRY:
        raise ValueError(f"model {name!r} is already registered")
    doc = description or (inspect.getdoc(layer_class) or "").split("\n")[0]
    _REGISTRY[name] = ModelEntry(name, layer_class, dict(defaults or {}), paper, doc,
                                 dict(fixed or {}))
    return layer_class


def _import_builtin_families() -> None:
    """Import every built-in family (each registers its models at import), so the registry is
    complete however it was reached (``import zoo`` loads the families lazily, and
    ``from zoo.registry import create_model`` does not go through it)."""
    for module_name in model_table.FAMILIES:
        importlib.import_module(module_name)


def list_models(pattern: str | None = None) -> list[str]:
    """Names of the registered models, sorted.

    ``pattern`` is a shell-style wildcard, as in timm: ``"*rnn*"``, ``"fast*"``, ``"gru"``
    (a name without wildcards matches only itself).
    """
    _import_builtin_families()
    names = sorted(_REGISTRY)
    return names if pattern is None else fnmatch.filter(names, pattern)


def get_model_entry(name: str) -> ModelEntry:
    """The entry of ``name``; an unknown name is a ValueError suggesting the closest ones."""
    _import_builtin_families()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(unknown_model_message(name, list(_REGISTRY))) from None


def unknown_model_message(name: str, known: list[str]) -> str:
    """``unknown model 'sirn'; did you mean 'sirnn'? Valid models: ...`` (difflib's closest)."""
    close = difflib.get_close_matches(name, known, n=3)
    hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
    return f"unknown model {name!r}{hint} Valid models: {', '.join(sorted(known))}"


def check_options(name: str, options: dict[str, Any]) -> ModelEntry:
    """The entry of ``name``; raises ValueError listing the valid options for unknown ones."""
    entry = get_model_entry(name)
    valid = entry.options()
    unknown = sorted(set(options) - set(valid) - set(_LAYER_ARGS))
    if unknown:
        raise ValueError(
            f"unknown option(s) {', '.join(map(repr, unknown))} for model {name!r}. "
            f"Valid options: {', '.join(sorted(valid))}")
    return entry


def create_layer(name: str, **overrides) -> keras.layers.Layer:
    """The registered recurrent layer with its defaults, ``overrides`` applied."""
    entry = check_options(name, overrides)
    kwargs = {**entry.defaults, **overrides, **entry.fixed}
    units = kwargs.pop("units")
    return entry.layer_class(units, **kwargs)


def create_model(name: str, input_shape=None, num_classes: int | None = None, *,
                 pretrained=False, batch_size: int | None = None, head: str = "last",
                 head_activation: str | None = None, **overrides) -> keras.Model:
    """Build ``input -> recurrent layer -> Dense(num_classes)``, or load a pretrained model.

    Args:
        name: a name from `list_models()` (or a pretrained tag such as ``"sirnn.har2"``).
        input_shape: ``(timesteps, features)``; ``timesteps`` may be ``None``. Not needed with
            ``pretrained`` (checked against the pretrained model's when given).
        num_classes: width of the Dense head (1 for a regression target). With ``pretrained``:
            left out (or equal to the pretrained model's), the trained head is kept; another
            number gives a fresh, untrained head of that width on the trained recurrent layer,
            for fine-tuning (timm's ``reset_classifier``; see `reset_head`).
        pretrained: ``False`` (default) for a fresh model; a task (``"har2"``), a tag
            (``"sirnn.har2"``) or ``True`` (``name`` is a tag) for the trained model shipped
            with the zoo (`zoo.list_pretrained()`), sha256-checked, taking raw features (its
            first layer is the training split's normalisation).
        batch_size: a static batch size (1 for TFLite export and for ``stateful=True``).
        head: ``"last"`` classifies the final state h_T (as both papers do); ``"sequence"`` applies
            the head at every step (copy-memory task).
        head_activation: activation of the head; ``None`` gives logits.
        **overrides: options of the recurrent layer (``units``, ``k``, ``rank``...), see
            ``zoo list``.

    Returns:
        A `keras.Model`, compiled for its head so that ``model.fit(x, y)`` trains it: Adam and
        ``SparseCategoricalCrossentropy(from_logits=True)`` with accuracy for the logits head
        (``from_logits=False`` with ``head_activation="softmax"``; mean squared error for one
        output). Compiling it again with a loss that reads the other kind of output (Keras's
        ``loss="sparse_categorical_crossentropy"`` reads probabilities) warns
        (`zoo.compiled`).

    Example:

    ```python
    import numpy as np, zoo
    model = zoo.create_model("sirnn", input_shape=(128, 9), num_classes=6)
    model.fit(np.random.rand(32, 128, 9), np.arange(32) % 6, epochs=1, verbose=0)
    ```
    """
    if pretrained:
        model = _pretrained_model(name, pretrained, input_shape, num_classes, head_activation,
                                  overrides)
        return compile_for_head(model, int(model.outputs[0].shape[-1]), head_activation)
    entry = check_options(name, overrides)  # an unknown name or option first: the likelier slip
    if input_shape is None or num_classes is None:
        raise ValueError(f"create_model({entry.name!r}) needs input_shape and num_classes "
                         "(or pretrained=...)")
    if head not in ("last", "sequence"):
        raise ValueError(f"head must be 'last' or 'sequence', got {head!r}")
    if len(tuple(input_shape)) != 2:
        raise ValueError(f"input_shape must be (timesteps, features), got {tuple(input_shape)}")
    layer = create_layer(name, return_sequences=(head == "sequence"), **overrides)
    inputs = keras.Input(shape=tuple(input_shape), batch_size=batch_size, name="x")
    hidden = layer(inputs)
    if isinstance(hidden, (list, tuple)):  # return_state=True
        hidden = hidden[0]
    outputs = keras.layers.Dense(num_classes, activation=head_activation, name="head")(hidden)
    return compile_for_head(keras.Model(inputs, outputs, name=name), num_classes, head_activation)


def reset_head(model: keras.Model, num_classes: int, activation: str | None = None,
               name: str | None = None) -> keras.Model:
    """``model`` with its final ``Dense`` head replaced by a fresh one of ``num_classes`` units.

    timm's ``reset_classifier`` for a functional Keras model: every layer before the head is the
    same layer object (trained weights shared, not copied), so fine-tuning starts from them; the
    new head is initialised as `create_model` initialises one. The head is the model's last
    layer, which must be a ``Dense`` (a pretrained zoo model nests its trained model after the
    normalisation layer: its last layer is searched the same way).
    """
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < 1:
        raise ValueError(f"num_classes must be an integer >= 1, got {num_classes!r}")
    inner = model.layers[-1]
    if isinstance(inner, keras.Model):  # pretrained: input -> normalization -> trained model
        features = keras.Model(inner.inputs, inner.layers[-1].input, name=f"{inner.name}_body")
        # What feeds the nested model in this graph (its own `.input` is its inner Input).
        hidden = features(model.layers[-2].output)
        inputs = model.inputs
    elif isinstance(inner, keras.layers.Dense):
        inputs, hidden = model.inputs, inner.input
    else:
        raise ValueError(f"the model's last layer is a {type(inner).__name__}, not a Dense head")
    outputs = keras.layers.Dense(num_classes, activation=activation, name="head")(hidden)
    return keras.Model(inputs, outputs, name=name or model.name)


def _pretrained_model(name, pretrained, input_shape, num_classes, head_activation,
                      overrides) -> keras.Model:
    from zoo import pretrained as shipped

    tag = shipped.requested_tag(name, pretrained)
    cfg = shipped.get_pretrained_cfg(tag)
    if overrides:
        raise ValueError(f"pretrained model {tag} is trained as it is: options "
                         f"{sorted(overrides)} cannot change it (train a new model instead)")
    if input_shape is not None and tuple(input_shape) != tuple(cfg.input_shape):
        raise ValueError(f"pretrained model {tag} takes input_shape {tuple(cfg.input_shape)}, "
                         f"not {tuple(input_shape)}")
    keep_head = num_classes is None or num_classes == cfg.num_classes  # timm's rule
    if keep_head and head_activation is not None:
        raise ValueError(f"head_activation applies to a new head: pass num_classes other than "
                         f"pretrained model {tag}'s {cfg.num_classes} to get one")
    model = shipped.load_pretrained(tag)
    return model if keep_head else reset_head(model, num_classes, head_activation)


def describe_models() -> dict[str, dict[str, str]]:
    """What ``zoo list`` shows of each registered model, from the live registry: its
    description, paper and options with their defaults (as text). `zoo.model_table.MODELS` is
    this table written down, so listing needs no Keras; a test keeps the two equal."""
    return {name: {"description": entry.description, "paper": entry.paper,
                   "options": ", ".join(f"{k}={_format_value(v)}"
                                        for k, v in entry.options().items()
                                        if not k.endswith(_WEIGHT_ARG_SUFFIXES))}
            for name, entry in ((n, get_model_entry(n)) for n in list_models())}


# Per-weight initializer / regularizer / constraint arguments: Keras's, left out of the listing.
_WEIGHT_ARG_SUFFIXES = ("_initializer", "_regularizer", "_constraint")


def _format_value(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict) or (hasattr(value, "get_config") and not isinstance(value, str)):
        return type(value).__name__
    return repr(value) if isinstance(value, str) else str(value)
