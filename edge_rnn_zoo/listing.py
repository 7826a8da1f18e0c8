"""``zoo list``: the registered models (with their options), the tasks and the pretrained models.

None of it loads Keras, so it answers in a fraction of a second: the models come from
`zoo.model_table` (the registry written down, kept equal to it by a test), the pretrained models
from their ``card.json`` files, the tasks from ``zoo.training.tasks``."""

from __future__ import annotations

import argparse

WHAT = ("models", "tasks", "pretrained", "all")


def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", nargs="?", choices=WHAT, default="all",
                        help="what to list (default: all three)")
    parser.add_argument("--pretrained", action="store_true",
                        help="list only the shipped pretrained models (zoo.create_model(name, "
                             "pretrained=TASK)) with their accuracy, size and arena (as "
                             "`zoo list pretrained`)")


def print_pretrained() -> None:
    from zoo.pretrained import get_pretrained_cfg, list_pretrained

    print("Pretrained models (zoo.create_model(MODEL, pretrained=NAME), NAME after the dot); "
          "accuracy %: val = the selected epoch on validation subjects or speakers, mean ± sd "
          "over seeds (HAR-2 and DSA-19: each seed holds out another subject fold, a subject "
          "cross-validation); test = the visible official test windows; int8 = the shipped "
          "int8 TFLite model on them. Cortex-M4 instructions (the zoo's C, -O2; a KWS model "
          "with its integer front end; the DS-CNN under TFLite Micro): per step, per window "
          "and per second of signal (a step reads 'frames' samples):\n")
    tags = list_pretrained()
    width = max(len(t) for t in tags) if tags else 3
    print(f"  {'tag':<{width}} {'params':>7} {'val':>12} {'test':>6} {'int8':>6} {'bytes':>7} "
          f"{'frames':>6} {'M4 / step':>10} {'/ window':>9} {'/ second':>9}")
    for tag in tags:
        c = get_pretrained_cfg(tag)
        m, e, cost = c.metrics, c.export, c.cost
        val = f"{m.val_accuracy_subject_cv_mean:.2f}"
        if m.val_accuracy_subject_cv_std is not None:
            val += f"±{m.val_accuracy_subject_cv_std:.2f}"
        print(f"  {tag:<{width}} {c.parameters:>7,} {val:>12} {m.test_accuracy_visible:>6.2f} "
              f"{m.export_accuracy:>6.2f} {e.total_bytes:>7,} {c.frames_per_step:>6} "
              f"{_count(cost.instructions_per_step):>10} {_count(cost.instructions_per_window):>9} "
              f"{_count(cost.instructions_per_second):>9}")


def _count(value) -> str:
    """An instruction count as people read it: 22,593; 723 k; 7.43 M; '-' when not measured."""
    if value is None:
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.2f} M"
    return f"{value / 1e3:.0f} k" if value >= 1e5 else f"{value:,.0f}"


def print_models() -> None:
    from zoo.model_table import MODELS

    print("Models (zoo.create_model(name, input_shape, num_classes, **options)):\n")
    for name, model in sorted(MODELS.items()):
        print(f"  {name:<20} {model['description']}")
        if model["paper"]:
            print(f"  {'':<20} paper: {model['paper']}")
        print(f"  {'':<20} options: {model['options']}\n")


def task_options_line(name: str) -> str:
    """``KEY=DEFAULT, ...``: the options a task takes and their defaults (``none``: unset, or
    fixed from the data when a run starts)."""
    from zoo.training.tasks import get_task

    defaults = getattr(type(get_task(name)), "DEFAULTS", {}) or {}
    return ", ".join(f"{k}={_default(v)}" for k, v in defaults.items()) or "none"


def _default(value) -> str:
    return "none" if value is None else str(value).replace(" ", "")


def run_list(args) -> int:
    what = "pretrained" if args.pretrained else args.what
    if what in ("models", "all"):
        print_models()
    if what in ("tasks", "all"):
        from zoo.training.tasks import describe_tasks

        print("Tasks (zoo train --task NAME):\n")
        print(f"  {'name':<16} {'input (T, d)':<14} {'classes':>7}  {'kind':<15} description")
        for t in describe_tasks():
            shape = "x".join("T" if s is None else str(s) for s in t["input_shape"])
            print(f"  {t['name']:<16} {shape:<14} {t['num_classes']:>7}  {t['kind']:<15} "
                  f"{t['description']}")
            print(f"  {'':<16} task options (--task-option KEY=VALUE): "
                  f"{task_options_line(t['name'])}")
    if what in ("pretrained", "all"):
        if what == "all":
            print()
        print_pretrained()
    return 0
