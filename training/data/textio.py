"""Strict readers for the numeric text files of UCI HAR and DSA-19.

`numpy.loadtxt` skips blank lines and accepts NaN, so a truncated or damaged file can load
with rows silently missing or poisoned values. These readers reject both and name the file, the
1-based line and the 1-based column at fault.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from zoo.training.data.errors import DataError


def _lines(path: Path, data: bytes | None) -> list[str]:
    raw = Path(path).read_bytes() if data is None else data
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataError(f"{path}: line {line}: non-ASCII byte 0x{raw[exc.start]:02x}; "
                        "the file is corrupt") from None
    lines = text.split("\n")
    while lines and not lines[-1].strip():  # a final newline (or trailing blank lines) is normal
        lines.pop()
    return lines


def parse_table(path: Path, ncols: int, *, delimiter: str | None = None,
                data: bytes | None = None, nrows: int | None = None) -> np.ndarray:
    """Parse a numeric table with exactly ``ncols`` values per line into float64 ``(rows, ncols)``.

    Args:
        path: the file (also used in error messages when ``data`` is given).
        ncols: required number of values on every line.
        delimiter: ``None`` for runs of whitespace (HAR), ``","`` for DSA-19.
        data: the file's bytes, if already read (e.g. from an archive).
        nrows: if given, the required number of lines.

    Raises:
        DataError: empty line, wrong column count, a value that is not a number, NaN/inf or
            beyond float32's range, one that dominates its column (`dominating_value`), or a
            wrong row count; the message names file, line and column.
    """
    lines = _lines(path, data)
    if not lines:
        raise DataError(f"{path}: file is empty")
    tokens: list[str] = []
    for i, line in enumerate(lines):
        parts = line.split(delimiter)
        if delimiter is not None and len(parts) == 1 and not parts[0].strip():
            parts = []
        if len(parts) != ncols:
            what = "empty line" if not parts else f"found {len(parts)} columns"
            raise DataError(f"{path}: line {i + 1}: expected {ncols} columns, {what} "
                            "(truncated or corrupt file?)")
        tokens.extend(parts)
    try:
        values = np.array(tokens, dtype=np.float64)
    except ValueError:
        _locate_bad_token(path, tokens, ncols)
        raise  # pragma: no cover - _locate_bad_token always raises
    # The zoo keeps signals as float32: a value finite in float64 but beyond float32's range
    # (1e308) would become inf there, and NaN after normalisation, far from this file.
    with np.errstate(over="ignore"):
        bad = np.flatnonzero(~np.isfinite(values.astype(np.float32)))
    if bad.size:
        k = int(bad[0])
        what = ("is not finite" if not np.isfinite(values[k]) else
                f"is outside float32's range (|x| <= {np.finfo(np.float32).max:.4g})")
        raise DataError(f"{path}: line {k // ncols + 1}, column {k % ncols + 1}: value "
                        f"{tokens[k].strip()!r} {what} ({bad.size} such values in the file)")
    table = values.reshape(len(lines), ncols)
    hit = dominating_value(table)
    if hit is not None:
        row, col, std, mad = hit
        value = tokens[row * ncols + col].strip()
        raise DataError(f"{path}: line {row + 1}, column {col + 1}: value {value!r} dominates "
                        f"its column (std {std:.3g}, over {OUTLIER_RATIO:g} times the column's "
                        f"median deviation {mad:.3g}): normalising would flatten every other "
                        "value of the column to one; a corrupt or sentinel value?")
    if nrows is not None and table.shape[0] != nrows:
        why = ("truncated file?" if table.shape[0] < nrows else
               f"{table.shape[0] - nrows} extra line(s) after line {nrows}: a damaged or "
               "concatenated file?")
        raise DataError(f"{path}: expected {nrows} lines, found {table.shape[0]} ({why})")
    return table


# A column whose standard deviation is over this many times its median absolute deviation is
# a few extreme values and nothing else, as far as z-score normalisation (zoo.training.tasks'
# Normalization) goes: every other value, divided by that std, becomes one float32 constant (a
# 3e38 in a HAR file silently zeroed its channel). Heavy-tailed sensor columns stay below ~100.
OUTLIER_RATIO = 1e6


def dominating_value(table: np.ndarray):
    """``(row, column, std, mad)`` of the most extreme value of the first column of ``table``
    whose std is over `OUTLIER_RATIO` times its median absolute deviation, or None. A column
    whose deviation median is 0 (mostly one value, e.g. a switch) is not judged."""
    median = np.median(table, axis=0)
    deviation = np.abs(table - median)
    mad = np.median(deviation, axis=0)
    std = table.std(axis=0)
    bad = np.flatnonzero((mad > 0) & (std > OUTLIER_RATIO * mad))
    if not bad.size:
        return None
    col = int(bad[0])
    return int(np.argmax(deviation[:, col])), col, float(std[col]), float(mad[col])


def _locate_bad_token(path: Path, tokens: list[str], ncols: int) -> None:
    for k, tok in enumerate(tokens):
        try:
            float(tok)
        except ValueError:
            raise DataError(f"{path}: line {k // ncols + 1}, column {k % ncols + 1}: "
                            f"{tok.strip()!r} is not a number") from None
    raise DataError(f"{path}: could not parse the file as numbers")  # pragma: no cover


def parse_int_column(path: Path, *, data: bytes | None = None,
                     valid: range | None = None) -> np.ndarray:
    """Parse a one-integer-per-line file (HAR ``y_*.txt`` / ``subject_*.txt``) into int64."""
    lines = _lines(path, data)
    if not lines:
        raise DataError(f"{path}: file is empty")
    out = np.empty(len(lines), dtype=np.int64)
    for i, line in enumerate(lines):
        parts = line.split()
        if len(parts) != 1:
            what = "empty line" if not parts else f"found {len(parts)} columns"
            raise DataError(f"{path}: line {i + 1}: expected 1 column, {what}")
        try:
            out[i] = int(parts[0])
        except ValueError:
            raise DataError(f"{path}: line {i + 1}, column 1: {parts[0]!r} is not an integer") from None
        if valid is not None and out[i] not in valid:
            raise DataError(f"{path}: line {i + 1}, column 1: value {out[i]} is outside "
                            f"{valid.start}..{valid.stop - 1}")
    return out
