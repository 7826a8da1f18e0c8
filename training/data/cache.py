"""On-disk cache of featurised arrays, keyed by a hash of the sources and the settings.

Parsing 9 HAR text files or featurising 65k wavs takes from seconds to minutes; loading an
``.npz`` takes milliseconds. Entries are written atomically (temp file + rename), so an
interrupted run never leaves a half-written entry that a later run would trust.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Callable

import numpy as np

from training.data.paths import cache_root

FORMAT = 1  # bump when the layout of cached arrays changes


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
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}, True
        except (OSError, ValueError, EOFError):  # a damaged entry is rebuilt, not trusted
            path.unlink(missing_ok=True)
    arrays = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.stem}.tmp{os.getpid()}.npz")
    try:
        np.savez(tmp, **arrays)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return arrays, False
