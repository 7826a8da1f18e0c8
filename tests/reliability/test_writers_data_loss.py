"""Issue 32's data-loss cases of the writers, each reproduced as the user met it (through
``edge_rnn_zoo.cli.main``): ``zoo ship`` (``--tag ..``, a user's ``DEST/TAG`` and
``DEST/.TAG.partial``, two ships of one tag, ``--repack`` and hidden files, a missing run or
tag), ``zoo train --overwrite`` and the exports in the run, a user's ``.X.lock`` and
``.Y.creating``, a full disk during train and export, and the reader's message after an
interrupted swap."""

import errno
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


def _user_folder(path, name="notes.txt"):
    """A folder a user made, with a note in it (no zoo marker)."""
    path.mkdir(parents=True)
    (path / name).write_text("mine\n")
    return _snapshot(path)


def _error(capsys, code, *argv):
    """The one error line ``argv`` answers with exit ``code``."""
    assert main(list(argv)) == code
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def _ship_args(run, shared_data, dest, tag="lstm.har2"):
    return ["ship", str(run), "--tag", tag, "--dest", str(dest), "--command", "zoo train (test)",
            "--data-dir", str(shared_data / "har")]


@pytest.fixture(scope="module")
def shipped(finished_har_run, shared_data, tmp_path_factory):
    """A tag shipped from the finished run by ``zoo ship`` (read only: copy it to change it)."""
    dest = tmp_path_factory.mktemp("pretrained")
    assert main(_ship_args(finished_har_run, shared_data, dest)) == 0
    return dest / "lstm.har2"


# ------------------------------------------------------------------------------- zoo ship
@pytest.mark.parametrize("tag", ["..", ".", "", "a/b", "../x.y", ".hidden.har2", "x.", "/abs.har2"])
def test_ship_refuses_a_tag_that_is_not_a_name(tag, finished_har_run, shared_data, tmp_path,
                                               capsys):
    dest = tmp_path / "pretrained"
    _user_folder(dest / "sirnn.har2")
    (tmp_path / "user-file.txt").write_text("mine\n")
    before = _snapshot(tmp_path)
    err = _error(capsys, 2, *_ship_args(finished_har_run, shared_data, dest, tag))
    assert f"--tag {tag!r} is not a tag name" in err
    assert _snapshot(tmp_path) == before


def test_ship_never_replaces_a_users_folder_named_as_the_tag(finished_har_run, shared_data,
                                                              tmp_path, capsys):
    before = _user_folder(tmp_path / "lstm.har2")
    err = _error(capsys, 2, *_ship_args(finished_har_run, shared_data, tmp_path))
    assert f"{tmp_path / 'lstm.har2'} was not written by `zoo ship`" in err
    assert _snapshot(tmp_path / "lstm.har2") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lstm.har2"]  # not even a lock


def test_ship_leaves_a_users_partial_folder_alone_and_replaces_its_own_tag(
        shipped, finished_har_run, shared_data, tmp_path, capsys):
    dest = tmp_path / "pretrained"
    shutil.copytree(shipped.parent, dest)
    users = _user_folder(dest / ".lstm.har2.partial")
    old_card = json.loads((dest / "lstm.har2" / "card.json").read_text())
    assert main(_ship_args(finished_har_run, shared_data, dest)) == 0
    assert _snapshot(dest / ".lstm.har2.partial") == users
    card = json.loads((dest / "lstm.har2" / "card.json").read_text())
    assert card["files"] == old_card["files"] or card["files"].keys() == old_card["files"].keys()
    assert sorted(p.name for p in dest.iterdir()) == [".lstm.har2.lock", ".lstm.har2.partial",
                                                      "lstm.har2"]
    assert not [p for p in (dest / "lstm.har2").rglob(".*")]  # ships no hidden file


def test_a_second_ship_of_a_tag_being_shipped_is_refused_naming_the_first(
        shipped, finished_har_run, shared_data, tmp_path, capsys):
    dest = tmp_path / "pretrained"
    shutil.copytree(shipped.parent, dest)
    before = _snapshot(dest / "lstm.har2")
    with storage.exclusive(dest / "lstm.har2", "pretrained tag folder"):  # the first ship
        err = _error(capsys, 2, *_ship_args(finished_har_run, shared_data, dest))
    assert "is in use by pid" in err and str(dest / "lstm.har2") in err
    # The way out it suggests is an option `zoo ship` has (it has no --out).
    assert "choose another --dest" in err and "--out" not in err
    assert _snapshot(dest / "lstm.har2") == before


def test_repack_keeps_the_users_hidden_files(shipped, tmp_path, capsys):
    dest = tmp_path / "pretrained"
    shutil.copytree(shipped.parent, dest)
    tag = dest / "lstm.har2"
    (tag / ".notes").write_text("mine\n")
    # the tag's export folder (an LSTM ships its int8 step export since issue 42)
    export = tag / json.loads((tag / "card.json").read_text())["export"]["folder"]
    (export / ".keep").write_text("mine too\n")
    before = json.loads((tag / "card.json").read_text())["files"]
    assert main(["ship", "--repack", "--tag", "lstm.har2", "--dest", str(dest)]) == 0
    assert (tag / ".notes").read_text() == "mine\n"
    assert (export / ".keep").read_text() == "mine too\n"
    files = json.loads((tag / "card.json").read_text())["files"]
    assert files.keys() == before.keys()
    from zoo.pretrained import sha256
    assert all(sha256(tag / rel) == digest for rel, digest in files.items())
    assert sorted(p.name for p in dest.iterdir()) == [".lstm.har2.lock", "lstm.har2"]


@pytest.mark.parametrize("case", ["missing run", "unfinished run", "unknown repack tag"])
def test_ship_of_something_missing_is_one_line(case, finished_har_run, shared_data, tmp_path,
                                               capsys):
    if case == "unknown repack tag":
        err = _error(capsys, 2, "ship", "--repack", "--tag", "nope.har2", "--dest", str(tmp_path))
        assert f"{tmp_path / 'nope.har2'} is not a shipped tag" in err
        return
    run = tmp_path / "run"
    if case == "unfinished run":
        shutil.copytree(finished_har_run, run)
        (run / "metrics.json").unlink()
    err = _error(capsys, 2, *_ship_args(run, shared_data, tmp_path / "dest"))
    assert str(run) in err and ("no such directory" in err or "unfinished run" in err)


# ------------------------------------------------------------------------ train --overwrite
def test_train_overwrite_moves_the_runs_exports_aside_and_says_where(
        finished_har_run, shared_data, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(finished_har_run, run)
    export = run / "export-step-int8"
    with storage.exclusive(export):  # as `zoo export` leaves it: with its lock file beside it
        export.mkdir()
        storage.write_marker(export, storage.EXPORT_MARKER)
        (export / "step.tflite").write_bytes(b"an export of the old model")
    (run / "notes.txt").write_text("mine\n")
    kept = {n: b for n, b in _snapshot(run).items() if n.startswith(("export", "notes"))}
    assert main(TRAIN + ["--data-dir", str(shared_data / "har"), "--out", str(run),
                         "--overwrite"]) == 0
    aside = tmp_path / "run.before-overwrite"
    out = capsys.readouterr().out
    assert f"besides the run (export-step-int8, notes.txt) in {aside}" in out
    assert _snapshot(aside) == kept
    assert not export.exists() and (run / "metrics.json").is_file()


# ----------------------------------------------------------------------- lock and staging
@pytest.mark.parametrize("kind", ["file", "folder", "link"])
def test_a_users_lock_named_path_is_refused_not_overwritten(kind, finished_har_run, shared_data,
                                                            tmp_path, capsys):
    lock = tmp_path / ".myrun.lock"
    if kind == "file":
        lock.write_text("my notes, in a file I named .myrun.lock\n")
    elif kind == "folder":
        _user_folder(lock)
    else:
        (tmp_path / "target.txt").write_text("mine\n")
        lock.symlink_to(tmp_path / "target.txt")
    before = _snapshot(tmp_path)
    for argv in (TRAIN + ["--data-dir", str(shared_data / "har"), "--out",
                          str(tmp_path / "myrun")],
                 ["export", str(finished_har_run), "--tflite", "--out", str(tmp_path / "myrun")]):
        err = _error(capsys, 2, *argv)
        assert f"{lock} exists and is not a lock file of the zoo's" in err
    assert _snapshot(tmp_path) == before and not (tmp_path / "myrun").exists()


def test_a_lock_file_written_before_the_marker_is_still_the_zoos(tmp_path):
    lock = tmp_path / ".old.lock"
    lock.write_text(json.dumps({"pid": 1, "host": "h", "since": "then", "command": "zoo"}))
    with storage.exclusive(tmp_path / "old"):
        assert json.loads(lock.read_text())["written_by"] == storage.WRITTEN_BY


def test_a_users_empty_folder_named_like_the_creating_stage_is_not_consumed(
        tmp_path, shared_data, capsys):
    (tmp_path / ".newrun.creating").mkdir()
    err = _error(capsys, 2, *TRAIN, "--data-dir", str(shared_data / "har"), "--out",
                 str(tmp_path / "newrun"))
    assert ".newrun.creating exists and was not left by the zoo" in err
    assert (tmp_path / ".newrun.creating").is_dir() and not (tmp_path / "newrun").exists()


def test_the_staging_a_killed_c_export_left_is_swept(tmp_path):
    from zoo.export.c_backend.command import export_c
    from zoo.pretrained import archive_root, verified_dir

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for name in (f".c.c-partial-{dead.pid}", f".c.partial-{dead.pid}"):  # before / now
        (tmp_path / name).mkdir()
        storage.write_marker(tmp_path / name, storage.EXPORT_MARKER)
    users = _user_folder(tmp_path / f".c.partial-{dead.pid + 1}")
    export_c(verified_dir("sirnn.har2_gen1", root=archive_root()), tmp_path / "c")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".c.lock", f".c.partial-{dead.pid + 1}",
                                                          "c"]
    assert _snapshot(tmp_path / f".c.partial-{dead.pid + 1}") == users


# -------------------------------------------------------------------------------- disk full
def _disk_full_at(monkeypatch, at):
    def point(label):
        if label == at:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), f"/somewhere/{at}")

    monkeypatch.setattr(storage, "crash_point", point)


@pytest.mark.parametrize("command", ["train", "export"])
def test_a_full_disk_is_one_line_and_keeps_the_old_artifact(command, finished_har_run,
                                                            shared_data, tmp_path, capsys,
                                                            monkeypatch):
    data = ["--data-dir", str(shared_data / "har")]
    if command == "train":
        out = tmp_path / "run"
        shutil.copytree(finished_har_run, out)
        argv = TRAIN + data + ["--out", str(out), "--overwrite"]
        at = "config.yaml: written, not renamed"
    else:
        out = tmp_path / "export"
        assert main(["export", str(finished_har_run), "--tflite", "--no-micro", *data,
                     "--out", str(out)]) == 0
        argv = ["export", str(finished_har_run), "--tflite", "--no-micro", *data, "--out",
                str(out), "--overwrite"]
        at = "model_card.json: written, not renamed"
    before = _snapshot(out)
    capsys.readouterr()
    _disk_full_at(monkeypatch, at)
    err = _error(capsys, 2, *argv)
    assert "no space left on the device writing /somewhere/" in err and str(out) in err
    assert _snapshot(out) == before
    assert not [p.name for p in tmp_path.iterdir() if ".partial-" in p.name]


# ------------------------------------------------------------------ after a killed swap
def test_a_reader_names_the_repair_of_an_interrupted_swap(finished_har_run, tmp_path, capsys):
    run = tmp_path / "run"
    aside = tmp_path / ".run.old"
    shutil.copytree(finished_har_run, aside)
    (aside / storage.ASIDE_TAG).write_text("1\n")  # as `swap_in` tags it before moving it
    for command in ("eval", "analyze"):
        err = _error(capsys, 2, command, str(run))
        assert f"previous directory is kept in {aside}" in err and f"mv {aside} {run}" in err


def test_a_staging_shell_a_killed_process_left_is_swept_by_the_next_staging(tmp_path):
    """``zoo train --overwrite`` makes ``.run.new`` through ``..run.new.making-PID``: a kill
    before its rename leaves that shell, which the next staging of the same folder removes
    (once its process is gone; a user's folder of that kind of name stays)."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    shell = tmp_path / f"..run.new.making-{dead.pid}"
    shell.mkdir()
    storage.write_marker(shell, storage.RUN_MARKER)
    users = _user_folder(tmp_path / f"..run.new.making-{dead.pid + 1}")
    stage = storage.make_staging(tmp_path / ".run.new", "creating", storage.RUN_MARKER)
    assert stage == tmp_path / "..run.new.creating" and storage.owned(stage, storage.RUN_MARKER)
    assert not shell.exists()
    assert _snapshot(tmp_path / f"..run.new.making-{dead.pid + 1}") == users
