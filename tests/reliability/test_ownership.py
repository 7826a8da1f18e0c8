"""Issue 23: the zoo touches only paths it owns (`zoo.core.storage`), in-process through
``edge_rnn_zoo.cli.main``. One test per reproduction: a user's folder with one of the zoo's
hidden names (``.X.old``, ``.X.creating``) is never deleted or moved; an export that fails its
accuracy check never replaces a good one; the lock is on the real directory; a run is not
"resumed" to fewer epochs than it trained; a killed export's staging folder, a run directory
that failed before training and a refused ``--out`` leave nothing behind; ``--out .`` is
refused by name."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from edge_rnn_zoo.cli import main
from zoo.core import storage

TRAIN = ["train", "--task", "har2", "--model", "lstm", "--units", "3", "--epochs", "1",
         "--batch-size", "512", "--recipe", "none"]


def _snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _user_folder(path):
    """A folder a user made, with a note in it (no zoo marker)."""
    path.mkdir()
    (path / "notes.txt").write_text("mine\n")
    return _snapshot(path)


def _fake_export(path, content=b"the export the user keeps"):
    """An export directory as the zoo marks it (the marker and one file stand for the rest)."""
    path.mkdir()
    storage.write_marker(path, storage.EXPORT_MARKER)
    (path / "model.tflite").write_bytes(content)
    return _snapshot(path)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# ----------------------------------------------------------------------------- data loss (1)


def test_a_user_folder_named_like_the_swap_aside_survives_a_refused_train(
        finished_har_run, tmp_path, shared_data, capsys):
    run = tmp_path / "myrun"
    shutil.copytree(finished_har_run, run)
    before = _user_folder(tmp_path / ".myrun.old")
    args = TRAIN + ["--data-dir", str(shared_data / "har"), "--out", str(run)]
    assert main(args) == 2
    assert "holds a finished run" in capsys.readouterr().err
    assert _snapshot(tmp_path / ".myrun.old") == before


def test_a_user_folder_named_like_the_swap_aside_is_not_moved_into_a_new_run(tmp_path, capsys):
    before = _user_folder(tmp_path / ".fresh.old")
    # A typo in --data-dir: the run fails at its data, after the directory has been prepared.
    args = TRAIN + ["--data-dir", str(tmp_path / "typo"), "--out", str(tmp_path / "fresh")]
    assert main(args) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert _snapshot(tmp_path / ".fresh.old") == before


def test_a_user_folder_named_like_the_creating_stage_is_refused_not_deleted(
        tmp_path, shared_data, capsys):
    before = _user_folder(tmp_path / ".newrun.creating")
    args = TRAIN + ["--data-dir", str(shared_data / "har"), "--out", str(tmp_path / "newrun")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert ".newrun.creating exists and was not left by the zoo" in err and "move it away" in err
    assert _snapshot(tmp_path / ".newrun.creating") == before
    assert not (tmp_path / "newrun").exists()


def test_a_user_folder_named_like_the_export_aside_survives_a_refused_export(
        finished_har_run, tmp_path, capsys):
    _fake_export(tmp_path / "g")
    before = _user_folder(tmp_path / ".g.old")
    assert main(["export", str(finished_har_run), "--tflite", "--out", str(tmp_path / "g")]) == 2
    assert "already exists" in capsys.readouterr().err
    assert _snapshot(tmp_path / ".g.old") == before


# ----------------------------------------------------------------------------- data loss (2)


def test_an_export_that_fails_its_accuracy_check_does_not_replace_a_good_one(
        finished_har_run, shared_data, tmp_path, capsys, monkeypatch):
    from zoo.export import exporter

    def check_litert_failing(export, card, *args, **kwargs):
        """The real check, then a 7.13-point loss recorded (issue 23's int8 case), so that the
        test does not depend on how much a given model loses."""
        logits = real_check(export, card, *args, **kwargs)
        card.accuracy.drop_points, card.accuracy.passed = 7.13, False
        return logits

    real_check = exporter.check_litert
    monkeypatch.setattr(exporter, "check_litert", check_litert_failing)
    good = tmp_path / "E"
    before = _fake_export(good)
    assert main(["export", str(finished_har_run), "--tflite", "--no-micro", "--data-dir",
                 str(shared_data / "har"), "--overwrite", "--out", str(good)]) == 3
    assert _snapshot(good) == before
    err = capsys.readouterr().err
    assert "points below the Keras float model" in err and f"{good} is unchanged" in err
    failed = tmp_path / "E.failed"
    assert str(failed) in err
    assert json.loads((failed / "model_card.json").read_text())["accuracy"]["passed"] is False
    assert [p.name for p in tmp_path.iterdir() if ".partial-" in p.name] == []


# ----------------------------------------------------------------------------- wrong results


def test_the_lock_is_on_the_real_directory_not_the_name_given(tmp_path, shared_data, capsys):
    real = tmp_path / "runs" / "sym4"
    real.mkdir(parents=True)  # an existing, empty folder (a link to nothing is refused first)
    alias = tmp_path / "alias4"
    alias.symlink_to(real, target_is_directory=True)
    with storage.exclusive(real):  # another `zoo train --out runs/sym4` is running
        args = TRAIN + ["--data-dir", str(shared_data / "har"), "--out", str(alias)]
        assert main(args) == 2
    err = capsys.readouterr().err
    assert "is in use by pid" in err and str(real) in err
    assert alias.is_symlink() and not any(real.iterdir())


def test_resuming_with_fewer_epochs_than_trained_is_refused(tmp_path, tiny_config, monkeypatch):
    from zoo.training.trainer import RunDirError, train

    class Killed(BaseException):
        pass

    def kill_after_epoch_3(label):
        if label == "checkpoint epoch-0003: committed":
            raise Killed(label)

    out = tmp_path / "run"
    quiet = dict(verbose=0)
    monkeypatch.setattr(storage, "crash_point", kill_after_epoch_3)
    with pytest.raises(Killed):
        train(tiny_config(epochs=30, early_stopping_patience=None), out, **quiet)
    monkeypatch.setattr(storage, "crash_point", lambda label: None)
    before = _snapshot(out)
    with pytest.raises(RunDirError, match=r"already trained 3 epochs; --epochs 2 is fewer"):
        train(tiny_config(epochs=2, early_stopping_patience=None), out, **quiet)
    assert _snapshot(out) == before  # config.yaml still says 30, as the checkpoint does


# ----------------------------------------------------------------------------- clutter


def test_a_killed_exports_staging_folder_is_removed_by_the_next_export(
        finished_har_run, tmp_path, capsys):
    pid = _dead_pid()
    stale = tmp_path / f".g.partial-{pid}"
    stale.mkdir()
    storage.write_marker(stale, storage.EXPORT_MARKER)  # the zoo marks its staging at once
    (stale / "model.tflite").write_bytes(b"half an export")
    users = _user_folder(tmp_path / f".g.partial-{pid + 1}")
    # A typo in --data-dir: the export fails at the data, after the lock, in seconds.
    assert main(["export", str(finished_har_run), "--tflite", "--data-dir",
                 str(tmp_path / "typo"), "--out", str(tmp_path / "g")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert not stale.exists()
    assert _snapshot(tmp_path / f".g.partial-{pid + 1}") == users


def test_a_run_that_fails_before_training_leaves_no_directory(tmp_path, capsys):
    out = tmp_path / "runs" / "dsa"
    args = TRAIN + ["--data-dir", str(tmp_path / "dsa19_train_full.zip"), "--out", str(out)]
    assert main(args) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert not out.exists()
    assert [p.name for p in out.parent.iterdir() if p.name != ".dsa.lock"] == []


def test_a_refused_out_gets_no_lock_file(finished_har_run, tmp_path, shared_data, capsys):
    (tmp_path / "file.txt").write_text("a file, not a folder\n")
    _user_folder(tmp_path / "P")
    for out in ("file.txt", "P"):
        assert main(TRAIN + ["--data-dir", str(shared_data / "har"),
                             "--out", str(tmp_path / out)]) == 2
    assert main(["export", str(finished_har_run), "--tflite", "--out",
                 str(tmp_path / "file.txt")]) == 2
    capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["P", "file.txt"]


def test_out_dot_is_refused_with_a_clear_message(tmp_path, shared_data, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(TRAIN + ["--data-dir", str(shared_data / "har"), "--out", "."]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("zoo train: error: --out .: the current directory") and "name a folder" in err
    assert os.listdir(tmp_path) == []
