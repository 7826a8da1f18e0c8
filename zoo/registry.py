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
import inspect
from typing import Any, Callable

import keras


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


def list_models(pattern: str | None = None) -> list[str]:
    """Names of the registered models, sorted; ``pattern`` is a substring filter."""
    names = sorted(_REGISTRY)
    return [n for n in names if pattern is None or pattern in n]


def get_model_entry(name: str) -> ModelEntry:
    try:
        return _REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(name, _REGISTRY, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise ValueError(
            f"unknown model {name!r}.{hint} Valid models: {', '.join(list_models())}") from None


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
        num_classes: width of the Dense head (1 for a regression target); as ``input_shape``.
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
    """
    if pretrained:
        return _pretrained_model(name, pretrained, input_shape, num_classes, overrides)
    if input_shape is None or num_classes is None:
        raise ValueError("create_model needs input_shape and num_classes (or pretrained=...)")
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
    return keras.Model(inputs, outputs, name=name)


def _pretrained_model(name, pretrained, input_shape, num_classes, overrides) -> keras.Model:
    from zoo import pretrained as shipped

    tag = shipped.resolve_tag(name, pretrained)
    cfg = shipped.get_pretrained_cfg(tag)
    if overrides:
        raise ValueError(f"pretrained model {tag} is trained as it is: options "
                         f"{sorted(overrides)} cannot change it (train a new model instead)")
    if input_shape is not None and tuple(input_shape) != tuple(cfg.input_shape):
        raise ValueError(f"pretrained model {tag} takes input_shape {tuple(cfg.input_shape)}, "
                         f"not {tuple(input_shape)}")
    if num_classes is not None and num_classes != cfg.num_classes:
        raise ValueError(f"pretrained model {tag} has {cfg.num_classes} classes, not {num_classes}")
    return shipped.load_pretrained(tag)
