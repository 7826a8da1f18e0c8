"""``zoo export``: a trained run directory -> a checked TFLite export (see export/exporter.py)."""

from __future__ import annotations

import argparse
import sys

from training.rundir import check_run_dir_argument


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    from export.quantize import MODES

    parser.add_argument("run_dir", help="a finished run directory written by `zoo train`")
    parser.add_argument("--tflite", action="store_true", required=True,
                        help="export to TFLite (the only target for now)")
    parser.add_argument("--quantize", choices=MODES, default="none",
                        help="none (float32), fp16, dynamic (int8 weights), int16x8, int8")
    parser.add_argument("--form", choices=("sequence", "step"), default="sequence",
                        help="sequence: whole sequence in, logits out; step: streaming "
                             "(x_t, h_prev) -> h_t plus a head model")
    parser.add_argument("--unroll", action="store_true",
                        help="sequence form: unroll the time loop (loop-free, much larger)")
    parser.add_argument("--out", help="export directory (default RUN_DIR/export-FORM-QUANTIZE)")
    parser.add_argument("--data-dir", help="dataset folder or archive (default: where the run "
                                           "found it, else $ZOO_DATA_DIR)")
    parser.add_argument("--max-drop", type=float, default=1.0,
                        help="fail (exit 3) when TFLite accuracy is more than this many points "
                             "below the Keras float model's (default 1.0)")
    parser.add_argument("--allow-drop", action="store_true",
                        help="report an accuracy drop above --max-drop but exit 0")
    parser.add_argument("--per-channel", action="store_true",
                        help="per-channel weight quantization (default per-tensor: as accurate "
                             "here, and smaller)")
    parser.add_argument("--calibration-pairs", type=int, default=1000,
                        help="step form: (x_t, h_prev) pairs for calibration (default 1000)")
    parser.add_argument("--no-micro", action="store_true",
                        help="skip the TFLite Micro run and arena search")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an export directory the zoo wrote, once the new export is "
                             "complete")


check_export = check_run_dir_argument


def run_export(args) -> int:
    from export.convert import NonBuiltinOpError
    from export.exporter import AccuracyDropError, ExportDirError, export_run
    from export.quantize import ConversionCrashed
    from training.rundir import RunDirError

    try:
        export_run(args.run_dir, args.out, quantize=args.quantize, form=args.form,
                   unroll=args.unroll, data_dir=args.data_dir, max_drop=args.max_drop,
                   allow_drop=args.allow_drop, overwrite=args.overwrite,
                   per_tensor=not args.per_channel, calibration_pairs=args.calibration_pairs,
                   micro=not args.no_micro)
    except AccuracyDropError as err:
        print(f"zoo export: error: {err}", file=sys.stderr)
        return 3
    except (ValueError, FileNotFoundError, ExportDirError, RunDirError, ConversionCrashed,
            NonBuiltinOpError) as err:
        print(f"zoo export: error: {err}", file=sys.stderr)
        return 2
    return 0
