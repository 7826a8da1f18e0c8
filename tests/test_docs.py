"""The commands of the README and of every page under docs/, as written: the cheap ones run,
every other `zoo` command parses with the real argument parser, every documented script flag
exists, a command whose input is missing ends in a one-line error (never a traceback), and every
file the README links exists. (The README's "Use it" block runs end to end in
tests/test_readme_sequence.py.)"""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("zoo", "training", "export", "experiments", "edge_rnn_zoo")
README = (REPO / "README.md").read_text(encoding="utf-8")
PAGES = {path.relative_to(REPO).as_posix(): path.read_text(encoding="utf-8")
         for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]}
# Commands cheap enough to run as written (seconds, no data, no training).
CHEAP = {("list",), ("list", "--pretrained"), ("list", "models"), ("list", "tasks"), ("--help",)}


def code_blocks(language: str, text: str = README) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def shell_commands(text: str = README) -> list[list[str]]:
    """Every command of the bash blocks as the shell reads them: a line ending in a backslash
    continues, ``a && b`` and ``a; b`` give two, a trailing ``&`` (background) and comments are
    dropped, and so are leading ``VAR=value`` assignments."""
    commands = []
    for block in code_blocks("bash", text):
        for line in block.replace("\\\n", " ").splitlines():
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split, lexer.commenters = True, "#"
            words = []
            for token in [*lexer, ";"]:
                if token not in (";", "&&", "&", "||", "|"):
                    words.append(token)
                    continue
                while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
                    words = words[1:]
                if words:
                    commands.append(words)
                words = []
    return commands


def all_commands() -> list[tuple[str, list[str]]]:
    """(page, words) for every shell command of the README and the docs pages."""
    return [(page, words) for page, text in PAGES.items() for words in shell_commands(text)]


def zoo_commands(pages=None) -> list[list[str]]:
    return [words[1:] for page, words in all_commands()
            if words[0] == "zoo" and (pages is None or page in pages)]


def is_script(words: list[str]) -> bool:
    """`python path.py ...` and `python -m module ...` of this project (not the test command,
    venv set-up or the Cortex-M harness run from its own folder)."""
    if words[0] not in ("python", "python3") or len(words) < 2:
        return False
    if words[1] == "-m":
        return len(words) > 2 and words[2].split(".")[0] in PACKAGES
    return (REPO / words[1]).is_file()


def script_commands() -> list[list[str]]:
    return [words for _, words in all_commands() if is_script(words)]


def ident(words) -> str:
    return " ".join(words)[:90]


def test_the_readme_has_commands():
    assert len(zoo_commands(["README.md"])) >= 5 and code_blocks("python")
    assert len(zoo_commands()) >= 30 and len(script_commands()) >= 15


@pytest.mark.parametrize("argv", zoo_commands(), ids=ident)
def test_every_zoo_command_parses(argv, capsys):
    from edge_rnn_zoo.cli import _chosen, _script, build_parser

    script = _script(argv)
    if script is not None:  # `zoo bench NAME ...`, `zoo ship ...`: the script's own flags
        module, _, rest, *_ = script
        proc = script_help(("-m", module))
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert [w for w in rest if w.startswith("--") and w.split("=")[0] not in proc.stdout] == []
        return
    try:
        build_parser(_chosen(argv)).parse_args(argv)
    except SystemExit as exit_:  # --help exits 0, a bad flag exits 2
        assert exit_.code == 0, capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("argv", sorted({tuple(a) for a in zoo_commands() if tuple(a) in CHEAP}),
                         ids=" ".join)
def test_cheap_zoo_commands_run_as_written(argv):
    proc = subprocess.run([sys.executable, "-m", "edge_rnn_zoo", *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip()


def script_target(words: list[str]) -> tuple[str, ...]:
    """What runs: ``-m module`` or ``path.py``, and a sub-command word if one follows."""
    target = words[1:3] if words[1] == "-m" else words[1:2]
    rest = words[len(target) + 1:]
    if rest and re.fullmatch(r"[a-z][a-z0-9_-]*", rest[0]):
        target = [*target, rest[0]]
    return tuple(target)


@functools.cache
def script_help(target: tuple[str, ...]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *target, "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("words", script_commands(), ids=ident)
def test_documented_script_flags_exist(words):
    proc = script_help(script_target(words))
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


def missing_inputs(words: list[str], root: Path) -> list[str]:
    """The positional path arguments (a word with a slash that no option precedes) that do not
    exist under ``root``: the runs and exports a page's earlier commands would have made."""
    start = 1 if words[0] == "zoo" else len(script_target(words)) + 1
    return [word for before, word in zip(words[start - 1:], words[start:])
            if "/" in word and not word.startswith("-") and not before.startswith("-")
            and not (root / word.split(":")[0]).exists()]


def commands_with_missing_inputs(root: Path) -> list[list[str]]:
    seen, found = set(), []
    for _, words in all_commands():
        if (words[0] == "zoo" or is_script(words)) and tuple(words) not in seen:
            seen.add(tuple(words))
            if missing_inputs(words, root):
                found.append(words)
    return found


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory, shared_data) -> Path:
    """An empty working folder with ``../shared`` beside it, as the pages assume, and the
    repository's ``export`` (its standalone device script) and ``models`` folders."""
    top = tmp_path_factory.mktemp("docs")
    (top / "shared").symlink_to(shared_data.parent)
    work = top / "work"
    work.mkdir()
    for name in ("export", "models"):
        (work / name).symlink_to(REPO / name)
    return work


def test_some_commands_need_earlier_outputs():
    assert len(commands_with_missing_inputs(REPO / "docs" / "no-such-folder")) >= 10


@pytest.mark.slow
@pytest.mark.parametrize("words", commands_with_missing_inputs(REPO / "docs" / "no-such-folder"),
                         ids=ident)
def test_a_command_without_its_input_names_it_in_one_line(words, sandbox, monkeypatch, capsys):
    """Run as written where the run or export it reads does not exist: a clear error that names
    the missing path, never a traceback. A ``zoo`` command runs through the command's own
    ``main`` in this process (an exception would fail the test with its traceback), so the
    documented ``zoo`` commands (37 of 50) share one TensorFlow start-up instead of a child
    process each; a script runs as a child."""
    missing = missing_inputs(words, sandbox)
    if not missing:
        pytest.skip("its inputs exist in the sandbox")
    if words[0] == "zoo":
        from edge_rnn_zoo.cli import main

        monkeypatch.chdir(sandbox)
        try:
            code = main(words[1:])
        except SystemExit as exit_:  # argparse's usage errors
            code = exit_.code
        out, err = capsys.readouterr()
        said = out + err
        assert code != 0, said[-3000:]
    else:
        proc = subprocess.run([sys.executable, *words[1:]], cwd=sandbox, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
        said = proc.stdout + proc.stderr
        assert proc.returncode != 0, said[-3000:]
    assert "Traceback" not in said, said[-3000:]
    assert any(Path(m.split(":")[0]).name in said for m in missing), said[-3000:]
