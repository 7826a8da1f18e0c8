"""`device_bench.py` checks the card against the models before it trusts either (issue 32): a
model file swapped for another cell's (its size contradicts the card), edited quantization, a
shipped tag's file that no longer has its sha256, an absurd ``timesteps``; and its numeric
flags are range-checked before any work (``--threads 20000`` segfaulted in XNNPACK, ``--limit 0``
printed ``nan%``). Each is one line and exit status 2.

The exports are copies of the shipped ``sirnn.har2_gen1`` / ``gru.har2_gen1`` int8 step exports (real
models, cards and sha256 known), run with LiteRT, a few invokes each."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zoo.export import device_bench

REPO = Path(__file__).resolve().parents[2]
PRETRAINED = REPO / "models" / "pretrained"
ARCHIVE = REPO / "models" / "archive"  # the earlier generations (not installed)
FAST = ["--runtime", "litert", "--runs", "2", "--warmup", "0"]


@pytest.fixture
def step_export(tmp_path) -> Path:
    return Path(shutil.copytree(ARCHIVE / "sirnn.har2_gen1" / "export-step-int8", tmp_path / "e"))


def edit_card(folder: Path, edit) -> None:
    path = folder / "model_card.json"
    card = json.loads(path.read_text())
    edit(card)
    path.write_text(json.dumps(card))


def bench_fails(capsys, *argv) -> str:
    assert device_bench.main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_the_shipped_export_runs(step_export, capsys):
    assert device_bench.main([str(step_export), *FAST, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model_bytes"] == 7856 + 1320


def swap_in_gru_step(folder: Path) -> None:
    shutil.copy(ARCHIVE / "gru.har2_gen1" / "export-step-int8" / "step.tflite",
                folder / "step.tflite")


def double_x_scale(card: dict) -> None:
    card["state_quantization"]["x"]["scale"] *= 2


CASES = {
    # another cell's step.tflite (the same input and state sizes as SiRNN's)
    "gru-step-size-contradicts-the-card": (swap_in_gru_step, None,
                                           ["bytes.step is 7856", "28872 bytes"]),
    "gru-step-card-without-bytes": (swap_in_gru_step, lambda c: c.pop("bytes"),
                                    ["state_quantization.h_in.scale", "step.tflite"]),
    "x-scale-edited": (None, double_x_scale, ["state_quantization.x.scale"]),
    "timesteps-1e9": (None, lambda c: c.update(timesteps=10 ** 9),
                      ["timesteps 1000000000", "values per window"]),
    "classes-edited": (None, lambda c: c.update(classes=5), ["classes is 5", "2 logits"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_card_that_does_not_match_its_models_is_refused(case, step_export, capsys):
    change_files, change_card, words = CASES[case]
    if change_files:
        change_files(step_export)
    if change_card:
        edit_card(step_export, change_card)
    err = bench_fails(capsys, step_export, *FAST)
    assert all(w in err for w in words), err


def test_a_shipped_tag_file_without_its_sha256_is_refused(tmp_path, capsys):
    tag = tmp_path / "sirnn.har2_gen1"
    tag.mkdir()
    shutil.copy(ARCHIVE / "sirnn.har2_gen1" / "card.json", tag / "card.json")
    export = Path(shutil.copytree(ARCHIVE / "sirnn.har2_gen1" / "export-step-int8",
                                  tag / "export-step-int8"))
    head = (export / "head.tflite").read_bytes()
    (export / "head.tflite").write_bytes(head[:-1] + bytes([head[-1] ^ 1]))
    err = bench_fails(capsys, export, *FAST)
    assert "head.tflite: sha256" in err and "card.json says" in err, err


def test_a_failed_export_is_timed_with_a_note(step_export, capsys):
    edit_card(step_export, lambda c: c["accuracy"].update(passed=False))
    assert device_bench.main([str(step_export), *FAST]) == 0
    assert "failed its accuracy check" in capsys.readouterr().err


@pytest.mark.parametrize("flag, value", [("--threads", "20000"), ("--threads", "0"),
                                         ("--limit", "0"), ("--runs", "0"), ("--warmup", "-1"),
                                         ("--runs", "20000000")])
def test_numeric_flags_are_range_checked_before_any_work(flag, value, step_export):
    # a child process: the old code crashed (SIGSEGV) on --threads 20000
    done = subprocess.run([sys.executable, str(REPO / "export" / "device_bench.py"),
                           str(step_export), "--runtime", "litert", flag, value],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
    assert f"argument {flag}" in done.stderr and "Traceback" not in done.stderr, done.stderr
