"""The ``zoo`` command: a dispatcher over the subcommands.

Each subcommand lives next to the code it drives (``edge_rnn_zoo.train_cli``, ``edge_rnn_zoo.export_cli``, ...), which
provides ``add_<name>_arguments(parser)``, ``run_<name>(args)`` and optionally
``check_<name>(args)`` (the usage checks that need no Keras). Only the module of the
subcommand being run is imported, and none of them imports TensorFlow before its ``run_``
function, so ``zoo --help``, ``zoo train --help`` and every usage error answer at once.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from edge_rnn_zoo.quiet import import_keras_quietly, quiet_environment, verbose_environment

# subcommand -> (module, one-line help)
SUBCOMMANDS = {
    "list": ("edge_rnn_zoo.listing", "list the registered models (with options), the tasks and "
                                     "the pretrained models"),
    "train": ("edge_rnn_zoo.train_cli", "train a model on a task into a resumable run directory"),
    "eval": ("edge_rnn_zoo.train_cli", "evaluate a run directory on its task's test split (or another "
                             "dataset with --data-dir)"),
    "export": ("edge_rnn_zoo.export_cli", "export a run to TFLite (float / int8 / int16x8, sequence or step) "
                             "and TFLite Micro C++"),
    "bench": ("experiments.bench", "compare the zoo with Keras LSTM/GRU/SimpleRNN: accuracy, bytes, "
                              "latency, arena, MACs"),
    "analyze": ("edge_rnn_zoo.analyze_cli", "theory report of a run: stability, memory, truncation"),
    "sweep": ("experiments.sweep", "subject cross-validation, recipe sweeps and the real-scale "
                                   "table as Ray Tune trials (needs the sweep extra)"),
}
# Subcommands that run Python only (no Keras) until their runner decides otherwise.
_NO_KERAS_UP_FRONT = {"list"}


def _chosen(argv: list[str]) -> str | None:
    """The subcommand named in ``argv`` (the first word that is not an option), if any."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in SUBCOMMANDS else None
    return None


def build_parser(chosen: str | None) -> argparse.ArgumentParser:
    """The parser, with the arguments of ``chosen`` only (the others list just their help)."""
    parser = argparse.ArgumentParser(
        prog="zoo",
        description="edge-rnn-zoo: tiny stable recurrent models for edge devices.")
    _add_verbose(parser, default=False)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        _add_verbose(p, default=argparse.SUPPRESS)  # so `zoo -v train` keeps the top-level -v
        if name == chosen:
            module = importlib.import_module(module_name)
            getattr(module, f"add_{name}_arguments")(p)
            p.set_defaults(run=getattr(module, f"run_{name}"),
                           check=getattr(module, f"check_{name}", None))
    return parser


def _add_verbose(parser: argparse.ArgumentParser, default) -> None:
    parser.add_argument("-v", "--verbose", action="store_true", default=default,
                        help="show TensorFlow's native logs and Keras's own progress bar")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("edge-rnn-zoo")
    except PackageNotFoundError:
        return "unknown (not installed)"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    chosen = _chosen(argv)
    args = build_parser(chosen).parse_args(argv)
    if args.check is not None:
        try:  # usage errors a module can find without Keras: answered before Keras loads
            args.check(args)
        except (ValueError, FileNotFoundError) as err:
            print(f"zoo {args.command}: error: {err}", file=sys.stderr)
            return 2
    if args.verbose:
        verbose_environment()
    else:
        quiet_environment()
        if args.command not in _NO_KERAS_UP_FRONT:
            import_keras_quietly()
    try:
        return args.run(args) or 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
