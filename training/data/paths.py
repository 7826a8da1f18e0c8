"""Where data and caches live. Environment variables let CI and tests redirect both away from
the user's home."""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "ZOO_DATA_DIR"
CACHE_ENV = "ZOO_CACHE_DIR"
OFFLINE_ENV = "ZOO_OFFLINE"  # "1": never try to download (a clear error instead)


def data_root(data_dir: str | os.PathLike | None = None) -> Path:
    """``data_dir`` if given, else ``$ZOO_DATA_DIR``, else ``~/.cache/edge-rnn-zoo/data``."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    env = os.environ.get(DATA_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "edge-rnn-zoo" / "data"


def cache_root() -> Path:
    """``$ZOO_CACHE_DIR`` or ``~/.cache/edge-rnn-zoo/cache`` (featurised arrays, extracted archives)."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "edge-rnn-zoo" / "cache"


def offline() -> bool:
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in ("1", "true", "yes")
