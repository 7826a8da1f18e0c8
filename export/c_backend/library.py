"""The library a user's firmware build takes, beside the Makefile of a C export.

    CMakeLists.txt           the static library PREFIX (``add_subdirectory`` +
                             ``target_link_libraries``: plain CMake, ESP-IDF, the Pico SDK,
                             Zephyr), the Cortex-M DSP path from the target core or
                             ``-DPREFIX_ARM_DSP=ON/OFF``
    cmake/arm-none-eabi.cmake  a toolchain file for a bare-metal Cortex-M build (``-DZOO_CPU=``)
    zephyr/module.yml        the folder as a Zephyr module
    arduino/NAME/            an Arduino library (specification rev 2.2): library.properties,
                             src/ (the model's C), examples/NAME/NAME.ino (windows over the
                             serial port in, the class out); PlatformIO reads it as well

The templates are in ``templates/`` with ``@PREFIX@``-style placeholders (CMake's own ``${}``
stays as it is). User text (model and task names) reaches library.properties only through
`zoo.export.c_text.comment_text`.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from zoo.export.c_backend.names import model_files
from zoo.export.c_text import comment_text

LIBRARY_FILES = ("CMakeLists.txt", "cmake/arm-none-eabi.cmake", "zephyr/module.yml")
# library.properties needs a url: the package's registry page (the project names no other).
URL = "https://pypi.org/project/edge-rnn-zoo/"


def _template(name: str, **values: str) -> str:
    text = resources.files("zoo.export.c_backend").joinpath(f"templates/{name}").read_text()
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    left = re.findall(r"@[A-Z_]+@", text)
    if left:  # a placeholder without a value is a bug here, not text for the user's build
        raise KeyError(f"templates/{name}: {left} not filled")
    return text


def arduino_name(prefix: str) -> str:
    """The Arduino library's name: the prefix (the spec wants a letter or digit first)."""
    return prefix if prefix[0].isalnum() else f"zoo{prefix}"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        text = version("edge-rnn-zoo")
    except PackageNotFoundError:
        return "0.0.0"
    return text if re.fullmatch(r"\d+\.\d+\.\d+", text) else "0.0.0"


def write_library(out: Path, prefix: str, sources: list[str], card) -> list[str]:
    """The CMake library, its toolchain file, the Zephyr module file and the Arduino library of
    the C project in ``out`` (``sources``: the library's .c files, in ``out``); returns the
    files written, relative to ``out``."""
    out = Path(out)
    header, _ = model_files(prefix)
    kws = any(name.startswith("kws_") for name in sources)
    texts = {
        "CMakeLists.txt": _template("CMakeLists.txt", PREFIX=prefix, UPPER=prefix.upper(),
                                    SOURCES=" ".join(sources),
                                    KWS_NOTE=" and the keyword front end" if kws else ""),
        "cmake/arm-none-eabi.cmake": _template("arm-none-eabi.cmake"),
        "zephyr/module.yml": _template("module.yml", PREFIX=prefix),
    }
    name = arduino_name(prefix)
    root = f"arduino/{name}"
    texts[f"{root}/library.properties"] = _template(
        "library.properties", NAME=name, VERSION=_version(), URL=URL, PREFIX=prefix,
        MODEL=comment_text(card.model), TASK=comment_text(card.task or "your data"))
    texts[f"{root}/examples/{name}/{name}.ino"] = _template(
        "sketch.ino", NAME=name, PREFIX=prefix, UPPER=prefix.upper())
    for source in [header, "zoo_int8.h", *sources, *_kws_headers(out, kws)]:
        texts[f"{root}/src/{source}"] = (out / source).read_text()
    for rel, text in texts.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return list(texts)


def _kws_headers(out: Path, kws: bool) -> list[str]:
    """The keyword front end's headers the library's sources include."""
    if not kws:
        return []
    return [name for name in ("kws_frontend.h", "kws_input.h", "kws_recognizer.h")
            if (out / name).is_file()]
