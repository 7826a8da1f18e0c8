"""Data folders that would silently shrink a split or reuse a stale cache are refused or told
apart (issue 14): a DSA-19 folder with a whole subject or activity missing, an over-long segment
file, two copies of a dataset with equal relative paths / sizes / mtimes, and archive members
with absolute paths or links (one rule for zip and tar)."""

import io
import os
import shutil
import tarfile
import zipfile

import numpy as np
import pytest

from zoo.training.data.errors import DataError
from zoo.training.data.sources import extract
from zoo.training.tasks import get_task
from zoo.training.tasks.dsa import SPEC


@pytest.fixture
def mini_dsa(shared_data, tmp_path):
    """One segment per activity and subject of the shared DSA-19 subset (152 files)."""
    src, dst = shared_data / "dsa19" / "data", tmp_path / "dsa" / "data"
    for activity in sorted(src.iterdir()):
        for subject in sorted(activity.iterdir()):
            first = sorted(subject.glob("*.txt"))[0]
            (dst / activity.name / subject.name).mkdir(parents=True)
            shutil.copy2(first, dst / activity.name / subject.name / first.name)
    return dst


def test_the_complete_layout_with_few_segments_is_accepted(mini_dsa):
    data = get_task("dsa19").load(mini_dsa)
    assert (len(data.train), len(data.val), len(data.test)) == (3 * 19, 19, 4 * 19)


def test_missing_subject_folder_is_refused_by_name_unless_partial(mini_dsa):
    for activity in mini_dsa.iterdir():
        shutil.rmtree(activity / "p4")
    with pytest.raises(DataError, match=r"incomplete.*subject folder\(s\) p4.*allow_partial"):
        get_task("dsa19").load(mini_dsa)
    data = get_task("dsa19", allow_partial=True).load(mini_dsa)
    assert len(data.test) == 4 * 19  # the test subjects p5-p8 are all there


def test_missing_activity_folder_is_refused_by_name(mini_dsa):
    shutil.rmtree(mini_dsa / "a07")
    with pytest.raises(DataError, match=r"activity folder\(s\) a07"):
        get_task("dsa19").load(mini_dsa)


def test_a_126_line_segment_is_not_called_truncated(mini_dsa):
    path = next(mini_dsa.glob("a03/p2/*.txt"))
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines + lines[-1:]) + "\n")
    with pytest.raises(DataError) as exc:
        get_task("dsa19").load(mini_dsa)
    assert "found 126" in str(exc.value) and "1 extra line(s)" in str(exc.value)
    assert "truncated" not in str(exc.value) and str(path) in str(exc.value)


def test_a_second_copy_with_equal_paths_sizes_and_mtimes_gets_its_own_cache(mini_dsa, tmp_path):
    copy = tmp_path / "copy" / "data"
    shutil.copytree(mini_dsa, copy, copy_function=shutil.copy2)
    path = next(copy.glob("a01/p5/*.txt"))
    st = path.stat()
    text = path.read_text()
    swapped = text.replace("1", "#").replace("2", "1").replace("#", "2")  # same size
    assert swapped != text and len(swapped) == len(text)
    path.write_text(swapped)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime
    first = get_task("dsa19").load(mini_dsa)
    second = get_task("dsa19").load(copy)
    assert second.info["cache_hit"] is False
    assert not np.array_equal(first.test.x, second.test.x)


def _tar(path, name, *, link=None):
    with tarfile.open(path, "w:gz") as tf:
        info = tarfile.TarInfo(name)
        if link:
            info.type, info.linkname = tarfile.SYMTYPE, link
            tf.addfile(info)
        else:
            info.size = 2
            tf.addfile(info, io.BytesIO(b"hi"))
    return path


def test_absolute_member_paths_are_refused_in_tar_and_zip_alike(tmp_path):
    tar = _tar(tmp_path / "a.tar.gz", "/abs/a01/x.txt")
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as zf:
        zf.writestr("/abs/a01/x.txt", "hi")
    for archive in (tar, tmp_path / "a.zip"):
        with pytest.raises(DataError, match="unsafe member path '/abs/a01/x.txt'"):
            extract(archive, SPEC)


def test_a_link_out_of_the_archive_is_an_unsafe_member_not_a_corrupt_archive(tmp_path):
    tar = _tar(tmp_path / "l.tar.gz", "a01/link", link="/etc/passwd")
    with pytest.raises(DataError) as exc:
        extract(tar, SPEC)
    assert "unsafe member refused" in str(exc.value) and "corrupt" not in str(exc.value)
