"""argparse's prefix matching is off in every parser of the zoo: ``zoo export X --calibration
calib.npy`` was silently taken as ``--calibration-pairs`` (issue 42), and any option added later
could turn a user's abbreviation of another one into a silent change of meaning.

The parsers are built by the code itself (each ``zoo`` subcommand through
`edge_rnn_zoo.cli.build_parser`, each script by running its ``main`` until it parses) and each is
asked to parse an abbreviation of every one of its long options: it must leave the word unparsed
(an ``unrecognized arguments`` error in a real run), not take it as the option.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import inspect
import runpy
import sys
from pathlib import Path

import pytest

from edge_rnn_zoo import cli

REPO = Path(__file__).resolve().parents[1]
# Folders whose scripts build parsers, and the import name of each (tools run by path).
SCRIPT_FOLDERS = {"export": "zoo.export", "experiments": "zoo.experiments", "tools": None}


class _Captured(Exception):
    def __init__(self, parser):
        super().__init__("parser captured")
        self.parser = parser


@contextlib.contextmanager
def capturing_parsers():
    """Inside the block, the first parse of any parser raises `_Captured` holding the parser,
    before anything is parsed or run."""
    def grab(self, *args, **kwargs):
        raise _Captured(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", grab)
        patch.setattr(argparse.ArgumentParser, "parse_known_args", grab)
        yield


def parser_of(run) -> argparse.ArgumentParser:
    """The parser ``run()`` builds and parses first."""
    with capturing_parsers():
        try:
            run()
        except _Captured as captured:
            return captured.parser
    raise AssertionError(f"{run} returned without parsing a command line")


def parsers_within(parser: argparse.ArgumentParser):
    """``parser`` and every subcommand parser below it."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from parsers_within(sub)


def abbreviations(parser: argparse.ArgumentParser) -> list[str]:
    """Each long option minus its last letter, where that prefix is no option of its own and
    names one option only (so that a parser with prefix matching on would take it)."""
    options = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
    out = []
    for option in options:
        prefix = option[:-1]
        if len(prefix) > 3 and prefix not in options \
                and sum(o.startswith(prefix) for o in options) == 1:
            out.append(prefix)
    return out


class _Refused(Exception):
    pass


def takes_abbreviation(parser: argparse.ArgumentParser, word: str, capsys) -> bool:
    """Whether ``parser`` takes ``word`` (an abbreviated option) as an option. The parser is
    this test's own copy: its positionals are dropped and nothing is required, so that the word
    is the only thing parsed; an error or exit while parsing it means the option was taken (a
    missing value, --help)."""
    for action in list(parser._actions):
        if not action.option_strings:
            parser._remove_action(action)
        action.required = False

    def error(message):
        raise _Refused(message)

    parser.error = error
    try:
        _, unparsed = parser.parse_known_args([word])
    except (_Refused, SystemExit):
        capsys.readouterr()
        return True
    return word not in unparsed


def script_files() -> list[Path]:
    """Every module of the script folders that builds an `argparse.ArgumentParser`."""
    found = []
    for folder in SCRIPT_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            if any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                   and node.func.attr == "ArgumentParser" for node in ast.walk(tree)):
                found.append(path)
    return found


def _import_name(path: Path) -> str | None:
    for folder, package in SCRIPT_FOLDERS.items():
        if package and path.is_relative_to(REPO / folder):
            rel = path.relative_to(REPO / folder).with_suffix("")
            return ".".join((package, *rel.parts))
    return None


def script_parser(path: Path, monkeypatch) -> argparse.ArgumentParser:
    """The parser the script at ``path`` builds: through its ``main(argv)`` when it has one,
    else by running it as ``__main__`` (a parser built there)."""
    name = _import_name(path)
    monkeypatch.setattr(sys, "argv", [str(path)])
    if name is None:  # tools/: scripts run by path, importing their siblings
        monkeypatch.syspath_prepend(str(path.parent))
        return parser_of(lambda: runpy.run_path(str(path), run_name="__main__"))
    main = getattr(importlib.import_module(name), "main", None)
    if main is not None and "argv" in inspect.signature(main).parameters:
        return parser_of(lambda: main([]))
    return parser_of(lambda: runpy.run_module(name, run_name="__main__", alter_sys=False))


def test_every_script_is_found():
    """The walk below covers the scripts the ``zoo`` command runs, and the others."""
    files = {p.relative_to(REPO).as_posix() for p in script_files()}
    for group in cli.SCRIPTS.values():
        for module, _ in group.values():
            rel = module.removeprefix("zoo.").replace(".", "/") + ".py"
            assert rel in files, f"{module} builds no parser the walk finds"
    assert "tools/cortexm/c_frontier.py" in files and "export/device_bench.py" in files


@pytest.mark.filterwarnings("ignore:.*found in sys.modules")
@pytest.mark.parametrize("path", script_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_script_refuses_abbreviations(path, monkeypatch, capsys):
    parser = script_parser(path, monkeypatch)
    checked = 0
    for each in parsers_within(parser):
        for word in abbreviations(each):
            assert not takes_abbreviation(each, word, capsys), \
                f"{path.relative_to(REPO)}: {word} is taken as an abbreviation"
            checked += 1
    assert checked, f"{path.relative_to(REPO)}: no long option to abbreviate"


@pytest.mark.parametrize("command", sorted(cli.SUBCOMMANDS))
def test_zoo_subcommand_refuses_abbreviations(command, capsys):
    parser = cli.build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    checked = 0
    for each in [parser, *parsers_within(sub.choices[command])]:
        for word in abbreviations(each):
            assert not takes_abbreviation(each, word, capsys), \
                f"zoo {command}: {word} is taken as an abbreviation"
            checked += 1
    assert checked


def test_export_calibration_pairs_abbreviation_is_an_error(capsys):
    """The line of issue 42, as the user types it: an unknown option, named, exit 2."""
    with pytest.raises(SystemExit) as exit_:
        cli.main(["export", "runs/x", "--calibration-pair", "10"])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --calibration-pair" in capsys.readouterr().err
