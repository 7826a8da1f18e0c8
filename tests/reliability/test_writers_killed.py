"""Issues 31 and 32: every writer (``zoo export``, ``--form c``, ``zoo train --overwrite``, ``zoo
ship``) replaces its directory through `zoo.core.storage.replacing`. A kill at each step of the
replacement (the staging folder made, the old directory moved aside, the new one in place)
leaves the old artifact whole, in place or aside where the next command puts it back, and the
next command leaves no staging behind.

The kill is injected: `zoo.core.storage.crash_point` raises at the chosen boundary (the last
one of that name: a ship's own swap comes after its inner export's) and the cleanup a SIGKILL
would not run (`Replacement.discard`) is switched off, so the staging stays as a kill leaves
it. The kill's staging is named by this (live) pid, which the next command treats as dead:
the same process runs it.
"""

from types import SimpleNamespace

import pytest

from zoo.core import storage

# What the replacement is killed after: staging made (marked, before its rename), old
# directory moved aside, new directory in place (old one not yet deleted).
KILLS = ("staging: marked, not renamed", "swap: old directory moved aside",
         "swap: new directory in place")
# The zoo's own bookkeeping inside a directory (not part of what is compared).
BOOKKEEPING = {storage.ASIDE_TAG, storage.PRETRAINED_MARKER}


class Killed(BaseException):
    """Stands for SIGKILL (not an Exception: nothing under test catches it)."""


def _snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name not in BOOKKEEPING}


# ------------------------------------------------------------------------------- the writers
def _export(target, env):
    from zoo.export.exporter import export_run

    export_run(env.run, target, overwrite=True, micro=False, data_dir=env.data)
    return "model_card.json"


def _c_export(target, env):
    from zoo.export.c_backend.command import export_c
    from zoo.pretrained import archive_root, verified_dir

    export_c(verified_dir("sirnn.har2_gen1", root=archive_root()), target, overwrite=True)
    return "sirnn_har2_gen1_model.c"  # the tag's name is the default prefix


def _train(target, env):
    from zoo.training.trainer import train

    train(env.tiny_config(epochs=1), target, overwrite=True, verbose=0)
    return "metrics.json"


_SHIPPED_EXPORTS = {}  # (run, quantize) -> (card, folder name, a copy of the export)


def _ship(target, env):
    """``zoo ship`` of the run into ``target``. Its inner export is the same on every call (same
    run, same data): made once, then copied into each ship's staging folder, so the kills land
    on the ship's own replacement (what this test is about) without an export per kill (eight
    full ships took 219 s)."""
    import shutil
    from unittest import mock

    from zoo.export import ship as shipping

    real_export = shipping._export

    def export_once(run_dir, stage, data_dir, quantize="int8"):
        key = (str(run_dir), quantize)
        if key not in _SHIPPED_EXPORTS:
            card, name = real_export(run_dir, stage, data_dir, quantize)
            copy = target.parent / "inner-export" / name
            shutil.copytree(stage / name, copy)
            _SHIPPED_EXPORTS[key] = (card, name, copy)
        card, name, copy = _SHIPPED_EXPORTS[key]
        if not (stage / name).exists():
            shutil.copytree(copy, stage / name)
        return card, name

    with mock.patch.object(shipping, "_export", export_once):
        shipping.ship(env.run, target.name, command="zoo train ... (test)", data_dir=env.data,
                      dest=target.parent)
    return "card.json"


WRITERS = {"export": _export, "c": _c_export, "train": _train, "ship": _ship}


def _labels_of(write, target, env, monkeypatch):
    labels = []
    monkeypatch.setattr(storage, "crash_point", labels.append)
    write(target, env)
    monkeypatch.setattr(storage, "crash_point", lambda label: None)
    return labels


def _kill_at(monkeypatch, n):
    seen = []

    def point(label):
        seen.append(label)
        if len(seen) == n + 1:
            raise Killed(label)

    monkeypatch.setattr(storage, "crash_point", point)
    monkeypatch.setattr(storage.Replacement, "discard", lambda self: None)


@pytest.mark.slow
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_killed_replacement_keeps_the_old_artifact_and_leaves_no_staging(
        writer, finished_har_run, shared_data, tiny_config, tmp_path, monkeypatch):
    write = WRITERS[writer]
    env = SimpleNamespace(run=finished_har_run, data=shared_data / "har", tiny_config=tiny_config)
    target = tmp_path / ("lstm.har2" if writer == "ship" else "target")
    aside = tmp_path / f".{target.name}.old"
    done = write(target, env)  # the old artifact
    labels = _labels_of(write, target, env, monkeypatch)  # a replacement's boundaries
    for label in KILLS:
        old = _snapshot(target)
        with monkeypatch.context() as killing:
            _kill_at(killing, len(labels) - 1 - labels[::-1].index(label))
            with pytest.raises(Killed):
                write(target, env)
        # The old artifact whole: in place, or aside (then a reader is told the repair).
        kept = [_snapshot(p) for p in (target, aside) if p.is_dir()]
        assert old in kept, label
        if not target.exists():
            assert f"mv {aside} {target}" in storage.missing_message(target), label
        else:
            assert (target / done).is_file(), label
        write(target, env)  # the next command: repairs, sweeps, replaces
        assert (target / done).is_file(), label
        hidden = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
        assert hidden == [f".{target.name}.lock"], (label, hidden)
        assert storage.PRETRAINED_MARKER not in {p.name for p in target.iterdir()}


# A real SIGKILL at a boundary, in a child process: no cleanup of any kind runs. The C export
# of a shipped tag needs no TensorFlow, so the child starts in well under a second.
_KILLED_C_EXPORT = """
import os, signal, sys
from zoo.core import storage
from zoo.export.c_backend.command import export_c
from zoo.pretrained import archive_root, verified_dir

def point(label):
    if label == sys.argv[2]:
        os.kill(os.getpid(), signal.SIGKILL)

storage.crash_point = point
export_c(verified_dir("sirnn.har2_gen1", root=archive_root()), sys.argv[1], overwrite=True)
"""


@pytest.mark.parametrize("label", KILLS)
def test_a_sigkilled_c_export_keeps_the_old_one_and_the_next_leaves_no_staging(label, tmp_path):
    import os
    import signal
    import subprocess
    import sys

    target = tmp_path / "c"
    env = SimpleNamespace(run=None, data=None, tiny_config=None)
    _c_export(target, env)
    (target / "sirnn_har2_gen1_model.c").write_text("/* the old export, marked so it can be told apart */\n")
    old = _snapshot(target)
    child = subprocess.run([sys.executable, "-c", _KILLED_C_EXPORT, str(target), label],
                           env={**os.environ, "PYTHONPATH": os.getcwd()}, capture_output=True)
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    aside = tmp_path / ".c.old"
    assert old in [_snapshot(p) for p in (target, aside) if p.is_dir()]
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    assert left != [".c.lock"]  # the kill left its staging or the aside copy
    _c_export(target, env)
    assert (target / "sirnn_har2_gen1_model.c").read_text() != "/* the old export, marked so it can be told apart */\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".c.lock", "c"]
