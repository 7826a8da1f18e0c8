"""Issue 44, item 2: readers and writers of a run serialised, and a distilled run's teacher pinned.

A ``zoo export`` started while ``zoo train --overwrite`` replaced the same run read the old
model and wrote its export into the new run (its card said ``keras_float 0.8017``, the run's
accuracy was 81.74 %). Every command that reads a run (export, eval, analyze, ship,
``--init-from``, a distillation teacher) now holds the run's lock shared while it reads and
writes beside it: started while a writer holds the lock, it is refused in one line naming the
writer, having written nothing; a writer started while a reader holds it is refused, naming the
reader. The lock is the writer's own (`zoo.core.storage`), so these tests hold it as the
commands do (a flock conflicts between two opens of the file, in one process too), or run the
real commands one inside the other through `zoo.core.storage.crash_point`.
"""

import json
import os

import pytest
import yaml

from edge_rnn_zoo.cli import main
from zoo.core import storage

TRAIN = ["train", "--task", "har2", "--model", "lstm", "--units", "3", "--recipe", "none",
         "--epochs", "1", "--batch-size", "512"]
READERS = {  # a reader's command line, from the run and an empty folder for what it writes
    "export": lambda run, out: ["export", str(run), "--out", str(out / "e"), "--no-micro"],
    "export-default-out": lambda run, out: ["export", str(run), "--no-micro"],
    "c-export": lambda run, out: ["export", str(run), "--form", "c", "--out", str(out / "c")],
    "eval": lambda run, out: ["eval", str(run)],
    "analyze": lambda run, out: ["analyze", str(run), "--out", str(out / "a")],
    "ship": lambda run, out: ["ship", str(run), "--tag", "lstm.har2", "--dest", str(out),
                              "--command", "zoo train ... (test)"],
    "init-from": lambda run, out: [*TRAIN, "--init-from", str(run), "--out", str(out / "r")],
    "teacher": lambda run, out: [*TRAIN, "--distill", f"teacher={run}", "--out", str(out / "r")],
}


def _files(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_reader_is_refused_in_one_line_while_zoo_train_writes_the_run(
        reader, run, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    before = _files(run)
    with storage.exclusive(run):  # as `zoo train --overwrite` holds it for its whole training
        code = main(READERS[reader](run, out))
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert f"{run} is being written by pid {os.getpid()}" in err, err
    assert _files(out) == [] and _files(run) == before  # nothing read into, nothing written


def test_zoo_train_overwrite_is_refused_while_an_export_reads_the_run(
        run, tmp_path, monkeypatch, capsys):
    """The converse: the export holds the run until its card is written, so a replacement
    started meanwhile is refused (naming the reader) and the card describes the run's model."""
    from zoo.export.exporter import export_run

    codes, started = [], []

    def point(label):  # the export has read the run and is writing its staging folder
        if label == "staging: marked, not renamed" and not started:
            started.append(label)  # once (the train has crash points too)
            codes.append(main([*TRAIN, "--out", str(run), "--overwrite"]))

    monkeypatch.setattr(storage, "crash_point", point)
    card = export_run(run, tmp_path / "e", micro=False)
    err = capsys.readouterr().err
    assert codes == [2], err
    assert f"run directory {run} is in use by a command reading it (pid {os.getpid()}" in err
    metrics = json.loads((run / "metrics.json").read_text())
    assert card.accuracy.keras_float == pytest.approx(metrics["test"]["accuracy"], abs=1e-6)


def test_an_export_started_while_zoo_train_overwrite_replaces_the_run_is_refused(
        run, tmp_path, monkeypatch, capsys):
    """The issue's race with the real trainer: an export started after the replacement's first
    epoch is refused, naming `zoo train`; the one after it describes the new model."""
    from zoo.export.exporter import export_run

    refused = []

    def point(label):
        if label == "checkpoint epoch-0001: committed" and not refused:
            try:
                export_run(run, tmp_path / "during", micro=False)
                refused.append("not refused: exported")
            except ValueError as err:
                refused.append(str(err))

    monkeypatch.setattr(storage, "crash_point", point)
    assert main([*TRAIN, "--seed", "7", "--out", str(run), "--overwrite"]) == 0
    assert refused and f"{run} is being written by pid {os.getpid()}" in refused[0], refused
    assert not (tmp_path / "during").exists()
    monkeypatch.setattr(storage, "crash_point", lambda label: None)
    card = export_run(run, tmp_path / "after", micro=False)
    metrics = json.loads((run / "metrics.json").read_text())
    assert card.accuracy.keras_float == pytest.approx(metrics["test"]["accuracy"], abs=1e-6)


# ------------------------------------------------------------------------- the teacher pinned
PARITY = dict(task="parity", model="lstm", model_options={"units": 3},
              task_options={"max_length": 6, "n_train": 64, "n_val": 16, "n_test": 16},
              batch_size=32, lr=0.02, early_stopping_patience=0)


class Killed(BaseException):
    """Stands for SIGKILL."""


def test_a_distilled_run_is_not_resumed_from_a_replaced_teacher(tmp_path, monkeypatch):
    """Killed after its first epoch, a student whose teacher folder was then replaced by
    another model (`zoo train --overwrite` of the teacher) is refused on resume, naming both
    digests, and its run is left as it was; the teacher put back, it resumes."""
    import shutil

    from zoo.training.config import TrainConfig
    from zoo.training.trainer import train

    quiet = {"verbose": 0}
    teacher, student = tmp_path / "teacher", tmp_path / "student"
    train(TrainConfig(**PARITY, epochs=1, seed=1), teacher, **quiet)
    shutil.copytree(teacher, tmp_path / "first-teacher")
    config = TrainConfig(**PARITY, epochs=2, seed=3, distill={"teacher": str(teacher)})

    def kill(label):
        if label == "checkpoint epoch-0001: committed":
            raise Killed(label)

    with monkeypatch.context() as m:
        m.setattr(storage, "crash_point", kill)
        with pytest.raises(Killed):
            train(config, student, **quiet)
    pinned = yaml.safe_load((student / "config.yaml").read_text())["distill_resolved"]
    train(TrainConfig(**PARITY, epochs=1, seed=2), teacher, overwrite=True, **quiet)
    before = {p: p.read_bytes() for p in student.rglob("*") if p.is_file()}
    with pytest.raises(ValueError) as err:
        train(config, student, **quiet)
    message = str(err.value)
    assert f"distill teacher {teacher}" in message and pinned["teachers"][0]["sha256"] in message
    assert "1 epoch(s) so far learnt from that one" in message, message
    assert {p: p.read_bytes() for p in student.rglob("*") if p.is_file()} == before
    shutil.rmtree(teacher)
    shutil.copytree(tmp_path / "first-teacher", teacher)
    train(config, student, **quiet)  # the teacher it started from: resumed and finished
    saved = yaml.safe_load((student / "config.yaml").read_text())["distill_resolved"]
    assert saved == pinned and (student / "metrics.json").is_file()


def test_a_reader_makes_no_lock_file_beside_a_folder_no_writer_replaces(tmp_path):
    """A shipped tag (no marker: `zoo train --overwrite` never replaces it) is read without a
    lock file appearing beside it (in the package's own folder); a run of the zoo's gets one."""
    import shutil

    from zoo.pretrained import verified_dir
    from zoo.training.rundir import RunDirectory

    tag = tmp_path / "sirnn.har2"
    shutil.copytree(verified_dir("sirnn.har2"), tag)
    RunDirectory(tag).check_finished()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sirnn.har2"]
    storage.write_marker(tag, storage.RUN_MARKER)
    RunDirectory(tag).check_finished()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".sirnn.har2.lock", "sirnn.har2"]
