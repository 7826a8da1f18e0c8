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
import shutil
import tempfile
from pathlib import Path

from export.c_backend.project import RUNTIMES, CExportError, write_c_project

STEP_EXPORT_NAME = "export-step-int8"
DEFAULT_OUT_NAME = "export-c-int8"
CHECK_FILE = "c_check.json"
# The step export's files the C folder keeps beside the sources (provenance and the test split).
KEPT = ("step.tflite", "head.tflite", "model_card.json", "model_card.md", "normalization.json",
        "testset.npz")


def find_step_export(source: Path) -> Path | None:
    """The int8 step export ``source`` is or holds, or None (then ``source`` must be a run)."""
    for folder in (source, source / STEP_EXPORT_NAME):
        card = folder / "model_card.json"
        if card.is_file():
            try:
                data = json.loads(card.read_text())
            except ValueError as err:
                raise CExportError(f"{card}: not valid JSON ({err})") from None
            if isinstance(data, dict) and data.get("form") == "step" \
                    and data.get("quantize") == "int8":
                return folder
            if folder == source:
                raise CExportError(f"{source} is a {data.get('quantize')} "
                                   f"{data.get('form')} export; --form c needs a run directory "
                                   "or an int8 step export")
    return None


def export_c(source, out=None, *, match: str = "tflite-micro", overwrite: bool = False,
             check: bool = True, print_fn=print, **step_options) -> dict:
    """Write the C export of ``source`` to ``out`` (default SOURCE/export-c-int8); returns the
    summary (also in ``c_check.json``). ``step_options`` go to `export_run` when a step export
    has to be made first.

    ``out`` is handled as every export directory (`training.storage`): locked, built in a
    staging folder beside it, swapped in only once the C compiles and matches the runtime; an
    existing folder is replaced only with ``overwrite`` and only when the zoo wrote it.
    """
    from export.exportdir import MARKER
    from training import storage

    source = Path(source)
    if match not in RUNTIMES:
        raise CExportError(f"--match {match!r}; valid: {', '.join(RUNTIMES)}")
    out = storage.real_target(Path(out) if out else source / DEFAULT_OUT_NAME)
    refuse = functools.partial(check_out, overwrite=overwrite)
    with storage.replacing(out, MARKER, check=refuse) as replacement:
        stage = replacement.stage()
        try:
            summary = _build(source, stage, match, check, print_fn, step_options)
        except CExportError as err:  # name the folder asked for, not the temporary one
            raise CExportError(str(err).replace(str(stage), f"{out} (being built)")) from None
        replacement.swap_in()
    print_fn(f"wrote {out}: zoo_model.c ({summary['const_bytes']} bytes of constants, state "
             f"{summary['state_bytes']} bytes), bit-exact target {match}")
    return summary


def _build(source: Path, stage: Path, match: str, check: bool, print_fn, step_options) -> dict:
    """The C export of ``source`` written into the (marked, empty) folder ``stage``."""
    with tempfile.TemporaryDirectory(prefix=".zoo-c-step-", dir=stage) as tmp:
        step_dir = find_step_export(source)
        made_here = step_dir is None
        if made_here:
            from export.exporter import export_run

            from export.exporter import AccuracyDropError

            step_dir = Path(tmp) / "step"

            def said(*parts, **kwargs):  # its "wrote" line would name a temporary folder
                if parts != (f"  wrote {step_dir}",):
                    print_fn(*parts, **kwargs)

            try:
                export_run(source, step_dir, quantize="int8", form="step", print_fn=said,
                           **step_options)
            except AccuracyDropError as err:  # its folder is temporary: say how to keep one
                raise AccuracyDropError(
                    f"the int8 step export of {source} fails the accuracy check, so no C is "
                    f"made: {str(err).split(' (the export is in')[0]}. Run `zoo export {source} "
                    "--form step --quantize int8` to inspect it, or pass --allow-drop.") from None
        for name in KEPT:
            if (step_dir / name).is_file():
                shutil.copy2(step_dir / name, stage / name)
        summary = write_c_project(step_dir, stage, match)
    summary["step_export"] = "made from the run" if made_here else str(step_dir)
    if check:
        summary["check"] = check_c(stage, match, print_fn)
    (stage / CHECK_FILE).write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def check_out(out: Path, overwrite: bool) -> None:
    """Refuse a C ``out`` that may not be written (`training.storage.check_out`): an existing
    folder is replaced only with ``overwrite`` and only when it is a C export the zoo wrote."""
    from export.exportdir import MARKER
    from training import storage

    def is_c_export(folder: Path) -> bool:
        return storage.owned(folder, MARKER) and (folder / "zoo_model.c").is_file()

    storage.check_out(out, MARKER, overwrite, writer="zoo export --form c", what="C export",
                      error=CExportError, ours=is_c_export)


def check_c(c_dir: Path, match: str, print_fn=print) -> dict:
    """Build ``c_dir`` with the host compiler and compare it with the TFLite models on every
    test window; `CExportError` when a window differs. Skipped (with the reason) when the
    export has no test windows or no C compiler is found."""
    from export.c_backend import check

    if not (c_dir / "testset.npz").is_file():
        return {"skipped": "the step export has no testset.npz (e.g. a shipped tag)"}
    if shutil.which("cc") is None or shutil.which("make") is None:
        return {"skipped": "no host cc / make to build zoo_app"}
    app = check.build(c_dir)
    reference = "litert-ref" if match == "litert" else match
    result = check.compare(c_dir, app, reference)
    windows = result["windows"]
    print_fn(f"  C vs {reference}: identical int8 logits on {result['identical_logits']}/"
             f"{windows} test windows, identical final state on "
             f"{result['identical_states']}/{windows}")
    if min(result["identical_logits"], result["identical_states"],
           result["identical_logits_raw_float_input"]) != windows:
        raise CExportError(f"{c_dir}: the C code differs from {reference} on some test windows "
                           f"({result}); this is a bug in the C backend, please report it")
    (c_dir / "zoo_app").unlink()
    return result
