"""What ``zoo profile`` is given, made into a C export (``zoo export --form c``) when it is not
one: an installed tag by name (``sirnn.har2``), a C export folder, an int8 step export, a tag or
run folder, or a ``.keras`` model with its calibration windows. The C export is then read for
its names (its prefix, `c_names`), whether it carries the keyword front end, and its timing.
"""

from __future__ import annotations

import logging
from pathlib import Path

from zoo.export.c_backend.names import CHECK_FILE, c_names

KWS_SOURCES = ("kws_frontend.c", "kws_frontend_tables.c", "kws_model_io.c", "kws_input.c")


class ProfileError(ValueError):
    """A source that cannot be profiled, said in one line."""


def is_c_export(folder: Path) -> bool:
    """A folder `zoo export --form c` wrote: its c_check.json and its model's C file."""
    folder = Path(folder)
    if not (folder / CHECK_FILE).is_file():
        return False
    return (folder / c_names(folder)[2]).is_file()


def is_kws(c_dir: Path) -> bool:
    """Whether the C export carries the keyword front end (a speech model: `zoo export --form
    c` adds it), so that a hop is front end + model + recognizer."""
    return all((Path(c_dir) / name).is_file() for name in KWS_SOURCES)


def resolve_tag_folder(name: str) -> Path:
    """An installed tag's folder by name (`zoo.pretrained.resolve_tag`: its one line for an
    archived or unknown name, the valid tags listed)."""
    from zoo.pretrained import resolve_tag

    try:
        return resolve_tag(name)
    except ValueError as err:
        raise ProfileError(str(err)) from None


def c_export_of(source: str, work: Path, calibration: str | None = None,
                labels: str | None = None) -> Path:
    """The C export folder of ``source``: itself when it is one, else one made in
    ``work/c`` by `zoo.export.c_backend.command.export_c` (or `keras_export.export_model` for a
    ``.keras`` file, which needs ``calibration``). The made export is not checked against
    TFLite Micro here (`zoo export --form c` does that); ``zoo profile`` compares every target
    with the host build of the same C."""
    path = Path(source)
    if str(source).endswith(".keras"):
        return _keras_export(path, work / "c", calibration, labels)
    if calibration or labels:
        raise ProfileError("--calibration / --labels apply to a .keras model; a run, export or "
                           "tag is calibrated already")
    if path.is_dir() and is_c_export(path):
        return path
    if not path.exists():
        if "/" in str(source) or "." not in str(source):
            raise ProfileError(f"{source}: no such file or folder, and not a tag name (MODEL.TASK)")
        path = resolve_tag_folder(str(source))
    from zoo.export.c_backend import CExportError
    from zoo.export.c_backend.command import export_c

    command_log = logging.getLogger("zoo.export.c_backend.command")
    level = command_log.level
    command_log.setLevel(logging.WARNING)  # its "wrote <temporary folder>" says nothing here
    try:
        export_c(path, work / "c", check=False)
    except (CExportError, ValueError, OSError) as err:
        raise ProfileError(str(err)) from None
    finally:
        command_log.setLevel(level)
    return work / "c"


def _keras_export(path: Path, out: Path, calibration, labels) -> Path:
    if not path.is_file():
        raise ProfileError(f"{path}: no such .keras file")
    if not calibration:
        raise ProfileError(f"{path}: a .keras model needs --calibration FILE (its raw input "
                           "windows, as zoo export takes them)")
    from zoo.export.keras_export import export_model

    try:
        export_model(str(path), calibration=calibration, labels=labels, out=str(out),
                     quantize="int8", form="c")
    except (ValueError, OSError) as err:
        raise ProfileError(str(err)) from None
    return out
