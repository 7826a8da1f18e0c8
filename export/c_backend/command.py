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

import contextlib
import dataclasses
import functools
import json
import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.export.c_backend import kws, shipped
from zoo.export.c_backend.names import (CHECK_FILE, LEGACY_PREFIX, PrefixError, c_names,
                                        check_prefix, default_prefix, model_files)
from zoo.export.c_backend.project import (DEFAULT_RUNTIME, RUNTIMES, STEP_EXPORT_NAME,
                                          CExportError, read_normalization, read_step_export,
                                          source_name, write_c_project)
from zoo.export.card_schema import (CARD_FILE, CARD_MARKDOWN_FILE, NORMALIZATION_FILE,
                                    TESTSET_FILE, ExportFolderError, ModelCard, read_export_card)
from zoo.export.device_checks import failed_export
from zoo.export.exportdir import load_testset
from zoo.pretrained_card import PretrainedCfg

if TYPE_CHECKING:
    from zoo.export.exporter import ExportOptions

DEFAULT_OUT_NAME = "export-c-int8"
_log = logging.getLogger(__name__)
# The step export's files the C folder keeps beside the sources (provenance and the test split).
KEPT = ("step.tflite", "head.tflite", CARD_FILE, CARD_MARKDOWN_FILE, NORMALIZATION_FILE,
        TESTSET_FILE)


@dataclass(frozen=True)
class StepExport:
    """An int8 step export a C export starts from, its card read once: ``folder`` and its
    ``card``, and ``tag``, the card of the shipped tag it belongs to (None for a plain export
    or a run's)."""

    folder: Path
    card: ModelCard
    tag: PretrainedCfg | None = None


def find_step_export(source: Path) -> StepExport | None:
    """The int8 step export ``source`` is or holds (with its card, read once through
    `card_schema.read_export_card`), or None (then ``source`` must be a run). A shipped tag that
    holds no int8 step export (the DS-CNN keyword spotter ships a sequence model) is refused here,
    before anything would treat the tag as a run to re-export (and look for, or download, its
    dataset)."""
    source = Path(source)
    tag = shipped.tag_card(source)
    for folder in (source, source / STEP_EXPORT_NAME):
        if (folder / CARD_FILE).is_file():
            card = read_step_card(folder)
            if card.form == "step" and card.quantize == "int8":
                return StepExport(folder, card, tag if folder != source else None)
            if folder == source:
                raise CExportError(f"{source} is a {card.quantize} {card.form} export; --form c "
                                   "needs a run directory or an int8 step export")
    if tag is not None:
        export = tag.export
        raise CExportError(f"{source} is a shipped tag whose export is {export.folder!r} "
                           f"({export.quantize} {export.form}); --form c compiles a recurrent "
                           "cell's int8 step export, which this tag does not hold")
    return None


def read_step_card(folder: Path) -> ModelCard:
    """`card_schema.read_export_card` of ``folder``, its errors as `CExportError`."""
    try:
        return read_export_card(str(folder))
    except ExportFolderError as err:
        raise CExportError(str(err)) from None


def export_c(source, out=None, *, match: str = DEFAULT_RUNTIME, check: bool = True,
             found: StepExport | None = None, step_maker=None, prefix: str | None = None,
             options: ExportOptions | None = None, **fields) -> dict:
    """Write the C export of ``source`` to ``out`` (default SOURCE/export-c-int8); returns the
    summary (also in ``c_check.json``). ``found``: `find_step_export` of ``source`` when the
    caller has it (the export's card is read once per command). ``options``: the
    `zoo.export.exporter.ExportOptions` of the int8 step export (as ``zoo export`` builds them
    from its flags), or ``fields`` of them (``overwrite=True, data_dir=...``): they make the
    step export when one has to be made first (`export_run_with`); ``overwrite`` is this
    folder's, and ``allow_drop`` and ``data_dir`` apply to a step export given as it is too.
    ``step_maker(step_dir, options)``, when given, makes the int8 step export instead of
    `export_run_with` and returns its `ModelCard` (``source`` then only names it:
    `zoo.export.keras_export` passes a Keras model's). Progress is logged at INFO
    (`zoo.core.logs`). ``prefix``: the public C names' (`names.check_prefix`; default
    `names.default_prefix` of the source's name).

    ``out`` is handled as every export directory (`zoo.core.storage`): locked, built in a
    staging folder beside it, swapped in only once the C compiles and matches the runtime; an
    existing folder is replaced only with ``overwrite`` and only when the zoo wrote it.
    """
    from zoo.export.exportdir import MARKER
    from zoo.core import storage

    source = Path(source)
    options = step_export_options(options, fields)
    if match not in RUNTIMES:
        raise CExportError(f"--match {match!r}; valid: {', '.join(RUNTIMES)}")
    try:
        prefix = check_prefix(prefix) if prefix else default_prefix(source_name(source))
    except PrefixError as err:
        raise CExportError(str(err)) from None
    if step_maker is None:
        found = found or find_step_export(source)
    out = storage.real_target(Path(out) if out else source / DEFAULT_OUT_NAME)
    refuse = functools.partial(check_out, overwrite=options.overwrite)
    with storage.replacing(out, MARKER, check=refuse) as replacement:
        stage = replacement.stage()
        summary = _build(source, found, stage, out, match, check, options, step_maker, prefix)
        replacement.swap_in()
    _log.info("wrote %s: " + model_files(prefix)[1] + " (%s bytes of constants, state %s bytes), bit-exact target "
              "%s", out, summary["const_bytes"], summary["state_bytes"], match)
    return summary


def step_export_options(options: ExportOptions | None, fields: dict) -> ExportOptions:
    """The int8 step export's `ExportOptions`: ``options`` (made int8 step), or made of
    ``fields``; checked either way before anything is read."""
    from zoo.export.exporter import ExportOptions

    if options is not None and fields:
        raise TypeError(f"export_c: options, or their fields ({', '.join(fields)}), not both")
    if options is None:
        return ExportOptions(quantize="int8", form="step", **fields)
    return dataclasses.replace(options, quantize="int8", form="step")


def _build(source: Path, found: StepExport | None, stage: Path, out: Path, match: str,
           check: bool, options: ExportOptions, step_maker=None,
           prefix: str = LEGACY_PREFIX) -> dict:
    """The C export of ``source`` written into the (marked, empty) folder ``stage``, which
    becomes ``out``."""
    made = found is None
    with tempfile.TemporaryDirectory(prefix=".zoo-c-step-", dir=stage) as tmp:
        if made:
            found = _made_here(source, Path(tmp) / "step", options, step_maker)
            windows = None
        else:
            windows = _given_export_windows(source, found, options)
        step_dir, card = found.folder, found.card
        for name in KEPT:
            if (step_dir / name).is_file():
                shutil.copy2(step_dir / name, stage / name)
        summary = write_c_project(step_dir, stage, match, card=card, prefix=prefix)
        if match == "tflite-micro" and kws.is_kws_export(step_dir, card):  # issue 30: kws_app
            summary.update(kws.add_kws_files(step_dir, stage, card, prefix=prefix))
    summary["step_export"] = (("made from the Keras model" if step_maker else "made from the run")
                              if made else str(step_dir))
    if check:
        summary["check"] = check_c(stage, match, windows, card=card, shown_as=out)
    (stage / CHECK_FILE).write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _made_here(source: Path, step_dir: Path, options: ExportOptions,
               step_maker=None) -> StepExport:
    """The int8 step export of the run ``source`` (or ``step_maker``'s), made in ``step_dir``
    (calibrated as ``--form step`` would); its card is the one the maker returns, not read
    back."""
    from zoo.export.exporter import AccuracyDropError, export_run_with

    make = step_maker or functools.partial(export_run_with, source)
    try:
        with _without_wrote_line(step_dir):
            card = make(step_dir, options)
    except AccuracyDropError as err:  # its folder is temporary: say how to keep one
        inspect = err.inspect or f"zoo export {source} --form step --quantize int8"
        raise AccuracyDropError(
            f"the int8 step export of {source} fails the accuracy check, so no C is made: "
            f"{err.summary}. Run `{inspect}` to inspect it"
            + (f", try `{err.command}`" if err.command else "")
            + ", or pass --accept-int8-loss (--allow-drop).", summary=err.summary,
            inspect=inspect, command=err.command) from None
    return StepExport(step_dir, read_step_export(step_dir, card))


@contextlib.contextmanager
def _without_wrote_line(step_dir: Path):
    """The exporter's progress, but not its closing ``wrote STEP_DIR`` line: that folder is a
    temporary one inside the C export's staging folder, gone when the command ends."""
    exporter_log = logging.getLogger("zoo.export.exporter")
    wrote = f"wrote {step_dir}"
    drop = logging.Filter()
    drop.filter = lambda record: record.getMessage().strip() != wrote
    exporter_log.addFilter(drop)
    try:
        yield
    finally:
        exporter_log.removeFilter(drop)


def _given_export_windows(source: Path, found: StepExport, options: ExportOptions):
    """Checks of a step export given as it is, before it is trusted (the card against its
    models is `write_c_project`'s): a failed export (``accuracy.passed`` false) is refused
    without --allow-drop; a shipped tag's export must have the tag's input shape. Returns the
    test windows to check the C code on when the export has no test set (a shipped tag): taken
    from the task's data on disk, or the reason there are none; None: the export's own."""
    step_dir, card = found.folder, read_step_export(found.folder, found.card)
    failed = failed_export(card)
    if failed and not options.allow_drop:
        raise CExportError(f"{step_dir}: {failed}; its C code would be bit-exact with a model "
                           "that was rejected. Pass --allow-drop to compile it anyway")
    if card.testset and (step_dir / card.testset).is_file():
        try:  # read here, so that a damaged one is named where it is, not in the staging copy
            load_testset(str(step_dir), card)
        except ExportFolderError as err:
            raise CExportError(str(err)) from None
        return None
    if found.tag is None:
        return None
    shipped.check_against_tag(found.tag, card, source)
    x, _, why = shipped.test_windows(card, read_normalization(step_dir, card),
                                     options.data_dir)
    return x, why


def check_out(out: Path, overwrite: bool) -> None:
    """Refuse a C ``out`` that may not be written (`zoo.core.storage.check_out`): an existing
    folder is replaced only with ``overwrite`` and only when it is a C export the zoo wrote."""
    from zoo.export.exportdir import MARKER
    from zoo.core import storage

    def is_c_export(folder: Path) -> bool:
        try:
            source_file = c_names(folder)[2]
        except ValueError:  # a damaged c_check.json: not one the zoo can vouch for
            return False
        return storage.owned(folder, MARKER) and (folder / source_file).is_file()

    storage.check_out(out, MARKER, overwrite, writer="zoo export --form c", what="C export",
                      error=CExportError, ours=is_c_export)


def check_c(c_dir: Path, match: str, windows=None, card: ModelCard | None = None,
            shown_as: Path | None = None) -> dict:
    """Build ``c_dir`` with the host compiler and compare it with the TFLite models on every
    test window (the export's test set, or ``windows``: (normalized windows [N, T, F], or None
    and why there are none)); `CExportError` when a window differs. Skipped (with the reason)
    when there are no test windows or no C compiler is found. ``card``: the export's card when
    the caller has read it; ``shown_as``: the folder's name in messages (``c_dir`` is a staging
    folder that becomes it)."""
    from zoo.export.c_backend import check

    name = shown_as or c_dir
    x = None
    if windows is not None:
        x, why = windows
        if x is None:
            _log.warning("  no C check on test windows: %s", why)
            return {"skipped": why}
    elif not (c_dir / TESTSET_FILE).is_file():
        return {"skipped": "the step export has no testset.npz"}
    if shutil.which("cc") is None or shutil.which("make") is None:
        return {"skipped": "no host cc / make to build zoo_app"}
    app = check.build(c_dir, shown_as=name)
    reference = "litert-ref" if match == "litert" else match
    result = check.compare(c_dir, app, reference, x=x, card=card)
    if x is not None:
        result["windows_from"] = "the task's data on disk (the shipped tag has no test set)"
    windows = result["windows"]
    _log.info("  C vs %s: identical int8 logits on %s/%s test windows, identical final state "
              "on %s/%s", reference, result["identical_logits"], windows,
              result["identical_states"], windows)
    if min(result["identical_logits"], result["identical_states"],
           result["identical_logits_raw_float_input"],
           result["identical_logits_normalized_input"]) != windows:
        raise CExportError(f"{name}: the C code differs from {reference} on some test windows "
                           f"({result}). The card and models passed their checks, so this "
                           "points at the C backend: please report it with this folder")
    (c_dir / "zoo_app").unlink()
    return result
