"""``zoo list``: the registered models (with their options), the tasks and the pretrained models.

Listing tasks needs no Keras; models and pretrained models import the ``zoo`` package (Keras)."""

from __future__ import annotations

import argparse

from edge_rnn_zoo.quiet import import_keras_quietly


def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", nargs="?", choices=("models", "tasks", "all"), default="all",
                        help="what to list (default: both)")
    parser.add_argument("--pretrained", action="store_true",
                        help="list the shipped pretrained models (zoo.create_model(name, "
                             "pretrained=TASK)) with their accuracy, size and arena")


def print_pretrained() -> None:
    from zoo.pretrained import get_pretrained_cfg, list_pretrained

    print("Pretrained models (zoo.create_model(MODEL, pretrained=TASK)); accuracy %: val = the "
          "selected epoch on validation subjects or speakers, mean ± sd over seeds (HAR-2 and "
          "DSA-19: each seed holds out another subject fold, a subject cross-validation); test = "
          "the visible official test windows; export = the shipped int8 (or float) TFLite model "
          "on them:\n")
    tags = list_pretrained()
    width = max(len(t) for t in tags) if tags else 3
    print(f"  {'tag':<{width}} {'params':>7} {'val':>12} {'test':>6} {'export':>7} "
          f"{'form':<14} {'bytes':>7} {'arena':>6}")
    for tag in tags:
        c = get_pretrained_cfg(tag)
        m, e = c.metrics, c.export
        val = f"{m['val_accuracy_subject_cv_mean']:.2f}"
        if m.get("val_accuracy_subject_cv_std") is not None:
            val += f"±{m['val_accuracy_subject_cv_std']:.2f}"
        arena = e.get("tflite_micro_arena_bytes")
        print(f"  {tag:<{width}} {c.parameters:>7,} {val:>12} {m['test_accuracy_visible']:>6.2f} "
              f"{m['export_accuracy']:>7.2f} {e['quantize'] + ' ' + e['form']:<14} "
              f"{e['total_bytes']:>7,} {arena if arena else '-':>6}")


def _format_value(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict) or (hasattr(value, "get_config") and not isinstance(value, str)):
        return type(value).__name__
    return repr(value) if isinstance(value, str) else str(value)


def run_list(args) -> int:
    if (args.pretrained or args.what != "tasks") and not args.verbose:
        import_keras_quietly()
    if args.pretrained:
        print_pretrained()
        return 0
    if args.what in ("models", "all"):
        import zoo

        print("Models (zoo.create_model(name, input_shape, num_classes, **options)):\n")
        for name in zoo.list_models():
            entry = zoo.get_model_entry(name)
            print(f"  {name:<20} {entry.description}")
            if entry.paper:
                print(f"  {'':<20} paper: {entry.paper}")
            opts = ", ".join(f"{k}={_format_value(v)}" for k, v in entry.options().items()
                             if not k.endswith(("_initializer", "_regularizer", "_constraint")))
            print(f"  {'':<20} options: {opts}\n")
    if args.what in ("tasks", "all"):
        from training.tasks import describe_tasks

        print("Tasks (zoo train --task NAME):\n")
        print(f"  {'name':<16} {'input (T, d)':<14} {'classes':>7}  {'kind':<15} description")
        for t in describe_tasks():
            shape = "x".join("T" if s is None else str(s) for s in t["input_shape"])
            print(f"  {t['name']:<16} {shape:<14} {t['num_classes']:>7}  {t['kind']:<15} "
                  f"{t['description']}")
    return 0
