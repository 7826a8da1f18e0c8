"""A timm-style model registry.

Each cell family registers a *layer factory* by name with its paper defaults::

    @register_model("irnn", paper="Kag et al., ICLR 2020", defaults={"units": 80, "k": 1})
    def irnn(**options):
        return IRNN(**options)

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


@dataclasses.dataclass(frozen=True)
class ModelEntry:
    name: str
    factory: Callable[..., keras.layers.Layer]
    defaults: dict[str, Any]
    paper: str
    description: str

    def options(self) -> dict[str, Any]:
        """Every option the factory accepts, with its effective default."""
        opts = {}
        for p in inspect.signature(self.factory).parameters.values():
            if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            opts[p.name] = p.default if p.default is not inspect.Parameter.empty else None
        opts.update(self.defaults)
        return opts


_REGISTRY: dict[str, ModelEntry] = {}

# Options of create_model itself (not forwarded to the recurrent layer).
MODEL_OPTIONS = ("batch_size", "head", "head_activation", "stateful_batch")


def register_model(name: str, *, defaults: dict[str, Any] | None = None, paper: str = "",
                   description: str = ""):
    """Decorator: register a recurrent-layer factory under ``name``."""

    def wrap(factory):
        if name in _REGISTRY:
            raise ValueError(f"model {name!r} is already registered")
        doc = description or (inspect.getdoc(factory) or "").split("\n")[0]
        _REGISTRY[name] = ModelEntry(name, factory, dict(defaults or {}), paper, doc)
        return factory

    return wrap


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


def create_layer(name: str, **overrides) -> keras.layers.Layer:
    """The registered recurrent layer with its defaults, ``overrides`` applied."""
    entry = get_model_entry(name)
    valid = entry.options()
    unknown = sorted(set(overrides) - set(valid))
    if unknown:
        raise ValueError(
            f"unknown option(s) {', '.join(map(repr, unknown))} for model {name!r}. "
            f"Valid options: {', '.join(sorted(valid))}")
    return entry.factory(**{**entry.defaults, **overrides})


def create_model(name: str, input_shape, num_classes: int, *, batch_size: int | None = None,
                 head: str = "last", head_activation: str | None = None,
                 **overrides) -> keras.Model:
    """Build ``input -> recurrent layer -> Dense(num_classes)``.

    Args:
        name: a name from `list_models()`.
        input_shape: ``(timesteps, features)``; ``timesteps`` may be ``None``.
        num_classes: width of the Dense head (1 for a regression target).
        batch_size: a static batch size (1 for TFLite export and for ``stateful=True``).
        head: ``"last"`` classifies the final state h_T (as both papers do); ``"sequence"`` applies
            the head at every step (copy-memory task).
        head_activation: activation of the head; ``None`` gives logits.
        **overrides: options of the recurrent layer (``units``, ``k``, ``rank``...), see
            ``zoo list``.
    """
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
