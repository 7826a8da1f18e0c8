"""The public C names of an export (``--prefix``) and the user strings written into its C.

An export's public names start with its prefix ``p`` (a C identifier; `default_prefix` makes one
from the tag / run / export name), so that two exports link into one program: files
``p_model.h`` / ``p_model.c``; ``p_reset``, ``p_push``, ``p_push_q``, ``p_predict``,
``p_quantize_input``, ``p_quantize_normalized``, ``p_state_t``, ``p_class_names``; macros
``P_TIMESTEPS`` ... ``P_LOGIT_ZERO_POINT``, the include guard ``P_MODEL_H_``. A keyword export's
front end, input map and recognizer: ``kws_x`` -> ``p_kws_x``, ``KWS_X`` -> ``P_KWS_X``. The
prefix ``zoo`` gives exactly the names of an export made before prefixes (whose c_check.json has
no ``prefix``). `zoo_int8.h` (static inline kernels only) keeps its names.

The generated C is written with the ``zoo`` names (templates/, frontend/) and renamed here,
identifier by identifier, so a template cannot miss one.

User strings (class names, model and task names) reach the C through `zoo.export.c_text`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

LEGACY_PREFIX = "zoo"
CHECK_FILE = "c_check.json"
# C99 and C11 keywords and two common compiler extensions. The names a keyword prefix makes would
# compile (int_push is an identifier), but the prefix also names the CMake target, the Arduino
# library and its sketch, and a model called `int` or `static` in the caller's code is a slip:
# refused, as issue 48 asks.
C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline
int long register restrict return short signed sizeof static struct switch typedef union unsigned
void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn
_Static_assert _Thread_local asm typeof
""".split())
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MODEL_FUNCTIONS = ("reset", "push_q", "push", "predict", "quantize_input",
                   "quantize_normalized", "state_t", "class_names", "model")
MODEL_MACROS = ("TIMESTEPS", "FEATURES", "UNITS", "CLASSES", "LOGIT_SCALE", "LOGIT_ZERO_POINT",
                "MODEL_H_")
_MODEL_NAME = re.compile(r"\bzoo_(" + "|".join(MODEL_FUNCTIONS) + r")\b")
_MODEL_MACRO = re.compile(r"\bZOO_(" + "|".join(MODEL_MACROS) + r")\b")
# kws_ identifiers, but not the file names (kws_input.h, kws_frontend.c, export/kws_stream.py
# ...) nor the programs.
_KWS_NAME = re.compile(r"\bkws_(?!app\b|lib\b)(\w+)\b(?!\.(?:c|h|o|mk|py)\b)")
_KWS_MACRO = re.compile(r"\bKWS_(\w+)\b")


class PrefixError(ValueError):
    """``--prefix`` is not a C identifier the export's names can start with."""


def check_prefix(prefix: str) -> str:
    """``prefix`` when the export's names can start with it; `PrefixError` (one line saying what
    is valid) otherwise."""
    valid = ("valid: a C identifier (letters, digits, _; not starting with a digit) that is not "
             "a C keyword and does not start with __ or _ and a capital (reserved), e.g. "
             "har_model")
    if not isinstance(prefix, str) or not _IDENTIFIER.match(prefix):
        raise PrefixError(f"--prefix {prefix!r} is not a C identifier; {valid}")
    if prefix in C_KEYWORDS:
        raise PrefixError(f"--prefix {prefix!r} is a C keyword; {valid}")
    if prefix.startswith("__") or re.match(r"_[A-Z]", prefix):
        raise PrefixError(f"--prefix {prefix!r} is reserved to the C implementation; {valid}")
    return prefix


def default_prefix(name: str) -> str:
    """A prefix made from a tag / run / export name: ``sirnn.har2`` -> ``sirnn_har2``; every
    character that cannot be in a C identifier becomes ``_``, runs of ``_`` one, lower case; one
    that starts with a digit (or would be reserved, a keyword, or empty) gets ``m_`` in front."""
    text = re.sub(r"[^A-Za-z0-9_]+", "_", str(name)).strip("_").lower()
    text = re.sub(r"_+", "_", text)
    if not text or text[0].isdigit() or text in C_KEYWORDS:
        text = f"m_{text}".rstrip("_")
    return check_prefix(text)


def rename_model(text: str, prefix: str) -> str:
    """``text`` (generated C, a Makefile, a README) with the model's public names and file
    names under ``prefix`` instead of ``zoo``."""
    if prefix == LEGACY_PREFIX:
        return text
    text = _MODEL_NAME.sub(lambda m: f"{prefix}_{m.group(1)}", text)
    return _MODEL_MACRO.sub(lambda m: f"{prefix.upper()}_{m.group(1)}", text)


def rename_kws(text: str, prefix: str) -> str:
    """`rename_model`, and the keyword front end's, input map's and recognizer's names:
    ``kws_x`` -> ``p_kws_x``, ``KWS_X`` -> ``P_KWS_X`` (file and program names kept)."""
    if prefix == LEGACY_PREFIX:
        return text
    text = rename_model(text, prefix)
    text = _KWS_NAME.sub(lambda m: f"{prefix}_kws_{m.group(1)}", text)
    return _KWS_MACRO.sub(lambda m: f"{prefix.upper()}_KWS_{m.group(1)}", text)


def model_files(prefix: str) -> tuple[str, str]:
    """(header, source) file names of the model under ``prefix``."""
    return f"{prefix}_model.h", f"{prefix}_model.c"


def c_names(export_dir) -> tuple[str, str, str]:
    """(prefix, header file name, source file name) of a C export, from its ``c_check.json``
    (an export without the ``prefix`` key, or without the file, is an older one: ``zoo``)."""
    path = Path(export_dir) / CHECK_FILE
    prefix = LEGACY_PREFIX
    if path.is_file():
        try:
            prefix = json.loads(path.read_text()).get("prefix", LEGACY_PREFIX)
        except (ValueError, AttributeError) as err:
            raise ValueError(f"{path}: not a C export's check file ({err})") from None
        try:
            check_prefix(prefix)
        except PrefixError as err:
            raise ValueError(f"{path}: prefix {prefix!r}: {err}") from None
    return (prefix, *model_files(prefix))
