"""The three ways issue 14 found to lose data, and the lock: a user's folder is never deleted by
--overwrite; a failed --overwrite (train or export) leaves the old run / export as it was; a
second command on a locked directory fails naming the holder. In-process (``edge_rnn_zoo.cli.main``)."""

import json
import os
import socket

import pytest

from zoo.core import storage
from edge_rnn_zoo.cli import main

TRAIN = ["train", "--task", "har2", "--model", "lstm", "--units", "3", "--epochs", "1",
         "--batch-size", "512", "--recipe", "none"]




def _snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_overwrite_never_deletes_a_folder_the_zoo_did_not_write(tmp_path, shared_data, capsys):
    user = tmp_path / "P"
    user.mkdir()
    (user / "config.yaml").write_text("name: app\n")
    (user / "notes.txt").write_text("notes\n")
    before = _snapshot(user)
    args = TRAIN + ["--data-dir", str(shared_data / "har"), "--out", str(user), "--overwrite"]
    assert main(args) == 2
    assert "not written by `zoo train`" in capsys.readouterr().err
    assert _snapshot(user) == before


def test_failed_overwrite_keeps_the_finished_run(finished_har_run, tmp_path, capsys):
    before = _snapshot(finished_har_run)
    args = TRAIN + ["--data-dir", str(tmp_path / "typo"), "--out", str(finished_har_run),
                    "--overwrite"]
    assert main(args) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert _snapshot(finished_har_run) == before


def test_failed_export_overwrite_keeps_the_good_export(finished_har_run, tmp_path, capsys):
    good = tmp_path / "GOOD_EXPORT"
    good.mkdir()
    storage.write_marker(good, storage.EXPORT_MARKER)
    (good / "model.tflite").write_bytes(b"the export the user keeps")
    before = _snapshot(good)
    broken_run = tmp_path / "run-without-model"
    broken_run.mkdir()
    for name in ("config.yaml", "normalization.json", "metrics.json"):
        (broken_run / name).write_bytes((finished_har_run / name).read_bytes())
    assert main(["export", str(broken_run), "--tflite", "--out", str(good), "--overwrite"]) == 2
    assert "missing model.keras" in capsys.readouterr().err
    assert _snapshot(good) == before


def test_export_overwrite_refuses_a_folder_without_the_marker(finished_har_run, tmp_path,
                                                              capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "model_card.json").write_text("{}")  # a file name a user may well have
    assert main(["export", str(finished_har_run), "--tflite", "--out", str(mine),
                 "--overwrite"]) == 2
    assert "not written by `zoo export`" in capsys.readouterr().err
    assert _snapshot(mine) == {"model_card.json": b"{}"}


def test_a_locked_run_directory_is_refused_naming_the_holder(finished_har_run, tmp_path,
                                                             shared_data, capsys):
    out = tmp_path / "run"
    with storage.exclusive(out):
        args = TRAIN + ["--data-dir", str(shared_data / "har"), "--out", str(out)]
        assert main(args) == 2
        err = capsys.readouterr().err
        assert f"pid {os.getpid()} on {socket.gethostname()}" in err and "in use" in err
        assert "choose another --out" in err  # the option `zoo train` has
        assert not out.exists()
        holder = json.loads((tmp_path / ".run.lock").read_text())
        assert holder["pid"] == os.getpid() and "command" in holder
    # Released at the end of the block (and by the kernel when a holder dies).
    with storage.exclusive(out):
        pass


def test_a_locked_export_directory_is_refused(finished_har_run, tmp_path, capsys):
    out = tmp_path / "export"
    with storage.exclusive(out, "export directory"):
        assert main(["export", str(finished_har_run), "--tflite", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "export directory" in err and f"pid {os.getpid()}" in err
    assert not out.exists()
