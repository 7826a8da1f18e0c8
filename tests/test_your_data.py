"""docs/your-data.md run as written, on a user's layouts written here from the shared data sets:
a folder of WAV words at 8 kHz (Speech Commands clips resampled) to ``kws_app``, and an ``.npz``
of HAR windows (HAR-6 names, subject groups) to ``zoo_app``. Each ``bash`` block of a section is
run in order; only what CI's time needs is added to the doc's commands: ``zoo train`` gets a
tiny model and 2 epochs, ``zoo export`` gets ``--allow-drop`` (such a model may lose more than a
point in int8; the gate itself is tested in tests/export). What is checked beyond the exit
status: ``zoo_app``'s arg max over the user's test windows gives exactly the accuracy ``zoo
eval`` measures for the export under the TensorFlow Lite Micro interpreter, and ``kws_app``
reads the recording."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "your-data.md"
FAST_TRAIN = ["--epochs", "2", "--units", "8", "--rank", "4", "--batch-size", "64"]


def section_commands(title: str) -> list[str]:
    """The shell lines of every ``bash`` block under the ``## title`` heading, in order."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    return [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()
            if line.strip()]


def argv_of(command: str, work: Path) -> list[str]:
    words = shlex.split(command)
    if words[0] == "zoo":
        extra = {"train": FAST_TRAIN, "export": ["--allow-drop"]}.get(words[1], [])
        return [sys.executable, "-m", "edge_rnn_zoo", *words[1:], *extra]
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    if "/" in words[0]:  # a program the block built: words-c/kws_app
        return [str(work / words[0]), *words[1:]]
    return words


def run_section(title: str, work: Path) -> dict[str, str]:
    """Run the section's commands in ``work``; each one's stdout by its command line."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    said = {}
    for command in section_commands(title):
        done = subprocess.run(argv_of(command, work), cwd=work, env=env, capture_output=True,
                              text=True, timeout=900)
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        assert "Traceback" not in done.stderr, command
        said[command] = done.stdout
    return said


def test_each_section_is_three_commands_then_its_use():
    words = [shlex.split(c)[:2] for c in section_commands("Your words")]
    assert words[:3] == [["zoo", "train"], ["zoo", "export"], ["make", "-C"]]
    windows = [shlex.split(c)[:2] for c in section_commands("Your sensor windows")]
    assert windows[:3] == [["zoo", "train"], ["zoo", "export"], ["make", "-C"]]
    keras_model = [shlex.split(c)[:2] for c in section_commands("Your Keras model")]
    assert keras_model[0] == ["zoo", "export"] and "--calibration" in section_commands(
        "Your Keras model")[0]


def write_words(shared_data: Path, work: Path) -> None:
    """my_words/<word>/*.wav at 8 kHz 16-bit (every shared clip of three words), my_test_words
    (one word's clips, another folder), recording.wav (a 16 kHz clip, the microphone's rate)."""
    import soundfile
    import soxr

    source = shared_data / "speech_commands_v0.01"
    for word in ("yes", "no", "up"):
        (work / "my_words" / word).mkdir(parents=True)
        for clip in sorted((source / word).glob("*.wav")):
            x, rate = soundfile.read(clip, dtype="float32")
            soundfile.write(work / "my_words" / word / clip.name, soxr.resample(x, rate, 8000),
                            8000, subtype="PCM_16")
    shutil.copytree(work / "my_words" / "up", work / "my_test_words" / "up")
    shutil.copy(sorted((source / "yes").glob("*.wav"))[0], work / "recording.wav")


@pytest.mark.slow
def test_your_words_to_kws_app(shared_data, tmp_path):
    write_words(shared_data, tmp_path)
    said = run_section("Your words", tmp_path)
    assert (tmp_path / "words-c" / "kws_app").is_file()
    (evaluated,) = [out for command, out in said.items() if command.startswith("zoo eval")]
    assert "accuracy" in evaluated and "up" in evaluated


@pytest.mark.slow
def test_your_sensor_windows_to_zoo_app(shared_data, tmp_path, monkeypatch, capsys):
    from edge_rnn_zoo.cli import main
    from zoo.experiments.user_windows import write_user_files

    write_user_files(shared_data / "har", tmp_path / "har6")
    shutil.move(tmp_path / "har6" / "train.npz", tmp_path / "my_windows.npz")
    shutil.move(tmp_path / "har6" / "test.npz", tmp_path / "my_test.npz")
    said = run_section("Your sensor windows", tmp_path)
    (lines,) = [out for command, out in said.items() if "zoo_app" in command]
    c_class = np.array([np.argmax([int(v) for v in line.split()]) for line in lines.splitlines()])
    with np.load(tmp_path / "my_test.npz") as test:
        names = sorted(set(test["y"].tolist()))
        y = np.array([names.index(label) for label in test["y"]])
    assert len(c_class) == len(y) == 701
    # The oracle's own `zoo eval` (not a command of the doc) runs in this process: no second
    # TensorFlow start-up for a check.
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["eval", "mine-c", "--data-dir", "my_test.npz", "--runtime", "tflite-micro",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["test_sequences"] == len(y)
    assert report["accuracy"] == pytest.approx(float(np.mean(c_class == y)), abs=1e-12)
