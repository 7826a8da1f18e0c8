"""``zoo export``: a trained run directory (export/exporter.py), or a ``.keras`` model with its
calibration windows (export/keras_export.py) -> a checked TFLite export, or C."""

from __future__ import annotations

import argparse
import sys

from zoo.training.rundir import check_no_dangling_link, check_run_dir_argument


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    from zoo.export.c_backend.project import DEFAULT_RUNTIME, RUNTIMES
    from zoo.export.exporter import ExportOptions
    from zoo.export.quantize import MODES
    from edge_rnn_zoo.train_cli import strict_float, strict_int

    parser.add_argument("run_dir", metavar="SOURCE",
                        help="a finished run directory written by `zoo train`; or a .keras "
                             "model (with --calibration); for --form c also an int8 step "
                             "export, a shipped tag's folder or an installed tag by name "
                             "(sirnn.har2)")
    parser.add_argument("--calibration", metavar="FILE",
                        help="a .keras SOURCE: its raw input windows (N, T, C), an .npy file or "
                             "an .npz holding X (and integer labels y): the integer ranges are "
                             "calibrated on them and the export is checked on them")
    parser.add_argument("--labels", metavar="FILE",
                        help="a .keras SOURCE: class indices of the --calibration windows (.npy), "
                             "when it holds none: the export's accuracy is then checked "
                             "(--max-drop), not only its agreement with the float model")
    parser.add_argument("--tflite", action="store_true",
                        help="export to TFLite: the default and, for now, the only format (the "
                             "flag is accepted, and may be left out)")
    parser.add_argument("--quantize", choices=MODES, default="none",
                        help="none (float32), fp16, dynamic (int8 weights), int16x8, int8")
    parser.add_argument("--form", choices=("sequence", "step", "c"), default="sequence",
                        help="sequence: whole sequence in, logits out; step: streaming "
                             "(x_t, h_prev) -> h_t plus a head model; c: the int8 step and head "
                             "models as plain C99, bit-exact (RUN_DIR may also be an int8 step "
                             "export or a shipped tag's folder)")
    parser.add_argument("--match", choices=RUNTIMES, default=DEFAULT_RUNTIME,
                        help="--form c: the runtime whose int8 arithmetic the C code reproduces "
                             f"bit for bit (default {DEFAULT_RUNTIME}; they round differently)")
    parser.add_argument("--prefix", metavar="NAME",
                        help="--form c: the C identifier every public name of the C code starts "
                             "with (NAME_model.h, NAME_push, NAME_CLASSES; a keyword model's "
                             "NAME_kws_...), so that several models link into one program "
                             "(default: made from the tag / run / export name, sirnn.har2 -> "
                             "sirnn_har2)")
    parser.add_argument("--unroll", action="store_true",
                        help="sequence form: unroll the time loop (loop-free, much larger)")
    parser.add_argument("--out", help="export directory (default RUN_DIR/export-FORM-QUANTIZE)")
    parser.add_argument("--data-dir", help="dataset folder or archive (default: where the run "
                                           "found it, else $ZOO_DATA_DIR)")
    parser.add_argument("--max-drop", type=strict_float, default=ExportOptions.max_drop,
                        help="fail (exit 3) when TFLite accuracy is more than this many points "
                             f"below the Keras float model's (default {ExportOptions.max_drop})")
    parser.add_argument("--allow-drop", "--accept-int8-loss", dest="allow_drop",
                        action="store_true",
                        help="report an accuracy drop (or, without labels, a loss of agreement "
                             "with the float model) above --max-drop but exit 0")
    parser.add_argument("--per-channel", action="store_true",
                        help="per-channel weight quantization (default per-tensor: as accurate "
                             "here, and smaller)")
    parser.add_argument("--calibration-pairs", type=strict_int,
                        default=ExportOptions.calibration_pairs,
                        help="step form: (x_t, h_prev) pairs for calibration (default "
                             f"{ExportOptions.calibration_pairs})")
    parser.add_argument("--no-micro", action="store_true",
                        help="skip the TFLite Micro run and arena search")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an export directory the zoo wrote, once the new export is "
                             "complete")


def is_keras_source(args) -> bool:
    return str(args.run_dir).endswith(".keras")


def check_export(args) -> None:
    """The usage check before Keras loads: a finished run, or for --form c an int8 step export
    (or a folder holding one, such as a shipped tag's), or a .keras file with --calibration;
    an --out through a dangling symlink."""
    from pathlib import Path

    if args.out:
        check_no_dangling_link(Path(args.out))
    if is_keras_source(args):
        _check_keras_arguments(args)
        return
    from zoo.pretrained import tag_or_path

    args.run_dir = tag_or_path(args.run_dir)  # an installed tag by name: sirnn.har2
    for flag in ("calibration", "labels"):
        if getattr(args, flag):
            raise ValueError(f"--{flag} applies to a .keras model; a run is calibrated and "
                             "checked on its task's data")
    if args.prefix is not None:
        from zoo.export.c_backend.names import check_prefix

        if args.form != "c":
            raise ValueError(f"--prefix names the C code's symbols; it applies to --form c, not "
                             f"--form {args.form}")
        check_prefix(args.prefix)
    if args.form == "c":
        from zoo.export.c_backend.command import find_step_export

        # Read once: `_run_c_export` hands it on, so the export's card is parsed once.
        args.step_export = find_step_export(Path(args.run_dir))
        if args.step_export is not None:
            return
    check_run_dir_argument(args)


def _check_keras_arguments(args) -> None:
    from pathlib import Path

    if not Path(args.run_dir).is_file():
        raise FileNotFoundError(f"{args.run_dir}: no such .keras file")
    if not args.calibration:
        raise ValueError(f"{args.run_dir}: a .keras model needs --calibration FILE (its raw input "
                         "windows, .npy or .npz): the integer ranges and the checks come from "
                         "them")
    for flag, path in (("--calibration", args.calibration), ("--labels", args.labels)):
        if path and not Path(path).is_file():
            raise FileNotFoundError(f"{flag} {path}: no such file")
    if args.data_dir:
        raise ValueError("--data-dir applies to a run; a .keras model is checked on its "
                         "--calibration windows")


def option_fields(args) -> dict:
    """The flags every export shares, as `zoo.export.exporter.ExportOptions` fields (written
    here once for the three kinds of export)."""
    return dict(max_drop=args.max_drop, allow_drop=args.allow_drop, overwrite=args.overwrite,
                per_tensor=not args.per_channel, calibration_pairs=args.calibration_pairs,
                micro=not args.no_micro)


def run_export(args) -> int:
    from zoo.export.exporter import ExportOptions

    try:  # the numeric flags, by ExportOptions' rules, for every --form (c included)
        ExportOptions(**option_fields(args))
    except ValueError as err:
        print(f"zoo export: error: {err}", file=sys.stderr)
        return 2
    if is_keras_source(args):
        return _run_keras_export(args)
    if args.form == "c":
        return _run_c_export(args)
    return _run_tflite_export(args)


def _run_tflite_export(args) -> int:
    from zoo.export.convert import NonBuiltinOpError
    from zoo.export.exporter import (AccuracyDropError, ExportDirError, ExportOptions,
                                     export_run_with)
    from zoo.export.quantize import ConversionCrashed
    from zoo.core.storage import StorageError

    try:
        options = ExportOptions(quantize=args.quantize, form=args.form, unroll=args.unroll,
                                data_dir=args.data_dir, **option_fields(args))
        export_run_with(args.run_dir, args.out, options)
    except AccuracyDropError as err:
        print(f"zoo export: error: {err}", file=sys.stderr)
        return 3
    except (ValueError, FileNotFoundError, ExportDirError, StorageError, ConversionCrashed,
            NonBuiltinOpError) as err:
        print(f"zoo export: error: {err}", file=sys.stderr)
        return 2
    return 0


def _run_c_export(args) -> int:
    from zoo.export.c_backend import CExportError
    from zoo.core.storage import StorageError
    from zoo.export.c_backend.command import export_c
    from zoo.export.exporter import AccuracyDropError, ExportOptions

    if args.quantize not in ("none", "int8"):
        print(f"zoo export: error: --form c is int8; --quantize {args.quantize} does not apply",
              file=sys.stderr)
        return 2
    if args.unroll:  # it used to be dropped without a word
        print("zoo export: error: --unroll applies to --form sequence; --form c is the int8 step "
              "(its time loop is the caller's)", file=sys.stderr)
        return 2
    options = ExportOptions(quantize="int8", form="step", data_dir=args.data_dir,
                            **option_fields(args))
    try:
        export_c(args.run_dir, args.out, match=args.match, found=getattr(args, "step_export", None),
                 prefix=args.prefix, options=options)
    except AccuracyDropError as err:
        print(f"zoo export: error: {err}", file=sys.stderr)
        return 3
    except (CExportError, StorageError, ValueError, FileNotFoundError, OSError) as err:
        print(f"zoo export: error: {err}", file=sys.stderr)
        return 2
    return 0


def _run_keras_export(args) -> int:
    from zoo.export.c_backend import CExportError
    from zoo.export.convert import NonBuiltinOpError
    from zoo.export.exporter import AccuracyDropError, ExportDirError
    from zoo.export.keras_export import export_model
    from zoo.export.quantize import ConversionCrashed
    from zoo.core.storage import StorageError

    quantize = "int8" if args.form == "c" and args.quantize == "none" else args.quantize
    if args.form == "c" and (quantize != "int8" or args.unroll):
        print(f"zoo export: error: --form c is the int8 step model; "
              f"{'--unroll' if args.unroll else f'--quantize {quantize}'} does not apply",
              file=sys.stderr)
        return 2
    options = option_fields(args)
    if args.form != "c":
        options["unroll"] = args.unroll
    else:
        options["prefix"] = args.prefix
    try:
        export_model(args.run_dir, calibration=args.calibration, labels=args.labels,
                     out=args.out, quantize=quantize, form=args.form, match=args.match,
                     **options)
    except AccuracyDropError as err:
        print(f"zoo export: error: {err}", file=sys.stderr)
        return 3
    except (ValueError, FileNotFoundError, OSError, ExportDirError, StorageError,
            ConversionCrashed, NonBuiltinOpError, CExportError) as err:
        print(f"zoo export: error: {err}", file=sys.stderr)
        return 2
    return 0
