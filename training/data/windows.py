"""A user's labelled sensor windows, read as they are: an ``.npz`` of windows or a folder of CSV
recordings (the ``windows`` task, `zoo.training.tasks.windows`).

* ``.npz`` (``numpy.savez``): ``X`` (N, T, C) numbers, ``y`` (N,) integer or string labels,
  optionally ``groups`` (N,) integers or strings (the subject or recording of each window) and
  ``channels`` (C,) names. Read with ``allow_pickle=False``: object arrays are refused.
* a folder ``DIR/<class>/<recording>.csv`` (class folders may nest sub-folders, as Keras's
  ``*_dataset_from_directory`` walks them): one recording per file, one row per sample, numeric
  columns, an optional header row (a first row none of whose fields is a number). Each recording
  is cut into windows of ``window`` samples every ``stride`` samples, from its first sample; a
  tail shorter than a window is left out (as ``keras.utils.timeseries_dataset_from_array``).

Every reader only reads: nothing of the user's is changed. Bad input raises `DataError` in one
line naming the file, the key, line, window or column at fault and what is valid.
"""

from __future__ import annotations

import csv
import dataclasses
import logging
import os
import re
import zipfile
from pathlib import Path

import numpy as np

from zoo.training.data.errors import DataError, DataNotFoundError
from zoo.training.data.textio import dominating_value

_log = logging.getLogger(__name__)

NPZ_LAYOUT = ("X (N, T, C) numbers, y (N,) integer or string labels, optional groups (N,) and "
              "channels (C,)")
CSV_LAYOUT = "DIR/<class>/<recording>.csv, one row per sample, numeric columns, optional header"


@dataclasses.dataclass
class Windows:
    """Windows as read: ``x`` float32 (N, T, C); ``labels`` (N,) int64 or str; ``groups`` (N,)
    int64 or str, or None (an ``.npz`` without them); ``channels`` C names; ``source`` the
    file or folder; ``recordings`` (CSV only) the recording of each window."""

    x: np.ndarray
    labels: np.ndarray
    groups: np.ndarray | None
    channels: list[str]
    source: str
    recordings: np.ndarray | None = None


@dataclasses.dataclass(frozen=True)
class CsvOptions:
    """How a folder of CSV recordings becomes windows: ``window`` and ``stride`` in samples,
    ``columns`` (names or 0-based indices, None: all), ``delimiter``, ``group_pattern`` (a regex
    searched in each file's name: its first group, or the whole match, is the window's group;
    None: the recording is the group)."""

    window: int
    stride: int
    columns: tuple | None = None
    delimiter: str = ","
    group_pattern: str | None = None


def read_windows(path, csv_options: CsvOptions) -> Windows:
    """The windows of ``path``: an ``.npz`` file, or a folder of class folders of CSV files."""
    path = Path(path).expanduser()
    if path.is_dir():
        return read_csv_folder(path, csv_options)
    if path.is_file():
        return read_npz(path)
    if not os.path.lexists(path):
        raise DataNotFoundError(f"--data-dir {path}: no such file or folder; expected an .npz "
                                f"of windows ({NPZ_LAYOUT}) or a folder {CSV_LAYOUT}")
    raise DataError(f"--data-dir {path}: neither a file nor a folder")


# ----------------------------------------------------------------------------- .npz


def read_npz(path: Path) -> Windows:
    """``X``, ``y`` and the optional ``groups`` and ``channels`` of the ``.npz`` at ``path``."""
    check_npz_magic(path)
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise DataError(f"{path}: not an .npz archive of numpy arrays ({err}); expected "
                        f"{NPZ_LAYOUT}, as numpy.savez writes it") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise DataError(f"{path}: a single .npy array, not an .npz archive; expected "
                        f"{NPZ_LAYOUT} (numpy.savez(path, X=..., y=...))")
    with archive:
        keys = list(archive.files)
        for key in ("X", "y"):
            if key not in keys:
                raise DataError(f"{path}: no array {key!r} (it holds {', '.join(keys) or 'none'}); "
                                f"expected {NPZ_LAYOUT}")
        ignored = sorted(set(keys) - {"X", "y", "groups", "channels"})
        if ignored:
            _log.warning("%s: arrays %s are not read (the windows task reads X, y, groups, "
                         "channels)", path, ", ".join(ignored))
        arrays = {k: _member(archive, path, k) for k in ("X", "y", "groups", "channels")
                  if k in keys}
    x = _checked_x(path, arrays["X"])
    labels = _checked_ids(path, "y", arrays["y"], len(x), "labels")
    groups = (_checked_ids(path, "groups", arrays["groups"], len(x), "group ids")
              if "groups" in arrays else None)
    channels = _checked_channels(path, arrays.get("channels"), x.shape[2])
    return Windows(x, labels, groups, channels, str(path))


def check_npz_magic(path: Path) -> None:
    """A file named .npz that is no zip archive (text, a pickle, an .npy): one line saying what
    it is, before numpy's reader suggests allow_pickle (loading a pickle runs its code)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror or err})") from None
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return
    if head.startswith(b"\x93NUMPY"):
        raise DataError(f"{path}: a single .npy array, not an .npz archive; expected "
                        f"{NPZ_LAYOUT} (numpy.savez(path, X=..., y=...))")
    kind = "empty" if not head else "text" if _is_text(head) else "binary data of another kind"
    raise DataError(f"{path}: {kind}, not an .npz archive (numpy.savez writes a zip); expected "
                    f"{NPZ_LAYOUT}")


def _is_text(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _member(archive, path: Path, key: str) -> np.ndarray:
    try:
        return archive[key]
    except ValueError as err:  # an object array without allow_pickle
        raise DataError(f"{path}: array {key!r} cannot be read without unpickling ({err}); "
                        "store numbers or strings (e.g. np.asarray(labels, dtype=str))") from None
    except (OSError, zipfile.BadZipFile, EOFError) as err:
        raise DataError(f"{path}: array {key!r} is damaged ({err})") from None


def _checked_x(path: Path, x: np.ndarray) -> np.ndarray:
    if x.ndim != 3:
        hint = " (one channel: X[..., None])" if x.ndim == 2 else ""
        raise DataError(f"{path}: X has shape {x.shape}; expected 3-D (N windows, T steps, "
                        f"C channels){hint}")
    if x.dtype.kind not in "biuf":
        raise DataError(f"{path}: X has dtype {x.dtype}; expected numbers (float or integer)")
    if not all(x.shape):
        raise DataError(f"{path}: X has shape {x.shape}; expected at least one window of at "
                        "least one step and one channel")
    with np.errstate(over="ignore"):
        x32 = x.astype(np.float32)
    bad = np.argwhere(~np.isfinite(x32))
    if len(bad):
        n, t, c = (int(v) for v in bad[0])
        what = ("is outside float32's range" if np.isfinite(x[n, t, c]) else
                f"is {x[n, t, c]}")
        raise DataError(f"{path}: X[{n}, {t}, {c}] (window {n}, step {t}, channel {c}) {what} "
                        f"({len(bad)} such values in X); every value must be a finite float32")
    _check_dominating(path, x32.reshape(-1, x32.shape[2]),
                      lambda row, col: f"X window {row // x.shape[1]}, step "
                                       f"{row % x.shape[1]}, channel {col}")
    return x32


def _checked_ids(path: Path, key: str, values: np.ndarray, n: int, what: str) -> np.ndarray:
    """``values`` as int64 or str labels / group ids, one per window."""
    if values.ndim != 1:
        hint = " (one-hot labels? y.argmax(axis=1))" if key == "y" and values.ndim == 2 else ""
        raise DataError(f"{path}: {key} has shape {values.shape}; expected ({n},), one of "
                        f"{what} per window{hint}")
    if len(values) != n:
        raise DataError(f"{path}: X has {n} windows but {key} has {len(values)} {what}; they "
                        "must be the same length")
    if values.dtype.kind in "US":
        return values.astype(str)
    if values.dtype.kind == "u" and len(values) and int(values.max()) > np.iinfo(np.int64).max:
        return values.astype(str)  # as int64 they would wrap to negative numbers: kept as text
    if values.dtype.kind in "biu":
        return values.astype(np.int64)
    if values.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(values) | (values != np.round(values)))
        if not len(bad):
            return values.astype(np.int64)
        raise DataError(f"{path}: {key}[{int(bad[0])}] is {values[bad[0]]}; expected integer or "
                        f"string {what} ({len(bad)} such values)")
    raise DataError(f"{path}: {key} has dtype {values.dtype}; expected integer or string {what}")


def _checked_channels(path: Path, channels, count: int) -> list[str]:
    if channels is None:
        return [f"channel_{i}" for i in range(count)]
    names = [str(c) for c in np.asarray(channels).reshape(-1)]
    if np.asarray(channels).ndim != 1 or len(names) != count:
        raise DataError(f"{path}: channels has shape {np.asarray(channels).shape}; expected "
                        f"({count},), one name per channel of X")
    return names


def _check_dominating(path, table: np.ndarray, where) -> None:
    """A sentinel value (say 3e38 for 'missing') that dominates its channel would flatten the
    rest of it to one value after the z-score normalisation: refused, named."""
    hit = dominating_value(table)
    if hit is not None:
        row, col, std, mad = hit
        raise DataError(f"{path}: {where(row, col)}: value {table[row, col]:.6g} dominates its "
                        f"channel (std {std:.3g}, over a million times the channel's median "
                        f"deviation {mad:.3g}); a corrupt or sentinel value?")


# ----------------------------------------------------------------------------- CSV recordings


def list_recordings(folder: Path) -> dict[str, list[Path]]:
    """``{class name: [csv files]}`` of ``folder``, classes and files sorted (hidden entries,
    e.g. ``.ipynb_checkpoints``, skipped)."""
    if not folder.is_dir():
        raise DataError(f"{folder}: not a folder; expected {CSV_LAYOUT}")
    stray = sorted(p.name for p in folder.iterdir() if p.is_file() and _is_csv(p))
    if stray:
        raise DataError(f"{folder / stray[0]}: a recording must be in its class's folder "
                        f"({folder}/<class>/{stray[0]}); expected {CSV_LAYOUT}")
    classes = {}
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        files = sorted(p for p in sub.rglob("*") if p.is_file() and _is_csv(p)
                       and not any(part.startswith(".") for part in p.relative_to(sub).parts))
        if not files:
            raise DataError(f"{sub}: class folder {sub.name!r} holds no .csv recording; "
                            f"expected {CSV_LAYOUT}")
        classes[sub.name] = files
    if not classes:
        raise DataError(f"{folder}: no class folder of CSV recordings found; expected "
                        f"{CSV_LAYOUT}, or an .npz file of windows")
    return classes


def _is_csv(path: Path) -> bool:
    return path.suffix.lower() == ".csv"


def read_csv_folder(folder: Path, options: CsvOptions) -> Windows:
    """The windows of every recording of ``folder``, class by class, file by file."""
    pattern = re.compile(options.group_pattern) if options.group_pattern else None
    xs, labels, groups, recordings, unmatched = [], [], [], [], []
    header = first = first_values = None
    for label, files in list_recordings(folder).items():
        for path in files:
            values, names = read_recording(path, options.delimiter)
            if first is None:
                header, first, first_values = names, path, values
            elif names != header:
                raise DataError(f"{path}: columns {_columns(names, values)} differ from "
                                f"{first}'s {_columns(header, first_values)}; every recording "
                                "needs the same columns")
            values, channels = select_columns(path, values, names, options.columns)
            windows = cut_windows(values, options.window, options.stride)
            if not len(windows):
                raise DataError(f"{path}: {len(values)} rows, shorter than one window of "
                                f"{options.window} samples (option window); cut the window "
                                "or leave the file out")
            recording = path.relative_to(folder).with_suffix("").as_posix()
            group = _group_of(path, recording, pattern, unmatched)
            xs.append(windows)
            labels += [label] * len(windows)
            groups += [group] * len(windows)
            recordings += [recording] * len(windows)
    if unmatched:
        _log.warning("%d recording(s) of %s do not match group_pattern %r (e.g. %s): each is "
                     "its own group", len(unmatched), folder, options.group_pattern, unmatched[0])
    return Windows(np.concatenate(xs), np.array(labels, dtype=str), np.array(groups, dtype=str),
                   channels, str(folder), np.array(recordings, dtype=str))


def _columns(names: list[str] | None, values: np.ndarray) -> str:
    return str(names) if names else f"({values.shape[1]} without a header)"


def _group_of(path: Path, recording: str, pattern, unmatched: list) -> str:
    if pattern is None:
        return recording
    match = pattern.search(path.name)
    if match is None:
        unmatched.append(path.name)
        return recording
    return match.group(1) if pattern.groups else match.group(0)


def cut_windows(values: np.ndarray, window: int, stride: int) -> np.ndarray:
    """``values`` (L, C) as windows (n, window, C) starting at 0, stride, 2 stride, ... while a
    whole window fits: ``n = (L - window) // stride + 1`` (0 when L < window)."""
    if len(values) < window:
        return np.empty((0, window, values.shape[1]), dtype=np.float32)
    view = np.lib.stride_tricks.sliding_window_view(values, window, axis=0)[::stride]
    return np.ascontiguousarray(view.transpose(0, 2, 1), dtype=np.float32)


def select_columns(path: Path, values: np.ndarray, header: list[str] | None, columns):
    """The columns the task reads (``columns``: names of the header or 0-based indices; None:
    all) and their names."""
    names = header or [f"column_{i}" for i in range(values.shape[1])]
    if columns is None:
        return values, names
    index = []
    for c in columns:
        if isinstance(c, str) and c in names:
            index.append(names.index(c))
        elif isinstance(c, int) and not isinstance(c, bool) and 0 <= c < len(names):
            index.append(c)
        else:
            raise DataError(f"{path}: option columns: {c!r} is not one of its columns (names "
                            f"{', '.join(names)}, or indices 0..{len(names) - 1})")
    return values[:, index], [names[i] for i in index]


def read_recording(path: Path, delimiter: str = ",") -> tuple[np.ndarray, list[str] | None]:
    """One CSV recording: ``(values float64 (rows, columns), header names or None)``. Every
    row must hold the same number of finite numbers; an empty line is allowed only at the end."""
    rows = _csv_rows(path, delimiter)
    header = None
    if rows and not any(_is_number(f) for f in rows[0][1]):
        header = [f.strip() for f in rows[0][1]]
        rows = rows[1:]
    if not rows:
        raise DataError(f"{path}: no data row{' after the header' if header else ''}; "
                        f"expected {CSV_LAYOUT}")
    width = len(header) if header else len(rows[0][1])
    tokens = []
    for line, fields in rows:
        if len(fields) != width:
            raise DataError(f"{path}: line {line}: {len(fields)} values, expected {width} (as "
                            f"{'the header' if header else f'line {rows[0][0]}'}); every row "
                            "needs one value per column")
        tokens.extend(fields)
    try:
        values = np.array(tokens, dtype=np.float64).reshape(len(rows), width)
    except ValueError:
        k = next(i for i, t in enumerate(tokens) if not _is_number(t))
        raise DataError(f"{path}: line {rows[k // width][0]}, column {k % width + 1}: "
                        f"{tokens[k].strip()!r} is not a number") from None
    with np.errstate(over="ignore"):
        bad = np.argwhere(~np.isfinite(values.astype(np.float32)))
    if len(bad):
        r, c = (int(v) for v in bad[0])
        raise DataError(f"{path}: line {rows[r][0]}, column {c + 1}: value "
                        f"{tokens[r * width + c].strip()!r} is not a finite float32 ({len(bad)} "
                        "such values in the file)")
    _check_dominating(path, values, lambda r, c: f"line {rows[r][0]}, column {c + 1}")
    return values, header


def _csv_rows(path: Path, delimiter: str) -> list[tuple[int, list[str]]]:
    """``(line number, fields)`` of each row; an empty line before the last row is refused."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raw = path.read_bytes()
        line = raw[:err.start].count(b"\n") + 1
        raise DataError(f"{path}: line {line}: byte 0x{raw[err.start]:02x} is not UTF-8 text; "
                        f"expected a CSV file ({CSV_LAYOUT})") from None
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror})") from None
    rows, blank = [], None
    for number, fields in enumerate(csv.reader(text.splitlines(), delimiter=delimiter), 1):
        if not any(f.strip() for f in fields):
            blank = blank or number
            continue
        if blank is not None:
            raise DataError(f"{path}: line {blank} is empty, before more rows; a recording is "
                            "one row per sample without gaps")
        rows.append((number, fields))
    return rows


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True
