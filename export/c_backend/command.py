"""``zoo export SOURCE --form c``: an int8 C project from a run, a step export or a shipped tag.

SOURCE may be
  * an int8 step export (``zoo export --form step --quantize int8``): its models are used as
    they are;
  * a folder holding one as ``export-step-int8/`` (a shipped tag under models/pretrained/, or a
    run that was exported before): the same, nothing is recalibrated;
  * a finished run directory: its int8 step export is made first (calibrated as ``--form step``
    would), then compiled.
The result is one folder: the step export's files, the C project (`project.C_FILES`), and
``c_check.json`` with the bit-exactness check of every test window when the export has them.
"""

from __future__ import annotations

import functools
import json
import logging
import shutil
import tempfile
from pathlib import Path

from zoo.export.c_backend import kws, shipped
from zoo.export.c_backend.project import (RUNTIMES, CExportError, read_normalization,
                                      read_step_export, write_c_project)
from zoo.export.card_schema import CARD_FILE, ExportFolderError, read_card
from zoo.export.device_runtime import failed_export
from zoo.export.exportdir import load_testset
from zoo.training import logs

STEP_EXPORT_NAME = "export-step-int8"
DEFAULT_OUT_NAME = "export-c-int8"
_log = logging.getLogger(__name__)
CHECK_FILE = "c_check.json"
# The step export's files the C folder keeps beside the sources (provenance and the test split).
KEPT = ("step.tflite", "head.tflite", "model_card.json", "model_card.md", "normalization.json",
        "testset.npz")


def find_step_export(source: Path) -> Path | None:
    """The int8 step export ``source`` is or holds, or None (then ``source`` must be a run).
    Its card is read through `card_schema.read_card`; a shipped tag that holds no int8 step
    export (the DS-CNN keyword spotter ships a sequence model) is refused here, before anything
    would treat the tag as a run to re-export (and look for, or download, its dataset)."""
    for folder in (source, source / STEP_EXPORT_NAME):
        if (folder / CARD_FILE).is_file():
            card = read_step_card(folder)
            if card.form == "step" and card.quantize == "int8":
                return folder
            if folder == source:
                raise CExportError(f"{source} is a {card.quantize} {card.form} export; --form c "
                                   "needs a run directory or an int8 step export")
    tag = shipped.tag_card(source)
    if tag is not None:
        export = tag["export"]
        raise CExportError(f"{source} is a shipped tag whose export is {export.get('folder')!r} "
                           f"({export.get('quantize')} {export.get('form')}); --form c compiles "
                           "a recurrent cell's int8 step export, which this tag does not hold")
    return None


def read_step_card(folder: Path):
    """`card_schema.read_card` of ``folder``, its errors as `CExportError`."""
    try:
        return read_card(str(folder))
    except ExportFolderError as err:
        raise CExportError(str(err)) from None


def export_c(source, out=None, *, match: str = "tflite-micro", overwrite: bool = False,
             check: bool = True, print_fn=None, step_maker=None, **step_options) -> dict:
    """Write the C export of ``source`` to ``out`` (default SOURCE/export-c-int8); returns the
    summary (also in ``c_check.json``). ``step_options`` go to `export_run` when a step export
    has to be made first. Progress is logged at INFO (`zoo.training.logs`); ``print_fn``
    (deprecated), when given, receives it instead. ``step_maker(step_dir, **options)``, when
    given, makes the int8 step export instead of `export_run` (``source`` then only names it:
    `zoo.export.keras_export` passes a Keras model's).

    ``out`` is handled as every export directory (`zoo.training.storage`): locked, built in a
    staging folder beside it, swapped in only once the C compiles and matches the runtime; an
    existing folder is replaced only with ``overwrite`` and only when the zoo wrote it.
    """
    from zoo.export.exportdir import MARKER
    from zoo.training import storage

    say = logs.reporter(_log, print_fn)
    source = Path(source)
    if match not in RUNTIMES:
        raise CExportError(f"--match {match!r}; valid: {', '.join(RUNTIMES)}")
    out = storage.real_target(Path(out) if out else source / DEFAULT_OUT_NAME)
    refuse = functools.partial(check_out, overwrite=overwrite)
    with storage.replacing(out, MARKER, check=refuse) as replacement:
        stage = replacement.stage()
        try:
            summary = _build(source, stage, match, check, say, step_options, step_maker)
        except CExportError as err:  # name the folder asked for, not the temporary one
            raise CExportError(str(err).replace(str(stage), f"{out} (being built)")) from None
        replacement.swap_in()
    say(f"wrote {out}: zoo_model.c ({summary['const_bytes']} bytes of constants, state "
        f"{summary['state_bytes']} bytes), bit-exact target {match}")
    return summary


def _build(source: Path, stage: Path, match: str, check: bool, say, step_options,
           step_maker=None) -> dict:
    """The C export of ``source`` written into the (marked, empty) folder ``stage``; ``say``
    reports its progress (`export_c`'s, and that of the step export made first)."""
    with tempfile.TemporaryDirectory(prefix=".zoo-c-step-", dir=stage) as tmp:
        step_dir = find_step_export(source) if step_maker is None else None
        made_here = step_dir is None
        if made_here:
            from zoo.export.exporter import AccuracyDropError, export_run

            step_dir = Path(tmp) / "step"
            make = step_maker or functools.partial(export_run, source)

            def said(*parts, **kwargs):  # its "wrote" line would name a temporary folder
                if parts != (f"  wrote {step_dir}",):
                    say(*parts, **kwargs)

            try:
                make(step_dir, quantize="int8", form="step", print_fn=said, **step_options)
            except AccuracyDropError as err:  # its folder is temporary: say how to keep one
                raise AccuracyDropError(
                    f"the int8 step export of {source} fails the accuracy check, so no C is "
                    f"made: {str(err).split(' (the export is in')[0]}. Run `zoo export {source} "
                    "--form step --quantize int8` to inspect it, or pass --allow-drop.") from None
        windows = None if made_here else _given_export_windows(source, step_dir, step_options)
        for name in KEPT:
            if (step_dir / name).is_file():
                shutil.copy2(step_dir / name, stage / name)
        summary = write_c_project(step_dir, stage, match)
        if match == "tflite-micro" and kws.is_kws_export(step_dir):  # issue 30: kws_app beside
            summary.update(kws.add_kws_files(step_dir, stage))
    summary["step_export"] = (("made from the Keras model" if step_maker else "made from the run")
                              if made_here else str(step_dir))
    if check:
        summary["check"] = check_c(stage, match, say, windows)
    (stage / CHECK_FILE).write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _given_export_windows(source: Path, step_dir: Path, step_options: dict):
    """Checks of a step export given as it is, before it is trusted (the card against its
    models is `write_c_project`'s): a failed export (``accuracy.passed`` false) is refused
    without --allow-drop; a shipped tag's export must have the tag's input shape. Returns the
    test windows to check the C code on when the export has no test set (a shipped tag): taken
    from the task's data on disk, or the reason there are none."""
    card = read_step_export(step_dir)
    failed = failed_export(card)
    if failed and not step_options.get("allow_drop"):
        raise CExportError(f"{step_dir}: {failed}; its C code would be bit-exact with a model "
                           "that was rejected. Pass --allow-drop to compile it anyway")
    if card.testset and (step_dir / card.testset).is_file():
        try:  # read here, so that a damaged one is named where it is, not in the staging copy
            load_testset(str(step_dir), card)
        except ExportFolderError as err:
            raise CExportError(str(err)) from None
        return None
    tag = shipped.tag_card(source) if step_dir != source else None
    if tag is None:
        return None
    shipped.check_against_tag(tag, card, source)
    x, _, why = shipped.test_windows(card, read_normalization(step_dir, card),
                                     step_options.get("data_dir"))
    return x, why


def check_out(out: Path, overwrite: bool) -> None:
    """Refuse a C ``out`` that may not be written (`zoo.training.storage.check_out`): an existing
    folder is replaced only with ``overwrite`` and only when it is a C export the zoo wrote."""
    from zoo.export.exportdir import MARKER
    from zoo.training import storage

    def is_c_export(folder: Path) -> bool:
        return storage.owned(folder, MARKER) and (folder / "zoo_model.c").is_file()

    storage.check_out(out, MARKER, overwrite, writer="zoo export --form c", what="C export",
                      error=CExportError, ours=is_c_export)


def check_c(c_dir: Path, match: str, print_fn=None, windows=None) -> dict:
    """Build ``c_dir`` with the host compiler and compare it with the TFLite models on every
    test window (the export's test set, or ``windows``: (normalized windows [N, T, F], or None
    and why there are none)); `CExportError` when a window differs. Skipped (with the reason)
    when there are no test windows or no C compiler is found."""
    from zoo.export.c_backend import check

    say = logs.reporter(_log, print_fn)  # print_fn (deprecated): given, it gets the lines
    x = None
    if windows is not None:
        x, why = windows
        if x is None:
            say(f"  no C check on test windows: {why}")
            return {"skipped": why}
    elif not (c_dir / "testset.npz").is_file():
        return {"skipped": "the step export has no testset.npz"}
    if shutil.which("cc") is None or shutil.which("make") is None:
        return {"skipped": "no host cc / make to build zoo_app"}
    app = check.build(c_dir)
    reference = "litert-ref" if match == "litert" else match
    result = check.compare(c_dir, app, reference, x=x)
    if x is not None:
        result["windows_from"] = "the task's data on disk (the shipped tag has no test set)"
    windows = result["windows"]
    say(f"  C vs {reference}: identical int8 logits on {result['identical_logits']}/"
        f"{windows} test windows, identical final state on "
        f"{result['identical_states']}/{windows}")
    if min(result["identical_logits"], result["identical_states"],
           result["identical_logits_raw_float_input"],
           result["identical_logits_normalized_input"]) != windows:
        raise CExportError(f"{c_dir}: the C code differs from {reference} on some test windows "
                           f"({result}). The card and models passed their checks, so this "
                           "points at the C backend: please report it with this folder")
    (c_dir / "zoo_app").unlink()
    return result
