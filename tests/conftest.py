"""Shared fixtures. Tests use the real data subsets in ``../shared/data`` (never a download)."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _shared_data() -> Path:
    env = os.environ.get("ZOO_SHARED_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder with the HAR, DSA-19 and Speech Commands subsets (see its README)."""
    path = _shared_data()
    if not path.is_dir():
        pytest.fail(f"shared test data not found at {path}; set ZOO_SHARED_DATA to the shared/data folder")
    return path
