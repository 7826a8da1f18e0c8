"""The featurised-array cache: keyed by the sources and the settings; a hit skips parsing."""

import os
import time

import numpy as np

from zoo.training.tasks import get_task
import zoo.training.tasks.har as har_module
import zoo.training.tasks.speech as speech_module


def test_cache_hit_is_much_faster_and_skips_parsing(shared_data, fresh_cache, monkeypatch):
    folder = shared_data / "har/UCI HAR Dataset"
    task = get_task("har6", val_fraction=0)
    t0 = time.perf_counter()
    miss = task.load(folder)
    t_miss = time.perf_counter() - t0
    assert miss.info["cache_hit"] is False and any(fresh_cache.rglob("*.npz"))

    def no_parsing(*a, **k):
        raise AssertionError("a cache hit must not parse the text files")

    monkeypatch.setattr(har_module, "parse_table", no_parsing)
    t0 = time.perf_counter()
    hit = task.load(folder)
    t_hit = time.perf_counter() - t0
    assert hit.info["cache_hit"] is True
    np.testing.assert_array_equal(hit.train.x, miss.train.x)
    np.testing.assert_array_equal(hit.test.y, miss.test.y)
    assert t_hit < t_miss / 3, (t_hit, t_miss)


def test_cache_key_follows_sources_and_settings(mini_speech, fresh_cache):
    a = get_task("google30").load(mini_speech)
    assert not a.info["cache_hit"]
    assert get_task("google30").load(mini_speech).info["cache_hit"]
    # Other featurisation settings: another entry.
    assert not get_task("google30", nfilt=20).load(mini_speech).info["cache_hit"]
    # A touched source file (new mtime): rebuilt.
    rel = a.info["files"]["train"][0]
    st = os.stat(mini_speech / rel)
    os.utime(mini_speech / rel, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert not get_task("google30").load(mini_speech).info["cache_hit"]


def test_damaged_cache_entry_is_rebuilt(mini_har, fresh_cache):
    task = get_task("har2", val_fraction=0)
    first = task.load(mini_har)
    (entry,) = fresh_cache.rglob("*.npz")
    entry.write_bytes(b"not an npz")
    again = task.load(mini_har)
    assert not again.info["cache_hit"]
    np.testing.assert_array_equal(again.train.x, first.train.x)


def test_archive_cache_hit_needs_no_extraction(mini_har, tmp_path, fresh_cache, monkeypatch):
    import zipfile

    z = tmp_path / "UCI HAR Dataset.zip"
    with zipfile.ZipFile(z, "w") as f:
        for p in mini_har.rglob("*"):
            f.write(p, "UCI HAR Dataset/" + p.relative_to(mini_har).as_posix())
    get_task("har6").load(z)

    def no_extract(*a, **k):
        raise AssertionError("extracted again")

    monkeypatch.setattr("zoo.training.data.sources.extract", no_extract)
    assert get_task("har6").load(z).info["cache_hit"]
    assert speech_module  # imported for symmetry with the speech cache tests


def test_tests_never_touch_the_home_cache():
    from pathlib import Path

    from zoo.training.data.paths import cache_root, data_root

    home = Path.home() / ".cache" / "edge-rnn-zoo"
    assert home not in cache_root().parents and home not in data_root().parents


def test_a_second_extraction_never_removes_the_one_in_use(mini_har, tmp_path, fresh_cache,
                                                          monkeypatch):
    """Two processes extracting one archive at once (parallel exports do): the one that finishes
    second must keep the first one's folder, which the first is reading, not delete it."""
    import threading
    import zipfile

    from zoo.training.data import sources
    from zoo.training.tasks.har import SPEC

    archive = tmp_path / "har.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in mini_har.rglob("*"):
            z.write(f, f.relative_to(mini_har.parent))
    slow_may_finish = threading.Event()
    real_extract = sources._extract_one

    def extract_one(src, dest):
        real_extract(src, dest)
        if threading.current_thread().name == "slow":
            slow_may_finish.wait(60)

    monkeypatch.setattr(sources, "_extract_one", extract_one)
    # Threads stand in for processes: give each its own temporary folder, as its pid would.
    monkeypatch.setattr(sources.os, "getpid", threading.get_ident)
    slow = threading.Thread(target=sources.extract, args=(archive, SPEC), name="slow")
    slow.start()
    time.sleep(0.5)  # the slow one has started its own extraction
    folder = sources.extract(archive, SPEC)
    in_use = folder / "being_read.txt"
    in_use.write_text("a reader holds this folder")
    slow_may_finish.set()
    slow.join(60)
    assert in_use.exists(), "the second extraction deleted the folder the first is reading"
    assert not list((sources.cache_root() / "extracted").glob("*.tmp*"))  # the loser's is gone
