"""The fully resolved training configuration: defaults < recipe (YAML) < command-line flags."""

from __future__ import annotations

import dataclasses
import importlib.resources
from pathlib import Path
from typing import Any

import yaml

# The shipped recipes: models/recipes in a checkout, installed as the zoo.models package.
RECIPES_DIR = Path(str(importlib.resources.files("zoo.models"))) / "recipes"


@dataclasses.dataclass
class TrainConfig:
    task: str
    model: str
    model_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    task_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    epochs: int = 100
    batch_size: int = 128
    lr: float = 1e-2
    optimizer: str = "adam"
    # Step decay "x lr_decay_factor every lr_decay_epochs" (FastGRNN: x0.1 after 200 epochs).
    lr_decay_epochs: int | None = None
    lr_decay_factor: float = 0.1
    clipnorm: float | None = None
    early_stopping_patience: int | None = 20
    monitor: str = "val_loss"
    # FastGRNN three-phase training (dense, iterative hard thresholding, fixed support).
    sparsity_w: float | None = None
    sparsity_u: float | None = None
    seed: int = 0
    # Warm start: a run directory whose trained weights initialise this model (same weight
    # shapes), e.g. quantization-aware fine-tuning of a float run with state_quant_bits set.
    init_from: str | None = None
    mixed_precision: bool = False
    distribute: str = "none"  # none | mirrored
    backend: str = "tensorflow"
    recipe: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ValueError(f"unknown training setting(s) {unknown}; valid: {sorted(fields)}")
        return cls(**data)

    def training_identity(self) -> dict[str, Any]:
        """What must match for a run directory to be resumed (everything but the epoch budget)."""
        identity = self.to_dict()
        identity.pop("epochs")
        return identity


def recipe_path(task: str, model: str) -> Path:
    return RECIPES_DIR / f"{task}-{model}.yaml"


def load_recipe(path: str | Path) -> dict[str, Any]:
    """Read a recipe YAML; its keys are `TrainConfig` fields (``source`` is documentation)."""
    path = Path(path)
    if not path.is_file():
        available = sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))
        raise FileNotFoundError(f"recipe {path} not found; shipped recipes: {', '.join(available)}")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise ValueError(f"recipe {path} is not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise ValueError(f"recipe {path} must be a mapping of settings, got {type(data).__name__}")
    data.pop("source", None)
    return data


def resolve(task: str, model: str, recipe: str | None, overrides: dict[str, Any]) -> TrainConfig:
    """Defaults, then the recipe (``recipe`` path, or the shipped ``<task>-<model>.yaml`` when
    ``recipe`` is None and one exists; ``"none"`` disables it), then explicit overrides."""
    settings: dict[str, Any] = {"task": task, "model": model}
    if recipe != "none":
        path = Path(recipe) if recipe else recipe_path(task, model)
        if recipe or path.is_file():
            data = load_recipe(path)
            for key in ("task", "model"):
                if key in data and data.pop(key) != settings[key]:
                    raise ValueError(f"recipe {path} is for {key} {data.get(key)!r}, not "
                                     f"{settings[key]!r}")
            settings.update(data)
            settings["recipe"] = str(path)
    model_options = {**settings.pop("model_options", {}), **overrides.pop("model_options", {})}
    task_options = {**settings.pop("task_options", {}), **overrides.pop("task_options", {})}
    settings.update({k: v for k, v in overrides.items() if v is not None})
    return TrainConfig.from_dict({**settings, "model_options": model_options,
                                  "task_options": task_options})
