"""The fully resolved training configuration: defaults < recipe (YAML) < command-line flags."""

from __future__ import annotations

import dataclasses
import importlib.resources
import math
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
    # "step": the step decay above (no decay when lr_decay_epochs is unset); "cosine": lr times
    # 0.5 (1 + cos(pi e / epochs)) at epoch e (Keras's CosineDecay over the epoch budget,
    # Loshchilov & Hutter 2017, without restarts).
    lr_schedule: str = "step"
    clipnorm: float | None = None
    # Polyak averaging (Keras's optimizer ``use_ema``): the run keeps the exponential moving
    # average of the weights, avg = m * avg + (1 - m) * w after every batch (avg = w after the
    # first), in place of the last weights. Keras's SwapEMAWeights(swap_on_epoch=True) puts the
    # average in the model at every epoch's end, so validation, early stopping (and the best
    # epoch it restores), the checkpoints and the kept model all see the average.
    ema_momentum: float | None = None
    early_stopping_patience: int | None = 20
    monitor: str = "val_loss"
    # FastGRNN three-phase training (dense, iterative hard thresholding, fixed support).
    sparsity_w: float | None = None
    sparsity_u: float | None = None
    # IMU data augmentation (zoo.training.augment): e.g. {"rotation": 15, "scale": 0.1, "jitter":
    # 0.05, "time_warp": 0.2, "magnitude_warp": 0.2}; None: off.
    augment: dict[str, Any] | None = None
    seed: int = 0
    # Warm start: a run directory whose trained weights initialise this model (same weight
    # shapes), e.g. quantization-aware fine-tuning of a float run with state_quant_bits set.
    init_from: str | None = None
    # Knowledge distillation (zoo.training.distill; Hinton et al. 2015): {"teacher": RUN or [RUNS],
    # "alpha": 0.5, "temperature": 2.0}. The student trains on (1 - alpha) CE(y, student) +
    # alpha T^2 KL(softmax(teacher / T) || softmax(student / T)), several teachers' softened
    # probabilities averaged; teachers are finished runs of the same task (relative paths from
    # the working folder; `zoo sweep cv` fills a "{fold}" in with each fold's number). `zoo
    # train --distill KEY=VALUE`, `zoo sweep --set distill=...`. None: the ordinary loss.
    distill: dict[str, Any] | None = None
    # A quantization-aware training stage at the end of the run (zoo.training.qat_stage): after
    # the float epochs, {"epochs": 10, "lr": 1e-3, "percentile": 98} epochs of QAT (the model's
    # ``qat="int8"``) from the best float weights, its ranges calibrated on the float step, in
    # the same run directory. `zoo train --qat-stage KEY=VALUE`; epochs 0 or None: no stage.
    qat_stage: dict[str, Any] | None = None
    mixed_precision: bool = False
    distribute: str = "none"  # none | mirrored
    backend: str = "tensorflow"
    recipe: str | None = None

    def __post_init__(self):
        validate(self)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ValueError(f"unknown training setting(s) {unknown}; valid: {sorted(fields)}")
        return cls(**data)

    def optimizer_options(self) -> dict[str, Any]:
        """Keyword arguments of the Keras optimizer beside the learning rate."""
        options: dict[str, Any] = {"clipnorm": self.clipnorm}
        if self.ema_momentum is not None:
            options.update(use_ema=True, ema_momentum=self.ema_momentum)
        return options

    def training_identity(self) -> dict[str, Any]:
        """What must match for a run directory to be resumed (everything but the epoch budget;
        the recipe by `recipe_name`, so a run begun in another clone resumes here)."""
        identity = self.to_dict()
        identity.pop("epochs")
        identity["recipe"] = recipe_name(identity["recipe"])
        return identity


def with_defaults(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` (a `TrainConfig.to_dict`, e.g. from a results file or a run's config.yaml)
    with the settings it predates at their defaults, so that adding a setting to TrainConfig does
    not make every recorded run a different one."""
    defaults = {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING
                         else f.default)
                for f in dataclasses.fields(TrainConfig)
                if f.default is not dataclasses.MISSING
                or f.default_factory is not dataclasses.MISSING}
    return {**defaults, **config}


def recipe_name(recipe: str | None) -> str | None:
    """A recipe as it identifies a run's settings: its file name. The settings it gave are in
    the config already; its folder is only where this machine keeps it (a clone, a GPU lease,
    an installed wheel), so two clones' runs of one recipe compare equal."""
    return recipe if recipe in (None, "none") else Path(recipe).name


# ----------------------------------------------------------------------------- validation
# Every value is checked here, so a recipe (YAML) and a command-line flag get the same errors.

LR_SCHEDULES = ("step", "cosine")
MONITORS = ("val_loss", "val_accuracy", "val_mae", "loss", "accuracy", "mae")
_FLAGS = {"early_stopping_patience": "--patience"}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return (_is_int(v) or isinstance(v, float)) and math.isfinite(v)


_RULES = {  # field -> (accepts, what is valid)
    "task": (lambda v: isinstance(v, str) and v != "", "a task name"),
    "model": (lambda v: isinstance(v, str) and v != "", "a model name"),
    "model_options": (lambda v: isinstance(v, dict), "a mapping of model options"),
    "task_options": (lambda v: isinstance(v, dict), "a mapping of task options"),
    "epochs": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
    "batch_size": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
    "lr": (lambda v: _is_number(v) and v > 0, "a number > 0"),
    "optimizer": (lambda v: v in ("adam", "sgd", "momentum", "rmsprop"),
                  "one of adam, sgd, momentum, rmsprop"),
    "lr_decay_epochs": (lambda v: v is None or (_is_int(v) and v >= 1),
                        "an integer >= 1 (or unset: no decay)"),
    "lr_decay_factor": (lambda v: _is_number(v) and 0 < v <= 1, "a number in (0, 1]"),
    "lr_schedule": (lambda v: v in LR_SCHEDULES, "one of " + ", ".join(LR_SCHEDULES)),
    "clipnorm": (lambda v: v is None or (_is_number(v) and v > 0),
                 "a number > 0 (or unset: no clipping)"),
    # 0 would average nothing (avg = w) and 1 would keep the first step's weights for ever.
    "ema_momentum": (lambda v: v is None or (_is_number(v) and 0 < v < 1),
                     "a number in (0, 1), e.g. 0.99 (or unset: no weight averaging)"),
    "early_stopping_patience": (lambda v: v is None or (_is_int(v) and v >= 0),
                                "an integer >= 0 (0 disables early stopping)"),
    "monitor": (lambda v: v in MONITORS, "one of " + ", ".join(MONITORS)),
    "sparsity_w": (lambda v: v is None or (_is_number(v) and 0 < v <= 1), "a number in (0, 1]"),
    "sparsity_u": (lambda v: v is None or (_is_number(v) and 0 < v <= 1), "a number in (0, 1]"),
    "augment": (lambda v: v is None or isinstance(v, dict),
                "a mapping of augmentation options (zoo.training.augment), or unset"),
    "seed": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "init_from": (lambda v: v is None or isinstance(v, str), "a run directory"),
    "distill": (lambda v: v is None or isinstance(v, dict),
                "a mapping of teacher, alpha, temperature (zoo.training.distill), or unset"),
    "qat_stage": (lambda v: v is None or isinstance(v, dict),
                  "a mapping of epochs, lr, percentile (zoo.training.qat_stage), or unset"),
    "mixed_precision": (lambda v: isinstance(v, bool), "true or false"),
    "distribute": (lambda v: v in ("none", "mirrored"), "none or mirrored"),
    "backend": (lambda v: v in ("tensorflow", "jax"), "tensorflow or jax"),
    "recipe": (lambda v: v is None or isinstance(v, str), "a recipe path"),
}

# Model options with a range (whichever model has them), and those whose registry default is
# None, so their type cannot be read off the default. The zoo's models are for microcontrollers
# (the largest recipe has 128 units): 4,096 LSTM units are already 256 MB of weights, and a
# billion was an out-of-memory traceback, after the data had loaded.
MAX_UNITS = 4096
_NUMERIC_OPTIONS = {
    "units": (lambda v: _is_int(v) and 1 <= v <= MAX_UNITS, f"an integer in 1..{MAX_UNITS}"),
    "rank": (lambda v: _is_int(v) and 1 <= v <= MAX_UNITS, f"an integer in 1..{MAX_UNITS}"),
    "w_rank": (lambda v: v is None or (_is_int(v) and 1 <= v <= MAX_UNITS),
               f"an integer in 1..{MAX_UNITS} (or unset: full rank)"),
    "u_rank": (lambda v: v is None or (_is_int(v) and 1 <= v <= MAX_UNITS),
               f"an integer in 1..{MAX_UNITS} (or unset: full rank)"),
    "k": (lambda v: _is_int(v) and 1 <= v <= 100, "an integer in 1..100"),
    "dropout": (lambda v: _is_number(v) and 0 <= v < 1, "a number in [0, 1)"),
    "recurrent_dropout": (lambda v: _is_number(v) and 0 <= v < 1, "a number in [0, 1)"),
    "state_clip": (lambda v: v is None or (_is_number(v) and v > 0), "a number > 0"),
    "state_quant_bits": (lambda v: v is None or (_is_int(v) and 2 <= v <= 16),
                         "an integer in 2..16"),
    "eta_timesteps": (lambda v: v is None or (_is_int(v) and v >= 1), "an integer >= 1"),
    # zoo.qat.check_percentile's range, here so that a sweep's variant is refused when planned.
    "qat_percentile": (lambda v: _is_number(v) and 50 < v <= 100,
                       "a number in (50, 100]: the percentile of each tensor that bounds its "
                       "quantization-aware range")}
# Model options that mean something only with another one set (option -> the one it needs).
_NEEDS = {"qat_percentile": "qat"}
# Model options with their own `zoo train` flag (the others: --option KEY=VALUE).
_OPTION_FLAGS = {"units": "--units", "k": "--k", "rank": "--rank"}


# The options of ``distill`` (zoo.training.distill): option -> (default, what is valid, check);
# "teacher" has no default: it is required.
DISTILL_OPTIONS = {
    "teacher": (None, "a finished run directory, or a non-empty list of different ones (an "
                      "ensemble)",
                lambda v: bool(_teacher_list(v))),
    "alpha": (0.5, "a number in [0, 1] (the weight of the teacher's term)",
              lambda v: _is_number(v) and 0 <= v <= 1),
    "temperature": (2.0, "a number > 0", lambda v: _is_number(v) and v > 0),
}


def _teacher_list(value) -> list[str]:
    """``teacher`` (one path or a list) as a list of paths; [] when it is neither."""
    paths = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    if not all(isinstance(p, str) and p.strip() for p in paths):
        return []
    return paths if len(set(paths)) == len(paths) else []


def check_distill(options) -> dict[str, Any]:
    """``options`` (the ``distill`` setting) with the defaults filled in; ValueError naming the
    first unknown, missing or invalid option and what is valid. Needs no Keras and reads no
    file (the teachers are checked where a run starts: `zoo.training.distill.check_teacher_runs`)."""
    if not isinstance(options, dict):
        raise ValueError(f"invalid distill: {options!r}; valid: a mapping of "
                         f"{', '.join(DISTILL_OPTIONS)} (or unset: no distillation)")
    unknown = sorted(set(options) - set(DISTILL_OPTIONS))
    if unknown:
        raise ValueError(f"unknown distill option(s) {unknown}; valid: "
                         f"{', '.join(DISTILL_OPTIONS)}")
    if "teacher" not in options:
        raise ValueError("distill: no teacher (--distill teacher=RUN_DIR); valid: "
                         f"{DISTILL_OPTIONS['teacher'][1]}")
    resolved = {}
    for name, (default, valid, accepts) in DISTILL_OPTIONS.items():
        value = options.get(name, default)
        if not accepts(value):
            raise ValueError(f"invalid distill option {name} (--distill {name}=...): "
                             f"{value!r}; valid: {valid}")
        resolved[name] = value
    resolved["teacher"] = _teacher_list(resolved["teacher"])
    return resolved


# The options of ``qat_stage`` (zoo.training.qat_stage): option -> (default, what is valid,
# check). The defaults are the zoo's measured QAT fine-tune (docs/qat.md, docs/kws.md).
QAT_STAGE_OPTIONS = {
    "epochs": (10, "an integer >= 0 (0: no QAT stage)", lambda v: _is_int(v) and v >= 0),
    "lr": (1e-3, "a number > 0 (constant over the stage)", lambda v: _is_number(v) and v > 0),
    "percentile": (98.0, "a number in (50, 100] (each range's percentile: qat_percentile)",
                   lambda v: _is_number(v) and 50 < v <= 100),
}


def check_qat_stage(options) -> dict[str, Any] | None:
    """``options`` (the ``qat_stage`` setting) with the defaults filled in, or None when there is
    no stage (unset, or ``epochs: 0``); ValueError naming the first unknown or invalid option
    and what is valid. Needs no Keras."""
    if options is None:
        return None
    if not isinstance(options, dict):
        raise ValueError(f"invalid qat_stage: {options!r}; valid: a mapping of "
                         f"{', '.join(QAT_STAGE_OPTIONS)} (or unset: no QAT stage)")
    unknown = sorted(set(options) - set(QAT_STAGE_OPTIONS))
    if unknown:
        raise ValueError(f"unknown qat_stage option(s) {unknown}; valid: "
                         f"{', '.join(QAT_STAGE_OPTIONS)}")
    resolved = {}
    for name, (default, valid, accepts) in QAT_STAGE_OPTIONS.items():
        value = options.get(name, default)
        if not accepts(value):
            raise ValueError(f"invalid qat_stage option {name} (--qat-stage {name}=...): "
                             f"{value!r}; valid: {valid}")
        resolved[name] = value
    return resolved if resolved["epochs"] else None


def _check_qat_stage_fits(config: "TrainConfig") -> None:
    """A QAT stage fine-tunes a float model: the model must not be a QAT one already, and the
    settings that act on the float epochs' weights (sparsity phases) cannot carry over."""
    if check_qat_stage(config.qat_stage) is None:
        return
    if config.model_options.get("qat"):
        raise ValueError(f"qat_stage fine-tunes the float model with QAT, and model option qat "
                         f"{config.model_options['qat']!r} makes every epoch QAT already; "
                         "choose one (--qat-stage epochs=0, or drop --option qat)")
    if config.sparsity_w is not None or config.sparsity_u is not None:
        raise ValueError("qat_stage and sparsity_w / sparsity_u together are not supported: the "
                         "hard-thresholding phases would not carry over to the QAT stage")


def validate(config: "TrainConfig") -> None:
    """Raise ValueError naming the first invalid setting (recipe key and flag) and what is
    valid; model options are checked against the types of the registry's defaults."""
    for name in _RULES:
        _check_setting(name, getattr(config, name), _FLAGS.get(name, "--" + name.replace("_", "-")))
    _validate_model_options(config.model, config.model_options)
    if config.augment is not None:
        from zoo.training.augment import check_options

        check_options(config.augment)
    if config.lr_schedule == "cosine" and config.lr_decay_epochs:
        raise ValueError(_cosine_and_step_message(config))
    if config.distill is not None:
        check_distill(config.distill)
        if (config.augment or {}).get("mixup"):
            raise ValueError("augment mixup and distill together are not supported: the "
                             "distillation loss takes no sample weights (choose one)")
    _check_qat_stage_fits(config)
    if config.ema_momentum is not None and (config.sparsity_w is not None
                                            or config.sparsity_u is not None):
        # The average of weights thresholded at different supports is not sparse.
        raise ValueError(f"ema_momentum {config.ema_momentum} and sparsity_w / sparsity_u "
                         "together are not supported: the moving average of the weights would "
                         "not keep the hard-thresholded support (unset one of them)")


def _cosine_and_step_message(config: "TrainConfig") -> str:
    """Cosine and step decay asked together, and how to drop the step decay where it came from:
    `zoo train` has no flag that unsets a recipe's setting (a flag left out keeps it)."""
    head = (f"lr_schedule cosine decays over the whole epoch budget, and lr_decay_epochs "
            f"{config.lr_decay_epochs} asks for step decay too")
    if not config.recipe:
        return (f"{head}; use lr_schedule step, or unset lr_decay_epochs (leave "
                "--lr-decay-epochs out; in `zoo sweep`, --set lr_decay_epochs=null)")
    return (f"{head} (from the recipe {config.recipe}, or --lr-decay-epochs); use lr_schedule "
            "step, or unset lr_decay_epochs: `zoo train` has no flag that unsets a recipe's "
            f"setting, so pass --recipe a copy of {Path(config.recipe).name} without it, or "
            "--recipe none; in `zoo sweep`, --set lr_decay_epochs=null")


def _check_setting(name: str, value, flag: str) -> None:
    accepts, valid = _RULES[name]
    if not accepts(value):
        raise ValueError(f"invalid {name} ({flag}): {value!r}; valid: {valid}")


def setting_rule(name: str):
    """``(accepts, what is valid)`` of the setting ``name``: what `validate` checks it by, for
    a command-line flag that checks its value as it is parsed."""
    return _RULES[name]


def check_settings(settings: dict[str, Any], flag: str = "--set") -> None:
    """The checks of `validate` that need no Keras, on some settings only (``zoo sweep --set``,
    before Ray and Keras start): unknown names and values out of range raise ValueError naming
    ``flag KEY=...`` and what is valid; model options' names and ranges where known."""
    fields = [f.name for f in dataclasses.fields(TrainConfig)]
    unknown = sorted(set(settings) - set(fields))
    if unknown:
        raise ValueError(f"{flag}: unknown training setting(s) {', '.join(unknown)}; valid: "
                         f"{', '.join(sorted(fields))}")
    for name, value in settings.items():
        _check_setting(name, value, f"{flag} {name}=...")
    if isinstance(settings.get("distill"), dict):
        check_distill(settings["distill"])
    if isinstance(settings.get("qat_stage"), dict):
        check_qat_stage(settings["qat_stage"])
    if isinstance(settings.get("model_options"), dict):
        check_option_ranges(settings["model_options"], f"{flag} model_options:")


def check_option_ranges(options: dict[str, Any], flag: str | None = None) -> None:
    """The model options that have a range whatever the model (`_NUMERIC_OPTIONS`), checked
    without Keras: ValueError naming the option (as ``flag KEY=...``; by default as `zoo train`
    takes it) and what is valid."""
    for key, value in options.items():
        if key in _NUMERIC_OPTIONS and not _NUMERIC_OPTIONS[key][0](value):
            where = (_OPTION_FLAGS.get(key) or f"--option {key}=...") if flag is None \
                else f"{flag} {key}=..."
            raise ValueError(f"invalid model option {key} ({where}): {value!r}; "
                             f"valid: {_NUMERIC_OPTIONS[key][1]}")


def _validate_model_options(model: str, options: dict) -> None:
    import zoo

    check_option_ranges(options)
    try:
        entry = zoo.get_model_entry(model)
    except ValueError:
        return  # an unknown model is reported, with the valid names, where it is looked up
    defaults = entry.options()
    resolved = {**defaults, **options, **entry.fixed}
    for key, needed in _NEEDS.items():
        if key in options and not resolved.get(needed):
            raise ValueError(f"model option {key} (--option {key}=...) applies only with "
                             f"{needed} (e.g. --option {needed}=int8); without it {key}="
                             f"{options[key]!r} would change nothing: set {needed}, or leave "
                             f"{key} out")
    for key, value in options.items():
        if key in _NUMERIC_OPTIONS or key not in defaults or defaults[key] is None:
            continue
        elif isinstance(defaults[key], bool):
            valid = "true or false"
            if isinstance(value, bool):
                continue
        elif _is_int(defaults[key]):
            valid = "an integer"
            if _is_int(value):
                continue
        elif isinstance(defaults[key], float):
            valid = "a number"
            if _is_number(value):
                continue
        elif isinstance(defaults[key], str):
            valid = "a string"
            if value is None or isinstance(value, str):
                continue
        else:
            continue
        raise ValueError(f"invalid model option {key} (--option {key}=...): {value!r}; "
                         f"valid: {valid}")


def recipe_path(task: str, model: str) -> Path:
    return RECIPES_DIR / f"{task}-{model}.yaml"


def recipe_file(recipe: str) -> Path:
    """``--recipe``'s value as a file: a path, else a shipped recipe's name (``har2-sirnn``, as
    the "shipped recipes" list names them; a file of that name in the working folder wins)."""
    path = Path(recipe)
    shipped = RECIPES_DIR / (path.name if path.suffix == ".yaml" else f"{path.name}.yaml")
    if not path.is_file() and path.parent == Path(".") and shipped.is_file():
        return shipped
    return path


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
        path = recipe_file(recipe) if recipe else recipe_path(task, model)
        if recipe or path.is_file():
            data = load_recipe(path)
            for key in ("task", "model"):
                theirs = data.pop(key, settings[key])
                if theirs != settings[key]:
                    raise ValueError(f"recipe {path} is for {key} {theirs!r}, not "
                                     f"{settings[key]!r}")
            settings.update(data)
            settings["recipe"] = str(path)
    for key in ("model_options", "task_options", "augment", "distill", "qat_stage"):
        if not isinstance(settings.get(key) or {}, dict):
            raise ValueError(f"recipe {settings.get('recipe')}: {key} must be a mapping, got "
                             f"{settings[key]!r}")
    model_options = {**settings.pop("model_options", {}), **overrides.pop("model_options", {})}
    task_options = {**settings.pop("task_options", {}), **overrides.pop("task_options", {})}
    if overrides.get("augment"):  # flags add to the recipe's augmentation, option by option
        overrides["augment"] = {**(settings.get("augment") or {}), **overrides["augment"]}
    if overrides.get("distill"):  # and to its distillation options (a teacher, alpha...)
        overrides["distill"] = {**(settings.get("distill") or {}), **overrides["distill"]}
    if overrides.get("qat_stage"):  # and to its QAT stage's (--qat-stage epochs=0: none)
        overrides["qat_stage"] = {**(settings.get("qat_stage") or {}), **overrides["qat_stage"]}
    settings.update({k: v for k, v in overrides.items() if v is not None})
    return TrainConfig.from_dict({**settings, "model_options": model_options,
                                  "task_options": task_options})
