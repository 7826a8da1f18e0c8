"""Issue 44, item 3: a kill during the final cleanup of a replacement (the removal of the old
directory, ``.X.old``, once the new one is in place) never turns into a false refusal.

Before the fix the removal was ``shutil.rmtree(.X.old)``, which deletes in directory order: a
kill after the swap tag went but before the marker did left a half-deleted ``.X.old`` with the
run marker and no tag, and every later ``--overwrite`` was refused with "was not left by the zoo"
(reproduced on a run and on a C export). Here the kill is injected at every deletion (each
``os.unlink`` / ``os.rmdir``) after the new directory is in place; after each, the next command
must accept the target and, once one finishes, leave no hidden folder but the lock.
"""

import os
from types import SimpleNamespace

import pytest

from zoo.core import storage


class Killed(BaseException):
    """Stands for SIGKILL (not an Exception: nothing under test catches it)."""


def _c_export(target, env):
    from zoo.export.c_backend.command import export_c
    from zoo.pretrained import archive_root, verified_dir

    export_c(verified_dir("sirnn.har2_gen1", root=archive_root()), target, overwrite=True)


def _c_check(target):
    from zoo.export.c_backend.command import check_out

    check_out(target, True)


def _run_swap(target, env):
    """The end of ``zoo train --overwrite`` (`trainer.train`): the finished replacement, here a
    copy of a finished run, swapped in through `storage.replacing` (training it afresh for each
    kill would take a minute)."""
    import shutil

    from zoo.training import rundir

    with storage.replacing(target, storage.RUN_MARKER, "run directory",
                           check=lambda out: rundir.check_out(out, True)) as replacement:
        stage = replacement.stage()
        shutil.copytree(env.run, stage, dirs_exist_ok=True)
        replacement.swap_in()


def _run_check(target):
    from zoo.training.rundir import check_out

    check_out(target, True)  # what `zoo train --overwrite` checks first


WRITERS = {"c": (_c_export, _c_check, "sirnn_har2_gen1_model.c"),
           "run": (_run_swap, _run_check, "metrics.json")}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, tiny_config):
    from zoo.training.trainer import train

    run = tmp_path_factory.mktemp("tiny") / "run"
    train(tiny_config(epochs=1), run, verbose=0)
    return run


def _kill_at_deletion(monkeypatch, n):
    """From the moment the new directory is in place, raise Killed at the n-th deletion (1-based)
    of a file or folder: what a SIGKILL inside the final cleanup leaves."""
    state = {"armed": False, "deletions": 0}

    def point(label):
        if label == "swap: new directory in place":
            state["armed"] = True

    def killing(real):
        def call(*args, **kwargs):
            if state["armed"]:
                state["deletions"] += 1
                if state["deletions"] == n:
                    raise Killed(f"deletion {n}")
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(storage, "crash_point", point)
    monkeypatch.setattr(os, "unlink", killing(os.unlink))
    monkeypatch.setattr(os, "remove", killing(os.remove))
    monkeypatch.setattr(os, "rmdir", killing(os.rmdir))
    return state


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_kill_at_any_deletion_of_the_old_directory_leaves_no_false_refusal(
        writer, tiny_run, tiny_config, tmp_path, monkeypatch):
    write, check, done = WRITERS[writer]
    env = SimpleNamespace(run=tiny_run)
    target = tmp_path / "target"
    write(target, env)  # the old artifact
    n, kills = 0, []
    while True:
        n += 1
        with monkeypatch.context() as m:
            state = _kill_at_deletion(m, n)
            try:
                write(target, env)
            except Killed:
                kills.append(n)
        assert (target / done).is_file(), n  # the new directory is in place
        check(target)  # what the next --overwrite checks first: no refusal
        if state["deletions"] < n:  # the cleanup finished before the n-th deletion
            break
    assert len(kills) >= 5, kills  # every deletion of the removal was a kill point
    if writer == "run":  # the next command, `zoo train --overwrite` itself
        from zoo.training.trainer import train

        train(tiny_config(epochs=1), target, overwrite=True, verbose=0)
    else:
        write(target, env)  # the next command: sweeps what the last kill left
    hidden = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    assert hidden == [".target.lock"], hidden


def test_a_half_removed_old_directory_from_an_earlier_version_is_recognised(tmp_path):
    """What the earlier rmtree left (the marker without the tag, or the tag without the marker,
    beside the directory in place) is the zoo's and is cleared; a marked one without a tag
    while the directory is missing is not guessed at, and says why."""
    target = tmp_path / "run"
    target.mkdir()
    storage.write_marker(target, storage.RUN_MARKER)
    aside = tmp_path / ".run.old"
    for left in (storage.RUN_MARKER, storage.ASIDE_TAG):
        aside.mkdir()
        (aside / left).write_text("{}\n" if left == storage.RUN_MARKER else "123\n")
        (aside / "history.csv").write_text("epoch\n")
        storage.check_swap_free(target)  # not refused
        storage.recover_swap(target)
        assert not aside.exists() and target.is_dir(), left
        assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    # Marked, untagged, and nothing in its place: perhaps a run the user moved there.
    aside.mkdir()
    storage.write_marker(aside, storage.RUN_MARKER)
    storage.remove_owned(target)
    storage.recover_swap(target)
    assert (aside / storage.RUN_MARKER).is_file()
    with pytest.raises(storage.StorageError, match="holds the zoo's marker but not its swap tag"):
        storage.check_swap_free(target)


def test_a_kill_inside_any_removal_leaves_a_folder_the_next_writer_sweeps(tmp_path, monkeypatch):
    """`remove_owned` on one of the zoo's fixed names (here ``.X.new``): killed at each of its
    steps, it leaves no folder under that name (which a user might own), and what it leaves is
    swept by the next `replacing`."""
    target = tmp_path / "x"
    labels = []

    def stage():
        folder = storage.make_staging(target, "new", storage.RUN_MARKER)
        (folder / "sub").mkdir()
        (folder / "sub" / "a.txt").write_text("a")
        (folder / "b.txt").write_text("b")
        return folder

    monkeypatch.setattr(storage, "crash_point", labels.append)
    storage.remove_owned(stage())
    steps = [i for i, label in enumerate(labels) if label.startswith("removal:")]
    assert len(steps) >= 4, labels
    for step in range(len(steps)):
        seen = []

        def point(label):
            seen.append(label)
            if label.startswith("removal:") and sum(s.startswith("removal:") for s in seen) \
                    == step + 1:
                raise Killed(label)

        folder = stage()
        monkeypatch.setattr(storage, "crash_point", point)
        with pytest.raises(Killed):
            storage.remove_owned(folder)
        monkeypatch.setattr(storage, "crash_point", lambda label: None)
        assert not folder.exists(), step
        with storage.replacing(target, storage.RUN_MARKER, check=None):
            pass
        assert sorted(p.name for p in tmp_path.iterdir()) == [".x.lock"], step
