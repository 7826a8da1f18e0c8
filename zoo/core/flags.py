"""Command-line values, parsed once for every command (``zoo train``, ``zoo sweep``, ``zoo
analyze``, the benchmarks): strict numbers, numbers in a range, and ``KEY=VALUE`` pairs; and the
program name a script's usage line shows.

Each is an argparse ``type=``: a bad value is refused by the parser, before any work starts, with
one line naming the flag (argparse adds it) and what is valid. Standard library and YAML only, so
the usage errors answer without loading Keras.
"""

from __future__ import annotations

import argparse
import math
import re
import sys

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(inf|nan)", re.I)


def strict_int(text: str) -> int:
    """An integer flag value: digits only (Python's ``int`` also takes ``1_000`` and spaces)."""
    if not _INT.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    return int(text)


def strict_float(text: str) -> float:
    """A number flag value: decimal or exponent notation (no ``1_000``)."""
    if not _FLOAT.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
    return float(text)


def describe_range(kind: str, low=None, high=None, low_open: bool = False) -> str:
    """``"an integer >= 1"``, ``"a number in (0, 1]"``... (zoo.training.config's rules' wording)."""
    article = "an integer" if kind == "int" else "a number"
    if low is not None and high is not None:
        if kind == "int":
            return f"{article} in {low}..{high}"
        return f"{article} in {'(' if low_open else '['}{low:g}, {high:g}]"
    if low is not None:
        return f"{article} {'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"{article} <= {high:g}"
    return article


def int_in(low: int | None = None, high: int | None = None):
    """An argparse type: an integer in ``low..high`` (either end may be open-ended: None)."""
    valid = describe_range("int", low, high)

    def parse(text: str) -> int:
        value = strict_int(text) if _INT.fullmatch(text.strip()) else None
        if value is None or (low is not None and value < low) or (high is not None
                                                                 and value > high):
            raise argparse.ArgumentTypeError(f"{text!r}: expected {valid}")
        return value

    parse.__name__ = valid  # argparse names the type in some messages
    parse.valid_range = ("int", low, high, False)  # what a test probes just outside
    return parse


def number_in(low: float | None = None, high: float | None = None, low_open: bool = False):
    """An argparse type: a finite number in ``[low, high]`` (``(low, high]`` with ``low_open``)."""
    valid = describe_range("float", low, high, low_open)

    def parse(text: str) -> float:
        value = strict_float(text) if _FLOAT.fullmatch(text.strip()) else math.nan
        ok = math.isfinite(value)
        if ok and low is not None:
            ok = value > low if low_open else value >= low
        if ok and high is not None:
            ok = value <= high
        if not ok:
            raise argparse.ArgumentTypeError(f"{text!r}: expected {valid}")
        return value

    parse.__name__ = valid
    parse.valid_range = ("float", low, high, low_open)
    return parse


def key_value(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` with a YAML-typed value (3 -> int, 0.1 -> float, none -> None): the one
    parser of ``zoo train --option/--task-option`` and ``zoo sweep --option/--set``. What the
    key may be and which values are valid is the caller's to check (zoo.training.config's rules)."""
    import yaml

    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        parsed = yaml.safe_load(value)
        if isinstance(parsed, (list, dict)):  # e.g. classes=[yes,no]: the words stay words
            parsed = yaml.load(value, Loader=_words_loader())  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as err:
        raise argparse.ArgumentTypeError(f"{text!r}: the value is not valid YAML ({err})") from None
    if isinstance(parsed, (int, float)) and not isinstance(parsed, bool) and "_" in value:
        # YAML 1.1 reads 1_000 as 1000; a typo there should not silently become a number.
        raise argparse.ArgumentTypeError(f"{text!r}: write numbers without '_' separators")
    if isinstance(parsed, float) and not math.isfinite(parsed):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a finite number")
    return key.strip(), parsed


def non_empty(text: str) -> str:
    """A value that may not be empty (``--init-from=`` was silently ignored)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a value, got an empty one")
    return text


def _words_loader():
    """A `yaml.SafeLoader` whose booleans are only true / false (YAML 1.2): inside a list,
    YAML 1.1 turns yes, no, on, off into booleans, and yes / no are the usual keywords of a
    list of class names (``--task-option classes=[yes,no]``)."""
    import re

    import yaml

    class WordsLoader(yaml.SafeLoader):
        pass

    WordsLoader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    WordsLoader.add_implicit_resolver("tag:yaml.org,2002:bool",
                                      re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                      list("tTfF"))
    return WordsLoader


def program_name(module: str) -> str:
    """argparse's ``prog`` for a script that runs both as ``zoo bench NAME`` (the dispatcher sets
    ``sys.argv[0]`` to that command) and as ``python -m module`` (where ``sys.argv[0]`` is the
    file's path, which is not how it was typed)."""
    argv0 = sys.argv[0] if sys.argv else ""
    return argv0 if argv0.startswith("zoo ") else f"python -m {module}"
