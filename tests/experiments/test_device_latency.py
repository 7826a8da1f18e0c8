"""``zoo device latency TAG``: a shipped tag's step export measured by name, through the one tag
resolver of every command (`zoo.pretrained.tag_or_path`): an archived or unknown name is the
same one line as ``zoo device build``'s, and an installed tag's export is built and timed as it
ships (its C arrays written into a copy, never into the tag's folder)."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from zoo.experiments import device_latency
from zoo.export import device_build
from zoo.pretrained import get_pretrained_cfg, pretrained_root

REPO = Path(__file__).resolve().parents[2]
TFLM = REPO.parent / "shared" / "tflm"


@pytest.mark.parametrize("name, words", [
    ("sirnn.har2_gen1", "sirnn.har2_gen1 moved to models/archive; the job's tag is now sirnn.har2"),
    ("nothing.here", "no tag 'nothing.here' installed; valid: dscnn.kws12, "),
])
def test_an_archived_or_unknown_tag_is_the_resolvers_one_line(name, words, capsys, tmp_path):
    assert device_latency.main([name, "--tflm", "nowhere", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"device_latency: error: {name}: no such file or folder; {words}")
    assert err.count("\n") == 1
    assert device_build.main([name, "--tflm", "nowhere"]) == 2  # the same resolver's line
    assert capsys.readouterr().err.split(": error: ", 1)[1] == err.split(": error: ", 1)[1]
    assert not (tmp_path / "o").exists()


def test_a_tag_whose_export_is_not_a_step_model_is_named(capsys, tmp_path):
    assert device_latency.main(["dscnn.kws12", "--tflm", "nowhere"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("device_latency: error: dscnn.kws12: its export ") and \
        "is a sequence model; the C++ loop exists for step exports only" in err


def _digests(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.skipif(not (TFLM / "lib" / "libtensorflow-microlite.a").is_file()
                    or shutil.which("g++") is None or shutil.which("make") is None,
                    reason="building the exported C++ loop needs ../shared/tflm, g++ and make")
def test_an_installed_tags_step_export_is_built_and_timed_as_shipped(tmp_path, capsys):
    tag = "sirnn.har2_tiny"
    folder = pretrained_root() / tag
    before = _digests(folder)
    out = tmp_path / "latency"
    assert device_latency.main([tag, "--tflm", str(TFLM), "--reps", "3", "--out", str(out)]) == 0
    [row] = json.loads((out / "device.json").read_text())
    card = get_pretrained_cfg(tag)
    export_card = json.loads((folder / card.export.folder / "model_card.json").read_text())
    assert (row["model"], row["mode"], row["form"]) == (tag, "int8", "step")
    assert row["bytes"] == export_card["total_bytes"] == card.export.total_bytes
    assert row["accuracy"] == export_card["accuracy"]["tflite"]
    assert row["check"] is None  # a shipped export keeps no test set: timed, not checked
    for loop in (row["c"], row["python"]["tflite-micro"], row["python"]["litert"]):
        assert loop["per_sequence"]["median_us"] > 0
    assert f"| {tag} | int8 | step | " in capsys.readouterr().out
    assert _digests(folder) == before  # nothing written into the installed tag
