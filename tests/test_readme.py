"""The README's commands, as written: the cheap ones run, every other `zoo` command parses with
the real argument parser, every documented script flag exists, and every linked file exists."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
# Commands cheap enough to run as written (seconds, no data, no training).
CHEAP = {("list",), ("list", "--pretrained"), ("list", "models"), ("list", "tasks"), ("--help",)}


def code_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def shell_commands() -> list[list[str]]:
    """Every command of the bash blocks as the shell reads them: a line ending in a backslash
    continues, ``a && b`` and ``a; b`` give two, a trailing ``&`` (background) and comments are
    dropped."""
    commands = []
    for block in code_blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            for part in re.split(r"&&|;", line):
                words = shlex.split(part, comments=True)
                if words and words[-1] == "&":
                    words = words[:-1]
                if words:
                    commands.append(words)
    return commands


def zoo_commands() -> list[list[str]]:
    return [words[1:] for words in shell_commands() if words[0] == "zoo"]


def script_commands() -> list[list[str]]:
    """`python path.py ...` and `python -m module ...` (not the test command or venv set-up)."""
    return [w for w in shell_commands() if w[0] in ("python", "python3")
            and w[1:2] != ["-m"] or w[0] in ("python", "python3") and len(w) > 2
            and w[1] == "-m" and w[2] not in ("pytest", "venv")]


def test_the_readme_has_commands():
    assert len(zoo_commands()) >= 5 and script_commands() and code_blocks("python")


@pytest.mark.parametrize("argv", zoo_commands(), ids=" ".join)
def test_every_zoo_command_parses(argv, capsys):
    from edge_rnn_zoo.cli import _chosen, build_parser

    try:
        build_parser(_chosen(argv)).parse_args(argv)
    except SystemExit as exit_:  # --help exits 0, a bad flag exits 2
        assert exit_.code == 0, capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("argv", [a for a in zoo_commands() if tuple(a) in CHEAP], ids=" ".join)
def test_cheap_zoo_commands_run_as_written(argv):
    proc = subprocess.run([sys.executable, "-m", "edge_rnn_zoo", *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip()


@pytest.mark.parametrize("words", script_commands(), ids=" ".join)
def test_documented_script_flags_exist(words):
    target = words[1:3] if words[1] == "-m" else words[1:2]
    proc = subprocess.run([sys.executable, *target, "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    flags = [w.split("=")[0] for w in words if w.startswith("--")]
    assert [f for f in flags if f not in proc.stdout] == []


@pytest.mark.slow
def test_python_example_runs_as_written():
    (block,) = code_blocks("python")
    proc = subprocess.run([sys.executable, "-c", block], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_linked_files_exist():
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README)
    paths = links + re.findall(r"`((?:models|docs|export|training|zoo)/[\w./-]+\.\w+)`", README)
    assert paths and [p for p in paths if not (REPO / p).exists()] == []
