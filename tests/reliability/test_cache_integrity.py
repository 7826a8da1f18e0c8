"""The featurised-data cache rebuilds an entry that does not read back as written, with a
warning naming it (issue 23, item 8): a truncated ``$ZOO_CACHE_DIR/uci_har/<key>.npz`` used to
raise ``BadZipFile`` on every later command, and a valid ``.npz`` with other arrays
``KeyError: 'subject_train'``."""

import logging
import shutil

import numpy as np
import pytest

from zoo.training.data import cache
from zoo.training.tasks.har import load_har_arrays


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("ZOO_CACHE_DIR", str(folder))
    return folder


def _compute(calls):
    def compute():
        calls.append(1)
        return {"x": np.arange(12, dtype=np.float32).reshape(3, 4), "y": np.array([1, 2, 3])}
    return compute


def _rebuilt(key, calls, caplog, path):
    with caplog.at_level(logging.WARNING, logger="zoo.training.data.cache"):
        arrays, hit = cache.cached_arrays("group", key, _compute(calls))
    assert not hit and len(calls) == 2
    np.testing.assert_array_equal(arrays["y"], [1, 2, 3])
    assert any(str(path) in r.getMessage() and "rebuilding" in r.getMessage()
               for r in caplog.records), caplog.text
    # The rebuilt entry is whole again: the next read is a hit.
    assert cache.cached_arrays("group", key, _compute(calls))[1] and len(calls) == 2


def test_truncated_uci_har_entry_is_rebuilt(own_cache, shared_data, caplog):
    folder = shared_data / "har" / "UCI HAR Dataset"
    first, _, hit = load_har_arrays(folder)
    assert not hit
    (entry,) = (own_cache / "uci_har").glob("*.npz")
    entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])
    with caplog.at_level(logging.WARNING, logger="zoo.training.data.cache"):
        again, _, hit = load_har_arrays(folder)
    assert not hit and str(entry) in caplog.text and "rebuilding" in caplog.text
    np.testing.assert_array_equal(again["x_train"], first["x_train"])
    assert load_har_arrays(folder)[2]


def test_valid_npz_with_other_arrays_is_rebuilt(own_cache, caplog):
    calls, key = [], cache.cache_key(test="other arrays")
    cache.cached_arrays("group", key, _compute(calls))
    path = cache.cache_path("group", key)
    np.savez(path, x=np.zeros(3))  # a valid .npz, not this entry
    _rebuilt(key, calls, caplog, path)


def test_another_entry_copied_over_is_rebuilt(own_cache, caplog):
    calls, key, other = [], cache.cache_key(test="a"), cache.cache_key(test="b")
    cache.cached_arrays("group", key, _compute(calls))
    cache.cached_arrays("group", other, lambda: {"x": np.ones(2), "y": np.array([9])})
    shutil.copy(cache.cache_path("group", other), cache.cache_path("group", key))
    _rebuilt(key, calls, caplog, cache.cache_path("group", key))


def test_changed_bytes_are_rebuilt(own_cache, caplog):
    calls, key = [], cache.cache_key(test="bytes")
    cache.cached_arrays("group", key, _compute(calls))
    path = cache.cache_path("group", key)
    data = bytearray(path.read_bytes())
    at = bytes(data).find(np.arange(12, dtype=np.float32).tobytes())
    assert at > 0
    data[at + 20] ^= 0xFF  # inside x's values: the shapes still agree, only the CRC can tell
    path.write_bytes(bytes(data))
    _rebuilt(key, calls, caplog, path)
