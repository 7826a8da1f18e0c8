"""`zoo ship --keep-as NAME` (issue 43 item 1): the generation a ship replaces moves into the
archive in the same step, byte for byte (its card's tag renamed), and the new one takes the tag;
what would make it fail is refused before anything is exported."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from zoo import pretrained
from zoo.core import storage

SHIPPED = Path(__file__).resolve().parents[2] / "models" / "pretrained"


@pytest.fixture
def dest(tmp_path):
    """A pretrained folder holding a copy of the shipped ``gru.har2`` (the generation to keep)."""
    folder = tmp_path / "pretrained"
    shutil.copytree(SHIPPED / "gru.har2", folder / "gru.har2")
    return folder


def _sha256s(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != "card.json"}


@pytest.mark.slow
def test_keep_as_archives_the_replaced_generation_in_the_same_step(finished_har_run, shared_data,
                                                                   dest):
    from zoo.export.ship import main

    old_card = json.loads((dest / "gru.har2" / "card.json").read_text())
    old_files = _sha256s(dest / "gru.har2")
    assert main([str(finished_har_run), "--tag", "gru.har2", "--command", "test",
                 "--data-dir", str(shared_data / "har"), "--dest", str(dest),
                 "--keep-as", "gru.har2_gen2"]) == 0
    kept = dest.parent / "archive" / "gru.har2_gen2"
    assert _sha256s(kept) == old_files == old_card["files"]
    card = json.loads((kept / "card.json").read_text())
    assert card == {**old_card, "tag": "gru.har2_gen2"}
    assert pretrained.list_pretrained(root=kept.parent) == ["gru.har2_gen2"]
    pretrained.verified_dir("gru.har2_gen2", root=kept.parent)  # every sha256 as its card says
    new = json.loads((dest / "gru.har2" / "card.json").read_text())
    assert new["model"] == "lstm" and new["tag"] == "gru.har2"
    for folder, name in ((dest, "gru.har2"), (kept.parent, "gru.har2_gen2")):
        left = sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock"))
        assert left == [name]  # no staging left behind
        assert storage.PRETRAINED_MARKER not in {p.name for p in (folder / name).iterdir()}


@pytest.mark.parametrize("keep_as, setup, match", [
    ("gru.har2_gen2", "taken", "already exists"),
    ("gru.har2", None, "is the tag being shipped"),
    ("../x", None, "is not a tag name"),
    ("gru.har2_gen2", "no tag", "is not a shipped tag"),
])
def test_keep_as_refusals_come_before_any_export(finished_har_run, dest, capsys, monkeypatch,
                                                 keep_as, setup, match):
    from zoo.export import exporter
    from zoo.export.ship import main

    monkeypatch.setattr(exporter, "export_run", lambda *a, **k: pytest.fail("exported"))
    archive = dest.parent / "archive"
    if setup == "taken":
        (archive / keep_as).mkdir(parents=True)
        (archive / keep_as / "mine.txt").write_text("the user's")
    if setup == "no tag":
        shutil.rmtree(dest / "gru.har2")
    before = _sha256s(dest.parent)
    assert main([str(finished_har_run), "--tag", "gru.har2", "--command", "test", "--dest",
                 str(dest), "--keep-as", keep_as]) == 2
    err = capsys.readouterr().err.strip()
    assert match in err and len(err.splitlines()) == 1, err
    assert _sha256s(dest.parent) == before
