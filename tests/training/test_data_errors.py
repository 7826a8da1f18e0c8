"""Bad input gets a clear error naming the file and the line, column or shape at fault.

Every case is built in a temporary folder from the shared data (small copies, see conftest).
"""

import re
import io
import shutil
import tarfile
import wave
import zipfile
from pathlib import Path

import numpy as np
import pytest

from zoo.training.data import download as dl
from zoo.training.data.errors import DataError, DataNotFoundError
from zoo.training.data.textio import parse_table
from zoo.training.tasks import get_task

SIG = "train/Inertial Signals/body_acc_x_train.txt"


def _edit_line(path: Path, lineno: int, fn) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[lineno - 1] = fn(lines[lineno - 1])
    path.write_bytes(b"\n".join(lines))


def _load_har(folder):
    return get_task("har6", val_fraction=0).load(folder)


def test_mini_har_loads(mini_har):
    d = _load_har(mini_har)
    assert d.train.x.shape == (20, 128, 9) and d.test.x.shape == (20, 128, 9)


def test_wrong_number_of_columns(mini_har):
    _edit_line(mini_har / SIG, 7, lambda l: l.rsplit(b" ", 1)[0])  # drop the last value
    with pytest.raises(DataError) as e:
        _load_har(mini_har)
    msg = str(e.value)
    assert str(mini_har / SIG) in msg and "line 7" in msg and "expected 128 columns, found 127" in msg


def test_truncated_text(mini_har):
    path = mini_har / SIG
    raw = path.read_bytes()
    path.write_bytes(raw[: 10 * 2049 + 100])  # 10 whole lines (2,049 bytes each), then a stub
    with pytest.raises(DataError, match=r"line 11: expected 128 columns, found 7 columns") as e:
        _load_har(mini_har)
    assert str(path) in str(e.value)


def test_corrupt_number(mini_har):
    _edit_line(mini_har / SIG, 3, lambda l: l.replace(b"e-00", b"x-00", 1))
    with pytest.raises(DataError, match=r"line 3, column \d+: .* is not a number") as e:
        _load_har(mini_har)
    assert str(mini_har / SIG) in str(e.value)


def test_nan_names_file_line_and_column(mini_har):
    def put_nan(line):
        parts = line.split()
        parts[4] = b"NaN"
        return b" ".join(parts)

    _edit_line(mini_har / SIG, 5, put_nan)
    with pytest.raises(DataError, match=r"line 5, column 5: value 'NaN' is not finite") as e:
        _load_har(mini_har)
    assert str(mini_har / SIG) in str(e.value)


def test_blank_line_is_not_skipped(mini_har):
    _edit_line(mini_har / SIG, 4, lambda l: b"")
    with pytest.raises(DataError, match="line 4: expected 128 columns, empty line"):
        _load_har(mini_har)


def test_labels_and_signals_of_different_lengths(mini_har):
    y = mini_har / "train/y_train.txt"
    s = mini_har / "train/subject_train.txt"
    for f in (y, s):  # one label row more than the signal files have
        f.write_bytes(f.read_bytes() + f.read_bytes().split(b"\n")[0] + b"\n")
    with pytest.raises(DataError, match="labels and signals differ in length") as e:
        _load_har(mini_har)
    assert str(y) in str(e.value) and "body_acc_x_train.txt" in str(e.value)
    assert "21 lines" in str(e.value) and "has 20" in str(e.value)


def test_label_out_of_range(mini_har):
    _edit_line(mini_har / "test/y_test.txt", 2, lambda l: b"7")
    with pytest.raises(DataError, match=r"y_test.txt: line 2, column 1: value 7 is outside 1..6"):
        _load_har(mini_har)


def test_dsa_wrong_shape(shared_data, tmp_path):
    root = tmp_path / "data"
    for p in ("a01/p1/s01.txt", "a01/p5/s01.txt"):
        (root / p).parent.mkdir(parents=True)
        shutil.copy(shared_data / "dsa19/data" / p, root / p)
    bad = root / "a01/p5/s01.txt"
    bad.write_bytes(b"\n".join(bad.read_bytes().split(b"\n")[:100]) + b"\n")  # 100 of 125 lines
    with pytest.raises(DataError, match="expected 125 lines, found 100") as e:
        get_task("dsa19", val_fraction=0).load(root)
    assert str(bad) in str(e.value)
    _edit_line(bad, 1, lambda l: l + b",1.0")  # and a 46-column row
    with pytest.raises(DataError, match="line 1: expected 45 columns, found 46"):
        parse_table(bad, 45, delimiter=",")
    (root / "a01/p1/notes.txt").write_text("hello")
    with pytest.raises(DataError, match="notes.txt: unexpected file"):
        get_task("dsa19", val_fraction=0).load(root)


def _write_wav(path, rate=16000, channels=1, n=16000):
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.zeros(n * channels, "<i2").tobytes())


@pytest.mark.parametrize("rate,channels,msg", [(8000, 1, "found 8000 Hz"), (16000, 9, "9 channels")])
def test_speech_wav_with_wrong_format(mini_speech, rate, channels, msg):
    rel = (mini_speech / "testing_list.txt").read_text().split()[0]
    _write_wav(mini_speech / rel, rate=rate, channels=channels)
    with pytest.raises(DataError, match=msg) as e:
        get_task("google30").load(mini_speech)
    assert str(mini_speech / rel) in str(e.value)


def test_speech_corrupt_wav_and_bad_list(mini_speech):
    rel = (mini_speech / "validation_list.txt").read_text().split()[1]
    (mini_speech / rel).write_bytes(b"RIFF\x00\x00garbage")
    with pytest.raises(DataError, match="not a RIFF/WAVE file") as e:
        get_task("google30").load(mini_speech)
    assert rel in str(e.value)
    (mini_speech / "validation_list.txt").write_text("cat/nothere_nohash_0.wav\n")
    with pytest.raises(DataError, match=r"validation_list.txt: line 1: 'cat/nothere_nohash_0.wav'"):
        get_task("google30").load(mini_speech)


def test_corrupt_archives(mini_har, tmp_path):
    good = tmp_path / "UCI HAR Dataset.zip"
    with zipfile.ZipFile(good, "w") as z:
        for p in mini_har.rglob("*"):
            z.write(p, "UCI HAR Dataset/" + p.relative_to(mini_har).as_posix())
    assert len(_load_har(good).train) == 20
    truncated = tmp_path / "cut" / "UCI HAR Dataset.zip"
    truncated.parent.mkdir()
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(DataError, match="corrupt or truncated archive") as e:
        _load_har(truncated)
    assert str(truncated) in str(e.value)
    tgz = tmp_path / "speech_commands_v0.01.tar.gz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        t.add(mini_har, arcname=".")
    tgz.write_bytes(buf.getvalue()[:2000])
    with pytest.raises(DataError, match="corrupt or truncated archive") as e:
        get_task("google30").load(tgz)
    assert str(tgz) in str(e.value)
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("readme.txt", "not HAR")
    with pytest.raises(DataError, match="does not contain the UCI HAR"):
        _load_har(other)


def test_unknown_task_and_option():
    from zoo.training.tasks import list_tasks

    assert {"adding", "copy", "dsa19", "har2"} <= set(list_tasks())
    with pytest.raises(ValueError, match="unknown task 'har3'.*Valid tasks: "
                                         + re.escape(", ".join(list_tasks()))):
        get_task("har3")
    with pytest.raises(ValueError, match="unknown option.*'val_frac'.*Valid options: "
                                         "frames_per_step, split_seed, val_fold, val_fraction, "
                                         "val_subjects"):
        get_task("har2", val_frac=0.1)


# ----------------------------------------------------------------------------- checksums / download


def test_checksum_check_on_a_local_file(tmp_path):
    f = tmp_path / "a.zip"
    f.write_bytes(b"hello")
    good = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"  # sha256("hello")
    dl.verify_file(f, good, size=5)
    with pytest.raises(DataError, match=r"a.zip: sha256 2cf24dba.* does not match the published 00"):
        dl.verify_file(f, "00" * 32)
    with pytest.raises(DataError, match="size 5 bytes does not match the published 6"):
        dl.verify_file(f, good, size=6)


def test_missing_data_offline_says_what_to_download(tmp_path):
    with pytest.raises(DataNotFoundError) as e:
        get_task("har2").load(tmp_path)
    msg = str(e.value)
    assert "UCI%20HAR%20Dataset.zip" in msg and str(tmp_path) in msg and "ZOO_DATA_DIR" in msg
    assert "2045e435c955214b" in msg


def test_failed_download_gives_the_offline_message(tmp_path, monkeypatch):
    import urllib.error

    monkeypatch.delenv("ZOO_OFFLINE")
    calls = []

    def refuse(req, timeout=None):
        calls.append(req.full_url)
        raise urllib.error.URLError("network is unreachable")

    monkeypatch.setattr(dl, "urlopen", refuse)
    with pytest.raises(DataNotFoundError) as e:
        get_task("google30").load(tmp_path)
    assert calls == ["http://download.tensorflow.org/data/speech_commands_v0.01.tar.gz"]
    msg = str(e.value)
    assert "network is unreachable" in msg and "speech_commands_v0.01.tar.gz" in msg
    assert str(tmp_path) in msg and "743935421bb51ccc" in msg
    assert not list(tmp_path.iterdir())  # no partial file left behind


class _Response(io.BytesIO):
    def __init__(self, data):
        super().__init__(data)
        self.headers = {"Content-Length": str(len(data))}


def test_download_verifies_sha256(tmp_path, monkeypatch, capsys):
    payload = b"x" * 3000
    monkeypatch.setattr(dl, "urlopen", lambda req, timeout=None: _Response(payload))
    import hashlib

    ok = dl.download("https://example.invalid/f.zip", tmp_path / "f.zip",
                     sha256=hashlib.sha256(payload).hexdigest())
    assert ok.read_bytes() == payload
    with pytest.raises(DataError, match="sha256 .* the published value is 11"):
        dl.download("https://example.invalid/g.zip", tmp_path / "g.zip", sha256="11" * 32)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.zip"]  # nothing half-written
    dl.download("https://example.invalid/h.zip", tmp_path / "h.zip", sha256=None)
    assert "no published checksum; verifying size only" in capsys.readouterr().err
