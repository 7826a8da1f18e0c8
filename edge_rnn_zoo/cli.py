"""The ``zoo`` command: a dispatcher over the subcommands.

Two kinds of subcommand, both imported only when chosen:

* `SUBCOMMANDS`: a module (``edge_rnn_zoo.train_cli``, ``edge_rnn_zoo.export_cli``, ...) that
  provides ``add_<name>_arguments(parser)``, ``run_<name>(args)`` and optionally
  ``check_<name>(args)`` (the usage checks that need no Keras). None of them imports TensorFlow
  before its ``run_`` function, so ``zoo --help``, ``zoo train --help`` and every usage error
  answer at once.
* `SCRIPTS`: the experiment and device scripts, each a module with ``main(argv)`` that parses the
  rest of the line itself and also runs as ``python -m <module>``: ``zoo ship RUN ...``, and by
  name within a group, ``zoo bench realscale ...`` (`BENCHMARKS`; ``zoo bench`` with options only
  is the zoo-vs-Keras comparison) and ``zoo device latency ...`` (`DEVICE`). ``zoo bench --help``
  and ``zoo device --help`` list the names; ``zoo bench NAME --help`` is the script's own help.

``-q`` / ``-v`` (before or after the subcommand word) set the level of the zoo's loggers
(`zoo.core.logs`): warnings only, or debug records too; ``-v`` also shows TensorFlow's native
logs. By default the library's info messages print as plain lines, as they always have.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from zoo.core import logs
from edge_rnn_zoo.quiet import import_keras_quietly, quiet_environment, verbose_environment

# subcommand -> (module, one-line help)
SUBCOMMANDS = {
    "list": ("edge_rnn_zoo.listing", "list the registered models (with options), the tasks and "
                                     "the pretrained models"),
    "train": ("edge_rnn_zoo.train_cli", "train a model on a task into a resumable run directory"),
    "eval": ("edge_rnn_zoo.train_cli", "score a run (Keras) or an export (its TFLite model) on its "
                             "task's test data, or yours with --data-dir"),
    "export": ("edge_rnn_zoo.export_cli", "export a run or a .keras model to TFLite (float / int8 / "
                             "int16x8, sequence or step), TFLite Micro C++ or C"),
    "bench": ("zoo.experiments.bench", "compare the zoo with Keras LSTM/GRU/SimpleRNN: accuracy, bytes, "
                              "latency, arena, MACs"),
    "profile": ("edge_rnn_zoo.profile_cli", "cross-build a model's exported C for Cortex-M and "
                "RISC-V cores and count its instructions under QEMU: per step, flash, RAM"),
    "analyze": ("edge_rnn_zoo.analyze_cli", "theory report of a run: stability, memory, truncation"),
    "sweep": ("zoo.experiments.sweep", "subject cross-validation, recipe sweeps and the real-scale "
                                   "table as Ray Tune trials (needs the sweep extra)"),
    "tune": ("edge_rnn_zoo.tune_cli", "search the most accurate model that fits a device "
                                      "budget on your data (Ray Tune, priced before training)"),
}

# `zoo bench NAME ...`: name -> (module with main(argv), one-line help)
BENCHMARKS = {
    "realscale": ("zoo.experiments.benchmarks.realscale", "every model on the full HAR-2 / DSA-19 "
                                                      "training data, several seeds, one table"),
    "accuracy": ("zoo.experiments.benchmarks.accuracy", "every zoo cell and the Keras baselines on "
                                                    "real data, same budget, one table"),
    "select": ("zoo.experiments.benchmarks.select", "pick each model's learning rate by validation "
                                                "accuracy across accuracy runs"),
    "throughput": ("zoo.experiments.benchmarks.throughput", "training throughput (sequences/s) of "
                                                        "every registered model"),
    "collapse-trace": ("zoo.experiments.benchmarks.collapse_trace", "an iRNN's step size and state, "
                                                                "epoch by epoch"),
    "kws": ("zoo.experiments.benchmarks.kws", "keyword-spotting sweep on google12_testset (learning "
                                          "rate chosen on validation speakers)"),
    "kws-table": ("zoo.experiments.kws_bench", "the keyword-spotting table: int8 exports, accuracy, "
                                           "bytes, arena, latency"),
    "quality": ("zoo.experiments.quality", "float vs int16x8 vs int8 step models for every cell, "
                                       "HAR-2 and DSA-19"),
    "c-backend": ("zoo.experiments.c_bench", "the C backend next to TFLite Micro on the host, every "
                                         "cell"),
    "sequence-int8": ("zoo.experiments.sequence_int8", "the one-invoke int8 sequence model checked "
                                                   "and timed"),
    "lengths": ("zoo.experiments.analysis.lengths", "length generalisation on the regular languages"),
    "fold-int8": ("zoo.experiments.fold_int8", "each CV fold's int8 step model against its Keras "
                                          "model on the fold's validation subjects"),
    "qat-points": ("zoo.experiments.qat_points", "which rounding of a run's int8 step costs "
                                             "accuracy, point by point"),
    "frontier": ("zoo.experiments.frontier", "CV accuracy x Cortex-M4 cost of each graph: docs/frontier.md"),
}
# `zoo device NAME ...`
DEVICE = {
    "bench": ("zoo.export.device_bench", "benchmark an export with a TFLite runtime (what "
                                     "export/device_bench.py runs on a device)"),
    "build": ("zoo.export.device_build", "build a step export's C++ loop against TFLite Micro and "
                                     "check it against Python"),
    "latency": ("zoo.experiments.device_latency", "latency of the exported C++ loop next to the "
                                              "Python loop, every cell or tags by name"),
}
# Script subcommands: the word after the subcommand (if any) picks the script from the group;
# a group of one script ("") takes the rest of the line as it is.
SCRIPTS = {
    "bench": BENCHMARKS,
    "device": DEVICE,
    "ship": {"": ("zoo.export.ship", "ship a trained run as a pretrained model "
                                 "(models/pretrained/<model>.<task>/)")},
}
ALIASES = {"kws-bench": "kws-table", "c-bench": "c-backend"}  # the modules' own names
SUBCOMMANDS.update({
    "device": (None, "on-device work on an export: bench, build (TFLite Micro C++), latency"),
    "ship": (None, SCRIPTS["ship"][""][1]),
})
# Subcommands that run Python only (no Keras) until their runner decides otherwise.
_NO_KERAS_UP_FRONT = {"list", "profile"}
# Scripts that need no Keras at all.
_NO_KERAS_SCRIPTS = {"zoo.experiments.benchmarks.select", "zoo.export.device_bench",
                     "zoo.export.device_build"}


def _script(argv: list[str]):
    """``(module, prog, rest, verbose, quiet)`` when ``argv`` runs a script subcommand, else
    None (``-v`` / ``-q`` count before the script's words; the rest is the script's)."""
    for i, word in enumerate(argv):
        if word.startswith("-"):
            continue
        group = SCRIPTS.get(word)
        if group is None:
            return None
        verbose = any(w in ("-v", "--verbose") for w in argv[:i])
        quiet = any(w in ("-q", "--quiet") for w in argv[:i])
        if "" in group:
            return group[""][0], f"zoo {word}", argv[i + 1:], verbose, quiet
        name = argv[i + 1] if i + 1 < len(argv) else ""
        name = ALIASES.get(name.replace("_", "-"), name.replace("_", "-"))
        if name in group:
            return group[name][0], f"zoo {word} {name}", argv[i + 2:], verbose, quiet
        return None
    return None


def run_script(module_name: str, prog: str, rest: list[str], verbose: bool = False,
               quiet: bool = False) -> int:
    """Run a script module's ``main(rest)`` as ``zoo ...`` (its usage lines say ``prog``)."""
    if verbose:
        verbose_environment()
    else:
        quiet_environment()
        if module_name not in _NO_KERAS_SCRIPTS and not {"-h", "--help"} & set(rest):
            import_keras_quietly()
    module = importlib.import_module(module_name)
    saved = sys.argv[0]
    sys.argv[0] = prog  # argparse's default prog (the scripts that name none)
    try:
        with logs.command_output(logs.level_from_flags(verbose, quiet)):
            return module.main(rest) or 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        sys.argv[0] = saved


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
        description="edge-rnn-zoo: tiny stable recurrent models for edge devices.",
        allow_abbrev=False)
    _add_verbosity(parser, default=False)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        group = {k: v for k, v in SCRIPTS.get(name, {}).items() if k}
        epilog = None
        if group:
            width = max(map(len, group))
            epilog = (f"or: zoo {name} NAME [options] (zoo {name} NAME --help for its options), "
                      "NAME one of:\n" + "\n".join(f"  {k:<{width}}  {h}"
                                                    for k, (_, h) in group.items()))
        p = sub.add_parser(name, help=help_text, description=help_text, epilog=epilog,
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           add_help=module_name is not None or bool(group), allow_abbrev=False)
        _add_verbosity(p, default=argparse.SUPPRESS)  # so `zoo -v train` keeps the top-level -v
        if module_name is None:  # a script subcommand: main() hands the line to the script
            if group:  # a known NAME never reaches this parser (main() runs the script)
                p.add_argument("name", choices=sorted(group), metavar="NAME")
            else:
                p.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
            p.set_defaults(run=_run_parsed_script, check=None)
        elif name == chosen:
            module = importlib.import_module(module_name)
            getattr(module, f"add_{name}_arguments")(p)
            p.set_defaults(run=getattr(module, f"run_{name}"),
                           check=getattr(module, f"check_{name}", None))
    return parser


def _run_parsed_script(args) -> int:
    group = SCRIPTS[args.command]
    module_name = group[getattr(args, "name", "")][0]
    prog = " ".join(["zoo", args.command, getattr(args, "name", "")]).strip()
    return run_script(module_name, prog, getattr(args, "args", []), args.verbose, args.quiet)


def _add_verbosity(parser: argparse.ArgumentParser, default) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-v", "--verbose", action="store_true", default=default,
                       help="debug messages too, and TensorFlow's native logs")
    group.add_argument("-q", "--quiet", action="store_true", default=default,
                       help="warnings and errors only (and what the command exists to print: "
                            "tables, the final accuracy line)")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("edge-rnn-zoo")
    except PackageNotFoundError:
        return "unknown (not installed)"


def main(argv: list[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # here, so that a closed pipe is answered below and not at exit
        return code
    except BrokenPipeError:  # e.g. `zoo list --pretrained | head -1`: the reader has what it wants
        _quiet_stdout()
        return 141  # as a shell reports a command ended by SIGPIPE (128 + 13)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit does not raise BrokenPipeError
    again (Python's documented way: the signal module's "Note on SIGPIPE")."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    script = _script(argv)
    if script is not None:
        return run_script(*script)
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
        # a --json command's stdout is its JSON alone: its progress lines go to stderr
        with logs.command_output(logs.level_from_flags(args.verbose, args.quiet),
                                 machine_output=bool(getattr(args, "json", False))):
            return args.run(args) or 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
