"""On-disk cache of featurised arrays, keyed by a hash of the sources and the settings.

Parsing 9 HAR text files or featurising 65k wavs takes from seconds to minutes; loading an
``.npz`` takes milliseconds. Entries are written atomically (temp file + rename), so an
interrupted run never leaves a half-written entry that a later run would trust.

Integrity: each entry carries a manifest (array names, dtypes, shapes) and the zip's CRC-32 of
every member is checked when it is read; the manifest also holds the entry's key, so another
entry copied over it is not taken for it. An entry that does not read back as its manifest says
(truncated, bytes changed, another ``.npz`` copied over it, written by an older zoo) is rebuilt
from the sources, with a warning naming it, instead of failing every later command.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import zipfile
import zlib
from pathlib import Path
from typing import Callable

import numpy as np

from zoo.training.data.paths import cache_root

FORMAT = 1  # bump when the layout of cached arrays changes
MANIFEST = "__zoo_manifest__"  # JSON {"key": key, "arrays": {name: [dtype, shape]}}
_log = logging.getLogger(__name__)


class DamagedEntry(Exception):
    """A cache entry that does not read back as written; the message says how."""


def cache_key(**parts) -> str:
    """A stable hash of JSON-serialisable ``parts`` (source fingerprint, settings, version)."""
    blob = json.dumps({"format": FORMAT, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def cache_path(group: str, key: str) -> Path:
    return cache_root() / group / f"{key[:32]}.npz"


def cached_arrays(group: str, key: str, compute: Callable[[], dict[str, np.ndarray]]
                  ) -> tuple[dict[str, np.ndarray], bool]:
    """Return ``(arrays, hit)``: the cached arrays for ``key``, or ``compute()`` stored under it."""
    path = cache_path(group, key)
    if path.exists():
        try:
            return read_entry(path, key), True
        except DamagedEntry as err:  # rebuilt below (and replaced atomically), never trusted
            _log.warning("cache entry %s is damaged (%s); rebuilding it from the sources",
                         path, err)
    arrays = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.stem}.tmp{os.getpid()}.npz")
    try:
        manifest = {"key": key, "arrays": _manifest(arrays)}
        np.savez(tmp, **arrays, **{MANIFEST: np.array(json.dumps(manifest))})
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return arrays, False


def _manifest(arrays: dict[str, np.ndarray]) -> dict[str, list]:
    return {k: [np.asarray(v).dtype.str, list(np.shape(v))] for k, v in arrays.items()}


def read_entry(path: Path, key: str) -> dict[str, np.ndarray]:
    """The arrays of the entry for ``key`` at ``path``, each read in full (so the zip checks
    its CRC-32) and checked against the entry's manifest. Raises `DamagedEntry` saying what is
    wrong."""
    try:
        with np.load(path, allow_pickle=False) as z:
            if MANIFEST not in z.files:
                raise DamagedEntry("no manifest: written by an older zoo, or not by the zoo")
            record = json.loads(str(z[MANIFEST]))
            if not isinstance(record, dict) or record.get("key") != key:
                raise DamagedEntry("its manifest is for another entry")
            manifest, names = record.get("arrays"), sorted(set(z.files) - {MANIFEST})
            if not isinstance(manifest, dict) or sorted(manifest) != names:
                raise DamagedEntry(f"holds arrays {names}, its manifest lists {manifest}")
            arrays = {k: z[k] for k in names}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as err:
        raise DamagedEntry(f"{type(err).__name__}: {err}") from None
    found = _manifest(arrays)
    bad = [k for k in names if found[k] != list(manifest[k])]
    if bad:
        raise DamagedEntry(f"array {bad[0]} is {found[bad[0]]}, its manifest says "
                           f"{manifest[bad[0]]}")
    return arrays
