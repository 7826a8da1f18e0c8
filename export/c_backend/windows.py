"""The window files ``zoo_app`` reads: what the numbers are is written in the file, not guessed.

A file is a 16-byte header, then N windows of T x F values (time-major, little-endian):

    bytes 0-3    b"ZOOW"
    bytes 4-7    the kind of value:
                   b"RAW "  float32 raw features, as the sensor gives them (zoo_app normalizes
                            them with the export's normalization.json and quantizes: zoo_push)
                   b"NORM"  float32 features already normalized ((raw - mean) / std: an
                            export's testset.npz); zoo_app only quantizes them
                   b"INT8"  int8, the step model's input as it is (zoo_push_q)
    bytes 8-11   T, uint32 little-endian (the model's timesteps)
    bytes 12-15  F, uint32 little-endian (features per step)

``zoo_app`` refuses a file without the header, one whose T x F is not the model's, and a float
window holding NaN or infinity (naming the window). Without the kind in the file, normalized
windows read as raw ones are normalized twice: an export's test set gave 87.16 % instead of
98.15 % with no warning (issue 43).

    python -m zoo.export.c_backend.windows EXPORT_DIR --out test.zoow           # its testset.npz
    python -m zoo.export.c_backend.windows EXPORT_DIR --out raw.zoow --kind raw # x * std + mean
    python -m zoo.export.c_backend.windows C_DIR --data-dir DATA --out t.zoow   # a shipped tag
    python -m zoo.export.c_backend.windows EXPORT_DIR --data-dir my_test.npz --kind raw --out t.zoow
                                                       # your own test windows, as zoo eval reads them
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

import numpy as np

from zoo.export.c_backend.project import CExportError, read_normalization, read_step_export
from zoo.export.card_schema import TESTSET_FILE, ExportFolderError
from zoo.export.exportdir import load_testset
from zoo.core.flags import int_in
from zoo.core.storage import write_bytes_atomic

MAGIC = b"ZOOW"
HEADER_BYTES = 16
KINDS = {"raw": (b"RAW ", "<f4"), "normalized": (b"NORM", "<f4"), "int8": (b"INT8", "i1")}


def encode_windows(x: np.ndarray, kind: str) -> bytes:
    """The bytes of a window file: the header, then ``x`` (N, T, F).

    Args:
        x: the windows; float for ``raw`` / ``normalized`` (every value finite), integers in
            -128..127 for ``int8``.
        kind: ``"raw"``, ``"normalized"`` or ``"int8"``.

    Returns:
        The header and the values, little-endian.

    Raises:
        CExportError: a kind not in `KINDS`, ``x`` not 3-D or empty, a NaN or infinite float,
            an int8 value out of range.
    """
    if kind not in KINDS:
        raise CExportError(f"window kind {kind!r}; valid: {', '.join(KINDS)}")
    x = np.asarray(x)
    if x.ndim != 3 or x.shape[0] == 0:
        raise CExportError(f"windows of shape {x.shape}; expected (N, T, F) with N >= 1")
    mark, dtype = KINDS[kind]
    if kind == "int8":
        if x.dtype.kind not in "iu" or x.min() < -128 or x.max() > 127:
            raise CExportError(f"int8 windows must hold integers in -128..127 (got {x.dtype}, "
                               f"{x.min()}..{x.max()})")
    elif not np.all(np.isfinite(x)):
        n, t, f = np.argwhere(~np.isfinite(x))[0]
        raise CExportError(f"window {n}, step {t}, feature {f} is {x[n, t, f]}; windows must be "
                           "finite")
    header = MAGIC + mark + struct.pack("<II", x.shape[1], x.shape[2])
    return header + np.ascontiguousarray(x, dtype=dtype).tobytes()


def write_windows(path: Path, x: np.ndarray, kind: str) -> Path:
    """Write ``x`` (N, T, F) as a window file of ``kind`` (`encode_windows`) at ``path``, a
    file that does not exist yet (an existing one is never replaced).

    Example:

    ```python
    x, _ = load_testset(export_dir, card)          # normalized, as every export's testset.npz
    write_windows(Path("test.zoow"), x, "normalized")
    # ./zoo_app test.zoow  -> one line of int8 logits per window
    ```
    """
    path = Path(path)
    data = encode_windows(x, kind)
    if path.exists():
        raise CExportError(f"{path} already exists; give a new file name")
    write_bytes_atomic(path, data)
    return path


def testset_windows(export_dir: Path, kind: str, data_dir: Path | None = None) -> np.ndarray:
    """An export's test windows as ``kind``: its ``testset.npz`` (normalized), or for a shipped
    tag's export (which has none) the task's test windows from the data on disk (``data_dir``,
    or where the zoo looks; nothing is downloaded), normalized with its normalization.json.
    ``normalized`` returns them as they are, ``raw`` as ``x * std + mean`` in float32."""
    from zoo.export.c_backend.shipped import test_windows

    export_dir = Path(export_dir)
    card = read_step_export(export_dir)
    norm = read_normalization(export_dir, card)
    if data_dir is not None and (export_dir / TESTSET_FILE).is_file():
        return _data_windows(export_dir, card, norm, kind, data_dir)
    try:
        x, _ = load_testset(str(export_dir), card)
    except ExportFolderError as err:  # damaged, misshapen or non-finite
        raise CExportError(str(err)) from None
    if x is None:
        x, _, why = test_windows(card, norm if norm is not None else (0.0, 1.0), data_dir)
        if x is None:
            raise CExportError(f"{export_dir}: no testset.npz, and {why}")
    x = x.astype(np.float32)
    if kind == "raw" and norm is not None:
        return (x * norm[1] + norm[0]).astype(np.float32)
    return x


def _data_windows(export_dir: Path, card, norm, kind: str, data_dir) -> np.ndarray:
    """The windows ``zoo eval EXPORT --data-dir DATA`` scores (your own test data, read as the
    export's task reads it), as ``kind``: the same windows, so zoo_app's lines and zoo eval's
    accuracy can be compared window for window."""
    from zoo.export.evaluate_export import raw_windows

    try:
        x, _, _ = raw_windows(export_dir, card, data_dir, need_labels=False)  # labels unused
    except (ValueError, OSError) as err:  # DataError and CalibrationError are ValueErrors
        raise CExportError(str(err)) from None
    x = np.asarray(x, np.float32)
    if kind == "normalized" and norm is not None:
        return ((x - norm[0]) / norm[1]).astype(np.float32)
    return x


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="write an export's test windows as a zoo_app "
                                                 "window file", allow_abbrev=False)
    parser.add_argument("export", type=Path, help="an int8 step or C export (its testset.npz)")
    parser.add_argument("--out", type=Path, required=True, help="the window file (a new file)")
    parser.add_argument("--kind", choices=("normalized", "raw"), default="normalized",
                        help="normalized (as the test set is) or raw (x * std + mean)")
    parser.add_argument("--limit", type=int_in(1), help="the first N windows only")
    parser.add_argument("--data-dir", type=Path, help="the windows zoo eval EXPORT --data-dir "
                        "scores (your own test data: an .npz or CSV folder of the windows task); "
                        "for a shipped tag's export (no testset.npz), the task's data, for its "
                        "test windows")
    args = parser.parse_args(argv)
    try:
        x = testset_windows(args.export, args.kind, args.data_dir)[:args.limit]
        write_windows(args.out, x, args.kind)
    except CExportError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {len(x)} {args.kind} windows of {x.shape[1]} x {x.shape[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
