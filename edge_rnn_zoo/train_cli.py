"""``zoo train`` and ``zoo eval``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from zoo.core.flags import key_value, non_empty, strict_float, strict_int
from zoo.training.rundir import check_run_dir_argument

_log = logging.getLogger(__name__)


def _ema_momentum(text: str) -> float:
    """``--ema-momentum``'s value, checked by the setting's own rule as it is parsed, so that
    ``x``, 0 or 1 are refused in one line naming ema_momentum and its range before Keras loads."""
    from zoo.training.config import setting_rule

    accepts, valid = setting_rule("ema_momentum")
    try:
        value = strict_float(text)
    except argparse.ArgumentTypeError:
        value = None
    if value is None or not accepts(value):
        raise argparse.ArgumentTypeError(f"invalid ema_momentum: {text!r}; valid: {valid}")
    return value


# Flags that map one to one onto TrainConfig fields (flag -> field); None means "not given".
_TRAIN_FLAGS = {
    "epochs": strict_int, "batch_size": strict_int, "lr": strict_float, "optimizer": str,
    "seed": strict_int, "clipnorm": strict_float, "lr_decay_epochs": strict_int,
    "lr_decay_factor": strict_float, "lr_schedule": str, "monitor": str, "sparsity_w": strict_float,
    "sparsity_u": strict_float, "distribute": str, "init_from": non_empty,
    "ema_momentum": _ema_momentum,
}
# What each of those flags sets (defaults: the recipe's, else zoo.training.config.TrainConfig).
_TRAIN_HELP = {
    "epochs": "epochs to train (default: the recipe's, else 100)",
    "batch_size": "sequences per batch (default: the recipe's, else 128)",
    "lr": "learning rate (default: the recipe's, else 0.01)",
    "optimizer": "adam, sgd, momentum or rmsprop (default adam)",
    "seed": "random seed of the weights, batches and augmentation (default 0)",
    "clipnorm": "clip each gradient to this norm (default: none)",
    "lr_decay_epochs": "with --lr-schedule step: multiply the learning rate by "
                       "--lr-decay-factor every this many epochs (default: no decay)",
    "lr_decay_factor": "the factor of each step decay (default 0.1)",
    "lr_schedule": "step (the decay above) or cosine (to 0 over the epochs; default step)",
    "monitor": "what early stopping and the best epoch watch: val_loss, val_accuracy, "
               "val_mae, loss, accuracy or mae (default val_loss)",
    "sparsity_w": "FastGRNN three-phase training: the share of input weights kept (0, 1]",
    "sparsity_u": "the same for the recurrent weights",
    "distribute": "none or mirrored (tf.distribute.MirroredStrategy over the GPUs)",
    "init_from": "a finished run directory (or a pretrained tag) whose weights start this "
                 "model (same weight shapes; a fresh head for other classes)",
    "ema_momentum": "weight averaging (Polyak): keep the exponential moving average of the "
                    "weights (avg = EMA_MOMENTUM * avg + (1 - EMA_MOMENTUM) * w after every "
                    "batch), a number in (0, 1), e.g. 0.99; validation, early stopping and "
                    "the saved model use the average (default: off)",
}
# Model options with their own flags (any other goes through --option KEY=VALUE).
_MODEL_FLAGS = {"units": strict_int, "k": strict_int, "rank": strict_int}


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", required=True, help="a task name (see `zoo list tasks`)")
    parser.add_argument("--model", required=True, help="a model name (see `zoo list models`)")
    for flag, kind in _MODEL_FLAGS.items():
        parser.add_argument(f"--{flag}", type=kind, help=f"model option {flag}")
    parser.add_argument("--option", type=key_value, action="append", default=[],
                        metavar="KEY=VALUE", help="any other model option, e.g. --option alpha=0.5")
    parser.add_argument("--task-option", type=key_value, action="append", default=[],
                        metavar="KEY=VALUE", help="a task option, e.g. --task-option timesteps=200; "
                        "each task's options and their defaults: zoo list tasks")
    parser.add_argument("--augment", type=key_value, action="append", default=[],
                        metavar="KEY=VALUE", help="an IMU augmentation option over the recipe's, "
                        "e.g. --augment rotation=15 (docs/realscale.md §7)")
    parser.add_argument("--distill", type=key_value, action="append", default=[],
                        metavar="KEY=VALUE", help="knowledge distillation: --distill "
                        "teacher=RUN_DIR (or teacher=[RUN1,RUN2], an ensemble), alpha=0.5, "
                        "temperature=2 (docs/training.md)")
    parser.add_argument("--qat-stage", type=key_value, action="append", default=[],
                        metavar="KEY=VALUE", help="a quantization-aware training stage at the end "
                        "of the run, over the recipe's: --qat-stage epochs=10 (0: none), lr=0.001, "
                        "percentile=98 (docs/qat.md)")
    for flag, kind in _TRAIN_FLAGS.items():
        parser.add_argument(f"--{flag.replace('_', '-')}", dest=flag, type=kind,
                            help=_TRAIN_HELP[flag])
    parser.add_argument("--patience", type=strict_int, dest="early_stopping_patience",
                        help="early-stopping patience in epochs (0 disables)")
    parser.add_argument("--mixed-precision", action="store_true", default=None,
                        help="train in mixed_float16")
    parser.add_argument("--backend", choices=("tensorflow", "jax"), default=None,
                        help="Keras backend (default: tensorflow)")
    parser.add_argument("--recipe", help="a recipe YAML (default: models/recipes/<task>-<model>.yaml "
                                         "when it exists; 'none' for none)")
    parser.add_argument("--data-dir", help="dataset folder or archive (else $ZOO_DATA_DIR)")
    parser.add_argument("--out", help="run directory (default: runs/<task>-<model>)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace a finished run of the zoo's in --out, once the new run has "
                             "finished (it trains beside it until then)")


def _reexec_with_backend(backend: str) -> None:
    """Keras fixes its backend at import; restart this command under the one asked for."""
    env = {**os.environ, "KERAS_BACKEND": backend}
    os.execvpe(sys.executable, [sys.executable, "-m", "edge_rnn_zoo", *sys.argv[1:]], env)


def builtin_model_names() -> list[str]:
    """The names the ``zoo`` package registers, from `zoo.model_table.MODELS` (the registry written
    down, standard library only; ``tests/zoo/test_registry.py`` keeps it equal to the live
    registry), so a misspelt ``--model`` is answered without loading Keras."""
    from zoo.model_table import MODELS

    return sorted(MODELS)


def check_names(task: str, model: str) -> None:
    """Unknown task or model: ValueError listing the valid names (no Keras needed)."""
    import difflib

    from zoo.training.tasks import get_task

    get_task(task)
    names = builtin_model_names()
    if model not in names:
        close = difflib.get_close_matches(model, names, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise ValueError(f"unknown model {model!r}.{hint} Valid models: {', '.join(names)}")


def check_train(args) -> None:
    """The checks that need no Keras (the dispatcher runs them before loading it): the names,
    and an --out that holds a finished run or a user's folder is refused here, in well under a
    second, not after TensorFlow's import."""
    from zoo.training.rundir import check_out_argument

    check_names(args.task, args.model)
    check_out_argument(default_out(args), args.overwrite)


def default_out(args) -> Path:
    return Path(args.out or Path("runs") / f"{args.task}-{args.model}")


def run_train(args) -> int:
    try:
        check_train(args)
    except ValueError as err:
        print(f"zoo train: error: {err}", file=sys.stderr)
        return 2
    import keras

    if args.backend and keras.backend.backend() != args.backend:
        _reexec_with_backend(args.backend)
    from zoo.training.config import resolve
    from zoo.core.storage import StorageError
    from zoo.training.trainer import result_line, train

    overrides = {f: getattr(args, f) for f in _TRAIN_FLAGS}
    overrides["early_stopping_patience"] = args.early_stopping_patience
    overrides["mixed_precision"] = args.mixed_precision
    overrides["backend"] = keras.backend.backend()
    overrides["model_options"] = {**{f: getattr(args, f) for f in _MODEL_FLAGS
                                     if getattr(args, f) is not None}, **dict(args.option)}
    overrides["task_options"] = dict(args.task_option)
    overrides["augment"] = dict(args.augment) or None
    overrides["distill"] = dict(args.distill) or None
    overrides["qat_stage"] = dict(args.qat_stage) or None
    try:
        import zoo
        from zoo.training.tasks import get_task

        zoo.get_model_entry(args.model)  # fail fast, listing the valid names
        config = resolve(args.task, args.model, args.recipe, overrides)
        zoo.registry.check_options(config.model, config.model_options)
        get_task(config.task, **config.task_options)
        _log.info(describe_recipe(config))
        out = default_out(args)
        metrics = train(config, out, data_dir=args.data_dir, overwrite=args.overwrite)
    except (ValueError, FileNotFoundError, StorageError) as err:
        print(f"zoo train: error: {err}", file=sys.stderr)
        return 2
    if not logging.getLogger("zoo.training.trainer").isEnabledFor(logging.INFO):
        print(result_line(metrics, out))  # -q keeps the log quiet, not the command's result
    return 0


def describe_recipe(config) -> str:
    """One line saying which recipe was applied and what it sets, so nothing is applied silently."""
    if not config.recipe:
        return "recipe: none (defaults and flags only)"
    options = ", ".join(f"{k}={v}" for k, v in config.model_options.items())
    augment = "".join(f", augment {k}={v}" for k, v in (config.augment or {}).items())
    stage = "".join(f", qat_stage {k}={v}" for k, v in (config.qat_stage or {}).items())
    return (f"recipe {config.recipe}: {config.model} {options}; {config.optimizer} lr {config.lr:g}, "
            f"batch {config.batch_size}, {config.epochs} epochs, seed {config.seed}{augment}{stage} "
            "(flags override any of these)")


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_OR_EXPORT",
                        help="a run directory written by `zoo train` (its Keras model), or an "
                             "export folder written by `zoo export` (its TFLite model: a step "
                             "export streamed as a device runs it, also a --form c folder), "
                             "or an installed tag by name (sirnn.har2: its Keras model)")
    parser.add_argument("--data-dir", dest="data_dir",
                        help="data of the task's kind (default: where the run or export found "
                             "its data, else $ZOO_DATA_DIR); the task decides what it holds: "
                             "its own test data or the whole folder. An export of a .keras "
                             "model: an .npz of raw windows X and labels y (integers or the class names)")
    parser.add_argument("--runtime", choices=("litert", "tflite-micro"), default="litert",
                        help="an export: the runtime that runs it (default litert)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def check_eval(args) -> None:
    """A finished run, or a folder with a model card (an export), or an installed tag by name:
    before Keras loads."""
    from zoo.export.evaluate_export import is_export
    from zoo.pretrained import tag_or_path

    args.run_dir = tag_or_path(args.run_dir)  # sirnn.har2: the tag's folder (a finished run)
    if is_export(args.run_dir):
        return
    try:
        check_run_dir_argument(args)
    except (ValueError, FileNotFoundError) as err:
        raise ValueError(f"{err}; nor is it an export folder (no model_card.json)") from None


def run_eval(args) -> int:
    from zoo.export.evaluate_export import evaluate_export, is_export
    from zoo.training.evaluate import evaluate_run, format_report

    try:
        if is_export(args.run_dir):  # the TFLite model, as a device runs it (the export layer)
            report = evaluate_export(args.run_dir, args.data_dir, runtime=args.runtime)
        else:  # the run's Keras model (the training layer)
            report = evaluate_run(args.run_dir, data_dir=args.data_dir)
    except (ValueError, FileNotFoundError) as err:
        print(f"zoo eval: error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0
