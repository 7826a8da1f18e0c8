"""The window files zoo_app reads (issue 43): the writer puts what the numbers are in the file,
refuses what zoo_app would refuse, never replaces a file, and its command line writes an
export's test windows (a shipped tag's from the task's data) as normalized or raw windows."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from zoo.export.c_backend import CExportError
from zoo.export.c_backend.windows import encode_windows, main, write_windows

REPO = Path(__file__).resolve().parents[2]
TAG_EXPORT = REPO / "models" / "archive" / "sirnn.har2_gen1" / "export-step-int8"


@pytest.mark.parametrize("kind,mark,dtype", [("raw", b"RAW ", "<f4"), ("normalized", b"NORM", "<f4"),
                                             ("int8", b"INT8", "i1")])
def test_the_header_says_the_kind_and_the_shape(kind, mark, dtype):
    x = np.arange(2 * 3 * 5).reshape(2, 3, 5) - 15
    blob = encode_windows(x if kind == "int8" else x.astype(np.float64) / 7, kind)
    assert blob[:8] == b"ZOOW" + mark and struct.unpack("<II", blob[8:16]) == (3, 5)
    want = x if kind == "int8" else (x.astype(np.float64) / 7).astype(np.float32)
    assert np.array_equal(np.frombuffer(blob[16:], dtype).reshape(2, 3, 5), want)


@pytest.mark.parametrize("x,kind,words", [
    (np.zeros((2, 3)), "raw", r"expected \(N, T, F\)"),
    (np.zeros((0, 3, 5)), "raw", "N >= 1"),
    (np.zeros((1, 3, 5)), "float", "window kind 'float'"),
    (np.full((1, 3, 5), 128), "int8", "-128..127"),
    (np.zeros((1, 3, 5), np.float32), "int8", "integers"),
])
def test_the_writer_refuses_what_zoo_app_would(x, kind, words):
    with pytest.raises(CExportError, match=words):
        encode_windows(x, kind)


def test_the_writer_names_the_first_non_finite_value():
    x = np.zeros((3, 4, 5), np.float32)
    x[1, 2, 3] = np.nan
    with pytest.raises(CExportError, match=r"window 1, step 2, feature 3 is nan"):
        encode_windows(x, "normalized")


def test_an_existing_file_is_never_replaced(tmp_path):
    path = tmp_path / "mine.zoow"
    path.write_text("keep me")
    with pytest.raises(CExportError, match="already exists"):
        write_windows(path, np.zeros((1, 3, 5)), "raw")
    assert path.read_text() == "keep me"


def test_the_command_writes_a_shipped_tags_test_windows(har_dir, tmp_path, capsys):
    from zoo.export.c_backend.project import read_normalization, read_step_export
    from zoo.export.c_backend.shipped import test_windows

    card = read_step_export(TAG_EXPORT)
    mean, std = read_normalization(TAG_EXPORT, card)
    x, _, _ = test_windows(card, (mean, std), har_dir)
    norm, raw = tmp_path / "norm.zoow", tmp_path / "raw.zoow"
    assert main([str(TAG_EXPORT), "--data-dir", str(har_dir), "--out", str(norm)]) == 0
    assert main([str(TAG_EXPORT), "--data-dir", str(har_dir), "--out", str(raw), "--kind", "raw",
                 "--limit", "3"]) == 0
    blob = norm.read_bytes()
    assert blob[:16] == b"ZOOWNORM" + struct.pack("<II", 128, 9)
    assert np.array_equal(np.frombuffer(blob[16:], "<f4").reshape(x.shape), x)
    blob = raw.read_bytes()
    assert blob[:8] == b"ZOOWRAW " and len(blob) == 16 + 3 * 128 * 9 * 4
    assert np.array_equal(np.frombuffer(blob[16:], "<f4").reshape(3, 128, 9),
                          (x[:3] * std + mean).astype(np.float32))
    assert "wrote" in capsys.readouterr().out
    assert main([str(TAG_EXPORT), "--data-dir", str(har_dir), "--out", str(norm)]) == 2
    assert "already exists" in capsys.readouterr().err


def test_the_command_says_why_there_are_no_windows(tmp_path, capsys):
    assert main([str(TAG_EXPORT), "--data-dir", str(tmp_path), "--out",
                 str(tmp_path / "w.zoow")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "no testset.npz" in err and "not at hand" in err, err
    assert not (tmp_path / "w.zoow").exists()
