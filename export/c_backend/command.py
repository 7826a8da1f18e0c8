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
    has to be made first."""
    from export.exportdir import ExportDirectory
    from training import rundir

    source = Path(source)
    if match not in RUNTIMES:
        raise CExportError(f"--match {match!r}; valid: {', '.join(RUNTIMES)}")
    out = Path(out) if out else source / DEFAULT_OUT_NAME
    _check_out(out, overwrite)
    with tempfile.TemporaryDirectory(prefix=".zoo-c-", dir=out.parent if out.parent.exists()
                                     else None) as tmp:
        step_dir = find_step_export(source)
        if step_dir is None:
            step_dir = Path(tmp) / "step"
            from export.exporter import export_run

            export_run(source, step_dir, quantize="int8", form="step", print_fn=print_fn,
                       **step_options)
        stage = Path(tmp) / "c"
        stage.mkdir()
        for name in KEPT:
            if (step_dir / name).is_file():
                shutil.copy2(step_dir / name, stage / name)
        summary = write_c_project(step_dir, stage, match)
        summary["step_export"] = str(step_dir if step_dir.parent != Path(tmp) else "made here")
        if check:
            summary["check"] = check_c(stage, match, print_fn)
        (stage / CHECK_FILE).write_text(json.dumps(summary, indent=1) + "\n")
        ExportDirectory(stage).write_marker(atomic=False)
        out.parent.mkdir(parents=True, exist_ok=True)
        final = rundir.staging_path(out, "new")
        shutil.move(str(stage), final)
        rundir.swap_in(final, out)
    print_fn(f"wrote {out}: zoo_model.c ({summary['const_bytes']} bytes of constants, state "
             f"{summary['state_bytes']} bytes), bit-exact target {match}")
    return summary


def _check_out(out: Path, overwrite: bool) -> None:
    from export.exportdir import ExportDirectory

    if out.exists() and not out.is_dir():
        raise CExportError(f"--out {out} is a file, not a directory; choose another --out")
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise CExportError(f"{out} already exists; choose another --out or pass --overwrite")
        if not ExportDirectory(out).has_marker() or not (out / "zoo_model.c").is_file():
            raise CExportError(f"{out} is not a C export the zoo wrote; --overwrite replaces "
                               "only those. Choose another --out.")


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
